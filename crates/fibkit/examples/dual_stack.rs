//! One forwarding table for both address families, answering
//! `std::net::IpAddr`s: engines are built per family (IPv4 and IPv6 keys
//! are different integer types), and a small wrapper picks the family of
//! each address.
//!
//! ```text
//! cargo run --release -p fibkit --example dual_stack -- [TABLE...]
//! ```
//!
//! The tables default to ../shared/data/dfz-v4-nh.txt.gz and
//! ../shared/data/dfz-v6-nh.txt.gz; a single file may hold both families
//! (the text loader reads IPv4 and IPv6 prefixes from the same file).

use std::net::IpAddr;
use std::path::PathBuf;

use fibkit::load::{load_table, LoadOptions};
use fibkit::{default_spec, Family, Label, LocalFib, Rib};

/// A dual-stack table: one engine per family, each the family's default.
struct DualStack {
    v4: LocalFib<u32>,
    v6: LocalFib<u128>,
}

impl DualStack {
    fn new(v4: Rib<u32>, v6: Rib<u128>) -> Result<Self, fibkit::engine::BuildError> {
        Ok(DualStack {
            v4: LocalFib::new(default_spec(Family::V4), v4)?,
            v6: LocalFib::new(default_spec(Family::V6), v6)?,
        })
    }

    /// The label of the longest prefix containing `addr`: the per-packet
    /// path, one engine lookup.
    fn lookup(&self, addr: IpAddr) -> Option<Label> {
        match addr {
            IpAddr::V4(v4) => self.v4.snapshot().lookup(v4.into()),
            IpAddr::V6(v6) => self.v6.snapshot().lookup(v6.into()),
        }
    }

    /// The matched prefix, for reporting (a walk of the reference table).
    fn matched_prefix(&self, addr: IpAddr) -> Option<String> {
        match addr {
            IpAddr::V4(v4) => self.v4.lookup_prefix(v4.into()).map(|(p, _)| p.to_string()),
            IpAddr::V6(v6) => self.v6.lookup_prefix(v6.into()).map(|(p, _)| p.to_string()),
        }
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut paths: Vec<PathBuf> = std::env::args_os().skip(1).map(PathBuf::from).collect();
    if paths.is_empty() {
        paths = vec![
            "../shared/data/dfz-v4-nh.txt.gz".into(),
            "../shared/data/dfz-v6-nh.txt.gz".into(),
        ];
    }

    // Every file's prefixes of each family go into that family's reference
    // table.
    let (mut v4, mut v6) = (Rib::<u32>::new(), Rib::<u128>::new());
    for path in &paths {
        let table = load_table(path, &LoadOptions::default())?;
        println!(
            "{}: {} IPv4 and {} IPv6 prefixes",
            path.display(),
            table.v4.len(),
            table.v6.len()
        );
        for (prefix, label) in table.v4.iter() {
            v4.insert(prefix, label);
        }
        for (prefix, label) in table.v6.iter() {
            v6.insert(prefix, label);
        }
    }

    let table = DualStack::new(v4, v6)?;
    println!(
        "engines: {} for IPv4 ({:.1} MiB), {} for IPv6 ({:.1} MiB)",
        table.v4.spec(),
        table.v4.snapshot().memory_bytes() as f64 / (1 << 20) as f64,
        table.v6.spec(),
        table.v6.snapshot().memory_bytes() as f64 / (1 << 20) as f64
    );

    for text in [
        "8.8.8.8",
        "2001:4860:4860::8888",
        "1.1.1.1",
        "2606:4700:4700::1111",
        "192.0.2.1",
        "2001:db8::1",
    ] {
        let addr: IpAddr = text.parse()?;
        match (table.lookup(addr), table.matched_prefix(addr)) {
            (Some(label), Some(prefix)) => {
                println!("  {addr:<22} next hop {label:<4} (via {prefix})")
            }
            _ => println!("  {addr:<22} no route"),
        }
    }
    Ok(())
}
