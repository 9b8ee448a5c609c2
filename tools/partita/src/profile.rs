//! Measured costs of each board, from `platforms/<board>.toml`.
//!
//! The files are compiled in, so `partita check` gives the same answer
//! wherever the binary runs, with no path to find at run time.

use anyhow::{anyhow, Context, Result};
use serde::Deserialize;

/// Every board with a profile, and the file's text.
const PROFILES: &[(&str, &str)] = &[("qemu-virt", include_str!("../../../platforms/qemu-virt.toml"))];

/// What one board's file says. Keys beyond these are ignored, so that
/// `partita bench pcs` may record more than `check` reads.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
pub struct PlatformProfile {
    /// One partition context switch, in wall-clock nanoseconds.
    pub pcs_ns: u64,
    /// The same switch in instructions, under QEMU `-icount`.
    pub pcs_instructions: u64,
    /// How and when the numbers were produced.
    pub measured: String,
}

/// Parses a profile's text; `file` names it in the error.
pub fn parse(file: &str, text: &str) -> Result<PlatformProfile> {
    toml::from_str(text).map_err(|error| {
        let message = error.message().trim().replace('\n', "; ");
        let line = error.span().map(|span| text[..span.start.min(text.len())].matches('\n').count() + 1);
        let place = line.map_or(String::new(), |line| format!(" (line {line})"));
        anyhow!("invalid platform profile {file}{place}: {message}")
    })
}

/// The compiled-in profile of `board`.
pub fn for_board(board: &str) -> Result<PlatformProfile> {
    let file = format!("platforms/{board}.toml");
    let (_, text) = PROFILES
        .iter()
        .find(|(name, _)| *name == board)
        .with_context(|| format!("no platform profile for board \"{board}\" ({file} does not exist)"))?;
    parse(&file, text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_compiled_in_profile_parses() {
        for (board, _) in PROFILES {
            let profile = for_board(board).unwrap();
            assert!(!profile.measured.trim().is_empty(), "{board}: say how the numbers were produced");
        }
    }

    #[test]
    fn a_complete_profile() {
        let text = "pcs_ns = 2500\npcs_instructions = 900\nmeasured = \"bench pcs, 100 runs\"\nruns = 100\n";
        let expected = PlatformProfile { pcs_ns: 2500, pcs_instructions: 900, measured: "bench pcs, 100 runs".into() };
        assert_eq!(parse("p.toml", text).unwrap(), expected);
    }

    #[test]
    fn malformed_profiles_are_named_with_the_problem() {
        let error = |text: &str| parse("platforms/x.toml", text).unwrap_err().to_string();
        let missing = error("pcs_ns = 1\nmeasured = \"\"\n");
        assert!(missing.starts_with("invalid platform profile platforms/x.toml"), "{missing}");
        assert!(missing.contains("missing field `pcs_instructions`"), "{missing}");
        let negative = error("pcs_ns = -1\npcs_instructions = 1\nmeasured = \"\"\n");
        assert!(negative.contains("(line 1)") && negative.contains("-1"), "{negative}");
        let text = error("pcs_ns = \"2us\"\npcs_instructions = 1\nmeasured = \"\"\n");
        assert!(text.contains("invalid type: string \"2us\", expected u64"), "{text}");
        assert!(error("pcs_ns = [").contains("invalid platform profile"));
    }

    #[test]
    fn an_unknown_board_has_no_profile() {
        let error = for_board("zcu102").unwrap_err().to_string();
        assert_eq!(error, "no platform profile for board \"zcu102\" (platforms/zcu102.toml does not exist)");
    }
}
