//! The text loaders on malformed input: every problem is an error naming the
//! file and line (or, with `skip_bad`, skipped and counted), never a panic.
//! Files are written under the system temp dir, never into the repo.

use std::io::Write;
use std::path::PathBuf;

use fibkit::load::{load_table, load_updates, Format, LoadError, LoadOptions, NextHopTable};
use fibkit::Prefix;

/// A scratch directory for one test (tests run in parallel).
fn scratch(test: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("fibkit-load-text-{}-{test}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn write(dir: &std::path::Path, name: &str, bytes: &[u8]) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, bytes).unwrap();
    path
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(bytes).unwrap();
    gz.finish().unwrap()
}

fn table_error(path: &std::path::Path, options: &LoadOptions) -> String {
    load_table(path, options).unwrap_err().to_string()
}

/// `file:line: ...` with the expected line and text.
fn assert_bad(error: &str, file: &str, line: u64, says: &str) {
    assert!(
        error.contains(&format!("{file}:{line}: ")) && error.contains(says),
        "expected `{file}:{line}: ...{says}...`, got `{error}`"
    );
}

#[test]
fn empty_and_comment_only_files() {
    let dir = scratch("empty");
    let empty = write(&dir, "empty.txt", b"");
    assert!(table_error(&empty, &LoadOptions::default()).contains("the file is empty"));
    let comments = write(&dir, "comments.txt", b"# nothing here\n\n# still nothing\n");
    let error = table_error(&comments, &LoadOptions::default());
    assert!(
        error.contains("comments.txt") && error.contains("no data line"),
        "{error}"
    );
    // Forced format: no prefixes at all is still an error.
    let forced = LoadOptions {
        format: Some(Format::Table),
        ..LoadOptions::default()
    };
    assert!(table_error(&comments, &forced).contains("no prefixes found"));
    let empty_gz = write(&dir, "empty.gz", &gzip(b""));
    assert!(table_error(&empty_gz, &LoadOptions::default()).contains("empty"));
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn bad_prefix_and_bad_label() {
    let dir = scratch("bad");
    let cases: [(&str, &str); 7] = [
        ("10.0.0.0/33 1\n", "prefix length `33`"),
        ("10.0.0/8 1\n", "not an IPv4 address"),
        ("2001:db8::/129 1\n", "prefix length `129`"),
        ("10.0.0.0/8 -1\n", "is not a label"),
        ("10.0.0.0/8 4294967296\n", "is not a label"),
        ("10.0.0.0/8 1 2\n", "expected `prefix label`"),
        ("10.0.0.0/8\n", "expected `prefix label`"),
    ];
    let forced = LoadOptions {
        format: Some(Format::Table),
        ..LoadOptions::default()
    };
    for (i, (line, says)) in cases.iter().enumerate() {
        let name = format!("bad{i}.txt");
        // A good first line, so detection sees a table; the bad line is line 3.
        let text = format!("192.0.2.0/24 7\n# comment\n{line}");
        let path = write(&dir, &name, text.as_bytes());
        assert_bad(&table_error(&path, &forced), &name, 3, says);
    }
    // A label out of range on the first data line: detection still sees
    // a table, whose loader names the label's problem.
    for (i, label) in ["-1", "4294967296", "99999999999999999999999"]
        .iter()
        .enumerate()
    {
        let name = format!("first{i}.txt");
        let path = write(
            &dir,
            &name,
            format!("# comment\n10.0.0.0/8 {label}\n").as_bytes(),
        );
        assert_bad(
            &table_error(&path, &LoadOptions::default()),
            &name,
            2,
            &format!("`{label}` is not a label (expected an integer in 0..=4294967295)"),
        );
    }
    // Next-hop tables: a bad address.
    let path = write(
        &dir,
        "nh.txt",
        b"192.0.2.0/24 192.0.2.1\n10.0.0.0/8 192.0.2.300\n",
    );
    assert_bad(
        &table_error(&path, &LoadOptions::default()),
        "nh.txt",
        2,
        "not a next-hop address",
    );
    // Binary bytes in a text file.
    let path = write(&dir, "bin.txt", b"192.0.2.0/24 1\n\xff\xfe\x00\n");
    let forced = LoadOptions {
        format: Some(Format::Table),
        ..LoadOptions::default()
    };
    assert_bad(&table_error(&path, &forced), "bin.txt", 2, "not UTF-8");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn host_bits_set_error_or_lenient() {
    let dir = scratch("host");
    let path = write(
        &dir,
        "host.txt",
        b"192.0.2.0/24 1\n10.1.0.0/8 2\n2001:db8::1/32 3\n",
    );
    let error = table_error(&path, &LoadOptions::default());
    assert_bad(
        &error,
        "host.txt",
        2,
        "host bits set (did you mean 10.0.0.0/8?)",
    );
    let lenient = LoadOptions {
        lenient: true,
        ..LoadOptions::default()
    };
    let table = load_table(&path, &lenient).unwrap();
    assert_eq!(table.stats.masked, 2);
    assert_eq!(
        table.v4.get("10.0.0.0/8".parse::<Prefix<u32>>().unwrap()),
        Some(2)
    );
    assert_eq!(
        table
            .v6
            .get("2001:db8::/32".parse::<Prefix<u128>>().unwrap()),
        Some(3)
    );
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn skip_bad_counts_lines_and_duplicates() {
    let dir = scratch("skip");
    let text =
        b"192.0.2.0/24 1\n10.0.0.0/33 2\nnonsense\n10.0.0.0/8 3\n192.0.2.0/24 4\n10.1.0.0/8 5\n";
    let path = write(&dir, "skip.txt", text);
    assert_bad(
        &table_error(&path, &LoadOptions::default()),
        "skip.txt",
        2,
        "prefix length",
    );
    let skip = LoadOptions {
        skip_bad: true,
        ..LoadOptions::default()
    };
    let table = load_table(&path, &skip).unwrap();
    assert_eq!(table.stats.records, 6);
    assert_eq!(table.stats.skipped, 3); // /33, nonsense, host bits
    let problems = &table.stats.skipped_problems;
    assert_eq!(problems.len(), 3, "{problems:?}");
    assert!(problems[0].starts_with("line 2: ") && problems[0].contains("prefix length"));
    assert!(problems[1].starts_with("line 3: ") && problems[2].starts_with("line 6: "));
    assert_eq!(table.stats.routes, 3);
    assert_eq!(table.stats.duplicates, 1);
    // The later label wins.
    assert_eq!(
        table.v4.get("192.0.2.0/24".parse::<Prefix<u32>>().unwrap()),
        Some(4)
    );
    assert_eq!(table.v4.len(), 2);
    // Only bad lines: nothing was loaded, which is an error that says why.
    let path = write(&dir, "allbad.txt", b"10.0.0.0/33 1\n10.1.0.0/8 1\n");
    let forced = LoadOptions {
        format: Some(Format::Table),
        ..skip
    };
    let error = table_error(&path, &forced);
    assert!(
        error.contains("nothing loaded") && error.contains("(2 bad); the first: line 1: "),
        "{error}"
    );
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn truncated_gzip_is_an_error() {
    let dir = scratch("gz");
    let mut text = String::new();
    for i in 0..20_000u32 {
        text.push_str(&format!(
            "{}.{}.{}.0/24 {}\n",
            1 + i / 65536,
            (i / 256) % 256,
            i % 256,
            i
        ));
    }
    let gz = gzip(text.as_bytes());
    let whole = write(&dir, "t.txt.gz", &gz);
    let table = load_table(&whole, &LoadOptions::default()).unwrap();
    assert_eq!(table.v4.len(), 20_000);
    for cut in [gz.len() / 2, gz.len() - 9, 20] {
        let path = write(&dir, "cut.txt.gz", &gz[..cut]);
        for skip_bad in [false, true] {
            let options = LoadOptions {
                skip_bad,
                ..LoadOptions::default()
            };
            let error = load_table(&path, &options).unwrap_err();
            let text = error.to_string();
            assert!(text.contains("cut.txt.gz"), "{text}");
            assert!(
                matches!(
                    error,
                    LoadError::Bad { .. } | LoadError::Io { .. } | LoadError::File { .. }
                ),
                "{text}"
            );
        }
    }
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn updates_malformed_lines() {
    let dir = scratch("updates");
    let cases: [(&str, &str); 4] = [
        ("x a 10.0.0.0/8 192.0.2.1\n", "is not a Unix time"),
        ("5 b 10.0.0.0/8 192.0.2.1\n", "is not an action"),
        ("5 a 10.0.0.0/8 nexthop\n", "not a next-hop address"),
        ("5 a 10.0.0.0/8\n", "expected `time a|w prefix nexthop`"),
    ];
    let forced = LoadOptions {
        format: Some(Format::Updates),
        ..LoadOptions::default()
    };
    for (i, (line, says)) in cases.iter().enumerate() {
        let name = format!("u{i}.txt");
        let path = write(
            &dir,
            &name,
            format!("1 a 192.0.2.0/24 192.0.2.1\n{line}").as_bytes(),
        );
        let error = load_updates(&path, &forced, NextHopTable::default())
            .unwrap_err()
            .to_string();
        assert_bad(&error, &name, 2, says);
    }
    // A withdrawal without a next hop is fine; skip_bad counts the rest.
    let path = write(
        &dir,
        "mixed.txt",
        b"1 a 192.0.2.0/24 192.0.2.1\n2 w 192.0.2.0/24\n3 z 10.0.0.0/8 192.0.2.1\n",
    );
    let skip = LoadOptions {
        skip_bad: true,
        ..LoadOptions::default()
    };
    let loaded = load_updates(&path, &skip, NextHopTable::default()).unwrap();
    assert_eq!((loaded.updates.len(), loaded.stats.skipped), (2, 1));
    // A table given where updates are expected, and the reverse.
    let table = write(&dir, "table.txt", b"192.0.2.0/24 1\n");
    let error = load_updates(&table, &LoadOptions::default(), NextHopTable::default())
        .unwrap_err()
        .to_string();
    assert!(error.contains("not an update stream"), "{error}");
    let error = table_error(&path, &LoadOptions::default());
    assert!(error.contains("update stream, not a table"), "{error}");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn pfx2as_files_label_each_prefix_with_its_first_origin() {
    let dir = scratch("pfx2as");
    let text = "1.0.0.0\t24\t13335\n\
                1.0.4.0\t22\t38803_4134\n\
                1.0.8.0\t21\t{4134,4847}\n\
                1.0.16.0\t20\t4134,4847_7\n\
                1.0.32.0\t19\t{7}\n\
                2001:db8::\t32\t64500\n\
                2001:db8:100::\t40\t4200000000_64501\n";
    for (name, bytes) in [
        ("p.pfx2as", text.as_bytes().to_vec()),
        ("p.pfx2as.gz", gzip(text.as_bytes())),
    ] {
        let path = write(&dir, name, &bytes);
        let table = load_table(&path, &LoadOptions::default()).unwrap();
        assert_eq!(table.format, Some(Format::Pfx2as), "{name}");
        let v4 = |text: &str| table.v4.get(text.parse::<Prefix<u32>>().unwrap());
        let v6 = |text: &str| table.v6.get(text.parse::<Prefix<u128>>().unwrap());
        assert_eq!(v4("1.0.0.0/24"), Some(13335));
        assert_eq!(
            v4("1.0.4.0/22"),
            Some(38803),
            "the first of several origins"
        );
        assert_eq!(v4("1.0.8.0/21"), Some(0), "an AS set has no single origin");
        assert_eq!(v4("1.0.16.0/20"), Some(0), "an AS set listed first");
        assert_eq!(v4("1.0.32.0/19"), Some(0), "a set of one AS is still a set");
        assert_eq!(v6("2001:db8::/32"), Some(64500));
        assert_eq!(v6("2001:db8:100::/40"), Some(4_200_000_000));
        assert_eq!((table.v4.len(), table.v6.len()), (5, 2));
        assert_eq!(table.notes.len(), 2, "{:?}", table.notes);
        assert!(table.notes[0].starts_with("3 prefixes have several origin ASes"));
        assert!(table.notes[1].starts_with("3 prefixes have an AS set"));
        // A table, not an update stream.
        let error = load_updates(&path, &LoadOptions::default(), NextHopTable::default())
            .unwrap_err()
            .to_string();
        assert!(error.contains("is a `pfx2as` table"), "{error}");
    }
    // Forced, a pfx2as file whose first line alone would not tell.
    let forced = LoadOptions {
        format: Some(Format::Pfx2as),
        ..LoadOptions::default()
    };
    let bad = [
        ("1.0.0.0\t24\tAS13335\n", 1, "`AS13335` is not an origin AS"),
        (
            "1.0.0.0\t24\t1\n1.0.0.0\t24\t1_x\n",
            2,
            "`1_x` is not an origin AS",
        ),
        (
            "1.0.0.0\t24\t1\n1.0.0.0\t24\t{1,}\n",
            2,
            "is not an origin AS",
        ),
        (
            "1.0.0.0\t24\t1\n1.0.0.0\t24\t99999999999\n",
            2,
            "is not an origin AS",
        ),
        ("1.0.0.0\t24\n", 1, "expected `address length origin-as`"),
        (
            "1.0.0.0\t24\t1\t2\n",
            1,
            "expected `address length origin-as`",
        ),
        ("1.0.0.0\tx\t1\n", 1, "`x` is not a prefix length"),
        ("1.0.0.0\t33\t1\n", 1, "`33` is not in 0..=32"),
        ("1.0.0.1\t24\t1\n", 1, "host bits set"),
        ("2001:db8::\t129\t1\n", 1, "is not in 0..=128"),
    ];
    for (text, line, says) in bad {
        let path = write(&dir, "bad.pfx2as", text.as_bytes());
        assert_bad(&table_error(&path, &forced), "bad.pfx2as", line, says);
    }
    // A line skipped under `skip_bad` is not in the notes' counts.
    let path = write(
        &dir,
        "skip.pfx2as",
        b"1.0.0.0\t24\t1_2\n1.0.1.0\t24\t{3,4}_x\n",
    );
    let skipping = LoadOptions {
        skip_bad: true,
        ..forced
    };
    let table = load_table(&path, &skipping).unwrap();
    assert_eq!((table.stats.skipped, table.v4.len()), (1, 1));
    assert_eq!(table.notes.len(), 1, "{:?}", table.notes);
    assert!(table.notes[0].starts_with("1 prefixes have several origin ASes"));
    // --lenient clears host bits here too.
    let path = write(&dir, "host.pfx2as", b"1.0.0.1\t24\t7\n");
    let lenient = LoadOptions {
        lenient: true,
        ..forced
    };
    let table = load_table(&path, &lenient).unwrap();
    assert_eq!(table.stats.masked, 1);
    assert_eq!(table.v4.get("1.0.0.0/24".parse().unwrap()), Some(7));
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn pyasn_semicolon_comments_and_a_byte_order_mark_are_not_records() {
    let dir = scratch("comments");
    // pyasn's `ipasn` files: `;` comment lines, then `prefix<TAB>origin`.
    let pyasn = write(
        &dir,
        "ipasn.dat",
        b"; IP-ASN32-DAT file\n; Original source: rib.20261101.0000.bz2\n1.0.0.0/24\t13335\n  ; indented\n1.0.4.0/22\t38803\n",
    );
    let table = load_table(&pyasn, &LoadOptions::default()).unwrap();
    assert_eq!(table.format, Some(Format::Table));
    assert_eq!(table.v4.len(), 2);
    assert_eq!(table.stats.records, 5);
    // A UTF-8 byte order mark before the first line, on each text format.
    for (name, text, format) in [
        ("bom.txt", "1.0.0.0/24 7\n", Format::Table),
        ("bom-nh.txt", "1.0.0.0/24 192.0.2.1\n", Format::NextHop),
        ("bom.pfx2as", "1.0.0.0\t24\t7\n", Format::Pfx2as),
        ("bom-comment.txt", "# header\n1.0.0.0/24 7\n", Format::Table),
    ] {
        let path = write(
            &dir,
            name,
            &[b"\xef\xbb\xbf".as_slice(), text.as_bytes()].concat(),
        );
        let table = load_table(&path, &LoadOptions::default()).unwrap();
        assert_eq!((table.format, table.v4.len()), (Some(format), 1), "{name}");
    }
    let path = write(
        &dir,
        "bom.updates",
        b"\xef\xbb\xbf1418774400 a 10.0.0.0/8 192.0.2.1\n",
    );
    let updates = load_updates(&path, &LoadOptions::default(), NextHopTable::default()).unwrap();
    assert_eq!(updates.updates.len(), 1);
    // Past line 1 the mark is not skipped: a bad line, named.
    let path = write(
        &dir,
        "bom2.txt",
        b"1.0.0.0/24 7\n\xef\xbb\xbf1.0.1.0/24 7\n",
    );
    assert_bad(
        &table_error(&path, &LoadOptions::default()),
        "bom2.txt",
        2,
        "is not an IPv4 address",
    );
    std::fs::remove_dir_all(&dir).ok();
}
