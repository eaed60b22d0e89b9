//! fibkit's lab: the benchmark method behind `fibkit bench`, the replay
//! driver behind `fibkit replay` ([`replay`]), and the trial programs of
//! `examples/` (engine benchmarks and A/B comparisons). It is kept apart from
//! the `fibkit` library so that embedders build neither `rand` nor
//! `core_affinity`; the seeded synthetic generators it draws keys, tables
//! and change streams from are fibkit's own, behind its non-default `bench`
//! feature (`fibkit::trace::generate` and its neighbours).
//!
//! # The benchmark method
//!
//! The benchmark method of \[Zec19\], section 3.6, run in alternating
//! rounds.
//!
//! Keys are generated before timing starts into one array (default 2^24 keys,
//! seeded); every result is stored into a result array, so no lookup can be
//! optimised away; each run loops over the key array until at least
//! `min_seconds` have passed, and is reported in million lookups per second
//! (Mlps) and nanoseconds per lookup.
//!
//! Rounds ([`interleave`]): this machine's neighbours move one engine's
//! figure by up to 2x between runs seconds apart, so configurations compared
//! with each other are not measured one after the other but in rounds: run 1
//! of every configuration, then run 2 of every one, and so on. Each
//! configuration is reported by the median of its runs; against a baseline,
//! by the median of the per-round ratios ([`Ratio`]), each of which pairs
//! runs seconds apart.
//!
//! Key patterns ([`Pattern`]):
//! - `rnd`: uniform over the whole address space;
//! - `rnd-public`: uniform, but outside multicast and reserved space (IPv4, as
//!   the thesis does) or inside the global unicast `2000::/3` (IPv6);
//! - `announced`: uniform inside uniformly chosen prefixes of the table;
//! - `seq`: random keys, each XORed with the previous lookup's result, so the
//!   lookups serialise and latency, not throughput, is measured;
//! - `rep`: each key looked up 8 times within a sliding window of 8 keys
//!   (temporal locality, as in real traffic);
//! - `trace:FILE`: addresses from a file, one per line.
//!
//! Modes ([`Mode`]), the call paths users have:
//! - `plain`: the engine's own per-key loop ([`Lookup::lookup_each`]);
//! - `key`: one call per key through what the caller holds (a [`Handle`]:
//!   for `fibkit bench` the registry's snapshot enum, a `match` per call);
//! - `reader`: one call per key through a [`Reader`] of a live
//!   [`Fib`](fibkit::Fib), one atomic load per call;
//! - `batch`: [`Lookup::lookup_batch`] on the whole key array;
//! - `burstN`: [`Lookup::lookup_batch`] on consecutive slices of N keys, the
//!   bursts a datapath passes (DPDK's is 32).
//!
//! With several threads, each looks up its own slice of the key array, pinned
//! to its own core when possible; the aggregate rate is reported.
#![deny(missing_docs)]

pub mod replay;

mod keys;
mod measure;
mod mode;
mod rounds;

pub use keys::{generate_keys, Pattern};
pub use measure::{
    load_average, measure, run, thread_cpu_ns, timed_passes, BenchEngine, Ceiling, Handle, Run,
    Settings,
};
pub use mode::{parse_modes, Mode};
pub use rounds::{interleave, median, Measurement, Ratio};

// Named only by the crate docs' links.
#[cfg(doc)]
use fibkit::{engine::Lookup, fib::Reader};

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use fibkit::engine::Lookup;
    use fibkit::prefix::Label;
    use fibkit::rib::Rib;

    use super::*;
    use crate::keys::is_public_v4;

    #[test]
    fn patterns_parse_and_name() {
        for name in [
            "rnd",
            "rnd-public",
            "announced",
            "seq",
            "rep",
            "trace:/tmp/x",
        ] {
            assert_eq!(name.parse::<Pattern>().unwrap().name(), name);
        }
        assert!("trace:".parse::<Pattern>().is_err());
        assert!("zipf"
            .parse::<Pattern>()
            .unwrap_err()
            .contains("known: rnd"));
    }

    #[test]
    fn keys_are_seeded_and_shaped() {
        let rib = Rib::<u32>::from_pairs([("10.0.0.0/8".parse().unwrap(), 1)]);
        let a = generate_keys::<u32>(&Pattern::Rnd, 1000, 1, &rib).unwrap();
        let b = generate_keys::<u32>(&Pattern::Rnd, 1000, 1, &rib).unwrap();
        let c = generate_keys::<u32>(&Pattern::Rnd, 1000, 2, &rib).unwrap();
        assert_eq!(a, b);
        assert_ne!(a, c);
        let public = generate_keys::<u32>(&Pattern::RndPublic, 1000, 1, &rib).unwrap();
        assert!(public.iter().all(|&k| is_public_v4(k)));
        let announced = generate_keys::<u32>(&Pattern::Announced, 1000, 1, &rib).unwrap();
        assert!(announced.iter().all(|&k| k >> 24 == 10));
        let rep = generate_keys::<u32>(&Pattern::Rep, 800, 1, &rib).unwrap();
        // Every key of the middle of the stream occurs exactly 8 times.
        let middle = rep[400];
        assert_eq!(rep.iter().filter(|&&k| k == middle).count(), 8);
        let v6 = generate_keys::<u128>(&Pattern::RndPublic, 100, 1, &Rib::new()).unwrap();
        assert!(v6.iter().all(|&k| k >> 125 == 1));
        assert!(generate_keys::<u128>(&Pattern::Announced, 10, 1, &Rib::new()).is_err());
    }

    #[test]
    fn measure_reports_runs_and_checksums_agree() {
        let rib = Rib::<u32>::from_pairs([
            ("10.0.0.0/8".parse().unwrap(), 1),
            ("0.0.0.0/1".parse().unwrap(), 2),
        ]);
        let radix = fibkit::build("radix", &rib).unwrap();
        let dir = fibkit::build("dir24-8", &rib).unwrap();
        let keys = generate_keys::<u32>(&Pattern::Rnd, 4096, 3, &rib).unwrap();
        let settings = Settings {
            min_seconds: 0.0,
            runs: 3,
            threads: 2,
        };
        let a = measure(
            "radix",
            &radix,
            &Pattern::Rnd,
            &keys,
            Mode::Plain,
            &settings,
        );
        let b = measure(
            "dir24-8",
            &dir,
            &Pattern::Rnd,
            &keys,
            Mode::Batch,
            &settings,
        );
        assert_eq!(a.runs_mlps.len(), 3);
        assert!(a.min_mlps <= a.median_mlps && a.median_mlps <= a.max_mlps);
        assert_eq!(a.checksum, b.checksum);
        let seq_a = measure(
            "radix",
            &radix,
            &Pattern::Seq,
            &keys,
            Mode::Batch,
            &settings,
        );
        let seq_b = measure(
            "dir24-8",
            &dir,
            &Pattern::Seq,
            &keys,
            Mode::Plain,
            &settings,
        );
        assert_eq!(seq_a.mode, Mode::Plain);
        assert_eq!(seq_a.checksum, seq_b.checksum);
        let json = serde_json::to_value(&a).unwrap();
        for field in [
            "engine",
            "pattern",
            "mode",
            "threads",
            "runs_mlps",
            "median_mlps",
            "ns_per_lookup",
        ] {
            assert!(json.get(field).is_some(), "{field} missing");
        }
    }

    #[test]
    fn modes_parse_and_name() {
        for name in ["plain", "key", "reader", "batch", "burst1", "burst32"] {
            let mode: Mode = name.parse().unwrap();
            assert_eq!(mode.to_string(), name);
            assert_eq!(serde_json::to_value(mode).unwrap(), name);
            let back: Mode = serde_json::from_value(serde_json::json!(name)).unwrap();
            assert_eq!(back, mode);
        }
        assert!(serde_json::from_value::<Mode>(serde_json::json!("fast")).is_err());
        assert_eq!("burst8".parse::<Mode>().unwrap(), Mode::Burst(8));
        for bad in ["burst", "burst0", "burst-1", "fast", ""] {
            let err = bad.parse::<Mode>().unwrap_err();
            assert!(err.contains("burstN"), "{bad}: {err}");
        }
        assert!(Mode::Reader.is_per_key() && !Mode::Burst(8).is_per_key());
        let names = |list: &[&str]| list.iter().map(|n| n.to_string()).collect::<Vec<_>>();
        assert_eq!(
            parse_modes(&names(&["key", "burst", "burst8", "batch"]), &[8, 32]).unwrap(),
            [Mode::Key, Mode::Burst(8), Mode::Burst(32), Mode::Batch]
        );
        assert!(parse_modes(&names(&["burst"]), &[0]).is_err());
        assert!(parse_modes(&names(&["burst"]), &[]).is_err());
        assert!(parse_modes(&names(&["turbo"]), &[32]).is_err());
    }

    #[test]
    fn interleave_runs_round_by_round() {
        let mut order = Vec::new();
        let results = interleave(3, 2, |round, configuration| {
            order.push((round, configuration));
            10 * round + configuration
        });
        assert_eq!(order, vec![(0, 0), (0, 1), (1, 0), (1, 1), (2, 0), (2, 1)]);
        assert_eq!(results, vec![vec![0, 10, 20], vec![1, 11, 21]]);
        assert!(interleave(0, 2, |_, _| 0).iter().all(Vec::is_empty));
    }

    #[test]
    fn medians_and_round_ratios() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), 2.5);
        assert!(median(&[]).is_nan());
        // A load swing in round 2 halves both; the ratio stays 2.
        let ratio = Ratio::new(
            "base",
            &[200.0, 100.0, 220.0, 30.0],
            &[100.0, 50.0, 100.0, 60.0],
        );
        assert_eq!(ratio.rounds, vec![2.0, 2.0, 2.2, 0.5]);
        assert_eq!(ratio.median, 2.0);
        assert_eq!(ratio.baseline, "base");
        // The shorter list decides.
        assert_eq!(Ratio::new("b", &[1.0, 2.0], &[1.0]).rounds, vec![1.0]);
    }

    #[test]
    fn every_mode_gives_the_reference_results() {
        let rib = Rib::<u32>::from_pairs([
            ("0.0.0.0/1".parse().unwrap(), 2),
            ("10.0.0.0/8".parse().unwrap(), 1),
            ("10.1.0.0/16".parse().unwrap(), 3),
            ("192.168.0.0/16".parse().unwrap(), 4),
            ("192.168.1.1/32".parse().unwrap(), 5),
        ]);
        let mut keys = generate_keys::<u32>(&Pattern::Rnd, 997, 5, &rib).unwrap();
        keys.extend([0x0a01_0203, 0xc0a8_0101, 0xc0a8_0102, 0xffff_ffff]);
        let radix = fibkit::build("radix", &rib).unwrap();
        // The reference answers, and the chained ones: each thread chains
        // its own slice of the keys from 0.
        let expected = |chained: bool, threads: usize| -> Vec<Option<Label>> {
            let mut out: Vec<Option<Label>> = keys.iter().map(|&k| rib.lookup(k)).collect();
            if chained {
                let slice_len = keys.len().div_ceil(threads);
                for (slice, results) in keys.chunks(slice_len).zip(out.chunks_mut(slice_len)) {
                    radix.lookup_chained(slice, results, 0);
                }
            }
            out
        };
        let modes = [
            Mode::Plain,
            Mode::Key,
            Mode::Reader,
            Mode::Batch,
            Mode::Burst(1),
            Mode::Burst(8),
            Mode::Burst(32),
            Mode::Burst(5000),
        ];
        for spec in ["radix", "dir24-8", "dxr"] {
            let snapshot = fibkit::build(spec, &rib).unwrap();
            let fib = fibkit::Fib::<u32>::new(spec, rib.clone()).unwrap();
            for threads in [1, 2, 3] {
                for chained in [false, true] {
                    let want = expected(chained, threads);
                    let mut checksums = Vec::new();
                    for mode in modes {
                        let mut out = vec![None; keys.len()];
                        let run = match mode {
                            Mode::Reader => run(
                                || fib.reader(),
                                &keys,
                                &mut out,
                                mode,
                                chained,
                                threads,
                                Duration::ZERO,
                            ),
                            _ => run(
                                || &snapshot,
                                &keys,
                                &mut out,
                                mode,
                                chained,
                                threads,
                                Duration::ZERO,
                            ),
                        };
                        assert!(run.mlps > 0.0);
                        assert_eq!(out, want, "{spec} {mode} {threads} threads {chained}");
                        checksums.push(run.checksum);
                    }
                    assert!(
                        checksums.iter().all(|&c| c == checksums[0]),
                        "{spec} {threads} threads {chained}: {checksums:?}"
                    );
                }
            }
        }
    }
}
