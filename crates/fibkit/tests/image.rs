//! Saved images: every engine that can be saved answers from its image as
//! it answered when built, and damaged or tampered images are errors.

mod common;

use common::*;
use fibkit::image::Image;
use fibkit::registry::{image_bytes, save_image, ImageFamily};
use fibkit::verify::verify;
use fibkit::{Family, LocalFib, Rib};
use proptest::prelude::*;

fn scratch(name: &str) -> std::path::PathBuf {
    std::env::temp_dir().join(format!("fibkit-image-test-{}-{name}", std::process::id()))
}

/// Saves `spec` built from `rib`, opens the image and verifies it.
fn round_trip<A: ImageFamily>(spec: &str, rib: &Rib<A>, name: &str) -> Vec<u8> {
    let path = scratch(name);
    save_image(spec, rib, &path).unwrap_or_else(|e| panic!("{spec}: {e}"));
    let image = Image::open(&path).unwrap();
    assert_eq!(image.family(), A::FAMILY);
    let snapshot = A::open_image(&image).unwrap();
    let report = verify(&snapshot, rib, 20_000, 5);
    assert!(
        report.ok(),
        "{spec} from its image: {}",
        report.mismatches[0]
    );
    let bytes = std::fs::read(&path).unwrap();
    std::fs::remove_file(&path).unwrap();
    bytes
}

/// Rewrites the checksum of a modified image, as a forger would.
fn fix_checksum(bytes: &mut [u8]) {
    bytes[24..32].fill(0);
    let checksum = crc32fast::hash(bytes) as u64;
    bytes[24..32].copy_from_slice(&checksum.to_le_bytes());
}

#[test]
fn dir24_8_images_answer_like_the_engine() {
    for rib in small_tables_v4() {
        round_trip("dir24-8", &rib, "small");
    }
    round_trip("dir24-8", &shared_table("dfz-v4-asn.txt.gz").v4, "asn");
}

/// The image of `spec` built from `rib`, opened from memory and verified.
fn check_in_memory<A: ImageFamily>(spec: &str, rib: &Rib<A>) -> Result<(), TestCaseError> {
    let bytes = image_bytes(spec, rib).unwrap_or_else(|e| panic!("{spec}: {e}"));
    let image = Image::from_bytes(&bytes).unwrap();
    let snapshot = A::open_image(&image).unwrap_or_else(|e| panic!("{spec}: {e}"));
    let report = verify(&snapshot, rib, 2_000, 9);
    prop_assert!(report.ok(), "{spec}: {}", report.mismatches[0]);
    Ok(())
}

#[test]
fn images_of_tables_with_many_labels_answer_like_the_engine() {
    // More than 65,536 labels: dxr's wide chunk format, dxr6's wide leaves.
    round_trip("dxr", &shared_table("dfz-v4-asn.txt.gz").v4, "dxr-asn");
    round_trip("cpe", &shared_table("dfz-v4-asn.txt.gz").v4, "cpe-asn");
    round_trip(
        "dxr6:k=8,stride=4",
        &shared_table("dfz-v6-asn.txt.gz").v6,
        "dxr6-asn",
    );
}

/// A table whose `dxr` range table passes the 8 MiB that chunk bases in
/// single words reach: the build doubles `align`, the image records the
/// layout it built, and the image answers like the engine.
#[test]
fn images_of_dxr_with_a_coarser_chunk_grid_record_it() {
    let rib = distinct_host_routes_v4();
    let bytes = round_trip("dxr", &rib, "dxr-align");
    let image = Image::from_bytes(&bytes).unwrap();
    assert_eq!(image.spec(), "dxr:k=20,align=2");
}

/// A `dxr6` table past 2^19 leaf lines builds at `align=2`; its image
/// records that layout and answers like the reference.
#[test]
fn images_of_dxr6_with_coarser_leaf_places_record_them() {
    let rib = host_routes_one_line_each_v6(600_000);
    let bytes = round_trip("dxr6", &rib, "dxr6-align");
    let image = Image::from_bytes(&bytes).unwrap();
    assert_eq!(image.spec(), "dxr6:k=16,stride=16,density=2,align=2");
}

/// Every spec whose engine can be saved as an image, per family: the
/// test layouts of every engine the registry marks savable, and a few
/// layouts only images need (another range-table word step, other roots).
/// The one list the tests below share; [`image_engines`] are their engine
/// names.
fn image_specs(family: Family) -> Vec<&'static str> {
    let extra: &[&str] = match family {
        Family::V4 => &["cpe", "dxr:d=16,x=4", "dxr:k=20,align=8"],
        Family::V6 => &[
            "cpe",
            "dxr6:k=8,stride=4",
            "dxr6:k=24",
            "dxr6:k=8,stride=3,align=4",
        ],
    };
    fibkit::registry::ENGINES
        .iter()
        .filter(|info| info.savable)
        .flat_map(|info| info.layouts)
        .filter(|layout| layout.supports(family))
        .map(|layout| layout.spec)
        .chain(extra.iter().copied())
        .collect()
}

/// The engines the registry marks savable.
fn image_engines() -> Vec<&'static str> {
    fibkit::registry::ENGINES
        .iter()
        .filter(|info| info.savable)
        .map(|info| info.name)
        .collect()
}

#[test]
fn every_image_engine_answers_from_its_image_on_the_shared_tables() {
    let (v4, v6) = (
        &shared_table("dfz-v4-nh.txt.gz").v4,
        &shared_table("dfz-v6-nh.txt.gz").v6,
    );
    for spec in image_specs(Family::V4) {
        round_trip(spec, v4, "shared-v4");
    }
    for spec in image_specs(Family::V6) {
        round_trip(spec, v6, "shared-v6");
    }
}

/// Saves the handle's current snapshot (an updated one, with the free
/// space and unreachable parts updates leave), opens the image and
/// verifies it against the handle's table.
fn assert_snapshot_image_answers<A: ImageFamily>(fib: &LocalFib<A>, what: &str) {
    let sections = A::image_sections(fib.snapshot())
        .unwrap_or_else(|| panic!("{what}: the engine has no image sections"));
    let bytes = fibkit::image::to_bytes(A::FAMILY, &fib.spec(), &sections);
    let image = Image::from_bytes(&bytes).unwrap();
    let snapshot = A::open_image(&image).unwrap_or_else(|e| panic!("{what}: {e}"));
    assert_verified(&snapshot, fib.rib(), 500, what);
}

/// Applies a generated stream of changes to `spec` built from `rib`, in
/// batches of `batch`, and checks the image of the snapshot after each.
fn check_updated_images<A: ImageFamily>(spec: &str, rib: &Rib<A>, seed: u64, batch: usize) {
    let changes = fibkit::trace::generate_changes(rib, 48, seed);
    let mut fib = LocalFib::<A>::new(spec, rib.clone()).unwrap();
    for batch in changes.chunks(batch) {
        fib.apply(batch).unwrap_or_else(|e| panic!("{spec}: {e}"));
        assert_snapshot_image_answers(&fib, &format!("{spec} (seed {seed}), updated"));
    }
}

/// Images of updated snapshots open and answer like the updated table.
/// The extended DXR layout keeps the extension blocks an update stops
/// naming, with stale chunk entries: opening once rejected them ("two
/// chunks overlap in the range table"), though no lookup reads them.
#[test]
fn images_of_updated_snapshots_answer_like_the_updated_table() {
    let p = |text: &str| text.parse::<fibkit::Prefix<u32>>().unwrap();
    let rib = Rib::from_pairs([
        (p("171.212.160.0/22"), 0),
        (p("164.255.137.0/24"), 1),
        (p("0.0.0.0/3"), 42),
    ]);
    let mut fib = LocalFib::<u32>::new("dxr:d=16,x=4", rib).unwrap();
    fib.apply(&[
        fibkit::Change::Announce(p("171.192.0.0/11"), 0),
        fibkit::Change::Announce(p("171.192.0.0/11"), 26),
        fibkit::Change::Withdraw(p("164.255.137.0/24")),
        fibkit::Change::Announce(p("171.192.0.0/11"), 42),
    ])
    .unwrap();
    assert_snapshot_image_answers(&fib, "dxr:d=16,x=4, updated");
    for (seed, rib) in small_tables_v4().iter().enumerate() {
        for spec in image_specs(Family::V4) {
            check_updated_images(spec, rib, seed as u64, 8 + seed % 5);
        }
    }
    for (seed, rib) in small_tables_v6().iter().enumerate() {
        for spec in image_specs(Family::V6) {
            check_updated_images(spec, rib, seed as u64, 8 + seed % 5);
        }
    }
}

#[test]
fn every_image_engine_answers_from_its_image_on_small_tables() {
    for spec in image_specs(Family::V4) {
        for rib in small_tables_v4() {
            check_in_memory(spec, &rib).unwrap();
        }
    }
    for spec in image_specs(Family::V6) {
        for rib in small_tables_v6() {
            check_in_memory(spec, &rib).unwrap();
        }
    }
}

/// Flips bytes of every section of the image of `spec` built from `rib`
/// (its first and last byte and bytes evenly spaced between: 31 in a
/// small image, 3 in one of megabytes, each forgery copying the whole
/// image) and fixes the checksum: each forged
/// image must be an error, or a snapshot whose lookups all finish (a
/// flipped label is a wrong answer, not a crash). Returns how many forged
/// images were rejected.
fn forge_every_section<A: ImageFamily>(spec: &str, rib: &Rib<A>) -> usize {
    let bytes = image_bytes(spec, rib).unwrap_or_else(|e| panic!("{spec}: {e}"));
    let image = Image::from_bytes(&bytes).unwrap();
    let mut rejected = 0;
    for name in image.section_names() {
        let range = image.section_bytes(name).unwrap();
        if range.is_empty() {
            continue;
        }
        let samples = if bytes.len() < 1 << 20 { 32 } else { 4 };
        let step = range.len().div_ceil(samples).max(1);
        for at in range.clone().step_by(step).chain([range.end - 1]) {
            let mut forged = bytes.clone();
            forged[at] ^= 0xff;
            fix_checksum(&mut forged);
            let image = Image::from_bytes(&forged).unwrap();
            match A::open_image(&image) {
                // Every range boundary and random addresses, per key and
                // in batches: the report may list wrong labels.
                Ok(snapshot) => drop(verify(&snapshot, rib, 500, 3)),
                Err(e) => {
                    let engine = spec.split(':').next().unwrap();
                    assert!(e.to_string().contains(engine), "{spec}: {e}");
                    rejected += 1;
                }
            }
        }
    }
    rejected
}

#[test]
fn forged_images_of_every_engine_are_errors_or_harmless() {
    // Nested prefixes down to host routes: nodes below the root in every
    // engine, so forged pointers and strides have something to point at.
    let v4 = rib_from_triples(&[
        (0x0a00_0000u32, 8, 1),
        (0x0a01_0000, 16, 2),
        (0x0a01_0200, 24, 3),
        (0x0a01_0203, 32, 4),
        (0xc0a8_0000, 16, 5),
        (0xc0a8_8000, 17, 6),
    ]);
    let base = 0x2001_0db8u128 << 96;
    let v6 = rib_from_triples(&[
        (base, 32, 1),
        (base | 1 << 80, 48, 2),
        (base | 1 << 80 | 7 << 64, 64, 3),
        (base | 1 << 80 | 7 << 64 | 9, 128, 4),
        (0xfd00u128 << 112, 8, 5),
    ]);
    // Some forgery of every engine is caught, not only tolerated.
    for spec in image_specs(Family::V4) {
        assert!(forge_every_section(spec, &v4) > 0, "{spec}: all accepted");
    }
    for spec in image_specs(Family::V6) {
        assert!(forge_every_section(spec, &v6) > 0, "{spec}: all accepted");
    }
}

#[test]
fn images_of_one_family_are_errors_for_the_other() {
    let rib4 = rib_from_triples(&[(0x0a00_0000u32, 8, 1)]);
    let rib6 = rib_from_triples(&[(0x2001_0db8u128 << 96, 32, 1)]);
    for spec in image_specs(Family::V4) {
        let image = Image::from_bytes(&image_bytes(spec, &rib4).unwrap()).unwrap();
        let err = <u128 as ImageFamily>::open_image(&image).err().unwrap();
        assert!(err.to_string().contains("IPv4 image"), "{spec}: {err}");
    }
    for spec in image_specs(Family::V6) {
        let image = Image::from_bytes(&image_bytes(spec, &rib6).unwrap()).unwrap();
        let err = <u32 as ImageFamily>::open_image(&image).err().unwrap();
        assert!(err.to_string().contains("IPv6 image"), "{spec}: {err}");
    }
}

#[test]
fn engines_without_images_are_unsupported_naming_those_with() {
    let rib4 = rib_from_triples(&[(0x0a00_0000u32, 8, 1)]);
    let rib6 = rib_from_triples(&[(0x2001_0db8u128 << 96, 32, 1)]);
    let mut unsupported = Vec::new();
    for engine in fibkit::registry::ENGINES {
        let results = [
            engine
                .ipv4
                .then(|| image_bytes(engine.name, &rib4).map(drop)),
            engine
                .ipv6
                .then(|| image_bytes(engine.name, &rib6).map(drop)),
        ];
        for result in results.into_iter().flatten() {
            match result {
                Ok(()) => assert!(image_engines().contains(&engine.name), "{}", engine.name),
                Err(e) => {
                    let err = e.to_string();
                    assert!(!image_engines().contains(&engine.name), "{err}");
                    assert!(err.contains("cannot be saved"), "{err}");
                    for name in image_engines() {
                        assert!(err.contains(name), "{err} does not name {name}");
                    }
                    unsupported.push(engine.name);
                }
            }
        }
    }
    assert!(unsupported.contains(&"radix"), "{unsupported:?}");
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, rng_seed: proptest::test_runner::RngSeed::Fixed(14), ..ProptestConfig::default() })]

    #[test]
    fn images_of_random_v4_tables_answer_like_the_reference(entries in random_table_v4()) {
        let rib = rib_from_triples(&entries);
        for spec in image_specs(Family::V4) {
            check_in_memory(spec, &rib)?;
        }
    }

    #[test]
    fn images_of_random_v6_tables_answer_like_the_reference(entries in random_table_v6()) {
        let rib = rib_from_triples(&entries);
        for spec in image_specs(Family::V6) {
            check_in_memory(spec, &rib)?;
        }
    }
}

/// `bytes` with `patch` written at byte `at` and the checksum fixed up
/// (a forger's image), opened as an IPv4 snapshot: the error it gives.
fn forged_v4_error(bytes: &[u8], at: usize, patch: &[u8]) -> String {
    let mut forged = bytes.to_vec();
    forged[at..at + patch.len()].copy_from_slice(patch);
    fix_checksum(&mut forged);
    let image = Image::from_bytes(&forged).unwrap();
    match <u32 as ImageFamily>::open_image(&image) {
        Ok(_) => panic!("a forged image ({patch:?} at byte {at}) was accepted"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn tampered_dxr_images_are_rejected_even_with_a_good_checksum() {
    let rib = rib_from_triples(&[
        (0x0a00_0000u32, 8, 1),
        (0x0a01_0200, 24, 2),
        (0x0a01_0203, 32, 3),
    ]);
    for spec in ["dxr:k=16", "dxr:d=12,x=4"] {
        let bytes = image_bytes(spec, &rib).unwrap();
        let image = Image::from_bytes(&bytes).unwrap();
        let (ext, ranges) = (
            image.section_bytes("ext").unwrap(),
            image.section_bytes("ranges").unwrap(),
        );
        let ext_entries = image.array::<u32>("ext").unwrap();
        // The chunk of 10.1/16 is the only one holding ranges (long
        // format: its starts are not on /24 boundaries); its neighbours
        // 10.0/16 and 10.2/16 lie inside one range each.
        let chunk = ext_entries.iter().position(|&e| e >> 30 != 0).unwrap();
        let entry = ext_entries[chunk];
        assert_eq!(entry >> 30, 2, "{spec}: a long chunk");
        let (base, n) = ((entry & 0x3f_ffff) as usize, (entry >> 22 & 0xff) as usize);
        let entry_at = |index: usize| ext.start + 4 * index;
        let word_at = |index: usize| ranges.start + 2 * index;
        let cases: [(usize, Vec<u8>, &str); 5] = [
            (
                entry_at(chunk),
                (entry | 0x3f_ffff).to_ne_bytes().to_vec(),
                "outside the range table",
            ),
            (
                entry_at(chunk - 1),
                0x0fff_ffffu32.to_ne_bytes().to_vec(),
                "outside the results",
            ),
            (
                entry_at(chunk + 1),
                (entry ^ 1 << 22).to_ne_bytes().to_vec(),
                "two chunks overlap",
            ),
            (
                word_at(base),
                1u16.to_ne_bytes().to_vec(),
                "does not start at offset 0",
            ),
            (
                word_at(base + n),
                u16::MAX.to_ne_bytes().to_vec(),
                "names a label outside",
            ),
        ];
        for (at, patch, expected) in cases {
            let err = forged_v4_error(&bytes, at, &patch);
            assert!(err.contains(expected), "{spec}: {err}");
        }
        // A results slot that is neither a label nor "no route".
        let results = image.section_bytes("results").unwrap();
        let err = forged_v4_error(&bytes, results.start + 8, &2u32.to_ne_bytes());
        assert!(err.contains("results slot 1 is neither"), "{spec}: {err}");
        if spec == "dxr:k=16" {
            // Another layout's spec over the same tables.
            let err = forged_v4_error(&bytes, 40, b"dxr:k=17");
            assert!(err.contains("2^17 entries"), "{err}");
        } else {
            let direct = image.section_bytes("direct").unwrap();
            let err = forged_v4_error(&bytes, direct.start, &u16::MAX.to_ne_bytes());
            assert!(err.contains("block outside"), "{spec}: {err}");
        }
    }
}

#[test]
fn tampered_dxr6_images_are_rejected_even_with_a_good_checksum() {
    // Seven /48s in one /32: a node under the root, then leaves.
    let base = 0x2001_0db8u128 << 96;
    let triples: Vec<(u128, u8, u32)> = (0..7u128)
        .map(|i| (base | (i * 3) << 80, 48, i as u32 + 1))
        .chain([(base, 32, 100)])
        .collect();
    let rib = rib_from_triples(&triples);
    let bytes = image_bytes("dxr6:k=16,stride=4", &rib).unwrap();
    let image = Image::from_bytes(&bytes).unwrap();
    let entries_at = image.section_bytes("entries").unwrap().start;
    let entries = image.array::<u32>("entries").unwrap();
    let root = (base >> 112) as usize;
    let node = entries[root];
    assert_eq!(node >> 30, 1, "the /16 of 2001:db8:: holds a node");
    let table = (node & 0x3ff_ffff) as usize;
    let leaf = *entries[table..]
        .iter()
        .find(|&&e| e >> 31 == 1)
        .expect("a leaf below the node");
    let error = |at: usize, value: u32| -> String {
        let mut forged = bytes.clone();
        forged[entries_at + 4 * at..entries_at + 4 * at + 4].copy_from_slice(&value.to_ne_bytes());
        fix_checksum(&mut forged);
        let image = Image::from_bytes(&forged).unwrap();
        match <u128 as ImageFamily>::open_image(&image) {
            Ok(_) => panic!("a forged entry {value:#x} at {at} was accepted"),
            Err(e) => e.to_string(),
        }
    };
    let cases = [
        // A node table past the end of the entries.
        (root, node | 0x3ff_ffff, "outside the entries"),
        // A node pointing back to the root: a cycle.
        (table, node & !0x3ff_ffff, "cycle"),
        // A second node entry over the same table.
        (root + 1, node, "overlap"),
        // A label past the results.
        (root + 1, 0x0fff_ffff, "label outside the results"),
        // A leaf in a line that does not exist.
        (table, leaf | 0x7_ffff, "outside the leaf lines"),
        // A leaf of 15 starts at the end of its line.
        (
            table,
            leaf | 0xf << 24 | 0x1f << 19,
            "does not fit its line",
        ),
    ];
    for (at, value, expected) in cases {
        let err = error(at, value);
        assert!(err.contains(expected), "{err}");
    }
}

#[test]
fn tampered_images_are_rejected_even_with_a_good_checksum() {
    let rib = rib_from_triples(&[
        (0x0a00_0000u32, 8, 1),
        (0x0a01_0200, 24, 2),
        (0x0a01_0203, 32, 3),
    ]);
    let bytes = round_trip("dir24-8", &rib, "tamper");
    let image = Image::from_bytes(&bytes).unwrap();
    let tbl24 = image.array::<u32>("tbl24").unwrap();
    // Find the tbl24 section's offset through a marker entry: the /24 of
    // 10.1.2.0 holds a group pointer.
    let entry = tbl24[0x0a0102];
    assert!(entry >> 31 == 1);
    let offset = bytes
        .windows(4)
        .enumerate()
        .skip(64)
        .find(|(at, w)| at % 4 == 0 && u32::from_ne_bytes((*w).try_into().unwrap()) == entry)
        .map(|(at, _)| at)
        .unwrap();
    for bad in [entry + 1000, 0x7fff_0000] {
        let mut forged = bytes.clone();
        forged[offset..offset + 4].copy_from_slice(&bad.to_ne_bytes());
        fix_checksum(&mut forged);
        let image = Image::from_bytes(&forged).unwrap();
        let err = <u32 as ImageFamily>::open_image(&image)
            .err()
            .unwrap()
            .to_string();
        assert!(err.contains("outside its table"), "{err}");
    }
    // An IPv4 image is not an IPv6 engine.
    let image = Image::from_bytes(&bytes).unwrap();
    assert!(<u128 as ImageFamily>::open_image(&image).is_err());
}
