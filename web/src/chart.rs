//! The memory chart (plotters, SVG): one stacked bar per phase of the training step, the
//! components of the most loaded GPU plus the fixed overheads, against the GPU's capacity.
//! The numbers are `calc_core`'s; this module only draws them.

use calc_core::report::saturating_sum;
use calc_core::units::GIB;
use calc_core::{COMPONENTS, Estimate};
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

/// Colour of each component (readable on light and dark backgrounds).
pub fn component_color(name: &str) -> RGBColor {
    match name {
        "weights" => RGBColor(66, 133, 244),
        "gradients" => RGBColor(234, 134, 0),
        "master_weights" => RGBColor(52, 168, 83),
        "optimizer_states" => RGBColor(171, 71, 188),
        "activations" => RGBColor(229, 57, 53),
        "logits" => RGBColor(255, 179, 0),
        "gathered_parameters" => RGBColor(0, 172, 193),
        "autocast_weight_copies" => RGBColor(124, 179, 66),
        "communication_buffers" => RGBColor(141, 110, 99),
        "optimizer_temporaries" => RGBColor(236, 64, 122),
        "forward_temporaries" => RGBColor(255, 112, 67),
        "backward_temporaries" => RGBColor(92, 107, 192),
        _ => RGBColor(158, 158, 158),
    }
}

/// CSS colour string of a component (for the table swatches).
pub fn css_color(name: &str) -> String {
    let RGBColor(r, g, b) = component_color(name);
    format!("rgb({r},{g},{b})")
}

fn gib(b: u64) -> f64 {
    b as f64 / GIB as f64
}

/// Below this width (CSS px) the charts use their narrow layout: legend under the plot,
/// labels over the bars, so that no text is drawn smaller than [`MIN_FONT`].
pub const NARROW_PX: u32 = 560;
/// The narrowest drawing: a container narrower than this scrolls sideways.
pub const MIN_WIDTH_PX: u32 = 240;
/// The widest drawing: a wider container leaves the rest empty.
pub const MAX_WIDTH_PX: u32 = 720;
/// The smallest text size any chart asks plotters for. Plotters' SVG backend writes
/// `font-size` = size / 1.24 (plotters-svg `svg.rs`), so 14 is 11.3 px; the page draws each
/// chart at its container's width, so SVG user units are CSS px and the text is rendered at
/// that size.
pub const MIN_FONT: u32 = 14;

/// The memory chart's height (px) for a drawing `width` px wide: the wide layout keeps the
/// legend in the right margin; the narrow one stacks it under the plot, two columns (one
/// under 320 px) of 18 px rows.
pub fn chart_height(e: &Estimate, width: u32) -> u32 {
    if width >= NARROW_PX {
        return 380;
    }
    let entries = legend_entries(e).len() + 1; // + the capacity line
    PLOT_H_NARROW
        + LEGEND_TOP_NARROW
        + (entries.div_ceil(legend_columns(width)) as u32) * LEGEND_ROW
}

const PLOT_H_NARROW: u32 = 270;
/// The narrow legend's top margin and row height (px).
const LEGEND_TOP_NARROW: u32 = 10;
const LEGEND_ROW: u32 = 18;

/// Columns of the narrow legend: two, one under 320 px.
fn legend_columns(width: u32) -> usize {
    if width >= 320 { 2 } else { 1 }
}

/// The components drawn: those non-zero in some phase, bottom of the stack first.
fn drawn_components(e: &Estimate) -> impl Iterator<Item = &'static str> + '_ {
    COMPONENTS
        .iter()
        .copied()
        .filter(|c| e.phases.iter().any(|p| p.components[*c] > 0))
}

/// The components drawn, then the overheads if any, with their colours, bottom of the
/// stack first.
fn legend_entries(e: &Estimate) -> Vec<(String, RGBAColor)> {
    let mut legend: Vec<(String, RGBAColor)> = drawn_components(e)
        .map(|c| (c.replace('_', " "), component_color(c).mix(1.0)))
        .collect();
    if e.overheads.values().any(|b| *b > 0) {
        legend.push(("overheads".into(), GREY.mix(0.6)));
    }
    legend
}

const GREY: RGBColor = RGBColor(158, 158, 158);
const RED: RGBColor = RGBColor(211, 47, 47);

/// Draws the chart of `e` into an SVG string `width` px wide ([`chart_height`] high).
pub fn render_svg(e: &Estimate, width: u32) -> String {
    let mut buf = String::new();
    {
        let backend = SVGBackend::with_string(&mut buf, (width, chart_height(e, width)));
        if let Err(err) = draw(backend, e) {
            return format!("<p class=\"chart-error\">chart: {err}</p>");
        }
    }
    // Text and axes in the page's text colour, so that the chart reads in dark mode too.
    buf.replace("#000000", "currentColor")
        .replace("#000", "currentColor")
}

fn draw<DB: DrawingBackend>(backend: DB, e: &Estimate) -> Result<(), String> {
    let root = backend.into_drawing_area();
    let (w, _) = root.dim_in_pixel();
    let narrow = w < NARROW_PX;
    let (plot, legend_area) = if narrow {
        let (a, b) = root.split_vertically(PLOT_H_NARROW);
        (a, Some(b))
    } else {
        (root.clone(), None)
    };
    // byte sums saturate as core's do (calc_core::report::saturating_sum)
    let overhead = saturating_sum(e.overheads.values().copied());
    let capacity = gib(e.gpu_memory_bytes);
    let tallest = e
        .phases
        .iter()
        .map(|p| gib(p.allocated_bytes.saturating_add(overhead)))
        .fold(0.0, f64::max);
    let ymax = (capacity.max(tallest) * 1.12).max(1.0);
    let n = e.phases.len() as f64;
    // narrow: each word of a phase's label on a line of its own
    let label_lines = if narrow {
        e.phases
            .iter()
            .map(|p| p.phase.as_str().split('_').count() + usize::from(p.phase == e.peak_phase))
            .max()
            .unwrap_or(1) as u32
    } else {
        1
    };
    let mut chart = ChartBuilder::on(&plot)
        .margin(if narrow { 8 } else { 12 })
        .margin_right(if narrow { 8 } else { 190 })
        .x_label_area_size(10 + 16 * label_lines)
        .y_label_area_size(if narrow { 46 } else { 56 })
        .build_cartesian_2d(0f64..n, 0f64..ymax)
        .map_err(|e| e.to_string())?;
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(0)
        .y_labels(if narrow { 6 } else { 10 })
        .y_desc("GiB")
        .y_label_formatter(&|v| format!("{v:.0}"))
        .light_line_style(TRANSPARENT)
        .bold_line_style(RGBAColor(128, 128, 128, 0.3))
        .label_style(("sans-serif", MIN_FONT).into_font().color(&BLACK))
        .axis_desc_style(("sans-serif", 15).into_font().color(&BLACK))
        .draw()
        .map_err(|e| e.to_string())?;

    for name in drawn_components(e) {
        let color = component_color(name);
        let bars: Vec<Rectangle<(f64, f64)>> = e
            .phases
            .iter()
            .enumerate()
            .filter_map(|(i, p)| {
                let below = saturating_sum(
                    COMPONENTS
                        .iter()
                        .take_while(|c| **c != name)
                        .map(|c| p.components[*c]),
                );
                let v = p.components[name];
                (v > 0).then(|| {
                    Rectangle::new(
                        [
                            (i as f64 + 0.18, gib(below)),
                            (i as f64 + 0.82, gib(below.saturating_add(v))),
                        ],
                        color.filled(),
                    )
                })
            })
            .collect();
        chart.draw_series(bars).map_err(|e| e.to_string())?;
    }
    // fixed overheads on top of each bar
    if overhead > 0 {
        let bars: Vec<Rectangle<(f64, f64)>> = e
            .phases
            .iter()
            .enumerate()
            .map(|(i, p)| {
                Rectangle::new(
                    [
                        (i as f64 + 0.18, gib(p.allocated_bytes)),
                        (
                            i as f64 + 0.82,
                            gib(p.allocated_bytes.saturating_add(overhead)),
                        ),
                    ],
                    GREY.mix(0.6).filled(),
                )
            })
            .collect();
        chart.draw_series(bars).map_err(|e| e.to_string())?;
    }
    // the GPU's capacity
    chart
        .draw_series(std::iter::once(PathElement::new(
            vec![(0.0, capacity), (n, capacity)],
            RED.stroke_width(2),
        )))
        .map_err(|e| e.to_string())?;
    // the legend, top to bottom as the stack reads bottom to top: in the right margin, or
    // under the plot in columns
    let text = TextStyle::from(("sans-serif", MIN_FONT).into_font())
        .color(&BLACK)
        .pos(Pos::new(HPos::Left, VPos::Center));
    let mut entries = vec![(format!("GPU capacity {capacity:.1} GiB"), None)];
    entries.extend(
        legend_entries(e)
            .into_iter()
            .rev()
            .map(|(l, c)| (l, Some(c))),
    );
    let (area, x0, y0, cols) = match &legend_area {
        Some(a) => (a, 10, LEGEND_TOP_NARROW as i32, legend_columns(w)),
        None => (&root, w as i32 - 178, LEGEND_ROW as i32, 1),
    };
    let rows = entries.len().div_ceil(cols);
    let col_w = (w as i32 - 2 * x0) / cols as i32;
    for (k, (label, color)) in entries.into_iter().enumerate() {
        let (x, y) = (
            x0 + col_w * (k / rows) as i32,
            y0 + LEGEND_ROW as i32 * (k % rows) as i32,
        );
        match color {
            Some(c) => area.draw(&Rectangle::new([(x, y - 5), (x + 12, y + 5)], c.filled())),
            None => area.draw(&PathElement::new(
                vec![(x, y), (x + 12, y)],
                RED.stroke_width(2),
            )),
        }
        .map_err(|e| e.to_string())?;
        area.draw(&Text::new(label, (x + 18, y), text.clone()))
            .map_err(|e| e.to_string())?;
    }
    // phase names under the bars, peak marked
    let style = TextStyle::from(("sans-serif", 15).into_font())
        .color(&BLACK)
        .pos(Pos::new(HPos::Center, VPos::Top));
    for (i, p) in e.phases.iter().enumerate() {
        let (x, y) = chart.backend_coord(&(i as f64 + 0.5, 0.0));
        let mut words: Vec<String> = p.phase.as_str().split('_').map(str::to_string).collect();
        if p.phase == e.peak_phase {
            words.push("(peak)".into());
        }
        let lines = if narrow { words } else { vec![words.join(" ")] };
        for (k, line) in lines.into_iter().enumerate() {
            plot.draw(&Text::new(line, (x, y + 6 + 16 * k as i32), style.clone()))
                .map_err(|e| e.to_string())?;
        }
    }
    root.present().map_err(|e| e.to_string())?;
    Ok(())
}

/// A line of total memory against `x` (micro-batch or context length) with the GPU's
/// capacity; `points` are (x, total bytes, capacity bytes). Drawn `width` px wide, 260 high.
pub fn render_sweep_svg(points: &[(u64, u64, u64)], x_label: &str, width: u32) -> String {
    if points.is_empty() {
        return String::new();
    }
    let mut buf = String::new();
    {
        let backend = SVGBackend::with_string(&mut buf, (width, 260));
        if let Err(err) = draw_sweep(backend, points, x_label) {
            return format!("<p class=\"chart-error\">chart: {err}</p>");
        }
    }
    buf.replace("#000000", "currentColor")
        .replace("#000", "currentColor")
}

fn draw_sweep<DB: DrawingBackend>(
    backend: DB,
    points: &[(u64, u64, u64)],
    x_label: &str,
) -> Result<(), String> {
    let root = backend.into_drawing_area();
    let narrow = root.dim_in_pixel().0 < NARROW_PX;
    let capacity = gib(points[0].2);
    let ymax = points.iter().map(|p| gib(p.1)).fold(capacity, f64::max) * 1.1;
    let (x0, x1) = (points[0].0 as f64, points[points.len() - 1].0 as f64);
    let log = x1 / x0.max(1.0) > 64.0;
    let fx = |x: f64| if log { x.log2() } else { x };
    let mut chart = ChartBuilder::on(&root)
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(if narrow { 46 } else { 56 })
        .build_cartesian_2d(fx(x0)..fx(x1).max(fx(x0) + 1.0), 0f64..ymax)
        .map_err(|e| e.to_string())?;
    chart
        .configure_mesh()
        .x_labels(if narrow { 5 } else { 10 })
        .y_labels(if narrow { 6 } else { 10 })
        .light_line_style(TRANSPARENT)
        .bold_line_style(RGBAColor(128, 128, 128, 0.3))
        .x_desc(x_label)
        .y_desc("GiB per GPU")
        .x_label_formatter(&|v| {
            if log {
                format!("{}", 2f64.powf(*v).round() as u64)
            } else {
                format!("{v:.0}")
            }
        })
        .y_label_formatter(&|v| format!("{v:.0}"))
        .label_style(("sans-serif", MIN_FONT).into_font().color(&BLACK))
        .axis_desc_style(("sans-serif", 15).into_font().color(&BLACK))
        .draw()
        .map_err(|e| e.to_string())?;
    let blue = RGBColor(66, 133, 244);
    let red = RGBColor(211, 47, 47);
    chart
        .draw_series(LineSeries::new(
            points.iter().map(|p| (fx(p.0 as f64), gib(p.1))),
            blue.stroke_width(2),
        ))
        .map_err(|e| e.to_string())?;
    chart
        .draw_series(
            points
                .iter()
                .map(|p| Circle::new((fx(p.0 as f64), gib(p.1)), 3, blue.filled())),
        )
        .map_err(|e| e.to_string())?;
    chart
        .draw_series(std::iter::once(PathElement::new(
            vec![(fx(x0), capacity), (fx(x1).max(fx(x0) + 1.0), capacity)],
            red.stroke_width(2),
        )))
        .map_err(|e| e.to_string())?;
    root.present().map_err(|e| e.to_string())?;
    Ok(())
}

/// "Which GPUs fit": per GPU preset, a horizontal bar of the configuration's total memory
/// (green where it fits, red where not) over the GPU's capacity (grey), drawn `width` px
/// wide ([`fits_height`] high); narrow, each GPU's name is written over its bar.
pub fn render_fits_svg(fits: &[calc_core::export::GpuFit], width: u32) -> String {
    if fits.is_empty() {
        return String::new();
    }
    let mut buf = String::new();
    {
        let backend = SVGBackend::with_string(&mut buf, (width, fits_height(fits.len(), width)));
        if let Err(err) = draw_fits(backend, fits) {
            return format!("<p class=\"chart-error\">chart: {err}</p>");
        }
    }
    buf.replace("#000000", "currentColor")
        .replace("#000", "currentColor")
}

/// The which-GPUs-fit chart's height (px) for `n` GPUs at `width` px: 340 wide; narrow,
/// 40 px per GPU (its name over its bar) and the axis.
pub fn fits_height(n: usize, width: u32) -> u32 {
    if width >= NARROW_PX {
        340
    } else {
        40 * n as u32 + 70
    }
}

fn draw_fits<DB: DrawingBackend>(
    backend: DB,
    fits: &[calc_core::export::GpuFit],
) -> Result<(), String> {
    let root = backend.into_drawing_area();
    let narrow = root.dim_in_pixel().0 < NARROW_PX;
    let n = fits.len() as f64;
    let xmax = fits
        .iter()
        .map(|f| gib(f.total_bytes.max(f.gpu_memory_bytes)))
        .fold(1.0, f64::max)
        * 1.05;
    let mut chart = ChartBuilder::on(&root)
        .margin(12)
        .margin_left(8)
        .margin_right(if narrow { 16 } else { 12 })
        .x_label_area_size(if narrow { 54 } else { 36 })
        .y_label_area_size(if narrow { 0 } else { 250 })
        .build_cartesian_2d(0f64..xmax, 0f64..n)
        .map_err(|e| e.to_string())?;
    chart
        .configure_mesh()
        .disable_y_mesh()
        .y_labels(0)
        .x_labels(if narrow { 5 } else { 10 })
        .x_desc(if narrow {
            "GiB (grey: GPU capacity)"
        } else {
            "GiB (total incl. overheads; grey: GPU capacity)"
        })
        .x_label_formatter(&|v| format!("{v:.0}"))
        .light_line_style(TRANSPARENT)
        .bold_line_style(RGBAColor(128, 128, 128, 0.3))
        .label_style(("sans-serif", 15).into_font().color(&BLACK))
        .axis_desc_style(("sans-serif", 15).into_font().color(&BLACK))
        .draw()
        .map_err(|e| e.to_string())?;
    let grey = RGBColor(158, 158, 158).mix(0.45);
    let (green, red) = (RGBColor(46, 160, 67), RGBColor(211, 47, 47));
    // top to bottom in the order given (smallest capacity first); narrow, the bars sit in
    // the lower part of each row, under the name
    let y = |i: usize| n - 1.0 - i as f64;
    let (lo, hi) = if narrow { (0.05, 0.55) } else { (0.12, 0.88) };
    let (blo, bhi) = if narrow { (0.13, 0.47) } else { (0.3, 0.7) };
    chart
        .draw_series(fits.iter().enumerate().map(|(i, f)| {
            Rectangle::new(
                [(0.0, y(i) + lo), (gib(f.gpu_memory_bytes), y(i) + hi)],
                grey.filled(),
            )
        }))
        .map_err(|e| e.to_string())?;
    chart
        .draw_series(fits.iter().enumerate().map(|(i, f)| {
            let c = if f.fits { green } else { red };
            Rectangle::new(
                [(0.0, y(i) + blo), (gib(f.total_bytes), y(i) + bhi)],
                c.filled(),
            )
        }))
        .map_err(|e| e.to_string())?;
    let style = TextStyle::from(("sans-serif", 15).into_font())
        .color(&BLACK)
        .pos(if narrow {
            Pos::new(HPos::Left, VPos::Center)
        } else {
            Pos::new(HPos::Right, VPos::Center)
        });
    for (i, f) in fits.iter().enumerate() {
        let label = format!("{} {}", if f.fits { "✓" } else { "✗" }, f.name);
        let at = if narrow {
            let (x, yy) = chart.backend_coord(&(0.0, y(i) + 0.77));
            (x + 2, yy)
        } else {
            let (x, yy) = chart.backend_coord(&(0.0, y(i) + 0.5));
            (x - 6, yy)
        };
        root.draw(&Text::new(label, at, style.clone()))
            .map_err(|e| e.to_string())?;
    }
    root.present().map_err(|e| e.to_string())?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every `font-size` the SVG sets, in SVG units.
    fn font_sizes(svg: &str) -> Vec<f64> {
        svg.split("font-size=\"")
            .skip(1)
            .map(|s| s[..s.find('"').unwrap()].parse().unwrap())
            .collect()
    }

    #[test]
    fn narrow_charts_keep_text_at_11_px_and_their_width() {
        let c = calc_core::Config::from_value(serde_json::json!(
            {"model": {"preset": "llama-3.1-8b"}, "hardware": {"num_gpus": 8}}
        ))
        .unwrap();
        let e = calc_core::estimate(&c).unwrap();
        let fits = calc_core::export::gpu_fits(&c).unwrap();
        for w in [300, 337, 432, 720] {
            let svgs = [
                render_svg(&e, w),
                render_fits_svg(&fits, w),
                render_sweep_svg(&[(1, 1 << 30, 80 << 30), (8, 9 << 30, 80 << 30)], "x", w),
            ];
            for svg in svgs {
                // drawn at the width asked (SVG units = CSS px where the page shows it)
                assert!(
                    svg.starts_with(&format!("<svg width=\"{w}\"")),
                    "{}",
                    &svg[..60]
                );
                let sizes = font_sizes(&svg);
                assert!(!sizes.is_empty());
                // 14 / 1.24 = 11.29 px, plotters' SVG font-size
                let min = sizes.iter().copied().fold(f64::INFINITY, f64::min);
                assert!(min >= 11.0, "width {w}: smallest text {min}");
            }
        }
        // narrow: the legend under the plot (the capacity line and each component drawn, in
        // 2 columns of 18 px rows); wide: 380 px whatever the legend
        let entries = legend_entries(&e).len() as u32 + 1;
        assert_eq!(chart_height(&e, 337), 270 + 10 + entries.div_ceil(2) * 18);
        assert_eq!(chart_height(&e, 720), 380);
    }
}
