//! Measurements for docs/bench/lctrie.md, sections "LC-trie" and "LC-trie:
//! snapshot split, linear withdrawals, batch lookup".
//!
//! ```text
//! cargo run --release -p fibkit-bench --example lctrie_bench [-- SECTION...]
//! ```
//! Sections: `v4` (dfz-v4-nh), `v6` (dfz-v6-nh), `adv` (the adversarial
//! table), `updates` (LINX stream replayed onto dfz-v4-nh), `bursts`
//! (`lookup_batch` against the per-key loop at burst lengths 1 to 256),
//! `storms` (time per announce and per withdrawal of N host routes under
//! one /8, N from 16k to 1M), `adversarial-updates` (worst single update
//! of adversarial streams on dfz-v4-nh against the full build time); all
//! but the last three by default.
//! Look-ups use the library's benchmark method (`fibkit_bench::measure`):
//! 2^24 keys generated before timing, results stored, 5 runs of one pass
//! each, median reported. `dir24-8` runs beside on IPv4 for a ratio.
//! `--write-adversarial DIR` writes the adversarial table and its deep
//! addresses as `fibkit`-readable files instead; `--write-storms DIR` a
//! one-prefix table and host-route storms as update files, for
//! `fibkit verify --updates` (which any version of the tool can replay).

use std::path::PathBuf;
use std::time::Instant;

use fibkit::engine::Updater;
use fibkit::engines::lctrie::{
    adversarial_table_v4, LcTrie, LcTrieConfig, LcTrieUpdater, LookupAlgo, SlotLayout,
};
use fibkit::load::{load_table, load_updates, AnyChange, LoadOptions};
use fibkit::registry::{ConfigV4, EngineV4};
use fibkit::trace::{adversarial_streams_v4, host_routes_v4};
use fibkit::{Addr, Change, Label, Lookup, Prefix, Rib};
use fibkit_bench::load_average;
use fibkit_bench::{self as bench, median, Mode, Pattern, Settings};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

const KEYS: usize = 1 << 24;
const COUNTED_KEYS: usize = 1 << 20;
const ADVERSARIAL_GROUPS: usize = 1024;
const ADVERSARIAL_SEED: u64 = 2015;

fn data(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/data")
        .join(name)
}

fn settings() -> Settings {
    Settings {
        min_seconds: 0.0,
        runs: 5,
        threads: 1,
    }
}

/// The spec of a trie built with `algo`.
fn spec_of<A: SlotLayout>(trie: &LcTrie<A>) -> String {
    LcTrieConfig {
        lookup: trie.algo(),
    }
    .to_string()
}

fn describe<A: SlotLayout>(name: &str, rib: &Rib<A>, trie: &LcTrie<A>, build_s: f64, keys: &[A]) {
    let shape = trie.shape();
    println!(
        "{name}: {} prefixes, built in {:.2} s; {} leaves, {} tnodes, top node 2^{}, max depth {}, \
         average leaf depth {:.2}; {} bytes ({:.1} B/prefix)",
        rib.len(),
        build_s,
        shape.leaves,
        shape.tnodes,
        shape.top_bits,
        shape.max_depth,
        shape.average_leaf_depth,
        trie.memory_bytes(),
        trie.memory_bytes() as f64 / rib.len().max(1) as f64
    );
    let counted = &keys[..keys.len().min(COUNTED_KEYS)];
    println!("| algorithm | nodes/lookup | backtracks/lookup | cache lines/lookup |");
    println!("|---|---|---|---|");
    for algo in [LookupAlgo::Improved, LookupAlgo::Classic] {
        let c = trie.count_lookups(counted, algo);
        println!(
            "| {algo:?} | {:.2} | {:.2} | {:.2} |",
            c.nodes_per_lookup(),
            c.backtracks_per_lookup(),
            c.cache_lines_per_lookup()
        );
    }
}

/// Times both algorithms (and dir24-8 if given) on `(pattern name, keys)`.
/// Runs are interleaved (run 1 of every engine, then run 2, ...) so that load
/// from other processes on the shared machine drifts into all engines alike.
fn lookups<A: SlotLayout>(
    trie: &LcTrie<A>,
    classic: &LcTrie<A>,
    baseline: Option<&dyn Lookup<A>>,
    patterns: &[(&str, Vec<A>)],
) {
    println!("| engine | keys | Mlookups/s | ns/lookup | ratio to dir24-8 | runs |");
    println!("|---|---|---|---|---|---|");
    let one_run = Settings {
        runs: 1,
        ..settings()
    };
    for (name, keys) in patterns {
        let pattern = if name.starts_with("seq") {
            Pattern::Seq
        } else {
            Pattern::Trace(PathBuf::from(*name))
        };
        let mut engines: Vec<(String, &dyn Lookup<A>)> = Vec::new();
        engines.extend(baseline.map(|b| ("dir24-8".to_string(), b)));
        engines.push((spec_of(trie), trie));
        engines.push((spec_of(classic), classic));
        let mut runs: Vec<Vec<f64>> = vec![Vec::new(); engines.len()];
        for _ in 0..settings().runs {
            for ((engine_name, engine), runs) in engines.iter().zip(runs.iter_mut()) {
                let m = bench::measure(engine_name, *engine, &pattern, keys, Mode::Plain, &one_run);
                runs.push(m.median_mlps);
            }
        }
        let median = |runs: &[f64]| {
            let mut sorted = runs.to_vec();
            sorted.sort_by(f64::total_cmp);
            sorted[sorted.len() / 2]
        };
        let base = baseline.map(|_| median(&runs[0]));
        for ((engine_name, _), runs) in engines.iter().zip(&runs) {
            let mlps = median(runs);
            let shown: Vec<String> = runs.iter().map(|r| format!("{r:.1}")).collect();
            println!(
                "| {} | {} | {:.2} | {:.1} | {} | [{}] |",
                engine_name,
                name,
                mlps,
                1e3 / mlps,
                base.map_or("-".to_string(), |b| format!("{:.2}", mlps / b)),
                shown.join(", ")
            );
        }
    }
}

fn build_pair<A: SlotLayout>(rib: &Rib<A>) -> (LcTrie<A>, LcTrie<A>, f64) {
    let build = |lookup| {
        let (_, trie) = LcTrieUpdater::build(&LcTrieConfig { lookup }, rib).expect("build");
        trie
    };
    let start = Instant::now();
    let trie = build(LookupAlgo::Improved);
    let seconds = start.elapsed().as_secs_f64();
    (trie, build(LookupAlgo::Classic), seconds)
}

fn dfz_v4() {
    let table = load_table(&data("dfz-v4-nh.txt.gz"), &LoadOptions::default()).expect("table");
    let rib = &table.v4;
    let (trie, classic, seconds) = build_pair(rib);
    let rnd = bench::generate_keys(&Pattern::Rnd, KEYS, 1, rib).expect("keys");
    println!("\n### dfz-v4-nh\n");
    describe("dfz-v4-nh", rib, &trie, seconds, &rnd);
    let dir = fibkit::build::<u32>("dir24-8", rib).expect("dir24-8");
    println!();
    lookups(
        &trie,
        &classic,
        Some(&dir),
        &[("rnd", rnd.clone()), ("seq", rnd)],
    );
}

fn dfz_v6() {
    let table = load_table(&data("dfz-v6-nh.txt.gz"), &LoadOptions::default()).expect("table");
    let rib = &table.v6;
    let (trie, classic, seconds) = build_pair(rib);
    let rnd = bench::generate_keys(&Pattern::Rnd, KEYS, 1, rib).expect("keys");
    let announced = bench::generate_keys(&Pattern::Announced, KEYS, 1, rib).expect("keys");
    println!("\n### dfz-v6-nh\n");
    describe("dfz-v6-nh (rnd keys)", rib, &trie, seconds, &rnd);
    println!();
    describe(
        "dfz-v6-nh (announced keys)",
        rib,
        &trie,
        seconds,
        &announced,
    );
    println!();
    lookups(
        &trie,
        &classic,
        None,
        &[
            ("rnd", rnd.clone()),
            ("announced", announced.clone()),
            ("seq", rnd),
            ("seq-announced", announced),
        ],
    );
}

/// 2^24 keys drawn uniformly from the table's deep addresses.
fn adversarial_keys(deep: &[u32]) -> Vec<u32> {
    let mut rng = SmallRng::seed_from_u64(7);
    (0..KEYS)
        .map(|_| deep[rng.random_range(0..deep.len())])
        .collect()
}

fn adversarial() {
    let (rib, deep) = adversarial_table_v4(ADVERSARIAL_GROUPS, ADVERSARIAL_SEED);
    let (trie, classic, seconds) = build_pair(&rib);
    let keys = adversarial_keys(&deep);
    println!(
        "\n### adversarial (adversarial_table_v4({ADVERSARIAL_GROUPS}, {ADVERSARIAL_SEED}))\n"
    );
    describe("adversarial", &rib, &trie, seconds, &keys);
    if std::env::args().any(|a| a == "adv-counts") {
        return;
    }
    let dir = fibkit::build::<u32>("dir24-8", &rib).expect("dir24-8");
    println!();
    lookups(
        &trie,
        &classic,
        Some(&dir),
        &[("rnd-deep", keys.clone()), ("seq-deep", keys)],
    );
}

/// Replays the LINX stream onto dfz-v4-nh `runs` times, timing each
/// effective change's `update` call by kind.
fn updates() {
    let table = load_table(&data("dfz-v4-nh.txt.gz"), &LoadOptions::default()).expect("table");
    let stream = load_updates(
        &data("linx-updates-ipv4.20141217.txt.gz"),
        &LoadOptions::default(),
        table.nexthops.clone(),
    )
    .expect("updates");
    let changes: Vec<Change<u32>> = stream
        .updates
        .iter()
        .filter_map(|u| match u.change {
            AnyChange::V4(c) => Some(c),
            AnyChange::V6(_) => None,
        })
        .collect();
    println!("\n### updates: LINX stream onto dfz-v4-nh\n");
    println!(
        "{} IPv4 changes in the stream. Time per effective change, `Updater::update` with one \
         prefix, timer included; the replay with the median overall time of 5 (all 5 in brackets).\n",
        changes.len()
    );
    println!("| engine | inserts | us/insert | relabels | us/relabel | deletes | us/delete | us/change (all) |");
    println!("|---|---|---|---|---|---|---|---|");
    for engine_spec in ["lctrie", "dir24-8"] {
        let mut runs: Vec<[f64; 4]> = Vec::new();
        let mut counts = [0usize; 3];
        for _ in 0..5 {
            let mut rib = table.v4.clone();
            let config: ConfigV4 = engine_spec.parse().expect("spec");
            let (mut updater, mut engine) = EngineV4::build(&config, &rib).expect("build");
            let mut seconds = [0f64; 3];
            counts = [0; 3];
            for &change in &changes {
                let prefix = change.prefix();
                let before = rib.get(prefix);
                if !rib.apply(change) {
                    continue;
                }
                let kind = match (before, change) {
                    (None, _) => 0,
                    (Some(_), Change::Announce(..)) => 1,
                    (Some(_), Change::Withdraw(_)) => 2,
                };
                let start = Instant::now();
                updater
                    .update(&mut engine, &rib, &[prefix])
                    .expect("update");
                seconds[kind] += start.elapsed().as_secs_f64();
                counts[kind] += 1;
            }
            let total: f64 = seconds.iter().sum();
            let n: usize = counts.iter().sum();
            runs.push([
                seconds[0] / counts[0].max(1) as f64 * 1e6,
                seconds[1] / counts[1].max(1) as f64 * 1e6,
                seconds[2] / counts[2].max(1) as f64 * 1e6,
                total / n.max(1) as f64 * 1e6,
            ]);
        }
        // The run with the median overall time, reported whole, so the
        // columns of one row come from one replay.
        let all: Vec<String> = runs.iter().map(|r| format!("{:.3}", r[3])).collect();
        runs.sort_by(|a, b| a[3].total_cmp(&b[3]));
        let mid = runs[runs.len() / 2];
        println!(
            "| {engine_spec} | {} | {:.3} | {} | {:.3} | {} | {:.3} | {:.3} [{}] |",
            counts[0],
            mid[0],
            counts[1],
            mid[1],
            counts[2],
            mid[2],
            mid[3],
            all.join(", ")
        );
    }
}

fn write_adversarial(dir: &str) {
    use std::io::Write;
    let (rib, deep) = adversarial_table_v4(ADVERSARIAL_GROUPS, ADVERSARIAL_SEED);
    let dir = PathBuf::from(dir);
    let mut table = std::fs::File::create(dir.join("adversarial-v4.txt")).expect("create");
    for (prefix, label) in rib.iter() {
        writeln!(table, "{prefix} {label}").expect("write");
    }
    let mut keys = std::fs::File::create(dir.join("adversarial-v4-keys.txt")).expect("create");
    for key in deep {
        writeln!(keys, "{}", key.display()).expect("write");
    }
}

/// Keys per pattern in `bursts` (the trie, not the key array, sets the
/// cache behaviour; fewer keys keep a round short on a shared machine).
const BURST_KEYS: usize = 1 << 20;
/// Slice lengths of `bursts`; 0 is the whole key array in one call.
const BURSTS: [usize; 10] = [1, 2, 3, 4, 8, 16, 32, 64, 256, 0];
/// Interleaved rounds per measurement.
const ROUNDS: usize = 5;

fn shown(values: &[f64]) -> String {
    let values: Vec<String> = values.iter().map(|v| format!("{v:.2}")).collect();
    values.join(", ")
}

/// Mlookups/s of one pass over `keys` in calls of `burst` keys (0: one call).
fn burst_pass<A: Addr>(
    keys: &[A],
    out: &mut [Option<Label>],
    burst: usize,
    lookup: impl Fn(&[A], &mut [Option<Label>]),
) -> f64 {
    let burst = if burst == 0 { keys.len() } else { burst };
    let start = Instant::now();
    for (keys, out) in keys.chunks(burst).zip(out.chunks_mut(burst)) {
        lookup(keys, out);
    }
    std::hint::black_box(&mut *out);
    keys.len() as f64 / start.elapsed().as_secs_f64() / 1e6
}

/// `lookup_batch` against the per-key loop (`lookup_each`) on the same
/// keys in the same burst lengths, one of each per round (which goes
/// first alternates); the ratio of each round's pair, median over the
/// rounds.
fn burst_rows<A: SlotLayout>(table: &str, pattern: &str, trie: &LcTrie<A>, keys: &[A]) {
    let mut out = vec![None; keys.len()];
    let mut check = vec![None; keys.len()];
    trie.lookup_each(keys, &mut check);
    for burst in BURSTS {
        let (mut each, mut batch, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
        for round in 0..ROUNDS {
            // Which of the two goes first alternates, so that neither
            // always runs in the other's wake.
            for per_key in [round % 2 == 0, round % 2 != 0] {
                if per_key {
                    each.push(burst_pass(keys, &mut out, burst, |k, o| {
                        trie.lookup_each(k, o)
                    }));
                } else {
                    batch.push(burst_pass(keys, &mut out, burst, |k, o| {
                        trie.lookup_batch(k, o)
                    }));
                    assert_eq!(out, check, "lookup_batch disagrees with lookup_each");
                }
            }
            ratios.push(batch[round] / each[round]);
        }
        let burst = if burst == 0 {
            "all".to_string()
        } else {
            burst.to_string()
        };
        println!(
            "| {table} | {pattern} | {burst} | {:.2} | {:.2} | {:.2} | {} |",
            median(&each),
            median(&batch),
            median(&ratios),
            shown(&ratios)
        );
    }
}

fn bursts() {
    println!(
        "\n### bursts: lookup_batch against the per-key loop (load {})\n",
        load_average()
    );
    println!("| table | keys | burst | per key Mlps | batch Mlps | batch / per key | pairs |");
    println!("|---|---|---|---|---|---|---|");
    let table = load_table(&data("dfz-v4-nh.txt.gz"), &LoadOptions::default()).expect("table");
    let (trie, _, _) = build_pair(&table.v4);
    let rnd = bench::generate_keys(&Pattern::Rnd, BURST_KEYS, 1, &table.v4).expect("keys");
    burst_rows("dfz-v4-nh", "rnd", &trie, &rnd);
    let table = load_table(&data("dfz-v6-nh.txt.gz"), &LoadOptions::default()).expect("table");
    let (trie, _, _) = build_pair(&table.v6);
    for pattern in [Pattern::Rnd, Pattern::Announced] {
        let keys = bench::generate_keys(&pattern, BURST_KEYS, 1, &table.v6).expect("keys");
        burst_rows("dfz-v6-nh", &pattern.name(), &trie, &keys);
    }
    println!("\n(load at the end {})", load_average());
}

/// Applies `changes` to `rib` and, one `update` call per effective change,
/// to `trie`; returns each change's update time in seconds (NaN for
/// changes that left `rib` as it was).
fn timed_updates(
    updater: &mut LcTrieUpdater<u32>,
    trie: &mut LcTrie<u32>,
    rib: &mut Rib<u32>,
    changes: &[Change<u32>],
) -> Vec<f64> {
    changes
        .iter()
        .map(|&change| {
            if !rib.apply(change) {
                return f64::NAN;
            }
            let start = Instant::now();
            updater
                .update(trie, rib, &[change.prefix()])
                .expect("update");
            start.elapsed().as_secs_f64()
        })
        .collect()
}

/// Host-route storms under 10.0.0.0/8 onto an empty table, one change per
/// update: microseconds per announce and per withdrawal (median of three
/// storms, all three in brackets) for N from 16k to 1M.
fn storms() {
    println!(
        "\n### storms: N host routes under 10.0.0.0/8 announced, then withdrawn (load {})\n",
        load_average()
    );
    println!("| storm | N | us/announce | us/withdrawal | top node | slab slots (in use) | withdrawals (all runs) |");
    println!("|---|---|---|---|---|---|---|");
    let region = Prefix::new_masked(0x0a00_0000, 8);
    let config = LcTrieConfig::default();
    for (storm, spread) in [
        ("in a row", false),
        ("spread", true),
        ("/31s under hosts", false),
    ] {
        for n in [1 << 14, 1 << 15, 1 << 16, 1 << 17, 1 << 20] {
            let hosts = host_routes_v4(region, n, spread);
            let (announce, withdraw): (Vec<Change<u32>>, Vec<Change<u32>>) =
                if storm.starts_with('/') {
                    // Leaves of two prefixes lose the shorter one: suffix
                    // lengths fall under a wide node while no slot empties.
                    let pairs: Vec<Prefix<u32>> = hosts
                        .iter()
                        .step_by(2)
                        .map(|p| Prefix::new_masked(p.addr(), 31))
                        .collect();
                    let mut announce: Vec<Change<u32>> =
                        hosts.iter().map(|&p| Change::Announce(p, 1)).collect();
                    announce.extend(pairs.iter().map(|&p| Change::Announce(p, 2)));
                    (
                        announce,
                        pairs.iter().map(|&p| Change::Withdraw(p)).collect(),
                    )
                } else {
                    (
                        hosts.iter().map(|&p| Change::Announce(p, 1)).collect(),
                        hosts.iter().map(|&p| Change::Withdraw(p)).collect(),
                    )
                };
            let mut runs = Vec::new();
            let mut shape = String::new();
            for _ in 0..3 {
                let mut rib = Rib::new();
                let (mut updater, mut trie) = LcTrieUpdater::build(&config, &rib).expect("build");
                let up: f64 = timed_updates(&mut updater, &mut trie, &mut rib, &announce)
                    .iter()
                    .sum();
                let stats = updater.stats(&trie);
                shape = format!(
                    "2^{} | {} ({})",
                    stats.shape.top_bits, stats.slab_slots, stats.shape.slab_in_use
                );
                let down: f64 = timed_updates(&mut updater, &mut trie, &mut rib, &withdraw)
                    .iter()
                    .sum();
                runs.push((
                    up / announce.len() as f64 * 1e6,
                    down / withdraw.len() as f64 * 1e6,
                ));
            }
            let ups: Vec<f64> = runs.iter().map(|r| r.0).collect();
            let downs: Vec<f64> = runs.iter().map(|r| r.1).collect();
            println!(
                "| {storm} | {n} | {:.2} | {:.2} | {shape} | [{}] |",
                median(&ups),
                median(&downs),
                shown(&downs)
            );
        }
    }
    println!("\n(load at the end {})", load_average());
}

/// The worst single update of each adversarial stream on dfz-v4-nh, as a
/// ratio to a full build: every change's update is timed in three replays
/// and its fastest time kept (a preemption inflates one replay, not all
/// three), then the slowest change is reported.
fn adversarial_updates() {
    let table = load_table(&data("dfz-v4-nh.txt.gz"), &LoadOptions::default()).expect("table");
    let rib = &table.v4;
    let config = LcTrieConfig::default();
    let builds: Vec<f64> = (0..3)
        .map(|_| {
            let start = Instant::now();
            let _ = LcTrieUpdater::build(&config, rib).expect("build");
            start.elapsed().as_secs_f64()
        })
        .collect();
    let build_s = median(&builds);
    let (base_updater, base_trie) = LcTrieUpdater::build(&config, rib).expect("build");
    println!(
        "\n### adversarial update streams on dfz-v4-nh (load {}); full build {:.3} s (median of [{}])\n",
        load_average(),
        build_s,
        shown(&builds)
    );
    println!("| stream | changes | mean us/change | p99.9 us | worst us | worst / build | whole stream / build |");
    println!("|---|---|---|---|---|---|---|");
    for stream in adversarial_streams_v4(rib, 1 << 20) {
        let mut best = vec![f64::INFINITY; stream.changes.len()];
        let mut totals = Vec::new();
        for _ in 0..3 {
            let (mut updater, mut trie) = (base_updater.clone(), base_trie.clone());
            let mut rib = rib.clone();
            let times = timed_updates(&mut updater, &mut trie, &mut rib, &stream.changes);
            totals.push(times.iter().filter(|t| !t.is_nan()).sum::<f64>());
            for (best, time) in best.iter_mut().zip(times) {
                *best = best.min(time);
            }
        }
        let mut effective: Vec<f64> = best.into_iter().filter(|t| t.is_finite()).collect();
        effective.sort_by(f64::total_cmp);
        let worst = effective.last().copied().unwrap_or(0.0);
        let p999 = effective[(effective.len() * 999 / 1000).min(effective.len() - 1)];
        let total = median(&totals);
        println!(
            "| {} | {} | {:.2} | {:.1} | {:.1} | {:.5} | {:.2} |",
            stream.name,
            effective.len(),
            total / effective.len() as f64 * 1e6,
            p999 * 1e6,
            worst * 1e6,
            worst / build_s,
            total / build_s
        );
    }
    println!("\n(load at the end {})", load_average());
}

/// Writes `table.txt` (one prefix) and `hosts-N.txt` update files: N host
/// routes in a row under 10.0.0.0/8 announced, then withdrawn.
fn write_storms(dir: &str) {
    use std::io::Write;
    let dir = PathBuf::from(dir);
    std::fs::write(dir.join("table.txt"), "192.0.2.0/24 1\n").expect("write");
    for n in [1 << 14, 1 << 15, 1 << 16, 1 << 17] {
        let hosts = host_routes_v4(Prefix::new_masked(0x0a00_0000, 8), n, false);
        let file = std::fs::File::create(dir.join(format!("hosts-{n}.txt"))).expect("create");
        let mut file = std::io::BufWriter::new(file);
        for prefix in &hosts {
            writeln!(file, "1 a {prefix} 192.0.2.1").expect("write");
        }
        for prefix in &hosts {
            writeln!(file, "2 w {prefix} 0.0.0.0").expect("write");
        }
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("--write-adversarial") => {
            return write_adversarial(args.get(1).map_or(".", String::as_str))
        }
        Some("--write-storms") => return write_storms(args.get(1).map_or(".", String::as_str)),
        _ => {}
    }
    let all = args.is_empty();
    let want = |name: &str| all || args.iter().any(|a| a == name);
    if want("v4") {
        dfz_v4();
    }
    if want("v6") {
        dfz_v6();
    }
    if want("adv") || want("adv-counts") {
        adversarial();
    }
    if want("updates") {
        updates();
    }
    let asked = |name: &str| args.iter().any(|a| a == name);
    if asked("bursts") {
        bursts();
    }
    if asked("storms") {
        storms();
    }
    if asked("adversarial-updates") {
        adversarial_updates();
    }
}
