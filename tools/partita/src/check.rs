//! `partita check CONFIG`: every problem of a configuration with its place,
//! or a table of what the hypervisor will build, with what its schedules
//! cost.

use crate::config::{self, Config};
use crate::profile::{self, PlatformProfile};
use partita_core::config::allocation::{device_latencies, micros_text, reconfig_ns, Wait};
use partita_core::config::model::{
    Action, ChannelKind, Criticality, Device, Fabric, Health, Interrupt, MemoryRegion, Partition, Perms, Plan, System,
};
use partita_core::config::overhead::switch_losses;
use partita_core::config::response;
use partita_core::config::utilisation::{fixed_priority_loads, share_tenths_of_percent, tenths_text};
use partita_core::config::validate::{allocation_deadlines, holders_text, Issue};
use std::io::Write;
use std::path::Path;

/// Loads and validates `path`. Diagnostics and warnings go to stderr, one
/// per line; a valid file's summary goes to stdout.
pub fn check(path: &Path) -> anyhow::Result<Config> {
    check_to(path, None, &mut std::io::stdout().lock(), &mut std::io::stderr().lock())
}

/// [`check`] writing to `out` and `err`, and with `profile` in place of the
/// board's compiled-in one when given. Warnings leave the result `Ok`: they
/// flag a cost, not a configuration the hypervisor would refuse.
pub fn check_to(
    path: &Path,
    profile: Option<&PlatformProfile>,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> anyhow::Result<Config> {
    // Deadlines against the analysed bound need the board's atomic costs,
    // and limits on the added response its response costs.
    let deadlines = |system: &System| {
        let board = profile.cloned().or_else(|| profile::for_board(&system.platform.board).ok());
        let mut issues = allocation_deadlines(system, board.as_ref().and_then(|p| p.accel.as_ref()));
        if issues.is_empty() {
            issues = response_limits(system, board.as_ref().and_then(|p| p.response.as_ref()));
        }
        issues
    };
    let config = match config::load_with(path, &deadlines) {
        Ok(config) => config,
        Err(diagnostics) => {
            for diagnostic in &diagnostics {
                writeln!(err, "{diagnostic}")?;
            }
            anyhow::bail!("{} error(s) in {}", diagnostics.len(), path.display())
        }
    };
    let board_profile;
    let profile = match profile {
        Some(profile) => profile,
        None => {
            board_profile = profile::for_system(&config.system)?;
            &board_profile
        }
    };
    write!(out, "{}", summary(&config, profile))?;
    if !config.unbuilt.is_empty() {
        writeln!(err, "note: {}", unbuilt_note(&config.unbuilt))?;
    }
    for warning in warnings(&config.system, profile) {
        writeln!(err, "warning: {warning}")?;
    }
    Ok(config)
}

/// Which checks a guest not built yet leaves out: `check` builds nothing,
/// and `build` makes the files, then checks them.
fn unbuilt_note(files: &[std::path::PathBuf]) -> String {
    let names: Vec<String> =
        files.iter().map(|file| crate::paths::shown(&crate::guests::normalized(file)).display().to_string()).collect();
    format!(
        "not built yet, so their size, entry point and place in memory are not checked: {} \
         (`partita build` builds them and checks them)",
        names.join(", ")
    )
}

/// The human summary `check` prints for a valid configuration; `profile`
/// gives the partition switch cost of the overhead tables.
pub fn summary(config: &Config, profile: &PlatformProfile) -> String {
    let system = &config.system;
    let hypervisor = &system.hypervisor.memory;
    let mut out = format!(
        "{}: OK, {} partition(s) on {} pCPU(s); hypervisor memory {:#x} ({}), image store {:#x} ({}), quantum {} us\n\n",
        config.path.display(),
        system.partitions.len(),
        system.platform.cpus,
        hypervisor.base,
        size(hypervisor.size),
        system.hypervisor.images.base,
        size(system.hypervisor.images.size),
        system.hypervisor.quantum_us
    );
    let mut rows = vec![
        ["PARTITION", "CRITICALITY", "vCPU->pCPU", "MEMORY (ipa -> pa, size, perms)", "DEVICES"].map(String::from)
    ];
    for partition in &system.partitions {
        rows.extend(partition_rows(partition));
    }
    out.push_str(&table(&rows));
    out.push_str(&network(config));
    out.push_str(&control(system));
    out.push_str(&budgets(system));
    out.push_str(&plans(system, profile));
    out.push_str(&channels(system));
    out.push_str(&fabric(system, profile));
    out.push_str(&timed_io(system));
    out.push_str(&health(system));
    out.push_str(&added_response(system, profile));
    out
}

/// The host ports forwarded to partitions' network cards.
fn network(config: &Config) -> String {
    let lines = crate::config::virtio::forward_lines(config);
    if lines.is_empty() {
        return String::new();
    }
    let lines: String = lines.iter().map(|line| format!("  {line}\n")).collect();
    format!("\nnetwork (QEMU's user-mode network; forwards listen on 127.0.0.1 alone):\n{lines}")
}

/// What Partita can add to each release of every high-criticality
/// partition's task (Ker-ONE eq. 4), from the board's measured costs.
fn added_response(system: &System, profile: &PlatformProfile) -> String {
    if !system.partitions.iter().any(|p| p.criticality == Criticality::High) {
        return String::new();
    }
    let Some(costs) = &profile.response else {
        return "\nadded response per release: not measured on this board (`partita bench response --save`)\n"
            .to_string();
    };
    let measured = profile.response_measured.as_deref().unwrap_or("measured");
    let mut out = format!("\nadded response per release, Ker-ONE eq. 4 ({measured}):\n");
    for bound in response::added_responses(system, costs) {
        let part = &system.partitions[bound.partition];
        let limit = part.max_added_response_us.map_or(String::new(), |us| format!(", limit {us} us"));
        out += &format!("  {}: {}{limit}\n", part.name, bound.terms(costs));
    }
    out
}

/// Limits on the added response, judged when the board's response costs
/// are known; a limit with none measured is refused, since nothing shows
/// that it holds.
fn response_limits(system: &System, costs: Option<&response::ResponseCosts>) -> Vec<Issue> {
    match costs {
        Some(costs) => response::response_limits(system, costs),
        None => system
            .partitions
            .iter()
            .enumerate()
            .filter(|(_, p)| p.max_added_response_us.is_some())
            .map(|(i, p)| Issue {
                path: format!("partition[{i}]"),
                field: "max_added_response_us",
                message: format!(
                    "partition \"{}\": board \"{}\" has no measured response costs to check it against \
                     (`partita bench response --save`)",
                    p.name, system.platform.board
                ),
            })
            .collect(),
    }
}

/// The timed-I/O controller, its timing, and each grant: the lines, the
/// queue, the view and the pCPU that performs its outputs.
fn timed_io(system: &System) -> String {
    let Some(timed_io) = &system.timed_io else { return String::new() };
    let out = format!(
        "\ntimed I/O: PL061 at {:#x}, horizon {} us, timer {} us ahead of each output\n",
        timed_io.device, timed_io.horizon_us, timed_io.lead_us
    );
    let mut rows = vec![["PARTITION", "LINES", "DEPTH", "VIEW", "pCPU"].map(String::from)];
    for grant in &timed_io.grants {
        let partition = &system.partitions[grant.partition];
        let lines: Vec<String> = (0..8).filter(|pin| grant.pins & 1 << pin != 0).map(|pin| pin.to_string()).collect();
        let view = grant.view.map_or_else(|| "-".into(), |view| format!("{view:#010x}"));
        rows.push([
            partition.name.clone(),
            lines.join(","),
            grant.depth.to_string(),
            view,
            partition.vcpus[0].to_string(),
        ]);
    }
    out + &indented(&table(&rows), "  ")
}

/// The fabric's PRRs with their download time and what each can host,
/// its accelerators, then the analysed allocation latency of every
/// virtual device.
fn fabric(system: &System, profile: &PlatformProfile) -> String {
    let Some(fabric) = &system.fabric else { return String::new() };
    let memory = fabric.memory;
    let mut out = format!(
        "\nfabric: emulated on pCPU {}, reconfiguration at {} B/s, hold {} us, turn {} us, memory {:#x} ({})\n",
        fabric.cpu,
        fabric.bandwidth,
        fabric.hold_us,
        fabric.turn_us,
        memory.base,
        size(memory.size)
    );
    let mut header: Vec<String> = ["PRR", "SIZE", "BITSTREAM", "T_RCFG"].map(String::from).to_vec();
    header.extend(fabric.accelerators.iter().map(|a| a.name.clone()));
    let mut rows = vec![header];
    for prr in &fabric.prrs {
        let mut row =
            vec![prr.name.clone(), prr.size.to_string(), format!("{} B", prr.bitstream), us(reconfig_ns(fabric, prr))];
        row.extend((0..fabric.accelerators.len()).map(|a| if prr.hosts.contains(&a) { "x" } else { "-" }.into()));
        rows.push(row);
    }
    out += &indented(&table(&rows), "  ");
    let mut rows = vec![["ACCELERATOR", "FUNCTION", "FRAME", "PREEMPT"].map(String::from)];
    for a in &fabric.accelerators {
        rows.push([a.name.clone(), a.function.name().into(), us(a.frame_ns), us(a.preempt_ns)]);
    }
    out += &indented(&table(&rows), "  ");
    out + &allocation(system, fabric, profile)
}

/// Each virtual device's L_alloc(WCET) (Ker-ONE eq. 5), or its two
/// board-independent terms while the atomic costs are not measured.
fn allocation(system: &System, fabric: &Fabric, profile: &PlatformProfile) -> String {
    let latencies = device_latencies(system, profile.accel.as_ref());
    if latencies.is_empty() {
        return String::new();
    }
    let mut out = String::from("\nallocation latency (Ker-ONE eq. 5-8)");
    match profile.accel {
        Some(_) => {
            let measured = profile.accel_measured.as_deref().unwrap_or(&profile.measured);
            out += &format!(", atomic costs from the board's profile ({measured}):\n");
        }
        None => {
            out += ": the atomic costs are not measured yet, so L_ALLOC is left out; it adds them to T_PREEMPT, \
                    T_RCFG, T_PCAP and T_SWITCH\n"
        }
    }
    let mut rows = vec![[
        "PARTITION",
        "PRIORITY",
        "DEVICE",
        "IPA",
        "SIGNALS",
        "T_PREEMPT",
        "T_RCFG",
        "T_PCAP",
        "T_SWITCH",
        "L_ALLOC",
        "DEADLINE",
    ]
    .map(String::from)];
    let mut notes = String::new();
    for latency in &latencies {
        let partition = &system.partitions[latency.partition];
        let device = &partition.accelerators[latency.device];
        let name = fabric.accelerators.get(device.accelerator).map_or("?", |a| a.name.as_str());
        let signals: Vec<String> = device.signals.iter().map(u32::to_string).collect();
        let term = |ns: Option<u64>| ns.map_or_else(|| "-".into(), us);
        let (preempt, reconfig, pcap, switch, worst) = match &latency.wait {
            Wait::Bounded { preempt_ns, reconfig_ns, pcap_ns, switch_ns, latency } => (
                term(*preempt_ns),
                term(*reconfig_ns),
                // With the costs, each queued download is taken T_PL_irq
                // late, and a stop T_PL_irq and T_irq_stop late.
                term(latency.map_or(*pcap_ns, |bound| bound.pcap)),
                term(latency.map_or(*switch_ns, |bound| bound.switch)),
                latency.map_or_else(|| "n/a".into(), |bound| us(bound.worst)),
            ),
            Wait::Unbounded { holders } => {
                notes += &format!("  {}/{name}: not bounded: {}\n", partition.name, holders_text(system, holders));
                ("-".into(), "-".into(), "-".into(), "-".into(), "not bounded".into())
            }
        };
        rows.push([
            partition.name.clone(),
            partition.priority.to_string(),
            name.into(),
            format!("{:#010x}", device.ipa),
            signals.join(","),
            preempt,
            reconfig,
            pcap,
            switch,
            worst,
            device.deadline_us.map_or_else(|| "-".into(), |deadline| format!("{deadline} us")),
        ]);
    }
    out += &indented(&table(&rows), "  ");
    out + &notes
}

/// `47 us`, `71.1 us`: nanoseconds as the tables of Ker-ONE write them.
fn us(ns: u64) -> String {
    format!("{} us", micros_text(ns))
}

fn indented(text: &str, indent: &str) -> String {
    text.lines().map(|line| format!("{indent}{line}\n")).collect()
}

/// Each channel with its kind, who writes and who reads, and its sizes.
fn channels(system: &System) -> String {
    if system.channels.is_empty() {
        return String::new();
    }
    let name = |p: usize| system.partitions.get(p).map_or("?", |partition| partition.name.as_str());
    let names = |list: &[usize]| list.iter().map(|&p| name(p)).collect::<Vec<_>>().join(", ");
    // The index is what a partition passes to the port and doorbell calls.
    let mut rows = vec![["#", "CHANNEL", "KIND", "ENDPOINTS", "SIZES"].map(String::from)];
    for (index, channel) in system.channels.iter().enumerate() {
        let (endpoints, sizes) = match &channel.kind {
            ChannelKind::Sampling { source, destinations, max_message, refresh_us } => (
                format!("{} -> {}", name(*source), names(destinations)),
                format!("{max_message} B, refresh {refresh_us} us"),
            ),
            ChannelKind::Queuing { source, destination, max_message, depth } => {
                (format!("{} -> {}", name(*source), name(*destination)), format!("{depth} x {max_message} B"))
            }
            ChannelKind::SharedMemory { partitions, ipa, pa, size: bytes, read_only, doorbell } => {
                let read_only =
                    if read_only.is_empty() { String::new() } else { format!(" (read-only: {})", names(read_only)) };
                let doorbell = doorbell.map_or(String::new(), |intid| format!(", doorbell {intid}"));
                (
                    format!("{}{read_only}", names(partitions)),
                    format!("{} {ipa:#010x} -> {pa:#010x}{doorbell}", size(*bytes)),
                )
            }
        };
        rows.push([index.to_string(), channel.name.clone(), channel.kind.label().into(), endpoints, sizes]);
    }
    let mut out = String::from("\nchannels\n");
    for line in table(&rows).lines() {
        out += &format!("  {line}\n");
    }
    out
}

/// Each partition whose health settings differ from the defaults: its
/// watchdog and the actions it changed.
fn health(system: &System) -> String {
    let default = Health::DEFAULT.actions();
    let mut lines = String::new();
    for partition in &system.partitions {
        let health = &partition.health;
        let mut settings: Vec<String> = health.watchdog_us.iter().map(|us| format!("watchdog every {us} us")).collect();
        let changed = health.actions().into_iter().zip(default).filter(|(given, default)| given != default);
        settings.extend(changed.map(|((event, action), _)| format!("{event} {}", action_name(action))));
        if !settings.is_empty() {
            lines += &format!("  {}: {}\n", partition.name, settings.join(", "));
        }
    }
    format!("\nhealth monitor: log of {} entries\n{lines}", system.hypervisor.hm_log_entries)
}

fn action_name(action: Action) -> &'static str {
    match action {
        Action::Ignore => "ignore",
        Action::Log => "log",
        Action::Suspend => "suspend",
        Action::Restart => "restart",
        Action::Halt => "halt",
        Action::ResetSystem => "reset-system",
        Action::Inject => "inject",
    }
}

/// System partitions with their rights, and vCPUs that may migrate.
fn control(system: &System) -> String {
    let mut out = String::new();
    for partition in &system.partitions {
        let r = partition.rights;
        let granted: Vec<&str> = [
            (r.suspend, "suspend"),
            (r.resume, "resume"),
            (r.restart, "restart"),
            (r.halt, "halt"),
            (r.switch_plan, "switch-plan"),
            (r.read_hm_log, "read-hm-log"),
        ]
        .into_iter()
        .filter_map(|(has, name)| has.then_some(name))
        .collect();
        if !granted.is_empty() {
            out += &format!("system partition {}: may {}\n", partition.name, granted.join(", "));
        }
        for m in &partition.migrate {
            let home = partition.vcpus.get(m.vcpu as usize).map_or("?".into(), |c| c.to_string());
            let to: Vec<String> = m.to.iter().map(u32::to_string).collect();
            out +=
                &format!("{} vCPU {} migrates from pCPU {home} to pCPU {}\n", partition.name, m.vcpu, to.join(" or "));
        }
    }
    if out.is_empty() {
        out
    } else {
        format!("\n{out}")
    }
}

/// Each fixed-priority pCPU that hosts a budgeted vCPU: how much of it the
/// budgets claim, and who runs there without one.
fn budgets(system: &System) -> String {
    let loads = fixed_priority_loads(system);
    if loads.is_empty() {
        return String::new();
    }
    let mut out = String::from("\nbudgets on fixed-priority pCPUs\n");
    for load in loads {
        let shares: Vec<String> = load
            .budgeted
            .iter()
            .filter_map(|&p| {
                let partition = &system.partitions[p];
                let budget = partition.budget.as_ref()?;
                let share = tenths_text(share_tenths_of_percent(budget));
                Some(format!("{} {share} % ({} us every {} us)", partition.name, budget.time_us, budget.period_us))
            })
            .collect();
        let total = tenths_text(load.utilisation.tenths_of_percent());
        out += &format!("  pCPU {}: {total} % budgeted: {}", load.cpu, shares.join(", "));
        if !load.unbudgeted.is_empty() {
            let names: Vec<&str> = load.unbudgeted.iter().map(|&p| system.partitions[p].name.as_str()).collect();
            out += &format!("; unbudgeted: {}", names.join(", "));
        }
        out.push('\n');
    }
    out
}

/// Each plan's cyclic cores: major frame, slots, and how much of the frame
/// the slots claim (the rest is idle); then what partition switches cost
/// each partition of the plan.
fn plans(system: &System, profile: &PlatformProfile) -> String {
    let mut out = String::new();
    for plan in &system.plans {
        out += &format!("\nplan \"{}\"\n", plan.name);
        for core in &plan.cores {
            let busy: u64 = core.slots.iter().map(|s| s.duration_us).sum();
            let percent = busy as f64 * 100.0 / core.major_frame_us.max(1) as f64;
            out += &format!("  pCPU {}: major frame {} us, {percent:.1} % in slots:", core.cpu, core.major_frame_us);
            for slot in &core.slots {
                let name = system.partitions.get(slot.partition).map_or("?", |p| p.name.as_str());
                out += &format!(" {name}/vcpu{} {}+{}", slot.vcpu, slot.start_us, slot.duration_us);
            }
            out.push('\n');
        }
        out += &switch_table(system, plan, profile);
    }
    out
}

/// XtratuM's PL_k for every partition with slots in `plan`.
fn switch_table(system: &System, plan: &Plan, profile: &PlatformProfile) -> String {
    let losses = switch_losses(plan);
    if losses.is_empty() {
        return String::new();
    }
    let limit = system.hypervisor.overhead_limit_bp;
    let switch = profile.switch();
    let mut out = format!(
        "  partition switches: PCS {} ({}), limit {} %\n",
        us(switch.ns),
        switch.source,
        basis_points_text(limit)
    );
    let mut rows = vec![["PARTITION", "SLOTS", "SUM SD", "PL"].map(String::from)];
    for loss in losses {
        let name = system.partitions.get(loss.partition).map_or("?", |p| p.name.as_str());
        let over = if loss.exceeds(switch.ns, limit) { "  over the limit" } else { "" };
        let pl = format!("{} %{over}", thousandths_text(loss.thousandths_of_percent(switch.ns)));
        rows.push([name.to_owned(), loss.slots.to_string(), format!("{} us", loss.slot_us), pl]);
    }
    for line in table(&rows).lines() {
        out += &format!("    {line}\n");
    }
    out
}

/// A device that masters the bus (DMA) reaches every address with no SMMU
/// to confine it: isolation then rests on its driver in the partition.
fn dma_warnings(system: &System) -> Vec<String> {
    let dma = |device: &&partita_core::config::model::Device| {
        device.compatible.iter().any(|c| c == crate::config::virtio::COMPATIBLE)
    };
    system
        .partitions
        .iter()
        .flat_map(|partition| partition.devices.iter().filter(dma).map(move |device| (partition, device)))
        .map(|(partition, device)| {
            format!(
                "partition \"{}\": device \"{}\" does DMA and no SMMU confines it: it can read and write all \
                 memory, Partita's and the other partitions' included",
                partition.name, device.name
            )
        })
        .collect()
}

/// One line per partition whose partition switches take more of its slot
/// time than `hypervisor.overhead_limit_percent` allows, and one per DMA
/// device.
pub fn warnings(system: &System, profile: &PlatformProfile) -> Vec<String> {
    let limit = system.hypervisor.overhead_limit_bp;
    let mut warnings = dma_warnings(system);
    let switch = profile.switch();
    for plan in &system.plans {
        for loss in switch_losses(plan).into_iter().filter(|loss| loss.exceeds(switch.ns, limit)) {
            let name = system.partitions.get(loss.partition).map_or("?", |p| p.name.as_str());
            warnings.push(format!(
                "plan \"{}\": partition \"{name}\" loses {} % to partition switches of {} each (limit {} %)",
                plan.name,
                thousandths_text(loss.thousandths_of_percent(switch.ns)),
                us(switch.ns),
                basis_points_text(limit)
            ));
        }
    }
    warnings
}

/// `0.050`: thousandths of a percent with all three decimals, as the
/// table's column lines up on them.
fn thousandths_text(thousandths: u64) -> String {
    format!("{}.{:03}", thousandths / 1000, thousandths % 1000)
}

/// `1`, `0.5`, `0.25`: the limit as the file would spell it.
fn basis_points_text(bp: u32) -> String {
    let text = format!("{}.{:02}", bp / 100, bp % 100);
    text.trim_end_matches('0').trim_end_matches('.').to_owned()
}

/// One line per memory region or device, whichever there are more of.
fn partition_rows(partition: &Partition) -> Vec<[String; 5]> {
    let memory: Vec<String> = partition.memory.iter().map(memory_cell).collect();
    let devices: Vec<String> = partition.devices.iter().map(device_cell).collect();
    let lines = memory.len().max(devices.len()).max(1);
    (0..lines)
        .map(|line| {
            let first = line == 0;
            [
                if first { partition.name.clone() } else { String::new() },
                if first { criticality(partition.criticality).into() } else { String::new() },
                if first { vcpus(&partition.vcpus) } else { String::new() },
                memory.get(line).cloned().unwrap_or_default(),
                devices.get(line).cloned().unwrap_or_else(|| if first { "-".into() } else { String::new() }),
            ]
        })
        .collect()
}

fn table<R: AsRef<[String]>>(rows: &[R]) -> String {
    let mut widths = vec![0usize; rows.iter().map(|row| row.as_ref().len()).max().unwrap_or(0)];
    for row in rows {
        for (width, cell) in widths.iter_mut().zip(row.as_ref()) {
            *width = (*width).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    for row in rows {
        let cells: Vec<String> =
            row.as_ref().iter().zip(&widths).map(|(cell, &width)| format!("{cell:<width$}")).collect();
        out.push_str(cells.join("  ").trim_end());
        out.push('\n');
    }
    out
}

fn criticality(criticality: Criticality) -> &'static str {
    match criticality {
        Criticality::High => "high",
        Criticality::Medium => "medium",
        Criticality::Low => "low",
    }
}

fn vcpus(pcpus: &[u32]) -> String {
    let pairs: Vec<String> = pcpus.iter().enumerate().map(|(vcpu, pcpu)| format!("{vcpu}->{pcpu}")).collect();
    pairs.join(" ")
}

fn memory_cell(region: &MemoryRegion) -> String {
    let identity = if region.identity { " identity" } else { "" };
    format!("{:#010x} -> {:#010x} {:>4} {}{identity}", region.ipa, region.pa, size(region.size), perms(region.perms))
}

fn device_cell(device: &Device) -> String {
    let interrupts: Vec<String> = device.interrupts.iter().map(interrupt).collect();
    let irqs = if interrupts.is_empty() { String::new() } else { format!(" irq {}", interrupts.join(",")) };
    format!("{} {:#010x} -> {:#010x} {}{irqs}", device.name, device.ipa, device.pa, size(device.size))
}

/// vCPU 0 is the default and goes unsaid, as in the file.
fn interrupt(interrupt: &Interrupt) -> String {
    match interrupt.vcpu {
        0 => interrupt.intid.to_string(),
        vcpu => format!("{}->vcpu{vcpu}", interrupt.intid),
    }
}

fn perms(perms: Perms) -> String {
    [(perms.read, 'r'), (perms.write, 'w'), (perms.exec, 'x')].iter().map(|&(on, c)| if on { c } else { '-' }).collect()
}

/// `16M`, `4K`, `1G` when exact, hex otherwise.
fn size(bytes: u64) -> String {
    const UNITS: [(u64, &str); 3] = [(1 << 30, "G"), (1 << 20, "M"), (1 << 10, "K")];
    UNITS
        .iter()
        .find(|(unit, _)| bytes != 0 && bytes & (unit - 1) == 0)
        .map_or_else(|| format!("{bytes:#x}"), |(unit, suffix)| format!("{}{suffix}", bytes / unit))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_read_like_the_configuration() {
        assert_eq!(size(16 << 20), "16M");
        assert_eq!(size(1 << 30), "1G");
        assert_eq!(size(0x1000), "4K");
        assert_eq!(size(0x1800), "6K");
        assert_eq!(size(0x180), "0x180");
        assert_eq!(size(0), "0x0");
    }

    #[test]
    fn percentages() {
        assert_eq!(thousandths_text(50), "0.050");
        assert_eq!(thousandths_text(123_456), "123.456");
        assert_eq!(basis_points_text(100), "1");
        assert_eq!(basis_points_text(50), "0.5");
        assert_eq!(basis_points_text(25), "0.25");
        assert_eq!(basis_points_text(1), "0.01");
        assert_eq!(basis_points_text(10_000), "100");
    }

    #[test]
    fn permissions_and_vcpus() {
        assert_eq!(perms(Perms::RW), "rw-");
        assert_eq!(vcpus(&[2, 3]), "0->2 1->3");
    }
}
