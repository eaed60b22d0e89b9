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

use std::ffi::{c_int, CString};
use std::hint::black_box;
use std::time::Instant;

use fibkit::bench::{generate_keys, Pattern};
use fibkit::load::{load_table, LoadOptions};
use fibkit::{AnyFib, FamilyFib, Label, Lookup};

const KEYS: usize = 1 << 22;
const MIN_SECONDS: f64 = 0.5;

type KeyV4 = unsafe extern "C" fn(*const c_api::fibkit_fib, u32, *mut u32) -> c_int;
type ReaderKeyV4 = unsafe extern "C" fn(*mut c_api::fibkit_reader, u32, *mut u32) -> c_int;
type KeyV6 = unsafe extern "C" fn(*const c_api::fibkit_fib, *const [u8; 16], *mut u32) -> c_int;
type ReaderKeyV6 =
    unsafe extern "C" fn(*mut c_api::fibkit_reader, *const [u8; 16], *mut u32) -> c_int;

/// Lookups per second of `pass` (one pass over `keys` keys), run until
/// `MIN_SECONDS` have passed.
fn rate(keys: usize, mut pass: impl FnMut()) -> f64 {
    let start = Instant::now();
    let mut passes = 0u64;
    while start.elapsed().as_secs_f64() < MIN_SECONDS {
        pass();
        passes += 1;
    }
    (passes * keys as u64) as f64 / start.elapsed().as_secs_f64()
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

/// A C call's answer as an `Option<Label>`, without a branch on whether
/// a route was found (as a C caller selects its next hop): an error code
/// reads as "no route", and the comparison with the Rust answers catches
/// it.
#[inline(always)]
fn answer(code: c_int, label: u32) -> Option<Label> {
    (code == c_api::FIBKIT_OK).then_some(label)
}

/// The three ways of calling, timed in alternating rounds; prints Mlps and
/// each C way's median ratio to the Rust loop.
fn compare(
    label: &str,
    rounds: usize,
    mut rust: impl FnMut(&mut [Option<Label>]),
    mut handle: impl FnMut(&mut [Option<Label>]),
    mut reader: impl FnMut(&mut [Option<Label>]),
    keys: usize,
) {
    let mut expected = vec![None; keys];
    let mut got = vec![None; keys];
    let (mut r_rates, mut h_rates, mut c_rates) = (Vec::new(), Vec::new(), Vec::new());
    let (mut h_ratios, mut c_ratios) = (Vec::new(), Vec::new());
    for _ in 0..rounds {
        let r = rate(keys, || {
            rust(&mut expected);
            black_box(&expected);
        });
        let h = rate(keys, || {
            handle(&mut got);
            black_box(&got);
        });
        assert!(got == expected, "{label}: the handle's answers differ");
        let c = rate(keys, || {
            reader(&mut got);
            black_box(&got);
        });
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
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    println!(
        "{} on {table}, {KEYS} keys per pattern, {rounds} rounds; load average {}",
        spec.as_deref().unwrap_or("the default engine"),
        load.split_whitespace()
            .take(3)
            .collect::<Vec<_>>()
            .join(" ")
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
                    |out| {
                        for (key, out) in keys.iter().zip(out.iter_mut()) {
                            *out = snapshot.lookup(*key);
                        }
                    },
                    |out| {
                        for (key, out) in keys.iter().zip(out.iter_mut()) {
                            let mut label = 0;
                            // SAFETY: a live table and a valid output pointer.
                            *out = answer(unsafe { handle(c_fib, *key, &mut label) }, label);
                        }
                    },
                    |out| {
                        for (key, out) in keys.iter().zip(out.iter_mut()) {
                            let mut label = 0;
                            // SAFETY: a live reader and a valid output pointer.
                            *out = answer(unsafe { reader(c_reader, *key, &mut label) }, label);
                        }
                    },
                    KEYS,
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
                    |out| {
                        for (key, out) in keys.iter().zip(out.iter_mut()) {
                            *out = snapshot.lookup(*key);
                        }
                    },
                    |out| {
                        for (key, out) in bytes.iter().zip(out.iter_mut()) {
                            let mut label = 0;
                            // SAFETY: a live table and valid pointers.
                            *out = answer(unsafe { handle(c_fib, key, &mut label) }, label);
                        }
                    },
                    |out| {
                        for (key, out) in bytes.iter().zip(out.iter_mut()) {
                            let mut label = 0;
                            // SAFETY: a live reader and valid pointers.
                            *out = answer(unsafe { reader(c_reader, key, &mut label) }, label);
                        }
                    },
                    KEYS,
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
