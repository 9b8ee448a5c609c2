//! A small client for QEMU's machine protocol (QMP) on a Unix socket.
//!
//! `partita run` uses it to learn that the machine powered off (the
//! `SHUTDOWN` event), to copy guest memory out of a stopped machine and to
//! quit QEMU. One thread reads the socket and forwards every message, so
//! each wait here is a channel wait with a time limit: a QEMU that stops
//! answering costs a timeout, never a hang.

use anyhow::{anyhow, bail, Context, Result};
use serde_json::{json, Value};
use std::collections::VecDeque;
use std::io::{ErrorKind, Read, Write};
use std::net::Shutdown;
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Time limit of an ordinary command.
pub const REPLY_TIMEOUT: Duration = Duration::from_secs(5);
/// `pmemsave` writes the whole range before it answers.
pub const SAVE_TIMEOUT: Duration = Duration::from_secs(60);

/// One message from QEMU.
#[derive(Clone, Debug, PartialEq)]
enum Message {
    Reply(Value),
    Failure(String),
    Event(String),
    Other,
}

pub struct Qmp {
    writer: UnixStream,
    messages: Receiver<Message>,
    reader: Option<JoinHandle<()>>,
    events: VecDeque<String>,
}

impl Qmp {
    /// Connects to an existing socket, reads the greeting and leaves the
    /// capabilities negotiation, so that commands are accepted.
    pub fn connect(path: &Path, timeout: Duration) -> Result<Qmp> {
        let stream = UnixStream::connect(path).with_context(|| format!("cannot connect to {}", path.display()))?;
        Self::over(stream, timeout)
    }

    /// Like [`Qmp::connect`], retrying while QEMU has not created the socket
    /// yet; gives up at `deadline` or as soon as `gone` says QEMU exited.
    pub fn connect_when_ready(path: &Path, deadline: Instant, mut gone: impl FnMut() -> bool) -> Result<Qmp> {
        loop {
            match UnixStream::connect(path) {
                Ok(stream) => return Self::over(stream, REPLY_TIMEOUT),
                Err(error) if Instant::now() >= deadline || gone() => {
                    return Err(error).with_context(|| format!("cannot connect to {}", path.display()))
                }
                Err(_) => std::thread::sleep(Duration::from_millis(20)),
            }
        }
    }

    fn over(stream: UnixStream, timeout: Duration) -> Result<Qmp> {
        let source = stream.try_clone().context("cannot share the QMP socket")?;
        let (tx, messages) = mpsc::channel();
        let reader = std::thread::spawn(move || read_messages(source, |m| tx.send(m).is_ok()));
        let mut qmp = Qmp { writer: stream, messages, reader: Some(reader), events: VecDeque::new() };
        qmp.greeting(timeout)?;
        qmp.execute("qmp_capabilities", None, timeout)?;
        Ok(qmp)
    }

    fn greeting(&mut self, timeout: Duration) -> Result<()> {
        match self.messages.recv_timeout(timeout) {
            Ok(Message::Other) => Ok(()),
            Ok(other) => bail!("QMP: unexpected greeting {other:?}"),
            Err(RecvTimeoutError::Timeout) => bail!("QMP: no greeting within {timeout:?}"),
            Err(RecvTimeoutError::Disconnected) => bail!("QMP: the connection closed before the greeting"),
        }
    }

    /// Runs one command and returns its `return` value. Events that arrive
    /// meanwhile are kept for [`Qmp::take_event`].
    pub fn execute(&mut self, command: &str, arguments: Option<Value>, timeout: Duration) -> Result<Value> {
        match self.send(command, arguments) {
            Err(error) if is_hang_up(&error) => bail!("QMP: the connection closed before `{command}`"),
            other => other.with_context(|| format!("QMP: cannot send `{command}`"))?,
        }
        self.reply(command, timeout)?.ok_or_else(|| anyhow!("QMP: the connection closed during `{command}`"))
    }

    fn send(&mut self, command: &str, arguments: Option<Value>) -> std::io::Result<()> {
        let mut request = json!({ "execute": command });
        if let Some(arguments) = arguments {
            request["arguments"] = arguments;
        }
        let mut line = request.to_string();
        line.push('\n');
        self.writer.write_all(line.as_bytes())
    }

    /// The answer to the command just sent; `None` when the connection closed first.
    fn reply(&mut self, command: &str, timeout: Duration) -> Result<Option<Value>> {
        let deadline = Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.messages.recv_timeout(left) {
                Ok(Message::Reply(value)) => return Ok(Some(value)),
                Ok(Message::Failure(text)) => bail!("QMP: `{command}` failed: {text}"),
                Ok(Message::Event(name)) => self.events.push_back(name),
                Ok(Message::Other) => {}
                Err(RecvTimeoutError::Timeout) => bail!("QMP: no answer to `{command}` within {timeout:?}"),
                Err(RecvTimeoutError::Disconnected) => return Ok(None),
            }
        }
    }

    /// Whether the event `name` has arrived; never waits. Removes it.
    pub fn take_event(&mut self, name: &str) -> bool {
        while let Ok(message) = self.messages.try_recv() {
            if let Message::Event(event) = message {
                self.events.push_back(event);
            }
        }
        let found = self.events.iter().position(|event| event == name);
        found.map(|at| self.events.remove(at)).is_some()
    }

    /// Pauses every vCPU.
    pub fn stop(&mut self) -> Result<()> {
        self.execute("stop", None, REPLY_TIMEOUT).map(drop)
    }

    /// Writes `size` bytes of guest-physical memory at `address` to `file`
    /// (QEMU opens it, so it should be an absolute path).
    pub fn pmemsave(&mut self, address: u64, size: u64, file: &Path) -> Result<()> {
        let filename = file.to_str().ok_or_else(|| anyhow!("QMP: {} is not UTF-8", file.display()))?;
        let arguments = json!({ "val": address, "size": size, "filename": filename });
        self.execute("pmemsave", Some(arguments), SAVE_TIMEOUT).map(drop)
    }

    /// Asks QEMU to exit. It may close the socket before or after answering,
    /// so a closed connection counts as success.
    pub fn quit(&mut self) -> Result<()> {
        match self.send("quit", None) {
            Err(error) if is_hang_up(&error) => Ok(()),
            Err(error) => Err(error).context("QMP: cannot send `quit`"),
            Ok(()) => self.reply("quit", REPLY_TIMEOUT).map(drop),
        }
    }

    /// Makes a guest power-off pause the machine (as `-no-shutdown` does),
    /// so that its memory can still be read.
    pub fn pause_on_shutdown(&mut self) -> Result<()> {
        self.execute("set-action", Some(json!({ "shutdown": "pause" })), REPLY_TIMEOUT).map(drop)
    }
}

impl Drop for Qmp {
    /// Shutting the socket down wakes the reader thread, whatever QEMU does.
    fn drop(&mut self) {
        let _ = self.writer.shutdown(Shutdown::Both);
        if let Some(reader) = self.reader.take() {
            let _ = reader.join();
        }
    }
}

fn is_hang_up(error: &std::io::Error) -> bool {
    matches!(error.kind(), ErrorKind::BrokenPipe | ErrorKind::ConnectionReset | ErrorKind::NotConnected)
}

/// Splits the stream into JSON lines and hands each one on until the
/// stream ends or `deliver` refuses.
fn read_messages(mut stream: UnixStream, mut deliver: impl FnMut(Message) -> bool) {
    let mut pending = Vec::new();
    let mut buffer = [0u8; 4096];
    loop {
        let n = match stream.read(&mut buffer) {
            Ok(0) => return,
            Ok(n) => n,
            Err(error) if error.kind() == ErrorKind::Interrupted => continue,
            Err(_) => return,
        };
        pending.extend_from_slice(&buffer[..n]);
        while let Some(end) = pending.iter().position(|&b| b == b'\n') {
            let line: Vec<u8> = pending.drain(..=end).collect();
            if !line.iter().all(u8::is_ascii_whitespace) && !deliver(classify(&line)) {
                return;
            }
        }
    }
}

fn classify(line: &[u8]) -> Message {
    let Ok(value) = serde_json::from_slice::<Value>(line) else {
        return Message::Other;
    };
    if let Some(reply) = value.get("return") {
        return Message::Reply(reply.clone());
    }
    if let Some(error) = value.get("error") {
        let text = error.get("desc").and_then(Value::as_str).unwrap_or("unknown error");
        return Message::Failure(text.to_string());
    }
    match value.get("event").and_then(Value::as_str) {
        Some(name) => Message::Event(name.to_string()),
        None => Message::Other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_are_told_apart() {
        assert_eq!(classify(br#"{"return": {}}"#), Message::Reply(json!({})));
        assert_eq!(
            classify(br#"{"error": {"class": "GenericError", "desc": "no such file"}}"#),
            Message::Failure("no such file".into())
        );
        let event =
            br#"{"timestamp": {"seconds": 1, "microseconds": 2}, "event": "SHUTDOWN", "data": {"guest": true}}"#;
        assert_eq!(classify(event), Message::Event("SHUTDOWN".into()));
        assert_eq!(classify(br#"{"QMP": {"version": {}}}"#), Message::Other);
        assert_eq!(classify(b"not json"), Message::Other);
    }
}
