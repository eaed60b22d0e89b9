//! What the C boundary costs: `fibkit_lookup_v4_bulk` (called through a
//! function pointer, as a C program calls it: no inlining into the loop)
//! against the engine's own Rust `lookup_batch`, on the same keys and
//! table, in one process, alternating A, B, A, B, ... so each ratio pairs
//! adjacent measurements (neighbours on a shared machine move single runs
//! by up to 2x).
//!
//! ```text
//! cargo bench -p fibkit-c --bench c_vs_rust -- [TABLE] [SPEC] [ROUNDS]
//! ```
//!
//! Defaults: `../shared/data/dfz-v4-nh.txt.gz`, `dxr`, 7 rounds. On a
//! table of IPv6 prefixes only (`dfz-v6-nh`, spec `poptrie`, `dxr6`) it
//! measures `fibkit_lookup_v6_bulk` on network-order keys instead (see
//! [`ipv6`]). Bursts of
//! 32 keys (what a datapath passes, as DPDK's l3fwd does) and one call over
//! the whole key array are measured, and the same bulk call through a
//! per-thread reader (`fibkit_reader_lookup_v4_bulk`, no snapshot guard
//! per call). A fourth contender, `lookup_slice`,
//! is the path the C bulk call took before the engines wrote its words
//! themselves (the engine's `lookup_batch` on chunks of 8192 keys into a
//! buffer, then a pass converting each chunk to words): the reference for
//! what that change gained.

// The C library's source, compiled into this benchmark: its entry points
// are the ones a C program links.
#[allow(dead_code, unused_imports, clippy::all, missing_docs)]
#[path = "../src/lib.rs"]
mod c_api;
mod common;

use std::ffi::{c_int, CString};
use std::hint::black_box;

use common::{load_average, median, rate};
use fibkit::load::{load_table, LoadOptions};
use fibkit::{AnyFib, Label, Lookup};
use fibkit_bench::{generate_keys, Pattern};

type Bulk = unsafe extern "C" fn(*const c_api::fibkit_fib, *const u32, *mut u64, usize) -> c_int;
type ReaderBulk =
    unsafe extern "C" fn(*mut c_api::fibkit_reader, *const u32, *mut u64, usize) -> c_int;

const KEYS: usize = 1 << 22;
fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| a != "--bench")
        .collect();
    let table = args
        .first()
        .cloned()
        .unwrap_or_else(|| "../shared/data/dfz-v4-nh.txt.gz".to_string());
    let spec = args.get(1).cloned().unwrap_or_else(|| "dxr".to_string());
    let rounds: usize = args.get(2).and_then(|r| r.parse().ok()).unwrap_or(7);

    let loaded =
        load_table(std::path::Path::new(&table), &LoadOptions::default()).expect("the table loads");
    if loaded.v4.is_empty() && !loaded.v6.is_empty() {
        ipv6(&loaded, &table, &spec, rounds);
        return;
    }
    let keys: Vec<u32> = generate_keys(&Pattern::Rnd, KEYS, 1, &loaded.v4).expect("keys");

    let path = CString::new(table.clone()).expect("a path without NUL");
    let spec_c = CString::new(spec.clone()).expect("a spec without NUL");
    let mut c_table = std::ptr::null_mut();
    let mut c_fib = std::ptr::null_mut();
    // SAFETY: valid C strings and output pointers; the objects are freed below.
    unsafe {
        assert_eq!(c_api::fibkit_table_load(path.as_ptr(), &mut c_table), 0);
        assert_eq!(
            c_api::fibkit_fib_build(c_table, 4, spec_c.as_ptr(), &mut c_fib),
            0
        );
        c_api::fibkit_table_free(c_table);
    }
    let bulk: Bulk = black_box(c_api::fibkit_lookup_v4_bulk);
    let reader_bulk: ReaderBulk = black_box(c_api::fibkit_reader_lookup_v4_bulk);
    let mut c_reader = std::ptr::null_mut();
    // SAFETY: a live table and a valid output pointer; freed below.
    unsafe { assert_eq!(c_api::fibkit_reader_new(c_fib, &mut c_reader), 0) };

    let rust = AnyFib::build(&loaded, None, Some(&spec)).expect("the engine builds");
    let AnyFib::V4(rust) = rust else {
        unreachable!("an IPv4 table")
    };
    let fibkit::any::FamilyFib::Live(fib) = &rust else {
        unreachable!("built, not opened")
    };
    let snapshot = fib.snapshot();

    let mut c_results = vec![0u64; KEYS];
    let mut reader_results = vec![0u64; KEYS];
    let mut iter_results = vec![0u64; KEYS];
    let mut rust_results: Vec<Option<Label>> = vec![None; KEYS];
    println!(
        "{spec} on {table}, {KEYS} rnd keys, {rounds} rounds; load average {}",
        load_average()
    );
    for burst in [32, KEYS] {
        let (mut c_rates, mut rust_rates, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
        let (mut iter_rates, mut iter_ratios) = (Vec::new(), Vec::new());
        let (mut reader_rates, mut reader_ratios) = (Vec::new(), Vec::new());
        for _ in 0..rounds {
            let c = rate(KEYS, || {
                for (keys, out) in keys.chunks(burst).zip(c_results.chunks_mut(burst)) {
                    // SAFETY: `keys` and `out` have `keys.len()` elements.
                    unsafe { bulk(c_fib, keys.as_ptr(), out.as_mut_ptr(), keys.len()) };
                }
                black_box(&c_results);
            });
            let r = rate(KEYS, || {
                for (keys, out) in keys.chunks(burst).zip(rust_results.chunks_mut(burst)) {
                    snapshot.lookup_batch(keys, out);
                }
                black_box(&rust_results);
            });
            let i = rate(KEYS, || {
                for (keys, out) in keys.chunks(burst).zip(iter_results.chunks_mut(burst)) {
                    rust.lookup_slice(keys, |start, found| {
                        for (result, label) in out[start..].iter_mut().zip(found) {
                            *result = label.map_or(u64::MAX, u64::from);
                        }
                    });
                }
                black_box(&iter_results);
            });
            let cr = rate(KEYS, || {
                for (keys, out) in keys.chunks(burst).zip(reader_results.chunks_mut(burst)) {
                    // SAFETY: `keys` and `out` have `keys.len()` elements.
                    unsafe { reader_bulk(c_reader, keys.as_ptr(), out.as_mut_ptr(), keys.len()) };
                }
                black_box(&reader_results);
            });
            reader_rates.push(cr / 1e6);
            reader_ratios.push(cr / r);
            c_rates.push(c / 1e6);
            rust_rates.push(r / 1e6);
            ratios.push(c / r);
            iter_rates.push(i / 1e6);
            iter_ratios.push(i / r);
        }
        println!(
            "burst {burst:>8}: C bulk {:7.1} Mlps, Rust lookup_batch {:7.1} Mlps (medians); \
             C/Rust per adjacent pair: median {:.3}, min {:.3}, max {:.3}",
            median(c_rates),
            median(rust_rates),
            median(ratios.clone()),
            ratios.iter().copied().fold(f64::INFINITY, f64::min),
            ratios.iter().copied().fold(0.0, f64::max),
        );
        println!(
            "{:>15} C reader bulk {:7.1} Mlps (median); C reader/Rust per adjacent pair: median {:.3}, min {:.3}, max {:.3}",
            "",
            median(reader_rates),
            median(reader_ratios.clone()),
            reader_ratios.iter().copied().fold(f64::INFINITY, f64::min),
            reader_ratios.iter().copied().fold(0.0, f64::max),
        );
        println!(
            "{:>15} lookup_slice {:7.1} Mlps (median); lookup_slice/Rust per adjacent pair: median {:.3}",
            "",
            median(iter_rates),
            median(iter_ratios),
        );
    }
    let disagree = c_results
        .iter()
        .zip(&rust_results)
        .filter(|(c, r)| **c != r.map_or(u64::MAX, u64::from))
        .count();
    let reader_disagree = reader_results
        .iter()
        .zip(&c_results)
        .filter(|(a, b)| a != b)
        .count();
    println!("results disagree on {disagree} of {KEYS} keys; the reader's on {reader_disagree}");
    // SAFETY: built above, not used afterwards.
    unsafe {
        c_api::fibkit_reader_free(c_reader);
        c_api::fibkit_fib_free(c_fib);
    }
}

type V6Bulk =
    unsafe extern "C" fn(*const c_api::fibkit_fib, *const [u8; 16], *mut u64, usize) -> c_int;

/// The IPv6 bulk call on network-order keys (`struct in6_addr`, as C holds
/// them) against the engine's `lookup_batch` on the same keys in host
/// order, and against the path the C library took before engines read
/// network-order keys themselves (`fibkit::engine::words_from_bytes`: 32
/// keys converted into a buffer, then `lookup_batch_words`), on keys
/// inside announced prefixes and random public keys, in bursts of 8 and
/// 32 and over the whole array; every round runs each contender once,
/// alternating.
fn ipv6(loaded: &fibkit::load::LoadedTable, table: &str, spec: &str, rounds: usize) {
    let path = CString::new(table).expect("a path without NUL");
    let spec_c = CString::new(spec).expect("a spec without NUL");
    let (mut c_table, mut c_fib) = (std::ptr::null_mut(), std::ptr::null_mut());
    // SAFETY: valid C strings and output pointers; the objects are freed below.
    unsafe {
        assert_eq!(c_api::fibkit_table_load(path.as_ptr(), &mut c_table), 0);
        assert_eq!(
            c_api::fibkit_fib_build(c_table, 6, spec_c.as_ptr(), &mut c_fib),
            0
        );
        c_api::fibkit_table_free(c_table);
    }
    let bulk: V6Bulk = black_box(c_api::fibkit_lookup_v6_bulk);
    let rust = fibkit::build(spec, &loaded.v6).expect("the engine builds");
    println!(
        "{spec} on {table}, {KEYS} keys, {rounds} rounds; load average {}",
        load_average()
    );
    for pattern in [Pattern::Announced, Pattern::RndPublic] {
        let keys: Vec<u128> = generate_keys(&pattern, KEYS, 1, &loaded.v6).expect("keys");
        let bytes: Vec<[u8; 16]> = keys.iter().map(|k| k.to_be_bytes()).collect();
        let mut c_words = vec![0u64; KEYS];
        let mut converted = vec![0u64; KEYS];
        let mut found: Vec<Option<Label>> = vec![None; KEYS];
        for burst in [8, 32, KEYS] {
            // Per round: C bulk, converted runs, Rust batch (Mlps).
            let mut rates = [Vec::new(), Vec::new(), Vec::new()];
            let (mut c_ratios, mut converted_ratios) = (Vec::new(), Vec::new());
            for _ in 0..rounds {
                let c = rate(KEYS, || {
                    for (keys, out) in bytes.chunks(burst).zip(c_words.chunks_mut(burst)) {
                        // SAFETY: `keys` and `out` have `keys.len()` elements.
                        unsafe { bulk(c_fib, keys.as_ptr(), out.as_mut_ptr(), keys.len()) };
                    }
                    black_box(&c_words);
                });
                let old = rate(KEYS, || {
                    for (keys, out) in bytes.chunks(burst).zip(converted.chunks_mut(burst)) {
                        fibkit::engine::words_from_bytes(&rust, keys, out);
                    }
                    black_box(&converted);
                });
                let r = rate(KEYS, || {
                    for (keys, out) in keys.chunks(burst).zip(found.chunks_mut(burst)) {
                        rust.lookup_batch(keys, out);
                    }
                    black_box(&found);
                });
                for (list, value) in rates.iter_mut().zip([c, old, r]) {
                    list.push(value / 1e6);
                }
                c_ratios.push(c / r);
                converted_ratios.push(old / r);
            }
            let [c, old, r] = rates.map(median);
            println!(
                "{:<10} burst {burst:>8}: C bulk {c:7.1} Mlps, converted runs {old:7.1}, \
                 Rust lookup_batch {r:7.1} (medians); per round ÷ Rust: C bulk {:.3}, \
                 converted runs {:.3}",
                pattern.name(),
                median(c_ratios),
                median(converted_ratios),
            );
        }
        let disagree = (0..KEYS)
            .filter(|&i| {
                let want = fibkit::labels::word_of(found[i]);
                c_words[i] != want || converted[i] != want
            })
            .count();
        println!(
            "{}: answers disagree on {disagree} of {KEYS} keys",
            pattern.name()
        );
    }
    // SAFETY: built above, not used afterwards.
    unsafe { c_api::fibkit_fib_free(c_fib) };
}
