//! fibkit-peers: the Rust side of the "peers side by side" benchmark.
//!
//! - `prep`: loads a table with fibkit's loader, writes it back as plain
//!   `prefix label` text for the C and Go harnesses, generates the keys with
//!   `fibkit_bench::generate_keys` and stores the reference results (fibkit's
//!   `radix`, the reference trie).
//! - `serve`: the harness of fibkit's engines (in the modes of `fibkit
//!   bench`: plain, key, reader, batch, burstN), the ceiling and the Rust
//!   peer crates `prefix-trie` and `ip_network_table-deps-treebitmap`: builds
//!   them, then runs one configuration at a time as the rounds driver asks
//!   (`rounds.rs`), by the method of `fibkit_bench` (keys precomputed,
//!   results stored, runs of at least `--min-seconds`).
//! - `rounds`: starts every harness (this one, DPDK's, bart's) and runs
//!   round 1 of all their configurations, then round 2, ...; writes each
//!   configuration's results and timing (runs in round order).
//! - `compare`: checks every engine's results against the reference, prints
//!   the rounds, the medians and the ratios to the baselines (the median of
//!   per-round ratios) and writes the JSON; exit status 1 on any
//!   disagreement.
//!
//! File formats: see `files.rs` and bench/peers/README.md.

mod compare;
mod files;
mod rounds;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use fibkit_bench::{generate_keys, parse_modes, timed_passes, BenchEngine, Mode, Pattern};
use fibkit::load::{load_table, LoadOptions};
use fibkit::{build, Addr, Label, Lookup, Rib};
use fibkit::engine::BuildError;
use fibkit::registry::EngineFamily;

use files::{Timing, NO_MATCH};
use rounds::Offer;

const USAGE: &str = "\
usage:
  fibkit-peers prep TABLE --family 4|6 --out DIR [--pattern rnd] [--keys N] [--seed S]
  fibkit-peers serve DIR [--engines dir24-8,radix] [--modes plain,key,reader,batch,burst]
                         [--burst 8,32] [--no-peers] [--min-seconds 1]
  fibkit-peers rounds DIR [--rounds 5] -- HARNESS ARGS... [:: HARNESS ARGS...]...
  fibkit-peers compare DIR... [--json FILE] [--baselines rte_fib/burst32,...]
  fibkit-peers families TABLE        (prints the families the table has: 4, 6)
  fibkit-peers engines --family 4|6  (prints fibkit's engines for the family, radix aside)";

type Result<T> = std::result::Result<T, String>;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let outcome = match args.first().map(String::as_str) {
        Some("prep") => prep(&Args::parse(&args[1..])),
        Some("serve") => serve(&Args::parse(&args[1..])),
        Some("rounds") => rounds_command(&args[1..]),
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
    let names: Vec<&str> = fibkit::registry::ENGINES
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
    // `seq-announced`: keys inside announced prefixes (`announced`),
    // chained as `seq` keys are; the pattern for dependent IPv6 lookups,
    // where uniform keys almost never match.
    let name = args.get("pattern").unwrap_or("rnd");
    let (pattern, chained): (Pattern, bool) = match name {
        "seq-announced" => (Pattern::Announced, true),
        other => {
            let pattern: Pattern = other.parse()?;
            let chained = pattern == Pattern::Seq;
            (pattern, chained)
        }
    };
    let count: usize = args.number("keys", 1 << 24)?;
    let seed: u64 = args.number("seed", 1)?;
    let loaded = load(Path::new(table))?;
    std::fs::create_dir_all(out.join("results")).map_err(|e| format!("{}: {e}", out.display()))?;
    let (prefixes, hits) = match family {
        "4" => prep_family(&loaded.v4, &pattern, chained, count, seed, &out)?,
        "6" => prep_family(&loaded.v6, &pattern, chained, count, seed, &out)?,
        other => return Err(format!("--family `{other}` is neither 4 nor 6")),
    };
    let info = format!(
        "family {family}\npattern {name}\nkeys {count}\nseed {seed}\nprefixes {prefixes}\nmatched {hits}\ntable {table}\n"
    );
    write_file(&out.join("info.txt"), info.as_bytes())?;
    println!(
        "prep: IPv{family} {prefixes} prefixes, {count} {name} keys ({:.1}% match a prefix) in {}",
        100.0 * hits as f64 / count.max(1) as f64,
        out.display()
    );
    Ok(true)
}

/// Writes table.txt, keys.bin and results/expected.res; returns (prefixes, matched keys).
fn prep_family<A: EngineFamily>(
    rib: &Rib<A>,
    pattern: &Pattern,
    chained: bool,
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
    // The reference: fibkit's `radix`, the reference trie, untimed. On
    // `seq` keys every harness chains each pass from 0, as the reference.
    let reference = build("radix", rib).map_err(|e| e.to_string())?;
    let mut expected = vec![None; keys.len()];
    if chained {
        reference.lookup_chained(&keys, &mut expected, 0);
    } else {
        reference.lookup_each(&keys, &mut expected);
    }
    let hits = expected.iter().filter(|r| r.is_some()).count();
    write_file(
        &out.join("results/expected.res"),
        &files::encode_results(&expected),
    )?;
    Ok((rib.len(), hits))
}

// ---------------------------------------------------------------- serve

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
    /// The address of treebitmap's type.
    fn from_tbm(tbm: Self::Tbm) -> Self;
}

use ip_network_table_deps_treebitmap as treebitmap;

impl PeerFamily for u32 {
    type Tbm = std::net::Ipv4Addr;
    fn tbm(self) -> Self::Tbm {
        std::net::Ipv4Addr::from(self)
    }
    fn from_tbm(tbm: Self::Tbm) -> Self {
        u32::from(tbm)
    }
}

impl PeerFamily for u128 {
    type Tbm = std::net::Ipv6Addr;
    fn tbm(self) -> Self::Tbm {
        std::net::Ipv6Addr::from(self)
    }
    fn from_tbm(tbm: Self::Tbm) -> Self {
        u128::from(tbm)
    }
}

struct ServeSettings {
    engines: Vec<String>,
    modes: Vec<Mode>,
    peers: bool,
    min: Duration,
    /// `seq` keys: each lookup's key is XORed with the label found for the
    /// one before ([`Lookup::lookup_chained`], from 0 at each pass).
    chained: bool,
}

fn serve(args: &Args) -> Result<bool> {
    let [dir] = args.positional.as_slice() else {
        return Err(format!("serve takes one DIR\n{USAGE}"));
    };
    let dir = PathBuf::from(dir);
    let info = files::read_info(&dir)?;
    let bursts = args
        .list("burst", "32")
        .iter()
        .map(|n| {
            n.parse::<usize>()
                .map_err(|_| format!("--burst `{n}` is not a number"))
        })
        .collect::<Result<Vec<usize>>>()?;
    let chained = info
        .get("pattern")
        .is_some_and(|pattern| pattern == "seq" || pattern == "seq-announced");
    let mut modes = parse_modes(&args.list("modes", "plain,batch"), &bursts)
        .map_err(|e| format!("--modes: {e}"))?;
    if chained {
        // A chained lookup waits for the one before: there is no batch to
        // make, so only the per-key call paths are offered.
        modes.retain(|mode| mode.is_per_key());
        if modes.is_empty() {
            return Err("`seq` keys take the per-key modes only (plain, key, reader)".into());
        }
    }
    let settings = ServeSettings {
        engines: args.list("engines", "dir24-8"),
        modes,
        peers: !args.flag("no-peers"),
        min: Duration::from_secs_f64(args.number("min-seconds", 1.0f64)?.max(0.0)),
        chained,
    };
    let loaded = load(&dir.join("table.txt"))?;
    match info.get("family").map(String::as_str) {
        Some("4") => serve_family(&loaded.v4, &dir, &settings)?,
        Some("6") => serve_family(&loaded.v6, &dir, &settings)?,
        other => return Err(format!("info.txt: bad family {other:?}")),
    }
    Ok(true)
}

/// The shape of a fibkit mode for the report: `key` for the per-key
/// modes (one address per call, like a peer's lookup), `burstN`, `batch`.
fn shape(mode: Mode) -> String {
    if mode.is_per_key() {
        "key".into()
    } else {
        mode.to_string()
    }
}

/// How a `seq` key is combined with the label found for the one before.
type Chain<K> = Option<fn(K, Label) -> K>;

/// One run of a peer's per-key loop: passes over `keys` until `min` has
/// elapsed (the loop of `fibkit_bench`), Mlps. With `chain` (`seq` keys)
/// each key is first combined with the label found for the one before (0
/// at the start of each pass) by `chain(key, label)`.
fn peer_run<K: Copy>(
    keys: &[K],
    out: &mut [Option<Label>],
    min: Duration,
    chain: Chain<K>,
    mut lookup: impl FnMut(K) -> Option<Label>,
) -> f64 {
    let (passes, elapsed) = timed_passes(min, || match chain {
        Some(chain) => {
            let mut previous = 0;
            for (key, result) in keys.iter().zip(out.iter_mut()) {
                let label = lookup(chain(*key, previous));
                *result = label;
                previous = label.unwrap_or(0);
            }
        }
        None => {
            for (key, result) in keys.iter().zip(out.iter_mut()) {
                *result = lookup(*key);
            }
        }
    });
    std::hint::black_box(&*out);
    (passes * keys.len() as u64) as f64 / elapsed.as_secs_f64() / 1e6
}

/// Builds fibkit's engines, the ceiling and the Rust peers, then serves
/// their configurations over the rounds protocol on standard input and
/// output (progress goes to standard error).
fn serve_family<A: PeerFamily>(rib: &Rib<A>, dir: &Path, settings: &ServeSettings) -> Result<()>
where
    (A, u8): prefix_trie::Prefix,
{
    let keys: Vec<A> = files::read_keys(&dir.join("keys.bin"))?;
    eprintln!(
        "fibkit-peers: IPv{} {} keys, {} prefixes",
        if A::BITS == 32 { 4 } else { 6 },
        keys.len(),
        rib.len()
    );
    let readers = settings.modes.contains(&Mode::Reader);
    let mut engines = Vec::new();
    for spec in &settings.engines {
        match BenchEngine::<A>::build(spec, rib, readers) {
            Ok(engine) => engines.push(engine),
            Err(BuildError::UnsupportedFamily { .. }) => {
                eprintln!("  {spec:<24} skipped: no {} support", A::FAMILY);
            }
            Err(e) => return Err(e.to_string()),
        }
    }
    let mut offers = Vec::new();
    let offer = |name: String, kind: &str, shape: String, build: Duration| Offer {
        name,
        kind: kind.into(),
        shape,
        build_seconds: build.as_secs_f64(),
    };
    // What each offer runs, by index.
    enum Subject {
        Engine(usize, Mode),
        Ceiling,
        PrefixTrie,
        TreeBitmap,
    }
    let mut subjects = Vec::new();
    for (index, engine) in engines.iter().enumerate() {
        for &mode in &settings.modes {
            let name = format!("{}/{mode}", engine.spec());
            let build = Duration::from_secs_f64(engine.build_seconds());
            offers.push(offer(name, "fibkit", shape(mode), build));
            subjects.push(Subject::Engine(index, mode));
        }
    }
    // The practical per-core limit (fibkit_bench::Ceiling: one load from a
    // 2^16-entry array per key through the same loop): on a shared machine it
    // shows how much of the core the run had.
    let ceiling = fibkit_bench::Ceiling::default();
    offers.push(offer(
        "ceiling".into(),
        "ceiling",
        "key".into(),
        Duration::ZERO,
    ));
    subjects.push(Subject::Ceiling);

    // prefix-trie: a map from (address bits, length) tuples; the key is looked
    // up as a full-length prefix.
    let start = Instant::now();
    let mut map = prefix_trie::PrefixMap::<(A, u8), u32>::new();
    // treebitmap: std address types, converted before timing like every
    // peer's keys.
    let mut tbm = treebitmap::IpLookupTable::<A::Tbm, u32>::new();
    let mut tbm_keys = Vec::new();
    if settings.peers {
        for (prefix, label) in rib.iter() {
            map.insert((prefix.addr(), prefix.plen()), label);
        }
        offers.push(offer(
            "prefix-trie".into(),
            "peer",
            "key".into(),
            start.elapsed(),
        ));
        subjects.push(Subject::PrefixTrie);
        let start = Instant::now();
        for (prefix, label) in rib.iter() {
            tbm.insert(prefix.addr().tbm(), prefix.plen() as u32, label);
        }
        offers.push(offer(
            "treebitmap".into(),
            "peer",
            "key".into(),
            start.elapsed(),
        ));
        subjects.push(Subject::TreeBitmap);
        tbm_keys = keys.iter().map(|k| k.tbm()).collect();
    }
    let full = A::BITS;
    let (min, chained) = (settings.min, settings.chained);
    // The chain of `Lookup::lookup_chained`: the label XORed into the key.
    let chain: Chain<A> = chained.then_some(|key: A, label: Label| key ^ A::from_u64(label as u64));
    let chain_tbm: Chain<A::Tbm> = chained.then_some(|key: A::Tbm, label: Label| {
        (A::from_tbm(key) ^ A::from_u64(label as u64)).tbm()
    });
    let run = |index: usize, out: &mut [Option<Label>]| match subjects[index] {
        Subject::Engine(engine, mode) => {
            engines[engine].run(&keys, out, mode, chained, 1, min).mlps
        }
        Subject::Ceiling => {
            fibkit_bench::run(|| &ceiling, &keys, out, Mode::Plain, chained, 1, min).mlps
        }
        Subject::PrefixTrie => peer_run(&keys, out, min, chain, |key| {
            map.get_lpm(&(key, full)).map(|(_, label)| *label)
        }),
        Subject::TreeBitmap => peer_run(&tbm_keys, out, min, chain_tbm, |key| {
            tbm.longest_match(key).map(|(_, _, label)| *label)
        }),
    };
    let stdin = std::io::stdin();
    rounds::serve(&offers, keys.len(), run, stdin.lock(), std::io::stdout())
}

// ---------------------------------------------------------------- rounds

/// `rounds DIR --rounds N -- HARNESS... [:: HARNESS...]...`: the harness
/// commands follow `--`, separated by `::`.
fn rounds_command(raw: &[String]) -> Result<bool> {
    let split = raw
        .iter()
        .position(|a| a == "--")
        .ok_or_else(|| format!("rounds needs `-- HARNESS...`\n{USAGE}"))?;
    let args = Args::parse(&raw[..split]);
    let [dir] = args.positional.as_slice() else {
        return Err(format!("rounds takes one DIR\n{USAGE}"));
    };
    let rounds: usize = args.number("rounds", 5)?;
    if rounds == 0 {
        return Err("--rounds must be at least 1".into());
    }
    let commands: Vec<Vec<String>> = raw[split + 1..]
        .split(|a| a == "::")
        .filter(|c| !c.is_empty())
        .map(<[String]>::to_vec)
        .collect();
    if commands.is_empty() {
        return Err(format!(
            "rounds needs at least one harness command\n{USAGE}"
        ));
    }
    rounds::drive(Path::new(dir), rounds, &commands)?;
    Ok(true)
}

// ---------------------------------------------------------------- compare

fn compare_dirs(args: &Args) -> Result<bool> {
    if args.positional.is_empty() {
        return Err(format!("compare takes at least one DIR\n{USAGE}"));
    }
    let mut all_agree = true;
    let mut sections = Vec::new();
    for dir in &args.positional {
        let (agree, section) = compare_dir(Path::new(dir), &args.list("baselines", ""))?;
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

/// Compares one prepared directory and prints its report, with ratios to
/// `baselines` (default: every peer); returns (all agree, JSON section).
fn compare_dir(dir: &Path, baselines: &[String]) -> Result<(bool, serde_json::Value)> {
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
        rows.push(compare::Row {
            agrees: disagreement.agrees(),
            disagreeing: disagreement.count,
            timing,
        });
    }
    if rows.is_empty() {
        return Err(format!("{}: no engine results", results.display()));
    }
    // fibkit's configurations, then the peers', then the ceiling; each by
    // keys per call.
    let kind_rank = |kind: &str| {
        ["fibkit", "peer", "ceiling"]
            .iter()
            .position(|k| *k == kind)
    };
    rows.sort_by_key(|r| {
        (
            kind_rank(&r.timing.kind),
            rounds::keys_per_call(&r.timing.shape),
            r.timing.engine.clone(),
        )
    });
    let baseline_rows: Vec<&compare::Row> = if baselines.is_empty() {
        rows.iter().filter(|r| r.timing.kind == "peer").collect()
    } else {
        // Baselines of the other family (or of a CPU without AVX-512) are
        // skipped.
        baselines
            .iter()
            .filter_map(|name| rows.iter().find(|r| &r.timing.engine == name))
            .collect()
    };
    if !baselines.is_empty() && baseline_rows.is_empty() {
        println!(
            "none of the baselines was measured here: {}",
            baselines.join(", ")
        );
    }
    let json_engines: Vec<serde_json::Value> = rows
        .iter()
        .map(|row| {
            let timing = &row.timing;
            let (median, min, max) = timing.summary();
            let ratios: Vec<fibkit_bench::Ratio> = if timing.kind == "fibkit" {
                baseline_rows.iter().map(|b| row.ratio(b)).collect()
            } else {
                Vec::new()
            };
            serde_json::json!({
                "engine": timing.engine,
                "kind": timing.kind,
                "shape": timing.shape,
                "keys": timing.keys,
                "build_seconds": timing.build_seconds,
                "runs_mlps": timing.runs_mlps,
                "median_mlps": median,
                "min_mlps": min,
                "max_mlps": max,
                "agrees": row.agrees,
                "disagreeing_keys": row.disagreeing,
                "ratios": ratios,
            })
        })
        .collect();
    println!("Mlps of every round (the rounds alternate all configurations; medians over rounds)");
    print!("{}", compare::rounds_table(&rows));
    if !baseline_rows.is_empty() {
        println!();
        println!(
            "fibkit over each baseline: median of the per-round ratios (above 1: fibkit is faster)"
        );
        print!("{}", compare::ratio_table(&rows, &baseline_rows));
        println!();
        println!("fibkit over the baselines of the same shape, round by round");
        print!("{}", compare::paired_rounds(&rows, &baseline_rows));
    }
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
