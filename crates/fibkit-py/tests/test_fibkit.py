"""fibkit's Python binding against the Rust reference table on the shared
tables (every range boundary plus random addresses, IPv4 and IPv6, every
input form), and its errors on bad input."""

import ipaddress
import os

import numpy as np
import pyarrow as pa
import pytest

import fibkit
from conftest import V4Table, boundary_addresses_v6, data, dotted, reference, table_prefixes


class Case:
    """A shared table, addresses to check and the reference's answers: for
    IPv4 an independent numpy implementation, for IPv6 the Rust reference
    trie through the `fibkit` command."""

    def __init__(self, table: str, version: int, random: int):
        self.path = data(table)
        self.version = version
        if version == 4:
            reference_table = V4Table(self.path)
            self.v4 = reference_table.boundaries(random, seed=14)
            self.addrs = dotted(self.v4)
            self.found, self.labels, self.prefixes = reference_table.lookup(self.v4)
        else:
            self.addrs = boundary_addresses_v6(table_prefixes(self.path), random, seed=14)
            answers = reference(self.path, self.addrs)
            self.labels = np.array([a[1] if a else 0 for a in answers], dtype=np.uint32)
            self.found = np.array([a is not None for a in answers])
            self.prefixes = [a[0] if a else None for a in answers]

    def binary(self) -> np.ndarray:
        if self.version == 4:
            return self.v4
        packed = b"".join(ipaddress.IPv6Address(a).packed for a in self.addrs)
        return np.frombuffer(packed, dtype=np.uint8).reshape(-1, 16)

    def check(self, fib: fibkit.Fib, addrs, what: str) -> None:
        labels, found = fib.lookup_many(addrs)
        assert labels.dtype == np.uint32 and found.dtype == np.bool_
        bad = np.flatnonzero((labels != self.labels) | (found != self.found))
        assert bad.size == 0, (
            f"{what}: {bad.size} of {len(self.addrs)} wrong, first {self.addrs[bad[0]]}: "
            f"{labels[bad[0]]} {found[bad[0]]}, expected {self.labels[bad[0]]} {self.found[bad[0]]}"
        )


@pytest.fixture(scope="module")
def v4_case():
    return Case("dfz-v4-nh.txt.gz", 4, random=200_000)


@pytest.fixture(scope="module")
def v6_case():
    return Case("dfz-v6-nh.txt.gz", 6, random=100_000)


@pytest.mark.parametrize("engine", ["dxr", "dir24-8", "lctrie"])
def test_ipv4_every_input_form_equals_the_reference(v4_case, engine):
    fib = fibkit.Fib.load(v4_case.path, engine=engine)
    assert fib.family == 4 and fib.spec.startswith(engine.split(":")[0])
    v4_case.check(fib, v4_case.binary(), f"{engine} uint32")
    v4_case.check(fib, v4_case.addrs, f"{engine} list of str")
    v4_case.check(fib, pa.array(v4_case.addrs), f"{engine} pyarrow")
    v4_case.check(fib, pa.chunked_array([v4_case.addrs[:1000], v4_case.addrs[1000:]], pa.large_string()),
                  f"{engine} chunked large_string")
    v4_case.check(fib, np.array(v4_case.addrs), f"{engine} numpy str")


def test_ipv4_single_lookups_give_the_reference_prefix(v4_case):
    fib = fibkit.Fib.load(v4_case.path, engine="dir24-8")
    for i in range(0, len(v4_case.addrs), 997):
        expected = (v4_case.prefixes[i], int(v4_case.labels[i])) if v4_case.found[i] else None
        assert fib.lookup(v4_case.addrs[i]) == expected, v4_case.addrs[i]
        assert fib.lookup(int(ipaddress.IPv4Address(v4_case.addrs[i]))) == expected


@pytest.mark.parametrize("engine", ["dir24-8", "dxr:k=20", "dxr:d=16,x=4", "cpe", "lctrie"])
def test_ipv4_images_answer_like_the_engine(v4_case, engine, tmp_path):
    built = fibkit.Fib.load(v4_case.path, engine=engine)
    built.save_image(tmp_path / "nh.fib")
    image = fibkit.Fib.open_image(tmp_path / "nh.fib")
    assert image.is_image and image.spec == engine and image.stats()["prefixes"] is None
    v4_case.check(image, v4_case.binary(), "image uint32")
    v4_case.check(image, pa.array(v4_case.addrs), "image pyarrow")
    i = int(np.flatnonzero(v4_case.found)[0])
    assert image.lookup(v4_case.addrs[i]) == (None, int(v4_case.labels[i]))


@pytest.mark.parametrize("engine", ["dxr6", "cpe:levels=12,nopush"])
def test_ipv6_images_answer_like_the_engine(v6_case, engine, tmp_path):
    fibkit.Fib.load(v6_case.path, engine=engine, family=6).save_image(tmp_path / "v6.fib")
    image = fibkit.Fib.open_image(tmp_path / "v6.fib")
    assert image.is_image and image.family == 6 and image.spec.startswith(engine.split(":")[0])
    v6_case.check(image, v6_case.binary(), f"{engine} image (n, 16) uint8")
    v6_case.check(image, v6_case.addrs, f"{engine} image list of str")


@pytest.mark.parametrize("engine", ["lctrie", "cpe", "radix"])
def test_ipv6_every_input_form_equals_the_reference(v6_case, engine):
    fib = fibkit.Fib.load(v6_case.path, engine=engine, family=6)
    assert fib.family == 6
    binary = v6_case.binary()
    v6_case.check(fib, binary, f"{engine} (n, 16) uint8")
    v6_case.check(fib, binary.copy().view("S16").ravel(), f"{engine} S16")
    v6_case.check(fib, v6_case.addrs, f"{engine} list of str")
    v6_case.check(fib, pa.array(v6_case.addrs), f"{engine} pyarrow")
    for i in range(0, len(v6_case.addrs), 4999):
        expected = (v6_case.prefixes[i], int(v6_case.labels[i])) if v6_case.found[i] else None
        assert fib.lookup(v6_case.addrs[i]) == expected, v6_case.addrs[i]


def test_every_length_equals_single_lookups():
    fib = fibkit.Fib.from_prefixes({"10.0.0.0/8": 1, "10.1.0.0/16": 2, "0.0.0.0/1": 2**32 - 1})
    rng = np.random.default_rng(3)
    addrs = rng.integers(0, 2**32, 300, dtype=np.uint64).astype(np.uint32)
    for n in range(0, 300):
        labels, found = fib.lookup_many(addrs[:n])
        singles = [fib.lookup(int(a)) for a in addrs[:n]]
        assert labels.tolist() == [s[1] if s else 0 for s in singles]
        assert found.tolist() == [s is not None for s in singles]


def test_numpy_arrays_answer_alike_in_place_strided_or_fortran_ordered():
    """Binary numpy arrays are read in place (IPv6 bytes in network order
    straight into the engine's batch); strided and Fortran-ordered ones
    are copied first. Every length around the engines' batch sizes."""
    v6 = fibkit.Fib.from_prefixes(
        {"::/0": 9, "2001:db8::/32": 1, "2001:db8:1::/48": 2, "2001:db8:1:2::1:7/128": 2**32 - 1}
    )
    rng = np.random.default_rng(5)
    base = np.frombuffer(ipaddress.IPv6Address("2001:db8:1:2::1:0").packed, dtype=np.uint8)
    addrs = np.tile(base, (300, 1))
    addrs[:, 15] = rng.integers(0, 16, 300)
    addrs[::3, 5] = rng.integers(0, 4, 100)
    addrs[::7, 0] = 0x30
    singles = [v6.lookup(str(ipaddress.IPv6Address(bytes(a)))) for a in addrs]
    want_labels = [s[1] if s else 0 for s in singles]
    assert set(want_labels) == {9, 1, 2, 2**32 - 1}
    for n in list(range(0, 70)) + [129, 300]:
        labels, found = v6.lookup_many(addrs[:n])
        assert labels.tolist() == want_labels[:n] and found.tolist() == [True] * n
    labels, _ = v6.lookup_many(addrs[::3])
    assert labels.tolist() == want_labels[::3]
    labels, _ = v6.lookup_many(np.asfortranarray(addrs))
    assert labels.tolist() == want_labels
    v4 = fibkit.Fib.from_prefixes({"10.0.0.0/8": 1, "10.1.0.0/16": 2})
    keys = rng.integers(0x0A000000, 0x0A020000, 300, dtype=np.uint64).astype(np.uint32)
    want = [v4.lookup(int(a))[1] for a in keys]
    assert v4.lookup_many(keys)[0].tolist() == want
    assert v4.lookup_many(keys[::3])[0].tolist() == want[::3]


def test_nulls_are_not_found_and_empty_inputs_give_empty_arrays():
    fib = fibkit.Fib.from_prefixes([("10.0.0.0/8", 7)])
    labels, found = fib.lookup_many(["10.1.1.1", None, "11.0.0.0", 167772161])
    assert labels.tolist() == [7, 0, 0, 7] and found.tolist() == [True, False, False, True]
    labels, found = fib.lookup_many(pa.array(["10.1.1.1", None, "10.2.2.2"]))
    assert labels.tolist() == [7, 0, 7] and found.tolist() == [True, False, True]
    sliced = pa.array(["1.1.1.1", "10.0.0.1", None, "10.0.0.2"]).slice(1, 3)
    assert fib.lookup_many(sliced)[1].tolist() == [True, False, True]
    for empty in ([], np.zeros(0, dtype=np.uint32), pa.array([], pa.string())):
        labels, found = fib.lookup_many(empty)
        assert labels.shape == (0,) and found.shape == (0,)


def test_changes_apply_as_one_batch():
    fib = fibkit.Fib.from_prefixes({"10.0.0.0/8": 1}, engine="dir24-8")
    summary = fib.apply(announce={"10.1.0.0/16": 2}, withdraw=["10.0.0.0/8"])
    assert summary["effective"] == 2 and summary["version"] == 1
    assert fib.lookup("10.1.2.3") == ("10.1.0.0/16", 2)
    assert fib.lookup("10.2.0.0") is None
    assert fib.prefixes() == [("10.1.0.0/16", 2)]
    with pytest.raises(ValueError, match=r"announce\[0\].*host bits"):
        fib.apply(announce=[("10.0.0.1/8", 3)])
    with pytest.raises(ValueError, match=r"withdraw\[1\].*host bits"):
        fib.apply(withdraw=["10.1.0.0/16", "10.0.0.1/8"])
    assert fib.prefixes() == [("10.1.0.0/16", 2)], "a bad batch changes nothing"
    assert fib.stats()["prefixes"] == 1


def test_malformed_addresses_name_their_index_and_text():
    fib = fibkit.Fib.from_prefixes({"10.0.0.0/8": 1})
    with pytest.raises(ValueError, match=r"addrs\[2\]: `10\.0\.0\.256` is not an IPv4 address"):
        fib.lookup_many(["10.0.0.1", "10.0.0.2", "10.0.0.256"])
    with pytest.raises(ValueError, match=r"addrs\[1001\]: `nonsense` is not an IPv4 address"):
        fib.lookup_many(pa.chunked_array([["1.1.1.1"] * 1000, ["2.2.2.2", "nonsense"]]))
    with pytest.raises(ValueError, match=r"addrs\[0\]: `2001:db8::1` is not an IPv4"):
        fib.lookup_many(["2001:db8::1"])
    with pytest.raises(TypeError, match=r"addrs\[1\]: expected a str address"):
        fib.lookup_many(["1.1.1.1", 1.5])
    with pytest.raises(ValueError, match="larger than any IPv4"):
        fib.lookup_many([2**32])
    with pytest.raises(ValueError, match="not an IPv4 address"):
        fib.lookup("300.1.1.1")
    with pytest.raises(TypeError, match="sequence of addresses"):
        fib.lookup_many("10.0.0.1")


def test_wrong_family_and_wrong_dtype_arrays_are_type_errors():
    v4 = fibkit.Fib.from_prefixes({"10.0.0.0/8": 1})
    v6 = fibkit.Fib.from_prefixes({"2001:db8::/32": 1})
    assert v6.family == 6
    with pytest.raises(TypeError, match="IPv6 addresses given to an IPv4 table"):
        v4.lookup_many(np.zeros((3, 16), dtype=np.uint8))
    with pytest.raises(TypeError, match="IPv6 addresses given to an IPv4 table"):
        v4.lookup_many(np.zeros(3, dtype="S16"))
    with pytest.raises(TypeError, match="IPv4 addresses given to an IPv6 table"):
        v6.lookup_many(np.zeros(3, dtype=np.uint32))
    with pytest.raises(TypeError, match="dtype int64"):
        v4.lookup_many(np.zeros(3, dtype=np.int64))
    with pytest.raises(TypeError, match="pyarrow array of type int64"):
        v4.lookup_many(pa.array([1, 2, 3]))
    with pytest.raises(ValueError, match=r"addrs\[0\]: `10\.0\.0\.1` is not an IPv6 address"):
        v6.lookup_many(["10.0.0.1"])


def test_bad_tables_specs_and_images_raise_clear_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="no-such-file"):
        fibkit.Fib.load(tmp_path / "no-such-file.txt")
    bad = tmp_path / "bad.txt"
    bad.write_text("10.0.0.0/8 1\n10.0.0.1/8 2\n")
    with pytest.raises(fibkit.FibkitError, match=r"bad\.txt:2: .*host bits"):
        fibkit.Fib.load(bad)
    assert fibkit.Fib.load(bad, lenient=True).lookup("10.9.9.9") == ("10.0.0.0/8", 2)
    good = tmp_path / "good.txt"
    good.write_text("10.0.0.0/8 1\n2001:db8::/32 2\n")
    with pytest.raises(fibkit.FibkitError, match="unknown engine `nosuch`"):
        fibkit.Fib.load(good, engine="nosuch")
    with pytest.raises(fibkit.FibkitError, match="does not support IPv6"):
        fibkit.Fib.load(good, engine="dir24-8", family=6)
    with pytest.raises(ValueError, match="family 5"):
        fibkit.Fib.load(good, family=5)
    assert fibkit.Fib.load(good, family="v6").lookup("2001:db8::1") == ("2001:db8::/32", 2)
    with pytest.raises(ValueError, match=r"prefixes\[1\]: `garbage` is not an IPv4 address"):
        fibkit.Fib.from_prefixes([("10.0.0.0/8", 1), ("garbage", 2)])
    with pytest.raises(TypeError, match=r"prefixes\[0\]"):
        fibkit.Fib.from_prefixes([("10.0.0.0/8", -1)])

    fib = fibkit.Fib.load(good, engine="dir24-8")
    with pytest.raises(fibkit.FibkitError, match="cannot be saved as an image"):
        fibkit.Fib.load(good, engine="bspl").save_image(tmp_path / "x.fib")
    fib.save_image(tmp_path / "good.fib")
    blob = (tmp_path / "good.fib").read_bytes()
    (tmp_path / "truncated.fib").write_bytes(blob[:-1])
    with pytest.raises(fibkit.FibkitError, match="truncated"):
        fibkit.Fib.open_image(tmp_path / "truncated.fib")
    flipped = bytearray(blob)
    flipped[-3] ^= 1
    (tmp_path / "flipped.fib").write_bytes(bytes(flipped))
    with pytest.raises(fibkit.FibkitError, match="checksum"):
        fibkit.Fib.open_image(tmp_path / "flipped.fib")
    with pytest.raises(fibkit.FibkitError, match="not a fibkit image"):
        fibkit.Fib.open_image(good)
    with pytest.raises(FileNotFoundError):
        fibkit.Fib.open_image(tmp_path / "missing.fib")
    image = fibkit.Fib.open_image(tmp_path / "good.fib")
    with pytest.raises(fibkit.FibkitError, match="cannot change"):
        image.apply(withdraw=["10.0.0.0/8"])
    with pytest.raises(fibkit.FibkitError, match="holds no prefixes"):
        image.prefixes()
    assert "image" in repr(image) and "dir24-8" in repr(fib)


def test_the_package_ships_type_stubs():
    package = os.path.dirname(fibkit.__file__)
    assert os.path.exists(os.path.join(package, "py.typed"))
    assert os.path.exists(os.path.join(package, "_fibkit.pyi"))
    assert fibkit.Fib.lookup_many.__doc__ and "found" in fibkit.Fib.lookup_many.__doc__


def test_prefix_to_as_files_load_with_their_origins(tmp_path):
    """CAIDA's pfx2as and pyasn's ipasn files, as analysts download them."""
    import gzip

    pfx2as = tmp_path / "routeviews-rv2-20250101-1200.pfx2as.gz"
    with gzip.open(pfx2as, "wt") as out:
        out.write("1.0.0.0\t24\t13335\n1.0.4.0\t22\t38803_4134\n1.0.8.0\t21\t4134,4847\n")
    fib = fibkit.Fib.load(pfx2as)
    labels, found = fib.lookup_many(["1.0.0.9", "1.0.5.1", "1.0.9.1", "9.9.9.9"])
    assert labels.tolist() == [13335, 38803, 0, 0]
    assert found.tolist() == [True, True, True, False]
    assert fib.lookup("1.0.5.1") == ("1.0.4.0/22", 38803)
    assert [note.split(" (")[0] for note in fib.notes()] == [
        "1 prefixes have several origin ASes",
        "1 prefixes have an AS set as their",
    ]
    ipasn = tmp_path / "ipasn_20250101.dat"
    ipasn.write_text("; IP-ASN32-DAT file\n; Original source: rib.bz2\n1.0.0.0/24\t13335\n")
    assert fibkit.Fib.load(ipasn).lookup("1.0.0.1") == ("1.0.0.0/24", 13335)
    bad = tmp_path / "bad.pfx2as"
    bad.write_text("1.0.0.0\t24\t13335\n1.0.1.0\t24\tAS7\n")
    with pytest.raises(ValueError, match=r"bad.pfx2as:2: .*`AS7` is not an origin AS"):
        fibkit.Fib.load(bad)


def cli_table(path, *args):
    """`fibkit convert PATH ARGS`: {prefix: label}, and {label: next hop}."""
    import subprocess
    import tempfile

    from conftest import fibkit_cli

    with tempfile.TemporaryDirectory() as scratch:
        hops = os.path.join(scratch, "nexthops.txt")
        out = subprocess.run(
            [fibkit_cli(), "convert", str(path), "--nexthops-out", hops, *args],
            capture_output=True, text=True, check=True,
        )
        with open(hops) as lines:
            nexthops = dict(line.split() for line in lines)
    table = dict(line.split() for line in out.stdout.splitlines())
    return table, {int(label): addr for label, addr in nexthops.items()}


def test_mrt_dumps_load_by_origin_as_or_next_hop_and_peer():
    dump = data("mrt/openbgpd_rib_table-v2")
    for args, kwargs in [
        ([], {}),
        (["--label", "origin-as"], {"label": "origin-as"}),
        (["--peer", "AS65000"], {"peer": "AS65000"}),
        (["--peer", "AS65000"], {"peer": 65000}),
        (["--peer", "2001:db8:0:1::10", "--label", "origin-as"], {"peer": "2001:db8:0:1::10", "label": "origin-as"}),
    ]:
        expected, hops = cli_table(dump, *args)
        for family in (4, 6):
            fib = fibkit.Fib.load(dump, family=family, format="mrt", **kwargs)
            got = {prefix: label for prefix, label in fib.prefixes()}
            want = {p: int(l) for p, l in expected.items() if (":" in p) == (family == 6)}
            assert got == want, (kwargs, family)
            if kwargs.get("label") == "origin-as":
                assert fib.nexthops() == []
            else:
                assert fib.nexthops() == [hops[label] for label in range(len(hops))]
                for prefix, label in fib.prefixes():
                    assert ipaddress.ip_address(fib.nexthops()[label])
    notes = fibkit.Fib.load(dump).notes()
    assert notes[0].startswith("MRT: kept the routes of peer 192.168.1.10 (AS65000)"), notes
    assert fibkit.Fib.from_prefixes({"10.0.0.0/8": 1}).notes() == []
    with pytest.raises(fibkit.FibkitError, match=r"no peer of AS1 in this MRT RIB dump; its 3 peers"):
        fibkit.Fib.load(dump, peer="AS1")


def test_bgpdump_text_loads_with_the_mrt_options(tmp_path):
    # bgpdump -m lines of two peers: the one with most routes by default.
    dump = tmp_path / "rib.bgpdump"
    dump.write_text(
        "TABLE_DUMP2|1|B|192.0.2.1|64500|10.0.0.0/8|64500 64510|IGP|192.0.2.7|100|0||NAG||\n"
        "TABLE_DUMP2|1|B|192.0.2.2|64501|10.0.0.0/8|64501 {64520,64521}|IGP|192.0.2.8|100|0||NAG||\n"
        "TABLE_DUMP2|1|B|192.0.2.1|64500|10.1.0.0/16|64500|IGP|192.0.2.9|100|0||NAG||\n"
    )
    fib = fibkit.Fib.load(dump)
    assert fib.prefixes() == [("10.0.0.0/8", 0), ("10.1.0.0/16", 1)]
    assert fib.nexthops() == ["192.0.2.7", "192.0.2.9"]
    assert fib.notes()[0].startswith("bgpdump: kept the routes of peer 192.0.2.1 (AS64500)")
    assert fibkit.Fib.load(dump, label="origin-as", format="bgpdump").prefixes() == [
        ("10.0.0.0/8", 64510), ("10.1.0.0/16", 64500)
    ]
    # The other peer's AS-set origin has no single AS: 0.
    assert fibkit.Fib.load(dump, label="origin-as", peer=64501).prefixes() == [("10.0.0.0/8", 0)]
    with pytest.raises(fibkit.FibkitError, match=r"no peer 192.0.2.3 in this bgpdump RIB dump; its 2 peers"):
        fibkit.Fib.load(dump, peer="192.0.2.3")


def test_update_streams_replay_onto_the_table(tmp_path):
    table = tmp_path / "rib.txt"
    table.write_text("10.0.0.0/8 192.0.2.1\n10.1.0.0/16 192.0.2.2\n2001:db8::/32 192.0.2.1\n")
    updates = tmp_path / "updates.txt"
    updates.write_text(
        "100 a 10.2.0.0/16 192.0.2.9\n"
        "100 w 10.1.0.0/16\n"
        "101 a 2001:db8:1::/48 192.0.2.2\n"
        "102 a 10.1.0.0/16 192.0.2.1\n"
        "102 a 10.1.0.0/16 192.0.2.2\n"
    )
    fib = fibkit.Fib.load(table)
    assert fib.nexthops() == ["192.0.2.1", "192.0.2.2"]
    done = fib.apply_updates(updates)
    assert {k: done[k] for k in ("changes", "batches", "effective", "no_ops", "rebuilt", "other_family")} == {
        "changes": 4, "batches": 2, "effective": 4, "no_ops": 0, "rebuilt": 0, "other_family": 1,
    }, done
    # Within a batch the changes keep their order: the last label wins.
    assert fib.prefixes() == [("10.0.0.0/8", 0), ("10.1.0.0/16", 1), ("10.2.0.0/16", 2)]
    assert fib.nexthops() == ["192.0.2.1", "192.0.2.2", "192.0.2.9"]
    assert fib.lookup("10.2.3.4") == ("10.2.0.0/16", 2)
    # IPv6 takes its own family's changes.
    fib6 = fibkit.Fib.load(table, family=6)
    assert fib6.apply_updates(updates)["changes"] == 1
    assert fib6.lookup("2001:db8:1::1") == ("2001:db8:1::/48", 1)
    # An MRT update stream, one peer's changes, against `fibkit verify`.
    stream = data("mrt/openbgpd_bgp")
    dump = data("mrt/openbgpd_rib_table-v2")
    for family in (4, 6):
        fib = fibkit.Fib.load(dump, family=family)
        done = fib.apply_updates(stream, peer="AS65000")
        assert done["changes"] > 0 and done["notes"][0].startswith("MRT:"), done
        for prefix, label in fib.prefixes():
            address = prefix.split("/")[0]
            assert fib.lookup(address)[1] == label
    # The label defaults to what the table's labels are.
    rib = tmp_path / "rib.bgpdump"
    rib.write_text("TABLE_DUMP2|1|B|192.0.2.1|64500|10.0.0.0/8|64500 64510|IGP|192.0.2.7|100|0||NAG||\n")
    stream = tmp_path / "stream.bgpdump"
    stream.write_text("BGP4MP|5|A|192.0.2.1|64500|10.1.0.0/16|64500 64599|IGP|192.0.2.8|100|0||NAG||\n")
    by_asn = fibkit.Fib.load(rib, label="origin-as")
    assert by_asn.apply_updates(stream)["effective"] == 1
    assert by_asn.prefixes() == [("10.0.0.0/8", 64510), ("10.1.0.0/16", 64599)]
    assert by_asn.nexthops() == []
    by_hop = fibkit.Fib.load(rib)
    by_hop.apply_updates(stream)
    assert by_hop.prefixes() == [("10.0.0.0/8", 0), ("10.1.0.0/16", 1)]
    assert by_hop.nexthops() == ["192.0.2.7", "192.0.2.8"]
    pfx2as = tmp_path / "t.pfx2as"
    pfx2as.write_text("10.0.0.0\t8\t64500\n")
    by_origin = fibkit.Fib.load(pfx2as)
    by_origin.apply_updates(stream)
    assert by_origin.prefixes() == [("10.0.0.0/8", 64500), ("10.1.0.0/16", 64599)]
    # Bad input: the file and line, the option, an image.
    bad = tmp_path / "bad.txt"
    bad.write_text("100 a 10.3.0.0/16 192.0.2.9\n101 x 10.4.0.0/16 192.0.2.9\n")
    fib = fibkit.Fib.load(table)
    with pytest.raises(fibkit.FibkitError, match=r"bad.txt:2: `x` is not an action"):
        fib.apply_updates(bad)
    assert fib.lookup("10.3.0.1") == ("10.0.0.0/8", 0)
    assert fib.apply_updates(bad, skip_bad=True)["changes"] == 1
    with pytest.raises(ValueError, match=r"unknown format `csv`"):
        fib.apply_updates(updates, format="csv")
    with pytest.raises(fibkit.FibkitError, match=r"this is a `nexthop` table, not an update stream"):
        fib.apply_updates(table)
    image = tmp_path / "t.fib"
    fib.save_image(image)
    with pytest.raises(fibkit.FibkitError, match=r"the changes of time 100 \(after 0 batches applied\)"):
        fibkit.Fib.open_image(image).apply_updates(updates)


def test_load_options_are_checked(tmp_path):
    table = tmp_path / "t.txt"
    table.write_text("10.0.0.0\t8\t64500\n10.1.0.0\t16\t7\n")
    assert fibkit.Fib.load(table, format="pfx2as").lookup("10.1.0.1") == ("10.1.0.0/16", 7)
    with pytest.raises(fibkit.FibkitError, match=r"expected `prefix label`"):
        fibkit.Fib.load(table, format="table")
    with pytest.raises(ValueError, match=r"unknown format `csv` \(known: table, nexthop, updates, mrt, pfx2as, bgpdump\)"):
        fibkit.Fib.load(table, format="csv")
    with pytest.raises(ValueError, match=r'label "asn" is not a label source \("nexthop" or "origin-as"\)'):
        fibkit.Fib.load(table, label="asn")
    with pytest.raises(TypeError, match=r"peer must be"):
        fibkit.Fib.load(table, peer=1.5)
    with pytest.raises(ValueError, match=r"peer AS -1 is not in"):
        fibkit.Fib.load(table, peer=-1)
    with pytest.raises(ValueError, match=r"is neither a peer address nor an AS number"):
        fibkit.Fib.load(table, peer="ASX")
    bad = tmp_path / "bad.txt"
    bad.write_text("10.0.0.0/8 1\nnot a route\n10.1.0.0/16 2\n")
    with pytest.raises(fibkit.FibkitError, match=r"bad.txt:2: "):
        fibkit.Fib.load(bad)
    fib = fibkit.Fib.load(bad, skip_bad=True)
    assert fib.prefixes() == [("10.0.0.0/8", 1), ("10.1.0.0/16", 2)]
    assert fib.nexthops() == []


def test_dask_images_read_an_mrt_dump_by_origin_as(tmp_path):
    from fibkit.dask import prepare_images

    dump = data("mrt/openbgpd_rib_table-v2")
    images = prepare_images(dump, dump, tmp_path / "images", engine="dxr")
    by_asn = fibkit.Fib.load(dump, label="origin-as")
    by_hop = fibkit.Fib.load(dump)
    addrs = [prefix.split("/")[0] for prefix, _ in by_asn.prefixes()] + ["10.9.9.9"]
    for image, table in [(images.origin_as, by_asn), (images.nexthop, by_hop)]:
        got = fibkit.Fib.open_image(image).lookup_many(addrs)
        want = table.lookup_many(addrs)
        assert got[0].tolist() == want[0].tolist() and got[1].tolist() == want[1].tolist()
    assert by_asn.lookup_many(addrs)[0].tolist() != by_hop.lookup_many(addrs)[0].tolist()


def test_the_engine_list_is_the_registry_and_the_cli_help(tmp_path):
    """`fibkit.engines()` names every engine `fibkit --help` lists, each
    builds the families it claims, and saves an image exactly when it says
    it can; `default_spec` names one of them."""
    import subprocess

    from conftest import fibkit_cli

    engines = fibkit.engines()
    help_text = subprocess.run([fibkit_cli(), "--help"], capture_output=True, text=True, check=True).stdout
    engine_lines = help_text.split("Engines")[1].split("\n\n")[0].splitlines()[1:]
    listed = [line.split()[0] for line in engine_lines if line.startswith("  ")]
    assert [engine["name"] for engine in engines] == listed
    for engine in engines:
        for family, prefix in ((4, "10.0.0.0/8"), (6, "2001:db8::/32")):
            claims = engine["ipv4" if family == 4 else "ipv6"]
            if not claims:
                with pytest.raises(fibkit.FibkitError, match="does not support"):
                    fibkit.Fib.from_prefixes({prefix: 1}, engine=engine["name"], family=family)
                continue
            fib = fibkit.Fib.from_prefixes({prefix: 1}, engine=engine["name"], family=family)
            path = tmp_path / f"{engine['name']}-{family}.fib"
            if engine["savable"]:
                fib.save_image(path)
                assert fibkit.Fib.open_image(path).lookup(prefix.split("/")[0])[1] == 1
            else:
                with pytest.raises(fibkit.FibkitError, match="cannot be saved"):
                    fib.save_image(path)
    names = {engine["name"] for engine in engines}
    assert fibkit.default_spec(4).split(":")[0] in names
    assert fibkit.default_spec(6).split(":")[0] in names
    with pytest.raises(ValueError, match="family must be 4 or 6"):
        fibkit.default_spec(5)
