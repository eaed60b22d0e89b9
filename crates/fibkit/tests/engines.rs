//! The shared suite run against every engine (see `common/mod.rs`).

mod common;

use common::*;
use proptest::prelude::*;

/// Every engine spec under test, with the families it supports.
const ENGINES: &[(&str, bool, bool)] = &[
    ("radix", true, true),
    ("dir24-8", true, false),
    ("cpe:levels=3", true, false),
    ("cpe:levels=12", true, true),
    ("cpe:levels=4,fixed", true, false),
    ("cpe:levels=12,fixed", false, true),
    ("cpe:levels=4,nopush", true, false),
    ("cpe:levels=12,nopush", false, true),
    ("cpe:levels=4,packed", true, false),
    ("cpe:levels=12,packed", false, true),
    ("cpe:strides=16+8+8", true, false),
    ("dxr", true, false),
    ("dxr:k=16", true, false),
    ("dxr:k=24", true, false),
    ("dxr:d=12,x=8", true, false),
    ("dxr6", false, true),
    ("dxr6:k=8,stride=3", false, true),
    ("lctrie", true, true),
    ("lctrie:lookup=classic", true, true),
    ("levels", true, true),
    ("levels:strides=8", true, true),
    ("levels:strides=20+4+8", true, false),
    ("levels:strides=16+8+8", false, true),
    ("bloom", true, true),
    ("bloom:search=linear", true, true),
    ("bloom:search=guided,bits=512,k=9", true, true),
    ("bloom:search=linear,bits=512,k=1", true, true),
    ("bspl", true, true),
    ("bspl:levels=3", true, false),
    ("bspl:first=8,levels=6", true, false),
    ("bspl:hybrid", true, true),
];

#[test]
fn small_tables() {
    for &(spec, ipv4, ipv6) in ENGINES {
        check_small_tables(spec, ipv4, ipv6);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn random_tables_v4(entries in random_table_v4()) {
        let rib = rib_from_triples(&entries);
        for &(spec, ipv4, _) in ENGINES {
            if ipv4 {
                assert_engine_matches(spec, &rib, 500);
            }
        }
    }

    #[test]
    fn random_tables_v6(entries in random_table_v6()) {
        let rib = rib_from_triples(&entries);
        for &(spec, _, ipv6) in ENGINES {
            if ipv6 {
                assert_engine_matches(spec, &rib, 500);
            }
        }
    }
}

#[test]
fn dfz_v4_nh() {
    for &(spec, ipv4, _) in ENGINES {
        check_shared_table(spec, "dfz-v4-nh.txt.gz", ipv4, false);
    }
}

#[test]
fn dfz_v4_asn() {
    for &(spec, ipv4, _) in ENGINES {
        check_shared_table(spec, "dfz-v4-asn.txt.gz", ipv4, false);
    }
}

#[test]
fn dfz_v6_tables() {
    for &(spec, _, ipv6) in ENGINES {
        check_shared_table(spec, "dfz-v6-nh.txt.gz", false, ipv6);
        check_shared_table(spec, "dfz-v6-asn.txt.gz", false, ipv6);
        check_shared_table(spec, "linx-rib-ipv6.20141225.txt.gz", false, ipv6);
    }
}

/// Without the shared data set, a test that needs it stops with a message
/// saying what is expected where (run in a child process of this test
/// binary, pointed at a folder that does not exist).
#[test]
fn a_missing_data_set_is_named() {
    if std::env::var_os("FIBKIT_DATA_DIR").is_some() {
        // The child: load a shared table from the missing folder.
        shared_table("dfz-v4-nh.txt.gz");
        return;
    }
    let missing = std::env::temp_dir().join(format!("fibkit-no-data-{}", std::process::id()));
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "a_missing_data_set_is_named", "--nocapture"])
        .env("FIBKIT_DATA_DIR", &missing)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        stderr.contains("the shared data set is missing")
            && stderr.contains(&missing.display().to_string())
            && stderr.contains("../shared/data"),
        "{stderr}"
    );
}
