//! fibkit-peers: the Rust side of the "peers side by side" benchmark.
//!
//! - `prep`: loads a table with fibkit's loader, writes it back as plain
//!   `prefix label` text for the C and Go harnesses, generates the keys with
//!   `fibkit::bench::generate_keys` and stores the reference results (fibkit's
//!   `radix`, the reference trie).
//! - `run`: times fibkit's engines (plain and batch loops) and the Rust peer
//!   crates `prefix-trie` and `ip_network_table-deps-treebitmap` on those
//!   keys, by the method of `fibkit::bench` (keys precomputed, results stored,
//!   runs of at least `--min-seconds`, median of `--runs`), and writes each
//!   engine's results and timing.
//! - `compare`: checks every engine's results against the reference, prints
//!   the side-by-side table and writes the JSON; exit status 1 on any
//!   disagreement.
//!
//! File formats: see `files.rs` and bench/peers/README.md.

mod compare;
mod files;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use fibkit::bench::{generate_keys, Pattern};
use fibkit::load::{load_table, LoadOptions};
use fibkit::{build, Addr, BuildError, EngineConfig, EngineFamily, Label, Lookup, Rib};

use files::{Timing, NO_MATCH};

const USAGE: &str = "\
usage:
  fibkit-peers prep TABLE --family 4|6 --out DIR [--pattern rnd] [--keys N] [--seed S]
  fibkit-peers run DIR [--engines dir24-8,radix] [--modes plain,batch] [--no-peers]
                       [--min-seconds 1] [--runs 5]
  fibkit-peers compare DIR... [--json FILE]
  fibkit-peers families TABLE        (prints the families the table has: 4, 6)
  fibkit-peers engines --family 4|6  (prints fibkit's engines for the family, radix aside)";

type Result<T> = std::result::Result<T, String>;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let outcome = match args.first().map(String::as_str) {
        Some("prep") => prep(&Args::parse(&args[1..])),
        Some("run") => run(&Args::parse(&args[1..])),
        Some("compare") => compare_dirs(&Args::parse(&args[1..])),
        Some("families") => families(&Args::parse(&args[1..])),
        Some("engines") => engines(&Args::parse(&args[1..])),
        _ => Err(USAGE.to_string()),
    };
    match outcome {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(message) => {
            eprintln!("fibkit-peers: {message}");
            ExitCode::from(2)
        }
    }
}

/// Positional arguments and `--name value` options (`--flag` alone for flags).
struct Args {
    positional: Vec<String>,
    options: BTreeMap<String, Option<String>>,
}

impl Args {
    const FLAGS: [&'static str; 1] = ["no-peers"];

    fn parse(args: &[String]) -> Args {
        let mut positional = Vec::new();
        let mut options = BTreeMap::new();
        let mut iter = args.iter();
        while let Some(arg) = iter.next() {
            match arg.strip_prefix("--") {
                Some(name) if Self::FLAGS.contains(&name) => {
                    options.insert(name.to_string(), None);
                }
                Some(name) => {
                    options.insert(name.to_string(), iter.next().cloned());
                }
                None => positional.push(arg.clone()),
            }
        }
        Args {
            positional,
            options,
        }
    }

    fn get(&self, name: &str) -> Option<&str> {
        self.options.get(name).and_then(|v| v.as_deref())
    }

    fn flag(&self, name: &str) -> bool {
        self.options.contains_key(name)
    }

    fn number<T: std::str::FromStr>(&self, name: &str, default: T) -> Result<T> {
        match self.get(name) {
            None => Ok(default),
            Some(text) => text
                .parse()
                .map_err(|_| format!("--{name} `{text}` is not a number")),
        }
    }

    fn list(&self, name: &str, default: &str) -> Vec<String> {
        self.get(name)
            .unwrap_or(default)
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(String::from)
            .collect()
    }
}

fn write_file(path: &Path, bytes: &[u8]) -> Result<()> {
    std::fs::write(path, bytes).map_err(|e| format!("{}: {e}", path.display()))
}

fn read_file(path: &Path) -> Result<Vec<u8>> {
    std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))
}

fn load(path: &Path) -> Result<fibkit::load::LoadedTable> {
    load_table(path, &LoadOptions::default()).map_err(|e| e.to_string())
}

// ---------------------------------------------------------------- helpers for run.sh

fn families(args: &Args) -> Result<bool> {
    let [table] = args.positional.as_slice() else {
        return Err(format!("families takes one TABLE\n{USAGE}"));
    };
    let loaded = load(Path::new(table))?;
    let mut found = Vec::new();
    if !loaded.v4.is_empty() {
        found.push("4");
    }
    if !loaded.v6.is_empty() {
        found.push("6");
    }
    println!("{}", found.join(" "));
    Ok(true)
}

/// fibkit's registered engines for a family with default parameters, except
/// `radix`: it is the reference the results are checked against, and at a
/// few Mlps it would take most of the run's time (unless it is the only one).
fn engines(args: &Args) -> Result<bool> {
    let family = args.get("family").unwrap_or("4");
    let names: Vec<&str> = fibkit::ENGINES
        .iter()
        .filter(|info| info.name != "radix")
        .filter(|info| if family == "6" { info.ipv6 } else { info.ipv4 })
        .map(|info| info.name)
        .collect();
    // With no other engine for the family, fibkit is represented by radix.
    println!(
        "{}",
        if names.is_empty() {
            "radix".to_string()
        } else {
            names.join(",")
        }
    );
    Ok(true)
}

// ---------------------------------------------------------------- prep

fn prep(args: &Args) -> Result<bool> {
    let [table] = args.positional.as_slice() else {
        return Err(format!("prep takes one TABLE\n{USAGE}"));
    };
    let out = PathBuf::from(args.get("out").ok_or("prep needs --out DIR")?);
    let family = args.get("family").unwrap_or("4");
    let pattern: Pattern = args.get("pattern").unwrap_or("rnd").parse()?;
    if matches!(pattern, Pattern::Seq) {
        return Err("`seq` chains each lookup through the previous result; peers have no such loop (use rnd, rnd-public, announced, rep or trace:FILE)".into());
    }
    let count: usize = args.number("keys", 1 << 24)?;
    let seed: u64 = args.number("seed", 1)?;
    let loaded = load(Path::new(table))?;
    std::fs::create_dir_all(out.join("results")).map_err(|e| format!("{}: {e}", out.display()))?;
    let (prefixes, hits) = match family {
        "4" => prep_family(&loaded.v4, &pattern, count, seed, &out)?,
        "6" => prep_family(&loaded.v6, &pattern, count, seed, &out)?,
        other => return Err(format!("--family `{other}` is neither 4 nor 6")),
    };
    let info = format!(
        "family {family}\npattern {}\nkeys {count}\nseed {seed}\nprefixes {prefixes}\nmatched {hits}\ntable {table}\n",
        pattern.name()
    );
    write_file(&out.join("info.txt"), info.as_bytes())?;
    println!(
        "prep: IPv{family} {prefixes} prefixes, {count} {} keys ({:.1}% match a prefix) in {}",
        pattern.name(),
        100.0 * hits as f64 / count.max(1) as f64,
        out.display()
    );
    Ok(true)
}

/// Writes table.txt, keys.bin and results/expected.res; returns (prefixes, matched keys).
fn prep_family<A: EngineFamily>(
    rib: &Rib<A>,
    pattern: &Pattern,
    count: usize,
    seed: u64,
    out: &Path,
) -> Result<(usize, usize)> {
    if rib.is_empty() {
        return Err(format!("the table has no {} prefix", A::FAMILY));
    }
    let mut text = String::new();
    for (prefix, label) in rib.iter() {
        if label == NO_MATCH {
            return Err(format!(
                "{prefix} has label {NO_MATCH}, which the result files use for `no match`: out of scope"
            ));
        }
        text.push_str(&format!("{prefix} {label}\n"));
    }
    write_file(&out.join("table.txt"), text.as_bytes())?;
    let keys = generate_keys(pattern, count, seed, rib).map_err(|e| e.to_string())?;
    files::write_keys(&out.join("keys.bin"), &keys)?;
    // The reference: fibkit's `radix`, the reference trie, untimed.
    let reference = build("radix", rib).map_err(|e| e.to_string())?;
    let mut expected = vec![None; keys.len()];
    reference.lookup_each(&keys, &mut expected);
    let hits = expected.iter().filter(|r| r.is_some()).count();
    write_file(
        &out.join("results/expected.res"),
        &files::encode_results(&expected),
    )?;
    Ok((rib.len(), hits))
}

// ---------------------------------------------------------------- run

/// The method of `fibkit::bench::measure`: `runs` runs, each passing over the
/// whole key array until at least `min` has elapsed, every result stored.
/// Returns Mlps per run.
fn time_runs(
    keys: usize,
    out: &mut [Option<Label>],
    min: Duration,
    runs: usize,
    mut pass: impl FnMut(&mut [Option<Label>]),
) -> Vec<f64> {
    (0..runs.max(1))
        .map(|_| {
            let start = Instant::now();
            let mut lookups = 0u64;
            loop {
                pass(out);
                lookups += keys as u64;
                let elapsed = start.elapsed();
                if elapsed >= min {
                    std::hint::black_box(&*out);
                    return lookups as f64 / elapsed.as_secs_f64() / 1e6;
                }
            }
        })
        .collect()
}

/// Families the Rust peers handle: the prefix-trie key type and the
/// treebitmap address type.
trait PeerFamily: EngineFamily
where
    (Self, u8): prefix_trie::Prefix,
{
    /// The treebitmap crate's address type.
    type Tbm: treebitmap::address::Address + Copy;
    /// The address in treebitmap's type.
    fn tbm(self) -> Self::Tbm;
}

use ip_network_table_deps_treebitmap as treebitmap;

impl PeerFamily for u32 {
    type Tbm = std::net::Ipv4Addr;
    fn tbm(self) -> Self::Tbm {
        std::net::Ipv4Addr::from(self)
    }
}

impl PeerFamily for u128 {
    type Tbm = std::net::Ipv6Addr;
    fn tbm(self) -> Self::Tbm {
        std::net::Ipv6Addr::from(self)
    }
}

struct RunSettings {
    engines: Vec<String>,
    modes: Vec<String>,
    peers: bool,
    min: Duration,
    runs: usize,
}

fn run(args: &Args) -> Result<bool> {
    let [dir] = args.positional.as_slice() else {
        return Err(format!("run takes one DIR\n{USAGE}"));
    };
    let dir = PathBuf::from(dir);
    let info = files::read_info(&dir)?;
    let settings = RunSettings {
        engines: args.list("engines", "dir24-8"),
        modes: args.list("modes", "plain,batch"),
        peers: !args.flag("no-peers"),
        min: Duration::from_secs_f64(args.number("min-seconds", 1.0f64)?.max(0.0)),
        runs: args.number("runs", 5usize)?,
    };
    for mode in &settings.modes {
        if mode != "plain" && mode != "batch" {
            return Err(format!("mode `{mode}` is neither plain nor batch"));
        }
    }
    let loaded = load(&dir.join("table.txt"))?;
    match info.get("family").map(String::as_str) {
        Some("4") => run_family(&loaded.v4, &dir, &settings)?,
        Some("6") => run_family(&loaded.v6, &dir, &settings)?,
        other => return Err(format!("info.txt: bad family {other:?}")),
    }
    Ok(true)
}

fn store(dir: &Path, timing: &Timing, results: &[Option<Label>]) -> Result<()> {
    let (median, min, max) = timing.summary();
    println!(
        "  {:<24} {median:8.2} Mlps ({min:.2}-{max:.2}), build {:.2} s",
        timing.engine, timing.build_seconds
    );
    let stem = dir.join("results").join(files::file_stem(&timing.engine));
    write_file(&stem.with_extension("res"), &files::encode_results(results))?;
    write_file(&stem.with_extension("timing"), timing.to_line().as_bytes())
}

fn run_family<A: PeerFamily>(rib: &Rib<A>, dir: &Path, settings: &RunSettings) -> Result<()>
where
    (A, u8): prefix_trie::Prefix,
{
    let keys: Vec<A> = files::read_keys(&dir.join("keys.bin"))?;
    let mut out = vec![None; keys.len()];
    let timing = |kind: &str, engine: String, build: Duration, runs_mlps| Timing {
        kind: kind.into(),
        engine,
        keys: keys.len() as u64,
        build_seconds: build.as_secs_f64(),
        runs_mlps,
    };
    println!(
        "fibkit-peers: IPv{} {} keys, {} prefixes",
        if A::BITS == 32 { 4 } else { 6 },
        keys.len(),
        rib.len()
    );
    for spec in &settings.engines {
        let start = Instant::now();
        let engine = match build(spec, rib) {
            Ok(engine) => engine,
            Err(BuildError::UnsupportedFamily { .. }) => {
                println!("  {spec:<24} skipped: no {} support", A::FAMILY);
                continue;
            }
            Err(e) => return Err(e.to_string()),
        };
        let build_time = start.elapsed();
        for mode in &settings.modes {
            let runs = time_runs(keys.len(), &mut out, settings.min, settings.runs, |out| {
                if mode == "batch" {
                    engine.lookup_batch(&keys, out)
                } else {
                    engine.lookup_each(&keys, out)
                }
            });
            let name = format!("{}/{mode}", canonical::<A>(spec));
            store(dir, &timing("fibkit", name, build_time, runs), &out)?;
        }
    }
    // The practical per-core limit (fibkit::bench::Ceiling: one load from a
    // 2^16-entry array per key through the same loop): on a shared machine it
    // shows how much of the core the run had.
    let ceiling = fibkit::bench::Ceiling::default();
    let runs = time_runs(keys.len(), &mut out, settings.min, settings.runs, |out| {
        Lookup::<A>::lookup_each(&ceiling, &keys, out)
    });
    store(
        dir,
        &timing("ceiling", "ceiling".into(), Duration::ZERO, runs),
        &out,
    )?;

    if !settings.peers {
        return Ok(());
    }

    // prefix-trie: a map from (address bits, length) tuples; the key is looked
    // up as a full-length prefix.
    let start = Instant::now();
    let mut map = prefix_trie::PrefixMap::<(A, u8), u32>::new();
    for (prefix, label) in rib.iter() {
        map.insert((prefix.addr(), prefix.plen()), label);
    }
    let build_time = start.elapsed();
    let full = A::BITS;
    let runs = time_runs(keys.len(), &mut out, settings.min, settings.runs, |out| {
        for (key, result) in keys.iter().zip(out.iter_mut()) {
            *result = map.get_lpm(&(*key, full)).map(|(_, label)| *label);
        }
    });
    store(
        dir,
        &timing("peer", "prefix-trie".into(), build_time, runs),
        &out,
    )?;
    drop(map);

    // treebitmap: std address types, converted before timing like every
    // peer's keys.
    let start = Instant::now();
    let mut tbm = treebitmap::IpLookupTable::<A::Tbm, u32>::new();
    for (prefix, label) in rib.iter() {
        tbm.insert(prefix.addr().tbm(), prefix.plen() as u32, label);
    }
    let build_time = start.elapsed();
    let tbm_keys: Vec<A::Tbm> = keys.iter().map(|k| k.tbm()).collect();
    let runs = time_runs(keys.len(), &mut out, settings.min, settings.runs, |out| {
        for (key, result) in tbm_keys.iter().zip(out.iter_mut()) {
            *result = tbm.longest_match(*key).map(|(_, _, label)| *label);
        }
    });
    store(
        dir,
        &timing("peer", "treebitmap".into(), build_time, runs),
        &out,
    )?;
    Ok(())
}

// ---------------------------------------------------------------- compare

fn compare_dirs(args: &Args) -> Result<bool> {
    if args.positional.is_empty() {
        return Err(format!("compare takes at least one DIR\n{USAGE}"));
    }
    let mut all_agree = true;
    let mut sections = Vec::new();
    for dir in &args.positional {
        let (agree, section) = compare_dir(Path::new(dir))?;
        all_agree &= agree;
        sections.push(section);
    }
    if let Some(json) = args.get("json") {
        let document = serde_json::json!({
            "generated_unix": std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_secs())
                .unwrap_or(0),
            "cpu": cpu_model(),
            "all_agree": all_agree,
            "sections": sections,
        });
        let text = serde_json::to_string_pretty(&document).map_err(|e| e.to_string())?;
        write_file(Path::new(json), text.as_bytes())?;
        println!("results saved to {json}");
    }
    if !all_agree {
        println!("FAIL: engines disagree with the reference (see above)");
    }
    Ok(all_agree)
}

fn cpu_model() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|text| {
            text.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split_once(':'))
                .map(|(_, v)| v.trim().to_string())
        })
        .unwrap_or_default()
}

/// Compares one prepared directory; returns (all agree, JSON section).
fn compare_dir(dir: &Path) -> Result<(bool, serde_json::Value)> {
    let info = files::read_info(dir)?;
    let family = info.get("family").cloned().unwrap_or_default();
    // Keys in text form, for the disagreement report.
    let keys_path = dir.join("keys.bin");
    let show_key: Box<dyn Fn(usize) -> String> = if family == "6" {
        let keys = files::read_keys::<u128>(&keys_path)?;
        Box::new(move |i| {
            keys.get(i)
                .map(|k| k.display().to_string())
                .unwrap_or_default()
        })
    } else {
        let keys = files::read_keys::<u32>(&keys_path)?;
        Box::new(move |i| {
            keys.get(i)
                .map(|k| k.display().to_string())
                .unwrap_or_default()
        })
    };
    let results = dir.join("results");
    let expected = files::decode_results(&read_file(&results.join("expected.res"))?)?;
    let mut entries: Vec<PathBuf> = std::fs::read_dir(&results)
        .map_err(|e| format!("{}: {e}", results.display()))?
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|path| path.extension().is_some_and(|e| e == "timing"))
        .collect();
    entries.sort();
    let mut rows = Vec::new();
    let mut json_engines = Vec::new();
    let mut all_agree = true;
    println!();
    println!(
        "IPv{family}, {} prefixes of {}, {} `{}` keys ({} match a prefix)",
        info.get("prefixes").map_or("?", String::as_str),
        info.get("table").map_or("?", String::as_str),
        expected.len(),
        info.get("pattern").map_or("?", String::as_str),
        info.get("matched").map_or("?", String::as_str),
    );
    for timing_path in entries {
        let text = std::fs::read_to_string(&timing_path)
            .map_err(|e| format!("{}: {e}", timing_path.display()))?;
        let timing = Timing::parse(&text).map_err(|e| format!("{}: {e}", timing_path.display()))?;
        // The ceiling's "results" are table entries, not lookups: not compared.
        let disagreement = if timing.kind == "ceiling" {
            compare::Disagreement::default()
        } else {
            let got = files::decode_results(&read_file(&timing_path.with_extension("res"))?)?;
            compare::compare(&expected, &got, 5)
        };
        if !disagreement.agrees() {
            all_agree = false;
            match disagreement.wrong_length {
                Some((want, have)) => println!(
                    "DISAGREEMENT {}: {have} results for {want} keys",
                    timing.engine
                ),
                None => println!(
                    "DISAGREEMENT {}: {} of {} keys differ from the reference (radix)",
                    timing.engine,
                    disagreement.count,
                    expected.len()
                ),
            }
            for (index, want, have) in &disagreement.first {
                println!(
                    "  key {index} {}: expected {}, got {}",
                    show_key(*index),
                    compare::show(*want),
                    compare::show(*have)
                );
            }
        }
        let (median, min, max) = timing.summary();
        json_engines.push(serde_json::json!({
            "engine": timing.engine,
            "kind": timing.kind,
            "keys": timing.keys,
            "build_seconds": timing.build_seconds,
            "runs_mlps": timing.runs_mlps,
            "median_mlps": median,
            "min_mlps": min,
            "max_mlps": max,
            "agrees": disagreement.agrees(),
            "disagreeing_keys": disagreement.count,
        }));
        rows.push(compare::Row {
            agrees: disagreement.agrees(),
            timing,
        });
    }
    if rows.is_empty() {
        return Err(format!("{}: no engine results", results.display()));
    }
    // fibkit's engines first, then the peers, each as they were named.
    rows.sort_by(|a, b| a.timing.kind.cmp(&b.timing.kind));
    print!("{}", compare::table(&rows));
    Ok((
        all_agree,
        serde_json::json!({
            "family": family,
            "pattern": info.get("pattern"),
            "keys": expected.len(),
            "seed": info.get("seed"),
            "prefixes": info.get("prefixes"),
            "matched": info.get("matched"),
            "table": info.get("table"),
            "all_agree": all_agree,
            "engines": json_engines,
        }),
    ))
}

/// The canonical form of an engine spec (`dxr` is `dxr:k=20`).
fn canonical<A: EngineFamily>(spec: &str) -> String {
    A::Config::parse(spec).map_or_else(|_| spec.to_string(), |config| config.to_string())
}
