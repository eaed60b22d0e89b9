//! The C library as C programs use it: `tests/c/test_fibkit.c` and
//! `examples/lookup.c` are compiled with the system's `cc` against
//! `libfibkit.a` and run. Lookups through C must equal the reference table
//! on every range boundary of the shared tables plus random addresses, for
//! both families, built engines and images; every error path must return
//! its code and message.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

use fibkit::load::{load_table, LoadOptions};
use fibkit::registry::save_image;
use fibkit::verify::check_addresses;
use fibkit::{Addr, Rib};

/// `target/<profile>`, where cargo puts `libfibkit.a` (this test runs from
/// `target/<profile>/deps`).
fn profile_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("the test knows its path");
    exe.parent()
        .and_then(Path::parent)
        .expect("tests run from target/<profile>/deps")
        .to_path_buf()
}

fn crate_dir() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn shared_data(name: &str) -> PathBuf {
    crate_dir().join("../../../shared/data").join(name)
}

/// A fresh scratch directory for one test.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("fibkit-c-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir is writable");
    dir
}

/// Compiles `source` (relative to the crate) against the static library,
/// with every warning an error.
fn compile(source: &str, name: &str) -> PathBuf {
    let library = profile_dir().join("libfibkit.a");
    assert!(
        library.exists(),
        "{} was not built: `cargo test` builds only what Rust tests link; run \
         `cargo build --release -p fibkit-c` first (./test.sh does)",
        library.display()
    );
    let binary = profile_dir().join(format!("c-{name}"));
    let output = Command::new("cc")
        .args([
            "-std=c11", "-O2", "-Wall", "-Wextra", "-Werror", "-pthread", "-I",
        ])
        .arg(crate_dir().join("include"))
        .arg(crate_dir().join(source))
        .arg(&library)
        .args(["-lpthread", "-ldl", "-lm", "-o"])
        .arg(&binary)
        .output()
        .expect("cc runs");
    assert!(
        output.status.success(),
        "cc {source} failed:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    binary
}

fn test_program() -> &'static Path {
    static BINARY: OnceLock<PathBuf> = OnceLock::new();
    BINARY.get_or_init(|| compile("tests/c/test_fibkit.c", "test_fibkit"))
}

fn example() -> &'static Path {
    static BINARY: OnceLock<PathBuf> = OnceLock::new();
    BINARY.get_or_init(|| compile("examples/lookup.c", "lookup"))
}

fn run(program: &Path, args: &[&dyn AsRef<std::ffi::OsStr>]) -> Output {
    let mut command = Command::new(program);
    for arg in args {
        command.arg(arg);
    }
    command.output().expect("the C program runs")
}

fn assert_success(output: &Output, what: &str) {
    assert!(
        output.status.success(),
        "{what}: {}\nstdout:\n{}\nstderr:\n{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

/// An address family as the C test reads its keys.
trait CKey: Addr {
    const CODE: &'static str;
    fn key_bytes(self) -> Vec<u8>;
}

impl CKey for u32 {
    const CODE: &'static str = "4";
    fn key_bytes(self) -> Vec<u8> {
        self.to_ne_bytes().to_vec() // uint32_t in host order
    }
}

impl CKey for u128 {
    const CODE: &'static str = "6";
    fn key_bytes(self) -> Vec<u8> {
        self.to_be_bytes().to_vec() // 16 bytes, network order
    }
}

/// Runs the C program's bulk and single lookups of `file` (a table built
/// with `spec`, or an image when `spec` is "image") on every range
/// boundary of `rib` plus random addresses, and compares every answer with
/// the reference.
fn c_lookups_match<A: CKey>(file: &Path, spec: &str, rib: &Rib<A>, dir: &Path) {
    let keys = check_addresses(rib, 200_000, 14);
    let keys_path = dir.join(format!("keys-{spec}.bin"));
    let results_path = dir.join(format!("results-{spec}.bin"));
    std::fs::write(
        &keys_path,
        keys.iter().flat_map(|k| k.key_bytes()).collect::<Vec<u8>>(),
    )
    .unwrap();
    let output = run(
        test_program(),
        &[&"lookup", &file, &spec, &A::CODE, &keys_path, &results_path],
    );
    assert_success(
        &output,
        &format!("C lookups of {} with {spec}", file.display()),
    );
    let results: Vec<u64> = std::fs::read(&results_path)
        .unwrap()
        .chunks_exact(8)
        .map(|b| u64::from_ne_bytes(b.try_into().unwrap()))
        .collect();
    assert_eq!(results.len(), keys.len());
    let wrong: Vec<String> = keys
        .iter()
        .zip(&results)
        .filter(|(key, result)| **result != rib.lookup(**key).map_or(u64::MAX, u64::from))
        .take(5)
        .map(|(key, result)| format!("{} -> {result}", key.display()))
        .collect();
    assert!(
        wrong.is_empty(),
        "{spec} through C on {}: {} keys, wrong: {wrong:?}",
        file.display(),
        keys.len()
    );
}

#[test]
fn ipv4_lookups_equal_the_reference_for_engines_and_images() {
    let dir = scratch("v4");
    for (table, spec, image_specs) in [
        ("dfz-v4-nh.txt.gz", "dxr", &["dxr"][..]),
        (
            "dfz-v4-asn.txt.gz",
            "dir24-8",
            &["dir24-8", "dxr:k=16", "cpe"],
        ),
    ] {
        let path = shared_data(table);
        let rib = load_table(&path, &LoadOptions::default()).unwrap().v4;
        c_lookups_match(&path, spec, &rib, &dir);
        for image_spec in image_specs {
            let image = dir.join("table.fib");
            save_image(image_spec, &rib, &image).unwrap();
            c_lookups_match(&image, "image", &rib, &dir);
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn ipv6_lookups_equal_the_reference_for_engines_and_images() {
    let dir = scratch("v6");
    for (table, spec, image_spec) in [
        ("dfz-v6-nh.txt.gz", "lctrie", "dxr6"),
        ("linx-rib-ipv6.20141225.txt.gz", "cpe", "lctrie"),
    ] {
        let path = shared_data(table);
        let rib = load_table(&path, &LoadOptions::default()).unwrap().v6;
        c_lookups_match(&path, spec, &rib, &dir);
        let image = dir.join("table.fib");
        save_image(image_spec, &rib, &image).unwrap();
        c_lookups_match(&image, "image", &rib, &dir);
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn error_paths_return_codes_and_messages() {
    let dir = scratch("errors");
    let mut rib = Rib::<u32>::new();
    rib.insert("8.8.8.0/24".parse().unwrap(), 3);
    save_image("dir24-8", &rib, &dir.join("v4.fib")).unwrap();
    let output = run(test_program(), &[&"errors", &shared_data(""), &dir]);
    assert_success(&output, "C error paths");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn readers_see_published_batches_in_order() {
    assert_success(
        &run(test_program(), &[&"threads"]),
        "C readers and a writer",
    );
}

#[test]
fn the_example_prints_prefixes_and_labels() {
    let table = shared_data("dfz-v4-nh.txt.gz");
    let output = run(example(), &[&table, &"8.8.8.8", &"1.1.1.1", &"10.0.0.1"]);
    assert_success(&output, "examples/lookup.c");
    assert_eq!(
        String::from_utf8_lossy(&output.stdout),
        "8.8.8.8 8.8.8.0/24 191\n1.1.1.1 1.1.1.0/24 96\n10.0.0.1 - none\n"
    );

    let dir = scratch("example");
    let image = dir.join("nh.fib");
    let rib = load_table(&table, &LoadOptions::default()).unwrap().v4;
    save_image("dir24-8", &rib, &image).unwrap();
    let output = run(example(), &[&image, &"8.8.8.8"]);
    assert_success(&output, "examples/lookup.c on an image");
    assert_eq!(String::from_utf8_lossy(&output.stdout), "8.8.8.8 ? 191\n");

    let output = run(example(), &[&"--engine", &"lctrie", &table, &"8.8.8.999"]);
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("`8.8.8.999` is not an IPv4 address"),
        "{stderr}"
    );

    let output = run(example(), &[&dir.join("missing.txt"), &"8.8.8.8"]);
    assert_eq!(output.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&output.stderr).contains("missing.txt"));
    std::fs::remove_dir_all(&dir).unwrap();
}
