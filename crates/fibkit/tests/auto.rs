//! The `auto` engine and the DXR/CPE models: picks, statistics, updates
//! and bad input (machine files from elsewhere, empty tables, traces that
//! match nothing).

mod common;

use common::*;
use fibkit::choice::auto::{
    default_machine, fallback_caches, read_machine, AutoConfig, AutoUpdater, Ranked,
    DXR6_CANDIDATES, DXR_TWO_LEVEL, TIE_BAND,
};
use fibkit::engine::{EngineConfig, EngineStats, Updater};
use fibkit::engines::cpe::{CpeConfig, CpeUpdater};
use fibkit::model::cpe::predict_cpe;
use fibkit::model::dxr::predict_dxr;
use fibkit::model::summary::{prefix_densities, uniform_ranges, weighted_ranges};
use fibkit::model::{Machine, TraceSummary};
use fibkit::registry::StatsV4;
use fibkit::{Change, LocalFib, Prefix, Rib};

fn small_v4() -> Rib<u32> {
    // 256 /32s of distinct labels in 10.0.0.0/24: big chunks, long formats.
    small_tables_v4().into_iter().nth(7).unwrap()
}

#[test]
fn auto_builds_its_pick_and_names_it() {
    let rib = small_v4();
    let (updater, snapshot) = AutoUpdater::<u32>::build(&AutoConfig::default(), &rib).unwrap();
    assert_verified(&snapshot, &rib, 5000, "auto");
    let choice = updater.choice();
    assert_eq!(choice.ranking.len(), 7 + 2 + 3);
    // Every candidate but the two-level DXR layouts is predicted; those
    // are timed and say how large they are.
    for row in &choice.ranking {
        let two_level = DXR_TWO_LEVEL.contains(&row.spec.as_str());
        assert_eq!(row.predicted_ns.is_none(), two_level, "{row:?}");
        assert!(row.error.is_none() && row.memory_bytes > 0, "{row:?}");
    }
    // Every candidate was timed, the pick the one whose worse ratio to the
    // fastest RND and SEQ time is smallest.
    assert_best_timed_first(&choice.ranking, |rnd, seq| rnd.max(seq));
    assert!(
        choice.reason.contains("fastest of 12 timed"),
        "{}",
        choice.reason
    );
    let rows = updater.stats(&snapshot).rows();
    assert_eq!(rows[0], ("pick".to_string(), choice.pick().spec.clone()));
    // The registry path: `fibkit stats --engine auto` prints these rows.
    let fib = LocalFib::<u32>::new("auto", rib.clone()).unwrap();
    let StatsV4::Auto(stats) = fib.stats() else {
        panic!("auto's stats are auto's");
    };
    // A second build times the candidates again and may pick another of
    // those within noise of each other: the stats name its own pick.
    assert_eq!(stats.pick, stats.ranking[0].spec);
    assert_eq!(stats.ranking.len(), 7 + 2 + 3);
    let rows = fib.stats().rows();
    assert!(
        rows.iter()
            .any(|(name, row)| name.ends_with("dxr:d=16,x=4") && row.contains("no model, ")),
        "{rows:?}"
    );
    for (candidates, prefix) in [("dxr", "dxr:"), ("cpe", "cpe:")] {
        let spec = format!("auto:candidates={candidates}");
        let config = AutoConfig::parse(&spec).unwrap();
        assert_eq!(config.to_string(), spec);
        let (updater, snapshot) = AutoUpdater::<u32>::build(&config, &rib).unwrap();
        assert!(updater.choice().pick().spec.starts_with(prefix));
        assert_verified(&snapshot, &rib, 2000, &spec);
    }
}

/// `spec` parsed and written back: its canonical form.
fn normalised(spec: &str) -> String {
    AutoConfig::parse(spec).unwrap().to_string()
}

/// Checks that every row of `timed` was measured and that they are in the
/// order of `score` of their ratios to the fastest RND and SEQ times.
fn assert_best_timed_first(timed: &[Ranked], score: impl Fn(f64, f64) -> f64) {
    let rnd: Vec<f64> = timed.iter().map(|r| r.measured_rnd_ns.unwrap()).collect();
    let seq: Vec<f64> = timed.iter().map(|r| r.measured_seq_ns.unwrap()).collect();
    assert!(
        rnd.iter().chain(&seq).all(|ns| *ns > 0.0),
        "{rnd:?} {seq:?}"
    );
    let best_rnd = rnd.iter().copied().fold(f64::INFINITY, f64::min);
    let best_seq = seq.iter().copied().fold(f64::INFINITY, f64::min);
    let slowdown: Vec<f64> = rnd
        .iter()
        .zip(&seq)
        .map(|(r, s)| score(r / best_rnd, s / best_seq))
        .collect();
    // The first is within the tie band of the fastest (the model breaks
    // ties), the rest in order.
    let fastest = slowdown.iter().copied().fold(f64::INFINITY, f64::min);
    assert!(
        slowdown[0] <= fastest * (1.0 + TIE_BAND) + 1e-12,
        "the pick is not among the fastest timed: {slowdown:?}"
    );
    assert!(
        slowdown[1..].windows(2).all(|w| w[0] <= w[1]),
        "timed rows not best first: {slowdown:?}"
    );
    // Among those the timing cannot tell apart, the model's fastest.
    let predicted = |r: &Ranked| r.predicted_ns.unwrap_or(f64::INFINITY);
    let tied_best = timed
        .iter()
        .zip(&slowdown)
        .filter(|(_, s)| **s <= fastest * (1.0 + TIE_BAND))
        .map(|(r, _)| predicted(r))
        .fold(f64::INFINITY, f64::min);
    assert!(
        predicted(&timed[0]) <= tied_best || tied_best.is_infinite(),
        "the pick is not the model's fastest of the tied: {timed:?}"
    );
}

#[test]
fn measure_sets_how_many_candidates_are_timed() {
    let rib = small_v4();
    // measure=0: the model alone, nothing timed, fastest predicted first.
    let config = AutoConfig::parse("auto:measure=0").unwrap();
    assert_eq!(config.to_string(), "auto:measure=0");
    let (updater, snapshot) = AutoUpdater::<u32>::build(&config, &rib).unwrap();
    assert_verified(&snapshot, &rib, 2000, "auto:measure=0");
    let choice = updater.choice();
    assert!(choice.ranking.iter().all(|r| r.measured_rnd_ns.is_none()));
    // The predicted candidates, fastest first, then those without a model.
    let (predicted, unmodelled) = choice
        .ranking
        .split_at(choice.ranking.len() - DXR_TWO_LEVEL.len());
    let times: Vec<f64> = predicted.iter().map(|r| r.predicted_ns.unwrap()).collect();
    assert!(times.windows(2).all(|w| w[0] <= w[1]), "{times:?}");
    assert!(unmodelled.iter().all(|r| r.predicted_ns.is_none()));
    assert!(choice.reason.contains("measure=0"), "{}", choice.reason);
    // measure=3: the model's best three and the candidates without a
    // model timed and first, the others after them, fastest predicted
    // first.
    let (updater, snapshot) =
        AutoUpdater::<u32>::build(&AutoConfig::parse("auto:measure=3").unwrap(), &rib).unwrap();
    assert_verified(&snapshot, &rib, 2000, "auto:measure=3");
    let choice = updater.choice();
    let (timed, untimed) = choice.ranking.split_at(3 + DXR_TWO_LEVEL.len());
    assert_best_timed_first(timed, |rnd, seq| rnd.max(seq));
    assert!(untimed.iter().all(|r| r.measured_rnd_ns.is_none()));
    for spec in DXR_TWO_LEVEL {
        assert!(timed.iter().any(|r| r.spec == spec), "{timed:?}");
    }
    let slowest_timed = timed
        .iter()
        .filter_map(|r| r.predicted_ns)
        .fold(0.0, f64::max);
    let times: Vec<f64> = untimed.iter().map(|r| r.predicted_ns.unwrap()).collect();
    assert!(times.windows(2).all(|w| w[0] <= w[1]), "{times:?}");
    assert!(times[0] >= slowest_timed, "{times:?} after {slowest_timed}");
    assert!(
        choice.reason.contains("fastest of 5 timed"),
        "{}",
        choice.reason
    );
    assert_eq!(normalised("auto:measure=all"), "auto");
    assert_eq!(normalised("auto:measure=16"), "auto:measure=16");
}

#[test]
fn pattern_picks_the_fastest_of_one_pattern() {
    let rib = small_v4();
    for (spec, score) in [
        (
            "auto:pattern=rnd",
            (|rnd: f64, _: f64| rnd) as fn(f64, f64) -> f64,
        ),
        ("auto:pattern=seq", |_, seq| seq),
        ("auto:pattern=both", |rnd: f64, seq: f64| rnd.max(seq)),
    ] {
        let config = AutoConfig::parse(spec).unwrap();
        let (updater, snapshot) = AutoUpdater::<u32>::build(&config, &rib).unwrap();
        assert_verified(&snapshot, &rib, 1000, spec);
        assert_best_timed_first(&updater.choice().ranking, score);
    }
    assert_eq!(normalised("auto:pattern=both"), "auto");
    assert_eq!(normalised("auto:pattern=seq"), "auto:pattern=seq");
}

#[test]
fn ipv6_models_and_times_dxr6_beside_the_cpe_layouts() {
    let rib = small_tables_v6().into_iter().last().unwrap();
    let (updater, snapshot) = AutoUpdater::<u128>::build(&AutoConfig::default(), &rib).unwrap();
    assert_verified(&snapshot, &rib, 2000, "auto on IPv6");
    let ranking = &updater.choice().ranking;
    // Every dxr6 layout is predicted (its model walks the built table)
    // and timed, beside the cpe layout.
    for spec in DXR6_CANDIDATES {
        let row = ranking.iter().find(|r| r.spec == spec).unwrap();
        assert!(
            row.predicted_ns.is_some_and(|ns| ns > 0.0) && row.error.is_none(),
            "{row:?}"
        );
        assert!(
            row.measured_rnd_ns.is_some() && row.memory_bytes > 0,
            "{row:?}"
        );
    }
    assert_eq!(ranking.len(), DXR6_CANDIDATES.len() + 1);
    assert!(ranking.iter().any(|r| r.spec == "cpe"), "{ranking:?}");
    assert_best_timed_first(ranking, |rnd, seq| rnd.max(seq));
    // With the model alone the fastest predicted is picked, dxr6 included.
    for spec in ["auto:measure=0", "auto:measure=0,candidates=dxr"] {
        let (updater, snapshot) =
            AutoUpdater::<u128>::build(&AutoConfig::parse(spec).unwrap(), &rib).unwrap();
        assert_verified(&snapshot, &rib, 2000, spec);
        let ranking = &updater.choice().ranking;
        let fastest = ranking
            .iter()
            .filter_map(|r| r.predicted_ns)
            .fold(f64::INFINITY, f64::min);
        assert_eq!(
            updater.choice().pick().predicted_ns,
            Some(fastest),
            "{spec}"
        );
        if spec.ends_with("dxr") {
            assert!(ranking.iter().all(|r| r.spec.starts_with("dxr6")));
        }
    }
}

#[test]
fn a_trace_weighs_the_model_and_is_timed() {
    let rib = small_v4();
    let dir = std::env::temp_dir();
    let write = |name: &str, addrs: &[u32]| {
        let path = dir.join(format!("fibkit-auto-{}-{name}.trace", std::process::id()));
        let mut file = std::fs::File::create(&path).unwrap();
        fibkit::trace::write_binary_trace(&mut file, addrs).unwrap();
        path
    };
    // Every lookup on one /32 of the table.
    let hot = write("hot", &[0x0a00_0005; 1000]);
    let spec = format!("auto:trace={}", hot.display());
    let config = AutoConfig::parse(&spec).unwrap();
    assert_eq!(config.to_string(), spec);
    let (updater, snapshot) = AutoUpdater::<u32>::build(&config, &rib).unwrap();
    assert_verified(&snapshot, &rib, 2000, &spec);
    let choice = updater.choice();
    assert!(
        choice.lookups.contains("1000 addresses"),
        "{}",
        choice.lookups
    );
    assert_best_timed_first(&choice.ranking, |rnd, seq| rnd.max(seq));

    for (name, addrs, needle) in [
        ("nothing", vec![0xc000_0201u32; 10], "matches a prefix"),
        ("empty", vec![], "no IPv4 address"),
    ] {
        let path = write(name, &addrs);
        let err = fibkit::build::<u32>(&format!("auto:trace={}", path.display()), &rib)
            .err()
            .unwrap()
            .to_string();
        assert!(
            err.contains(needle) && err.contains(&*path.to_string_lossy()),
            "{err}"
        );
        let _ = std::fs::remove_file(path);
    }
    let missing = dir.join("fibkit-auto-no-such.trace");
    let err = fibkit::build::<u32>(&format!("auto:trace={}", missing.display()), &rib)
        .err()
        .unwrap()
        .to_string();
    assert!(err.contains("fibkit-auto-no-such.trace"), "{err}");
    let _ = std::fs::remove_file(hot);
}

#[test]
fn auto_builds_ipv6_and_empty_tables() {
    for rib in small_tables_v6() {
        assert_engine_matches::<u128>("auto", &rib, 2000);
    }
    // An empty table is one range without a route: every candidate models it.
    assert_engine_matches::<u32>("auto", &Rib::new(), 100);
    assert_engine_matches::<u128>("auto", &Rib::new(), 100);
}

#[test]
fn auto_applies_updates() {
    let rib = small_v4();
    let mut fib = LocalFib::<u32>::new("auto", rib).unwrap();
    for i in 0..50u32 {
        let prefix = Prefix::new_masked(0x0a00_0000 | (i << 12), 20 + (i % 8) as u8);
        fib.apply(&[Change::Announce(prefix, i % 5)]).unwrap();
        if i % 3 == 0 {
            fib.apply(&[Change::Withdraw(prefix)]).unwrap();
        }
        assert_verified(&fib, fib.rib(), 300, "auto after updates");
    }
}

#[test]
fn auto_verifies_on_a_shared_table() {
    let table = shared_table("dfz-v4-nh.txt.gz");
    let (updater, snapshot) = AutoUpdater::<u32>::build(&AutoConfig::default(), &table.v4).unwrap();
    assert_verified(&snapshot, &table.v4, 200_000, "auto on dfz-v4-nh");
    let pick = updater.choice().pick();
    // A pick without a model is one of the two-level layouts, timed only.
    assert!(
        pick.predicted_ns.is_some_and(|ns| ns > 0.0) || DXR_TWO_LEVEL.contains(&pick.spec.as_str()),
        "{pick:?}"
    );
}

#[test]
fn bad_specs_are_named() {
    for (spec, needle) in [
        ("auto:candidates=bloom", "not dxr, cpe"),
        ("auto:k=3", "unknown parameter `k`"),
        ("auto:machine", "needs a value"),
        ("auto:measure=17", "from 0 to 16"),
        ("auto:measure=every", "not `all` or a count"),
        ("auto:pattern=zipf", "not rnd, seq or both"),
    ] {
        let err = fibkit::build::<u32>(spec, &small_v4())
            .err()
            .unwrap()
            .to_string();
        assert!(err.contains(needle), "{spec}: {err}");
    }
}

/// Writes `machine` as a machine file in the temporary directory.
fn machine_file(name: &str, text: &str) -> std::path::PathBuf {
    let path = std::env::temp_dir().join(format!("fibkit-auto-{}-{name}.json", std::process::id()));
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn machine_files_from_elsewhere_are_refused() {
    let here = default_machine();
    let good = machine_file("good", &serde_json::to_string(&here).unwrap());
    assert_eq!(read_machine(&good).unwrap(), here);
    let spec = format!("auto:machine={}", good.display());
    assert_engine_matches::<u32>(&spec, &small_v4(), 1000);

    let other = Machine {
        cpu_model: "a CPU of another machine".into(),
        ..here.clone()
    };
    let other = machine_file("other", &serde_json::to_string(&other).unwrap());
    let err = read_machine(&other).unwrap_err().to_string();
    assert!(
        err.contains("made on") && err.contains("calibrate"),
        "{err}"
    );
    let spec = format!("auto:machine={}", other.display());
    let err = fibkit::build::<u32>(&spec, &small_v4())
        .err()
        .unwrap()
        .to_string();
    assert!(err.contains("calibrate"), "{err}");

    let old = Machine {
        version: 0,
        ..here.clone()
    };
    let old = machine_file("old", &serde_json::to_string(&old).unwrap());
    let err = read_machine(&old).unwrap_err().to_string();
    assert!(err.contains("version 0"), "{err}");

    let garbage = machine_file("garbage", "# fibkit trace summary v1\n");
    let err = read_machine(&garbage).unwrap_err().to_string();
    assert!(err.contains("not a fibkit machine file"), "{err}");
    let missing = std::env::temp_dir().join("fibkit-auto-no-such-machine.json");
    let err = read_machine(&missing).unwrap_err().to_string();
    assert!(err.contains("calibrate"), "{err}");
    for path in [good, other, old, garbage] {
        let _ = std::fs::remove_file(path);
    }
}

#[test]
fn a_trace_matching_nothing_or_an_empty_table_is_an_error() {
    let rib = small_v4();
    let caches = default_machine().caches;
    // Addresses of 192.0.2.0/24 only, which no prefix of the table covers.
    let trace: Vec<u32> = (0..100).map(|i| 0xc000_0200 | i).collect();
    assert!(rib.longest_match(trace[0]).is_none());
    let summary = TraceSummary::from_trace(&rib, &trace);
    assert_eq!(summary.matched(), 0);
    let view = weighted_ranges(&rib, 0, u32::MAX, Some(&prefix_densities(&rib, &summary)));
    let err = predict_dxr(&view, 16, &caches).unwrap_err().to_string();
    assert!(err.contains("no lookup"), "{err}");
    let (_, trie) = CpeUpdater::build(&CpeConfig::parse("cpe:levels=3").unwrap(), &rib).unwrap();
    assert!(predict_cpe(&view, &trie, &caches).is_err());
    let err = fibkit::model::trie_model(&rib, &summary)
        .unwrap_err()
        .to_string();
    assert!(err.contains("matches no prefix"), "{err}");
    let empty = Rib::<u32>::new();
    let err = fibkit::model::trie_model(&empty, &summary)
        .unwrap_err()
        .to_string();
    assert!(err.contains("empty"), "{err}");
}

#[test]
fn uniform_predictions_grow_with_the_direct_table_past_the_caches() {
    // With only a default route every lookup reads one direct entry and
    // the direct table's lines are read evenly: with a 1 MiB L2, k=16
    // (256 KiB) fits and misses almost never, k=22 (16 MiB) almost always.
    let rib = Rib::from_pairs([("0.0.0.0/0".parse::<Prefix<u32>>().unwrap(), 1)]);
    let view = uniform_ranges(&rib);
    let caches = &fallback_caches()[..2];
    let small = predict_dxr(&view, 16, caches).unwrap();
    let large = predict_dxr(&view, 22, caches).unwrap();
    assert_eq!(small.trie_visits, 1.0);
    assert!(
        small.misses[1] < 0.1 && large.misses[1] > 0.9,
        "{small:?} {large:?}"
    );
}
