#!/usr/bin/env bash
# Writes the gzip bomb of the hostile-input benchmark (docs/bench/hostile.md,
# "Hostile input"): GIB gibibytes of spaces without a line break (default
# 10), gzip -1 compressed (about 4.6 MB per GiB), as DIR/spaces-GIBg.txt.gz.
# Make it in a temporary directory; never commit it.
#
#   scripts/gzip-bomb.sh /tmp/bomb 10
#   /usr/bin/time -v target/release/fibkit stats /tmp/bomb/spaces-10g.txt.gz
set -euo pipefail
dir=${1:?usage: gzip-bomb.sh DIR [GIB]}
gib=${2:-10}
mkdir -p "$dir"
out="$dir/spaces-${gib}g.txt.gz"
# One GiB compressed once and repeated: gzip readers take concatenated
# members as one stream, so the file still expands to GIB GiB.
member=$(mktemp)
trap 'rm -f "$member"' EXIT
head -c $((1 << 30)) /dev/zero | tr '\0' ' ' | gzip -1 >"$member"
for _ in $(seq "$gib"); do cat "$member"; done >"$out"
ls -l "$out"
