//! The MRT loader on the real samples in `../shared/data/mrt` (see its
//! SAMPLES.rst), and on broken input: truncated, corrupted and random bytes
//! give errors naming the file and record, never panics.

use std::io::{Cursor, Write};
use std::net::IpAddr;
use std::path::PathBuf;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;

use fibkit::load::{
    load_table, load_updates, mrt, AnyChange, Format, Input, LabelSource, LoadOptions, LoadedTable,
    NextHopTable, PeerSelector,
};
use fibkit::{Change, Prefix};
use proptest::prelude::*;

fn mrt_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data/mrt")
}

fn sample(name: &str) -> PathBuf {
    mrt_dir().join(name)
}

/// Every sample file (all but SAMPLES.rst), sorted, with its bytes.
fn samples() -> Vec<(String, Vec<u8>)> {
    let mut files: Vec<(String, Vec<u8>)> = std::fs::read_dir(mrt_dir())
        .expect("../shared/data/mrt")
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_none())
        .map(|path| {
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            (name, std::fs::read(&path).unwrap())
        })
        .collect();
    files.sort();
    files
}

/// What a sample holds.
enum Kind {
    /// A RIB dump: prefixes of the default peer per family, peers in the dump.
    Rib { v4: usize, v6: usize, peers: usize },
    /// An update stream: changes (all peers), peers.
    Updates { changes: usize, peers: usize },
}

/// Measured once from the files and checked by hand against their records.
const EXPECTED: &[(&str, Kind)] = &[
    (
        "bird-mrtdump_bgp",
        Kind::Updates {
            changes: 12,
            peers: 1,
        },
    ),
    (
        "bird-mrtdump_rib",
        Kind::Rib {
            v4: 3,
            v6: 0,
            peers: 2,
        },
    ),
    (
        "bird6-mrtdump_bgp",
        Kind::Updates {
            changes: 12,
            peers: 1,
        },
    ),
    (
        "bird6-mrtdump_rib",
        Kind::Rib {
            v4: 0,
            v6: 2,
            peers: 2,
        },
    ),
    (
        "bird6_bgp",
        Kind::Updates {
            changes: 14,
            peers: 1,
        },
    ),
    (
        "bird_bgp",
        Kind::Updates {
            changes: 14,
            peers: 1,
        },
    ),
    (
        "openbgpd_bgp",
        Kind::Updates {
            changes: 93,
            peers: 2,
        },
    ),
    (
        "openbgpd_rib_table",
        Kind::Rib {
            v4: 11,
            v6: 0,
            peers: 3,
        },
    ),
    (
        "openbgpd_rib_table-mp",
        Kind::Rib {
            v4: 11,
            v6: 10,
            peers: 2,
        },
    ),
    (
        "openbgpd_rib_table-v2",
        Kind::Rib {
            v4: 11,
            v6: 10,
            peers: 3,
        },
    ),
    (
        "quagga_bgp",
        Kind::Updates {
            changes: 18,
            peers: 2,
        },
    ),
    (
        "quagga_rib",
        Kind::Rib {
            v4: 3,
            v6: 3,
            peers: 2,
        },
    ),
];

/// An in-memory input, as `load::open` gives for a plain file.
fn input(bytes: &[u8], name: &str) -> Input {
    Input {
        reader: Box::new(Cursor::new(bytes.to_vec())),
        raw_bytes: Arc::new(AtomicU64::new(0)),
        path: PathBuf::from(name),
    }
}

/// Both MRT loaders on `bytes`: `Ok(())` or the error message.
fn load_both(bytes: &[u8], options: &LoadOptions) -> [Result<(), String>; 2] {
    [
        mrt::read_rib(input(bytes, "x.mrt"), options)
            .map(|_| ())
            .map_err(|e| e.to_string()),
        mrt::read_updates(input(bytes, "x.mrt"), options, NextHopTable::default())
            .map(|_| ())
            .map_err(|e| e.to_string()),
    ]
}

/// Offsets where records end: the cut points that leave whole records.
fn record_ends(bytes: &[u8]) -> Vec<usize> {
    let mut ends = vec![0];
    let mut at = 0;
    while at + 12 <= bytes.len() {
        let length = u32::from_be_bytes(bytes[at + 8..at + 12].try_into().unwrap()) as usize;
        at += 12 + length;
        ends.push(at);
    }
    ends
}

/// A scratch directory under the system temp dir (tests never write into the repo).
fn scratch_dir() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("fibkit-load-mrt-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn table(name: &str, options: &LoadOptions) -> LoadedTable {
    load_table(&sample(name), options).unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn v4(text: &str) -> Prefix<u32> {
    text.parse().unwrap()
}

#[test]
fn every_sample_loads_as_its_kind() {
    let files = samples();
    let names: Vec<&str> = files.iter().map(|(n, _)| n.as_str()).collect();
    let expected: Vec<&str> = EXPECTED.iter().map(|(n, _)| *n).collect();
    assert_eq!(
        names, expected,
        "a sample was added or removed: update EXPECTED"
    );
    let options = LoadOptions::default();
    for (name, kind) in EXPECTED {
        let path = sample(name);
        let as_table = load_table(&path, &options);
        let as_updates = load_updates(&path, &options, NextHopTable::default());
        match kind {
            Kind::Rib { v4, v6, peers } => {
                let table = as_table.unwrap_or_else(|e| panic!("{name}: {e}"));
                assert_eq!(table.format, Some(Format::Mrt), "{name}");
                assert_eq!((table.v4.len(), table.v6.len()), (*v4, *v6), "{name}");
                assert!(table.stats.records > 0 && table.stats.routes > 0, "{name}");
                assert_eq!(
                    table.stats.routes - table.stats.duplicates,
                    (v4 + v6) as u64,
                    "{name}: {:?}",
                    table.stats
                );
                let note = &table.notes[0];
                assert!(
                    note.starts_with("MRT: kept the routes of peer")
                        && note.contains(&format!("of {peers} peers")),
                    "{name}: {note}"
                );
                let error = as_updates.unwrap_err().to_string();
                assert!(
                    error.contains(name) && error.contains("RIB dump, not an update stream"),
                    "{name}: {error}"
                );
            }
            Kind::Updates { changes, peers } => {
                let updates = as_updates.unwrap_or_else(|e| panic!("{name}: {e}"));
                assert_eq!(updates.updates.len(), *changes, "{name}");
                assert_eq!(updates.stats.routes, *changes as u64, "{name}");
                assert!(!updates.nexthops.is_empty(), "{name}");
                assert!(
                    updates.updates.iter().all(|u| u.time > 1_400_000_000),
                    "{name}: times are record timestamps"
                );
                assert!(
                    updates.notes[0].contains(&format!("of {peers} peers")),
                    "{name}: {:?}",
                    updates.notes
                );
                let error = as_table.unwrap_err().to_string();
                assert!(
                    error.contains(name)
                        && error.contains(":1: record 1 at byte 0:")
                        && error.contains("update stream, not a RIB dump"),
                    "{name}: {error}"
                );
            }
        }
    }
}

#[test]
fn default_peer_is_the_one_with_most_routes() {
    let table = table("openbgpd_rib_table-v2", &LoadOptions::default());
    assert!(
        table.notes[0].contains("peer 192.168.1.10 (AS65000): 21 prefixes of 3 peers"),
        "{:?}",
        table.notes
    );
    // The VPNv4 RIB_GENERIC records are skipped, and said so.
    assert!(table.notes.iter().any(|n| n.contains("non-unicast")));
    let hop = |label| table.nexthops.addr(label).unwrap();
    assert_eq!(
        hop(table.v4.get(v4("192.168.1.0/24")).unwrap()),
        "192.168.0.15".parse::<IpAddr>().unwrap()
    );
    let v6: Prefix<u128> = "2001:db8::/64".parse().unwrap();
    assert_eq!(
        hop(table.v6.get(v6).unwrap()),
        "2001:db8:0:1::10".parse::<IpAddr>().unwrap()
    );
}

/// `(prefix, next-hop address)` pairs of both families, sorted.
fn routes_by_address(table: &LoadedTable) -> Vec<(String, IpAddr)> {
    let hop = |label| table.nexthops.addr(label).unwrap();
    let mut routes: Vec<(String, IpAddr)> = table
        .v4
        .iter()
        .map(|(p, l)| (p.to_string(), hop(l)))
        .chain(table.v6.iter().map(|(p, l)| (p.to_string(), hop(l))))
        .collect();
    routes.sort();
    routes
}

/// OpenBGPD wrote one RIB in three formats: TABLE_DUMP (IPv4 only, for this
/// peer), TABLE_DUMP_V2 and the draft's BGP4MP_ENTRY. They must agree.
#[test]
fn one_rib_in_three_formats() {
    let v2 = table("openbgpd_rib_table-v2", &LoadOptions::default());
    let mp = table("openbgpd_rib_table-mp", &LoadOptions::default());
    let v1 = table("openbgpd_rib_table", &LoadOptions::default());
    assert_eq!(routes_by_address(&v2), routes_by_address(&mp));
    let v2_v4: Vec<_> = routes_by_address(&v2)
        .into_iter()
        .filter(|(p, _)| !p.contains(':'))
        .collect();
    assert_eq!(v2_v4, routes_by_address(&v1));
    let origin = LoadOptions {
        label: LabelSource::OriginAs,
        ..LoadOptions::default()
    };
    let v2 = table("openbgpd_rib_table-v2", &origin);
    let mp = table("openbgpd_rib_table-mp", &origin);
    assert_eq!(
        v2.v4
            .iter()
            .chain(v2.v6.iter().map(|(_, l)| (v4("0.0.0.0/0"), l)))
            .map(|(_, l)| l)
            .collect::<Vec<_>>(),
        mp.v4
            .iter()
            .chain(mp.v6.iter().map(|(_, l)| (v4("0.0.0.0/0"), l)))
            .map(|(_, l)| l)
            .collect::<Vec<_>>()
    );
}

#[test]
fn peer_by_address_and_by_as() {
    let by_addr = |addr: &str| LoadOptions {
        peer: Some(PeerSelector::Addr(addr.parse().unwrap())),
        ..LoadOptions::default()
    };
    let table6 = table("quagga_rib", &by_addr("fd02::10"));
    assert_eq!((table6.v4.len(), table6.v6.len()), (0, 3));
    assert!(table6.notes[0].contains("peer fd02::10 (AS65000)"));
    let table4 = table("quagga_rib", &by_addr("192.168.0.10"));
    assert_eq!((table4.v4.len(), table4.v6.len()), (3, 3));

    // By AS: the first peer of that AS in the peer table.
    let by_as = LoadOptions {
        peer: Some("AS65000".parse().unwrap()),
        ..LoadOptions::default()
    };
    let table_as = table("quagga_rib", &by_as);
    assert!(table_as.notes[0].contains("peer 192.168.0.10 (AS65000)"));

    // ADD-PATH: one path kept per prefix, the others counted.
    let bird = table("bird-mrtdump_rib", &by_addr("192.168.0.10"));
    assert_eq!(bird.v4.len(), 3);
    assert_eq!(bird.nexthops.len(), 1);
    assert!(bird
        .notes
        .iter()
        .any(|n| n.contains("extra ADD-PATH paths")));
}

#[test]
fn missing_peer_lists_the_peers() {
    let options = LoadOptions {
        peer: Some("192.0.2.99".parse().unwrap()),
        ..LoadOptions::default()
    };
    let error = load_table(&sample("quagga_rib"), &options)
        .unwrap_err()
        .to_string();
    assert!(
        error.contains("quagga_rib")
            && error.contains("no peer 192.0.2.99")
            && error.contains("192.168.0.10 (AS65000, 6 routes)")
            && error.contains("fd02::10 (AS65000, 3 routes)"),
        "{error}"
    );
    let options = LoadOptions {
        peer: Some(PeerSelector::Asn(64999)),
        ..LoadOptions::default()
    };
    let error = load_updates(&sample("openbgpd_bgp"), &options, NextHopTable::default())
        .unwrap_err()
        .to_string();
    assert!(
        error.contains("no updates from a peer of AS64999") && error.contains("192.168.1.10"),
        "{error}"
    );
}

#[test]
fn update_streams_filter_by_peer() {
    let path = sample("openbgpd_bgp");
    let all = load_updates(&path, &LoadOptions::default(), NextHopTable::default()).unwrap();
    let mut sum = 0;
    for peer in ["192.168.1.10", "2001:db8:0:1::10"] {
        let options = LoadOptions {
            peer: Some(peer.parse().unwrap()),
            ..LoadOptions::default()
        };
        let one = load_updates(&path, &options, NextHopTable::default()).unwrap();
        assert!(!one.updates.is_empty() && one.updates.len() < all.updates.len());
        sum += one.updates.len();
    }
    assert_eq!(sum, all.updates.len());
    // Next hops given in advance keep their labels.
    let mut nexthops = NextHopTable::default();
    let known = nexthops.intern("192.168.0.10".parse().unwrap());
    let quagga = load_updates(&sample("quagga_bgp"), &LoadOptions::default(), nexthops).unwrap();
    assert_eq!(
        quagga.nexthops.addr(known),
        Some("192.168.0.10".parse().unwrap())
    );
}

#[test]
fn origin_as_labels() {
    let options = LoadOptions {
        label: LabelSource::OriginAs,
        ..LoadOptions::default()
    };
    let table = table("openbgpd_rib_table-v2", &options);
    assert!(table.nexthops.is_empty());
    // AS path 65015: origin 65015; an empty path (iBGP, local): 0.
    assert_eq!(table.v4.get(v4("192.168.1.0/24")), Some(65015));
    assert_eq!(table.v4.get(v4("192.168.0.0/16")), Some(65015));
    assert_eq!(table.v4.get(v4("192.168.0.10/32")), Some(0));
    // 4-byte AS path 4200000000 ... 64512: the last AS.
    let quagga = self::table("quagga_rib", &options);
    assert!(quagga
        .v4
        .iter()
        .chain(quagga.v6.iter().map(|(_, l)| (v4("0.0.0.0/0"), l)))
        .all(|(_, l)| l == 64512));
    let updates = load_updates(&sample("quagga_bgp"), &options, NextHopTable::default()).unwrap();
    assert!(updates.updates.iter().all(|u| match u.change {
        AnyChange::V4(Change::Announce(_, l)) | AnyChange::V6(Change::Announce(_, l)) => l == 64512,
        _ => true,
    }));
}

#[test]
fn truncated_file_is_an_error_naming_file_and_record() {
    let dir = scratch_dir();
    let bytes = std::fs::read(sample("quagga_rib")).unwrap();
    let path = dir.join("quagga_rib.cut");
    std::fs::write(&path, &bytes[..bytes.len() - 5]).unwrap();
    let error = load_table(&path, &LoadOptions::default())
        .unwrap_err()
        .to_string();
    assert!(
        error.contains("quagga_rib.cut:7: record 7 at byte") && error.contains("truncated"),
        "{error}"
    );
    // With skip_bad the last record is skipped, counted and noted.
    let options = LoadOptions {
        skip_bad: true,
        ..LoadOptions::default()
    };
    let table = load_table(&path, &options).unwrap();
    assert_eq!(table.stats.skipped, 1);
    assert_eq!(table.v4.len() + table.v6.len(), 5);
    assert!(table
        .notes
        .iter()
        .any(|n| n.contains("stopped reading at record 7")));

    // A header cut short.
    std::fs::write(&path, &bytes[..record_ends(&bytes)[3] + 7]).unwrap();
    let error = load_table(&path, &LoadOptions::default())
        .unwrap_err()
        .to_string();
    assert!(
        error.contains(":4: record 4") && error.contains("inside a record header (7 of 12 bytes)"),
        "{error}"
    );

    // Compressed: whole it loads as plain; cut short it is an error.
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(&bytes).unwrap();
    let gz = gz.finish().unwrap();
    let gz_path = dir.join("quagga_rib.gz");
    std::fs::write(&gz_path, &gz).unwrap();
    let whole = load_table(&gz_path, &LoadOptions::default()).unwrap();
    assert_eq!((whole.v4.len(), whole.v6.len()), (3, 3));
    std::fs::write(&gz_path, &gz[..gz.len() * 2 / 3]).unwrap();
    assert!(load_table(&gz_path, &LoadOptions::default()).is_err());
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn every_cut_point_of_every_sample() {
    for (name, bytes) in samples() {
        let ends = record_ends(&bytes);
        assert_eq!(ends.last(), Some(&bytes.len()), "{name}: framing");
        let rib = matches!(
            EXPECTED.iter().find(|(n, _)| *n == name).map(|(_, k)| k),
            Some(Kind::Rib { .. })
        );
        for cut in 0..bytes.len() {
            let [as_rib, as_updates] = load_both(&bytes[..cut], &LoadOptions::default());
            let mine = if rib { as_rib } else { as_updates };
            if !ends.contains(&cut) {
                let error = mine.unwrap_err();
                assert!(error.contains("truncated"), "{name} cut at {cut}: {error}");
            }
        }
    }
}

#[test]
fn garbage_is_an_error() {
    let dir = scratch_dir();
    let path = dir.join("garbage.mrt");
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let garbage: Vec<u8> = (0..4096)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state as u8
        })
        .collect();
    std::fs::write(&path, &garbage).unwrap();
    let forced = LoadOptions {
        format: Some(Format::Mrt),
        ..LoadOptions::default()
    };
    for options in [LoadOptions::default(), forced] {
        let error = load_table(&path, &options).unwrap_err().to_string();
        assert!(error.contains("garbage.mrt"), "{error}");
        let error = load_updates(&path, &options, NextHopTable::default())
            .unwrap_err()
            .to_string();
        assert!(error.contains("garbage.mrt"), "{error}");
    }
    // A text table forced through the MRT loader.
    std::fs::write(&path, "192.0.2.0/24 1\n10.0.0.0/8 2\n").unwrap();
    let error = load_table(&path, &forced).unwrap_err().to_string();
    assert!(error.contains("not an MRT type"), "{error}");
    std::fs::remove_dir_all(&dir).ok();
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1000))]

    /// Random bodies behind a plausible header, so every body parser is reached.
    #[test]
    fn random_records_never_panic(kind in prop::sample::select(vec![12u16, 13, 16, 17]),
                                  subtype in 0u16..14,
                                  body in prop::collection::vec(any::<u8>(), 0..300),
                                  tail in prop::collection::vec(any::<u8>(), 0..40)) {
        let mut bytes = vec![0, 0, 0, 1];
        bytes.extend_from_slice(&kind.to_be_bytes());
        bytes.extend_from_slice(&subtype.to_be_bytes());
        bytes.extend_from_slice(&(body.len() as u32).to_be_bytes());
        bytes.extend_from_slice(&body);
        bytes.extend_from_slice(&tail);
        for skip_bad in [false, true] {
            let options = LoadOptions { skip_bad, ..LoadOptions::default() };
            let _ = load_both(&bytes, &options);
        }
    }

    /// Real files with bytes overwritten and cut short.
    #[test]
    fn corrupted_samples_never_panic(file in any::<prop::sample::Index>(),
                                     flips in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 0..8),
                                     cut in any::<prop::sample::Index>()) {
        let files = samples();
        let mut bytes = files[file.index(files.len())].1.clone();
        for (at, value) in flips {
            let at = at.index(bytes.len());
            bytes[at] = value;
        }
        bytes.truncate(cut.index(bytes.len() + 1));
        for skip_bad in [false, true] {
            for label in [LabelSource::NextHop, LabelSource::OriginAs] {
                let options = LoadOptions { skip_bad, label, ..LoadOptions::default() };
                let _ = load_both(&bytes, &options);
            }
        }
    }
}

/// A BGP4MP_MESSAGE_AS4 record from peer 192.0.2.1 (AS64500) holding a BGP
/// UPDATE with `withdrawn` (NLRI-encoded) and `attributes`.
fn bgp4mp_update(time: u32, withdrawn: &[u8], attributes: &[u8]) -> Vec<u8> {
    let mut bgp = vec![0xff; 16];
    let bgp_len = 16 + 2 + 1 + 2 + withdrawn.len() + 2 + attributes.len();
    bgp.extend_from_slice(&(bgp_len as u16).to_be_bytes());
    bgp.push(2); // UPDATE
    bgp.extend_from_slice(&(withdrawn.len() as u16).to_be_bytes());
    bgp.extend_from_slice(withdrawn);
    bgp.extend_from_slice(&(attributes.len() as u16).to_be_bytes());
    bgp.extend_from_slice(attributes);
    let mut body = Vec::new();
    body.extend_from_slice(&64500u32.to_be_bytes()); // peer AS
    body.extend_from_slice(&64501u32.to_be_bytes()); // local AS
    body.extend_from_slice(&[0, 0, 0, 1]); // interface, AFI IPv4
    body.extend_from_slice(&[192, 0, 2, 1, 192, 0, 2, 2]); // peer, local
    body.extend_from_slice(&bgp);
    let mut record = time.to_be_bytes().to_vec();
    record.extend_from_slice(&16u16.to_be_bytes()); // BGP4MP
    record.extend_from_slice(&4u16.to_be_bytes()); // MESSAGE_AS4
    record.extend_from_slice(&(body.len() as u32).to_be_bytes());
    record.extend_from_slice(&body);
    record
}

#[test]
fn withdrawals_of_both_families() {
    // 192.0.2.0/24 withdrawn; MP_UNREACH (optional, type 15) AFI 2 SAFI 1 2001:db8::/32.
    let mp_unreach = [0x80, 15, 8, 0, 2, 1, 32, 0x20, 0x01, 0x0d, 0xb8];
    let record = bgp4mp_update(1_600_000_000, &[24, 192, 0, 2], &mp_unreach);
    let loaded = mrt::read_updates(
        input(&record, "w.mrt"),
        &LoadOptions::default(),
        NextHopTable::default(),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let v6: Prefix<u128> = "2001:db8::/32".parse().unwrap();
    let changes: Vec<(u64, AnyChange)> =
        loaded.updates.iter().map(|u| (u.time, u.change)).collect();
    assert_eq!(
        changes,
        vec![
            (
                1_600_000_000,
                AnyChange::V4(Change::Withdraw(v4("192.0.2.0/24")))
            ),
            (1_600_000_000, AnyChange::V6(Change::Withdraw(v6))),
        ]
    );

    // Host bits set (192.0.3.0/23): an error naming the record, or masked with `lenient`.
    let mut stream = record.clone();
    stream.extend(bgp4mp_update(1_600_000_001, &[23, 192, 0, 3], &[]));
    let error = mrt::read_updates(
        input(&stream, "w.mrt"),
        &LoadOptions::default(),
        NextHopTable::default(),
    )
    .unwrap_err()
    .to_string();
    assert!(
        error.contains("w.mrt:2: record 2 at byte") && error.contains("host bits"),
        "{error}"
    );
    let lenient = LoadOptions {
        lenient: true,
        ..LoadOptions::default()
    };
    let loaded =
        mrt::read_updates(input(&stream, "w.mrt"), &lenient, NextHopTable::default()).unwrap();
    assert_eq!(loaded.stats.masked, 1);
    assert_eq!(
        loaded.updates[2].change,
        AnyChange::V4(Change::Withdraw(v4("192.0.2.0/23")))
    );
    let skip = LoadOptions {
        skip_bad: true,
        ..LoadOptions::default()
    };
    let loaded =
        mrt::read_updates(input(&stream, "w.mrt"), &skip, NextHopTable::default()).unwrap();
    assert_eq!((loaded.updates.len(), loaded.stats.skipped), (2, 1));
}

/// A RIB record whose entry count disagrees with its length is an error
/// naming the record (bgpkit-parser's own RIB decoder would quietly keep the
/// entries before the problem).
#[test]
fn rib_entry_count_mismatch_is_an_error() {
    let bytes = std::fs::read(sample("quagga_rib")).unwrap();
    let ends = record_ends(&bytes);
    // Record 2: the first RIB_IPV4_UNICAST; its entry count follows the
    // sequence number and the prefix.
    let body = ends[1] + 12;
    let plen = bytes[body + 4] as usize;
    let count_at = body + 5 + plen.div_ceil(8);
    let count = u16::from_be_bytes([bytes[count_at], bytes[count_at + 1]]);
    assert!(count >= 1);
    for (new_count, says) in [
        (
            count + 1,
            "the record ends inside the peer index (0 of 2 bytes)",
        ),
        (count - 1, "bytes after the"),
    ] {
        let mut broken = bytes.clone();
        broken[count_at..count_at + 2].copy_from_slice(&new_count.to_be_bytes());
        let error = mrt::read_rib(input(&broken, "q.mrt"), &LoadOptions::default())
            .unwrap_err()
            .to_string();
        assert!(
            error.contains("q.mrt:2: record 2 at byte") && error.contains(says),
            "{error}"
        );
        let skip = LoadOptions {
            skip_bad: true,
            ..LoadOptions::default()
        };
        let table = mrt::read_rib(input(&broken, "q.mrt"), &skip).unwrap();
        assert_eq!(table.stats.skipped, 1);
        assert_eq!(table.v4.len() + table.v6.len(), 5);
    }
}

/// Rewrites every record of `bytes` with `change(type, subtype, body)`.
fn rewrite(bytes: &[u8], change: impl Fn(u16, u16, &[u8]) -> (u16, u32, Vec<u8>)) -> Vec<u8> {
    let ends = record_ends(bytes);
    let mut out = Vec::new();
    for pair in ends.windows(2) {
        let record = &bytes[pair[0]..pair[1]];
        let kind = u16::from_be_bytes([record[4], record[5]]);
        let subtype = u16::from_be_bytes([record[6], record[7]]);
        let (kind, length, body) = change(kind, subtype, &record[12..]);
        out.extend_from_slice(&record[..4]);
        out.extend_from_slice(&kind.to_be_bytes());
        out.extend_from_slice(&subtype.to_be_bytes());
        out.extend_from_slice(&length.to_be_bytes());
        out.extend_from_slice(&body);
    }
    out
}

/// BGP4MP_ET: the same messages with microseconds give the same changes.
#[test]
fn extended_timestamps() {
    for name in ["bird_bgp", "quagga_bgp"] {
        let bytes = std::fs::read(sample(name)).unwrap();
        let et = rewrite(&bytes, |kind, _, body| {
            assert_eq!(kind, 16);
            let mut with_us = 123_456u32.to_be_bytes().to_vec();
            with_us.extend_from_slice(body);
            (17, with_us.len() as u32, with_us)
        });
        let options = LoadOptions::default();
        let plain =
            mrt::read_updates(input(&bytes, name), &options, NextHopTable::default()).unwrap();
        let et = mrt::read_updates(input(&et, name), &options, NextHopTable::default()).unwrap();
        assert_eq!(plain.updates, et.updates, "{name}");
    }
}

/// Historical TABLE_DUMP files whose length fields are four bytes short.
#[test]
fn table_dump_lengths_four_bytes_short() {
    let bytes = std::fs::read(sample("openbgpd_rib_table")).unwrap();
    let short = rewrite(&bytes, |kind, _, body| {
        assert_eq!(kind, 12);
        (kind, body.len() as u32 - 4, body.to_vec())
    });
    let options = LoadOptions::default();
    let whole = mrt::read_rib(input(&bytes, "t"), &options).unwrap();
    let fixed = mrt::read_rib(input(&short, "t"), &options).unwrap();
    assert_eq!(routes_by_address(&whole), routes_by_address(&fixed));
    assert!(
        fixed.notes.iter().any(|n| n.contains("four bytes short")),
        "{:?}",
        fixed.notes
    );
    assert!(!whole.notes.iter().any(|n| n.contains("four bytes short")));
}
