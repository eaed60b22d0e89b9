//! Tests of `dir24-8`.

use super::*;

/// `count` /32s, one in each of `count` consecutive /24 blocks from 10/8.
fn scattered_host_routes(count: u32) -> Rib<u32> {
    Rib::from_pairs((0..count).map(|i| (Prefix::new_masked(0x0a00_0001 + (i << 8), 32), 1)))
}

#[test]
fn groups_are_counted_from_the_ranges_before_building() {
    let rib = scattered_host_routes(300);
    assert_eq!(groups_needed(&rib.ranges()), 300);
    let config = Dir24_8Config { max_groups: 300 };
    let (updater, snapshot) = Dir24_8Updater::build(&config, &rib).unwrap();
    assert_eq!(updater.stats(&snapshot).groups_in_use, 300);
    assert_eq!(snapshot.tbl8.capacity(), 300 * GROUP_SIZE);
    let tight = Dir24_8Config { max_groups: 299 };
    let error = Dir24_8Updater::build(&tight, &rib)
        .err()
        .unwrap()
        .to_string();
    assert!(error.contains("it needs 300 groups"), "{error}");
    assert!(error.contains("`dir24-8:max-groups=300`"), "{error}");
}

#[test]
fn an_update_past_the_group_limit_is_an_error() {
    let config = Dir24_8Config { max_groups: 2 };
    let rib = scattered_host_routes(2);
    let (mut updater, mut snapshot) = Dir24_8Updater::build(&config, &rib).unwrap();
    let mut grown = rib.clone();
    let extra = Prefix::new_masked(0x0b00_0001, 32);
    grown.insert(extra, 2);
    let error = updater.update(&mut snapshot, &grown, &[extra]).unwrap_err();
    assert!(matches!(error, BuildError::Limit { .. }), "{error}");
}

/// Every index the tables hold stays inside its table, after a build
/// and after an update that failed half-way through (new labels
/// written, then the group limit hit): the invariants of the unchecked
/// lookup, which then agrees with its checked twin on every block.
#[test]
fn indices_stay_in_bounds_after_a_failed_update() {
    let config = Dir24_8Config { max_groups: 2 };
    let rib = scattered_host_routes(2);
    let (mut updater, mut snapshot) = Dir24_8Updater::build(&config, &rib).unwrap();
    let mut grown = rib.clone();
    // A new label for a whole /24 (written first), then a host route
    // that needs a third group.
    let new_label = Prefix::new_masked(0x0a00_0500, 24);
    let extra = Prefix::new_masked(0x0b00_0001, 32);
    grown.insert(new_label, 7);
    grown.insert(extra, 8);
    assert!(updater
        .update(&mut snapshot, &grown, &[new_label, extra])
        .is_err());
    let (groups, results) = (snapshot.tbl8.len() / GROUP_SIZE, snapshot.results.len());
    for &entry in snapshot.tbl24.iter() {
        if is_group(entry) {
            assert!(group_of(entry) < groups);
        } else {
            assert!((entry as usize) < results, "{entry} of {results}");
        }
    }
    assert!(snapshot
        .tbl8
        .iter()
        .all(|&index| (index as usize) < results));
    for block in 0..BLOCKS as u32 {
        for addr in [block << 8, block << 8 | 1, block << 8 | 0xff] {
            assert_eq!(snapshot.lookup(addr), snapshot.lookup_checked(addr));
        }
    }
}

#[test]
fn the_default_route_is_one_results_slot() {
    let mut rib = scattered_host_routes(3);
    rib.insert(Prefix::new_masked(0x0a00_0000, 8), 2);
    crate::engines::shared::testing::assert_default_route_is_one_slot::<u32, Dir24_8Updater, _>(
        &Dir24_8Config::default(),
        &rib,
        |snapshot| (snapshot.tbl24.clone(), snapshot.tbl8.clone()),
    );
}

#[test]
fn the_spec_reads_and_prints_the_group_limit() {
    let parse = |text: &str| Dir24_8Config::parse(text).map(|c| c.to_string());
    assert_eq!(parse("dir24-8").unwrap(), "dir24-8");
    assert_eq!(parse("dir24-8:max-groups=1048576").unwrap(), "dir24-8");
    assert_eq!(
        parse("dir24_8:max-groups=7").unwrap(),
        "dir24-8:max-groups=7"
    );
    assert!(parse("dir24-8:max-groups=16777217").is_err());
}
