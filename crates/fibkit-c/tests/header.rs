//! The committed header is what cbindgen makes of the current source, so
//! it never goes stale: change the API, run
//! `FIBKIT_BLESS=1 cargo test -p fibkit-c --test header`, commit the header.

use std::path::Path;

#[test]
fn header_is_current() {
    let crate_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let config =
        cbindgen::Config::from_file(crate_dir.join("cbindgen.toml")).expect("cbindgen.toml parses");
    let mut generated = Vec::new();
    cbindgen::Builder::new()
        .with_config(config)
        .with_src(crate_dir.join("src/lib.rs"))
        .generate()
        .expect("cbindgen reads src/lib.rs")
        .write(&mut generated);
    let path = crate_dir.join("include/fibkit.h");
    if std::env::var_os("FIBKIT_BLESS").is_some() {
        std::fs::write(&path, &generated).expect("include/fibkit.h is writable");
        return;
    }
    let committed = std::fs::read(&path).unwrap_or_default();
    assert!(
        committed == generated,
        "include/fibkit.h is stale: run `FIBKIT_BLESS=1 cargo test -p fibkit-c --test header` \
         and commit the header"
    );
}
