//! bgpdump's one-line text (`bgpdump -m`): tables and update streams read
//! as the MRT loader reads the files bgpdump printed them from, and every
//! bad line an error naming the file and line. Files are written under the
//! system temp dir, never into the repo.

mod common;

use std::io::Write;
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::process::Command;

use common::data_path;
use fibkit::load::{
    load_table, load_updates, AnyChange, Format, LabelSource, LoadOptions, LoadedUpdates,
    NextHopTable, PeerSelector,
};
use fibkit::{Change, Prefix};

/// A scratch directory for one test (tests run in parallel).
fn scratch(test: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("fibkit-bgpdump-{}-{test}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

/// `file:line: ...` with the expected line and text.
fn assert_bad(error: &str, file: &str, line: u64, says: &str) {
    assert!(
        error.contains(&format!("{file}:{line}: ")) && error.contains(says),
        "expected `{file}:{line}: ...{says}...`, got `{error}`"
    );
}

fn v4(text: &str) -> Prefix<u32> {
    text.parse().unwrap()
}

fn v6(text: &str) -> Prefix<u128> {
    text.parse().unwrap()
}

/// A RIB dump of two peers and both families: peer 192.0.2.1 (AS64500)
/// has three routes, 2001:db8::1 (AS64501) two, one with an ADD-PATH
/// second path.
const RIB: &str = "\
TABLE_DUMP2|1700000000|B|192.0.2.1|64500|10.0.0.0/8|64500 64510|IGP|192.0.2.1|100|0||NAG||
TABLE_DUMP2|1700000000|B|2001:db8::1|64501|10.0.0.0/8|64501 {64520,64521}|IGP|192.0.2.9|100|0||NAG||
TABLE_DUMP2|1700000000|B|192.0.2.1|64500|10.1.0.0/16|64500 64086.59904|IGP|192.0.2.2|100|0||NAG||
TABLE_DUMP2|1700000000|B|192.0.2.1|64500|2001:db8:1::/48|64500 (65001 65002)|INCOMPLETE|2001:db8::2|100|0||NAG||
TABLE_DUMP2_AP|1700000000|B|2001:db8::1|64501|2001:db8:2::/48|1|64501 64530|IGP|2001:db8::9|100|0||NAG||
TABLE_DUMP2_AP|1700000000|B|2001:db8::1|64501|2001:db8:2::/48|2|64501 64531|IGP|2001:db8::8|100|0||NAG||
";

#[test]
fn a_rib_dump_keeps_one_peer_with_its_labels() {
    let dir = scratch("rib");
    let path = write(&dir, "rib.txt", RIB);
    // Detected; the peer with most routes, by next hop.
    let table = load_table(&path, &LoadOptions::default()).unwrap();
    assert_eq!(table.format, Some(Format::Bgpdump));
    let hop = |label: u32| table.nexthops.addr(label).unwrap().to_string();
    assert_eq!(table.v4.len() + table.v6.len(), 3);
    assert_eq!(hop(table.v4.get(v4("10.0.0.0/8")).unwrap()), "192.0.2.1");
    assert_eq!(hop(table.v4.get(v4("10.1.0.0/16")).unwrap()), "192.0.2.2");
    assert_eq!(
        hop(table.v6.get(v6("2001:db8:1::/48")).unwrap()),
        "2001:db8::2"
    );
    // Only the kept peer's next hops are in the table's next hops.
    assert_eq!(table.nexthops.len(), 3);
    assert!(
        table.notes[0].contains("peer 192.0.2.1 (AS64500)") && table.notes[0].contains("2 peers"),
        "{:?}",
        table.notes
    );
    // By origin AS: asdot, a set and a confederation segment at the end.
    let by_origin = LoadOptions {
        label: LabelSource::OriginAs,
        ..LoadOptions::default()
    };
    let table = load_table(&path, &by_origin).unwrap();
    assert_eq!(table.v4.get(v4("10.0.0.0/8")), Some(64510));
    assert_eq!(table.v4.get(v4("10.1.0.0/16")), Some((64086 << 16) | 59904));
    assert_eq!(table.v6.get(v6("2001:db8:1::/48")), Some(0));
    // The other peer, by address and by AS: its AS set origin is 0 and of
    // its two ADD-PATH paths the first is kept (noted).
    for peer in ["2001:db8::1", "AS64501", "64501"] {
        let options = LoadOptions {
            peer: Some(peer.parse::<PeerSelector>().unwrap()),
            label: LabelSource::OriginAs,
            ..LoadOptions::default()
        };
        let table = load_table(&path, &options).unwrap();
        assert_eq!(table.v4.get(v4("10.0.0.0/8")), Some(0), "{peer}");
        assert_eq!(table.v6.get(v6("2001:db8:2::/48")), Some(64530), "{peer}");
        assert_eq!(table.v4.len() + table.v6.len(), 2, "{peer}");
        assert!(
            table.notes.iter().any(|n| n.contains("1 extra ADD-PATH")),
            "{:?}",
            table.notes
        );
    }
    // A peer the dump does not have: the error lists those it has.
    let options = LoadOptions {
        peer: Some(PeerSelector::Asn(65999)),
        ..LoadOptions::default()
    };
    let error = load_table(&path, &options).unwrap_err().to_string();
    assert!(
        error.contains("no peer of AS65999 in this bgpdump RIB dump")
            && error.contains("192.0.2.1 (AS64500, 3 routes)")
            && error.contains("2001:db8::1 (AS64501, 2 routes)"),
        "{error}"
    );
}

#[test]
fn an_update_stream_becomes_timed_changes() {
    let dir = scratch("updates");
    let text = "\
BGP4MP|1700000000|STATE|192.0.2.1|64500|1|2
BGP4MP|1700000001|A|192.0.2.1|64500|10.0.0.0/8|64500 64510|IGP|192.0.2.1|100|0||NAG||
BGP4MP_ET|1700000002|A|192.0.2.7|64507|2001:db8::/32|64507|IGP|2001:db8::7|100|0||NAG||
BGP4MP|1700000003|W|192.0.2.1|64500|10.0.0.0/8
BGP4MP_AP|1700000004|W|192.0.2.7|64507|2001:db8::/32|3
BGP4MP_AP|1700000005|A|192.0.2.7|64507|10.2.0.0/16|3|64507 64599|IGP|192.0.2.8|100|0||NAG||
";
    let path = write(&dir, "updates.txt", text);
    // Next hops are interned after the table's.
    let mut table_hops = NextHopTable::default();
    table_hops.intern("198.51.100.1".parse().unwrap());
    let loaded = load_updates(&path, &LoadOptions::default(), table_hops.clone()).unwrap();
    let hop = |label: u32| loaded.nexthops.addr(label).unwrap();
    let got: Vec<(u64, AnyChange)> = loaded.updates.iter().map(|u| (u.time, u.change)).collect();
    assert_eq!(
        got,
        vec![
            (
                1700000001,
                AnyChange::V4(Change::Announce(v4("10.0.0.0/8"), 1))
            ),
            (
                1700000002,
                AnyChange::V6(Change::Announce(v6("2001:db8::/32"), 2))
            ),
            (
                1700000003,
                AnyChange::V4(Change::Withdraw(v4("10.0.0.0/8")))
            ),
            (
                1700000004,
                AnyChange::V6(Change::Withdraw(v6("2001:db8::/32")))
            ),
            (
                1700000005,
                AnyChange::V4(Change::Announce(v4("10.2.0.0/16"), 3))
            ),
        ]
    );
    assert_eq!(hop(2), "2001:db8::7".parse::<IpAddr>().unwrap());
    assert!(
        loaded.notes[0].contains("5 changes from 2 of 2 peers")
            && loaded.notes.iter().any(|n| n.contains("1 STATE lines")),
        "{:?}",
        loaded.notes
    );
    // One peer's changes, labelled by origin AS.
    let options = LoadOptions {
        peer: Some(PeerSelector::Asn(64507)),
        label: LabelSource::OriginAs,
        ..LoadOptions::default()
    };
    let loaded = load_updates(&path, &options, NextHopTable::default()).unwrap();
    let changes: Vec<AnyChange> = loaded.updates.iter().map(|u| u.change).collect();
    assert_eq!(
        changes,
        vec![
            AnyChange::V6(Change::Announce(v6("2001:db8::/32"), 64507)),
            AnyChange::V6(Change::Withdraw(v6("2001:db8::/32"))),
            AnyChange::V4(Change::Announce(v4("10.2.0.0/16"), 64599)),
        ]
    );
    // Another peer's next hops are not interned.
    assert!(loaded.nexthops.is_empty());
    let options = LoadOptions {
        peer: Some(PeerSelector::Addr("192.0.2.99".parse().unwrap())),
        ..LoadOptions::default()
    };
    let error = load_updates(&path, &options, NextHopTable::default())
        .unwrap_err()
        .to_string();
    assert!(
        error.contains("no updates from peer 192.0.2.99 in this bgpdump update stream")
            && error.contains("192.0.2.7 (AS64507)"),
        "{error}"
    );
}

#[test]
fn tables_and_streams_are_not_mistaken_for_each_other() {
    let dir = scratch("kinds");
    let rib = write(&dir, "rib.txt", RIB);
    let error = load_updates(&rib, &LoadOptions::default(), NextHopTable::default())
        .unwrap_err()
        .to_string();
    assert_bad(
        &error,
        "rib.txt",
        1,
        "a RIB entry (`B`) in an update stream",
    );
    let stream = write(
        &dir,
        "stream.txt",
        "BGP4MP|1700000000|STATE|192.0.2.1|64500|1|2\n",
    );
    let error = load_table(&stream, &LoadOptions::default())
        .unwrap_err()
        .to_string();
    assert_bad(
        &error,
        "stream.txt",
        1,
        "load it where updates are expected",
    );
    let announce = write(
        &dir,
        "announce.txt",
        "BGP4MP|1|A|192.0.2.1|64500|10.0.0.0/8|64500|IGP|192.0.2.1|100|0||NAG||\n",
    );
    let error = load_table(&announce, &LoadOptions::default())
        .unwrap_err()
        .to_string();
    assert_bad(
        &error,
        "announce.txt",
        1,
        "an announcement (`A`) in a RIB dump",
    );
    // bgpdump -M dates: read in a table (the time is not used), refused in
    // a stream, which needs Unix times.
    let dated = RIB.replace("|1700000000|", "|11/14/23 22:13:20|");
    let dated = write(&dir, "dated.txt", &dated);
    assert_eq!(
        load_table(&dated, &LoadOptions::default())
            .unwrap()
            .v4
            .len(),
        2
    );
    let dated_stream = write(
        &dir,
        "dated-stream.txt",
        "BGP4MP|11/14/23 22:13:20|W|192.0.2.1|64500|10.0.0.0/8\n",
    );
    let error = load_updates(
        &dated_stream,
        &LoadOptions::default(),
        NextHopTable::default(),
    )
    .unwrap_err()
    .to_string();
    assert_bad(&error, "dated-stream.txt", 1, "not a Unix time");
}

#[test]
fn bad_lines_name_file_line_and_problem() {
    let dir = scratch("bad");
    let good = "TABLE_DUMP2|1|B|192.0.2.1|64500|10.0.0.0/8|64500|IGP|192.0.2.1|100|0||NAG||";
    for (line, says) in [
        ("TABLE_DUMP2|1|B|192.0.2.1", "too few `|` fields"),
        (
            "TABLE_DUMP2|1|B|192.0.2.1|64500|10.1.0.0/16|64500|IGP",
            "too few `|` fields",
        ),
        (
            "TABLE_DUMP2|1|X|192.0.2.1|64500|10.1.0.0/16|64500|IGP|192.0.2.1||",
            "`X` is not a bgpdump entry",
        ),
        (
            "TABLE_DUMP2|1|B|192.0.2.300|64500|10.1.0.0/16|64500|IGP|192.0.2.1||",
            "not a peer address",
        ),
        (
            "TABLE_DUMP2|1|B|192.0.2.1|AS64500|10.1.0.0/16|64500|IGP|192.0.2.1||",
            "not a peer AS",
        ),
        (
            "TABLE_DUMP2|1|B|192.0.2.1|64500|10.1.0.0/33|64500|IGP|192.0.2.1||",
            "`33`",
        ),
        (
            "TABLE_DUMP2|1|B|192.0.2.1|64500|10.1.0.1/16|64500|IGP|192.0.2.1||",
            "host bits",
        ),
        (
            "TABLE_DUMP2|1|B|192.0.2.1|64500|10.1.0.0/16|64500 x|IGP|192.0.2.1||",
            "`x` in the AS path",
        ),
        (
            "TABLE_DUMP2|1|B|192.0.2.1|64500|10.1.0.0/16|64500 {1,}|IGP|192.0.2.1||",
            "in the AS path",
        ),
        (
            "TABLE_DUMP2|1|B|192.0.2.1|64500|10.1.0.0/16|64500|IGP|nexthop||",
            "`nexthop` is not a next-hop address",
        ),
        (
            "TABLE_DUMP9|1|B|192.0.2.1|64500|10.1.0.0/16|64500|IGP|192.0.2.1||",
            "TABLE_DUMP9",
        ),
    ] {
        let path = write(&dir, "bad.txt", &format!("{good}\n{line}\n"));
        let options = LoadOptions {
            format: Some(Format::Bgpdump),
            ..LoadOptions::default()
        };
        let error = load_table(&path, &options).unwrap_err().to_string();
        assert_bad(&error, "bad.txt", 2, says);
        // Skipped and counted instead.
        let skipping = LoadOptions {
            skip_bad: true,
            ..options
        };
        let table = load_table(&path, &skipping).unwrap();
        assert_eq!((table.v4.len(), table.stats.skipped), (1, 1), "{line}");
    }
    // Host bits cleared under lenient, and counted.
    let path = write(
        &dir,
        "host-bits.txt",
        &format!("{good}\nTABLE_DUMP2|1|B|192.0.2.1|64500|10.1.0.1/16|64500|IGP|192.0.2.1||\n"),
    );
    let lenient = LoadOptions {
        lenient: true,
        ..LoadOptions::default()
    };
    let table = load_table(&path, &lenient).unwrap();
    assert_eq!(
        (table.v4.get(v4("10.1.0.0/16")), table.stats.masked),
        (Some(0), 1)
    );
    // Of ADD-PATH paths the first good one is kept: a bad first path
    // skipped under skip_bad does not hide the second.
    let path = write(
        &dir,
        "add-path.txt",
        "TABLE_DUMP2_AP|1|B|192.0.2.1|64500|10.1.0.0/16|1|64500 x|IGP|192.0.2.1||\n\
         TABLE_DUMP2_AP|1|B|192.0.2.1|64500|10.1.0.0/16|2|64500 64502|IGP|192.0.2.2||\n\
         TABLE_DUMP2_AP|1|B|192.0.2.1|64500|10.1.0.0/16|3|64500 64503|IGP|192.0.2.3||\n",
    );
    let skipping = LoadOptions {
        skip_bad: true,
        label: LabelSource::OriginAs,
        ..LoadOptions::default()
    };
    let table = load_table(&path, &skipping).unwrap();
    assert_eq!(table.v4.get(v4("10.1.0.0/16")), Some(64502));
    assert_eq!(table.stats.skipped, 1);
    assert!(
        table.notes.iter().any(|n| n.contains("1 extra ADD-PATH")),
        "{:?}",
        table.notes
    );
    // A route without a next hop is labelled with the unspecified address.
    let path = write(
        &dir,
        "no-hop.txt",
        "TABLE_DUMP2|1|B|192.0.2.1|64500|10.1.0.0/16|64500|IGP|||\n",
    );
    let table = load_table(&path, &LoadOptions::default()).unwrap();
    let label = table.v4.get(v4("10.1.0.0/16")).unwrap();
    assert_eq!(table.nexthops.addr(label), Some("0.0.0.0".parse().unwrap()));
    assert!(table
        .notes
        .iter()
        .any(|n| n.contains("1 routes had no next hop")));
}

/// bgpdump's own text of a shared MRT file, or `None` where bgpdump is not
/// installed (CI installs it: `.ci/run`).
fn bgpdump_text(dir: &Path, name: &str) -> Option<PathBuf> {
    let output = match Command::new("bgpdump")
        .arg("-m")
        .arg(data_path(&format!("mrt/{name}")))
        .output()
    {
        Ok(output) => output,
        Err(_) if std::env::var_os("CI").is_none() => return None,
        Err(e) => panic!("bgpdump is not installed ({e}); .ci/run installs it"),
    };
    assert!(output.status.success(), "bgpdump -m {name}: {output:?}");
    let path = dir.join(format!("{name}.txt"));
    std::fs::File::create(&path)
        .unwrap()
        .write_all(&output.stdout)
        .unwrap();
    Some(path)
}

/// The changes, with next hops as addresses (the two loads may intern in
/// another order only if they disagree).
fn changes_of(loaded: &LoadedUpdates) -> Vec<(u64, AnyChange)> {
    loaded.updates.iter().map(|u| (u.time, u.change)).collect()
}

#[test]
fn bgpdump_text_loads_as_the_mrt_it_was_printed_from() {
    let dir = scratch("mrt");
    let ribs = [
        "openbgpd_rib_table",
        "openbgpd_rib_table-v2",
        "quagga_rib",
        "bird-mrtdump_rib",
        "bird6-mrtdump_rib",
    ];
    // Not bird_bgp and bird6_bgp: their UPDATEs carry ADD-PATH path
    // identifiers under the plain BGP4MP subtypes, which bgpdump 1.6
    // misreads as prefixes (it prints `0.0.0.0/0` and `24.0.0.0/2` where
    // the MRT loader reads 172.16.0.0/24).
    let streams = [
        "bird-mrtdump_bgp",
        "bird6-mrtdump_bgp",
        "openbgpd_bgp",
        "quagga_bgp",
    ];
    for name in ribs {
        let Some(text) = bgpdump_text(&dir, name) else {
            eprintln!("skipped: bgpdump is not installed");
            return;
        };
        for label in [LabelSource::NextHop, LabelSource::OriginAs] {
            let options = LoadOptions {
                label,
                ..LoadOptions::default()
            };
            let mrt = load_table(&data_path(&format!("mrt/{name}")), &options).unwrap();
            let bgpdump = load_table(&text, &options).unwrap();
            assert_eq!(bgpdump.format, Some(Format::Bgpdump));
            let routes_v4 = |t: &fibkit::load::LoadedTable| t.v4.iter().collect::<Vec<_>>();
            let routes_v6 = |t: &fibkit::load::LoadedTable| t.v6.iter().collect::<Vec<_>>();
            assert_eq!(routes_v4(&bgpdump), routes_v4(&mrt), "{name} {label:?}");
            assert_eq!(routes_v6(&bgpdump), routes_v6(&mrt), "{name} {label:?}");
            assert!(!mrt.v4.is_empty() || !mrt.v6.is_empty(), "{name}");
            // bgpdump prints the next hops of BIRD's dumps (IPv6 ones, and
            // its own routes, which have none) as 255.255.255.255.
            if label == LabelSource::NextHop && !name.starts_with("bird") {
                let hops = |t: &fibkit::load::LoadedTable| t.nexthops.iter().collect::<Vec<_>>();
                assert_eq!(hops(&bgpdump), hops(&mrt), "{name}");
            }
        }
    }
    for name in streams {
        let text = bgpdump_text(&dir, name).unwrap();
        for label in [LabelSource::NextHop, LabelSource::OriginAs] {
            let options = LoadOptions {
                label,
                ..LoadOptions::default()
            };
            let mrt = load_updates(
                &data_path(&format!("mrt/{name}")),
                &options,
                NextHopTable::default(),
            )
            .unwrap();
            let bgpdump = load_updates(&text, &options, NextHopTable::default()).unwrap();
            assert!(!mrt.updates.is_empty(), "{name}");
            if label == LabelSource::OriginAs || !name.starts_with("bird6") {
                assert_eq!(changes_of(&bgpdump), changes_of(&mrt), "{name} {label:?}");
            }
            if label == LabelSource::NextHop && !name.starts_with("bird") {
                let hops = |u: &LoadedUpdates| u.nexthops.iter().collect::<Vec<_>>();
                assert_eq!(hops(&bgpdump), hops(&mrt), "{name}");
            }
        }
    }
}
