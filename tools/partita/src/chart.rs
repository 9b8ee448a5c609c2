//! SVG charts for `partita trace` and the benchmarks' reports: the pieces
//! they share, so that every chart is drawn, labelled and keyed alike.
//!
//! The `line_series` feature of plotters is off (it would pull in fonts
//! and bitmap code the SVG backend does not need), so lines are paths.

use anyhow::Result;
use plotters::coord::types::RangedCoordf64;
use plotters::coord::Shift;
use plotters::prelude::*;
use std::ops::Range;

/// The colors every chart draws from (matplotlib's "tab10"), by name, so
/// that a partition, a setup or a queue looks alike across charts.
pub mod palette {
    use plotters::style::RGBColor;

    pub const BLUE: RGBColor = RGBColor(31, 119, 180);
    pub const ORANGE: RGBColor = RGBColor(255, 127, 14);
    pub const GREEN: RGBColor = RGBColor(44, 160, 44);
    pub const RED: RGBColor = RGBColor(214, 39, 40);
    pub const PURPLE: RGBColor = RGBColor(148, 103, 189);
    pub const BROWN: RGBColor = RGBColor(140, 86, 75);
    pub const PINK: RGBColor = RGBColor(227, 119, 194);
    pub const GRAY: RGBColor = RGBColor(127, 127, 127);
    pub const CYAN: RGBColor = RGBColor(23, 190, 207);
}

/// What plotters reports, as an error of ours.
pub fn error(error: impl std::fmt::Display) -> anyhow::Error {
    anyhow::anyhow!("drawing failed: {error}")
}

/// How an entry of a [`legend`] is marked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mark {
    /// A filled square: a bar or area series.
    Square,
    /// A short thick dash: a reference line.
    Dash,
}

/// One entry of a legend strip.
#[derive(Clone, Debug)]
pub struct Key {
    pub name: String,
    pub color: RGBColor,
    pub mark: Mark,
}

/// Where a legend strip starts and how wide its text runs.
#[derive(Clone, Copy, Debug)]
pub struct Strip {
    pub left: i32,
    pub font: u32,
    /// Pixels a character of a name takes, to place the next entry.
    pub char_width: i32,
}

/// A strip of marks and names under a chart, left to right.
pub fn legend<DB: DrawingBackend>(area: &DrawingArea<DB, Shift>, keys: &[Key], strip: Strip) -> Result<()> {
    let mut x = strip.left;
    for key in keys {
        let mark = match key.mark {
            Mark::Square => Rectangle::new([(x, 12), (x + 14, 26)], key.color.filled()),
            Mark::Dash => Rectangle::new([(x, 18), (x + 14, 20)], key.color.filled()),
        };
        area.draw(&mark).map_err(error)?;
        area.draw(&Text::new(key.name.clone(), (x + 20, 12), ("sans-serif", strip.font))).map_err(error)?;
        x += 40 + strip.char_width * key.name.len() as i32;
    }
    Ok(())
}

/// A named line of points.
#[derive(Clone, Debug)]
pub struct Curve {
    pub name: String,
    pub color: RGBColor,
    pub points: Vec<(f64, f64)>,
    pub width: u32,
}

/// A chart of [`Curve`]s over numeric axes, keyed in a corner.
#[derive(Clone, Debug)]
pub struct LineChart {
    pub caption: String,
    pub size: (u32, u32),
    pub x: Range<f64>,
    pub y: Range<f64>,
    pub x_desc: String,
    pub y_desc: String,
    /// Room for the y labels, which grow with the numbers.
    pub y_label_area: u32,
    pub key_at: SeriesLabelPosition,
    /// Radius of the dot on every point.
    pub dot: u32,
    /// Drawn in order: a later curve covers an earlier one.
    pub curves: Vec<Curve>,
}

type Plane<'a, 'b> = ChartContext<'a, SVGBackend<'b>, Cartesian2d<RangedCoordf64, RangedCoordf64>>;

pub fn line_chart(spec: &LineChart) -> Result<String> {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, spec.size).into_drawing_area();
        root.fill(&WHITE).map_err(error)?;
        let mut chart = ChartBuilder::on(&root)
            .caption(&spec.caption, ("sans-serif", 22))
            .margin(15)
            .x_label_area_size(45)
            .y_label_area_size(spec.y_label_area)
            .build_cartesian_2d(spec.x.clone(), spec.y.clone())
            .map_err(error)?;
        chart
            .configure_mesh()
            .x_desc(&spec.x_desc)
            .x_label_formatter(&|x| format!("{x:.0}"))
            .y_desc(&spec.y_desc)
            .y_label_formatter(&|y| format!("{y:.0}"))
            .draw()
            .map_err(error)?;
        for curve in &spec.curves {
            draw_curve(&mut chart, curve, spec.dot)?;
        }
        chart
            .configure_series_labels()
            .position(spec.key_at.clone())
            .background_style(WHITE.mix(0.9))
            .border_style(BLACK)
            .draw()
            .map_err(error)?;
        root.present().map_err(error)?;
    }
    Ok(svg)
}

fn draw_curve(chart: &mut Plane, curve: &Curve, dot: u32) -> Result<()> {
    let (color, width) = (curve.color, curve.width);
    chart
        .draw_series(std::iter::once(PathElement::new(curve.points.clone(), color.stroke_width(width))))
        .map_err(error)?
        .label(&curve.name)
        .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(width)));
    chart.draw_series(curve.points.iter().map(|&point| Circle::new(point, dot, color.filled()))).map_err(error)?;
    Ok(())
}
