//! Prints the `cpe` stride programs' report (the paper's Tables 5-8) for a
//! table: `cargo run --release -p fibkit --example cpe_strides -- FILE [MIN MAX [CAP]]`.
//! Stand-in for `fibkit strides TABLE --levels 2..12` until the CLI has it.

use std::path::Path;

use fibkit::engines::cpe::{stride_report, MAX_STRIDE};
use fibkit::load::{load_table, LoadOptions};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let path = args
        .first()
        .ok_or("usage: cpe_strides FILE [MIN MAX [CAP]]")?;
    let min: u8 = args.get(1).map_or(Ok(2), |s| s.parse())?;
    let max: u8 = args.get(2).map_or(Ok(12), |s| s.parse())?;
    let cap: u8 = args.get(3).map_or(Ok(MAX_STRIDE), |s| s.parse())?;
    let table = load_table(Path::new(path), &LoadOptions::default())?;
    if !table.v4.is_empty() {
        println!("{}", stride_report(&table.v4, min..=max, cap));
    }
    if !table.v6.is_empty() {
        println!("{}", stride_report(&table.v6, min..=max, cap));
    }
    Ok(())
}
