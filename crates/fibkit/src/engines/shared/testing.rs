//! Tables and checks the tests of every engine share.

/// Nested prefixes of eight lengths (`BITS/8` to `BITS`) around `addr`,
/// labels 1 to 8, and the same lengths around `!addr` with label 7: chunks
/// and nodes of one label, of several, and below them, for every engine.
pub(crate) fn nested_table<A: crate::Addr>(addr: A) -> crate::Rib<A> {
    let mut rib = crate::Rib::new();
    for step in 1..=8u8 {
        let plen = A::BITS / 8 * step;
        rib.insert(crate::Prefix::new_masked(addr, plen), step as u32);
        rib.insert(crate::Prefix::new_masked(!addr, plen), 7);
    }
    rib
}

/// Checks that the default route is one results slot for the engine `U`:
/// on `rib` with and without a `/0`, announcing, relabelling and
/// withdrawing it through [`crate::engine::Updater::update`] leaves
/// `tables(snapshot)` (the snapshot's arrays but the results) unchanged,
/// and the snapshot answers as the reference after each change.
pub(crate) fn assert_default_route_is_one_slot<A, U, T>(
    config: &U::Config,
    rib: &crate::Rib<A>,
    tables: impl Fn(&U::Snapshot) -> T,
) where
    A: crate::Addr,
    U: crate::engine::Updater<A>,
    T: PartialEq,
{
    use crate::Change;
    let default = crate::Prefix::default_route();
    for start in [None, Some(3)] {
        let mut rib = rib.clone();
        match start {
            Some(label) => rib.insert(default, label),
            None => rib.remove(default),
        };
        let (mut updater, mut snapshot) = U::build(config, &rib).expect("the table builds");
        let before = tables(&snapshot);
        for change in [
            Change::Announce(default, 9),
            Change::Announce(default, 4),
            Change::Announce(default, 4),
            Change::Withdraw(default),
            Change::Withdraw(default),
            Change::Announce(default, 3),
        ] {
            rib.apply(change);
            updater
                .update(&mut snapshot, &rib, &[default])
                .unwrap_or_else(|e| panic!("{config} after {change:?}: {e}"));
            assert!(
                tables(&snapshot) == before,
                "{config}: {change:?} rewrote the tables"
            );
            let report = crate::verify::verify(&snapshot, &rib, 200, 1);
            assert!(
                report.ok(),
                "{config} after {change:?}: {}",
                report.mismatches[0]
            );
        }
    }
}
