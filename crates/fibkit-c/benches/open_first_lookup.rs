//! Time to the first answer: opening a saved image and looking up one
//! address through the C API (`fibkit_fib_open_image` +
//! `fibkit_lookup_v4`), against loading the text table and building the
//! same engine (`fibkit_table_load` + `fibkit_fib_build` +
//! `fibkit_lookup_v4`), alternating A, B, A, B, ... in one process. The
//! image stays in the page cache between rounds (the first open, not
//! counted, reads it in). The open is also split into its two steps: the
//! file's checks (`Image::open`: map, header, checksum, section table) and
//! the engine's (`open_image`: every index in bounds).
//!
//! ```text
//! cargo bench -p fibkit-c --bench open_first_lookup -- TABLE SPEC [ROUNDS]
//! ```
//!
//! TABLE is a text table (`/path/to/dfz-v4-nh.txt.gz`), SPEC an IPv4 engine
//! that can be saved (`dxr`); the image is written to the temporary
//! directory first. 7 rounds by default.

// The C library's source, compiled into this benchmark: its entry points
// are the ones a C program links.
#[allow(dead_code, unused_imports, clippy::all, missing_docs)]
#[path = "../src/lib.rs"]
mod c_api;

use std::ffi::CString;
use std::hint::black_box;
use std::path::Path;
use std::time::Instant;

use fibkit::image::Image;
use fibkit::load::{load_table, LoadOptions};
use fibkit::registry::{save_image, ImageFamily};

const PROBE: u32 = 0x0808_0808;

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

fn ms_since(start: Instant) -> f64 {
    start.elapsed().as_secs_f64() * 1e3
}

/// Opens the image through C and looks up [`PROBE`]: milliseconds.
fn open_and_look_up(image: &CString) -> f64 {
    let start = Instant::now();
    let mut fib = std::ptr::null_mut();
    let mut label = 0u32;
    // SAFETY: valid C strings and output pointers; the table is freed
    // below, after the clock stops.
    unsafe {
        assert_eq!(c_api::fibkit_fib_open_image(image.as_ptr(), &mut fib), 0);
        assert_eq!(c_api::fibkit_lookup_v4(fib, PROBE, &mut label), 0);
    }
    let elapsed = ms_since(start);
    black_box(label);
    // SAFETY: opened above, not used afterwards.
    unsafe { c_api::fibkit_fib_free(fib) };
    elapsed
}

/// Loads the text table, builds `spec` through C and looks up [`PROBE`]:
/// milliseconds.
fn build_and_look_up(table: &CString, spec: &CString) -> f64 {
    let start = Instant::now();
    let (mut c_table, mut fib) = (std::ptr::null_mut(), std::ptr::null_mut());
    let mut label = 0u32;
    // SAFETY: valid C strings and output pointers; the objects are freed
    // below.
    unsafe {
        assert_eq!(c_api::fibkit_table_load(table.as_ptr(), &mut c_table), 0);
        assert_eq!(
            c_api::fibkit_fib_build(c_table, 4, spec.as_ptr(), &mut fib),
            0
        );
        assert_eq!(c_api::fibkit_lookup_v4(fib, PROBE, &mut label), 0);
    }
    let elapsed = ms_since(start);
    black_box(label);
    // SAFETY: created above, not used afterwards.
    unsafe {
        c_api::fibkit_fib_free(fib);
        c_api::fibkit_table_free(c_table);
    }
    elapsed
}

fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| a != "--bench")
        .collect();
    let (Some(table), Some(spec)) = (args.first(), args.get(1)) else {
        eprintln!("usage: open_first_lookup TABLE SPEC [ROUNDS]");
        std::process::exit(2);
    };
    let rounds: usize = args.get(2).and_then(|r| r.parse().ok()).unwrap_or(7);
    let image_path =
        std::env::temp_dir().join(format!("fibkit-open-bench-{}.fib", std::process::id()));
    let loaded = load_table(Path::new(table), &LoadOptions::default()).expect("the table loads");
    save_image(spec, &loaded.v4, &image_path).expect("the engine saves");
    let image_bytes = std::fs::metadata(&image_path).map_or(0, |m| m.len());
    let image_c = CString::new(image_path.to_str().expect("a UTF-8 path")).expect("no NUL");
    let (table_c, spec_c) = (
        CString::new(table.as_str()).expect("no NUL"),
        CString::new(spec.as_str()).expect("no NUL"),
    );
    let loadavg = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    println!(
        "{spec} on {table}: image {image_bytes} bytes, {rounds} rounds; load average {}",
        loadavg
            .split_whitespace()
            .take(3)
            .collect::<Vec<_>>()
            .join(" ")
    );
    open_and_look_up(&image_c); // reads the image into the page cache
    let (mut opens, mut builds, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
    let (mut file_checks, mut engine_checks) = (Vec::new(), Vec::new());
    for _ in 0..rounds {
        let open = open_and_look_up(&image_c);
        let build = build_and_look_up(&table_c, &spec_c);
        let start = Instant::now();
        let image = Image::open(&image_path).expect("the image opens");
        file_checks.push(ms_since(start));
        let start = Instant::now();
        black_box(<u32 as ImageFamily>::open_image(&image).expect("the snapshot opens"));
        engine_checks.push(ms_since(start));
        opens.push(open);
        builds.push(build);
        ratios.push(build / open);
    }
    println!(
        "open image + first lookup: median {:.2} ms (min {:.2}, max {:.2}); of which file checks \
         {:.2} ms, engine checks {:.2} ms (medians)",
        median(opens.clone()),
        opens.iter().copied().fold(f64::INFINITY, f64::min),
        opens.iter().copied().fold(0.0, f64::max),
        median(file_checks),
        median(engine_checks),
    );
    println!(
        "load text + build + first lookup: median {:.1} ms; build/open per adjacent pair: median {:.0}x",
        median(builds),
        median(ratios),
    );
    std::fs::remove_file(&image_path).ok();
}
