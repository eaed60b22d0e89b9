//! Save a built engine as an image file, then open it memory-mapped and
//! look up in place: a process that starts from an image answers at once,
//! without loading the table or building the engine.
//!
//! ```text
//! cargo run --release -p fibkit --example image -- [TABLE]
//! ```
//!
//! TABLE defaults to ../shared/data/dfz-v4-nh.txt.gz. The image is written
//! to the system's temporary directory and removed at the end. `fibkit
//! build TABLE --engine SPEC --out FILE` writes the same images.

use std::path::PathBuf;
use std::time::Instant;

use fibkit::any::FamilyFib;
use fibkit::image::Image;
use fibkit::load::{load_table, LoadOptions};
use fibkit::registry::save_image;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let path = std::env::args_os().nth(1).map_or_else(
        || PathBuf::from("../shared/data/dfz-v4-nh.txt.gz"),
        PathBuf::from,
    );
    let rib = load_table(&path, &LoadOptions::default())?.v4;
    println!("{}: {} IPv4 prefixes", path.display(), rib.len());

    // Build the engine once, as a program that keeps its table in memory.
    let spec = "dxr";
    let started = Instant::now();
    let built = fibkit::build::<u32>(spec, &rib)?;
    println!("built {spec} in {:.2?}", started.elapsed());

    // Save it. Not every engine can be saved (those whose layout holds
    // pointers cannot); `save_image` says so with an error.
    let file = std::env::temp_dir().join(format!("fibkit-example-{}.fki", std::process::id()));
    save_image::<u32>(spec, &rib, &file)?;
    let bytes = std::fs::metadata(&file)?.len();
    println!(
        "saved {} ({:.1} MiB)",
        file.display(),
        bytes as f64 / (1 << 20) as f64
    );

    // Open it: the file is mapped, its checksums and bounds checked, and
    // lookups read the mapped bytes in place (no copy, no build).
    let started = Instant::now();
    let image = Image::open(&file)?;
    println!("image: {} engine `{}`", image.family(), image.spec());
    let opened = FamilyFib::<u32>::open(image)?;
    println!("opened in {:.2?}", started.elapsed());

    // The image answers as the engine it was saved from, and both as the
    // reference table, at the first and last address of each of the
    // table's ranges (where answers change).
    let ranges = rib.ranges();
    let addrs: Vec<u32> = ranges.iter().flat_map(|r| [r.first, r.last]).collect();
    let expected: Vec<_> = ranges.iter().flat_map(|r| [r.label, r.label]).collect();
    let mut from_image = vec![None; addrs.len()];
    let mut from_built = vec![None; addrs.len()];
    opened.lookup_batch(&addrs, &mut from_image);
    built.lookup_batch(&addrs, &mut from_built);
    assert_eq!(
        from_built, expected,
        "the engine answers as the reference table"
    );
    assert_eq!(
        from_image, from_built,
        "the image answers as the engine it was saved from"
    );
    println!(
        "image, built engine and reference table agree on {} addresses",
        addrs.len()
    );
    for addr in ["8.8.8.8", "1.1.1.1"] {
        let key = u32::from(addr.parse::<std::net::Ipv4Addr>()?);
        match opened.lookup(key) {
            Some(label) => println!("  {addr:<8} next hop {label}"),
            None => println!("  {addr:<8} no route"),
        }
    }

    // The mapping lives as long as `opened`; drop it before the file.
    drop(opened);
    std::fs::remove_file(&file)?;
    Ok(())
}
