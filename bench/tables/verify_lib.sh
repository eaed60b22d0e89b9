# Sourced by the verify_*.sh scripts (with $fibkit set to the binary).
#
#   verify_engine NAME TABLE UPDATES FAMILY ENGINE RANDOM EVERY
#
# Verifies ENGINE on TABLE (`fibkit verify`, RANDOM random addresses) with
# the stream UPDATES replayed and checked every EVERY changes, and prints
# one line starting with NAME and ENGINE. Returns 1 if a check failed; a
# layout that cannot encode the table is reported and not a failure.
verify_engine() {
    local name=$1 table=$2 updates=$3 family=$4 engine=$5 random=$6 every=$7 output
    if output=$("$fibkit" verify "$table" --engine "$family=$engine" --random "$random" \
        --updates "$updates" --check-every "$every" 2>&1); then
        echo "$name $engine: $(tail -1 <<<"$output")"
    elif grep -q "cannot encode this table" <<<"$output"; then
        echo "$name $engine: not built: $(grep -o "cannot encode this table.*" <<<"$output")"
    else
        echo "$name $engine: FAILED: $(tail -3 <<<"$output")"
        return 1
    fi
}

#   verify_engines NAME TABLE UPDATES FAMILY RANDOM EVERY ENGINE...
#
# verify_engine for each ENGINE in turn; returns 1 if any check failed.
verify_engines() {
    local name=$1 table=$2 updates=$3 family=$4 random=$5 every=$6 engine failed=0
    shift 6
    for engine in "$@"; do
        verify_engine "$name" "$table" "$updates" "$family" "$engine" "$random" "$every" ||
            failed=1
    done
    return $failed
}
