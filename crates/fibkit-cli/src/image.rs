//! Saved images from the command line: `fibkit build` writes one,
//! `fibkit lookup IMAGE ADDR...` answers from it, `fibkit verify TABLE
//! --image IMAGE` checks it against a table.

use std::io::{BufRead, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{bail, Context, Result};
use clap::Args;

use fibkit::image::Image;
use fibkit::load::FamilyPart;
use fibkit::registry::{save_image, ImageFamily};
use fibkit::Lookup;

use crate::family::for_family;
use crate::TableArgs;

/// Arguments of `fibkit build`.
#[derive(Args, Debug)]
pub struct BuildArgs {
    #[command(flatten)]
    table: TableArgs,
    /// The engine to build and save: dir24-8, dxr, dxr6, cpe (any variant),
    /// lctrie, levels or poptrie.
    #[arg(long = "engine", value_name = "SPEC", default_value = "dir24-8")]
    engine: String,
    /// The image file to write.
    #[arg(short, long, value_name = "FILE")]
    output: PathBuf,
    /// Family to save: v4 or v6 (default: v4 if the table has IPv4 prefixes).
    #[arg(long, value_parser = ["v4", "v6"])]
    family: Option<String>,
}

pub fn build(args: &BuildArgs) -> Result<bool> {
    let (table, _) = crate::commands::load_table(&args.table)?;
    let family = crate::family::chosen(args.family.as_deref(), !table.v4.is_empty());
    let started = Instant::now();
    for_family!(family, A => save_image(&args.engine, A::rib(&table), &args.output))?;
    let bytes = std::fs::metadata(&args.output)
        .map(|m| m.len())
        .unwrap_or(0);
    writeln!(
        std::io::stdout(),
        "wrote {} ({} bytes, {}, built and written in {:.1} ms)",
        args.output.display(),
        bytes,
        family,
        started.elapsed().as_secs_f64() * 1e3
    )?;
    Ok(true)
}

/// Whether `path` starts with an image's magic bytes.
pub fn is_image(path: &Path) -> bool {
    let mut magic = [0u8; 8];
    std::fs::File::open(path)
        .and_then(|mut file| std::io::Read::read_exact(&mut file, &mut magic))
        .is_ok()
        && &magic == fibkit::image::MAGIC
}

/// `fibkit lookup IMAGE [ADDR...]`: answers from the image. An image holds
/// no reference table, so the matched prefix is printed as `?`.
pub fn lookup(path: &Path, addrs: &[String]) -> Result<bool> {
    let image = Image::open(path)?;
    for_family!(image.family(), A => lookup_family::<A>(&image, addrs))
}

fn lookup_family<A: ImageFamily>(image: &Image, addrs: &[String]) -> Result<bool> {
    let snapshot = A::open_image(image)?;
    let mut out = BufWriter::new(std::io::stdout().lock());
    let mut all_good = true;
    let mut answer = |line: u64, text: &str, out: &mut dyn Write| -> Result<()> {
        match A::parse_addr(text) {
            Some(addr) => match snapshot.lookup(addr) {
                Some(label) => writeln!(out, "{} ? {label}", addr.display())?,
                None => writeln!(out, "{} - none", addr.display())?,
            },
            None => {
                eprintln!(
                    "fibkit: input:{line}: `{text}` is not an {} address (the image is {})",
                    A::FAMILY,
                    A::FAMILY
                );
                all_good = false;
            }
        }
        Ok(())
    };
    if addrs.is_empty() {
        for (index, line) in std::io::stdin().lock().lines().enumerate() {
            let line = line.context("reading standard input")?;
            let text = line.trim();
            if !text.is_empty() && !text.starts_with('#') {
                answer(index as u64 + 1, text, &mut out)?;
            }
        }
    } else {
        for (index, text) in addrs.iter().enumerate() {
            answer(index as u64 + 1, text, &mut out)?;
        }
    }
    out.flush()?;
    Ok(all_good)
}

/// `fibkit verify TABLE --image IMAGE`: the image against the table's
/// prefixes of the image's family.
pub fn verify(args: &TableArgs, path: &Path, random: usize, seed: u64) -> Result<bool> {
    let image = Image::open(path)?;
    let (table, _) = crate::commands::load_table(args)?;
    for_family!(image.family(), A => verify_family::<A>(&image, &table, random, seed))
}

fn verify_family<A: ImageFamily + FamilyPart>(
    image: &Image,
    table: &fibkit::load::LoadedTable,
    random: usize,
    seed: u64,
) -> Result<bool> {
    let rib = A::rib(table);
    if rib.is_empty() {
        bail!(
            "the table has no {} prefixes to check the {} image against",
            A::FAMILY,
            A::FAMILY
        );
    }
    let started = Instant::now();
    let snapshot = A::open_image(image)?;
    let opened = started.elapsed();
    let report = fibkit::verify(&snapshot, rib, random, seed);
    let mut out = std::io::stdout().lock();
    writeln!(
        out,
        "{} image {} {} (opened in {:.2} ms): {} addresses, {} passed, {} failed",
        image.spec(),
        image.path().display(),
        A::FAMILY,
        opened.as_secs_f64() * 1e3,
        report.checked,
        report.passed,
        report.failed
    )?;
    for mismatch in &report.mismatches {
        writeln!(out, "  mismatch {mismatch}")?;
    }
    Ok(report.ok())
}
