//! A network for the Linux partition: a virtio net device on QEMU's
//! user-mode network with a host port forwarded to the guest's ssh server.
//! Linux takes its address by DHCP and starts dropbear; the host's `ssh`
//! logs in over the forward with the key the guest build made, checks the
//! host key the guest printed on its console, runs commands and sends a
//! file in. Every assertion is on what Linux printed, on its console or
//! back over ssh.

mod common;

use common::linux::*;
use common::*;
use partita::guests;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// What the guest prints once dropbear runs, followed by its host key.
const SSHD: &str = "partita-linux: sshd port=22 hostkey=";

/// A port no one listens on now: the kernel's pick for a socket bound to
/// port 0, given back at once.
fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a free port");
    listener.local_addr().unwrap().port()
}

fn ssh_installed() -> bool {
    Command::new("ssh").arg("-V").stdout(Stdio::null()).stderr(Stdio::null()).status().is_ok_and(|s| s.success())
}

/// `ssh` with none of the user's own configuration, keys or known hosts:
/// only `key`, only the host key in `known_hosts`, never a prompt.
fn ssh(port: u16, key: &Path, known_hosts: &Path) -> Command {
    let mut ssh = Command::new("ssh");
    ssh.args(["-F", "/dev/null", "-p", &port.to_string(), "-i"])
        .arg(key)
        .arg("-o")
        .arg(format!("UserKnownHostsFile={}", known_hosts.display()))
        .args(["-o", "StrictHostKeyChecking=yes", "-o", "IdentitiesOnly=yes", "-o", "BatchMode=yes"])
        .args(["-o", "ConnectTimeout=20", "-o", "LogLevel=ERROR", "root@127.0.0.1"]);
    ssh
}

fn run(mut command: Command, input: &[u8]) -> Output {
    let mut child =
        command.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().expect("starting ssh");
    child.stdin.take().unwrap().write_all(input).expect("writing to ssh");
    child.wait_with_output().expect("ssh's output")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).trim().to_owned()
}

/// Logs in until the server answers: dropbear starts listening a moment
/// after the guest says it runs, and QEMU accepts the forward's connection
/// before the guest does. Status 255 is ssh's own failure; a command's is
/// another.
fn first_login(port: u16, key: &Path, known_hosts: &Path, linux: &Session) -> Output {
    let deadline = Instant::now() + Duration::from_secs(HANG_LIMIT);
    loop {
        let mut command = ssh(port, key, known_hosts);
        command.arg("uname -r");
        let output = run(command, b"");
        if output.status.code() != Some(255) {
            return output;
        }
        assert!(
            Instant::now() < deadline,
            "ssh never got in: {}\nlinux.log ends:\n{}",
            text(&output.stderr),
            tail(&linux.text(), 30)
        );
        std::thread::sleep(Duration::from_secs(1));
    }
}

#[test]
fn ssh_over_a_forwarded_port_runs_commands_in_the_linux_partition() {
    if !ssh_installed() {
        eprintln!("ssh is not installed (Debian package openssh-client, which ./partita installs): skipping");
        return;
    }
    let port = free_port();
    let forward = format!("tcp:{port}:22");
    let config = machine([rtos(3000), linux("console=hvc0 earlycon").virtio_net(&[&forward])]);
    let mut linux = Session::start("linux-net", config, None);
    let marker = linux.wait_for(MARKER, 1, Duration::from_secs(HANG_LIMIT));
    let release = marker.lines().find_map(|l| l.strip_prefix(MARKER)).and_then(|l| l.split(' ').next()).unwrap();

    // DHCP from QEMU's user-mode network, then the server and its key.
    let console = linux.wait_for(SSHD, 1, Duration::from_secs(HANG_LIMIT));
    let lease = console.lines().find(|l| l.starts_with("partita-linux: net ")).expect("no net line");
    assert_eq!(lease, "partita-linux: net eth0 10.0.2.15/24 gateway=10.0.2.2", "{}", tail(&console, 20));
    let host_key = console.lines().find_map(|l| l.strip_prefix(SSHD)).unwrap().trim();
    assert!(host_key.starts_with("ssh-ed25519 "), "{host_key}");

    // The host key is the one the guest printed, or ssh refuses to go on.
    let out = out_dir("linux-net");
    let known_hosts = out.join("known_hosts");
    std::fs::write(&known_hosts, format!("[127.0.0.1]:{port} {host_key}\n")).unwrap();
    let key = guests::image("linux/ssh/id_ed25519");
    let login = first_login(port, &key, &known_hosts, &linux);
    assert!(login.status.success(), "ssh uname -r: {}", text(&login.stderr));
    assert_eq!(text(&login.stdout), release, "the kernel that printed the marker answers over ssh");

    // The same Linux as the console's: what the shell writes, ssh reads.
    linux.run("dmesg -n 1");
    linux.run("echo typed-on-the-console >/tmp/from-console");
    let mut command = ssh(port, &key, &known_hosts);
    command.arg("cat /tmp/from-console; id -u; cat /sys/class/net/eth0/operstate; grep -c ^processor /proc/cpuinfo");
    let output = run(command, b"");
    assert!(output.status.success(), "{}", text(&output.stderr));
    assert_eq!(text(&output.stdout), "typed-on-the-console\n0\nup\n2");

    // A file sent in on ssh's standard input arrives whole.
    let file: Vec<u8> = (0..200_000u32).map(|i| b'a' + (i % 26) as u8).collect();
    let mut command = ssh(port, &key, &known_hosts);
    command.arg("cat >/tmp/sent && wc -c </tmp/sent && md5sum </tmp/sent");
    let output = run(command, &file);
    assert!(output.status.success(), "{}", text(&output.stderr));
    let md5 = Command::new("md5sum").stdin(Stdio::piped()).stdout(Stdio::piped()).spawn().and_then(|mut md5sum| {
        md5sum.stdin.take().unwrap().write_all(&file)?;
        md5sum.wait_with_output()
    });
    let md5 = text(&md5.expect("the host's md5sum").stdout);
    assert_eq!(text(&output.stdout), format!("200000\n{md5}"));
    assert_eq!(linux.run("wc -c </tmp/sent"), "200000", "the console sees the file ssh wrote");

    // As documented: the build's ssh configuration and nothing else.
    let config = guests::image("linux/ssh/config");
    let documented = Command::new("ssh")
        .arg("-F")
        .arg(&config)
        .args(["-o", "BatchMode=yes", "-p", &port.to_string(), "linux", "echo documented-login"])
        .stdin(Stdio::null())
        .output()
        .expect("ssh");
    assert_eq!(text(&documented.stdout), "documented-login", "{}", text(&documented.stderr));

    // Any other key is refused: root has no password and the server takes none.
    let stranger = stranger_key(&out);
    let mut command = ssh(port, &stranger, &known_hosts);
    command.arg("echo let-in");
    let refused = run(command, b"");
    assert_eq!(refused.status.code(), Some(255), "a stranger's key got in: {}", text(&refused.stdout));
    assert!(text(&refused.stderr).contains("Permission denied"), "{}", text(&refused.stderr));

    linux.typist.type_to("linux", "poweroff -f\n");
    let boot = linux.finish();
    assert_powered_off(&boot);
    assert!(!boot.hypervisor.contains("does not own"), "{}", boot.hypervisor);
    assert_eq!(timer_counts(boot.log("rtos")).0, 3000, "the RTOS kept every tick");
    let hm = hm_log("linux-net");
    assert!(hm.trim().is_empty(), "health events:\n{hm}");
}

/// A key the guest was never given.
fn stranger_key(out: &Path) -> PathBuf {
    let key = out.join("stranger_ed25519");
    let _ = std::fs::remove_file(&key);
    let _ = std::fs::remove_file(key.with_extension("pub"));
    let status = Command::new("ssh-keygen")
        .args(["-q", "-t", "ed25519", "-N", "", "-f"])
        .arg(&key)
        .stdin(Stdio::null())
        .status()
        .expect("ssh-keygen");
    assert!(status.success());
    key
}
