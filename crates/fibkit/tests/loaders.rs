//! Text loaders on every shared text file, and on malformed input that must
//! give a clear `file:line: problem` error, never a panic.

mod common;

use std::io::Write;
use std::path::PathBuf;

use common::data_path;
use fibkit::load::{self, AnyChange, Format, LoadError, LoadOptions, NextHopTable};
use fibkit::{Change, Prefix};

/// A scratch directory under the system temp dir, removed on drop.
struct Scratch(PathBuf);

impl Scratch {
    fn new(name: &str) -> Self {
        let dir = std::env::temp_dir().join(format!("fibkit-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        Scratch(dir)
    }
    fn file(&self, name: &str, content: &[u8]) -> PathBuf {
        let path = self.0.join(name);
        std::fs::write(&path, content).unwrap();
        path
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn gzip(content: &[u8]) -> Vec<u8> {
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    encoder.write_all(content).unwrap();
    encoder.finish().unwrap()
}

fn bzip(content: &[u8]) -> Vec<u8> {
    let mut encoder = bzip2::write::BzEncoder::new(Vec::new(), bzip2::Compression::default());
    encoder.write_all(content).unwrap();
    encoder.finish().unwrap()
}

fn load_err(path: &std::path::Path) -> String {
    match load::load_table(path, &LoadOptions::default()) {
        Ok(_) => panic!("{} loaded but should not", path.display()),
        Err(e) => e.to_string(),
    }
}

#[test]
fn shared_tables_load_with_the_documented_counts() {
    let cases: [(&str, Format, usize, usize); 6] = [
        ("dfz-v4-nh.txt.gz", Format::Table, 901_899, 0),
        ("dfz-v6-nh.txt.gz", Format::Table, 0, 160_147),
        ("dfz-v4-asn.txt.gz", Format::Table, 901_899, 0),
        ("dfz-v6-asn.txt.gz", Format::Table, 0, 160_147),
        ("linx-rib-ipv6.20141225.txt.gz", Format::NextHop, 0, 20_440),
        ("dfz-prefixes.txt.gz", Format::Table, 901_899, 160_147),
    ];
    for (name, format, v4, v6) in cases {
        let options = if name == "dfz-prefixes.txt.gz" {
            // Bare prefixes have no label: that is a format error by default.
            let err = load_err(&data_path(name));
            assert!(
                err.contains("dfz-prefixes.txt.gz") && err.contains("cannot tell the format"),
                "{err}"
            );
            continue;
        } else {
            LoadOptions::default()
        };
        let table = load::load_table(&data_path(name), &options).unwrap();
        assert_eq!(table.format, Some(format), "{name}");
        assert_eq!((table.v4.len(), table.v6.len()), (v4, v6), "{name}");
        assert_eq!(table.stats.skipped, 0);
    }
    let linx = load::load_table(
        &data_path("linx-rib-ipv6.20141225.txt.gz"),
        &LoadOptions::default(),
    )
    .unwrap();
    assert_eq!(
        linx.nexthops.len(),
        94,
        "the README says 94 distinct next hops"
    );
    let asn = load::load_table(&data_path("dfz-v4-asn.txt.gz"), &LoadOptions::default()).unwrap();
    assert_eq!(asn.v4.distinct_labels(), 71_248);
}

#[test]
fn linx_update_stream_loads_as_changes() {
    let path = data_path("linx-updates-ipv4.20141217.txt.gz");
    let loaded =
        load::load_updates(&path, &LoadOptions::default(), NextHopTable::default()).unwrap();
    assert_eq!(loaded.updates.len(), 23_446);
    let announces = loaded
        .updates
        .iter()
        .filter(|u| matches!(u.change, AnyChange::V4(Change::Announce(..))))
        .count();
    assert_eq!(announces, 18_141);
    let first = loaded.updates[0];
    assert_eq!(first.time, 1_418_774_413);
    assert_eq!(
        first.change,
        AnyChange::V4(Change::Withdraw(
            "202.70.88.0/21".parse::<Prefix<u32>>().unwrap()
        ))
    );
    // The stream is not a table, and a table is not a stream.
    let err = load_err(&path);
    assert!(err.contains("update stream, not a table"), "{err}");
    let err = load::load_updates(
        &data_path("dfz-v4-nh.txt.gz"),
        &LoadOptions::default(),
        NextHopTable::default(),
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("not an update stream"), "{err}");
}

#[test]
fn compression_is_detected_from_content() {
    let scratch = Scratch::new("compression");
    let text = b"10.0.0.0/8 1\n2001:db8::/32 2\n";
    for (name, content) in [
        ("plain.txt", text.to_vec()),
        ("packed.bin", gzip(text)),
        ("packed.txt", bzip(text)),
    ] {
        let table =
            load::load_table(&scratch.file(name, &content), &LoadOptions::default()).unwrap();
        assert_eq!((table.v4.len(), table.v6.len()), (1, 1), "{name}");
    }
}

#[test]
fn malformed_lines_name_file_line_and_problem() {
    let scratch = Scratch::new("malformed");
    let cases: [(&str, &str, &str); 9] = [
        (
            "badprefix",
            "10.0.0.0/8 1\n10.0.0/16 2\n",
            ":2: `10.0.0` is not an IPv4 address",
        ),
        (
            "badlen",
            "10.0.0.0/8 1\n10.0.0.0/33 2\n",
            ":2: prefix length `33` is not in 0..=32",
        ),
        (
            "badlabel",
            "10.0.0.0/8 1\n10.1.0.0/16 -4\n",
            ":2: `-4` is not a label",
        ),
        (
            "hugelabel",
            "10.0.0.0/8 1\n10.1.0.0/16 4294967296\n",
            ":2: `4294967296` is not a label",
        ),
        (
            "hostbits",
            "10.0.0.0/8 1\n\n10.0.0.1/8 2\n",
            ":3: `10.0.0.1/8` has host bits set (did you mean 10.0.0.0/8?)",
        ),
        (
            "extrafield",
            "10.0.0.0/8 1\n10.1.0.0/16 2 3\n",
            ":2: expected `prefix label`",
        ),
        (
            "badv6",
            "10.0.0.0/8 1\n2001:db8:::/32 2\n",
            ":2: `2001:db8:::` is not an IPv6 address",
        ),
        (
            "badnexthop",
            "2001:db8::/32 2001:db8::1\n2001:db9::/32 nowhere\n",
            ":2: `nowhere` is not a next-hop address",
        ),
        (
            "notutf8",
            "10.0.0.0/8 1\n10.1.0.0/16 \u{fffd}\n",
            ":2: `\u{fffd}` is not a label",
        ),
    ];
    for (name, content, expected) in cases {
        let path = scratch.file(name, content.as_bytes());
        let err = load_err(&path);
        assert!(err.starts_with(&path.display().to_string()), "{err}");
        assert!(err.contains(expected), "{name}: {err}");
    }
    let binary = scratch.file("binary-line", b"10.0.0.0/8 1\n10.1.0.0/16 \xff\xfe\n");
    let err = load_err(&binary);
    assert!(err.contains(":2: the line is not UTF-8"), "{err}");
}

#[test]
fn skip_bad_counts_and_lenient_masks() {
    let scratch = Scratch::new("skip");
    let path = scratch.file(
        "mixed",
        b"10.0.0.0/8 1\nbogus 2\n10.1.0.0/16 x\n10.2.0.1/16 3\n# comment\n10.3.0.0/16 4\n",
    );
    let options = LoadOptions {
        skip_bad: true,
        ..LoadOptions::default()
    };
    let table = load::load_table(&path, &options).unwrap();
    assert_eq!((table.v4.len(), table.stats.skipped), (2, 3));
    let options = LoadOptions {
        skip_bad: true,
        lenient: true,
        ..LoadOptions::default()
    };
    let table = load::load_table(&path, &options).unwrap();
    assert_eq!(
        (table.v4.len(), table.stats.skipped, table.stats.masked),
        (3, 2, 1)
    );
    assert_eq!(table.v4.get("10.2.0.0/16".parse().unwrap()), Some(3));
    let dup = scratch.file("dup", b"10.0.0.0/8 1\n10.0.0.0/8 2\n");
    let table = load::load_table(&dup, &LoadOptions::default()).unwrap();
    assert_eq!((table.v4.len(), table.stats.duplicates), (1, 1));
    assert_eq!(
        table.v4.get("10.0.0.0/8".parse().unwrap()),
        Some(2),
        "the later line wins"
    );
}

#[test]
fn empty_truncated_and_missing_files_error_cleanly() {
    let scratch = Scratch::new("broken");
    let err = load_err(&scratch.file("empty", b""));
    assert!(err.ends_with("empty: the file is empty"), "{err}");
    let err = load_err(&scratch.file("blank", b"\n\n# only comments\n"));
    assert!(
        err.contains("no data line") || err.contains("no prefixes"),
        "{err}"
    );
    let empty_gz = gzip(b"");
    let err = load_err(&scratch.file("empty.gz", &empty_gz));
    assert!(err.contains("the file is empty"), "{err}");
    let text: String = (0..20_000)
        .map(|i| format!("10.{}.{}.0/24 {}\n", i / 256, i % 256, i))
        .collect();
    let packed = gzip(text.as_bytes());
    let truncated = scratch.file("truncated.gz", &packed[..packed.len() / 2]);
    let err = load_err(&truncated);
    assert!(
        err.contains("truncated.gz:") && err.contains("read error"),
        "{err}"
    );
    let err = load_err(&scratch.0.join("does-not-exist"));
    assert!(
        err.contains("does-not-exist") && err.contains("No such file"),
        "{err}"
    );
    let forced = LoadOptions {
        format: Some(Format::Updates),
        ..LoadOptions::default()
    };
    let err = load::load_table(&scratch.file("t", b"10.0.0.0/8 1\n"), &forced).unwrap_err();
    assert!(matches!(err, LoadError::File { .. }), "{err}");
}

#[test]
fn update_stream_errors() {
    let scratch = Scratch::new("updates");
    let none = NextHopTable::default;
    let cases: [(&str, &str); 4] = [
        ("1 x 10.0.0.0/8 1.2.3.4\n", ":1: `x` is not an action"),
        ("t a 10.0.0.0/8 1.2.3.4\n", ":1: `t` is not a Unix time"),
        (
            "1 a 10.0.0.0/8 nowhere\n",
            ":1: `nowhere` is not a next-hop address",
        ),
        (
            "1 a 10.0.0.0/8 1.2.3.4\n2 a 10.0.0.0/8\n",
            ":2: expected `time a|w prefix nexthop`",
        ),
    ];
    let forced = LoadOptions {
        format: Some(Format::Updates),
        ..LoadOptions::default()
    };
    for (i, (content, expected)) in cases.iter().enumerate() {
        let path = scratch.file(&format!("u{i}"), content.as_bytes());
        let err = load::load_updates(&path, &forced, none())
            .unwrap_err()
            .to_string();
        assert!(err.contains(expected), "{err}");
    }
    let ok = scratch.file("ok", b"1 w 10.0.0.0/8\n2 a 2001:db8::/32 2001:db8::1\n");
    let loaded = load::load_updates(&ok, &forced, none()).unwrap();
    assert_eq!(loaded.updates.len(), 2);
    assert_eq!(loaded.nexthops.len(), 1);
}

mod no_panics {
    use super::*;
    use proptest::prelude::*;

    /// Lines built from the pieces real files are made of, shuffled and broken.
    fn line() -> impl Strategy<Value = String> {
        let piece = prop_oneof![
            Just("10.0.0.0/8".to_string()),
            Just("2001:db8::/32".to_string()),
            Just("1418774413".to_string()),
            Just("a".to_string()),
            Just("w".to_string()),
            Just("195.66.226.74".to_string()),
            Just("/".to_string()),
            Just(":".to_string()),
            Just("4294967295".to_string()),
            "[0-9a-f.:/ ]{0,40}",
            any::<u32>().prop_map(|n| n.to_string()),
        ];
        prop::collection::vec(piece, 0..5).prop_map(|pieces| pieces.join(" "))
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(300))]

        #[test]
        fn random_text_never_panics(lines in prop::collection::vec(line(), 0..20), skip_bad: bool, lenient: bool) {
            let scratch = Scratch::new(&format!("fuzz-{}", lines.len()));
            let path = scratch.file("input", lines.join("\n").as_bytes());
            for format in [None, Some(Format::Table), Some(Format::NextHop), Some(Format::Updates)] {
                let options = LoadOptions { format, skip_bad, lenient, ..LoadOptions::default() };
                let _ = load::load_table(&path, &options).map(|t| t.v4.len());
                let _ = load::load_updates(&path, &options, NextHopTable::default()).map(|u| u.updates.len());
            }
        }

        #[test]
        fn random_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..600)) {
            let scratch = Scratch::new("fuzz-bytes");
            let path = scratch.file("input", &bytes);
            let _ = load::load_table(&path, &LoadOptions::default()).map(|t| t.v4.len());
            let gz = scratch.file("input.gz", &gzip(&bytes)[..]);
            let _ = load::load_table(&gz, &LoadOptions { skip_bad: true, ..LoadOptions::default() }).map(|t| t.v4.len());
        }
    }
}
