//! `cpe` engine tests: the full variant matrix on the shared tables, the
//! stride programs against brute force, and update replay.

mod common;

use std::time::Instant;

use common::*;
use fibkit::{build, verify, EngineFamily, Rib};

/// Builds `spec` and verifies it; `Err` carries the build error text.
fn check<A: EngineFamily>(spec: &str, rib: &Rib<A>, random: usize) -> Result<usize, String> {
    let started = Instant::now();
    let engine = build(spec, rib).map_err(|e| e.to_string())?;
    let built = started.elapsed();
    let report = verify(engine.as_ref(), rib, random, 0x5eed);
    eprintln!(
        "{spec}: {} KB, build {:.2?}, verify {:.2?}, {} checked",
        engine.memory_bytes() / 1024,
        built,
        started.elapsed() - built,
        report.checked
    );
    assert!(
        report.ok(),
        "{spec}: {} failed: {:?}",
        report.failed,
        report
            .mismatches
            .iter()
            .map(|m| m.to_string())
            .collect::<Vec<_>>()
    );
    Ok(engine.memory_bytes())
}

const VARIANTS: &[&str] = &["", ",fixed", ",nopush", ",packed"];

#[test]
fn dfz_v4_nh_matrix() {
    let rib = &shared_table("dfz-v4-nh.txt.gz").v4;
    for levels in [2, 3, 4, 6] {
        for variant in VARIANTS {
            check(&format!("cpe:levels={levels}{variant}"), rib, 20_000).unwrap();
        }
    }
}
