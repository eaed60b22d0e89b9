//! Damaged and forged images: the validator must reject or accept any
//! bytes without crashing, and a snapshot it accepts must answer lookups
//! (single and batch, whose fast paths read without bounds checks) without
//! reading out of bounds. The first input byte chooses whether the
//! checksum is recomputed first (a forger's image) so that mutations reach
//! the engines' own checks.
#![no_main]

use fibkit::image::Image;
use fibkit::registry::ImageFamily;
use fibkit::{Family, Lookup};
use libfuzzer_sys::fuzz_target;

fn probe<A: ImageFamily>(image: &Image) {
    let Ok(snapshot) = A::open_image(image) else { return };
    let addrs: Vec<A> = (0..300u32)
        .map(|i| A::from_u128((i as u128).wrapping_mul(0x9e37_79b9_7f4a_7c15_f39c_c060_5ced_c835)))
        .collect();
    let mut out = vec![None; addrs.len()];
    snapshot.lookup_batch(&addrs, &mut out);
    for (addr, batch) in addrs.iter().zip(&out) {
        assert_eq!(snapshot.lookup(*addr), *batch);
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&mode, body)) = data.split_first() else { return };
    let mut bytes = body.to_vec();
    if mode & 1 == 1 && bytes.len() >= 32 {
        bytes[24..32].fill(0);
        let checksum = crc32fast::hash(&bytes) as u64;
        bytes[24..32].copy_from_slice(&checksum.to_le_bytes());
    }
    if let Ok(image) = Image::from_bytes(&bytes) {
        match image.family() {
            Family::V4 => probe::<u32>(&image),
            Family::V6 => probe::<u128>(&image),
        }
    }
});
