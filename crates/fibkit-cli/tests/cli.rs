//! The `fibkit` binary end to end: real tables, exit codes, and bad input
//! that must give an error message (exit 2), never a panic (exit 101).
//!
//! One file over the usual size: each file under `tests/` is a test binary
//! of its own, linked and started apart, and these tests share their
//! helpers (tables, running the binary, reading its output); splitting them
//! by subcommand would add a shared module and a binary per topic for no
//! change in what is checked.

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

fn data(name: &str) -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/data")
        .join(name)
        .display()
        .to_string()
}

fn fibkit(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_fibkit"))
        .args(args)
        .output()
        .expect("running fibkit")
}

fn fibkit_stdin(args: &[&str], input: impl AsRef<[u8]>) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_fibkit"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("running fibkit");
    let written = child.stdin.take().unwrap().write_all(input.as_ref());
    // fibkit may stop reading early (an overlong line): a closed pipe is fine.
    if let Err(error) = written {
        assert_eq!(error.kind(), std::io::ErrorKind::BrokenPipe, "{error}");
    }
    child.wait_with_output().unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("fibkit-cli-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn verify_dir24_8_on_the_full_asn_table() {
    let out = fibkit(&[
        "verify",
        &data("dfz-v4-asn.txt.gz"),
        "--engine",
        "dir24-8",
        "--random",
        "100000",
    ]);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}{}", text(&out.stderr));
    assert!(
        stdout
            .lines()
            .last()
            .unwrap()
            .ends_with(" passed, 0 failed"),
        "{stdout}"
    );
}

#[test]
fn verify_radix_on_ipv6_tables() {
    for name in [
        "dfz-v6-nh.txt.gz",
        "dfz-v6-asn.txt.gz",
        "linx-rib-ipv6.20141225.txt.gz",
    ] {
        let out = fibkit(&[
            "verify",
            &data(name),
            "--engine",
            "radix",
            "--random",
            "100000",
        ]);
        let stdout = text(&out.stdout);
        assert!(out.status.success(), "{name}: {stdout}");
        assert!(
            stdout.contains("IPv6") && stdout.ends_with(" passed, 0 failed\n"),
            "{stdout}"
        );
    }
}

#[test]
fn verify_replays_the_linx_updates() {
    let out = fibkit(&[
        "verify",
        &data("dfz-v4-nh.txt.gz"),
        "--engine",
        "dir24-8",
        "--updates",
        &data("linx-updates-ipv4.20141217.txt.gz"),
        "--random",
        "1000",
        "--check-every",
        "8000",
    ]);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    assert!(stdout.contains("after 23446 of 23446 updates"), "{stdout}");
    assert!(stdout.contains("23446 updates applied"), "{stdout}");
}

#[test]
fn lookup_arguments_and_stdin() {
    let table = data("dfz-v4-nh.txt.gz");
    let out = fibkit(&[
        "lookup", &table, "8.8.8.8", "10.0.0.1", "--engine", "dir24-8",
    ]);
    assert!(out.status.success());
    assert_eq!(
        text(&out.stdout),
        "8.8.8.8 8.8.8.0/24 191\n10.0.0.1 - none\n"
    );
    let out = fibkit_stdin(
        &["lookup", &data("linx-rib-ipv6.20141225.txt.gz")],
        "2600:2004::1\n\n::1\nnot-an-address\n",
    );
    assert_eq!(
        out.status.code(),
        Some(1),
        "a bad input line makes the exit status 1"
    );
    assert_eq!(
        text(&out.stdout),
        "2600:2004::1 2600:2004::/32 0\n::1 - none\n"
    );
    assert!(text(&out.stderr).contains("input:4: `not-an-address` is not an IPv4 or IPv6 address"));
}

/// A small table with prefixes of both families.
fn dual_stack_table(name: &str) -> PathBuf {
    let path = scratch(name).join("dual.txt");
    std::fs::write(
        &path,
        "10.0.0.0/8 1\n10.1.0.0/16 2\n2001:db8::/32 3\n2001:db8:1::/48 4\n",
    )
    .unwrap();
    path
}

#[test]
fn dual_stack_table_with_one_engine_per_family() {
    let path = dual_stack_table("dual");
    let table = path.to_str().unwrap();
    let addrs = [
        "10.1.2.3",
        "10.2.0.1",
        "2001:db8:1::9",
        "2001:db8:2::1",
        "::1",
    ];
    let expected = "10.1.2.3 10.1.0.0/16 2\n10.2.0.1 10.0.0.0/8 1\n\
        2001:db8:1::9 2001:db8:1::/48 4\n2001:db8:2::1 2001:db8::/32 3\n::1 - none\n";
    // An IPv4-only engine: IPv6 gets its default, said once on stderr.
    let mut args = vec!["lookup", table, "--engine", "dir24-8"];
    args.extend(addrs);
    let out = fibkit(&args);
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert_eq!(text(&out.stdout), expected);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    let default_v6 = fibkit::default_spec(fibkit::Family::V6);
    assert!(
        stderr.contains(&format!(
            "IPv6 prefixes use the default engine {default_v6}"
        )),
        "{stderr}"
    );
    // Per-family choice, and no engine at all: both answer the same.
    for engines in [&["--engine", "v4=dxr", "--engine", "v6=lctrie"][..], &[]] {
        let mut args = vec!["lookup", table];
        args.extend(engines);
        args.extend(addrs);
        let out = fibkit(&args);
        assert!(out.status.success(), "{}", text(&out.stderr));
        assert_eq!(text(&out.stdout), expected, "{engines:?}");
        assert!(out.stderr.is_empty(), "{}", text(&out.stderr));
    }
    // verify checks each family with its engine.
    let out = fibkit(&["verify", table, "--engine", "dxr", "--random", "1000"]);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}{}", text(&out.stderr));
    let checked = |engine: &str, family: &str| {
        stdout
            .lines()
            .any(|line| line.starts_with(engine) && line.contains(family))
    };
    assert!(
        checked("dxr", "IPv4") && checked(default_v6, "IPv6"),
        "{stdout}"
    );
    assert!(stdout.contains(", 0 failed"), "{stdout}");
    // stats builds each family's engine.
    let out = fibkit(&[
        "stats",
        table,
        "--engine",
        "v4=dir24-8",
        "--engine",
        "v6=radix",
    ]);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}{}", text(&out.stderr));
    assert!(
        stdout.contains("engine dir24-8") && stdout.contains("engine radix"),
        "{stdout}"
    );
    std::fs::remove_dir_all(path.parent().unwrap()).unwrap();
}

#[test]
fn stats_prints_lengths_ranges_and_engines() {
    let out = fibkit(&["stats", &data("dfz-v4-nh.txt.gz"), "--engine", "dir24-8"]);
    let stdout = text(&out.stdout);
    assert!(out.status.success());
    for needle in [
        "IPv4: 901899 prefixes, 200 distinct labels",
        "/24",
        "ranges:",
        "engine dir24-8:",
        "bytes/prefix",
    ] {
        assert!(stdout.contains(needle), "missing {needle}: {stdout}");
    }
}

#[test]
fn convert_round_trips_and_keeps_next_hops() {
    let dir = scratch("convert");
    let out_table = dir.join("table.txt");
    let out_hops = dir.join("hops.txt");
    let out = fibkit(&[
        "convert",
        &data("linx-rib-ipv6.20141225.txt.gz"),
        "-o",
        out_table.to_str().unwrap(),
        "--nexthops-out",
        out_hops.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let converted = std::fs::read_to_string(&out_table).unwrap();
    assert_eq!(converted.lines().count(), 20_440);
    assert_eq!(
        std::fs::read_to_string(&out_hops).unwrap().lines().count(),
        94
    );
    let again = fibkit(&["stats", out_table.to_str().unwrap()]);
    assert!(text(&again.stdout).contains("IPv6: 20440 prefixes, 94 distinct labels"));
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn bench_writes_json_with_every_run() {
    let dir = scratch("bench");
    let json = dir.join("bench.json");
    let out = fibkit(&[
        "bench",
        &data("dfz-v6-nh.txt.gz"),
        "--engine",
        "radix",
        "--keys",
        "4096",
        "--runs",
        "3",
        "--min-seconds",
        "0",
        "--patterns",
        "rnd,seq,announced",
        "--modes",
        "plain,batch",
        "--threads",
        "1,2",
        "--json",
        json.to_str().unwrap(),
        "--plot",
        dir.join("plots").to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(report["family"], "IPv6");
    assert_eq!(report["max_simd"], fibkit::cpu::max_simd().to_string());
    let measurements = report["measurements"].as_array().unwrap();
    // Per thread count (2): the ceiling once per pattern (3), radix in
    // plain and batch for rnd and announced, plain only for seq (5).
    assert_eq!(measurements.len(), (3 + 5) * 2);
    assert!(measurements
        .iter()
        .all(|m| m["runs_mlps"].as_array().unwrap().len() == 3));
    // The stored run draws the same plots again, legends included.
    let again = dir.join("again");
    let out = fibkit(&[
        "plot",
        json.to_str().unwrap(),
        "--out",
        again.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    for (name, legend) in [
        ("throughput.svg", "\nrnd batch\n"),
        ("threads.svg", "\nradix rnd batch\n"),
    ] {
        let drawn = std::fs::read_to_string(dir.join("plots").join(name)).unwrap();
        let redrawn = std::fs::read_to_string(again.join(name)).unwrap();
        assert_eq!(drawn, redrawn, "{name}");
        assert!(redrawn.contains(legend), "{name} has no legend {legend:?}");
    }
    let not_a_run = dir.join("other.json");
    std::fs::write(&not_a_run, r#"{"kind":"table"}"#).unwrap();
    let out = fibkit(&[
        "plot",
        not_a_run.to_str().unwrap(),
        "--out",
        again.to_str().unwrap(),
    ]);
    assert!(!out.status.success());
    assert!(text(&out.stderr).contains("not the JSON of `fibkit bench --json`"));
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn bench_measures_every_mode_in_rounds_with_a_baseline() {
    let dir = scratch("bench-modes");
    let json = dir.join("bench.json");
    let table = data("linx-rib-ipv6.20141225.txt.gz");
    let out = fibkit(&[
        "bench",
        &table,
        "--engine",
        "radix",
        "--engine",
        "lctrie",
        "--keys",
        "3000",
        "--runs",
        "3",
        "--min-seconds",
        "0",
        "--patterns",
        "rnd,seq",
        "--modes",
        "plain,key,reader,batch,burst",
        "--burst",
        "8,32",
        "--baseline",
        "radix/key",
        "--json",
        json.to_str().unwrap(),
        "--plot",
        dir.join("plots").to_str().unwrap(),
    ]);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{}", text(&out.stderr));
    for head in [
        "median Mlps",
        "min Mlps",
        "ns/lookup",
        "Mlps of rounds 1..3",
    ] {
        assert!(stdout.contains(head), "missing {head}: {stdout}");
    }
    assert!(
        stdout.contains("ratio to radix/key: median of the per-round ratios"),
        "{stdout}"
    );
    assert!(text(&out.stderr).contains("round 3 of 3 done"));
    assert!(dir.join("plots/bursts.svg").exists());
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let measurements = report["measurements"].as_array().unwrap();
    let modes = |pattern: &str, engine: &str| -> Vec<String> {
        measurements
            .iter()
            .filter(|m| m["pattern"] == pattern && m["engine"] == engine)
            .map(|m| m["mode"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(
        modes("rnd", "lctrie"),
        ["plain", "key", "reader", "batch", "burst8", "burst32"]
    );
    // Dependent lookups are not batched.
    assert_eq!(modes("seq", "radix"), ["plain", "key", "reader"]);
    assert_eq!(modes("rnd", "ceiling"), ["plain"]);
    for m in measurements {
        assert_eq!(m["runs_mlps"].as_array().unwrap().len(), 3, "{m}");
        let ratio = &m["ratio"];
        assert_eq!(ratio["baseline"], "radix/key", "{m}");
        assert_eq!(ratio["rounds"].as_array().unwrap().len(), 3, "{m}");
        if m["engine"] == "radix" && m["mode"] == "key" {
            assert_eq!(ratio["median"], 1.0);
        }
    }
    // Every mode of every engine gave the same results on the same keys.
    for pattern in ["rnd", "seq"] {
        let mut checksums = measurements
            .iter()
            .filter(|m| m["pattern"] == pattern && m["engine"] != "ceiling")
            .map(|m| m["checksum"].as_u64().unwrap());
        let first = checksums.next().unwrap();
        assert!(checksums.all(|c| c == first), "{pattern}");
    }
    let bad: Vec<(Vec<&str>, &str)> = vec![
        (vec!["--modes", "fast"], "`fast` is not a mode"),
        (vec!["--burst", "0"], "--burst"),
        (
            vec!["--baseline", "cpe"],
            "`cpe` is not among the measured engines",
        ),
        (
            vec!["--baseline", "radix/burst64"],
            "mode burst64 is not measured",
        ),
        (vec!["--baseline", "radix/turbo"], "`turbo` is not a mode"),
        (
            vec!["--baseline", "ceiling", "--no-ceiling"],
            "drop --no-ceiling",
        ),
    ];
    for (extra, expected) in bad {
        let mut args = vec!["bench", &table, "--engine", "radix", "--keys", "100"];
        args.extend(extra.iter().copied());
        let out = fibkit(&args);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{extra:?}: {stderr}");
        assert!(stderr.contains(expected), "{extra:?}: {stderr}");
    }
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn strides_prints_the_four_tables() {
    let out = fibkit(&[
        "strides",
        &data("linx-rib-ipv6.20141225.txt.gz"),
        "--levels",
        "3..5",
        "--cap",
        "17",
    ]);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{}", text(&out.stderr));
    for needle in [
        "IPv6 table, 20440 prefixes",
        "fixed strides",
        "variable strides, packed nodes",
        "memory (KiB)",
        "leaf-pushed (KiB)",
        "not pushed (KiB)",
        "time (ms)",
        "Table 5 fixed",
        "fixed strides (bits per level)",
        "variable: root stride (bits)",
    ] {
        assert!(stdout.contains(needle), "missing {needle}: {stdout}");
    }
    let out = fibkit(&[
        "strides",
        &data("linx-rib-ipv6.20141225.txt.gz"),
        "--levels",
        "5..3",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("not a level range"));
    let out = fibkit(&[
        "bspl-levels",
        &data("linx-rib-ipv6.20141225.txt.gz"),
        "--levels",
        "3..4",
        "--keys",
        "1000",
    ]);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{}", text(&out.stderr));
    for needle in [
        "prefix lengths (bits)",
        "total memory (KiB)",
        "random lookup (ns)",
        "bspl:levels=4",
    ] {
        assert!(stdout.contains(needle), "missing {needle}: {stdout}");
    }
}

#[test]
fn trace_gen_and_stats() {
    let dir = scratch("trace");
    let trace = dir.join("trace.txt");
    let table = data("dfz-v6-nh.txt.gz");
    let out = fibkit(&[
        "trace",
        "gen",
        &table,
        "--kind",
        "randnet",
        "--count",
        "5000",
        "-o",
        trace.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(
        std::fs::read_to_string(&trace).unwrap().lines().count(),
        5000
    );
    let out = fibkit(&[
        "trace",
        "stats",
        &table,
        trace.to_str().unwrap(),
        "--top",
        "3",
    ]);
    let stdout = text(&out.stdout);
    assert!(out.status.success());
    assert!(
        stdout.contains("IPv6: 5000 addresses, 0 unmatched"),
        "{stdout}"
    );
    assert!(stdout.contains("total variation distance"), "{stdout}");
    let out = fibkit(&["trace", "gen", &table, "--kind", "zipf:-2"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("Zipf exponent"));
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn bad_input_is_an_error_not_a_panic() {
    let dir = scratch("bad");
    let bad_table = dir.join("bad.txt");
    std::fs::write(&bad_table, "10.0.0.0/8 1\n10.0.0.1/8 2\n").unwrap();
    let empty = dir.join("empty.txt");
    std::fs::write(&empty, "").unwrap();
    let dual = dir.join("dual.txt");
    std::fs::write(&dual, "10.0.0.0/8 1\n2001:db8:1::/48 2\n").unwrap();
    let dual = dual.to_str().unwrap();
    let table = data("dfz-v6-nh.txt.gz");
    let both_families = format!(
        "strides sum to 32 bits but IPv6 addresses have 128 (give strides summing to 128, \
             each at most 24); `cpe:strides=16+8+8` was given for both families of this table: \
             `--engine v4=cpe:strides=16+8+8` builds it for the IPv4 prefixes only, and the \
             IPv6 prefixes use {}",
        fibkit::default_spec(fibkit::Family::V6)
    );
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (
            vec!["stats", bad_table.to_str().unwrap()],
            "bad.txt:2: `10.0.0.1/8` has host bits set",
        ),
        (vec!["stats", empty.to_str().unwrap()], "the file is empty"),
        (vec!["stats", "/nonexistent/table"], "/nonexistent/table"),
        (
            vec!["verify", &table, "--engine", "dir24-8"],
            "engine `dir24-8` builds no family this table has (IPv6); engines that can: radix",
        ),
        // A layout for one family given to both: the error says how to
        // keep it to its own, in every command that builds engines.
        (
            vec!["verify", dual, "--engine", "cpe:strides=16+8+8"],
            &both_families,
        ),
        (
            vec!["lookup", dual, "10.1.2.3", "--engine", "cpe:strides=16+8+8"],
            "`--engine v4=cpe:strides=16+8+8` builds it for the IPv4 prefixes only",
        ),
        (
            vec!["stats", dual, "--engine", "bspl:lengths=16+24+32"],
            "is longer than the longest target length 32",
        ),
        (
            vec!["stats", dual, "--engine", "bspl:lengths=16+24+32", "--json"],
            "`--engine v4=bspl:lengths=16+24+32` builds it for the IPv4 prefixes only",
        ),
        (
            vec!["verify", &table, "--engine", "nosuch"],
            "unknown engine `nosuch`",
        ),
        (
            vec!["verify", &table, "--engine", "radix:x=1"],
            "unknown parameter `x`",
        ),
        (
            vec!["bench", &table, "--engine", "radix", "--family", "v4"],
            "no IPv4 prefixes",
        ),
        (
            vec![
                "bench",
                &table,
                "--engine",
                "radix",
                "--patterns",
                "trace:/nonexistent/trace",
            ],
            "/nonexistent/trace",
        ),
    ];
    for (args, expected) in cases {
        let out = fibkit(&args);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(expected), "{args:?}: {stderr}");
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
    }
    let out = fibkit(&["stats", bad_table.to_str().unwrap(), "--lenient"]);
    assert!(out.status.success());
    assert!(text(&out.stderr).contains("cleared host bits of 1 prefixes"));
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn replay_reports_rates_latency_readers_and_checks_the_result() {
    let dir = scratch("replay");
    let json = dir.join("replay.json");
    let plot = dir.join("replay.svg");
    let out = fibkit(&[
        "replay",
        &data("dfz-v4-nh.txt.gz"),
        "--updates",
        &data("linx-updates-ipv4.20141217.txt.gz"),
        "--engine",
        "dxr:k=16",
        "--speed",
        "max",
        "--readers",
        "1",
        "--idle-seconds",
        "0.1",
        "--keys",
        "10000",
        "--random",
        "1000",
        "--json",
        json.to_str().unwrap(),
        "--plot",
        plot.to_str().unwrap(),
    ]);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", text(&out.stderr));
    for want in [
        "engine           dxr:k=16",
        "23446 changes (15426 effective, 8020 no-ops) at speed max",
        "changes/s",
        "update-to-visible p50",
        "readers (1)",
        " 0 failed",
    ] {
        assert!(stdout.contains(want), "missing `{want}` in:\n{stdout}");
    }
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(report["changes"], 23446);
    assert!(report["timeline"].as_array().is_some_and(|t| !t.is_empty()));
    assert!(std::fs::read_to_string(&plot).unwrap().contains("<svg"));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A hostile stream: withdrawals of absent prefixes, duplicate
/// announcements, /0 and /32 changes and malformed lines. Without
/// `--skip-bad` the first bad line stops it with `file:line`; with it every
/// bad line is reported, the good changes apply and the table still equals
/// the reference.
#[test]
fn replay_of_a_hostile_stream() {
    let dir = scratch("hostile");
    let table = dir.join("table.txt");
    std::fs::write(&table, "10.0.0.0/8 1\n192.0.2.0/24 2\n").unwrap();
    let updates = dir.join("updates.txt");
    std::fs::write(
        &updates,
        "100 w 172.16.0.0/12 0.0.0.0\n\
         100 a 10.1.0.0/16 192.0.2.1\n\
         100 a 10.1.0.0/16 192.0.2.1\n\
         101 a 0.0.0.0/0 192.0.2.9\n\
         101 a 10.1.2.3/32 192.0.2.7\n\
         102 x 10.2.0.0/16 192.0.2.1\n\
         102 a 10.2.0.0/33 192.0.2.1\n\
         not a line at all\n\
         103 w 0.0.0.0/0 0.0.0.0\n\
         103 w 10.1.2.3/32 0.0.0.0\n\
         104 w 10.1.2.3/32 0.0.0.0\n",
    )
    .unwrap();
    let args = |skip: bool| {
        let mut args = vec![
            "replay".to_string(),
            table.display().to_string(),
            "--format".into(),
            "table".into(),
            "--updates".into(),
            updates.display().to_string(),
            "--readers".into(),
            "1".into(),
            "--idle-seconds".into(),
            "0".into(),
            "--keys".into(),
            "100".into(),
        ];
        if skip {
            args.push("--skip-bad".into());
        }
        args
    };
    let strict: Vec<String> = args(false);
    let out = fibkit(&strict.iter().map(String::as_str).collect::<Vec<_>>());
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("updates.txt:6:"), "{stderr}");
    let lenient: Vec<String> = args(true);
    let out = fibkit(&lenient.iter().map(String::as_str).collect::<Vec<_>>());
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(out.status.success(), "{stdout}\n{stderr}");
    for line in ["line 6:", "line 7:", "line 8:"] {
        assert!(stderr.contains(line), "`{line}` not reported:\n{stderr}");
    }
    assert!(stderr.contains("skipped 3 bad lines"), "{stderr}");
    // 8 good changes: 5 effective (10.1.0.0/16, /0 and the /32 in, /0
    // and the /32 out); the withdrawal of an absent prefix, the repeated
    // announcement and the repeated withdrawal are no-ops.
    assert!(
        stdout.contains("8 changes (5 effective, 3 no-ops)"),
        "{stdout}"
    );
    assert!(stdout.contains(" 0 failed"), "{stdout}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn build_an_image_then_look_up_and_verify_from_it() {
    let dir = scratch("image");
    let image = dir.join("v4.fib");
    let image_arg = image.to_str().unwrap();
    let out = fibkit(&[
        "build",
        &data("dfz-v4-nh.txt.gz"),
        "--engine",
        "dir24-8",
        "-o",
        image_arg,
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stdout).starts_with("wrote "));
    let out = fibkit(&["lookup", image_arg, "8.8.8.8", "10.0.0.1"]);
    assert_eq!(text(&out.stdout), "8.8.8.8 ? 191\n10.0.0.1 - none\n");
    let out = fibkit(&["lookup", image_arg, "2001:db8::1"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("not an IPv4 address"));
    let out = fibkit(&[
        "verify",
        &data("dfz-v4-nh.txt.gz"),
        "--image",
        image_arg,
        "--random",
        "1000",
    ]);
    assert!(out.status.success(), "{}", text(&out.stdout));
    assert!(text(&out.stdout).contains(", 0 failed"));
    // A damaged image is an error naming the file, not a panic.
    let mut bytes = std::fs::read(&image).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 0xff;
    std::fs::write(&image, &bytes).unwrap();
    let out = fibkit(&["lookup", image_arg, "8.8.8.8"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("v4.fib: checksum mismatch"),
        "{}",
        text(&out.stderr)
    );
    let out = fibkit(&[
        "build",
        &data("dfz-v4-nh.txt.gz"),
        "--engine",
        "radix",
        "-o",
        image_arg,
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("cannot be saved as an image"));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Standard input that is not text, or a line without end: the answers
/// around a bad line are printed, a line over the limit stops the command
/// after the answers before it.
#[test]
fn lookup_survives_hostile_standard_input() {
    let table = data("dfz-v4-nh.txt.gz");
    let out = fibkit_stdin(
        &["lookup", &table, "--engine", "dir24-8"],
        b"8.8.8.8\n\xff\xfe\x00\n10.0.0.1\n",
    );
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    assert_eq!(
        text(&out.stdout),
        "8.8.8.8 8.8.8.0/24 191\n10.0.0.1 - none\n"
    );
    assert!(
        text(&out.stderr).contains("standard input:2: ") && text(&out.stderr).contains("not UTF-8"),
        "{}",
        text(&out.stderr)
    );
    let mut endless = b"8.8.8.8\n".to_vec();
    endless.extend(std::iter::repeat_n(b' ', 1 << 20));
    let out = fibkit_stdin(&["lookup", &table, "--engine", "dir24-8"], endless);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert_eq!(text(&out.stdout), "8.8.8.8 8.8.8.0/24 191\n");
    assert!(
        stderr.contains("standard input:2: the line is longer than 65536 bytes"),
        "{stderr}"
    );
    assert!(stderr.len() < 400, "{stderr}");
}

/// A spec that fits one family is not an error because the table has no
/// prefixes, or the update stream some changes, of the other.
#[test]
fn a_spec_for_one_family_works_on_a_table_of_that_family() {
    let dir = scratch("family");
    let table = data("dfz-v4-nh.txt.gz");
    let out = fibkit(&[
        "lookup",
        &table,
        "--engine",
        "cpe:strides=16+8+8",
        "8.8.8.8",
        "2001:db8::1",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(
        text(&out.stdout),
        "8.8.8.8 8.8.8.0/24 191\n2001:db8::1 - none\n"
    );
    let small = dir.join("v4.txt");
    std::fs::write(&small, "10.0.0.0/8 1\n192.0.2.0/24 2\n").unwrap();
    let updates = dir.join("mixed.txt");
    std::fs::write(
        &updates,
        "1 a 2001:db8::/32 2001:db8::1\n1 a 10.1.0.0/16 192.0.2.1\n2 w 2001:db8::/32\n",
    )
    .unwrap();
    let out = fibkit(&[
        "verify",
        small.to_str().unwrap(),
        "--engine",
        "cpe:strides=16+8+8",
        "--updates",
        updates.to_str().unwrap(),
        "--random",
        "100",
    ]);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(out.status.success(), "{stdout}{stderr}");
    assert!(stdout.contains("IPv4 after 1 of 1 updates"), "{stdout}");
    assert!(
        stderr.contains("the stream's 2 IPv6 changes are not replayed"),
        "{stderr}"
    );
    // The other-family changes are replayed where the spec fits both.
    let out = fibkit(&[
        "verify",
        small.to_str().unwrap(),
        "--engine",
        "radix",
        "--updates",
        updates.to_str().unwrap(),
        "--updates-format",
        "updates",
        "--random",
        "100",
    ]);
    assert!(out.status.success());
    assert!(text(&out.stdout).contains("radix IPv6 after 2 of 2 updates"));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// MRT update streams follow --peer (through the same load options as
/// --label), and --updates-format forces the stream's format.
#[test]
fn verify_updates_honours_peer_and_format() {
    let table = data("mrt/openbgpd_rib_table");
    let stream = data("mrt/openbgpd_bgp");
    let run = |extra: &[&str]| {
        let mut args = vec![
            "verify",
            &table,
            "--engine",
            "radix",
            "--updates",
            &stream,
            "--random",
            "10",
        ];
        args.extend_from_slice(extra);
        fibkit(&args)
    };
    let all = run(&[]);
    assert!(all.status.success(), "{}", text(&all.stderr));
    assert!(text(&all.stderr).contains("(all peers; choose one with --peer)"));
    let one = run(&["--peer", "192.168.1.10"]);
    assert!(one.status.success(), "{}", text(&one.stderr));
    let notes = text(&one.stderr);
    assert!(
        notes.contains("changes from 1 of") && !notes.contains("(all peers"),
        "{notes}"
    );
    let forced = run(&["--updates-format", "updates"]);
    assert_eq!(forced.status.code(), Some(2));
    assert!(text(&forced.stderr).contains("openbgpd_bgp:1: the line is not UTF-8"));
}

#[test]
fn hostile_tables_and_outputs_give_clear_errors() {
    let dir = scratch("hostile-tables");
    let path = |name: &str| dir.join(name).display().to_string();
    std::fs::write(path("allbad.txt"), "10.0.0.0/33 1\nnonsense\n").unwrap();
    std::fs::write(
        path("dup.txt"),
        "10.0.0.0/8 1\n10.0.0.0/8 2\n10.0.0.0/8 3\n",
    )
    .unwrap();
    let mut gz = std::process::Command::new("gzip")
        .arg("-c")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("gzip");
    let mut stdin = gz.stdin.take().unwrap();
    let writer = std::thread::spawn(move || {
        // 256 MiB of spaces: about 250 KiB on disk.
        let spaces = vec![b' '; 1 << 20];
        for _ in 0..256 {
            stdin.write_all(&spaces).unwrap();
        }
    });
    let bomb = gz.wait_with_output().unwrap().stdout;
    writer.join().unwrap();
    std::fs::write(path("bomb.gz"), &bomb).unwrap();
    std::fs::write(path("cut.gz"), &bomb[..12]).unwrap();
    let cases: Vec<(Vec<String>, &str)> = vec![
        (
            vec![
                "stats".into(),
                path("allbad.txt"),
                "--format".into(),
                "table".into(),
                "--skip-bad".into(),
            ],
            "nothing loaded: --skip-bad skipped every line or record (2 bad)",
        ),
        (
            vec!["stats".into(), path("bomb.gz")],
            "bomb.gz:1: the line is longer than 65536 bytes",
        ),
        (
            vec![
                "convert".into(),
                data("linx-rib-ipv6.20141225.txt.gz"),
                "-o".into(),
                "/dev/full".into(),
            ],
            "writing /dev/full: No space left on device",
        ),
        (
            vec![
                "verify".into(),
                path("dup.txt"),
                "--engine".into(),
                "radix".into(),
                "--random".into(),
                "1000000000000".into(),
            ],
            "over the limit of 268435456",
        ),
        (
            vec![
                "trace".into(),
                "gen".into(),
                path("dup.txt"),
                "--kind".into(),
                "randip".into(),
                "--count".into(),
                "99999999999".into(),
            ],
            "over the limit of 268435456",
        ),
        (
            vec![
                "bench".into(),
                path("dup.txt"),
                "--engine".into(),
                "radix".into(),
                "--keys".into(),
                "1e12".into(),
            ],
            "`1e12` is not a count",
        ),
        (
            vec![
                "replay".into(),
                path("dup.txt"),
                "--updates".into(),
                path("dup.txt"),
                "--keys".into(),
                "4294967296000".into(),
            ],
            "over the limit of 268435456",
        ),
        (
            vec![
                "lookup".into(),
                path("dup.txt"),
                "--engine".into(),
                "dir24-8:max-groups=16777217".into(),
                "10.0.0.1".into(),
            ],
            "`max-groups=16777217` is not a number in 0..=16777216",
        ),
    ];
    for (args, expected) in cases {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = fibkit(&args);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(expected), "{args:?}: {stderr}");
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
    }
    // A truncated gzip file: the cause is said once.
    let out = fibkit(&["stats", &path("cut.gz")]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    let parts: Vec<&str> = stderr.trim().split(": ").collect();
    assert!(parts.windows(2).all(|w| w[0] != w[1]), "{stderr}");
    // Duplicates are counted in stats and warned about once.
    let out = fibkit(&["stats", &path("dup.txt")]);
    assert!(out.status.success());
    assert!(text(&out.stdout).contains("3 routes, 2 duplicates"));
    let stderr = text(&out.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("the label read last wins"), "{stderr}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn lookup_shows_next_hops_and_json() {
    let dir = scratch("nexthops");
    let path = dir.join("nh.txt");
    std::fs::write(
        &path,
        "10.0.0.0/8 192.0.2.1\n10.1.0.0/16 192.0.2.2\n2001:db8::/32 2001:db8::ff\n",
    )
    .unwrap();
    let table = path.to_str().unwrap();
    let lookup = |extra: &[&str]| {
        let mut args = vec!["lookup", table, "10.1.2.3", "2001:db8::1", "11.0.0.1"];
        args.extend(extra);
        let out = fibkit(&args);
        assert!(out.status.success(), "{extra:?}: {}", text(&out.stderr));
        text(&out.stdout)
    };
    assert_eq!(
        lookup(&["--show", "nexthop"]),
        "10.1.2.3 10.1.0.0/16 192.0.2.2\n2001:db8::1 2001:db8::/32 2001:db8::ff\n11.0.0.1 - none\n"
    );
    assert_eq!(
        lookup(&["--show", "both"]),
        "10.1.2.3 10.1.0.0/16 1 192.0.2.2\n2001:db8::1 2001:db8::/32 2 2001:db8::ff\n11.0.0.1 - none\n"
    );
    let answers: Vec<serde_json::Value> = lookup(&["--json"])
        .lines()
        .map(|line| serde_json::from_str(line).expect("a JSON line"))
        .collect();
    assert_eq!(
        answers,
        [
            serde_json::json!({"addr": "10.1.2.3", "prefix": "10.1.0.0/16", "label": 1, "nexthop": "192.0.2.2"}),
            serde_json::json!({"addr": "2001:db8::1", "prefix": "2001:db8::/32", "label": 2, "nexthop": "2001:db8::ff"}),
            serde_json::json!({"addr": "11.0.0.1", "prefix": null, "label": null}),
        ]
    );
    // A prefix-to-AS file's labels are origin ASes.
    let pfx2as = dir.join("p.pfx2as");
    std::fs::write(
        &pfx2as,
        "10.0.0.0\t8\t64500_64501\n10.1.0.0\t16\t{64502,64503}\n",
    )
    .unwrap();
    let out = fibkit(&[
        "lookup",
        pfx2as.to_str().unwrap(),
        "--show",
        "both",
        "10.2.0.1",
        "10.1.0.1",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(
        text(&out.stdout),
        "10.2.0.1 10.0.0.0/8 64500 AS64500\n10.1.0.1 10.1.0.0/16 0 AS0\n"
    );
    assert!(
        text(&out.stderr).contains("1 prefixes have several origin ASes"),
        "{}",
        text(&out.stderr)
    );
    let out = fibkit(&["lookup", pfx2as.to_str().unwrap(), "--json", "10.2.0.1"]);
    let answer: serde_json::Value = serde_json::from_str(text(&out.stdout).trim()).unwrap();
    assert_eq!(
        answer,
        serde_json::json!({"addr": "10.2.0.1", "prefix": "10.0.0.0/8", "label": 64500, "origin_as": 64500})
    );
    // bgpdump -m text of a RIB dump: next hops, or origin ASes with
    // `--label origin-as`, of the peer with most routes (or `--peer`).
    let bgpdump = dir.join("rib.bgpdump");
    std::fs::write(
        &bgpdump,
        "TABLE_DUMP2|1|B|192.0.2.1|64500|10.0.0.0/8|64500 64510|IGP|192.0.2.7|100|0||NAG||\n\
         TABLE_DUMP2|1|B|192.0.2.2|64501|10.0.0.0/8|64501 64520|IGP|192.0.2.8|100|0||NAG||\n\
         TABLE_DUMP2|1|B|192.0.2.1|64500|10.1.0.0/16|64500|IGP|192.0.2.9|100|0||NAG||\n",
    )
    .unwrap();
    let out = fibkit(&[
        "lookup",
        bgpdump.to_str().unwrap(),
        "--show",
        "nexthop",
        "10.2.0.1",
        "10.1.0.1",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(
        text(&out.stdout),
        "10.2.0.1 10.0.0.0/8 192.0.2.7\n10.1.0.1 10.1.0.0/16 192.0.2.9\n"
    );
    assert!(
        text(&out.stderr).contains("bgpdump: kept the routes of peer 192.0.2.1 (AS64500)"),
        "{}",
        text(&out.stderr)
    );
    let out = fibkit(&[
        "lookup",
        bgpdump.to_str().unwrap(),
        "--label",
        "origin-as",
        "--peer",
        "AS64501",
        "--json",
        "10.2.0.1",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let answer: serde_json::Value = serde_json::from_str(text(&out.stdout).trim()).unwrap();
    assert_eq!(
        answer,
        serde_json::json!({"addr": "10.2.0.1", "prefix": "10.0.0.0/8", "label": 64520, "origin_as": 64520})
    );
    // A `prefix label` table has no next hops to show.
    let plain = dir.join("plain.txt");
    std::fs::write(&plain, "10.0.0.0/8 1\n").unwrap();
    let out = fibkit(&[
        "lookup",
        plain.to_str().unwrap(),
        "--show",
        "nexthop",
        "10.0.0.1",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("names no next hops"),
        "{}",
        text(&out.stderr)
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn stats_and_verify_json_parse_back() {
    let path = dual_stack_table("json");
    let table = path.to_str().unwrap();
    let json_lines = |args: &[&str]| -> Vec<serde_json::Value> {
        let out = fibkit(args);
        assert!(out.status.success(), "{args:?}: {}", text(&out.stderr));
        text(&out.stdout)
            .lines()
            .map(|line| serde_json::from_str(line).expect("a JSON line"))
            .collect()
    };
    let stats = json_lines(&["stats", table, "--json", "--engine", "radix"]);
    let kinds: Vec<&str> = stats.iter().map(|v| v["kind"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["table", "family", "engine", "family", "engine"]);
    assert_eq!(stats[0]["routes"], 4);
    assert_eq!(stats[1]["family"], "IPv4");
    assert_eq!(stats[1]["prefixes"], 2);
    assert_eq!(stats[1]["prefixes_per_length"]["16"], 1);
    assert_eq!(stats[2]["engine"], "radix");
    assert!(stats[2]["memory_bytes"].as_u64().unwrap() > 0);
    let verify = json_lines(&[
        "verify", table, "--json", "--engine", "lctrie", "--random", "500",
    ]);
    let checks: Vec<_> = verify.iter().filter(|v| v["kind"] == "check").collect();
    assert_eq!(checks.len(), 2, "{verify:?}");
    for check in &checks {
        assert_eq!(check["failed"], 0, "{check}");
        assert!(check["checked"].as_u64().unwrap() >= 500, "{check}");
    }
    let total = verify.last().unwrap();
    assert_eq!(total["kind"], "total");
    assert_eq!(total["failed"], 0);
    assert_eq!(
        total["passed"].as_u64(),
        Some(checks.iter().map(|c| c["passed"].as_u64().unwrap()).sum())
    );
    std::fs::remove_dir_all(path.parent().unwrap()).unwrap();
}

#[test]
fn lookup_answers_each_line_before_the_input_ends() {
    use std::io::{BufRead, BufReader};
    let path = dual_stack_table("stream");
    let mut child = Command::new(env!("CARGO_BIN_EXE_fibkit"))
        .args(["lookup", path.to_str().unwrap()])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("running fibkit");
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    // The pipe stays open: each answer must come back while fibkit still
    // waits for more input.
    for (query, expected) in [
        ("10.1.2.3\n", "10.1.2.3 10.1.0.0/16 2\n"),
        ("2001:db8::7\n", "2001:db8::7 2001:db8::/32 3\n"),
    ] {
        stdin.write_all(query.as_bytes()).unwrap();
        stdin.flush().unwrap();
        let mut answer = String::new();
        stdout.read_line(&mut answer).unwrap();
        assert_eq!(answer, expected);
    }
    drop(stdin);
    let status = child.wait().unwrap();
    assert!(status.success());
    std::fs::remove_dir_all(path.parent().unwrap()).unwrap();
}

#[test]
fn table_from_standard_input() {
    let out = fibkit_stdin(
        &[
            "lookup",
            "-",
            "10.1.2.3",
            "2001:db8:1::1",
            "--engine",
            "radix",
        ],
        "10.0.0.0/8 1\n10.1.0.0/16 2\n2001:db8:1::/48 4\n",
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(
        text(&out.stdout),
        "10.1.2.3 10.1.0.0/16 2\n2001:db8:1::1 2001:db8:1::/48 4\n"
    );
    // Standard input cannot hold both the table and the addresses.
    let out = fibkit_stdin(&["lookup", "-"], "10.0.0.0/8 1\n");
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("give the addresses as arguments"));
    let out = fibkit_stdin(&["stats", "-"], "10.0.0.0/8 1\n");
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("IPv4: 1 prefixes"));
}

#[test]
fn completions_and_man_page_are_generated() {
    for shell in ["bash", "zsh", "fish", "elvish", "powershell"] {
        let out = fibkit(&["completions", shell]);
        assert!(out.status.success(), "{shell}: {}", text(&out.stderr));
        let script = text(&out.stdout);
        // Every subcommand and a flag of one are completed.
        for word in ["lookup", "verify", "completions", "--engine"] {
            assert!(script.contains(word), "{shell} lacks {word}");
        }
    }
    let out = fibkit(&["completions", "tcsh"]);
    assert_eq!(out.status.code(), Some(2));
    let out = fibkit(&["man"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let page = text(&out.stdout);
    assert!(page.contains(".TH fibkit"), "{page}");
    assert!(page.contains("forwarding tables"), "{page}");
    let subcommands = page.split(".SH SUBCOMMANDS").nth(1).unwrap_or("");
    for name in ["lookup", "verify", "bench"] {
        assert!(subcommands.contains(name), "man page lacks {name}: {page}");
    }
}

#[test]
fn stats_counts_lookup_work_over_a_trace() {
    let trace = scratch("stats-trace").join("v6.trace");
    let table = data("dfz-v6-nh.txt.gz");
    let out = fibkit(&[
        "trace",
        "gen",
        &table,
        "--kind",
        "zipf:1.0",
        "--count",
        "20000",
        "-o",
        trace.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let args = [
        "stats",
        &table,
        "--engine",
        "bloom",
        "--engine",
        "lctrie",
        "--engine",
        "dxr6",
        "--trace",
        trace.to_str().unwrap(),
    ];
    let out = fibkit(&args);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}{}", text(&out.stderr));
    // Every counting engine counted every address; the guided search's
    // counters are the paper's; dxr6 has no counting path and says so.
    assert_eq!(
        stdout.matches("lookups counted      20000").count(),
        2,
        "{stdout}"
    );
    for needle in [
        "bit lookups",
        "hash computations",
        "exact-table lookups",
        "fallbacks (default)",
        "key vectors",
        "work per lookup      not counted by this engine",
    ] {
        assert!(stdout.contains(needle), "missing {needle}: {stdout}");
    }
    // JSON lines carry the same rows; an empty trace is an error.
    let mut json_args = args.to_vec();
    json_args.push("--json");
    let out = fibkit(&json_args);
    let stdout = text(&out.stdout);
    assert!(
        out.status.success() && stdout.contains("\"lookup_work\":{"),
        "{stdout}"
    );
    let empty = trace.with_file_name("empty.trace");
    std::fs::write(&empty, "").unwrap();
    let out = fibkit(&["stats", &table, "--trace", empty.to_str().unwrap()]);
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("no addresses in the trace"),
        "{}",
        text(&out.stderr)
    );
    std::fs::remove_dir_all(trace.parent().unwrap()).unwrap();
}

#[test]
fn model_calibrate_measures_levels_and_predict_reads_them() {
    let dir = scratch("model");
    let table = dir.join("table.txt");
    std::fs::write(
        &table,
        "10.0.0.0/8 1\n10.1.0.0/16 2\n10.1.2.0/24 3\n192.168.0.0/16 4\n",
    )
    .unwrap();
    let trace = dir.join("trace.txt");
    let addrs: String = (0..2000)
        .map(|i| format!("10.1.{}.{}\n", i % 7, i % 251))
        .collect();
    std::fs::write(&trace, addrs).unwrap();
    let machine = dir.join("machine.json");
    let (table, trace, machine) = (
        table.to_str().unwrap(),
        trace.to_str().unwrap(),
        machine.to_str().unwrap(),
    );
    let out = fibkit(&[
        "model",
        "calibrate",
        table,
        "--trace",
        trace,
        "--out",
        machine,
        "--millis",
        "8",
    ]);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}{}", text(&out.stderr));
    assert!(
        stdout.contains("latency curve") && stdout.contains("levels measured"),
        "{stdout}"
    );
    // The file keeps the curve, the measured levels (one latency more:
    // memory) and the OS's caches it is checked against.
    let file: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(machine).unwrap()).unwrap();
    let curve = file["curve"].as_array().unwrap();
    assert!(curve.len() >= 10, "{file}");
    let levels = file["caches"].as_array().unwrap().len();
    assert_eq!(
        file["latency_ns"].as_array().unwrap().len(),
        levels + 1,
        "{file}"
    );
    assert!(!file["os_caches"].as_array().unwrap().is_empty(), "{file}");
    // The costs are those of IPv4 lookups, and the file says so.
    assert_eq!(file["family"], "IPv4", "{file}");
    assert!(stdout.contains("fitted on IPv4 lookups"), "{stdout}");
    // `dxr` and `cpe` get costs of their own, fitted on their layouts.
    for engine in ["dxr", "cpe"] {
        let costs = &file["engine_costs"][engine];
        assert!(
            costs["trie_ns"].as_f64().unwrap() >= 0.0 && costs["const_ns"].as_f64().unwrap() >= 0.0,
            "{file}"
        );
        assert!(stdout.contains(&format!("{engine}: t_trie")), "{stdout}");
    }

    // `model predict` with the machine file, measuring briefly.
    let predict = |extra: &[&str]| {
        let mut args = vec!["model", "predict", table, "--machine", machine];
        args.extend_from_slice(extra);
        args.extend_from_slice(&["--measure", "--rounds", "1", "--millis", "5", "--top", "1"]);
        fibkit(&args)
    };
    // A run that must succeed: its standard output.
    let predicted = |extra: &[&str]| {
        let out = predict(extra);
        let stdout = text(&out.stdout);
        assert!(out.status.success(), "{stdout}{}", text(&out.stderr));
        stdout
    };
    let stdout = predicted(&["--trace", trace]);
    assert!(
        stdout.contains("Table 3") && stdout.contains("Table 4"),
        "{stdout}"
    );
    // --track: the round's levels from a new chase of the curve, printed.
    let stdout = predicted(&["--trace", trace, "--track"]);
    assert!(
        stdout.contains("  round 1: L1 ")
            && stdout.contains("memory")
            && stdout.contains("Table 3"),
        "{stdout}"
    );
    // What-if sizes are replaced by the rounds' levels: refused.
    let out = predict(&["--trace", trace, "--track", "--l2", "1MiB"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stdout));
    assert!(
        text(&out.stderr).contains("--track"),
        "{}",
        text(&out.stderr)
    );
    // The other engines' layouts, tracked: each round's levels printed,
    // every layout predicted and measured, and the pick.
    let stdout = predicted(&["--trace", trace, "--track", "--engines", "dxr"]);
    assert!(
        stdout.contains("  round 1: L1 ")
            && stdout.contains("dxr:k=16")
            && stdout.contains("model's pick"),
        "{stdout}"
    );
    // Tracked rows carry their error: the median of the rounds' paired
    // ratios, which with one round is the error of the row's own columns.
    let stdout = predicted(&["--trace", trace, "--track", "--engines", "dxr", "--json"]);
    let json: serde_json::Value = serde_json::from_str(stdout.trim()).unwrap();
    let rows = json["rows"].as_array().unwrap();
    assert!(!rows.is_empty(), "{json}");
    for row in rows {
        let predicted = row["predicted_ns"].as_f64().unwrap();
        let measured = row["measured_ns"].as_f64().unwrap();
        let error = row["error_percent"].as_f64().unwrap();
        let expected = (predicted - measured).abs() / measured * 100.0;
        assert!((error - expected).abs() < 1e-6 * expected.max(1.0), "{row}");
    }
    // The paper's machine has no curve to chase again.
    let out = predict(&["--trace", trace, "--track", "--paper"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stdout));
    assert!(
        text(&out.stderr).contains("--track chases"),
        "{}",
        text(&out.stderr)
    );
    // Two traces: Table 5 predicted and measured, and the plot of both.
    let svg = dir.join("plot.svg");
    let svg = svg.to_str().unwrap();
    let stdout = predicted(&["--trace", trace, "--trace", trace, "--svg", svg]);
    assert!(stdout.contains("Table 5, measured"), "{stdout}");
    let plot = std::fs::read_to_string(svg).unwrap();
    assert!(
        plot.starts_with("<svg") && plot.trim_end().ends_with("</svg>"),
        "{plot}"
    );
    // A point per measured structure and trace, and a legend entry each.
    let measured = stdout
        .lines()
        .map(str::trim_start)
        .filter(|l| l.starts_with('T') && !l.starts_with("Table") && !l.contains(" - "))
        .count();
    assert!(measured > 0, "{stdout}");
    assert_eq!(plot.matches("<circle").count(), measured + 2, "{plot}");
    assert!(plot.contains("trace.txt"), "{plot}");
    let out = fibkit(&[
        "model",
        "predict",
        table,
        "--machine",
        machine,
        "--trace",
        trace,
        "--svg",
        svg,
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("add --measure"),
        "{}",
        text(&out.stderr)
    );
    let spec = format!("auto:machine={machine},trace={trace}");
    let out = fibkit(&["stats", table, "--engine", &spec]);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}{}", text(&out.stderr));
    assert!(
        stdout.contains("(calibrated)") && stdout.contains("2000 addresses"),
        "{stdout}"
    );

    // IPv6 lookups with costs fitted on IPv4 ones: refused, naming the
    // calibration that makes a file for IPv6, in `model predict` and `auto`.
    let table6 = dir.join("table6.txt");
    std::fs::write(&table6, "2001:db8::/32 1\n2001:db8:1::/48 2\n").unwrap();
    let trace6 = dir.join("trace6.txt");
    std::fs::write(&trace6, "2001:db8:1::1\n2001:db8:2::1\n").unwrap();
    let (table6, trace6) = (table6.to_str().unwrap(), trace6.to_str().unwrap());
    let out = fibkit(&[
        "model",
        "predict",
        table6,
        "--machine",
        machine,
        "--trace",
        trace6,
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stdout));
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("fitted on IPv4 lookups")
            && stderr.contains("these are IPv6")
            && stderr.contains("fibkit model calibrate")
            && stderr.contains("trace6.txt"),
        "{stderr}"
    );
    let spec = format!("auto:machine={machine}");
    let out = fibkit(&["stats", table6, "--engine", &spec]);
    assert!(!out.status.success(), "{}", text(&out.stdout));
    assert!(
        text(&out.stderr).contains("fitted on IPv4 lookups"),
        "{}",
        text(&out.stderr)
    );

    // A machine file of an older version is refused with the fix.
    let old = std::fs::read_to_string(machine).unwrap().replace(
        &format!("\"version\": {}", fibkit::model::machine::MACHINE_VERSION),
        "\"version\": 1",
    );
    std::fs::write(machine, old).unwrap();
    let out = fibkit(&[
        "model",
        "predict",
        table,
        "--machine",
        machine,
        "--trace",
        trace,
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stdout));
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("version 1") && stderr.contains("calibrate"),
        "{stderr}"
    );
    let _ = std::fs::remove_dir_all(dir);
}

/// `FIBKIT_MAX_SIMD` caps the vector walks of `dxr6`, `poptrie` and
/// `btree`: each narrower path verifies on the full real tables (every
/// range boundary, both neighbours, random addresses), the engines'
/// statistics name the path taken, and a bad value is refused.
#[test]
fn narrower_vector_paths_verify_on_the_full_tables() {
    let run = |cap: &str, args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_fibkit"))
            .env("FIBKIT_MAX_SIMD", cap)
            .args(args)
            .output()
            .expect("running fibkit")
    };
    #[cfg(target_arch = "x86_64")]
    let has_avx2 = std::arch::is_x86_feature_detected!("avx2")
        && std::arch::is_x86_feature_detected!("popcnt");
    #[cfg(not(target_arch = "x86_64"))]
    let has_avx2 = false;
    // The engines whose lookups `FIBKIT_MAX_SIMD` caps, per family.
    let vector = |family: fibkit::Family| -> Vec<&'static str> {
        fibkit::registry::ENGINES
            .iter()
            .filter(|info| info.vector_paths && info.supports(family))
            .map(|info| info.name)
            .collect()
    };
    let (v4, v6) = (vector(fibkit::Family::V4), vector(fibkit::Family::V6));
    assert!(!v6.is_empty(), "no engine has vector paths");
    for cap in ["avx2", "portable"] {
        let tables = [
            ("dfz-v6-nh.txt.gz", &v6),
            ("dfz-v6-asn.txt.gz", &v6),
            ("linx-rib-ipv6.20141225.txt.gz", &v6),
            ("dfz-v4-nh.txt.gz", &v4),
        ];
        for (name, engines) in tables {
            let table = data(name);
            let mut args = vec!["verify", &table, "--random", "100000"];
            for engine in engines {
                args.extend(["--engine", engine]);
            }
            let out = run(cap, &args);
            let stdout = text(&out.stdout);
            assert!(
                out.status.success(),
                "{cap} {name}: {stdout}{}",
                text(&out.stderr)
            );
            assert!(
                stdout.ends_with(" passed, 0 failed\n"),
                "{cap} {name}: {stdout}"
            );
            assert_eq!(
                stdout.matches(" 0 failed").count(),
                engines.len() + 1,
                "{stdout}"
            );
        }
        let table = data("dfz-v6-nh.txt.gz");
        let mut args = vec!["stats", &table];
        for engine in &v6 {
            args.extend(["--engine", engine]);
        }
        let out = run(cap, &args);
        let stdout = text(&out.stdout);
        assert!(out.status.success(), "{cap}: {stdout}{}", text(&out.stderr));
        let row = |name: &str| {
            let line = stdout
                .lines()
                .find(|line| line.trim_start().starts_with(name))
                .unwrap_or_else(|| panic!("{cap}: no row {name}: {stdout}"));
            line.trim_start()[name.len()..].trim().to_string()
        };
        let avx2 = cap == "avx2" && has_avx2;
        assert_eq!(
            row("batch walk"),
            if avx2 { "AVX2" } else { "portable" },
            "{cap}"
        );
        assert_eq!(
            row("node count"),
            if avx2 { "AVX2" } else { "plain" },
            "{cap}"
        );
        assert_eq!(row("AVX-512 batch"), "false", "{cap}");
        if cap == "portable" {
            assert_eq!(row("POPCNT"), "false");
        }
        // Without the AVX-512 walk the IPv6 default is `dxr6`.
        let dual = dual_stack_table(&format!("simd-{cap}"));
        let out = run(
            cap,
            &[
                "verify",
                dual.to_str().unwrap(),
                "--engine",
                "dxr",
                "--random",
                "1000",
            ],
        );
        let stdout = text(&out.stdout);
        assert!(out.status.success(), "{cap}: {stdout}{}", text(&out.stderr));
        assert!(
            stdout.contains("\ndxr6:") && stdout.ends_with(" 0 failed\n"),
            "{cap}: {stdout}"
        );
    }
    let out = run("sse4", &["stats", &data("dfz-v6-nh.txt.gz")]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        text(&out.stderr),
        "fibkit: error: FIBKIT_MAX_SIMD=\"sse4\" names no level; give `avx512` (or `auto`), `avx2` or `portable`\n"
    );
}
