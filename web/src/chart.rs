//! The memory chart (plotters, SVG): one stacked bar per phase of the training step, the
//! components of the most loaded GPU plus the fixed overheads, against the GPU's capacity.
//! The numbers are `calc_core`'s; this module only draws them.

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

/// Draws the chart of `e` into an SVG string of `size` pixels.
pub fn render_svg(e: &Estimate, size: (u32, u32)) -> String {
    let mut buf = String::new();
    {
        let backend = SVGBackend::with_string(&mut buf, size);
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
    let overhead: u64 = e.overheads.values().sum();
    let capacity = gib(e.gpu_memory_bytes);
    let tallest = e
        .phases
        .iter()
        .map(|p| gib(p.allocated_bytes + overhead))
        .fold(0.0, f64::max);
    let ymax = (capacity.max(tallest) * 1.12).max(1.0);
    let n = e.phases.len() as f64;
    let mut chart = ChartBuilder::on(&root)
        .margin(12)
        .margin_right(190)
        .x_label_area_size(28)
        .y_label_area_size(56)
        .build_cartesian_2d(0f64..n, 0f64..ymax)
        .map_err(|e| e.to_string())?;
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(0)
        .y_desc("GiB")
        .y_label_formatter(&|v| format!("{v:.0}"))
        .light_line_style(TRANSPARENT)
        .bold_line_style(RGBAColor(128, 128, 128, 0.3))
        .label_style(("sans-serif", 13).into_font().color(&BLACK))
        .axis_desc_style(("sans-serif", 13).into_font().color(&BLACK))
        .draw()
        .map_err(|e| e.to_string())?;

    let mut legend: Vec<(String, RGBAColor)> = Vec::new();
    let used: Vec<&str> = COMPONENTS
        .iter()
        .copied()
        .filter(|c| e.phases.iter().any(|p| p.components[*c] > 0))
        .collect();
    for name in &used {
        let color = component_color(name);
        let bars: Vec<Rectangle<(f64, f64)>> = e
            .phases
            .iter()
            .enumerate()
            .filter_map(|(i, p)| {
                let below: u64 = COMPONENTS
                    .iter()
                    .take_while(|c| *c != name)
                    .map(|c| p.components[*c])
                    .sum();
                let v = p.components[*name];
                (v > 0).then(|| {
                    Rectangle::new(
                        [
                            (i as f64 + 0.18, gib(below)),
                            (i as f64 + 0.82, gib(below + v)),
                        ],
                        color.filled(),
                    )
                })
            })
            .collect();
        chart.draw_series(bars).map_err(|e| e.to_string())?;
        legend.push((name.replace('_', " "), color.mix(1.0)));
    }
    // fixed overheads on top of each bar
    let grey = RGBColor(158, 158, 158);
    if overhead > 0 {
        let bars: Vec<Rectangle<(f64, f64)>> = e
            .phases
            .iter()
            .enumerate()
            .map(|(i, p)| {
                Rectangle::new(
                    [
                        (i as f64 + 0.18, gib(p.allocated_bytes)),
                        (i as f64 + 0.82, gib(p.allocated_bytes + overhead)),
                    ],
                    grey.mix(0.6).filled(),
                )
            })
            .collect();
        chart.draw_series(bars).map_err(|e| e.to_string())?;
        legend.push(("overheads".into(), grey.mix(0.6)));
    }
    // the GPU's capacity
    let red = RGBColor(211, 47, 47);
    chart
        .draw_series(std::iter::once(PathElement::new(
            vec![(0.0, capacity), (n, capacity)],
            red.stroke_width(2),
        )))
        .map_err(|e| e.to_string())?;
    // legend in the right margin, top to bottom as the stack reads bottom to top
    let (w, _) = root.dim_in_pixel();
    let x0 = w as i32 - 178;
    let text = TextStyle::from(("sans-serif", 12).into_font())
        .color(&BLACK)
        .pos(Pos::new(HPos::Left, VPos::Center));
    let gpu_label = format!("GPU capacity {capacity:.1} GiB");
    root.draw(&PathElement::new(
        vec![(x0, 18), (x0 + 12, 18)],
        red.stroke_width(2),
    ))
    .map_err(|e| e.to_string())?;
    root.draw(&Text::new(gpu_label, (x0 + 18, 18), text.clone()))
        .map_err(|e| e.to_string())?;
    for (k, (label, color)) in legend.iter().rev().enumerate() {
        let y = 38 + 18 * k as i32;
        root.draw(&Rectangle::new(
            [(x0, y - 5), (x0 + 12, y + 5)],
            color.filled(),
        ))
        .map_err(|e| e.to_string())?;
        root.draw(&Text::new(label.clone(), (x0 + 18, y), text.clone()))
            .map_err(|e| e.to_string())?;
    }
    // phase names under the bars, peak marked
    let style = TextStyle::from(("sans-serif", 13).into_font())
        .color(&BLACK)
        .pos(Pos::new(HPos::Center, VPos::Top));
    for (i, p) in e.phases.iter().enumerate() {
        let (x, y) = chart.backend_coord(&(i as f64 + 0.5, 0.0));
        let mut label = p.phase.as_str().replace('_', " ");
        if p.phase == e.peak_phase {
            label.push_str(" (peak)");
        }
        root.draw(&Text::new(label, (x, y + 6), style.clone()))
            .map_err(|e| e.to_string())?;
    }
    root.present().map_err(|e| e.to_string())?;
    Ok(())
}

/// A line of total memory against `x` (micro-batch or context length) with the GPU's
/// capacity; `points` are (x, total bytes, capacity bytes).
pub fn render_sweep_svg(points: &[(u64, u64, u64)], x_label: &str, size: (u32, u32)) -> String {
    if points.is_empty() {
        return String::new();
    }
    let mut buf = String::new();
    {
        let backend = SVGBackend::with_string(&mut buf, size);
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
    let capacity = gib(points[0].2);
    let ymax = points.iter().map(|p| gib(p.1)).fold(capacity, f64::max) * 1.1;
    let (x0, x1) = (points[0].0 as f64, points[points.len() - 1].0 as f64);
    let log = x1 / x0.max(1.0) > 64.0;
    let fx = |x: f64| if log { x.log2() } else { x };
    let mut chart = ChartBuilder::on(&root)
        .margin(12)
        .x_label_area_size(36)
        .y_label_area_size(56)
        .build_cartesian_2d(fx(x0)..fx(x1).max(fx(x0) + 1.0), 0f64..ymax)
        .map_err(|e| e.to_string())?;
    chart
        .configure_mesh()
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
        .label_style(("sans-serif", 12).into_font().color(&BLACK))
        .axis_desc_style(("sans-serif", 13).into_font().color(&BLACK))
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
/// (green where it fits, red where not) over the GPU's capacity (grey).
pub fn render_fits_svg(fits: &[calc_core::export::GpuFit], size: (u32, u32)) -> String {
    if fits.is_empty() {
        return String::new();
    }
    let mut buf = String::new();
    {
        let backend = SVGBackend::with_string(&mut buf, size);
        if let Err(err) = draw_fits(backend, fits) {
            return format!("<p class=\"chart-error\">chart: {err}</p>");
        }
    }
    buf.replace("#000000", "currentColor")
        .replace("#000", "currentColor")
}

fn draw_fits<DB: DrawingBackend>(
    backend: DB,
    fits: &[calc_core::export::GpuFit],
) -> Result<(), String> {
    let root = backend.into_drawing_area();
    let n = fits.len() as f64;
    let xmax = fits
        .iter()
        .map(|f| gib(f.total_bytes.max(f.gpu_memory_bytes)))
        .fold(1.0, f64::max)
        * 1.05;
    let mut chart = ChartBuilder::on(&root)
        .margin(12)
        .margin_left(8)
        .x_label_area_size(36)
        .y_label_area_size(250)
        .build_cartesian_2d(0f64..xmax, 0f64..n)
        .map_err(|e| e.to_string())?;
    chart
        .configure_mesh()
        .disable_y_mesh()
        .y_labels(0)
        .x_desc("GiB (total incl. overheads; grey: GPU capacity)")
        .x_label_formatter(&|v| format!("{v:.0}"))
        .light_line_style(TRANSPARENT)
        .bold_line_style(RGBAColor(128, 128, 128, 0.3))
        .label_style(("sans-serif", 15).into_font().color(&BLACK))
        .axis_desc_style(("sans-serif", 15).into_font().color(&BLACK))
        .draw()
        .map_err(|e| e.to_string())?;
    let grey = RGBColor(158, 158, 158).mix(0.45);
    let (green, red) = (RGBColor(46, 160, 67), RGBColor(211, 47, 47));
    // top to bottom in the order given (smallest capacity first)
    let y = |i: usize| n - 1.0 - i as f64;
    chart
        .draw_series(fits.iter().enumerate().map(|(i, f)| {
            Rectangle::new(
                [(0.0, y(i) + 0.12), (gib(f.gpu_memory_bytes), y(i) + 0.88)],
                grey.filled(),
            )
        }))
        .map_err(|e| e.to_string())?;
    chart
        .draw_series(fits.iter().enumerate().map(|(i, f)| {
            let c = if f.fits { green } else { red };
            Rectangle::new(
                [(0.0, y(i) + 0.3), (gib(f.total_bytes), y(i) + 0.7)],
                c.filled(),
            )
        }))
        .map_err(|e| e.to_string())?;
    let style = TextStyle::from(("sans-serif", 15).into_font())
        .color(&BLACK)
        .pos(Pos::new(HPos::Right, VPos::Center));
    for (i, f) in fits.iter().enumerate() {
        let (x, yy) = chart.backend_coord(&(0.0, y(i) + 0.5));
        let label = format!("{} {}", if f.fits { "✓" } else { "✗" }, f.name);
        root.draw(&Text::new(label, (x - 6, yy), style.clone()))
            .map_err(|e| e.to_string())?;
    }
    root.present().map_err(|e| e.to_string())?;
    Ok(())
}
