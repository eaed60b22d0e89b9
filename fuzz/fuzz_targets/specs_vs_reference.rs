//! Engines in their non-default layouts (strides, roots, search modes,
//! levels), built from a fuzzer-chosen table, must agree with the
//! reference trie on every range boundary and on random addresses, and
//! stay in agreement after a fuzzer-chosen batch of changes. The second
//! byte picks the spec, so each input exercises one layout.
#![no_main]

mod common;

use fibkit::registry::EngineFamily;
use libfuzzer_sys::fuzz_target;

/// IPv4 layouts other than the defaults (dir24-8 and `dxr:k=24` fill
/// 64 MiB per build and would starve the others).
const SPECS_V4: &[&str] = &[
    "cpe:levels=2",
    "cpe:levels=6,packed",
    "cpe:levels=5,nopush",
    "cpe:strides=8+8+8+8",
    "dxr:k=16",
    "dxr:k=18",
    "dxr:d=14,x=6",
    "btree:k=16",
    "poptrie:s=8",
    "poptrie:s=18,d=5",
    "poptrie:s=13,d=10",
    "levels:strides=4+4",
    "levels:strides=12+12",
    "bloom:fill=50",
    "bloom:search=linear",
    "bspl:levels=2",
    "bspl:levels=5",
    "bspl:lengths=16+24+32",
    "bspl:first=8,levels=6",
    "bspl:hybrid",
    "lctrie:lookup=classic",
];

/// IPv6 layouts other than the defaults.
const SPECS_V6: &[&str] = &[
    "cpe:levels=6",
    "cpe:levels=8,packed",
    "cpe:levels=16,nopush",
    "cpe:levels=6,fixed",
    "dxr6:k=12",
    "dxr6:k=16,density=4",
    "dxr6:k=20,stride=2",
    "dxr6:k=8,stride=3,align=8",
    "btree:k=12",
    "poptrie:s=8,d=5",
    "poptrie:s=13,d=10",
    "levels:strides=8+8",
    "bloom:fill=50",
    "bloom:search=linear,k=2",
    "bspl:levels=3",
    "bspl:levels=8",
    "bspl:first=12",
    "bspl:lengths=16+32+48+64+128",
    "bspl:hybrid,first=16",
    "lctrie:lookup=classic",
];

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
        check::<u32>(SPECS_V4[*choice as usize % SPECS_V4.len()], body, 4);
    } else {
        check::<u128>(SPECS_V6[*choice as usize % SPECS_V6.len()], body, 16);
    }
});
