//! SVG plots of benchmark results (`fibkit bench --plot DIR`).
//!
//! - `throughput.svg`: median Mlps per engine, one bar per pattern and mode;
//! - `threads.svg`: aggregate Mlps versus thread count (when several counts
//!   were measured);
//! - `bursts.svg`: median Mlps versus keys per call (the `key` mode at 1,
//!   each `burstN` at N), one line per engine and pattern (when a line has
//!   two points or more);
//! - `dxr.svg`: for DXR configurations, RND throughput and bytes per prefix
//!   versus K (the direct table's bits; D + X for the extended layout), one
//!   line per layout family (D{K}R, and D{D}X{X}R for each D).

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use fibkit::bench::{Measurement, Mode};
use fibkit::engines::dxr::DxrConfig as Layout;
use fibkit::EngineConfig;
use plotters::coord::types::RangedCoordf64;
use plotters::coord::Shift;
use plotters::prelude::*;

/// One engine's build facts, as `fibkit bench` reports them.
pub struct EngineFacts {
    pub engine: String,
    pub bytes_per_prefix: f64,
}

fn series_name(m: &Measurement) -> String {
    format!("{} {}", m.pattern, m.mode)
}

fn plot_error<E: std::fmt::Debug>(path: &Path) -> impl FnOnce(E) -> anyhow::Error + '_ {
    move |e| anyhow::anyhow!("drawing {}: {e:?}", path.display())
}

/// A chart over `x` and `0..y_max` with a caption and described axes: the
/// frame every plot here draws in.
fn xy_chart<'a, 'b>(
    area: &'a DrawingArea<SVGBackend<'b>, Shift>,
    path: &Path,
    caption: &str,
    x: std::ops::Range<f64>,
    y_max: f64,
    (x_desc, y_desc): (&str, &str),
) -> Result<XyChart<'a, 'b>> {
    let mut chart = ChartBuilder::on(area)
        .caption(caption, ("sans-serif", 20))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d(x, 0f64..y_max)
        .map_err(plot_error(path))?;
    chart
        .configure_mesh()
        .x_desc(x_desc)
        .y_desc(y_desc)
        .draw()
        .map_err(plot_error(path))?;
    Ok(chart)
}

type XyChart<'a, 'b> =
    ChartContext<'a, SVGBackend<'b>, Cartesian2d<RangedCoordf64, RangedCoordf64>>;

/// One labelled line through `points`, with a dot on each point.
fn line_with_points(
    chart: &mut XyChart<'_, '_>,
    path: &Path,
    points: Vec<(f64, f64)>,
    color: RGBAColor,
    label: String,
) -> Result<()> {
    chart
        .draw_series(LineSeries::new(points.clone(), color.stroke_width(2)))
        .map_err(plot_error(path))?
        .label(label)
        .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 15, y)], color.stroke_width(2)));
    chart
        .draw_series(
            points
                .into_iter()
                .map(|p| Circle::new(p, 4, color.filled())),
        )
        .map_err(plot_error(path))?;
    Ok(())
}

/// The legend box, at `position`.
fn legend<'a, 'b: 'a>(
    chart: &mut XyChart<'a, 'b>,
    path: &Path,
    position: SeriesLabelPosition,
) -> Result<()> {
    chart
        .configure_series_labels()
        .position(position)
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .draw()
        .map_err(plot_error(path))
}

/// Writes the plots into `dir` (created if missing); returns the files written.
pub fn write_plots(
    dir: &Path,
    engines: &[EngineFacts],
    measurements: &[Measurement],
) -> Result<Vec<PathBuf>> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let mut written = Vec::new();
    let single: Vec<&Measurement> = {
        let min_threads = measurements.iter().map(|m| m.threads).min().unwrap_or(1);
        measurements
            .iter()
            .filter(|m| m.threads == min_threads && m.engine != "ceiling")
            .collect()
    };
    if !single.is_empty() {
        let path = dir.join("throughput.svg");
        throughput_bars(&path, &single)?;
        written.push(path);
    }
    let mut thread_counts: Vec<usize> = measurements.iter().map(|m| m.threads).collect();
    thread_counts.sort_unstable();
    thread_counts.dedup();
    if thread_counts.len() > 1 {
        let path = dir.join("threads.svg");
        threads_lines(&path, measurements, &thread_counts)?;
        written.push(path);
    }
    if !burst_points(&single).is_empty() {
        let path = dir.join("bursts.svg");
        bursts_lines(&path, &single)?;
        written.push(path);
    }
    let dxr: Vec<(Layout, &EngineFacts)> = engines
        .iter()
        .filter_map(|facts| dxr_layout(&facts.engine).map(|layout| (layout, facts)))
        .collect();
    if dxr.len() > 1 {
        let path = dir.join("dxr.svg");
        dxr_versus_k(&path, &dxr, measurements)?;
        written.push(path);
    }
    Ok(written)
}

/// The layout of a DXR spec (`dxr`, `dxr:k=20`, `dxr:d=16,x=4`).
fn dxr_layout(engine: &str) -> Option<Layout> {
    Layout::parse(engine).ok()
}

/// The layout family a DXR point is drawn with: `D{K}R`, or `D{D}X{X}R`
/// for each D (so the extended layouts, which pay a second dependent read,
/// are not mixed up with the single-level ones at the same K).
fn dxr_family(layout: Layout) -> String {
    if layout.d_bits == 0 {
        "D{K}R".to_string()
    } else {
        format!("D{}X{{X}}R", layout.d_bits)
    }
}

fn throughput_bars(path: &Path, measurements: &[&Measurement]) -> Result<()> {
    let mut engines: Vec<String> = Vec::new();
    let mut series: Vec<String> = Vec::new();
    for m in measurements {
        if !engines.contains(&m.engine) {
            engines.push(m.engine.clone());
        }
        let name = series_name(m);
        if !series.contains(&name) {
            series.push(name);
        }
    }
    let max = measurements
        .iter()
        .map(|m| m.median_mlps)
        .fold(0.0, f64::max)
        * 1.1
        + 1e-9;
    let root = SVGBackend::new(path, (900, 520)).into_drawing_area();
    root.fill(&WHITE).map_err(plot_error(path))?;
    let mut chart = ChartBuilder::on(&root)
        .caption("Lookup throughput (median of runs)", ("sans-serif", 20))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d(0f64..engines.len() as f64, 0f64..max)
        .map_err(plot_error(path))?;
    let labels = engines.clone();
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(engines.len() * 2 + 1)
        .x_label_formatter(&|x| {
            let index = x.floor() as usize;
            if (x - index as f64 - 0.5).abs() < 0.01 {
                labels.get(index).cloned().unwrap_or_default()
            } else {
                String::new()
            }
        })
        .y_desc("million lookups per second")
        .draw()
        .map_err(plot_error(path))?;
    let width = 0.8 / series.len() as f64;
    for (s, name) in series.iter().enumerate() {
        let color = Palette99::pick(s).to_rgba();
        let bars: Vec<Rectangle<(f64, f64)>> = measurements
            .iter()
            .filter(|m| &series_name(m) == name)
            .map(|m| {
                let e = engines.iter().position(|x| *x == m.engine).unwrap_or(0) as f64;
                let left = e + 0.1 + s as f64 * width;
                Rectangle::new(
                    [(left, 0.0), (left + width * 0.9, m.median_mlps)],
                    color.filled(),
                )
            })
            .collect();
        chart
            .draw_series(bars)
            .map_err(plot_error(path))?
            .label(name.clone())
            .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 10, y + 5)], color.filled()));
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .draw()
        .map_err(plot_error(path))?;
    root.present().map_err(plot_error(path))?;
    Ok(())
}

fn threads_lines(path: &Path, measurements: &[Measurement], thread_counts: &[usize]) -> Result<()> {
    let max = measurements
        .iter()
        .map(|m| m.median_mlps)
        .fold(0.0, f64::max)
        * 1.1
        + 1e-9;
    let max_threads = *thread_counts.last().unwrap_or(&1) as f64;
    let root = SVGBackend::new(path, (900, 520)).into_drawing_area();
    root.fill(&WHITE).map_err(plot_error(path))?;
    let mut chart = xy_chart(
        &root,
        path,
        "Aggregate throughput versus threads",
        0.5..max_threads + 0.5,
        max,
        ("threads", "million lookups per second"),
    )?;
    let mut keys: Vec<(String, String)> = Vec::new();
    for m in measurements.iter().filter(|m| m.engine != "ceiling") {
        let key = (m.engine.clone(), series_name(m));
        if !keys.contains(&key) {
            keys.push(key);
        }
    }
    for (index, (engine, series)) in keys.iter().enumerate() {
        let points: Vec<(f64, f64)> = measurements
            .iter()
            .filter(|m| &m.engine == engine && &series_name(m) == series)
            .map(|m| (m.threads as f64, m.median_mlps))
            .collect();
        let color = Palette99::pick(index).to_rgba();
        line_with_points(
            &mut chart,
            path,
            points,
            color,
            format!("{engine} {series}"),
        )?;
    }
    legend(&mut chart, path, SeriesLabelPosition::MiddleRight)?;
    root.present().map_err(plot_error(path))?;
    Ok(())
}

/// Keys per call of a measurement's mode: 1 for `key`, N for `burstN`;
/// `None` for the modes that are not one call per burst.
fn keys_per_call(mode: Mode) -> Option<usize> {
    match mode {
        Mode::Key => Some(1),
        Mode::Burst(keys) => Some(keys),
        _ => None,
    }
}

/// The (log2 keys per call, median Mlps) points of each engine and
/// pattern, for the lines with two points or more.
fn burst_points(measurements: &[&Measurement]) -> Vec<(String, Vec<(f64, f64)>)> {
    let mut lines: Vec<(String, Vec<(f64, f64)>)> = Vec::new();
    for m in measurements {
        let Some(keys) = keys_per_call(m.mode) else {
            continue;
        };
        let name = format!("{} {}", m.engine, m.pattern);
        let point = ((keys as f64).log2(), m.median_mlps);
        match lines.iter_mut().find(|(line, _)| *line == name) {
            Some((_, points)) => points.push(point),
            None => lines.push((name, vec![point])),
        }
    }
    lines.retain(|(_, points)| points.len() > 1);
    for (_, points) in &mut lines {
        points.sort_by(|a, b| a.0.total_cmp(&b.0));
    }
    lines
}

fn bursts_lines(path: &Path, measurements: &[&Measurement]) -> Result<()> {
    let lines = burst_points(measurements);
    let points = lines.iter().flat_map(|(_, points)| points);
    let max = points.clone().map(|p| p.1).fold(0.0, f64::max) * 1.1 + 1e-9;
    let x_max = points.map(|p| p.0).fold(0.0, f64::max);
    let root = SVGBackend::new(path, (900, 520)).into_drawing_area();
    root.fill(&WHITE).map_err(plot_error(path))?;
    let mut chart = xy_chart(
        &root,
        path,
        "Throughput versus keys per call (key = 1, burstN = N)",
        -0.5..x_max + 0.5,
        max,
        ("log2 of keys per call", "million lookups per second"),
    )?;
    for (index, (name, points)) in lines.into_iter().enumerate() {
        let color = Palette99::pick(index).to_rgba();
        line_with_points(&mut chart, path, points, color, name)?;
    }
    legend(&mut chart, path, SeriesLabelPosition::UpperLeft)?;
    root.present().map_err(plot_error(path))?;
    Ok(())
}

fn dxr_versus_k(
    path: &Path,
    dxr: &[(Layout, &EngineFacts)],
    measurements: &[Measurement],
) -> Result<()> {
    let root = SVGBackend::new(path, (900, 760)).into_drawing_area();
    root.fill(&WHITE).map_err(plot_error(path))?;
    let (upper, lower) = root.split_vertically(380);
    let k_of = |layout: &Layout| layout.k_bits as f64;
    let k_min = dxr.iter().map(|(l, _)| k_of(l)).fold(f64::MAX, f64::min) - 0.5;
    let k_max = dxr.iter().map(|(l, _)| k_of(l)).fold(f64::MIN, f64::max) + 0.5;
    let mut families: Vec<String> = dxr.iter().map(|(l, _)| dxr_family(*l)).collect();
    families.sort();
    families.dedup();
    // Upper panel: RND throughput by K, one line per family and mode. One
    // thread count (the smallest) and DXR rows only.
    let min_threads = measurements.iter().map(|m| m.threads).min().unwrap_or(1);
    let rnd: Vec<(&Measurement, Layout)> = measurements
        .iter()
        .filter(|m| m.pattern.starts_with("rnd") && m.threads == min_threads)
        .filter_map(|m| {
            dxr.iter()
                .find(|(_, f)| f.engine == m.engine)
                .map(|(layout, _)| (m, *layout))
        })
        .collect();
    let max = rnd.iter().map(|(m, _)| m.median_mlps).fold(0.0, f64::max) * 1.1 + 1e-9;
    let k_desc = ("K (direct-table bits; D + X for D{D}X{X}R)", "Mlps");
    let mut chart = xy_chart(
        &upper,
        path,
        "DXR: throughput versus K",
        k_min..k_max,
        max,
        k_desc,
    )?;
    let mut series: Vec<(String, String)> = rnd
        .iter()
        .map(|(m, layout)| (dxr_family(*layout), series_name(m)))
        .collect();
    series.sort();
    series.dedup();
    for (index, (family, name)) in series.iter().enumerate() {
        let mut points: Vec<(f64, f64)> = rnd
            .iter()
            .filter(|(m, layout)| &dxr_family(*layout) == family && &series_name(m) == name)
            .map(|(m, layout)| (k_of(layout), m.median_mlps))
            .collect();
        points.sort_by(|a, b| a.0.total_cmp(&b.0));
        let color = Palette99::pick(index).to_rgba();
        line_with_points(&mut chart, path, points, color, format!("{family} {name}"))?;
    }
    legend(&mut chart, path, SeriesLabelPosition::MiddleRight)?;
    // Lower panel: footprint, one line per family.
    let max_bytes = dxr
        .iter()
        .map(|(_, f)| f.bytes_per_prefix)
        .fold(0.0, f64::max)
        * 1.1
        + 1e-9;
    let b_desc = (
        "K (direct-table bits; D + X for D{D}X{X}R)",
        "bytes per prefix",
    );
    let caption = "DXR: footprint versus K";
    let mut chart = xy_chart(&lower, path, caption, k_min..k_max, max_bytes, b_desc)?;
    for (index, family) in families.iter().enumerate() {
        let mut points: Vec<(f64, f64)> = dxr
            .iter()
            .filter(|(layout, _)| &dxr_family(*layout) == family)
            .map(|(layout, f)| (k_of(layout), f.bytes_per_prefix))
            .collect();
        points.sort_by(|a, b| a.0.total_cmp(&b.0));
        let color = Palette99::pick(index).to_rgba();
        line_with_points(&mut chart, path, points, color, family.clone())?;
    }
    legend(&mut chart, path, SeriesLabelPosition::UpperLeft)?;
    root.present().map_err(plot_error(path))?;
    Ok(())
}

/// The timeline of `fibkit replay`: reader throughput (top) and changes
/// published (bottom) per step, over the replay's seconds.
pub fn replay_timeline(path: &Path, report: &fibkit::replay::ReplayReport) -> Result<()> {
    let root = SVGBackend::new(path, (900, 600)).into_drawing_area();
    root.fill(&WHITE).map_err(plot_error(path))?;
    let (top, bottom) = root.split_vertically(300);
    let steps = &report.timeline;
    let end = steps.last().map_or(1.0, |s| s.at_seconds) + steps.first().map_or(0.1, |_| 0.1);
    let width = if steps.len() > 1 {
        steps[1].at_seconds - steps[0].at_seconds
    } else {
        end
    };
    let max_mlps = steps.iter().map(|s| s.reader_mlps).fold(0.0, f64::max);
    let mut chart = xy_chart(
        &top,
        path,
        &format!("{}: readers during the replay", report.engine),
        0.0..end,
        (max_mlps * 1.15).max(1.0),
        ("seconds", "reader Mlookups/s"),
    )?;
    let idle = report.idle_reader_mlps;
    line_with_points(
        &mut chart,
        path,
        steps
            .iter()
            .map(|s| (s.at_seconds + width / 2.0, s.reader_mlps))
            .collect(),
        BLUE.to_rgba(),
        "during the replay".to_string(),
    )?;
    if idle > 0.0 {
        chart
            .draw_series(LineSeries::new(
                vec![(0.0, idle), (end, idle)],
                BLACK.mix(0.6).stroke_width(1),
            ))
            .map_err(plot_error(path))?
            .label(format!("idle ({idle:.1})"))
            .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 15, y)], BLACK.mix(0.6)));
    }
    legend(&mut chart, path, SeriesLabelPosition::LowerRight)?;
    let max_changes = steps.iter().map(|s| s.changes).max().unwrap_or(0) as f64;
    let mut chart = xy_chart(
        &bottom,
        path,
        "changes made visible per step",
        0.0..end,
        (max_changes * 1.15).max(1.0),
        ("seconds", "changes"),
    )?;
    chart
        .draw_series(steps.iter().map(|s| {
            Rectangle::new(
                [
                    (s.at_seconds, 0.0),
                    (s.at_seconds + width * 0.9, s.changes as f64),
                ],
                RED.mix(0.7).filled(),
            )
        }))
        .map_err(plot_error(path))?;
    root.present().map_err(plot_error(path))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dxr_layouts_and_families_from_specs() {
        let layout = |d_bits, k_bits| Some(Layout { d_bits, k_bits });
        assert_eq!(dxr_layout("dxr:k=20"), layout(0, 20));
        assert_eq!(dxr_layout("dxr:d=16,x=4"), layout(16, 20));
        assert_eq!(
            dxr_layout("dxr"),
            Some(fibkit::engines::dxr::DEFAULT_LAYOUT)
        );
        assert_eq!(dxr_layout("dir24-8"), None);
        assert_eq!(dxr_layout("dxr:k=99"), None);
        assert_eq!(
            dxr_family(Layout {
                d_bits: 0,
                k_bits: 18
            }),
            "D{K}R"
        );
        assert_eq!(
            dxr_family(Layout {
                d_bits: 14,
                k_bits: 18
            }),
            "D14X{X}R"
        );
    }
}
