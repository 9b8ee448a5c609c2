//! "Did you mean": the known name closest to a misspelt one.
//!
//! The distance is strsim's optimal string alignment (a swapped pair of
//! letters counts once, the commonest typo); strsim is already in the build
//! through clap, which makes the same suggestions for options.

/// How far a misspelling may stray: one edit, one more per six letters, so
/// that `gpos` is not taken for `rtos` nor `io` for `rt`.
fn reach(name: &str) -> usize {
    1 + name.chars().count() / 6
}

/// The name among `known` nearest to `name` within reach, the first of
/// equally near ones; failing that, one that `name` begins with and
/// lengthens, as `phys_addr` does `phys`.
pub fn closest<'k>(name: &str, known: impl IntoIterator<Item = &'k str>) -> Option<&'k str> {
    let known: Vec<&str> = known.into_iter().collect();
    let near = known.iter().map(|k| (strsim::osa_distance(name, k), *k)).filter(|(d, _)| *d <= reach(name));
    let nearest = near.min_by_key(|(distance, _)| *distance).map(|(_, k)| k);
    nearest.or_else(|| known.into_iter().find(|k| k.len() >= MIN_STEM && name.starts_with(k)))
}

/// A known name this short is no stem: `io` would claim every `io_...`.
const MIN_STEM: usize = 3;

/// `; did you mean "x"?` for a name that matches nothing, or nothing when
/// no known name is near.
pub fn did_you_mean<'k>(name: &str, known: impl IntoIterator<Item = &'k str>) -> String {
    closest(name, known).map_or_else(String::new, |k| format!("; did you mean \"{k}\"?"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_name_within_reach() {
        let known = ["rtos", "linux", "control", "io"];
        assert_eq!(closest("linx", known), Some("linux"));
        assert_eq!(closest("contorl", known), Some("control"), "a swapped pair is one edit");
        assert_eq!(closest("Linux", known), Some("linux"));
        assert_eq!(closest("rt", known), None, "two edits is too far for two letters");
        assert_eq!(closest("gpos", known), None);
        assert_eq!(closest("linux", ["linux1", "linux2"]), Some("linux1"), "the first of equals");
        assert_eq!(closest("phys_addr", ["base", "phys"]), Some("phys"), "a name lengthened");
        assert_eq!(closest("io_pins", known), None, "too short a stem");
    }

    #[test]
    fn suggestion_text() {
        assert_eq!(did_you_mean("rtso", ["rtos"]), "; did you mean \"rtos\"?");
        assert_eq!(did_you_mean("fabric", ["rtos"]), "");
    }
}
