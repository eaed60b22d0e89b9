//! The one place the command turns a run-time address family (`--family`,
//! the table's content, an image's header) into the compile-time address
//! type (`u32` or `u128`) the library's generic functions take.

use fibkit::load::LoadedTable;
use fibkit::Family;

/// Runs `$body` with `$A` the address type of `$family` (a
/// [`fibkit::Family`]): `for_family!(family, A => run::<A>(args))`.
macro_rules! for_family {
    ($family:expr, $A:ident => $body:expr) => {
        match $family {
            fibkit::Family::V4 => {
                type $A = u32;
                $body
            }
            fibkit::Family::V6 => {
                type $A = u128;
                $body
            }
        }
    };
}
pub(crate) use for_family;

/// The family named by a `--family` flag (`v4` or `v6`; clap accepts no
/// other), else IPv4 when `has_v4` and IPv6 otherwise: for commands that
/// run on one family.
pub fn chosen(flag: Option<&str>, has_v4: bool) -> Family {
    match flag {
        Some("v6") => Family::V6,
        Some(_) => Family::V4,
        None if has_v4 => Family::V4,
        None => Family::V6,
    }
}

/// The families a command that runs on each of them covers: the one named
/// by `--family`, else every family `table` has prefixes of.
pub fn wanted(flag: Option<&str>, table: &LoadedTable) -> Vec<Family> {
    match flag {
        Some(_) => vec![chosen(flag, true)],
        None => [
            (Family::V4, table.v4.is_empty()),
            (Family::V6, table.v6.is_empty()),
        ]
        .into_iter()
        .filter(|&(_, empty)| !empty)
        .map(|(family, _)| family)
        .collect(),
    }
}
