//! The subcommands, one module each: its arguments (a clap `Args` struct,
//! or a `Subcommand` enum for `trace` and `model`) and a `run` that loads,
//! calls the library and prints. They share the crate's lower modules
//! (`table`, `output`, `engine`, `specs`, `family`, `args`, `plots`) and
//! never each other.

pub mod bench;
pub mod bspl_levels;
pub mod build;
pub mod completions;
pub mod convert;
pub mod lookup;
pub mod man;
pub mod model;
pub mod plot;
pub mod replay;
pub mod stats;
pub mod strides;
pub mod trace;
pub mod verify;
