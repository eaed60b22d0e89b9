//! What `auto` builds and predicts per address family.

use super::config::*;

use crate::addr::Addr;
use crate::engine::Updater;
use crate::engines::dxr::{DxrConfig, DxrUpdater};
use crate::engines::dxr6::Dxr6Updater;
use crate::model::dxr::predict_dxr;
use crate::model::dxr6::predict_dxr6;
use crate::model::{CacheLevel, Machine, ModelError, Prediction, WeightedRanges};

/// The families `auto` builds: each names its direct-table engine and
/// predicts that engine's candidates.
pub trait AutoFamily: Addr {
    /// The DXR engine of the family.
    type Direct: Updater<Self>;

    /// Specs and predictions of the family's DXR candidates for `view`
    /// (empty where the family's DXR engine has no model).
    fn direct_predictions(
        view: &WeightedRanges<Self>,
        caches: &[CacheLevel],
    ) -> Vec<(String, Result<Prediction, ModelError>)>;

    /// Specs and predictions of the family's DXR candidates for `view`,
    /// timed by `machine`.
    fn direct_candidates(view: &WeightedRanges<Self>, machine: &Machine) -> Vec<Ranked> {
        Self::direct_predictions(view, &machine.caches)
            .into_iter()
            .map(|(spec, prediction)| Ranked::new(spec, prediction, machine))
            .collect()
    }

    /// The family's DXR candidates whose model walks the built table (as
    /// `cpe`'s does) rather than the range view.
    fn built_direct_candidates() -> Vec<String>;

    /// The family's DXR candidates without a model: built and timed only.
    fn timed_direct_candidates() -> Vec<String>;

    /// The prediction of a built DXR candidate.
    fn predict_built_direct(
        view: &WeightedRanges<Self>,
        snapshot: &<Self::Direct as Updater<Self>>::Snapshot,
        caches: &[CacheLevel],
    ) -> Result<Prediction, ModelError>;

    /// The family's CPE candidates.
    fn cpe_candidates() -> Vec<String>;
}

impl AutoFamily for u32 {
    type Direct = DxrUpdater;

    fn direct_predictions(
        view: &WeightedRanges<u32>,
        caches: &[CacheLevel],
    ) -> Vec<(String, Result<Prediction, ModelError>)> {
        DXR_K
            .map(|k| {
                (
                    DxrConfig::single(k).to_string(),
                    predict_dxr(view, k, caches),
                )
            })
            .collect()
    }

    fn built_direct_candidates() -> Vec<String> {
        Vec::new()
    }

    fn timed_direct_candidates() -> Vec<String> {
        DXR_TWO_LEVEL.iter().map(|s| s.to_string()).collect()
    }

    fn predict_built_direct(
        view: &WeightedRanges<u32>,
        snapshot: &<DxrUpdater as Updater<u32>>::Snapshot,
        caches: &[CacheLevel],
    ) -> Result<Prediction, ModelError> {
        let config = snapshot.config();
        if config.d_bits != 0 {
            return Err(ModelError::Input(format!(
                "`{config}`: the dxr model covers the one-level layouts `dxr:k=K`"
            )));
        }
        predict_dxr(view, config.k_bits, caches)
    }

    fn cpe_candidates() -> Vec<String> {
        CPE_LEVELS_V4
            .iter()
            .map(|n| format!("cpe:levels={n}"))
            .collect()
    }
}

impl AutoFamily for u128 {
    type Direct = Dxr6Updater;

    fn direct_predictions(
        _: &WeightedRanges<u128>,
        _: &[CacheLevel],
    ) -> Vec<(String, Result<Prediction, ModelError>)> {
        Vec::new()
    }

    /// `dxr6`'s node strides and leaves depend on the whole table: its
    /// model walks the built table.
    fn built_direct_candidates() -> Vec<String> {
        DXR6_CANDIDATES.iter().map(|s| s.to_string()).collect()
    }

    fn timed_direct_candidates() -> Vec<String> {
        Vec::new()
    }

    fn predict_built_direct(
        view: &WeightedRanges<u128>,
        snapshot: &<Dxr6Updater as Updater<u128>>::Snapshot,
        caches: &[CacheLevel],
    ) -> Result<Prediction, ModelError> {
        predict_dxr6(view, snapshot, caches)
    }

    fn cpe_candidates() -> Vec<String> {
        // One layout: the family's default is the 12-level program with
        // its level cost, the layout the variable-stride program picks
        // for IPv6 (`cpe:levels=12` would be the same trie, built and
        // timed twice).
        vec!["cpe".into()]
    }
}
