//! Tests of `levels`.

use super::build::place;
use super::*;
use crate::engines::shared::testing::{assert_default_route_is_one_slot, nested_table};

/// The entries and trees: all but the results.
fn tables<A: Addr>(snapshot: &Levels<A>) -> (Vec<u32>, Vec<TreeNode<A>>)
where
    TreeNode<A>: Plain,
{
    (snapshot.entries.clone(), snapshot.tree.clone())
}

#[test]
fn the_default_route_is_one_results_slot() {
    for spec in ["levels", "levels:strides=20+4+8"] {
        let config = LevelsConfig::parse(spec).unwrap();
        let rib = nested_table(0x0a01_0203u32);
        assert_default_route_is_one_slot::<u32, LevelsUpdater<u32>, _>(&config, &rib, tables);
    }
    let config = LevelsConfig::parse("levels:strides=16+8+8").unwrap();
    let rib = nested_table(0x2001_0db8_0001_0002_0003_0004_0005_0006u128);
    assert_default_route_is_one_slot::<u128, LevelsUpdater<u128>, _>(&config, &rib, tables);
}

fn p(text: &str) -> Prefix<u32> {
    text.parse().unwrap()
}

#[test]
fn specs_parse_and_print_canonically() {
    let parse = |text: &str| LevelsConfig::parse(text).map(|c| c.to_string());
    assert_eq!(parse("levels").unwrap(), "levels:strides=16+8");
    assert_eq!(parse("levels:strides=20").unwrap(), "levels:strides=20");
    assert_eq!(
        parse("levels:strides=16+4+4,weights=/tmp/s").unwrap(),
        "levels:strides=16+4+4,weights=/tmp/s"
    );
    for bad in [
        "levels:strides=25",
        "levels:strides=8+8+8+8",
        "levels:strides=0",
        "levels:strides=",
        "levels:weights=",
        "levels:k=3",
    ] {
        assert!(parse(bad).is_err(), "{bad}");
    }
    let rib = Rib::<u32>::new();
    let err = crate::build("levels:strides=24+24", &rib)
        .err()
        .unwrap()
        .to_string();
    assert!(
        err.contains("48 bits") && err.contains("strides=16+8"),
        "{err}"
    );
}

#[test]
fn trees_hold_what_no_entry_covers_alone() {
    let rib = Rib::from_pairs([
        (p("10.0.0.0/8"), 1),
        (p("10.1.0.0/16"), 2),
        (p("10.1.2.3/32"), 3),
        (p("0.0.0.0/0"), 4),
    ]);
    let (updater, snapshot) =
        LevelsUpdater::build(&LevelsConfig::with_strides(&[8]), &rib).unwrap();
    assert_eq!(snapshot.lookup(0x0a01_0203), Some(3));
    assert_eq!(snapshot.lookup(0x0a01_0204), Some(2));
    assert_eq!(snapshot.lookup(0x0a02_0000), Some(1));
    assert_eq!(snapshot.lookup(0x0b00_0000), Some(4));
    let stats = updater.stats(&snapshot);
    assert_eq!((stats.trees, stats.tree_nodes), (1, 5));
    assert!(stats.max_tree_depth <= 3, "{stats:?}");
}

#[test]
fn the_entry_limit_is_checked_before_allocating() {
    let rib = Rib::from_pairs((0..300u32).map(|i| (Prefix::new_masked(i << 24 | 1, 32), 1)));
    assert_eq!(inner_nodes(&rib.ranges(), 8), 256);
    let err = crate::build("levels:strides=8+24", &rib)
        .err()
        .unwrap()
        .to_string();
    assert!(
        err.contains("over the limit") && err.contains("strides=16+8"),
        "{err}"
    );
}

#[test]
fn heavy_intervals_sit_near_the_root() {
    let intervals: Vec<(Range<u32>, f64)> = (0..8u32)
        .map(|i| {
            let range = Range {
                first: i * 10,
                last: i * 10 + 9,
                label: Some(i),
            };
            (range, if i == 6 { 1000.0 } else { 1.0 })
        })
        .collect();
    let mut cumulative = vec![0.0];
    for (_, w) in &intervals {
        cumulative.push(cumulative.last().unwrap() + w);
    }
    let mut tree = Vec::new();
    let labels: Vec<u32> = (0..8).collect();
    let root = place(&mut tree, &intervals, &labels, &cumulative, 0, 8);
    assert_eq!(tree[root as usize].label, 6);
    assert_eq!(tree.len(), 8);
}
