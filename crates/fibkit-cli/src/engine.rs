//! Engines built by spec for one family, timed: what `stats`, `lookup`
//! and `verify` build.

use std::time::Instant;

use fibkit::engine::{BuildError, Updater};
use fibkit::registry::EngineFamily;
use fibkit::Rib;

/// An engine built for one family: its updater, its snapshot, its
/// canonical spec and its build time in seconds.
pub(crate) struct Built<A: EngineFamily> {
    pub updater: A::Engine,
    pub snapshot: A::Snapshot,
    pub spec: String,
    pub seconds: f64,
}

/// Builds `spec` for one family, timing it.
pub(crate) fn build_timed<A: EngineFamily>(
    spec: &str,
    rib: &Rib<A>,
) -> Result<Built<A>, BuildError> {
    let config: A::Config = spec.parse()?;
    let start = Instant::now();
    let (updater, snapshot) = A::Engine::build(&config, rib)?;
    // The layout the build settled on (`dxr` may raise its `align`).
    let spec = updater.config().to_string();
    Ok(Built {
        updater,
        snapshot,
        spec,
        seconds: start.elapsed().as_secs_f64(),
    })
}
