//! The passthrough devices of docs/configuration.md's examples, under an
//! unmodified Linux: QEMU `virt`'s PL031 RTC and PL061 GPIO, given to the
//! Linux partition as `[[partition.device]]`. Each must probe with its
//! stock driver, which needs the AMBA clock Partita adds to primecell
//! nodes, and work: the RTC's time and its alarm interrupt, a GPIO line's
//! value. Every assertion is on what Linux printed.

mod common;

use common::linux::*;
use common::*;
use partita::config::raw::{RawDevice, RawPartition};
use partita::paths;
use std::process::Command;
use std::time::Duration;

/// QEMU `virt`'s PL031 and its interrupt (SPI 2).
const RTC_BASE: u64 = 0x0901_0000;
const RTC_INTID: u32 = 34;
/// QEMU `virt`'s PL061, as docs/configuration.md's example gives it.
const GPIO_BASE: u64 = 0x0903_0000;
const GPIO_INTID: u32 = 39;

fn devices(linux: RawPartition) -> RawPartition {
    let rtc = RawDevice::new("rtc", RTC_BASE, 0x1000, &["arm,pl031", "arm,primecell"]).interrupts(&[RTC_INTID]);
    let gpio = RawDevice::new("gpio", GPIO_BASE, 0x1000, &["arm,pl061", "arm,primecell"]).interrupts(&[GPIO_INTID]);
    linux.device(rtc).device(gpio)
}

#[test]
fn the_documented_passthrough_devices_probe_and_work_under_linux() {
    let config = machine([rtos(3000), devices(linux("console=hvc0 earlycon"))]);
    let mut linux = Session::start("linux-devices", config, None);
    linux.wait_for(MARKER, 1, Duration::from_secs(HANG_LIMIT));
    linux.run("dmesg -n 1");

    // The stock drivers bound to the devices of the partition's tree.
    let rtc = linux.run("ls /sys/bus/amba/drivers/rtc-pl031/");
    assert!(rtc.contains("9010000.rtc"), "the PL031 did not probe:\n{rtc}\n{}", linux.run("dmesg | tail -40"));
    let gpio = linux.run("ls /sys/bus/amba/drivers/pl061_gpio/");
    assert!(gpio.contains("9030000.gpio"), "the PL061 did not probe:\n{gpio}\n{}", linux.run("dmesg | tail -40"));

    // The RTC counts the host's time: well after 2020.
    let since_epoch: u64 = linux.run("cat /sys/class/rtc/rtc0/since_epoch").parse().expect("seconds");
    assert!(since_epoch > 1_577_836_800, "RTC time {since_epoch}");

    // Its alarm is its interrupt: it fires once, through Partita.
    let before = interrupt_count(&linux.run("cat /proc/interrupts"), RTC_INTID);
    linux.run("echo 0 >/sys/class/rtc/rtc0/wakealarm; echo +2 >/sys/class/rtc/rtc0/wakealarm; sleep 4");
    let after = interrupt_count(&linux.run("cat /proc/interrupts"), RTC_INTID);
    assert!(after > before, "the RTC's alarm interrupt did not come: {before} then {after}");
    assert_eq!(linux.run("cat /sys/class/rtc/rtc0/wakealarm"), "", "the alarm is spent once it fired");

    // A GPIO line of the PL061, read through the sysfs interface.
    let chip = linux.run("grep -l 9030000.gpio /sys/class/gpio/gpiochip*/label");
    let chip = chip.trim_end_matches("/label");
    assert!(chip.starts_with("/sys/class/gpio/gpiochip"), "no gpiochip for the PL061: {chip}");
    assert_eq!(linux.run(&format!("cat {chip}/ngpio")), "8");
    let line = linux.run(&format!("echo $(($(cat {chip}/base) + 0))"));
    let value = linux.run(&format!("echo {line} >/sys/class/gpio/export && cat /sys/class/gpio/gpio{line}/value"));
    assert!(value == "0" || value == "1", "reading GPIO {line}: {value}");

    linux.typist.type_to("linux", "poweroff -f\n");
    let boot = linux.finish();
    assert!(!boot.hypervisor.contains("does not own"), "{}", boot.hypervisor);
    let hm = hm_log("linux-devices");
    assert!(hm.trim().is_empty(), "health events:\n{hm}");
}

/// The fenced block of `language` in `doc` that contains `needle`.
fn fenced<'a>(doc: &'a str, language: &str, needle: &str) -> &'a str {
    let open = format!("```{language}\n");
    doc.split(open.as_str())
        .skip(1)
        .map(|rest| rest.split("```").next().unwrap())
        .find(|block| block.contains(needle))
        .unwrap_or_else(|| panic!("no {language} block with {needle:?}"))
}

/// docs/foreign-kernel.md followed as written (and with it the kernel
/// example of docs/configuration.md, the same partition), in a scratch folder that
/// stands for the repository's top (its `guests` is the real one): the
/// make line of step 2 with the kernel package the shipped guest
/// downloaded, step 3's configuration file, and step 4's shell, typed into.
#[test]
fn the_docs_foreign_kernel_example_gives_a_shell_as_written() {
    let doc = std::fs::read_to_string(paths::source().join("docs/foreign-kernel.md")).unwrap();
    let make = fenced(&doc, "sh", "make -C guests/linux boot").trim();
    let config = fenced(&doc, "toml", "[[partition]]");
    let reference = std::fs::read_to_string(paths::source().join("docs/configuration.md")).unwrap();
    let example = fenced(&reference, "toml", "kernel = ");
    assert!(config.contains(example), "docs/configuration.md's kernel example is not this one's partition:\n{example}");

    let top = paths::scratch("foreign-kernel");
    let _ = std::fs::remove_dir_all(&top);
    std::fs::create_dir_all(&top).unwrap();
    std::os::unix::fs::symlink(paths::source().join("guests"), top.join("guests")).unwrap();
    let debs = linux_image("debs");
    let deb = std::fs::read_dir(&debs)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.file_name().unwrap().to_string_lossy().starts_with("linux-image-"))
        .expect("the shipped Linux guest's kernel package");
    // Step 1 leaves the package's path in $deb; the cache spares a download.
    let made =
        Command::new("bash").current_dir(&top).env("deb", &deb).env("DEBS", &debs).args(["-c", make]).output().unwrap();
    assert!(made.status.success(), "{make}:\n{}", String::from_utf8_lossy(&made.stderr));
    for made in ["Image", "initramfs.cpio"] {
        assert!(top.join("my-linux/linux").join(made).is_file(), "{make} made no {made}");
    }
    let path = top.join("my-linux.toml");
    std::fs::write(&path, config).unwrap();

    let mut linux = Session::start_file("foreign-kernel", &path);
    let first = linux.wait_for(MARKER, 1, Duration::from_secs(HANG_LIMIT));
    assert!(first.contains("cpus=2"), "{}", tail(&first, 20));
    linux.run("dmesg -n 1");
    assert!(linux.run("uname -r").ends_with("-arm64"));
    assert_eq!(linux.run("echo typed into hvc0 | tr a-z A-Z"), "TYPED INTO HVC0");
    // Step 4: `poweroff` powers the partition off, and the run ends with it.
    linux.typist.type_to("linux", "poweroff\n");
    let boot = linux.finish();
    assert_powered_off(&boot);
}
