//! `fibkit verify`: engines against the reference table on every range
//! boundary and random addresses, also while an update stream is replayed
//! onto them; or a saved image against the table.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{bail, Result};
use clap::Args;

use fibkit::image::Image;
use fibkit::load::{FamilyPart, Format};
use fibkit::registry::EngineFamily;
use fibkit::registry::ImageFamily;
use fibkit::{Change, Family, Fib, Rib};

use crate::args::parse_address_count;
use crate::engine::build_timed;
use crate::family::for_family;
use crate::output::{json_line, say};
use crate::specs::FamilySpecs;
use crate::table::{load_table, load_updates, TableArgs};

/// Arguments of `fibkit verify`.
#[derive(Args, Debug)]
pub struct VerifyArgs {
    #[command(flatten)]
    table: TableArgs,
    /// Engines to check (repeatable; `v4=SPEC` or `v6=SPEC` for one
    /// family; an engine of one family leaves the other to its default).
    #[arg(
        long = "engine",
        value_name = "SPEC",
        required_unless_present = "image"
    )]
    engines: Vec<String>,
    /// Check this saved image (`fibkit build`) against the table instead.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["engines", "updates"])]
    image: Option<PathBuf>,
    /// Random addresses checked besides the range boundaries (at most 2^28).
    #[arg(long, default_value_t = 1_000_000, value_parser = parse_address_count)]
    random: usize,
    /// Seed of the random addresses.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Replay this update stream (text, MRT BGP4MP or bgpdump -m) onto the table and
    /// each engine, verifying after every --check-every updates and at the end.
    #[arg(long, value_name = "FILE")]
    updates: Option<PathBuf>,
    /// Format of the --updates file instead of detecting it: updates, mrt,
    /// bgpdump.
    #[arg(long, value_name = "FORMAT", requires = "updates")]
    updates_format: Option<Format>,
    /// With --updates: verify after this many updates (0: only at the end).
    #[arg(long, default_value_t = 5000)]
    check_every: usize,
    /// JSON lines instead of text, told apart by `kind`: `check`
    /// (engine, family, when, checked, passed, failed, mismatches),
    /// `updates` (engine, family, updates, update_ms, rebuilds), and a
    /// last `total` (passed, failed).
    #[arg(long, conflicts_with = "image")]
    json: bool,
}

/// Runs `fibkit verify`: the engines, or with `--image` the image.
pub fn run(args: &VerifyArgs) -> Result<bool> {
    if let Some(image) = &args.image {
        return verify_image(&args.table, image, args.random, args.seed);
    }
    verify(
        &args.table,
        &args.engines,
        args.random,
        args.seed,
        args.updates
            .as_deref()
            .map(|path| (path, args.updates_format)),
        args.check_every,
        args.json,
    )
}

fn verify(
    args: &TableArgs,
    engines: &[String],
    random: usize,
    seed: u64,
    updates: Option<(&Path, Option<Format>)>,
    check_every: usize,
    json: bool,
) -> Result<bool> {
    let (table, _) = load_table(args)?;
    let updates = match updates {
        Some((path, format)) => {
            Some(load_updates(args, path, format, &table.nexthops)?.changes_by_family())
        }
        None => None,
    };
    let (mut passed, mut failed) = (0u64, 0u64);
    // A family only the update stream has still needs an engine.
    let has_v4 = !table.v4.is_empty() || updates.as_ref().is_some_and(|(v4, _)| !v4.is_empty());
    let has_v6 = !table.v6.is_empty() || updates.as_ref().is_some_and(|(_, v6)| !v6.is_empty());
    let specs = FamilySpecs::resolve(engines, has_v4, has_v6)?;
    for spec in &specs.v4 {
        let (p, f) = verify_family(
            spec,
            &table.v4,
            random,
            seed,
            updates.as_ref().map(|(v4, _)| &v4[..]),
            check_every,
            json,
        )
        .map_err(|error| specs.explain(Family::V4, error))?;
        passed += p;
        failed += f;
    }
    for spec in &specs.v6 {
        let (p, f) = verify_family(
            spec,
            &table.v6,
            random,
            seed,
            updates.as_ref().map(|(_, v6)| &v6[..]),
            check_every,
            json,
        )
        .map_err(|error| specs.explain(Family::V6, error))?;
        passed += p;
        failed += f;
    }
    if json {
        json_line(&serde_json::json!({"kind": "total", "passed": passed, "failed": failed}))?;
    } else {
        say!("{passed} passed, {failed} failed");
    }
    Ok(failed == 0)
}

fn verify_family<A: EngineFamily>(
    spec: &str,
    rib: &Rib<A>,
    random: usize,
    seed: u64,
    changes: Option<&[Change<A>]>,
    check_every: usize,
    json: bool,
) -> Result<(u64, u64)> {
    if rib.is_empty() && changes.is_none_or(|c| c.is_empty()) {
        return Ok((0, 0));
    }
    let built = match build_timed(spec, rib) {
        Ok(built) => built,
        // The table has none of this family's prefixes, only the stream
        // does: a spec written for the other family skips them.
        Err(error) if rib.is_empty() => {
            eprintln!(
                "fibkit: {spec}: the stream's {} {} changes are not replayed: {error}",
                changes.map_or(0, <[_]>::len),
                A::FAMILY
            );
            return Ok((0, 0));
        }
        Err(error) => return Err(error.into()),
    };
    let name = built.spec.clone();
    let check = |engine: &A::Snapshot, rib: &Rib<A>, when: &str| -> Result<(u64, u64)> {
        let report = fibkit::verify::verify(engine, rib, random, seed);
        if json {
            let mismatches: Vec<String> =
                report.mismatches.iter().map(ToString::to_string).collect();
            json_line(&serde_json::json!({
                "kind": "check",
                "engine": name,
                "family": A::FAMILY.to_string(),
                "when": when,
                "checked": report.checked,
                "passed": report.passed,
                "failed": report.failed,
                "mismatches": mismatches,
            }))?;
            return Ok((report.passed, report.failed));
        }
        say!(
            "{} {} {}: {} addresses, {} passed, {} failed",
            name,
            A::FAMILY,
            when,
            report.checked,
            report.passed,
            report.failed
        );
        for mismatch in &report.mismatches {
            say!("  mismatch {mismatch}");
        }
        Ok((report.passed, report.failed))
    };
    let (mut passed, mut failed) = check(
        &built.snapshot,
        rib,
        &format!("(built in {:.1} ms)", built.seconds * 1e3),
    )?;
    if let Some(changes) = changes {
        let fib = Fib::<A>::new(&built.spec, rib.clone())?;
        let step = if check_every == 0 {
            changes.len().max(1)
        } else {
            check_every
        };
        let mut update_seconds = 0.0;
        let mut rebuilt = 0;
        for (index, chunk) in changes.chunks(step).enumerate() {
            let start = Instant::now();
            let summary = fib.apply(chunk)?;
            update_seconds += start.elapsed().as_secs_f64();
            rebuilt += summary.rebuilt.is_some() as usize;
            let done = (index * step + chunk.len()).min(changes.len());
            let (p, f) = fib.with_rib(|rib| {
                check(
                    &fib.snapshot(),
                    rib,
                    &format!("after {done} of {} updates", changes.len()),
                )
            })?;
            passed += p;
            failed += f;
        }
        if json {
            json_line(&serde_json::json!({
                "kind": "updates",
                "engine": name,
                "family": A::FAMILY.to_string(),
                "updates": changes.len(),
                "update_ms": update_seconds * 1e3,
                "rebuilds": rebuilt,
            }))?;
            return Ok((passed, failed));
        }
        say!(
            "{} {}: {} updates applied in {:.1} ms ({:.2} us each{})",
            name,
            A::FAMILY,
            changes.len(),
            update_seconds * 1e3,
            update_seconds * 1e6 / changes.len().max(1) as f64,
            if rebuilt > 0 {
                format!(", {rebuilt} full rebuilds")
            } else {
                String::new()
            }
        );
    }
    Ok((passed, failed))
}

/// `fibkit verify TABLE --image IMAGE`: the image against the table's
/// prefixes of the image's family.
fn verify_image(args: &TableArgs, path: &Path, random: usize, seed: u64) -> Result<bool> {
    let image = Image::open(path)?;
    let (table, _) = load_table(args)?;
    for_family!(image.family(), A => verify_image_family::<A>(&image, &table, random, seed))
}

fn verify_image_family<A: ImageFamily + FamilyPart>(
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
    let report = fibkit::verify::verify(&snapshot, rib, random, seed);
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
