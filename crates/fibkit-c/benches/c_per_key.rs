//! What one key per call costs through the C API: `fibkit_lookup_v4` /
//! `fibkit_lookup_v6` on the shared table handle and
//! `fibkit_reader_lookup_v4` / `_v6` on a per-thread reader (both called
//! through function pointers, as a C program calls them: no inlining into
//! the loop), against the Rust snapshot's `lookup` in a loop, on the same
//! keys and table, in one process, alternating so each ratio pairs
//! adjacent measurements.
//!
//! ```text
//! cargo bench -p fibkit-c --bench c_per_key -- [TABLE] [SPEC] [ROUNDS] [PATTERN]
//! ```
//!
//! Defaults: the shared `dfz-v4-nh` table, the family's default engine
//! (`-` for SPEC names it too), 7 rounds, `rnd` keys (`announced` and `rnd-public` for IPv6).
//! Every answer of each C call is compared with the Rust one.

// The C library's source, compiled into this benchmark: its entry points
// are the ones a C program links.
#[allow(dead_code, unused_imports, clippy::all, missing_docs)]
#[path = "../src/lib.rs"]
mod c_api;
mod common;

use std::ffi::{c_int, CString};
use std::hint::black_box;

use common::{load_average, median, rate};
use fibkit::any::FamilyFib;
use fibkit::load::{load_table, LoadOptions};
use fibkit::{AnyFib, Label, Lookup};
use fibkit_bench::{generate_keys, Pattern};

const KEYS: usize = 1 << 22;

type KeyV4 = unsafe extern "C" fn(*const c_api::fibkit_fib, u32, *mut u32) -> c_int;
type ReaderKeyV4 = unsafe extern "C" fn(*mut c_api::fibkit_reader, u32, *mut u32) -> c_int;
type KeyV6 = unsafe extern "C" fn(*const c_api::fibkit_fib, *const [u8; 16], *mut u32) -> c_int;
type ReaderKeyV6 =
    unsafe extern "C" fn(*mut c_api::fibkit_reader, *const [u8; 16], *mut u32) -> c_int;

/// The answer of a C call `call(label)` as an `Option<Label>`, without a
/// branch on whether a route was found (as a C caller selects its next
/// hop): an error code reads as "no route", and the comparison with the
/// Rust answers catches it.
#[inline(always)]
fn with_label(call: impl FnOnce(*mut u32) -> c_int) -> Option<Label> {
    let mut label = 0;
    let code = call(&mut label);
    (code == c_api::FIBKIT_OK).then_some(label)
}

/// One pass of `lookup` over every key into `out`, inlined into each
/// caller's loop (a `dyn` closure would add a call per key to the Rust
/// loop, which must stay inlined).
#[inline(always)]
fn pass(lookup: &impl Fn(usize) -> Option<Label>, out: &mut [Option<Label>]) {
    for (i, out) in out.iter_mut().enumerate() {
        *out = lookup(i);
    }
    black_box(out);
}

/// The three ways of calling, each a function of a key's index, timed in
/// alternating rounds over `keys` keys; prints Mlps and each C way's
/// median ratio to the Rust loop.
fn compare(
    label: &str,
    rounds: usize,
    keys: usize,
    rust: impl Fn(usize) -> Option<Label>,
    handle: impl Fn(usize) -> Option<Label>,
    reader: impl Fn(usize) -> Option<Label>,
) {
    let mut expected = vec![None; keys];
    let mut got = vec![None; keys];
    let (mut r_rates, mut h_rates, mut c_rates) = (Vec::new(), Vec::new(), Vec::new());
    let (mut h_ratios, mut c_ratios) = (Vec::new(), Vec::new());
    for _ in 0..rounds {
        let r = rate(keys, || pass(&rust, &mut expected));
        let h = rate(keys, || pass(&handle, &mut got));
        assert!(got == expected, "{label}: the handle's answers differ");
        let c = rate(keys, || pass(&reader, &mut got));
        assert!(got == expected, "{label}: the reader's answers differ");
        r_rates.push(r / 1e6);
        h_rates.push(h / 1e6);
        c_rates.push(c / 1e6);
        h_ratios.push(h / r);
        c_ratios.push(c / r);
    }
    println!(
        "{label:<24} Rust lookup {:7.1} Mlps | C fib handle {:7.1} Mlps ({:.3}x) | C reader {:7.1} Mlps ({:.3}x)",
        median(r_rates),
        median(h_rates),
        median(h_ratios),
        median(c_rates),
        median(c_ratios),
    );
}

fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| a != "--bench")
        .collect();
    let table = args.first().cloned().unwrap_or_else(|| {
        concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../../shared/data/dfz-v4-nh.txt.gz"
        )
        .to_string()
    });
    let spec = args.get(1).cloned().filter(|s| s != "-");
    let rounds: usize = args.get(2).and_then(|r| r.parse().ok()).unwrap_or(7);

    let loaded =
        load_table(std::path::Path::new(&table), &LoadOptions::default()).expect("the table loads");
    let family = if loaded.v4.is_empty() { 6 } else { 4 };
    let patterns: Vec<String> = match args.get(3) {
        Some(p) => p.split(',').map(str::to_string).collect(),
        None if family == 4 => vec!["rnd".into()],
        None => vec!["announced".into(), "rnd-public".into()],
    };

    let path = CString::new(table.clone()).expect("a path without NUL");
    let mut c_table = std::ptr::null_mut();
    let mut c_fib = std::ptr::null_mut();
    let spec_c = spec
        .as_ref()
        .map(|s| CString::new(s.clone()).expect("a spec without NUL"));
    // SAFETY: valid C strings and output pointers; the objects are freed below.
    unsafe {
        assert_eq!(c_api::fibkit_table_load(path.as_ptr(), &mut c_table), 0);
        let spec_ptr = spec_c.as_ref().map_or(std::ptr::null(), |s| s.as_ptr());
        assert_eq!(
            c_api::fibkit_fib_build(c_table, family, spec_ptr, &mut c_fib),
            0
        );
        c_api::fibkit_table_free(c_table);
    }
    let mut c_reader = std::ptr::null_mut();
    // SAFETY: a live table and a valid output pointer; freed below.
    unsafe { assert_eq!(c_api::fibkit_reader_new(c_fib, &mut c_reader), 0) };
    let rust = AnyFib::build(&loaded, None, spec.as_deref()).expect("the engine builds");
    println!(
        "{} on {table}, {KEYS} keys per pattern, {rounds} rounds; load average {}",
        spec.as_deref().unwrap_or("the default engine"),
        load_average()
    );
    for name in &patterns {
        let pattern: Pattern = name.parse().expect("a key pattern");
        match &rust {
            AnyFib::V4(FamilyFib::Live(fib)) => {
                let keys: Vec<u32> = generate_keys(&pattern, KEYS, 1, &loaded.v4).expect("keys");
                let snapshot = fib.snapshot();
                let handle: KeyV4 = black_box(c_api::fibkit_lookup_v4);
                let reader: ReaderKeyV4 = black_box(c_api::fibkit_reader_lookup_v4);
                compare(
                    &format!("IPv4 {name}"),
                    rounds,
                    KEYS,
                    |i| snapshot.lookup(keys[i]),
                    // SAFETY (both C calls): a live table or reader, and a
                    // valid output pointer.
                    |i| with_label(|label| unsafe { handle(c_fib, keys[i], label) }),
                    |i| with_label(|label| unsafe { reader(c_reader, keys[i], label) }),
                );
            }
            AnyFib::V6(FamilyFib::Live(fib)) => {
                let keys: Vec<u128> = generate_keys(&pattern, KEYS, 1, &loaded.v6).expect("keys");
                let bytes: Vec<[u8; 16]> = keys.iter().map(|k| k.to_be_bytes()).collect();
                let snapshot = fib.snapshot();
                let handle: KeyV6 = black_box(c_api::fibkit_lookup_v6);
                let reader: ReaderKeyV6 = black_box(c_api::fibkit_reader_lookup_v6);
                compare(
                    &format!("IPv6 {name}"),
                    rounds,
                    KEYS,
                    |i| snapshot.lookup(keys[i]),
                    // SAFETY (both C calls): a live table or reader, and
                    // valid pointers.
                    |i| with_label(|label| unsafe { handle(c_fib, &bytes[i], label) }),
                    |i| with_label(|label| unsafe { reader(c_reader, &bytes[i], label) }),
                );
            }
            _ => unreachable!("built, not opened"),
        }
    }
    // SAFETY: built above, not used afterwards.
    unsafe {
        c_api::fibkit_reader_free(c_reader);
        c_api::fibkit_fib_free(c_fib);
    }
}
