//! Which vector instructions the engines' lookups may use.
//!
//! Engines with vector walks (`dxr6`, `poptrie`, `btree`) pick the widest
//! one the CPU runs: AVX-512, else AVX2, else portable code. The
//! environment variable [`MAX_SIMD_ENV`] (`FIBKIT_MAX_SIMD`) caps that
//! choice, the way DPDK's `--force-max-simd-bitwidth` does, so that the
//! narrower paths can be verified and measured on a CPU that has the wider
//! ones, and so that a deployment can avoid a path (AVX-512 lowers some
//! CPUs' clocks):
//!
//! - `avx512` (or `auto`, or unset): no cap;
//! - `avx2`: no AVX-512;
//! - `portable`: no instruction past x86-64's baseline, not even POPCNT.
//!
//! The cap never widens the choice past what the CPU has. It is read once,
//! on the first lookup or build that asks; [`set_max_simd`] changes it
//! later. Engines that fix their path when built (`poptrie`, `btree`) keep
//! it for that snapshot's lifetime, the others look at every batch. Each
//! path answers exactly as the others do, so a change of the cap while
//! lookups run changes only their speed.
//!
//! ```
//! use fibkit::cpu::{max_simd, Simd};
//!
//! let cap: Simd = "avx2".parse()?;
//! assert!(cap < Simd::Avx512);
//! assert!(max_simd() <= Simd::Avx512);
//! # Ok::<(), fibkit::cpu::SimdParseError>(())
//! ```

use std::fmt;
use std::str::FromStr;
use std::sync::atomic::{AtomicU8, Ordering};

/// The environment variable that caps the engines' vector instructions:
/// `avx512` (or `auto`), `avx2` or `portable`.
pub const MAX_SIMD_ENV: &str = "FIBKIT_MAX_SIMD";

/// A level of vector instructions, narrowest first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Simd {
    /// Plain code: x86-64's baseline, no POPCNT, AVX2 or AVX-512.
    Portable,
    /// AVX2 and POPCNT, no AVX-512.
    Avx2,
    /// Everything the CPU has (the engines' widest paths use AVX-512).
    Avx512,
}

impl Simd {
    /// Every level, narrowest first.
    pub const ALL: [Simd; 3] = [Simd::Portable, Simd::Avx2, Simd::Avx512];

    /// Its name in [`MAX_SIMD_ENV`].
    pub fn name(self) -> &'static str {
        match self {
            Simd::Portable => "portable",
            Simd::Avx2 => "avx2",
            Simd::Avx512 => "avx512",
        }
    }

    fn code(self) -> u8 {
        self as u8 + 1
    }

    fn from_code(code: u8) -> Simd {
        match code {
            1 => Simd::Portable,
            2 => Simd::Avx2,
            _ => Simd::Avx512,
        }
    }
}

impl fmt::Display for Simd {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A [`MAX_SIMD_ENV`] value that names no level.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{MAX_SIMD_ENV}={value:?} names no level; give `avx512` (or `auto`), `avx2` or `portable`")]
pub struct SimdParseError {
    /// The value given.
    pub value: String,
}

impl FromStr for Simd {
    type Err = SimdParseError;

    fn from_str(value: &str) -> Result<Simd, SimdParseError> {
        match value.trim().to_ascii_lowercase().as_str() {
            "avx512" | "avx-512" | "auto" => Ok(Simd::Avx512),
            "avx2" => Ok(Simd::Avx2),
            "portable" => Ok(Simd::Portable),
            _ => Err(SimdParseError {
                value: value.to_string(),
            }),
        }
    }
}

/// The cap's code ([`Simd::code`]); 0 until first read.
static CAP: AtomicU8 = AtomicU8::new(0);

/// The cap [`MAX_SIMD_ENV`] sets: `None` when unset or empty, an error
/// when it names no level. Programs that want to refuse a bad value call
/// this at start (the `fibkit` command does); the engines' own reading
/// takes a bad value as `portable`, the narrowest, and says so on stderr.
pub fn max_simd_from_env() -> Result<Option<Simd>, SimdParseError> {
    match std::env::var(MAX_SIMD_ENV) {
        Ok(value) if value.trim().is_empty() => Ok(None),
        Ok(value) => value.parse().map(Some),
        Err(std::env::VarError::NotPresent) => Ok(None),
        Err(std::env::VarError::NotUnicode(value)) => Err(SimdParseError {
            value: value.to_string_lossy().into_owned(),
        }),
    }
}

/// The cap in force: [`set_max_simd`]'s, else [`MAX_SIMD_ENV`]'s, else
/// [`Simd::Avx512`] (no cap).
#[inline]
pub fn max_simd() -> Simd {
    match CAP.load(Ordering::Relaxed) {
        0 => read_env(),
        code => Simd::from_code(code),
    }
}

#[cold]
fn read_env() -> Simd {
    let cap = max_simd_from_env().unwrap_or_else(|err| {
        eprintln!("fibkit: {err}; using `portable`");
        Some(Simd::Portable)
    });
    let cap = cap.unwrap_or(Simd::Avx512);
    // A concurrent `set_max_simd` wins over the environment.
    let _ = CAP.compare_exchange(0, cap.code(), Ordering::Relaxed, Ordering::Relaxed);
    Simd::from_code(CAP.load(Ordering::Relaxed))
}

/// Caps the engines' vector instructions from now on, over
/// [`MAX_SIMD_ENV`]. Snapshots built before keep the path they chose
/// where their engine fixes it when built.
pub fn set_max_simd(cap: Simd) {
    CAP.store(cap.code(), Ordering::Relaxed);
}

/// Whether the cap allows `level` (the CPU may still lack it).
#[inline]
pub fn allows(level: Simd) -> bool {
    max_simd() >= level
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_parse_print_and_order() {
        for level in Simd::ALL {
            assert_eq!(level.name().parse::<Simd>(), Ok(level));
            assert_eq!(level.to_string(), level.name());
            assert_eq!(Simd::from_code(level.code()), level);
        }
        assert_eq!(" AVX-512 ".parse::<Simd>(), Ok(Simd::Avx512));
        assert_eq!("auto".parse::<Simd>(), Ok(Simd::Avx512));
        assert!(Simd::Portable < Simd::Avx2 && Simd::Avx2 < Simd::Avx512);
        let err = "sse4".parse::<Simd>().unwrap_err();
        assert_eq!(
            err.to_string(),
            "FIBKIT_MAX_SIMD=\"sse4\" names no level; give `avx512` (or `auto`), `avx2` or `portable`"
        );
    }
}
