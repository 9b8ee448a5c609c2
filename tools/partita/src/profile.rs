//! Measured costs of each board, from `platforms/<board>.toml`.
//!
//! The files are compiled in, so `partita check` gives the same answer
//! wherever the binary runs, with no path to find at run time.

use anyhow::{anyhow, Context, Result};
use partita_core::config::response::{Critical, PcpuKind, ResponseCosts};
use partita_core::fabric::bound::AtomicCosts;
use serde::Deserialize;
use std::collections::BTreeMap;

/// Every board with a profile, and the file's text.
const PROFILES: &[(&str, &str)] = &[
    ("qemu-virt", include_str!("../../../platforms/qemu-virt.toml")),
    ("zcu102", include_str!("../../../platforms/zcu102.toml")),
];

/// Guest nanoseconds of one instruction under QEMU `-icount shift=N`:
/// QEMU advances the guest's clock 2^N ns per instruction, whatever the
/// host does. With N = 4 that is 16 ns, one tick of the 62.5 MHz counter
/// of both boards, so a switch measured in counter ticks is measured in
/// instructions. Every conversion of a count to time goes through here.
pub const fn ns_per_instruction(shift: u32) -> u64 {
    1 << shift
}

/// What one board's file says. Keys beyond these are ignored, so that
/// `partita bench pcs` may record more than `check` reads.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(try_from = "RawProfile")]
pub struct PlatformProfile {
    /// One partition context switch, in wall-clock nanoseconds. Under an
    /// emulator it is mostly the host's timer delivery and load, so the
    /// overhead model does not take it (see [`PlatformProfile::switch`]).
    pub pcs_ns: u64,
    /// The same switch in instructions, under QEMU `-icount`.
    pub pcs_instructions: u64,
    /// The largest switch of a run in instructions, when recorded.
    pub pcs_max_instructions: Option<u64>,
    /// Guest nanoseconds per instruction of the `-icount` pass that
    /// counted `pcs_instructions` ([`ns_per_instruction`]).
    pub pcs_ns_per_instruction: u64,
    /// How and when the numbers were produced.
    pub measured: String,
    /// The atomic costs of an accelerator allocation (Ker-ONE Table 4), in
    /// nanoseconds of guest time under `-icount`: the `accel_*_ns` keys,
    /// all of them or none. `None` until they are measured.
    pub accel: Option<AtomicCosts>,
    /// How and when `accel` was measured (`accel_measured`).
    pub accel_measured: Option<String>,
    /// What Partita adds to a release (Ker-ONE eq. 4): the `response_*`
    /// keys, which `partita bench response --save` writes. `None` until
    /// they are measured.
    pub response: Option<ResponseCosts>,
    /// How and when `response` was measured (`response_measured`).
    pub response_measured: Option<String>,
}

/// The file's keys, before the accelerator costs are put together.
#[derive(Deserialize)]
struct RawProfile {
    pcs_ns: u64,
    pcs_instructions: u64,
    pcs_max_instructions: Option<u64>,
    pcs_ns_per_instruction: u64,
    measured: String,
    accel_trap_ns: Option<u64>,
    accel_resume_ns: Option<u64>,
    accel_pl_irq_ns: Option<u64>,
    accel_search_ns: Option<u64>,
    accel_assign_ns: Option<u64>,
    accel_assign_reconfig_ns: Option<u64>,
    accel_preempt_ns: Option<u64>,
    accel_irq_pcap_ns: Option<u64>,
    accel_irq_stop_ns: Option<u64>,
    accel_measured: Option<String>,
    response_sched_instructions: Option<u64>,
    response_release_instructions: Option<u64>,
    response_ns_per_instruction: Option<u64>,
    response_critical: Option<BTreeMap<String, BTreeMap<String, u64>>>,
    response_measured: Option<String>,
}

/// No atomic step of an allocation takes a second: a larger value is a
/// unit mistake, and it would also overflow the paths' sums.
const MAX_ACCEL_COST_NS: u64 = 1_000_000_000;

impl TryFrom<RawProfile> for PlatformProfile {
    type Error = String;

    fn try_from(raw: RawProfile) -> Result<Self, String> {
        // QEMU takes -icount shift=0 to 10.
        if !(ns_per_instruction(0)..=ns_per_instruction(10)).contains(&raw.pcs_ns_per_instruction) {
            return Err(format!(
                "pcs_ns_per_instruction = {}: under -icount an instruction is 1 to 1024 ns of guest time",
                raw.pcs_ns_per_instruction
            ));
        }
        let keys = [
            ("accel_trap_ns", raw.accel_trap_ns),
            ("accel_resume_ns", raw.accel_resume_ns),
            ("accel_pl_irq_ns", raw.accel_pl_irq_ns),
            ("accel_search_ns", raw.accel_search_ns),
            ("accel_assign_ns", raw.accel_assign_ns),
            ("accel_assign_reconfig_ns", raw.accel_assign_reconfig_ns),
            ("accel_preempt_ns", raw.accel_preempt_ns),
            ("accel_irq_pcap_ns", raw.accel_irq_pcap_ns),
            ("accel_irq_stop_ns", raw.accel_irq_stop_ns),
        ];
        let missing: Vec<&str> = keys.iter().filter(|(_, value)| value.is_none()).map(|(key, _)| *key).collect();
        let accel = match missing.len() {
            0 => {
                if let Some((key, value)) = keys.iter().find(|(_, value)| value.is_some_and(|v| v > MAX_ACCEL_COST_NS))
                {
                    let value = value.unwrap_or_default();
                    return Err(format!("{key} = {value} is more than a second; the costs are in nanoseconds"));
                }
                let [trap, resume, pl_irq, search, assign, assign_reconfig, preempt, irq_pcap, irq_stop] =
                    keys.map(|(_, value)| value.unwrap_or_default());
                Some(AtomicCosts { trap, resume, pl_irq, search, assign, assign_reconfig, preempt, irq_pcap, irq_stop })
            }
            n if n == keys.len() => None,
            _ => return Err(format!("the accelerator costs are incomplete: {} missing", missing.join(", "))),
        };
        let response = match (
            raw.response_sched_instructions,
            raw.response_release_instructions,
            raw.response_ns_per_instruction,
            raw.response_critical,
        ) {
            (Some(sched), Some(release), Some(ns_per_instruction), Some(kinds)) => {
                let mut critical = Vec::new();
                for (kind, paths) in kinds {
                    let pcpu = PcpuKind::from_name(&kind).ok_or_else(|| {
                        format!("response_critical.{kind}: not a kind of pCPU (shared, exclusive, direct, cyclic)")
                    })?;
                    critical.extend(paths.into_iter().map(|(path, max)| Critical { pcpu, path, max }));
                }
                Some(ResponseCosts { sched, release, critical, ns_per_instruction })
            }
            (None, None, None, None) => None,
            _ => {
                return Err("the response costs are incomplete: response_sched_instructions, \
                             response_release_instructions, response_ns_per_instruction and \
                             response_critical go together"
                    .to_string())
            }
        };
        Ok(PlatformProfile {
            pcs_ns: raw.pcs_ns,
            pcs_instructions: raw.pcs_instructions,
            pcs_max_instructions: raw.pcs_max_instructions,
            pcs_ns_per_instruction: raw.pcs_ns_per_instruction,
            measured: raw.measured,
            accel,
            accel_measured: raw.accel_measured,
            response,
            response_measured: raw.response_measured,
        })
    }
}

/// The partition switch the overhead model charges each slot, and where
/// the figure comes from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Switch {
    pub ns: u64,
    /// `-icount measurement of 1371 instructions at 16 ns, at most 1373;
    /// partita bench pcs --runs 3 --save, 2026-11-28`.
    pub source: String,
}

impl PlatformProfile {
    /// The `-icount` count in guest time: it depends on Partita's switch
    /// path alone, where the wall-clock `pcs_ns` of an emulator measures
    /// the host. Each board's figure stays that until the board itself is
    /// measured.
    pub fn switch(&self) -> Switch {
        let ns = self.pcs_instructions.saturating_mul(self.pcs_ns_per_instruction);
        let largest = self
            .pcs_max_instructions
            .filter(|&max| max != self.pcs_instructions)
            .map_or(String::new(), |max| format!(", at most {max}"));
        // The command and date; the method that follows is in the file.
        let by = self.measured.split_once(": ").map_or(self.measured.as_str(), |(head, _)| head);
        let source = if self.pcs_instructions == 0 {
            self.measured.clone()
        } else {
            format!(
                "-icount measurement of {} instructions at {} ns{largest}; {by}",
                self.pcs_instructions, self.pcs_ns_per_instruction
            )
        };
        Switch { ns, source }
    }
}

/// The comment above the `accel_*` keys.
const ACCEL_HEADER: &str = "# The atomic costs of an accelerator allocation (Ker-ONE Table 4), written by\n\
                            # `partita bench accel --save`: nanoseconds of guest time under -icount.";

fn is_accel(line: &&str) -> bool {
    line.trim_start().starts_with("accel_")
}

/// The comment above the `response_*` keys.
const RESPONSE_HEADER: &str = "# What Partita adds to a release of an RTOS task (Ker-ONE Fig. 14, eq. 4),\n\
                               # written by `partita bench response --save`: instructions under -icount.";

fn is_response(line: &&str) -> bool {
    line.trim_start().starts_with("response_")
}

/// `text`, a profile about to replace `previous`, with the `accel_*` and
/// `response_*` lines of `previous` added when it has none of its own:
/// each measurement rewrites its own keys and keeps the others'.
pub fn keep_accel_costs(text: &str, previous: &str) -> String {
    let mut text = text.to_owned();
    for (is_key, header) in [(is_accel as fn(&&str) -> bool, ACCEL_HEADER), (is_response, RESPONSE_HEADER)] {
        if text.lines().any(|line| is_key(&line)) {
            continue;
        }
        let kept: Vec<&str> = previous.lines().filter(is_key).collect();
        if !kept.is_empty() {
            text = format!("{}\n\n{header}\n{}\n", text.trim_end(), kept.join("\n"));
        }
    }
    text
}

/// `previous` with its response costs replaced by `costs`, `measured`
/// saying how they were produced; the other keys are kept as they are.
pub fn with_response_costs(previous: &str, costs: &ResponseCosts, measured: &str) -> String {
    let header: Vec<&str> = RESPONSE_HEADER.lines().collect();
    let kept: Vec<&str> = previous.lines().filter(|line| !is_response(line) && !header.contains(line)).collect();
    let mut text = format!("{}\n\n{RESPONSE_HEADER}\n", kept.join("\n").trim_end());
    text += &format!("response_sched_instructions = {}\n", costs.sched);
    text += &format!("response_release_instructions = {}\n", costs.release);
    text += &format!("response_ns_per_instruction = {}\n", costs.ns_per_instruction);
    text += &format!("response_measured = {}\n", toml::Value::String(measured.to_string()));
    for c in &costs.critical {
        text += &format!("response_critical.{}.{} = {}\n", c.pcpu.name(), c.path, c.max);
    }
    text
}

/// `previous` with its accelerator costs replaced by `costs`, `measured`
/// saying how they were produced; the other keys are kept as they are.
pub fn with_accel_costs(previous: &str, costs: &AtomicCosts, measured: &str) -> String {
    let header: Vec<&str> = ACCEL_HEADER.lines().collect();
    let kept: Vec<&str> = previous.lines().filter(|line| !is_accel(line) && !header.contains(line)).collect();
    let c = costs;
    let keys = [
        ("trap", c.trap),
        ("resume", c.resume),
        ("pl_irq", c.pl_irq),
        ("search", c.search),
        ("assign", c.assign),
        ("assign_reconfig", c.assign_reconfig),
        ("preempt", c.preempt),
        ("irq_pcap", c.irq_pcap),
        ("irq_stop", c.irq_stop),
    ];
    let mut text = format!("{}\n\n{ACCEL_HEADER}\n", kept.join("\n").trim_end());
    for (key, ns) in keys {
        text += &format!("accel_{key}_ns = {ns}\n");
    }
    text + &format!("accel_measured = {}\n", toml::Value::String(measured.to_string()))
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

/// The profile `check` reads for `system`. A board with no file yet is
/// checked all the same while no plan needs its partition-switch cost:
/// then nothing reads `pcs_ns`, and `measured` says there is none.
pub fn for_system(system: &partita_core::config::model::System) -> Result<PlatformProfile> {
    let board = &system.platform.board;
    match for_board(board) {
        Err(_) if system.plans.is_empty() => Ok(PlatformProfile {
            pcs_ns: 0,
            pcs_instructions: 0,
            pcs_max_instructions: None,
            pcs_ns_per_instruction: 0,
            measured: format!("nothing measured on {board} yet"),
            accel: None,
            accel_measured: None,
            response: None,
            response_measured: None,
        }),
        Err(error) => Err(error.context(format!("the plans' overhead model needs {board}'s partition-switch cost"))),
        ok => ok,
    }
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
        let text = "pcs_ns = 2500\npcs_instructions = 900\npcs_ns_per_instruction = 16\npcs_max_instructions = 950\n\
                    measured = \"bench pcs, 100 runs\"\nruns = 100\n";
        let expected = PlatformProfile {
            pcs_ns: 2500,
            pcs_instructions: 900,
            pcs_max_instructions: Some(950),
            pcs_ns_per_instruction: 16,
            measured: "bench pcs, 100 runs".into(),
            accel: None,
            accel_measured: None,
            response: None,
            response_measured: None,
        };
        assert_eq!(parse("p.toml", text).unwrap(), expected);
    }

    const ACCEL: &str = "accel_trap_ns = 760\naccel_resume_ns = 640\naccel_pl_irq_ns = 810\naccel_search_ns = 500\n\
                         accel_assign_ns = 1130\naccel_assign_reconfig_ns = 2770\naccel_preempt_ns = 340\n\
                         accel_irq_pcap_ns = 640\naccel_irq_stop_ns = 280\n";

    fn response_costs() -> ResponseCosts {
        ResponseCosts {
            sched: 390,
            release: 40,
            // In the order the file's tables read back: by kind's name, then path.
            critical: vec![
                Critical { pcpu: PcpuKind::Cyclic, path: "restart-step".into(), max: 1400 },
                Critical { pcpu: PcpuKind::Shared, path: "hyp-timer".into(), max: 900 },
            ],
            ns_per_instruction: 16,
        }
    }

    #[test]
    fn response_costs_are_written_read_back_and_kept_by_other_measurements() {
        let base = "pcs_ns = 1\npcs_instructions = 1\npcs_ns_per_instruction = 16\nmeasured = \"m\"\n";
        let text = with_response_costs(base, &response_costs(), "bench response, today");
        let profile = parse("p.toml", &text).unwrap();
        assert_eq!(profile.response, Some(response_costs()));
        assert_eq!(profile.response_measured.as_deref(), Some("bench response, today"));
        let again = with_response_costs(&text, &ResponseCosts { sched: 1, ..response_costs() }, "again");
        assert_eq!(again.matches("response_sched_instructions").count(), 1, "{again}");
        assert_eq!(again.matches("# What Partita adds").count(), 1, "the header once: {again}");
        // `bench pcs --save` rewrites the file from its own keys.
        let rewritten = keep_accel_costs(
            "pcs_ns = 2\npcs_instructions = 2\npcs_ns_per_instruction = 16\nmeasured = \"n\"\n",
            &text,
        );
        assert_eq!(parse("p.toml", &rewritten).unwrap().response, Some(response_costs()), "{rewritten}");
        let with_accel = with_accel_costs(&text, &parse("a", &format!("{base}{ACCEL}")).unwrap().accel.unwrap(), "a");
        assert_eq!(parse("p.toml", &with_accel).unwrap().response, Some(response_costs()), "{with_accel}");
    }

    #[test]
    fn response_costs_all_or_none() {
        let base = "pcs_ns = 1\npcs_instructions = 1\npcs_ns_per_instruction = 16\nmeasured = \"m\"\n";
        let error = parse("p.toml", &format!("{base}response_sched_instructions = 5\n")).unwrap_err().to_string();
        assert!(error.contains("response costs are incomplete"), "{error}");
        let text = with_response_costs(base, &response_costs(), "m").replace(".cyclic.", ".busy.");
        let error = parse("p.toml", &text).unwrap_err().to_string();
        assert!(error.contains("response_critical.busy: not a kind of pCPU"), "{error}");
    }

    #[test]
    fn accelerator_costs_all_or_none() {
        let base = "pcs_ns = 1\npcs_instructions = 1\npcs_ns_per_instruction = 16\nmeasured = \"m\"\n";
        let costs = parse("p.toml", &format!("{base}{ACCEL}")).unwrap().accel.expect("all nine given");
        assert_eq!(costs.paths(), [3_030, 6_760, 5_100, 9_960], "Ker-ONE's Table 4 gives eq. 6");
        let partial =
            format!("{base}{}", ACCEL.replace("accel_search_ns = 500\n", "").replace("accel_trap_ns = 760\n", ""));
        let error = parse("p.toml", &partial).unwrap_err().to_string();
        assert!(
            error.contains("the accelerator costs are incomplete: accel_trap_ns, accel_search_ns missing"),
            "{error}"
        );
        let huge = format!("{base}{}", ACCEL.replace("= 340", "= 2000000000"));
        let error = parse("p.toml", &huge).unwrap_err().to_string();
        assert!(error.contains("accel_preempt_ns = 2000000000 is more than a second"), "{error}");
    }

    #[test]
    fn a_new_measurement_keeps_the_accelerator_costs() {
        let previous = format!("pcs_ns = 1\n{ACCEL}");
        let kept = keep_accel_costs("pcs_ns = 2\n", &previous);
        assert!(kept.starts_with("pcs_ns = 2\n") && kept.contains("accel_irq_stop_ns = 280\n"), "{kept}");
        assert_eq!(keep_accel_costs("pcs_ns = 2\n", "pcs_ns = 1\n"), "pcs_ns = 2\n");
        let own = format!("pcs_ns = 2\n{}", ACCEL.replace("760", "700"));
        assert_eq!(keep_accel_costs(&own, &previous), own, "a file with its own costs keeps them");
    }

    #[test]
    fn malformed_profiles_are_named_with_the_problem() {
        let error = |text: &str| parse("platforms/x.toml", text).unwrap_err().to_string();
        let missing = error("pcs_ns = 1\nmeasured = \"\"\n");
        assert!(missing.starts_with("invalid platform profile platforms/x.toml"), "{missing}");
        assert!(missing.contains("missing field `pcs_instructions`"), "{missing}");
        let negative = error("pcs_ns = -1\npcs_instructions = 1\npcs_ns_per_instruction = 16\nmeasured = \"\"\n");
        assert!(negative.contains("(line 1)") && negative.contains("-1"), "{negative}");
        let text = error("pcs_ns = \"2us\"\npcs_instructions = 1\npcs_ns_per_instruction = 16\nmeasured = \"\"\n");
        assert!(text.contains("invalid type: string \"2us\", expected u64"), "{text}");
        assert!(error("pcs_ns = [").contains("invalid platform profile"));
    }

    #[test]
    fn an_unknown_board_has_no_profile() {
        let error = for_board("no-such-board").unwrap_err().to_string();
        assert_eq!(
            error,
            "no platform profile for board \"no-such-board\" (platforms/no-such-board.toml does not exist)"
        );
    }

    #[test]
    fn every_board_has_a_measured_switch() {
        for board in partita_core::config::model::BOARDS {
            let profile = for_board(board).unwrap();
            assert!(profile.pcs_ns > 0 && profile.pcs_instructions > 0, "{board}: {profile:?}");
            let switch = profile.switch();
            assert_eq!(switch.ns, profile.pcs_instructions * profile.pcs_ns_per_instruction, "{board}");
            assert!(switch.source.starts_with("-icount measurement of "), "{board}: {}", switch.source);
            assert!(switch.source.contains(&format!("bench pcs{}", bench_board(board))), "{board}: {}", switch.source);
        }
    }

    /// How `bench pcs` names a board other than its default.
    fn bench_board(board: &str) -> String {
        if board == "qemu-virt" {
            String::new()
        } else {
            format!(" --board {board}")
        }
    }

    #[test]
    fn the_switch_is_the_icount_count_in_guest_time_with_its_source() {
        let text = "pcs_ns = 86783\npcs_instructions = 1371\npcs_ns_per_instruction = 16\n\
                    pcs_max_instructions = 1373\nmeasured = \"partita bench pcs --runs 3 --save, 2026-11-28: medians\"\n";
        let switch = parse("p.toml", text).unwrap().switch();
        assert_eq!(switch.ns, 21_936, "1371 instructions of 16 ns, not the wall-clock 86783 ns");
        assert_eq!(
            switch.source,
            "-icount measurement of 1371 instructions at 16 ns, at most 1373; partita bench pcs --runs 3 --save, \
             2026-11-28"
        );
        let same = text.replace("1373", "1371");
        let source = parse("p.toml", &same).unwrap().switch().source;
        assert!(source.starts_with("-icount measurement of 1371 instructions at 16 ns; "), "{source}");
        assert_eq!(ns_per_instruction(4), 16);
    }

    #[test]
    fn an_instruction_takes_what_an_icount_shift_gives() {
        let text =
            |ns: u64| format!("pcs_ns = 1\npcs_instructions = 1\npcs_ns_per_instruction = {ns}\nmeasured = \"m\"\n");
        for ns in [0, 2000] {
            let error = parse("p.toml", &text(ns)).unwrap_err().to_string();
            assert!(
                error.contains(&format!("pcs_ns_per_instruction = {ns}: under -icount an instruction is 1 to 1024 ns")),
                "{error}"
            );
        }
        assert_eq!(parse("p.toml", &text(1024)).unwrap().switch().ns, 1024);
    }

    #[test]
    fn saving_accelerator_costs_replaces_only_them() {
        let base = "pcs_ns = 1\npcs_instructions = 1\npcs_ns_per_instruction = 16\nmeasured = \"m\"\n";
        let costs = AtomicCosts { trap: 1, resume: 2, pl_irq: 3, search: 4, ..AtomicCosts::default() };
        let once = with_accel_costs(&format!("{base}{ACCEL}"), &costs, "bench accel");
        let profile = parse("p.toml", &once).unwrap();
        assert_eq!(profile.accel, Some(costs));
        assert_eq!((profile.pcs_ns, profile.measured.as_str()), (1, "m"));
        let twice = with_accel_costs(&once, &costs, "bench accel");
        assert_eq!(twice, once, "saving again leaves one block of costs");
        let pcs_saved = keep_accel_costs(
            "pcs_ns = 5\npcs_instructions = 5\npcs_ns_per_instruction = 16\nmeasured = \"n\"\n",
            &once,
        );
        assert_eq!(parse("p.toml", &pcs_saved).unwrap().accel, Some(costs));
        assert_eq!(with_accel_costs(&pcs_saved, &costs, "bench accel").matches(ACCEL_HEADER).count(), 1);
    }
}
