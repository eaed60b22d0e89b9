//! The engine a table gets when the caller names none.

use crate::addr::Family;

/// The engine spec to use for `family` when none is given: the fastest
/// engine on this CPU that verifies on every shared table and updates in
/// place.
///
/// - IPv4: `dxr` (`dxr:k=20`): one direct-table load and a windowed range
///   search in a chunk, ahead of `dir24-8` in lookups at a fraction of its
///   memory (docs/BENCHMARKS.md).
/// - IPv6, where the CPU has AVX-512 F and VPOPCNTDQ: `poptrie`
///   (`poptrie:s=18`, 32-entry tables under its chunks on IPv6), whose
///   batch walks eight keys per vector: 1.9x `dxr6` in whole batches and
///   bursts of 32 on keys inside announced prefixes and 1.4x on random
///   public keys, 0.9–1.0x per key and in bursts of 8 on announced keys;
///   17 bytes per prefix on the DFZ table, patched in place.
/// - IPv6 elsewhere: `dxr6` (`dxr6:k=16,stride=16,density=2`): DXR for
///   128-bit keys, whose AVX2 walk and portable batch beat `poptrie`'s
///   per-key loop there; about 10 bytes per prefix, built in about 20 ms
///   (docs/bench/dxr6.md, "IPv6: dxr6").
pub fn default_spec(family: Family) -> &'static str {
    match family {
        Family::V4 => "dxr",
        Family::V6 if crate::engines::poptrie::wide_available() => "poptrie",
        Family::V6 => "dxr6",
    }
}
