//! SVG plots of benchmark results (`fibkit bench --plot DIR`, or `fibkit
//! plot RESULTS.json` from a stored run).
//!
//! - `throughput.svg`: median Mlps per engine, one horizontal bar per
//!   pattern and mode;
//! - `threads.svg`: aggregate Mlps versus thread count (when several counts
//!   were measured), on a log scale since engines differ by decades;
//! - `bursts.svg`: median Mlps versus keys per call (the `key` mode at 1,
//!   each `burstN` at N), one line per engine and pattern (when a line has
//!   two points or more);
//! - `dxr.svg`: for DXR configurations, RND throughput and bytes per prefix
//!   (log scale) versus K (the direct table's bits; D + X for the extended
//!   layout), one line per layout family (D{K}R, and D{D}X{X}R for each D).
//!
//! Every plot keeps its legend in a column right of the data, gives each
//! engine (or layout family) its own colour and marker, and draws the
//! second, third, ... mode of an engine a dash pattern of its own.

use std::ops::Range;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use fibkit::engine::EngineConfig;
use fibkit::engines::dxr::DxrConfig as Layout;
use fibkit_bench::{Measurement, Mode};
use plotters::coord::ranged1d::{
    AsRangedCoord, DefaultFormatting, KeyPointHint, KeyPointWeight, Ranged, ValueFormatter,
};
use plotters::coord::types::RangedCoordf64;
use plotters::coord::Shift;
use plotters::element::DashedPathElement;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

/// One engine's build facts, as `fibkit bench` reports them (and stores in
/// its JSON).
#[derive(serde::Serialize, serde::Deserialize)]
pub struct EngineFacts {
    pub engine: String,
    pub bytes_per_prefix: f64,
}

/// What `fibkit plot` reads back from a `fibkit bench --json` file (the
/// other fields are ignored).
#[derive(serde::Deserialize)]
struct StoredRun {
    engines: Vec<EngineFacts>,
    measurements: Vec<Measurement>,
}

/// Re-renders the plots of a stored `fibkit bench --json` run into `dir`.
pub fn plot_stored_run(json: &Path, dir: &Path) -> Result<Vec<PathBuf>> {
    let text =
        std::fs::read_to_string(json).with_context(|| format!("reading {}", json.display()))?;
    let run: StoredRun = serde_json::from_str(&text).with_context(|| {
        format!(
            "{}: not the JSON of `fibkit bench --json` (engines, measurements)",
            json.display()
        )
    })?;
    write_plots(dir, &run.engines, &run.measurements)
}

fn series_name(m: &Measurement) -> String {
    format!("{} {}", m.pattern, m.mode)
}

fn plot_error<E: std::fmt::Debug>(path: &Path) -> impl FnOnce(E) -> anyhow::Error + '_ {
    move |e| anyhow::anyhow!("drawing {}: {e:?}", path.display())
}

/// Colours that stay apart on white: Tableau's ten, then six darker ones.
const PALETTE: [RGBColor; 16] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(127, 127, 127),
    RGBColor(188, 189, 34),
    RGBColor(23, 190, 207),
    RGBColor(0, 0, 128),
    RGBColor(128, 0, 0),
    RGBColor(0, 110, 110),
    RGBColor(0, 0, 0),
    RGBColor(110, 110, 0),
    RGBColor(90, 0, 140),
];

/// Marker outlines, as pixel offsets around the point.
const MARKERS: [&[(i32, i32)]; 5] = [
    &[
        (-2, -4),
        (2, -4),
        (4, -2),
        (4, 2),
        (2, 4),
        (-2, 4),
        (-4, 2),
        (-4, -2),
    ],
    &[(-4, -4), (4, -4), (4, 4), (-4, 4)],
    &[(0, -5), (5, 4), (-5, 4)],
    &[(0, -5), (5, 0), (0, 5), (-5, 0)],
    &[(0, 5), (5, -4), (-5, -4)],
];

/// How one series is drawn: a colour and a marker per engine (the pair
/// differs for the first 80 engines), and a dash pattern per mode (solid
/// for the first).
#[derive(Clone, Copy)]
struct SeriesStyle {
    color: RGBColor,
    marker: &'static [(i32, i32)],
    /// Dash and gap lengths in pixels; `None`: solid.
    dash: Option<(u32, u32)>,
}

/// Dash patterns of an engine's second, third, ... series: dashes, dots,
/// long dashes, sparse dashes (then again).
const DASHES: [(u32, u32); 4] = [(8, 4), (2, 3), (16, 5), (4, 9)];

impl SeriesStyle {
    /// The style of engine `engine`'s `variant`-th series.
    fn new(engine: usize, variant: usize) -> SeriesStyle {
        SeriesStyle {
            color: PALETTE[engine % PALETTE.len()],
            marker: MARKERS[engine % MARKERS.len()],
            dash: variant
                .checked_sub(1)
                .map(|index| DASHES[index % DASHES.len()]),
        }
    }

    fn line(self) -> ShapeStyle {
        self.color.stroke_width(2)
    }

    /// The marker, in pixels around the point it is drawn at
    /// (`EmptyElement::at(point) + style.marker()`).
    fn marker(self) -> Polygon<(i32, i32)> {
        Polygon::new(self.marker.to_vec(), self.color.filled())
    }
}

/// A legend entry: its text and style.
type LegendEntry = (String, SeriesStyle);

/// Tick labels of the x axis.
#[derive(Clone, Copy)]
enum XTicks {
    /// Whole numbers only (thread counts, bit counts).
    Integer,
    /// `2^x` at whole x (keys per call on a log2 axis).
    PowerOfTwo,
    /// The value.
    Number,
}

impl XTicks {
    fn label(self, x: f64) -> String {
        let whole = (x - x.round()).abs() < 1e-6;
        match self {
            XTicks::Integer if whole => format!("{}", x.round() as i64),
            XTicks::PowerOfTwo if whole => format!("{}", 2f64.powi(x.round() as i32)),
            XTicks::Number => number(x),
            _ => String::new(),
        }
    }
}

/// A tick value without trailing zeros (`500`, `2.5`, `0.02`).
fn number(value: f64) -> String {
    let text = format!("{value:.2}");
    text.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// A part of an SVG drawing, in pixels.
type Area<'a> = DrawingArea<SVGBackend<'a>, Shift>;

/// The canvas of one plot: the whole drawing, the area for the charts and a
/// column on the right for legends, as wide as the longest legend text,
/// so no legend covers data. The canvas grows to fit `legend_rows`.
fn canvas<'a>(
    path: &'a Path,
    (width, height): (u32, u32),
    legend_texts: &[&str],
    legend_rows: usize,
) -> Result<(Area<'a>, Area<'a>, Area<'a>)> {
    let longest = legend_texts
        .iter()
        .map(|t| t.chars().count())
        .max()
        .unwrap_or(0) as u32;
    let legend_width = if legend_texts.is_empty() {
        0
    } else {
        48 + 7 * longest
    };
    let height = height.max(LEGEND_TOP as u32 + 20 + LEGEND_ROW as u32 * legend_rows as u32);
    let root = SVGBackend::new(path, (width + legend_width, height)).into_drawing_area();
    root.fill(&WHITE).map_err(plot_error(path))?;
    let (charts, legends) = root.split_horizontally(width);
    Ok((root, charts, legends))
}

/// Pixels from the top of a legend column to its first row (below the
/// chart's caption) and between rows.
const LEGEND_TOP: i32 = 48;
const LEGEND_ROW: i32 = 17;

/// Draws `entries` as a column of samples (a line with its marker, or a
/// filled box for `bars`) and texts.
fn draw_legend(area: &Area<'_>, path: &Path, entries: &[LegendEntry], bars: bool) -> Result<()> {
    let text_style =
        TextStyle::from(("sans-serif", 13).into_font()).pos(Pos::new(HPos::Left, VPos::Center));
    for (row, (text, style)) in entries.iter().enumerate() {
        let y = LEGEND_TOP + LEGEND_ROW * row as i32;
        if bars {
            area.draw(&Rectangle::new(
                [(8, y - 5), (30, y + 5)],
                style.color.filled(),
            ))
            .map_err(plot_error(path))?;
        } else {
            let sample = vec![(6, y), (34, y)];
            if let Some((dash, gap)) = style.dash {
                area.draw(&DashedPathElement::new(sample, dash, gap, style.line()))
            } else {
                area.draw(&PathElement::new(sample, style.line()))
            }
            .map_err(plot_error(path))?;
            area.draw(&(EmptyElement::at((20, y)) + style.marker()))
                .map_err(plot_error(path))?;
        }
        area.draw(&Text::new(text.clone(), (40, y), text_style.clone()))
            .map_err(plot_error(path))?;
    }
    Ok(())
}

/// A chart over `x` and `y` with a caption and described axes: the frame
/// every line plot here draws in. `y` is `lo..hi` or a [`LogAxis`].
fn xy_chart<'a, 'b, Y>(
    area: &'a DrawingArea<SVGBackend<'b>, Shift>,
    path: &Path,
    caption: &str,
    (x, x_ticks): (Range<f64>, XTicks),
    y: Y,
    (x_desc, y_desc): (&str, &str),
) -> Result<ChartContext<'a, SVGBackend<'b>, Cartesian2d<RangedCoordf64, Y::CoordDescType>>>
where
    Y: AsRangedCoord<Value = f64>,
    Y::CoordDescType: Ranged<ValueType = f64> + ValueFormatter<f64>,
{
    let x_ticks_wanted = match x_ticks {
        XTicks::Number => 10,
        // One tick per whole number in range, at most 24.
        _ => ((x.end - x.start).floor() as usize + 1).min(24),
    };
    let mut chart = ChartBuilder::on(area)
        .caption(caption, ("sans-serif", 20))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d(x, y)
        .map_err(plot_error(path))?;
    chart
        .configure_mesh()
        .x_labels(x_ticks_wanted)
        .x_label_formatter(&|x| x_ticks.label(*x))
        .y_label_formatter(&|y| number(*y))
        .x_desc(x_desc)
        .y_desc(y_desc)
        .draw()
        .map_err(plot_error(path))?;
    Ok(chart)
}

/// One line through `points` (sorted by x), with a marker on each point.
fn line_with_markers<X, Y>(
    chart: &mut ChartContext<'_, SVGBackend<'_>, Cartesian2d<X, Y>>,
    path: &Path,
    points: Vec<(f64, f64)>,
    style: SeriesStyle,
) -> Result<()>
where
    X: Ranged<ValueType = f64>,
    Y: Ranged<ValueType = f64>,
{
    if let Some((dash, gap)) = style.dash {
        chart.draw_series(DashedLineSeries::new(
            points.clone(),
            dash,
            gap,
            style.line(),
        ))
    } else {
        chart.draw_series(LineSeries::new(points.clone(), style.line()))
    }
    .map_err(plot_error(path))?;
    chart
        .draw_series(
            points
                .into_iter()
                .map(|p| EmptyElement::at(p) + style.marker()),
        )
        .map_err(plot_error(path))?;
    Ok(())
}

/// `0..max * 1.1` over `values`: a linear axis from zero with room above
/// the largest value.
fn linear_axis(values: impl Iterator<Item = f64>) -> Range<f64> {
    0.0..values.fold(0.0, f64::max) * 1.1 + 1e-9
}

/// A log axis from a little below the smallest positive value to a little
/// above the largest, for values that span decades. Its ticks are 1, 2 and 5
/// times the powers of ten in range, its light mesh lines every multiple
/// (plotters' own log axis labels only the powers, too few when the data
/// spans one or two decades).
#[derive(Clone)]
struct LogAxis(Range<f64>);

impl LogAxis {
    fn fitted(values: impl Iterator<Item = f64>) -> LogAxis {
        let (lo, hi) = values
            .filter(|v| *v > 0.0)
            .fold((f64::MAX, 0f64), |(lo, hi), v| (lo.min(v), hi.max(v)));
        if hi == 0.0 {
            return LogAxis(0.1..1.0);
        }
        LogAxis(lo / 1.3..hi * 1.3)
    }

    /// The multiples of the powers of ten in range.
    fn ticks(&self, multiples: &[f64]) -> Vec<f64> {
        let mut ticks = Vec::new();
        let mut decade = 10f64.powf(self.0.start.log10().floor());
        while decade <= self.0.end {
            ticks.extend(
                multiples
                    .iter()
                    .map(|m| m * decade)
                    .filter(|v| self.0.contains(v)),
            );
            decade *= 10.0;
        }
        ticks
    }
}

impl Ranged for LogAxis {
    type FormatOption = DefaultFormatting;
    type ValueType = f64;

    fn map(&self, value: &f64, limit: (i32, i32)) -> i32 {
        let (lo, hi) = (self.0.start.ln(), self.0.end.ln());
        // Values at or below zero (none are drawn) land below the axis.
        let share = (value.max(self.0.start / 10.0).ln() - lo) / (hi - lo);
        limit.0 + (share * f64::from(limit.1 - limit.0)).round() as i32
    }

    fn key_points<Hint: KeyPointHint>(&self, hint: Hint) -> Vec<f64> {
        let ticks = match hint.weight() {
            KeyPointWeight::Bold => self.ticks(&[1.0, 2.0, 5.0]),
            KeyPointWeight::Any => self.ticks(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0]),
        };
        if ticks.len() <= hint.max_num_points() {
            ticks
        } else {
            self.ticks(&[1.0])
        }
    }

    fn range(&self) -> Range<f64> {
        self.0.clone()
    }
}

/// The position of `item` in `list`, appended if missing.
fn index_of<T: PartialEq>(list: &mut Vec<T>, item: T) -> usize {
    match list.iter().position(|x| *x == item) {
        Some(index) => index,
        None => {
            list.push(item);
            list.len() - 1
        }
    }
}

/// Points of lines keyed by `(engine, series)`, in first-seen order.
type Lines = Vec<((String, String), Vec<(f64, f64)>)>;

/// Adds `point` to the line `key`, starting the line if it is new.
fn add_point(lines: &mut Lines, key: (String, String), point: (f64, f64)) {
    match lines.iter_mut().find(|(line, _)| *line == key) {
        Some((_, points)) => points.push(point),
        None => lines.push((key, vec![point])),
    }
}

/// Lines of `(engine, series)` with their points, each styled by its
/// engine's colour and marker and its series' dash pattern, grouped by
/// engine (in first-seen order of engines and of series).
fn styled_lines(mut lines: Lines) -> Vec<(LegendEntry, Vec<(f64, f64)>)> {
    let mut engines: Vec<String> = Vec::new();
    let mut series: Vec<String> = Vec::new();
    for ((engine, name), _) in &lines {
        index_of(&mut engines, engine.clone());
        index_of(&mut series, name.clone());
    }
    let position = |list: &[String], item: &String| list.iter().position(|x| x == item);
    let indices =
        |(engine, name): &(String, String)| (position(&engines, engine), position(&series, name));
    lines.sort_by_key(|(key, _)| indices(key));
    lines
        .into_iter()
        .map(|(key, mut points)| {
            points.sort_by(|a, b| a.0.total_cmp(&b.0));
            let (engine_index, series_index) = indices(&key);
            let style = SeriesStyle::new(engine_index.unwrap_or(0), series_index.unwrap_or(0));
            let (engine, name) = key;
            let text = if name.is_empty() {
                engine
            } else {
                format!("{engine} {name}")
            };
            ((text, style), points)
        })
        .collect()
}

/// Draws `lines` in `chart` and their legend in `legend_area`.
fn draw_lines<X, Y>(
    chart: &mut ChartContext<'_, SVGBackend<'_>, Cartesian2d<X, Y>>,
    legend_area: &Area<'_>,
    path: &Path,
    lines: Vec<(LegendEntry, Vec<(f64, f64)>)>,
) -> Result<()>
where
    X: Ranged<ValueType = f64>,
    Y: Ranged<ValueType = f64>,
{
    let mut entries = Vec::new();
    for (entry, points) in lines {
        line_with_markers(chart, path, points, entry.1)?;
        entries.push(entry);
    }
    draw_legend(legend_area, path, &entries, false)
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
        index_of(&mut engines, m.engine.clone());
        index_of(&mut series, series_name(m));
    }
    let entries: Vec<LegendEntry> = series
        .iter()
        .enumerate()
        .map(|(index, name)| (name.clone(), SeriesStyle::new(index, 0)))
        .collect();
    // Horizontal bars: engine specs are long, and read best as row heads.
    let row_px = (14 * series.len() as u32 + 10).max(24);
    let height = 110 + row_px * engines.len() as u32;
    let texts: Vec<&str> = series.iter().map(String::as_str).collect();
    let (root, area, legend_area) = canvas(path, (900, height), &texts, series.len())?;
    let longest = engines.iter().map(|e| e.chars().count()).max().unwrap_or(0) as u32;
    let rows = engines.len() as f64;
    let mut chart = ChartBuilder::on(&area)
        .caption("Lookup throughput (median of runs)", ("sans-serif", 20))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(16 + 7 * longest)
        .build_cartesian_2d(
            linear_axis(measurements.iter().map(|m| m.median_mlps)),
            0f64..rows,
        )
        .map_err(plot_error(path))?;
    // Engine e's row is [rows - 1 - e, rows - e], the first engine on top;
    // its name labels the row's middle.
    chart
        .configure_mesh()
        .disable_y_mesh()
        .y_labels(engines.len() * 2 + 1)
        .y_label_formatter(&|y| {
            let row = y.floor();
            if (y - row - 0.5).abs() < 0.01 && row >= 0.0 && row < rows {
                engines[(rows - 1.0 - row) as usize].clone()
            } else {
                String::new()
            }
        })
        .x_label_formatter(&|x| number(*x))
        .x_desc("million lookups per second")
        .draw()
        .map_err(plot_error(path))?;
    let bar_height = 0.8 / series.len() as f64;
    let value_style =
        TextStyle::from(("sans-serif", 10).into_font()).pos(Pos::new(HPos::Left, VPos::Center));
    for m in measurements {
        let e = engines.iter().position(|x| *x == m.engine).unwrap_or(0) as f64;
        let s = series
            .iter()
            .position(|x| *x == series_name(m))
            .unwrap_or(0);
        let top = rows - e - 0.1 - s as f64 * bar_height;
        let bottom = top - bar_height * 0.9;
        let color = entries[s].1.color;
        chart
            .draw_series([Rectangle::new(
                [(0.0, bottom), (m.median_mlps, top)],
                color.filled(),
            )])
            .map_err(plot_error(path))?;
        chart
            .draw_series([EmptyElement::at((m.median_mlps, (top + bottom) / 2.0))
                + Text::new(number(m.median_mlps.round()), (3, 0), value_style.clone())])
            .map_err(plot_error(path))?;
    }
    draw_legend(&legend_area, path, &entries, true)?;
    root.present().map_err(plot_error(path))?;
    Ok(())
}

fn threads_lines(path: &Path, measurements: &[Measurement], thread_counts: &[usize]) -> Result<()> {
    let mut lines: Lines = Vec::new();
    for m in measurements.iter().filter(|m| m.engine != "ceiling") {
        let key = (m.engine.clone(), series_name(m));
        let point = (m.threads as f64, m.median_mlps);
        add_point(&mut lines, key, point);
    }
    let lines = styled_lines(lines);
    let y = LogAxis::fitted(
        lines
            .iter()
            .flat_map(|(_, points)| points.iter().map(|p| p.1)),
    );
    let first = *thread_counts.first().unwrap_or(&1) as f64;
    let last = *thread_counts.last().unwrap_or(&1) as f64;
    let texts: Vec<&str> = lines.iter().map(|((text, _), _)| text.as_str()).collect();
    let (root, area, legend_area) = canvas(path, (700, 520), &texts, lines.len())?;
    let mut chart = xy_chart(
        &area,
        path,
        "Aggregate throughput versus threads",
        (first - 0.3..last + 0.3, XTicks::Integer),
        y,
        ("threads", "million lookups per second (log scale)"),
    )?;
    draw_lines(&mut chart, &legend_area, path, lines)?;
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
fn burst_points(measurements: &[&Measurement]) -> Lines {
    let mut lines: Lines = Vec::new();
    for m in measurements {
        let Some(keys) = keys_per_call(m.mode) else {
            continue;
        };
        let key = (m.engine.clone(), m.pattern.clone());
        let point = ((keys as f64).log2(), m.median_mlps);
        add_point(&mut lines, key, point);
    }
    lines.retain(|(_, points)| points.len() > 1);
    lines
}

fn bursts_lines(path: &Path, measurements: &[&Measurement]) -> Result<()> {
    let lines = styled_lines(burst_points(measurements));
    let points = || lines.iter().flat_map(|(_, points)| points.iter());
    let y = linear_axis(points().map(|p| p.1));
    let x_max = points().map(|p| p.0).fold(0.0, f64::max);
    let texts: Vec<&str> = lines.iter().map(|((text, _), _)| text.as_str()).collect();
    let (root, area, legend_area) = canvas(path, (700, 520), &texts, lines.len())?;
    let mut chart = xy_chart(
        &area,
        path,
        "Throughput versus keys per call (key = 1, burstN = N)",
        (-0.3..x_max + 0.3, XTicks::PowerOfTwo),
        y,
        ("keys per call", "million lookups per second"),
    )?;
    draw_lines(&mut chart, &legend_area, path, lines)?;
    root.present().map_err(plot_error(path))?;
    Ok(())
}

fn dxr_versus_k(
    path: &Path,
    dxr: &[(Layout, &EngineFacts)],
    measurements: &[Measurement],
) -> Result<()> {
    let k_of = |layout: &Layout| layout.k_bits as f64;
    let k_min = dxr.iter().map(|(l, _)| k_of(l)).fold(f64::MAX, f64::min) - 0.3;
    let k_max = dxr.iter().map(|(l, _)| k_of(l)).fold(f64::MIN, f64::max) + 0.3;
    // Upper panel: RND throughput by K, one line per family and mode. One
    // thread count (the smallest) and DXR rows only.
    let min_threads = measurements.iter().map(|m| m.threads).min().unwrap_or(1);
    let mut throughput: Lines = Vec::new();
    for m in measurements
        .iter()
        .filter(|m| m.pattern.starts_with("rnd") && m.threads == min_threads)
    {
        let Some((layout, _)) = dxr.iter().find(|(_, f)| f.engine == m.engine) else {
            continue;
        };
        let key = (dxr_family(*layout), series_name(m));
        let point = (k_of(layout), m.median_mlps);
        add_point(&mut throughput, key, point);
    }
    throughput.sort_by(|a, b| a.0.cmp(&b.0));
    // Lower panel: footprint, one line per family.
    let mut footprint: Lines = Vec::new();
    for (layout, facts) in dxr {
        let key = (dxr_family(*layout), String::new());
        let point = (k_of(layout), facts.bytes_per_prefix);
        add_point(&mut footprint, key, point);
    }
    footprint.sort_by(|a, b| a.0.cmp(&b.0));
    let throughput = styled_lines(throughput);
    let footprint = styled_lines(footprint);
    let texts: Vec<&str> = throughput
        .iter()
        .chain(&footprint)
        .map(|((text, _), _)| text.as_str())
        .collect();
    let (root, area, legend_area) = canvas(path, (760, 760), &texts, 0)?;
    let (upper, lower) = area.split_vertically(380);
    let (upper_legend, lower_legend) = legend_area.split_vertically(380);
    let k_desc = "K (direct-table bits; D + X for D{D}X{X}R)";
    let y = linear_axis(throughput.iter().flat_map(|(_, p)| p.iter().map(|p| p.1)));
    let mut chart = xy_chart(
        &upper,
        path,
        "DXR: throughput versus K",
        (k_min..k_max, XTicks::Integer),
        y,
        (k_desc, "million lookups per second"),
    )?;
    draw_lines(&mut chart, &upper_legend, path, throughput)?;
    let y = LogAxis::fitted(footprint.iter().flat_map(|(_, p)| p.iter().map(|p| p.1)));
    let mut chart = xy_chart(
        &lower,
        path,
        "DXR: footprint versus K",
        (k_min..k_max, XTicks::Integer),
        y,
        (k_desc, "bytes per prefix (log scale)"),
    )?;
    draw_lines(&mut chart, &lower_legend, path, footprint)?;
    root.present().map_err(plot_error(path))?;
    Ok(())
}

/// The timeline of `fibkit replay`: reader throughput (top) and changes
/// published (bottom) per step, over the replay's seconds.
pub fn replay_timeline(path: &Path, report: &fibkit_bench::replay::ReplayReport) -> Result<()> {
    let steps = &report.timeline;
    let idle = report.idle_reader_mlps;
    let idle_text = format!("idle ({idle:.1})");
    let during = SeriesStyle::new(0, 0);
    let mut entries = vec![("during the replay".to_string(), during)];
    if idle > 0.0 {
        entries.push((
            idle_text,
            SeriesStyle {
                color: BLACK,
                ..SeriesStyle::new(13, 1)
            },
        ));
    }
    let texts: Vec<&str> = entries.iter().map(|(text, _)| text.as_str()).collect();
    let (root, area, legend_area) = canvas(path, (900, 600), &texts, entries.len())?;
    let (top, bottom) = area.split_vertically(300);
    let end = steps.last().map_or(1.0, |s| s.at_seconds) + steps.first().map_or(0.1, |_| 0.1);
    let width = if steps.len() > 1 {
        steps[1].at_seconds - steps[0].at_seconds
    } else {
        end
    };
    let max_mlps = steps.iter().map(|s| s.reader_mlps).fold(idle, f64::max);
    let mut chart = xy_chart(
        &top,
        path,
        &format!("{}: readers during the replay", report.engine),
        (0.0..end, XTicks::Number),
        0.0..(max_mlps * 1.15).max(1.0),
        ("seconds", "reader Mlookups/s"),
    )?;
    line_with_markers(
        &mut chart,
        path,
        steps
            .iter()
            .map(|s| (s.at_seconds + width / 2.0, s.reader_mlps))
            .collect(),
        during,
    )?;
    if let Some((_, idle_style)) = entries.get(1) {
        chart
            .draw_series(DashedLineSeries::new(
                vec![(0.0, idle), (end, idle)],
                8,
                4,
                idle_style.color.stroke_width(1),
            ))
            .map_err(plot_error(path))?;
    }
    draw_legend(&legend_area, path, &entries, false)?;
    let max_changes = steps.iter().map(|s| s.changes).max().unwrap_or(0) as f64;
    let mut chart = xy_chart(
        &bottom,
        path,
        "changes made visible per step",
        (0.0..end, XTicks::Number),
        0.0..(max_changes * 1.15).max(1.0),
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
    fn log_axis_ticks_at_one_two_five() {
        let axis = LogAxis::fitted([13.3, 1175.0].into_iter());
        use plotters::coord::ranged1d::{BoldPoints, LightPoints};
        let bold = axis.key_points(BoldPoints(100));
        assert_eq!(bold, [20.0, 50.0, 100.0, 200.0, 500.0, 1000.0]);
        // Too many for the hint: the powers of ten only.
        assert_eq!(axis.key_points(BoldPoints(3)), [100.0, 1000.0]);
        assert_eq!(axis.key_points(LightPoints::new(100, 100)).len(), 18);
        let (bottom, top) = (500, 0);
        assert_eq!(axis.map(&axis.0.start, (bottom, top)), bottom);
        assert_eq!(axis.map(&axis.0.end, (bottom, top)), top);
        let middle = axis.map(&(axis.0.start * axis.0.end).sqrt(), (bottom, top));
        assert!((middle - 250).abs() <= 1, "{middle}");
        assert_eq!(LogAxis::fitted([0.0].into_iter()).0, 0.1..1.0);
    }

    #[test]
    fn tick_labels() {
        assert_eq!(XTicks::Integer.label(2.0), "2");
        assert_eq!(XTicks::Integer.label(1.5), "");
        assert_eq!(XTicks::PowerOfTwo.label(5.0), "32");
        assert_eq!(XTicks::PowerOfTwo.label(4.5), "");
        assert_eq!(XTicks::Number.label(2.5), "2.5");
        assert_eq!(number(500.0), "500");
        assert_eq!(number(0.02), "0.02");
    }

    #[test]
    fn engines_keep_colour_and_marker_and_modes_differ_in_dash() {
        let lines = styled_lines(vec![
            (
                ("a".into(), "rnd plain".into()),
                vec![(2.0, 1.0), (1.0, 1.0)],
            ),
            (("b".into(), "rnd plain".into()), vec![(1.0, 1.0)]),
            (("a".into(), "rnd batch".into()), vec![(1.0, 1.0)]),
        ]);
        let texts: Vec<&str> = lines.iter().map(|((t, _), _)| t.as_str()).collect();
        assert_eq!(texts, ["a rnd plain", "a rnd batch", "b rnd plain"]);
        let styles: Vec<SeriesStyle> = lines.iter().map(|((_, s), _)| *s).collect();
        assert_eq!(styles[0].color, styles[1].color);
        assert_ne!(styles[0].color, styles[2].color);
        assert_ne!(styles[0].marker, styles[2].marker);
        assert_eq!((styles[0].dash, styles[1].dash), (None, Some(DASHES[0])));
        assert_eq!(lines[0].1, [(1.0, 1.0), (2.0, 1.0)]);
    }

    #[test]
    fn dxr_layouts_and_families_from_specs() {
        let layout = |d_bits, k_bits| Some(Layout::extended(d_bits, k_bits));
        assert_eq!(dxr_layout("dxr:k=20"), layout(0, 20));
        assert_eq!(dxr_layout("dxr:d=16,x=4"), layout(16, 20));
        assert_eq!(
            dxr_layout("dxr"),
            Some(fibkit::engines::dxr::DEFAULT_LAYOUT)
        );
        assert_eq!(dxr_layout("dir24-8"), None);
        assert_eq!(dxr_layout("dxr:k=99"), None);
        assert_eq!(dxr_family(Layout::single(18)), "D{K}R");
        assert_eq!(dxr_family(Layout::extended(14, 18)), "D14X{X}R");
    }
}
