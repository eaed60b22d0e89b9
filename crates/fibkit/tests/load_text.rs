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
