//! Measurements for docs/BENCHMARKS.md, section "LC-trie".
//!
//! ```text
//! cargo run --release -p fibkit --example lctrie_bench [-- SECTION...]
//! ```
//! Sections: `v4` (dfz-v4-nh), `v6` (dfz-v6-nh), `adv` (the adversarial
//! table), `updates` (LINX stream replayed onto dfz-v4-nh); all by default.
//! Look-ups use the library's benchmark method (`fibkit::bench::measure`):
//! 2^24 keys generated before timing, results stored, 5 runs of one pass
//! each, median reported. `dir24-8` runs beside on IPv4 for a ratio.
//! `--write-adversarial DIR` writes the adversarial table and its deep
//! addresses as `fibkit`-readable files instead.

use std::path::PathBuf;
use std::time::Instant;

use fibkit::bench::{self, Mode, Pattern, Settings};
use fibkit::engines::lctrie::{
    adversarial_table_v4, LcTrie, LcTrieConfig, LcTrieUpdater, LookupAlgo, SlotLayout,
};
use fibkit::load::{load_table, load_updates, AnyChange, LoadOptions};
use fibkit::{Addr, Change, ConfigV4, EngineV4, Lookup, Rib, Updater};
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

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("--write-adversarial") {
        write_adversarial(args.get(1).map_or(".", String::as_str));
        return;
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
}
