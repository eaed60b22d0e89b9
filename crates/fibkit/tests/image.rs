//! Saved images: every engine that can be saved answers from its image as
//! it answered when built, and damaged or tampered images are errors.

mod common;

use common::*;
use fibkit::image::Image;
use fibkit::registry::{save_image, ImageFamily};
use fibkit::{verify, Rib};

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

#[test]
fn engines_without_images_say_which_can() {
    let rib = Rib::<u32>::new();
    let err = save_image("radix", &rib, &scratch("radix"))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("cannot be saved") && err.contains("dir24-8"),
        "{err}"
    );
}
