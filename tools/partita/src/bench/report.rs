//! Tables and report files: what every benchmark writes, and how a report
//! worth keeping is copied into the source tree's `bench/results/`.

use crate::paths;
use anyhow::{Context, Result};
use serde::Serialize;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

/// Writes each `(file name, contents)` into `dir`, creating it; returns the
/// paths written, in order.
pub fn write(dir: &Path, files: &[(String, String)]) -> Result<Vec<PathBuf>> {
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let mut written = Vec::new();
    for (name, text) in files {
        let path = dir.join(name);
        std::fs::write(&path, text).with_context(|| format!("cannot write {}", path.display()))?;
        written.push(path);
    }
    Ok(written)
}

/// A report as `report.json` holds it.
pub fn json(report: &impl Serialize) -> Result<String> {
    Ok(serde_json::to_string_pretty(report)? + "\n")
}

/// The committed reports: `bench/results/` in the source tree.
pub fn results_dir() -> PathBuf {
    paths::source().join("bench").join("results")
}

/// Copies report files into [`results_dir`] under their own names; returns
/// the copies.
pub fn save(files: &[PathBuf]) -> Result<Vec<PathBuf>> {
    let dir = results_dir();
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let mut saved = Vec::new();
    for file in files {
        let name = file.file_name().with_context(|| format!("{} names no file", file.display()))?;
        let copy = dir.join(name);
        std::fs::copy(file, &copy).with_context(|| format!("cannot copy {} to {}", file.display(), copy.display()))?;
        saved.push(copy);
    }
    Ok(saved)
}

/// A ratio with two decimals; `n/a` where there is none.
pub fn ratio(value: Option<f64>) -> String {
    value.map_or_else(|| "n/a".to_string(), |r| format!("{r:.2}"))
}

/// Today's date (UTC) as `YYYY-MM-DD`.
pub fn today() -> String {
    let days = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs() / 86_400);
    let (y, m, d) = civil_date(days as i64);
    format!("{y:04}-{m:02}-{d:02}")
}

/// The Gregorian date `days` after 1970-01-01.
pub fn civil_date(days: i64) -> (i64, u32, u32) {
    // Counted in 400-year eras from 0000-03-01, so that the leap day ends a year.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let day_of_era = z.rem_euclid(146_097);
    let year_of_era = (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let month_from_march = (5 * day_of_year + 2) / 153;
    let day = (day_of_year - (153 * month_from_march + 2) / 5 + 1) as u32;
    let month = if month_from_march < 10 { month_from_march + 3 } else { month_from_march - 9 } as u32;
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Align {
    Left,
    Right,
}

/// A column of a [`Table`]: its heading at the terminal and in Markdown,
/// and its width at the terminal.
#[derive(Clone, Copy, Debug)]
pub struct Column {
    pub terminal: &'static str,
    pub markdown: &'static str,
    pub width: usize,
    pub align: Align,
}

impl Column {
    pub const fn left(terminal: &'static str, markdown: &'static str, width: usize) -> Self {
        Column { terminal, markdown, width, align: Align::Left }
    }

    pub const fn right(terminal: &'static str, markdown: &'static str, width: usize) -> Self {
        Column { terminal, markdown, width, align: Align::Right }
    }

    fn pad(&self, text: &str) -> String {
        match self.align {
            Align::Left => format!("{text:<width$}", width = self.width),
            Align::Right => format!("{text:>width$}", width = self.width),
        }
    }
}

/// Rows of cells already formatted, shown as padded columns at the
/// terminal and as a Markdown table in a report, from one set of cells.
#[derive(Clone, Debug)]
pub struct Table {
    columns: Vec<Column>,
    rows: Vec<Vec<String>>,
}

impl Table {
    pub fn new(columns: &[Column]) -> Self {
        Table { columns: columns.to_vec(), rows: Vec::new() }
    }

    pub fn row(&mut self, cells: Vec<String>) {
        self.rows.push(cells);
    }

    /// The heading line and every row, columns one space apart.
    pub fn terminal(&self) -> String {
        let line = |cells: Vec<String>| {
            let padded: Vec<String> = self.columns.iter().zip(&cells).map(|(c, text)| c.pad(text)).collect();
            padded.join(" ") + "\n"
        };
        let mut out = line(self.columns.iter().map(|c| c.terminal.to_string()).collect());
        for row in &self.rows {
            out += &line(row.clone());
        }
        out
    }

    pub fn markdown(&self) -> String {
        let line = |cells: Vec<String>| format!("| {} |\n", cells.join(" | "));
        let mut out = line(self.columns.iter().map(|c| c.markdown.to_string()).collect());
        let rule: Vec<&str> = self
            .columns
            .iter()
            .map(|c| match c.align {
                Align::Left => "---",
                Align::Right => "--:",
            })
            .collect();
        out += &format!("|{}|\n", rule.join("|"));
        for row in &self.rows {
            out += &line(row.clone());
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_set_of_cells_makes_both_tables() {
        let mut table = Table::new(&[Column::left("name", "name", 6), Column::right("n", "count (n)", 4)]);
        table.row(vec!["ab".to_string(), "7".to_string()]);
        assert_eq!(table.terminal(), "name      n\nab        7\n");
        assert_eq!(table.markdown(), "| name | count (n) |\n|---|--:|\n| ab | 7 |\n");
    }

    #[test]
    fn ratios_say_when_there_is_none() {
        assert_eq!((ratio(Some(1.234)), ratio(None)), ("1.23".to_string(), "n/a".to_string()));
    }
}
