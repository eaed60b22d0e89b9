//! Engines in their non-default layouts (strides, roots, search modes,
//! levels), built from a fuzzer-chosen table, must agree with the
//! reference trie on every range boundary and on random addresses, and
//! stay in agreement after a fuzzer-chosen batch of changes. The second
//! byte picks the spec, so each input exercises one layout.
#![no_main]

mod common;

use fibkit::registry::{EngineFamily, ENGINES};
use fibkit::Family;
use libfuzzer_sys::fuzz_target;

/// The layouts every engine of `family` lists for the fuzz targets
/// (`EngineConfig::MORE_LAYOUTS`: layouts other than the defaults, without
/// those that fill 64 MiB per build and would starve the others).
fn specs(family: Family) -> Vec<&'static str> {
    ENGINES
        .iter()
        .flat_map(|info| info.more_layouts)
        .filter(|layout| layout.supports(family))
        .map(|layout| layout.spec)
        .collect()
}

/// `spec` on the table and batch of `data`. A layout limit (`bspl:levels=3`
/// on IPv6 prefixes of too many lengths) is the documented error, not a
/// finding; any other error is.
fn check<A: EngineFamily>(spec: &str, data: &[u8], width: usize) {
    let (rib, changes) = common::table_and_changes::<A>(data, width);
    common::check_spec(spec, &rib, &changes, true);
}

fuzz_target!(|data: &[u8]| {
    let [family, choice, body @ ..] = data else { return };
    if family & 1 == 0 {
        let specs = specs(Family::V4);
        check::<u32>(specs[*choice as usize % specs.len()], body, 4);
    } else {
        let specs = specs(Family::V6);
        check::<u128>(specs[*choice as usize % specs.len()], body, 16);
    }
});
