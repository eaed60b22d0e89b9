//! Tests of `cpe`.

use super::build::Shape;
use super::*;

#[test]
fn pointer_words_round_trip() {
    for (stride, base) in [(0, 0), (1, 5), (24, BASE_MASK), (8, 1 << 20)] {
        let ptr = child_ptr(stride, base);
        assert!(is_child(ptr));
        assert_eq!(child_stride(ptr), stride);
        assert_eq!(child_base(ptr), base as usize);
    }
    assert!(!is_child(MAX_LABELS as u32));
    assert!(!is_child(0));
}

#[test]
fn configs_print_canonically() {
    for (text, canonical) in [
        ("cpe", "cpe"),
        ("cpe:levels=3", "cpe:levels=3"),
        ("cpe:nopush,levels=3", "cpe:levels=3,nopush"),
        ("cpe:levels=3,nopush,cap=17", "cpe:levels=3,nopush"),
        ("cpe:levels=3,cap=24", "cpe:levels=3"),
        ("cpe:levels=3,nopush,cap=24", "cpe:levels=3,nopush,cap=24"),
        ("cpe:packed,cap=8,levels=2", "cpe:levels=2,packed,cap=8"),
        ("cpe:strides=16+8+8,nopush", "cpe:strides=16+8+8,nopush"),
        ("cpe:fixed=true,levels=4", "cpe:levels=4,fixed"),
        (
            "cpe:max-entries=4096,levels=2",
            "cpe:levels=2,max-entries=4096",
        ),
        ("cpe:max-entries=67108864", "cpe"),
        ("cpe:level-cost=64,levels=9", "cpe:levels=9,level-cost=64"),
        ("cpe:level-cost=0", "cpe:level-cost=0"),
    ] {
        let config = CpeConfig::parse(text).unwrap();
        assert_eq!(config.to_string(), canonical, "{text}");
        assert_eq!(CpeConfig::parse(canonical).unwrap(), config);
    }
    assert_eq!(CpeConfig::parse("cpe").unwrap().levels::<u32>(), 4);
    assert_eq!(CpeConfig::parse("cpe").unwrap().levels::<u128>(), 12);
    let config = CpeConfig::parse("cpe:strides=16+8+8").unwrap();
    assert_eq!((config.levels::<u32>(), config.cap()), (3, 24));
    assert_eq!(CpeConfig::parse("cpe:nopush").unwrap().cap(), 17);
    let config = CpeConfig::parse("cpe").unwrap();
    assert_eq!(config.level_cost::<u32>(), DEFAULT_LEVEL_COST[0]);
    assert_eq!(config.level_cost::<u128>(), DEFAULT_LEVEL_COST[1]);
    let config = CpeConfig::parse("cpe:level-cost=7").unwrap();
    assert_eq!(
        (config.level_cost::<u32>(), config.level_cost::<u128>()),
        (7, 7)
    );
}

#[test]
fn bad_specs_say_why() {
    for (text, why) in [
        ("cpe:strides", "needs a value"),
        ("cpe:strides=16+x", "not a list"),
        ("cpe:strides=0+32", "1..=24"),
        ("cpe:levels=0", "levels=0"),
        ("cpe:cap=25", "cap=25"),
        ("cpe:max-entries=0", "max-entries=0"),
        ("cpe:max-entries=67108865", "max-entries=67108865"),
        ("cpe:levels=3,nopush,packed", "packed nodes are built"),
        ("cpe:levels=3,strides=16+16", "takes no"),
        ("cpe:k=3", "unknown parameter `k`"),
        (
            "cpe:levels=4,fixed,level-cost=8",
            "`fixed` strides take none",
        ),
        ("cpe:strides=16+16,level-cost=8", "takes no"),
        ("cpe:level-cost=2000000", "level-cost=2000000"),
    ] {
        let err = CpeConfig::parse(text).unwrap_err().to_string();
        assert!(err.contains(why), "{text}: {err}");
    }
}

#[test]
fn new_nodes_keep_the_layout() {
    let shape =
        |text: &str, strides: Strides| Shape::new(&CpeConfig::parse(text).unwrap(), &strides);
    let variable = || Strides::Variable(Vec::new().into_iter());
    let four = shape("cpe:levels=4", variable());
    assert_eq!(four.new_node_stride(2, 16, 32), 8);
    assert_eq!(four.new_node_stride(7, 28, 32), 4);
    assert_eq!(
        shape("cpe:levels=2,cap=6", variable()).new_node_stride(1, 6, 32),
        6
    );
    // A fixed-stride trie adds nodes of its level's stride while it has
    // levels, then nodes of the default stride.
    let fixed = shape("cpe:levels=3,fixed", Strides::Fixed(vec![16, 4, 4]));
    assert_eq!(fixed.new_node_stride(1, 16, 32), 4);
    assert_eq!(fixed.new_node_stride(3, 24, 32), 8);
    // The entry limit.
    let small = shape("cpe:max-entries=100", variable());
    assert!(small.check_entries(100).is_ok());
    let err = small.check_entries(101).unwrap_err().to_string();
    assert!(
        err.contains("101 entries") && err.contains("limit of 100"),
        "{err}"
    );
    assert!(err.contains("raise max-entries"), "{err}");
}
