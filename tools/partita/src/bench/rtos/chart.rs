//! The suite's charts: R_P per test as bars (Ker-ONE's Figure 13) and the
//! scheduler probe's switch cost over priority as lines (the seL4 study's).

use super::report::Report;
use super::score::ker_one;
use super::{Queue, Setup, TARGET_RP, TARGET_RP_INTERRUPT};
use crate::bench::Pass;
use crate::chart::{self, palette, Curve, Key, LineChart, Mark, Strip};
use anyhow::Result;
use plotters::prelude::*;

/// Red is the interrupt tests' target line.
const SERIES_COLORS: [RGBColor; 6] =
    [palette::BLUE, palette::ORANGE, palette::GREEN, palette::PURPLE, palette::BROWN, palette::CYAN];
const KER_ONE_COLOR: RGBColor = RGBColor(170, 170, 170);

/// Above this R_P the bars are cut and labelled: wall-clock noise can give
/// a few hundred percent, which would flatten the interesting part near 100.
const BAR_CAP: f64 = 130.0;
const TARGET_COLORS: [RGBColor; 2] = [RGBColor(0, 0, 0), palette::RED];

/// Ker-ONE's Figure 13, for Partita: R_P per test, one bar per virtualized
/// setup and pass, Ker-ONE's own beside them, and the two targets as lines.
pub fn bar_svg(report: &Report) -> Result<String> {
    let tests = report.tests();
    let slots = tests.len().max(1);
    let mut series: Vec<(String, RGBColor, Vec<Option<f64>>)> = Vec::new();
    for &pass in &report.passes {
        for setup in report.setups(pass).into_iter().skip(1) {
            let values: Vec<Option<f64>> =
                tests.iter().map(|t| report.score(pass, setup, t).and_then(|s| s.rp)).collect();
            if values.iter().any(Option::is_some) {
                let color = SERIES_COLORS[series.len() % SERIES_COLORS.len()];
                series.push((format!("{} {}", pass.label(), setup.name()), color, values));
            }
        }
    }
    series.push(("Ker-ONE (Table 3)".to_string(), KER_ONE_COLOR, tests.iter().map(|t| ker_one(t)).collect()));
    let values = series.iter().flat_map(|(_, _, v)| v.iter().flatten().copied());
    let (low, high) = values.fold((TARGET_RP_INTERRUPT, 100.0), |(lo, hi): (f64, f64), v| (lo.min(v), hi.max(v)));
    let (bottom, top) = ((low - 5.0).max(0.0).floor(), (high + 2.0).min(BAR_CAP));
    let width = (200 + 130 * slots) as u32;
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (width, 640)).into_drawing_area();
        root.fill(&WHITE).map_err(chart::error)?;
        let (chart_area, legend_area) = root.split_vertically(580);
        let labels = tests.clone();
        let mut chart = ChartBuilder::on(&chart_area)
            .caption(format!("R_P = S_vm / S_native per test ({})", report.stem()), ("sans-serif", 22))
            .margin(15)
            .x_label_area_size(40)
            .y_label_area_size(60)
            .build_cartesian_2d(0.0..slots as f64, bottom..top)
            .map_err(chart::error)?;
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_labels(slots * 2 + 1)
            .x_label_formatter(&|x| {
                let index = x.floor() as usize;
                if (x - x.floor() - 0.5).abs() < 0.01 {
                    labels.get(index).cloned().unwrap_or_default()
                } else {
                    String::new()
                }
            })
            .y_desc("R_P (%)")
            .y_label_formatter(&|y| format!("{y:.0}"))
            .draw()
            .map_err(chart::error)?;
        let width = 0.8 / series.len() as f64;
        for (index, (_, color, values)) in series.iter().enumerate() {
            for (test, value) in values.iter().enumerate() {
                let Some(value) = *value else { continue };
                let x0 = test as f64 + 0.1 + index as f64 * width;
                let bar = Rectangle::new([(x0, bottom), (x0 + width * 0.9, value.min(top))], color.filled());
                chart.draw_series(std::iter::once(bar)).map_err(chart::error)?;
                if value > top {
                    let label = Text::new(format!("{value:.0}"), (x0, top), ("sans-serif", 11));
                    chart.draw_series(std::iter::once(label)).map_err(chart::error)?;
                }
            }
        }
        for (target, color) in [TARGET_RP, TARGET_RP_INTERRUPT].into_iter().zip(TARGET_COLORS) {
            let line = vec![(0.0, target), (slots as f64, target)];
            chart.draw_series(std::iter::once(PathElement::new(line, color.stroke_width(1)))).map_err(chart::error)?;
        }
        let mut keys: Vec<Key> = series
            .iter()
            .map(|(name, color, _)| Key { name: name.clone(), color: *color, mark: Mark::Square })
            .collect();
        let targets = [format!("target {TARGET_RP} %"), format!("target {TARGET_RP_INTERRUPT} % (interrupt tests)")];
        for (name, color) in targets.into_iter().zip(TARGET_COLORS) {
            keys.push(Key { name, color, mark: Mark::Dash });
        }
        chart::legend(&legend_area, &keys, Strip { left: 80, font: 15, char_width: 8 })?;
        root.present().map_err(chart::error)?;
    }
    Ok(svg)
}

/// The seL4 study's curve: switch cost over priority for both queues,
/// natively and alone under Partita, from the `-icount` pass if there is one.
pub fn curve_svg(report: &Report) -> Result<String> {
    let pass = report.passes.iter().rev().copied().find(|p| report.curve.iter().any(|c| c.pass == *p));
    let pass = pass.unwrap_or(Pass::WALL);
    let mut curves: Vec<Curve> = Vec::new();
    for (queue, setup, color) in [
        (Queue::Bitmap, Setup::Native, palette::BLUE),
        (Queue::Bitmap, Setup::Alone, palette::CYAN),
        (Queue::Linear, Setup::Native, palette::RED),
        (Queue::Linear, Setup::Alone, palette::ORANGE),
    ] {
        let points: Vec<(f64, f64)> = report
            .curve
            .iter()
            .filter(|p| p.pass == pass && p.queue == queue && p.setup == setup)
            .map(|p| (f64::from(p.priority), p.ticks))
            .collect();
        // Native underneath and wider, so that an equal virtualized curve leaves it visible.
        let width = if setup == Setup::Native { 5 } else { 2 };
        curves.push(Curve { name: format!("{} {}", queue.name(), setup.name()), color, points, width });
    }
    let all = curves.iter().flat_map(|c| c.points.iter());
    let right = all.clone().map(|p| p.0).fold(31.0, f64::max);
    let top = all.map(|p| p.1).fold(1.0, f64::max) * 1.1;
    chart::line_chart(&LineChart {
        caption: format!("RTOS switch cost vs priority ({})", pass.label()),
        size: (1000, 600),
        x: 0.0..right,
        y: 0.0..top,
        x_desc: "priority of the task switched to (0 = most urgent)".to_string(),
        y_desc: "counter ticks per switch".to_string(),
        y_label_area: 70,
        key_at: SeriesLabelPosition::UpperLeft,
        dot: 3,
        curves,
    })
}
