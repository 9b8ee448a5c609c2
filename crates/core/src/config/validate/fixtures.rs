//! The sample systems and the assertion the area tests share.

pub(super) use super::validate;
use crate::config::model::{
    Accelerator, Budget, Channel, ChannelKind, Criticality, CyclicCore, Delivery, Device, Fabric, Function, Health,
    Hypervisor, Interrupt, MemoryRegion, Partition, Perms, Plan, Platform, Prr, Range, Rights, Slot, System,
    VirtualDevice,
};
use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;

pub(super) const MIB: u64 = 1 << 20;

pub(super) fn region(ipa: u64, pa: u64) -> MemoryRegion {
    MemoryRegion { ipa, pa, size: 16 * MIB, perms: Perms::RWX, identity: false }
}

pub(super) fn partition(name: &str, vcpus: Vec<u32>, pa: u64) -> Partition {
    Partition {
        name: name.into(),
        criticality: Criticality::Low,
        priority: 64,
        vcpus,
        exclusive: false,
        interrupts: Delivery::Virtual,
        rights: Rights::default(),
        migrate: Vec::new(),
        budget: None,
        memory: vec![region(0x4000_0000, pa)],
        devices: Vec::new(),
        console: 0x0900_0000,
        bootargs: String::new(),
        health: Health::DEFAULT,
        accelerators: Vec::new(),
        max_added_response_us: None,
    }
}

pub(super) fn spi(intid: u32) -> Interrupt {
    Interrupt { intid, vcpu: 0 }
}

pub(super) fn gpio() -> Device {
    Device {
        name: "gpio".into(),
        compatible: vec!["arm,pl061".into()],
        ipa: 0x0903_0000,
        pa: 0x0903_0000,
        size: 0x1000,
        interrupts: vec![spi(39)],
    }
}

pub(crate) fn system() -> System {
    System {
        name: "test".into(),
        platform: Platform {
            board: crate::config::model::QEMU_VIRT.into(),
            cpus: 4,
            ram: Range::new(0x4000_0000, 1 << 30),
            console: Range::new(0x0900_0000, 0x1000),
            gicd: Range::new(0x0800_0000, 0x1_0000),
            gicr: Range::new(0x080a_0000, 4 * 0x2_0000),
        },
        hypervisor: Hypervisor {
            memory: Range::new(0x4000_0000, 32 * MIB),
            quantum_us: 1000,
            trace_events: 0,
            overhead_limit_bp: 100,
            hm_log_entries: 256,
            images: Range::new(0x7000_0000, 0x20_0000),
        },
        partitions: vec![partition("rtos", vec![1], 0x4200_0000), partition("gpos", vec![2, 3], 0x4400_0000)],
        plans: Vec::new(),
        channels: Vec::new(),
        fabric: None,
        timed_io: None,
    }
}

pub(super) fn slot(partition: usize, vcpu: u32, start_us: u64, duration_us: u64) -> Slot {
    Slot { partition, vcpu, start_us, duration_us }
}

pub(super) fn cyclic(cpu: u32, slots: Vec<Slot>) -> CyclicCore {
    CyclicCore { cpu, major_frame_us: 10_000, slots }
}

/// `system()` plus "control" on pCPU 2, and two plans that run pCPUs 2
/// and 3 cyclically: slot 0 of core 2 is control's, slot 1 gpos's.
pub(super) fn planned() -> System {
    let mut s = system();
    s.partitions.push(partition("control", vec![2], 0x4600_0000));
    let normal = Plan {
        name: "normal".into(),
        cores: vec![
            cyclic(2, vec![slot(2, 0, 0, 4_000), slot(1, 0, 4_000, 5_000)]),
            cyclic(3, vec![slot(1, 1, 0, 10_000)]),
        ],
    };
    let degraded = Plan {
        name: "degraded".into(),
        cores: vec![cyclic(3, vec![slot(1, 1, 0, 2_000)]), cyclic(2, vec![slot(2, 0, 5_000, 5_000)])],
    };
    s.plans = vec![normal, degraded];
    s
}

/// Asserts exactly one issue, at `path.field`, whose message contains `text`.
pub(super) fn expect_one(system: &System, path: &str, field: &str, text: &str) {
    let issues = validate(system);
    assert_eq!(issues.len(), 1, "{issues:#?}");
    assert_eq!((issues[0].path.as_str(), issues[0].field), (path, field), "{issues:#?}");
    assert!(issues[0].message.contains(text), "{:?} lacks {text:?}", issues[0].message);
}

pub(super) fn budget(time_us: u64, period_us: u64) -> Option<Budget> {
    Some(Budget { time_us, period_us })
}

/// `system()` with one channel of each kind between rtos (0) and gpos (1).
pub(super) fn linked() -> System {
    let mut s = system();
    s.channels = vec![
        Channel {
            name: "status".into(),
            kind: ChannelKind::Sampling { source: 0, destinations: vec![1], max_message: 64, refresh_us: 10_000 },
        },
        Channel {
            name: "commands".into(),
            kind: ChannelKind::Queuing { source: 1, destination: 0, max_message: 256, depth: 16 },
        },
        Channel {
            name: "frames".into(),
            kind: ChannelKind::SharedMemory {
                partitions: vec![0, 1],
                ipa: 0x5000_0000,
                pa: 0x4600_0000,
                size: 0x1_0000,
                read_only: vec![1],
                doorbell: Some(48),
            },
        },
    ];
    s
}

pub(super) fn shared(
    s: &mut System,
) -> (&mut Vec<usize>, &mut u64, &mut u64, &mut u64, &mut Vec<usize>, &mut Option<u32>) {
    let ChannelKind::SharedMemory { partitions, ipa, pa, size, read_only, doorbell } = &mut s.channels[2].kind else {
        unreachable!("linked() puts shared memory third")
    };
    (partitions, ipa, pa, size, read_only, doorbell)
}

/// Ker-ONE's fabric (section 6.1, Tables 5 and 6): four accelerators, then
/// three PRRs whose bitstreams take 231, 810 and 1,206 us at 128 MB/s.
pub(crate) fn ker_one_fabric() -> Fabric {
    let accelerator =
        |name: &str, function, frame_ns, preempt_ns| Accelerator { name: name.into(), function, frame_ns, preempt_ns };
    let prr = |name: &str, size, bitstream, hosts: &[usize]| Prr {
        name: name.into(),
        size,
        bitstream,
        hosts: hosts.to_vec(),
    };
    Fabric {
        memory: Range::new(0x4700_0000, 0x1_0000),
        bandwidth: 128_000_000,
        hold_us: 1_000,
        turn_us: 50,
        cpu: 0,
        prrs: vec![
            prr("prr1", 2, 29_568, &[0, 1]),
            prr("prr2", 8, 103_680, &[0, 1, 2]),
            prr("prr3", 13, 154_368, &[2, 3]),
        ],
        accelerators: vec![
            accelerator("qam16", Function::Qam16, 47_000, 47_000),
            accelerator("qam64", Function::Qam64, 31_000, 31_000),
            accelerator("fft512", Function::Fft512, 71_100, 24_100),
            accelerator("fft1024", Function::Fft1024, 90_600, 33_600),
        ],
    }
}

/// `system()` on Ker-ONE's fabric, with no virtual device yet.
pub(crate) fn fabric_system() -> System {
    System { fabric: Some(ker_one_fabric()), ..system() }
}

/// `fabric_system()` where rtos uses QAM-16 and gpos FFT-1024, each at its
/// default page and signals.
pub(super) fn accelerated() -> System {
    let mut s = fabric_system();
    let device = |accelerator: usize| VirtualDevice {
        accelerator,
        ipa: 0x0b00_0000 + 0x1000 * accelerator as u64,
        signals: [80, 81, 82],
        deadline_us: None,
    };
    s.partitions[0].accelerators = vec![device(0)];
    s.partitions[1].accelerators = vec![device(3)];
    s
}
