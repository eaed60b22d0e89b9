//! Tests of `bloom`.

use super::*;
use crate::addr::Addr;
use crate::engines::shared::testing::{assert_default_route_is_one_slot, nested_table};
use crate::storage::Plain;

fn parse(text: &str) -> Result<BloomConfig, BuildError> {
    BloomConfig::parse(text)
}

/// Every array but the results.
#[allow(clippy::type_complexity)]
fn tables<A: Addr + Plain>(
    snapshot: &Bloom<A>,
) -> (
    Vec<FilterBlock>,
    Vec<u8>,
    Vec<TreeNode>,
    Vec<exact::ExactSlot<A>>,
) {
    (
        snapshot.filter.clone(),
        snapshot.lengths.clone(),
        snapshot.tree.clone(),
        snapshot.table.clone(),
    )
}

#[test]
fn the_default_route_is_one_results_slot() {
    for spec in ["bloom", "bloom:search=linear"] {
        let config = parse(spec).unwrap();
        let rib = nested_table(0x0a01_0203u32);
        assert_default_route_is_one_slot::<u32, BloomUpdater<u32>, _>(&config, &rib, tables);
        let rib = nested_table(0x2001_0db8_0001_0002_0003_0004_0005_0006u128);
        assert_default_route_is_one_slot::<u128, BloomUpdater<u128>, _>(&config, &rib, tables);
    }
}

#[test]
fn specs_parse_and_print_canonically() {
    for (text, canonical) in [
        ("bloom", "bloom:search=guided,fill=10"),
        ("bloom:search=linear", "bloom:search=linear,fill=10"),
        (
            "bloom:search=guided,fill=33.3%,k=10",
            "bloom:search=guided,fill=33.3,k=10",
        ),
        (
            "bloom:bits=4096,k=3,search=linear",
            "bloom:search=linear,bits=4096,k=3",
        ),
        ("bloom:tree=balanced", "bloom:search=guided,fill=10"),
        (
            "bloom:tree=trace:/tmp/t.txt",
            "bloom:search=guided,fill=10,tree=trace:/tmp/t.txt",
        ),
    ] {
        let config = parse(text).unwrap();
        assert_eq!(config.to_string(), canonical);
        assert_eq!(parse(canonical).unwrap(), config);
    }
}

#[test]
fn bad_parameters_are_clear_errors() {
    for (text, expected) in [
        ("bloom:k=0", "at least one hash function"),
        ("bloom:k=33", "1..=32"),
        ("bloom:k=x", "1..=32"),
        ("bloom:bits=0", "at least one bit"),
        ("bloom:bits=-5", "whole number"),
        ("bloom:bits=999999999999999", "largest filter"),
        ("bloom:fill=0", "above 0%"),
        ("bloom:fill=100", "below 100%"),
        ("bloom:fill=150", "below 100%"),
        ("bloom:fill=-3", "above 0%"),
        ("bloom:fill=NaN", "not a percentage"),
        ("bloom:fill=abc", "not a percentage"),
        ("bloom:fill=10,bits=512", "not both"),
        ("bloom:search=binary", "known: linear, guided"),
        ("bloom:search=linear,tree=trace:x", "no tree"),
        ("bloom:tree=weighted", "known: balanced, trace:FILE"),
        ("bloom:tree=trace:", "known: balanced"),
        ("bloom:k", "needs a value"),
        ("bloom:m=3", "unknown parameter `m`"),
    ] {
        let err = parse(text).unwrap_err().to_string();
        assert!(err.contains(expected), "{text}: {err}");
    }
}
