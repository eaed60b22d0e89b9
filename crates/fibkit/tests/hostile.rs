//! Hostile input: what a careless or malicious user, file or BGP peer can
//! send, and what must come of it. Nothing here may panic, hang or abort.
//!
//! - loaders: lines over the length limit in every text format, compressed
//!   bombs (gzip and bzip2 streams a few KiB on disk that expand to a
//!   gigabyte of spaces, zeros or line breaks, generated here), seeded
//!   mutations of a good table, long comment headers, mixed families, and
//!   loads where every line is bad;
//! - update streams through `LocalFib` and `Fib`, for every engine:
//!   withdraw storms, default-route flaps, de-aggregated /8s and seeded
//!   random streams, checked against the reference table along the way;
//! - a failed update (dir24-8 pushed past its group limit): the table
//!   answers as before the batch, and the reference table is unchanged.

use std::io::Write;
use std::sync::atomic::Ordering;

use fibkit::load::{
    read_table, read_updates, Format, Input, LoadError, LoadOptions, NextHopTable, MAX_LINE_BYTES,
};
use fibkit::registry::EngineFamily;
use fibkit::trace::read_trace;
use fibkit::verify::verify;
use fibkit::{Change, Family, Fib, LocalFib, Lookup, Prefix, Rib};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

/// The longest message a loader may give about one bad line.
const MAX_MESSAGE_BYTES: usize = 400;

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    gz.write_all(bytes).unwrap();
    gz.finish().unwrap()
}

fn bzip2(bytes: &[u8]) -> Vec<u8> {
    let mut bz = bzip2::write::BzEncoder::new(Vec::new(), bzip2::Compression::best());
    bz.write_all(bytes).unwrap();
    bz.finish().unwrap()
}

/// A compressed stream that expands to `members` MiB of `byte`: one
/// compressed MiB repeated (gzip and bzip2 readers read concatenated
/// streams as one), so a gigabyte costs about a megabyte to make and hold.
fn bomb(compress: fn(&[u8]) -> Vec<u8>, byte: u8, members: usize) -> Vec<u8> {
    compress(&vec![byte; 1 << 20]).repeat(members)
}

fn options(format: Option<Format>, skip_bad: bool) -> LoadOptions<'static> {
    LoadOptions {
        format,
        skip_bad,
        ..LoadOptions::default()
    }
}

/// Loads `bytes` as a table; the error message, or `None` if it loaded.
fn table_error(bytes: Vec<u8>, options: &LoadOptions) -> Option<String> {
    let input = match Input::from_bytes(bytes, "hostile") {
        Ok(input) => input,
        Err(error) => return Some(error.to_string()),
    };
    read_table(input, options).err().map(|e| e.to_string())
}

fn updates_error(bytes: Vec<u8>, options: &LoadOptions) -> Option<String> {
    let input = match Input::from_bytes(bytes, "hostile") {
        Ok(input) => input,
        Err(error) => return Some(error.to_string()),
    };
    read_updates(input, options, NextHopTable::default())
        .err()
        .map(|e| e.to_string())
}

/// A line of `MAX_LINE_BYTES + 1` bytes starting like a data line.
fn overlong_line(start: &str) -> String {
    let mut line = start.to_string();
    line.push_str(&"7".repeat(MAX_LINE_BYTES + 1 - start.len()));
    line
}

/// Loads the bytes with the options and returns the error message, if any.
type LoadErrorOf = fn(Vec<u8>, &LoadOptions) -> Option<String>;

/// Compresses bytes in one format.
type Compressor = fn(&[u8]) -> Vec<u8>;

#[test]
fn an_overlong_line_is_an_error_naming_the_line_in_every_text_format() {
    let cases: [(&str, Format, &str, LoadErrorOf); 3] = [
        ("10.0.0.0/8 1\n", Format::Table, "10.1.0.0/16 ", table_error),
        (
            "10.0.0.0/8 192.0.2.1\n",
            Format::NextHop,
            "10.1.0.0/16 ",
            table_error,
        ),
        (
            "1 a 10.0.0.0/8 192.0.2.1\n",
            Format::Updates,
            "2 a 10.1.0.0/16 ",
            updates_error,
        ),
    ];
    for (good, format, start, load) in cases {
        let text = format!("{good}# comment\n{}\n{good}", overlong_line(start));
        for forced in [None, Some(format)] {
            for skip_bad in [false, true] {
                let error = load(text.clone().into_bytes(), &options(forced, skip_bad))
                    .unwrap_or_else(|| panic!("{format}: an overlong line loaded"));
                assert!(
                    error.starts_with("hostile:3: the line is longer than 65536 bytes"),
                    "{format}: {error}"
                );
                assert!(error.len() < MAX_MESSAGE_BYTES, "{format}: {error}");
            }
        }
    }
}

#[test]
fn an_overlong_trace_line_is_an_error() {
    let dir = std::env::temp_dir().join(format!("fibkit-hostile-trace-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("trace.txt.gz");
    let text = format!("10.0.0.1\n{}\n", overlong_line("10.0.0.2"));
    std::fs::write(&path, gzip(text.as_bytes())).unwrap();
    let error = read_trace::<u32>(&path).unwrap_err().to_string();
    assert!(
        error.contains("trace.txt.gz:2: the line is longer than 65536 bytes"),
        "{error}"
    );
    assert!(error.len() < MAX_MESSAGE_BYTES + 200, "{error}");
    std::fs::write(&path, bomb(gzip, 0, 64)).unwrap();
    let error = read_trace::<u128>(&path).unwrap_err().to_string();
    assert!(error.contains(":1: the line is longer"), "{error}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Bad input text longer than a message should quote: each loader quotes
/// only its start.
#[test]
fn messages_quote_only_the_start_of_long_bad_input() {
    let long = "x".repeat(MAX_LINE_BYTES - 100);
    let lines = [
        format!("{long}/8 1\n"),
        format!("10.0.0.0/8 {long}\n"),
        format!("10.0.0.0/{long} 1\n"),
        format!("10.0.0.1/8 1 {long}\n"),
    ];
    for line in lines {
        let text = format!("10.0.0.0/8 1\n{line}");
        let error = table_error(text.into_bytes(), &options(Some(Format::Table), false))
            .expect("a bad line loaded");
        assert!(error.starts_with("hostile:2: "), "{error}");
        assert!(error.len() < MAX_MESSAGE_BYTES, "{error}");
    }
    let text = format!("1 a 10.0.0.0/8 192.0.2.1\n{long} a 10.0.0.0/8 192.0.2.1\n");
    let error = updates_error(text.into_bytes(), &options(None, false)).unwrap();
    assert!(
        error.starts_with("hostile:2: ") && error.len() < MAX_MESSAGE_BYTES,
        "{error}"
    );
}

/// A gigabyte of spaces or zeros, a few KiB compressed: the load stops at
/// the first line, having read only the start of the file.
#[test]
fn compressed_bombs_stop_at_the_first_overlong_line() {
    let compressors: [(&str, Compressor); 2] = [("gzip", gzip), ("bzip2", bzip2)];
    for (name, compress) in compressors {
        for byte in [b' ', 0u8, b'7'] {
            let bytes = bomb(compress, byte, 1024);
            let total = bytes.len();
            for format in [
                None,
                Some(Format::Table),
                Some(Format::Updates),
                Some(Format::Bgpdump),
            ] {
                let input = Input::from_bytes(bytes.clone(), "bomb").unwrap();
                let raw_bytes = input.raw_bytes.clone();
                let result = if format == Some(Format::Updates) {
                    read_updates(input, &options(format, true), NextHopTable::default()).map(|_| ())
                } else {
                    read_table(input, &options(format, true)).map(|_| ())
                };
                let error = result.expect_err("a bomb loaded").to_string();
                assert!(
                    error.starts_with("bomb:1: the line is longer than 65536 bytes"),
                    "{name} of {byte}, {format:?}: {error}"
                );
                let read = raw_bytes.load(Ordering::Relaxed) as usize;
                assert!(
                    read <= (256 << 10).min(total),
                    "{name} of {byte}: read {read} of {total} compressed bytes"
                );
            }
        }
    }
}

/// Line breaks only, 64 MiB of them: detection gives up after a bounded
/// look, a forced format reads them all in constant memory and finds nothing.
#[test]
fn a_bomb_of_line_breaks_finds_no_data() {
    let bytes = bomb(gzip, b'\n', 64);
    let error = table_error(bytes.clone(), &options(None, false)).unwrap();
    assert!(error.contains("no data line in the first"), "{error}");
    let error = table_error(bytes, &options(Some(Format::Table), false)).unwrap();
    assert!(error.contains("no prefixes found"), "{error}");
}

#[test]
fn detection_reads_past_a_long_comment_header_and_knows_every_form() {
    let mut header = String::new();
    for i in 0..5000 {
        header.push_str(&format!(
            "# header line {i} of a table exported by some tool\n"
        ));
    }
    assert!(header.len() > 200_000);
    let forms = [
        ("10.0.0.0/8 1", Format::Table),
        ("\t10.0.0.0/8\t1\r", Format::Table),
        ("2001:db8::/32 7", Format::Table),
        ("10.0.0.0/8 192.0.2.1", Format::NextHop),
        ("2001:db8::/32 2001:db8::1", Format::NextHop),
        ("1418774400 a 10.0.0.0/8 192.0.2.1", Format::Updates),
        ("1418774400 w 10.0.0.0/8 0.0.0.0", Format::Updates),
        ("1418774400 w 10.0.0.0/8", Format::Updates),
        ("10.0.0.0\t8\t64500", Format::Pfx2as),
        ("2001:db8::\t32\t64500_64501", Format::Pfx2as),
        ("10.0.0.0\t8\t{64500,64501}", Format::Pfx2as),
        (
            "TABLE_DUMP2|1700000000|B|192.0.2.1|64500|10.0.0.0/8|64500 64510|IGP|192.0.2.1|100|0||NAG||",
            Format::Bgpdump,
        ),
        (
            "TABLE_DUMP2_AP|1700000000|B|2001:db8::1|64500|2001:db8::/32|1||IGP|2001:db8::1|0|0||NAG||",
            Format::Bgpdump,
        ),
    ];
    for (line, format) in forms {
        let text = format!("{header}\n{line}\n");
        let mut input = Input::from_bytes(text.into_bytes(), "header").unwrap();
        assert_eq!(fibkit::load::detect(&mut input).unwrap(), format, "{line}");
        // The lines read to decide are read again by the loader.
        let loaded = if format == Format::Updates {
            read_updates(input, &options(None, false), NextHopTable::default())
                .map(|u| (u.updates.len(), u.stats.records))
        } else {
            read_table(input, &options(None, false))
                .map(|t| (t.v4.len() + t.v6.len(), t.stats.records))
        };
        assert_eq!(loaded.unwrap(), (1, 5002), "{line}");
    }
    let error = table_error(
        format!("{header}nonsense here\n").into_bytes(),
        &options(None, false),
    )
    .unwrap();
    assert!(
        error.starts_with("hostile:5001: cannot tell the format"),
        "{error}"
    );
}

/// Seeded mutations of a good table (flipped, inserted and deleted bytes,
/// cuts): every one loads or fails with a message, under every option.
#[test]
fn mutated_tables_load_or_fail_never_panic() {
    let mut good = String::new();
    for i in 0..200u32 {
        good.push_str(&format!("10.{}.{}.0/24 {}\n", i % 7, i, i % 5));
        good.push_str(&format!("2001:db8:{i:x}::/48 192.0.2.{}\n", i % 9));
    }
    // CAIDA prefix-to-AS lines: single, multi-origin and AS-set origins.
    let mut pfx2as = String::new();
    for i in 0..200u32 {
        pfx2as.push_str(&format!("10.{}.{}.0\t24\t{}_{}\n", i % 7, i, i, i + 1));
        pfx2as.push_str(&format!("2001:db8:{i:x}::\t48\t{{{},{}}}\n", i, i % 9));
    }
    // bgpdump -m lines of two peers, with ADD-PATH, AS sets and asdot.
    let mut bgpdump = String::new();
    for i in 0..200u32 {
        bgpdump.push_str(&format!(
            "TABLE_DUMP2|1700000000|B|192.0.2.{}|6450{}|10.{}.{}.0/24|64500 {}|IGP|192.0.2.{}|100|0||NAG||\n",
            i % 2,
            i % 2,
            i % 7,
            i,
            i,
            i % 9
        ));
        bgpdump.push_str(&format!(
            "TABLE_DUMP2_AP|1700000000|B|2001:db8::1|64500|2001:db8:{i:x}::/48|{}|64500 {{{i},1.{i}}}|IGP|2001:db8::{i:x}|100|0||NAG||\n",
            i % 3
        ));
    }
    let mut rng = SmallRng::seed_from_u64(0x0405_711e);
    for case in 0..600 {
        // Not `case % 3`: that also decides below which cases are gzipped.
        let seed = match (case / 4) % 3 {
            0 => &good,
            1 => &pfx2as,
            _ => &bgpdump,
        };
        let mut bytes = seed.clone().into_bytes();
        for _ in 0..rng.random_range(1..8) {
            if bytes.is_empty() {
                break;
            }
            let at = rng.random_range(0..bytes.len());
            match rng.random_range(0..4) {
                0 => bytes[at] = rng.random(),
                1 => {
                    let noise = b"\0\n #:/ .9fz\xff_,{}\t;";
                    bytes.insert(at, noise[rng.random_range(0..noise.len())])
                }
                2 => {
                    bytes.remove(at);
                }
                _ => bytes.truncate(at),
            }
        }
        if case % 3 == 0 {
            bytes = gzip(&bytes);
            let cut = rng.random_range(0..=bytes.len());
            if case % 2 == 0 {
                bytes.truncate(cut);
            }
        }
        for format in [
            None,
            Some(Format::Table),
            Some(Format::NextHop),
            Some(Format::Mrt),
            Some(Format::Pfx2as),
            Some(Format::Bgpdump),
        ] {
            for skip_bad in [false, true] {
                let options = LoadOptions {
                    lenient: case % 2 == 0,
                    ..options(format, skip_bad)
                };
                let input = Input::from_bytes(bytes.clone(), "mutated");
                if let Ok(Ok(table)) = input.map(|input| read_table(input, &options)) {
                    assert!(!(table.v4.is_empty() && table.v6.is_empty()), "case {case}");
                    assert_eq!(table.v4.iter().count(), table.v4.len());
                    assert_eq!(table.v6.iter().count(), table.v6.len());
                }
            }
        }
    }
}

#[test]
fn mixed_families_go_to_their_own_tables_and_streams() {
    let table = read_table(
        Input::from_bytes(
            b"10.0.0.0/8 1\n2001:db8::/32 2\n0.0.0.0/0 3\n::/0 4\n".to_vec(),
            "t",
        )
        .unwrap(),
        &options(None, false),
    )
    .unwrap();
    assert_eq!((table.v4.len(), table.v6.len()), (2, 2));
    let updates = read_updates(
        Input::from_bytes(
            b"1 a 10.1.0.0/16 192.0.2.1\n1 a 2001:db8:1::/48 2001:db8::1\n2 w ::/0\n".to_vec(),
            "u",
        )
        .unwrap(),
        &options(None, false),
        table.nexthops.clone(),
    )
    .unwrap();
    let (v4, v6) = updates.changes_by_family();
    assert_eq!((v4.len(), v6.len()), (1, 2));
}

#[test]
fn skipping_every_line_is_an_error_not_an_empty_load() {
    let bad = b"10.0.0.0/33 1\nnonsense\n10.0.0.1/8 1\n".to_vec();
    let error = table_error(bad, &options(Some(Format::Table), true)).unwrap();
    assert!(
        error.contains("nothing loaded") && error.contains("(3 bad)"),
        "{error}"
    );
    let bad = b"1 a 10.0.0.0/33 192.0.2.1\n1 x 10.0.0.0/8 192.0.2.1\n".to_vec();
    let error = updates_error(bad, &options(Some(Format::Updates), true)).unwrap();
    assert!(error.contains("nothing loaded"), "{error}");
    // An update stream with one good line is a stream.
    let some = b"1 a 10.0.0.0/33 192.0.2.1\n1 w 10.0.0.0/8\n".to_vec();
    assert_eq!(
        updates_error(some, &options(Some(Format::Updates), true)),
        None
    );
}

#[test]
fn a_truncated_compressed_file_says_what_is_wrong_once() {
    let gz = gzip(b"10.0.0.0/8 1\n");
    for cut in [2, 12, gz.len() - 4] {
        let error = match Input::from_bytes(gz[..cut].to_vec(), "cut.gz") {
            Err(error) => error,
            Ok(input) => read_table(input, &options(None, false)).unwrap_err(),
        };
        let text = error.to_string();
        assert!(text.starts_with("cut.gz"), "{text}");
        // The I/O error is in the message, not repeated as a source.
        assert!(std::error::Error::source(&error).is_none(), "{text}");
        if let LoadError::Io { .. } = error {
            assert!(text.contains("end of file"), "{text}");
        }
    }
}

/// Checks `engine` against `rib` (every range boundary, some random addresses).
fn assert_matches<A: EngineFamily, L: Lookup<A>>(engine: &L, rib: &Rib<A>, what: &str) {
    let report = verify(engine, rib, 300, 7);
    assert!(
        report.ok(),
        "{what}: {} failed: {:?}",
        report.failed,
        &report.mismatches[..report.mismatches.len().min(5)]
    );
}

/// A seeded base table: `count` random prefixes clustered in 10/8 and a
/// few other /8s, so changes nest in and around them.
fn base_table_v4(count: usize, seed: u64) -> Rib<u32> {
    let mut rng = SmallRng::seed_from_u64(seed);
    Rib::from_pairs((0..count).map(|_| {
        let top = [10u32, 11, 192, 200][rng.random_range(0..4)] << 24;
        let addr = top | (rng.random::<u32>() & 0x00ff_ffff);
        (
            Prefix::new_masked(addr, rng.random_range(8..=32)),
            rng.random_range(0..16),
        )
    }))
}

fn base_table_v6(count: usize, seed: u64) -> Rib<u128> {
    let mut rng = SmallRng::seed_from_u64(seed);
    Rib::from_pairs((0..count).map(|_| {
        let addr = (0x2001_0db8u128 << 96) | (rng.random::<u128>() >> 40);
        (
            Prefix::new_masked(addr, rng.random_range(16..=128)),
            rng.random_range(0..16),
        )
    }))
}

fn v4(text: &str) -> Prefix<u32> {
    text.parse().unwrap()
}

/// The adversarial IPv4 streams, as batches.
fn adversarial_streams_v4(base: &Rib<u32>) -> Vec<(&'static str, Vec<Vec<Change<u32>>>)> {
    // 4096 /32s under one /8, announced, then withdrawn in batches of 256
    // and, for the last 64, one by one.
    let hosts: Vec<Prefix<u32>> = (0..4096u32)
        .map(|i| Prefix::new_masked(0x0a00_0000 | (i * 4099 % (1 << 24)), 32))
        .collect();
    let announce: Vec<Change<u32>> = hosts.iter().map(|&p| Change::Announce(p, 9)).collect();
    let mut storm: Vec<Vec<Change<u32>>> = announce.chunks(512).map(<[_]>::to_vec).collect();
    let withdraw: Vec<Change<u32>> = hosts.iter().map(|&p| Change::Withdraw(p)).collect();
    storm.extend(withdraw[..4032].chunks(256).map(<[_]>::to_vec));
    storm.extend(withdraw[4032..].iter().map(|&c| vec![c]));
    // The default route and a /8 flapping, alone and within one batch.
    let default = Prefix::default_route();
    let mut flaps = Vec::new();
    for i in 0..6u32 {
        flaps.push(vec![Change::Announce(default, i % 3)]);
        flaps.push(vec![Change::Withdraw(v4("10.0.0.0/8"))]);
        flaps.push(vec![Change::Announce(v4("10.0.0.0/8"), i % 5)]);
        flaps.push(vec![Change::Withdraw(default)]);
    }
    flaps.push(
        (0..64)
            .map(|i| match i % 2 {
                0 => Change::Announce(default, i),
                _ => Change::Withdraw(default),
            })
            .collect(),
    );
    // /8s de-aggregated into their /16s (relabelled), then re-aggregated.
    let mut deaggregated = Vec::new();
    for top in [10u32, 11, 12] {
        let sixteens: Vec<Change<u32>> = (0..256)
            .map(|i| Change::Announce(Prefix::new_masked(top << 24 | i << 16, 16), i % 7))
            .collect();
        deaggregated.push(sixteens);
        deaggregated.push(vec![Change::Announce(Prefix::new_masked(top << 24, 8), 1)]);
    }
    for top in [10u32, 11, 12] {
        deaggregated.push(
            (0..256)
                .map(|i| Change::Withdraw(Prefix::new_masked(top << 24 | i << 16, 16)))
                .collect(),
        );
    }
    // Seeded random changes in batches of 1 to 64.
    let random = fibkit::trace::generate_changes(base, 3000, 0x5eed);
    let mut rng = SmallRng::seed_from_u64(3);
    let mut batches = Vec::new();
    let mut rest = &random[..];
    while !rest.is_empty() {
        let size = rng.random_range(1..=64).min(rest.len());
        batches.push(rest[..size].to_vec());
        rest = &rest[size..];
    }
    vec![
        ("withdraw storm", storm),
        ("default-route flaps", flaps),
        ("de-aggregated /8s", deaggregated),
        ("random changes", batches),
    ]
}

/// Batches of a stream that `Fib` applies: its batches joined 16 at a time
/// (each `Fib` batch patches a copy of the snapshot; `LocalFib` takes the
/// small batches).
const FIB_JOIN: usize = 16;

/// Replays `streams` through a `LocalFib` of `spec` batch by batch and
/// through a `Fib` in joined batches, checking both against the reference
/// after every [`FIB_JOIN`] batches and at the end of each stream.
fn replay_checked<A: EngineFamily>(
    spec: &str,
    base: &Rib<A>,
    streams: &[(&'static str, Vec<Vec<Change<A>>>)],
) {
    let mut local = LocalFib::<A>::new(spec, base.clone()).unwrap();
    let shared = Fib::<A>::new(spec, base.clone()).unwrap();
    for (name, batches) in streams {
        for (round, joined) in batches.chunks(FIB_JOIN).enumerate() {
            for (index, batch) in joined.iter().enumerate() {
                local.apply(batch).unwrap_or_else(|e| {
                    panic!("{spec}, {name}, batch {}: {e}", round * FIB_JOIN + index)
                });
            }
            shared
                .apply(&joined.concat())
                .unwrap_or_else(|e| panic!("{spec} (Fib), {name}, round {round}: {e}"));
            let what = format!("{spec}, {name}, after round {round}");
            assert_matches(&local, local.rib(), &what);
            shared.with_rib(|rib| assert_matches(&*shared.snapshot(), rib, &what));
        }
    }
}

/// The default layout of every engine of `family` in the registry, but
/// `auto` (which times its candidates at every rebuild; the engines it
/// picks among are replayed themselves), and the layouts whose update
/// paths differ from their engine's default: `cpe` without leaf pushing,
/// `dxr` with a 2^16 direct table and with two levels.
fn replayed_layouts(family: Family) -> Vec<&'static str> {
    let extra: &[&str] = match family {
        Family::V4 => &["cpe:levels=4,nopush", "dxr:k=16", "dxr:d=12,x=8"],
        Family::V6 => &["cpe:levels=12", "cpe:levels=12,nopush"],
    };
    fibkit::registry::ENGINES
        .iter()
        .filter(|info| info.name != "auto" && info.supports(family))
        .filter_map(|info| info.layouts.iter().find(|layout| layout.supports(family)))
        .map(|layout| layout.spec)
        .chain(extra.iter().copied())
        .collect()
}

#[test]
fn adversarial_streams_through_every_ipv4_engine() {
    let base = base_table_v4(3000, 1);
    let streams = adversarial_streams_v4(&base);
    for spec in replayed_layouts(Family::V4) {
        replay_checked(spec, &base, &streams);
    }
}

#[test]
fn adversarial_streams_through_every_ipv6_engine() {
    let base = base_table_v6(2000, 2);
    let default = Prefix::<u128>::default_route();
    let hosts: Vec<Prefix<u128>> = (0..2048u128)
        .map(|i| Prefix::new_masked((0x2001_0db8u128 << 96) | (i * 0x1_0000_0001), 128))
        .collect();
    let mut storm: Vec<Vec<Change<u128>>> = hosts
        .chunks(256)
        .map(|chunk| chunk.iter().map(|&p| Change::Announce(p, 3)).collect())
        .collect();
    storm.extend(
        hosts
            .chunks(128)
            .map(|chunk| chunk.iter().map(|&p| Change::Withdraw(p)).collect()),
    );
    let flaps: Vec<Vec<Change<u128>>> = (0..16u32)
        .map(|i| match i % 2 {
            0 => vec![Change::Announce(default, i)],
            _ => vec![Change::Withdraw(default)],
        })
        .collect();
    let random: Vec<Vec<Change<u128>>> = fibkit::trace::generate_changes(&base, 2000, 9)
        .chunks(37)
        .map(<[_]>::to_vec)
        .collect();
    let streams = vec![
        ("withdraw storm", storm),
        ("default-route flaps", flaps),
        ("random changes", random),
    ];
    for spec in replayed_layouts(Family::V6) {
        replay_checked(spec, &base, &streams);
    }
}

/// dir24-8 with room for 8 groups: a batch needing more fails, and the
/// engine and the reference table answer as before it, through both
/// handles; a batch that fits afterwards applies.
#[test]
fn a_failed_update_leaves_the_old_table() {
    let spec = "dir24-8:max-groups=8";
    let base =
        Rib::from_pairs((0..4u32).map(|i| (Prefix::new_masked(0x0a00_0001 + (i << 8), 32), i)));
    let too_many: Vec<Change<u32>> = (0..10u32)
        .map(|i| Change::Announce(Prefix::new_masked(0x0b00_0001 + (i << 8), 32), 7))
        .chain([Change::Withdraw(Prefix::new_masked(0x0a00_0001, 32))])
        .collect();
    let fitting = &too_many[6..];
    let before: Vec<_> = base.iter().collect();

    let mut local = LocalFib::<u32>::new(spec, base.clone()).unwrap();
    let error = local.apply(&too_many).unwrap_err().to_string();
    assert!(error.contains("max-groups"), "{error}");
    assert_eq!(local.rib().iter().collect::<Vec<_>>(), before);
    assert_matches(&local, &base, "after the failed batch");
    local.apply(fitting).unwrap();
    assert_matches(&local, local.rib(), "after the fitting batch");

    let shared = Fib::<u32>::new(spec, base.clone()).unwrap();
    assert!(shared.apply(&too_many).is_err());
    assert_eq!(
        shared.with_rib(|rib| rib.iter().collect::<Vec<_>>()),
        before
    );
    assert_matches(&*shared.snapshot(), &base, "Fib after the failed batch");
    shared.apply(fitting).unwrap();
    shared.with_rib(|rib| assert_matches(&*shared.snapshot(), rib, "Fib after the fitting batch"));
}
