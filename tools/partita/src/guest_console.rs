//! Consoles that a partition's own drivers serve: QEMU virtio consoles.
//!
//! QEMU offers each one as a Unix socket beside the logs. During a run the
//! supervisor is the socket's one client: what the guest writes goes to the
//! partition's log and the live view like the lines the hypervisor forwards,
//! and what a [`Typist`] holds (a test's commands, or the terminal's keys
//! when `partita run --attach` is given) goes to the guest.

use std::collections::VecDeque;
use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::Sender;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// QEMU creates its sockets before the machine starts; a socket that is
/// not there after this long will not come.
const CONNECT_LIMIT: Duration = Duration::from_secs(10);
const CONNECT_RETRY: Duration = Duration::from_millis(20);

/// One virtio console: the partition it belongs to and QEMU's socket.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GuestConsole {
    /// Index into `system.partitions`.
    pub partition: usize,
    pub socket: PathBuf,
}

/// A line one partition's console printed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GuestLine {
    pub partition: usize,
    pub text: String,
}

/// Bytes to type into one partition's console.
type Keystrokes = (String, Vec<u8>);

/// Bytes waiting to be typed into partitions' consoles, by partition name.
/// Clones share the queue, so a test can type while the run goes on, and
/// end the run when it is done with it.
#[derive(Clone, Debug, Default)]
pub struct Typist {
    queue: Arc<Mutex<VecDeque<Keystrokes>>>,
    hung_up: Arc<AtomicBool>,
}

impl Typist {
    /// Ends the run as Ctrl-C would, for this run alone: QEMU is stopped
    /// and the logs are kept.
    pub fn hang_up(&self) {
        self.hung_up.store(true, Ordering::SeqCst);
    }

    pub fn has_hung_up(&self) -> bool {
        self.hung_up.load(Ordering::SeqCst)
    }

    pub fn type_to(&self, partition: &str, bytes: impl AsRef<[u8]>) {
        self.lock().push_back((partition.to_owned(), bytes.as_ref().to_vec()));
    }

    fn take(&self) -> Vec<Keystrokes> {
        self.lock().drain(..).collect()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, VecDeque<Keystrokes>> {
        // A panicking writer leaves whole entries behind, never half of one.
        self.queue.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// Where the bytes of the attached partition's console are shown as they
/// come, prompts and escapes included, instead of as lines.
pub type RawView = Arc<Mutex<Option<usize>>>;

/// The supervisor's end of every guest console of a run.
pub struct Links {
    names: Vec<String>,
    writers: Vec<(usize, Arc<Mutex<Option<UnixStream>>>)>,
    readers: Vec<JoinHandle<()>>,
    stop: Arc<AtomicBool>,
    raw: RawView,
}

impl Links {
    /// Connects to each console as QEMU opens it, sending its lines to
    /// `lines`; `raw` names the partition whose bytes also go to stdout.
    pub fn open(consoles: &[GuestConsole], names: &[String], lines: Sender<GuestLine>, raw: RawView) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let mut writers = Vec::new();
        let mut readers = Vec::new();
        for console in consoles {
            let writer = Arc::new(Mutex::new(None));
            writers.push((console.partition, writer.clone()));
            let (console, lines, view, stop) = (console.clone(), lines.clone(), raw.clone(), stop.clone());
            readers.push(std::thread::spawn(move || follow_console(&console, &writer, &lines, &view, &stop)));
        }
        Self { names: names.to_vec(), writers, readers, stop, raw }
    }

    /// Writes what `typist` holds to the consoles it is meant for. Input for
    /// a console not yet connected waits in the queue.
    pub fn deliver(&self, typist: &Typist) {
        for (name, bytes) in typist.take() {
            let Some(index) = self.names.iter().position(|n| *n == name) else {
                eprintln!("warning: no partition {name:?} to type into");
                continue;
            };
            let Some((_, writer)) = self.writers.iter().find(|(p, _)| *p == index) else {
                eprintln!("warning: partition {name} has no virtio console to type into");
                continue;
            };
            let mut writer = writer.lock().unwrap_or_else(|p| p.into_inner());
            match writer.as_mut() {
                Some(stream) => {
                    if let Err(error) = stream.write_all(&bytes) {
                        eprintln!("warning: typing into {name}'s console: {error}");
                    }
                }
                None => typist.lock().push_front((name, bytes)),
            }
        }
    }

    /// The partitions that have a console to type into, in file order.
    pub fn partitions(&self) -> Vec<usize> {
        let mut parts: Vec<usize> = self.writers.iter().map(|(p, _)| *p).collect();
        parts.dedup();
        parts
    }

    pub fn raw_view(&self) -> RawView {
        self.raw.clone()
    }

    /// Waits for every reader to see its console close (QEMU has exited).
    pub fn close(self) {
        self.stop.store(true, Ordering::SeqCst);
        for (_, writer) in &self.writers {
            if let Some(stream) = writer.lock().unwrap_or_else(|p| p.into_inner()).as_ref() {
                let _ = stream.shutdown(std::net::Shutdown::Both);
            }
        }
        for reader in self.readers {
            let _ = reader.join();
        }
    }
}

fn follow_console(
    console: &GuestConsole,
    writer: &Mutex<Option<UnixStream>>,
    lines: &Sender<GuestLine>,
    raw: &RawView,
    stop: &AtomicBool,
) {
    let Some(stream) = connect(&console.socket, stop) else {
        if !stop.load(Ordering::SeqCst) {
            eprintln!("warning: no console at {}", console.socket.display());
        }
        return;
    };
    if let Ok(clone) = stream.try_clone() {
        *writer.lock().unwrap_or_else(|p| p.into_inner()) = Some(clone);
    }
    let mut splitter = LineSplitter::default();
    let mut stream = stream;
    let mut buffer = [0u8; 4096];
    loop {
        let n = match stream.read(&mut buffer) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => break,
        };
        let bytes = &buffer[..n];
        if *raw.lock().unwrap_or_else(|p| p.into_inner()) == Some(console.partition) {
            let mut out = std::io::stdout().lock();
            let _ = out.write_all(bytes);
            let _ = out.flush();
        }
        for text in splitter.feed(bytes) {
            let _ = lines.send(GuestLine { partition: console.partition, text });
        }
    }
    if let Some(text) = splitter.rest() {
        let _ = lines.send(GuestLine { partition: console.partition, text });
    }
}

fn connect(socket: &Path, stop: &AtomicBool) -> Option<UnixStream> {
    let deadline = Instant::now() + CONNECT_LIMIT;
    loop {
        if let Ok(stream) = UnixStream::connect(socket) {
            return Some(stream);
        }
        if stop.load(Ordering::SeqCst) || Instant::now() >= deadline {
            return None;
        }
        std::thread::sleep(CONNECT_RETRY);
    }
}

/// Cuts a byte stream into lines without `\r` or `\n`. Escapes stay: the
/// log keeps what the guest sent.
#[derive(Debug, Default)]
pub struct LineSplitter {
    pending: Vec<u8>,
}

impl LineSplitter {
    pub fn feed(&mut self, bytes: &[u8]) -> Vec<String> {
        self.pending.extend_from_slice(bytes);
        let mut lines = Vec::new();
        while let Some(end) = self.pending.iter().position(|&b| b == b'\n') {
            let line: Vec<u8> = self.pending.drain(..=end).collect();
            lines.push(clean(&line));
        }
        lines
    }

    /// What is left when the stream ends: a last line with no newline.
    pub fn rest(&mut self) -> Option<String> {
        (!self.pending.is_empty()).then(|| clean(&std::mem::take(&mut self.pending)))
    }
}

pub fn clean(line: &[u8]) -> String {
    String::from_utf8_lossy(line).chars().filter(|&c| c != '\r' && c != '\n').collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_cut_across_reads_and_a_last_one_is_kept() {
        let mut splitter = LineSplitter::default();
        assert_eq!(splitter.feed(b"partita-linux: in"), Vec::<String>::new());
        assert_eq!(splitter.feed(b"it\r\nnext\r\nprompt# "), ["partita-linux: init", "next"]);
        assert_eq!(splitter.rest().as_deref(), Some("prompt# "));
        assert_eq!(splitter.rest(), None);
    }

    #[test]
    fn typing_before_the_console_connects_waits() {
        let typist = Typist::default();
        typist.type_to("linux", "uname -a\n");
        let links = Links {
            names: vec!["linux".into()],
            writers: vec![(0, Arc::default())],
            readers: vec![],
            stop: Arc::default(),
            raw: RawView::default(),
        };
        links.deliver(&typist);
        assert_eq!(typist.take(), [("linux".to_string(), b"uname -a\n".to_vec())]);
    }
}
