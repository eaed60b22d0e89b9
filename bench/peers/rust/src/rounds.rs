//! Alternating rounds across harnesses: every harness (fibkit's, DPDK's,
//! bart's) builds its tables once and then runs one configuration at a
//! time when told to, so the driver can run round 1 of every configuration
//! of every harness, then round 2, and so on. On a shared machine the load
//! moves one figure by up to 2x between runs seconds apart; runs in one
//! round share the load of their moment, so ratios taken round by round
//! cancel most of it.
//!
//! The protocol, one line per message, tab-separated fields:
//!
//! - harness, after building: `config NAME KIND SHAPE BUILD_SECONDS` for
//!   each configuration (KIND `fibkit`, `peer` or `ceiling`; SHAPE `key`,
//!   `x4`, `burstN` or `batch`), then `ready`;
//! - driver: `run NAME FILE`, harness: one run of NAME (passes over all
//!   keys until its minimum duration has elapsed), then `mlps VALUE`; when
//!   FILE is not empty the harness also writes the run's results there (a
//!   `.res` file: one little-endian u32 label per key, u32::MAX for none);
//! - driver: `quit` (or end of input): the harness exits with status 0.
//!
//! Lines of a harness's standard output that are no message (DPDK's EAL
//! logs to standard output) are passed on to standard error.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::Instant;

use fibkit::Label;

use crate::files::{self, Timing};

/// A configuration a harness offers, as announced.
#[derive(Clone, Debug, PartialEq)]
pub struct Offer {
    /// The configuration's name (`dxr:k=20/burst32`, `rte_fib/burst32`).
    pub name: String,
    /// `fibkit`, `peer` or `ceiling`.
    pub kind: String,
    /// `key`, `x4`, `burstN` or `batch`.
    pub shape: String,
    /// Seconds to build the structure it looks up in.
    pub build_seconds: f64,
}

impl Offer {
    /// The `config` message.
    pub fn message(&self) -> String {
        format!(
            "config\t{}\t{}\t{}\t{:.4}",
            self.name, self.kind, self.shape, self.build_seconds
        )
    }
}

/// Keys per call of a shape, for ordering a round: `key` 1, `x4` 4,
/// `burstN` N, `batch` (and anything else) after every burst.
pub fn keys_per_call(shape: &str) -> usize {
    match shape {
        "key" => 1,
        "x4" => 4,
        _ => shape
            .strip_prefix("burst")
            .and_then(|n| n.parse().ok())
            .unwrap_or(usize::MAX),
    }
}

/// A harness's side of the protocol: announces `offers`, then runs them as
/// `input` asks (`run(index, out)` does one run into `out` and returns its
/// Mlps) until `quit` or the end of `input`.
pub fn serve(
    offers: &[Offer],
    keys: usize,
    mut run: impl FnMut(usize, &mut [Option<Label>]) -> f64,
    input: impl BufRead,
    mut output: impl Write,
) -> Result<(), String> {
    let io = |e: std::io::Error| e.to_string();
    for offer in offers {
        writeln!(output, "{}", offer.message()).map_err(io)?;
    }
    writeln!(output, "ready").map_err(io)?;
    output.flush().map_err(io)?;
    let mut out = vec![None; keys];
    for line in input.lines() {
        let line = line.map_err(io)?;
        let mut words = line.splitn(3, ['\t', ' ']);
        match (words.next(), words.next(), words.next()) {
            (Some("quit"), _, _) => break,
            (Some("run"), Some(name), file) => {
                let index = offers
                    .iter()
                    .position(|offer| offer.name == name)
                    .ok_or_else(|| format!("no configuration `{name}`"))?;
                let mlps = run(index, &mut out);
                if let Some(file) = file.filter(|f| !f.is_empty()) {
                    std::fs::write(file, files::encode_results(&out))
                        .map_err(|e| format!("{file}: {e}"))?;
                }
                writeln!(output, "mlps\t{mlps:.4}").map_err(io)?;
                output.flush().map_err(io)?;
            }
            _ => return Err(format!("unknown command `{line}`")),
        }
    }
    Ok(())
}

/// A message from a harness.
#[derive(Debug, PartialEq)]
enum Message {
    Config(Offer),
    Ready,
    Mlps(f64),
}

/// Parses a line of a harness's output; `None` for lines that are no
/// message.
fn parse_message(line: &str) -> Result<Option<Message>, String> {
    let fields: Vec<&str> = line.trim_end_matches(['\r', '\n']).split('\t').collect();
    let number = |text: &str| {
        text.parse::<f64>()
            .map_err(|_| format!("`{text}` is not a number in `{line}`"))
    };
    Ok(Some(match fields.as_slice() {
        ["ready"] => Message::Ready,
        ["mlps", value] => Message::Mlps(number(value)?),
        ["config", name, kind, shape, build] => Message::Config(Offer {
            name: name.to_string(),
            kind: kind.to_string(),
            shape: shape.to_string(),
            build_seconds: number(build)?,
        }),
        ["config" | "mlps", ..] => return Err(format!("malformed message `{line}`")),
        _ => return Ok(None),
    }))
}

/// A running harness.
struct Harness {
    command: String,
    child: Child,
    input: ChildStdin,
    output: BufReader<ChildStdout>,
}

impl Harness {
    fn start(argv: &[String]) -> Result<Harness, String> {
        let command = argv.join(" ");
        let (program, args) = argv.split_first().ok_or("an empty harness command")?;
        let mut child = Command::new(program)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .map_err(|e| format!("`{command}`: {e}"))?;
        let input = child.stdin.take().ok_or("no standard input")?;
        let output = BufReader::new(child.stdout.take().ok_or("no standard output")?);
        Ok(Harness {
            command,
            child,
            input,
            output,
        })
    }

    /// The next message; other lines go to standard error.
    fn next(&mut self) -> Result<Message, String> {
        let mut line = String::new();
        loop {
            line.clear();
            let read = self
                .output
                .read_line(&mut line)
                .map_err(|e| format!("`{}`: {e}", self.command))?;
            if read == 0 {
                let status = self.child.wait().map_err(|e| e.to_string())?;
                return Err(format!(
                    "`{}` ended ({status}) in the middle of the protocol",
                    self.command
                ));
            }
            match parse_message(&line).map_err(|e| format!("`{}`: {e}", self.command))? {
                Some(message) => return Ok(message),
                None => eprint!("{line}"),
            }
        }
    }

    fn send(&mut self, line: &str) -> Result<(), String> {
        writeln!(self.input, "{line}")
            .and_then(|()| self.input.flush())
            .map_err(|e| format!("`{}`: {e}", self.command))
    }
}

/// One configuration of the rounds: which harness offers it, and what.
struct Entry {
    harness: usize,
    offer: Offer,
    runs_mlps: Vec<f64>,
}

/// The order of a round: by keys per call (so the configurations compared
/// with each other, per key with per key and bursts with bursts of the same
/// size, run next to each other), then by harness and announcement.
fn round_order(entries: &[(usize, &Offer)]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..entries.len()).collect();
    order.sort_by_key(|&i| (keys_per_call(&entries[i].1.shape), entries[i].0));
    order
}

/// Starts every harness of `commands`, runs `rounds` rounds of all their
/// configurations, and writes `DIR/results/NAME.timing` (the runs in round
/// order) for each; each configuration's results are written on its first
/// run as `DIR/results/NAME.res`.
pub fn drive(dir: &Path, rounds: usize, commands: &[Vec<String>]) -> Result<(), String> {
    let info = files::read_info(dir)?;
    let keys: u64 = info
        .get("keys")
        .and_then(|k| k.parse().ok())
        .ok_or("info.txt has no key count")?;
    let mut harnesses = Vec::new();
    for argv in commands {
        harnesses.push(Harness::start(argv)?);
    }
    let mut entries: Vec<Entry> = Vec::new();
    for (index, harness) in harnesses.iter_mut().enumerate() {
        loop {
            match harness.next()? {
                Message::Config(offer) => {
                    if entries.iter().any(|e| e.offer.name == offer.name) {
                        return Err(format!("two harnesses offer `{}`", offer.name));
                    }
                    entries.push(Entry {
                        harness: index,
                        offer,
                        runs_mlps: Vec::with_capacity(rounds),
                    });
                }
                Message::Ready => break,
                Message::Mlps(_) => {
                    return Err(format!("`{}`: a result before `ready`", harness.command))
                }
            }
        }
    }
    let order = round_order(
        &entries
            .iter()
            .map(|e| (e.harness, &e.offer))
            .collect::<Vec<_>>(),
    );
    let results = dir.join("results");
    let started = Instant::now();
    for round in 0..rounds {
        for &index in &order {
            let entry = &mut entries[index];
            let stem = results.join(files::file_stem(&entry.offer.name));
            // Results are written once: every pass gives the same ones.
            let file = if round == 0 {
                stem.with_extension("res").display().to_string()
            } else {
                String::new()
            };
            let harness = &mut harnesses[entry.harness];
            harness.send(&format!("run\t{}\t{file}", entry.offer.name))?;
            let Message::Mlps(mlps) = harness.next()? else {
                return Err(format!("`{}`: expected `mlps`", harness.command));
            };
            entry.runs_mlps.push(mlps);
            println!(
                "  round {}/{rounds} {:>6.0} s  {:<28} {mlps:9.2} Mlps",
                round + 1,
                started.elapsed().as_secs_f64(),
                entry.offer.name
            );
        }
    }
    for harness in &mut harnesses {
        harness.send("quit")?;
        let status = harness.child.wait().map_err(|e| e.to_string())?;
        if !status.success() {
            return Err(format!("`{}` exited with {status}", harness.command));
        }
    }
    for entry in entries {
        let timing = Timing {
            kind: entry.offer.kind,
            engine: entry.offer.name,
            shape: entry.offer.shape,
            keys,
            build_seconds: entry.offer.build_seconds,
            runs_mlps: entry.runs_mlps,
        };
        let path = results
            .join(files::file_stem(&timing.engine))
            .with_extension("timing");
        std::fs::write(&path, timing.to_line()).map_err(|e| format!("{}: {e}", path.display()))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn offer(name: &str, shape: &str) -> Offer {
        Offer {
            name: name.into(),
            kind: "peer".into(),
            shape: shape.into(),
            build_seconds: 0.5,
        }
    }

    #[test]
    fn messages_parse_and_other_lines_pass() {
        let config = offer("rte_fib/burst32", "burst32");
        assert_eq!(
            parse_message(&config.message()).unwrap(),
            Some(Message::Config(config))
        );
        assert_eq!(parse_message("ready\n").unwrap(), Some(Message::Ready));
        assert_eq!(
            parse_message("mlps\t12.5").unwrap(),
            Some(Message::Mlps(12.5))
        );
        assert_eq!(parse_message("EAL: Detected 2 lcores").unwrap(), None);
        assert!(parse_message("mlps\tfast").is_err());
        assert!(parse_message("config\tx\tpeer").is_err());
    }

    #[test]
    fn rounds_order_by_keys_per_call_then_harness() {
        let offers = [
            offer("dxr/batch", "batch"),
            offer("dxr/burst32", "burst32"),
            offer("dxr/key", "key"),
            offer("rte_fib/burst32", "burst32"),
            offer("rte_lpm/x4", "x4"),
            offer("rte_lpm/key", "key"),
            offer("rte_fib/burst8", "burst8"),
        ];
        let harness = [0, 0, 0, 1, 1, 1, 1];
        let entries: Vec<(usize, &Offer)> = harness.iter().copied().zip(&offers).collect();
        let names: Vec<&str> = round_order(&entries)
            .into_iter()
            .map(|i| offers[i].name.as_str())
            .collect();
        assert_eq!(
            names,
            [
                "dxr/key",
                "rte_lpm/key",
                "rte_lpm/x4",
                "rte_fib/burst8",
                "dxr/burst32",
                "rte_fib/burst32",
                "dxr/batch"
            ]
        );
    }

    #[test]
    fn serve_announces_runs_and_writes_results() {
        let dir = std::env::temp_dir().join(format!("fibkit-peers-serve-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let res = dir.join("a.res");
        let offers = [offer("a/key", "key"), offer("b/burst8", "burst8")];
        let input = format!(
            "run\ta/key\t{}\nrun b/burst8\nquit\nrun a/key\n",
            res.display()
        );
        let mut output = Vec::new();
        let mut ran = Vec::new();
        serve(
            &offers,
            3,
            |index, out| {
                ran.push(index);
                out.copy_from_slice(&[Some(1), None, Some(index as u32)]);
                10.0 * (index + 1) as f64
            },
            input.as_bytes(),
            &mut output,
        )
        .unwrap();
        assert_eq!(ran, [0, 1], "nothing runs after quit");
        let text = String::from_utf8(output).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines,
            [
                offers[0].message().as_str(),
                offers[1].message().as_str(),
                "ready",
                "mlps\t10.0000",
                "mlps\t20.0000"
            ]
        );
        assert_eq!(
            files::decode_results(&std::fs::read(&res).unwrap()).unwrap(),
            [Some(1), None, Some(0)]
        );
        let mut sink = Vec::new();
        let err = serve(&offers, 3, |_, _| 0.0, "run c/key\n".as_bytes(), &mut sink).unwrap_err();
        assert!(err.contains("no configuration `c/key`"), "{err}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
