//! `partita run --attach PARTITION`: the terminal's keys go to one
//! partition's virtio console, whose output then shows unchanged (prompts,
//! line editing, escapes), while every other partition keeps its lines in
//! the live view and every console still goes to its log.
//!
//! Keys are passed one by one (the terminal's own line editing and signals
//! are off, so Ctrl-C reaches the guest). Two keys stay with Partita:
//! Ctrl-] moves the keys to the next partition with a console, Ctrl-\ ends
//! the run as Ctrl-C does without `--attach`.

use crate::guest_console::{Links, RawView, Typist};
use nix::sys::termios::{self, InputFlags, LocalFlags, SetArg, Termios};
use std::io::{IsTerminal, Read, Write};

/// Ctrl-]: the next partition gets the keys.
pub const SWITCH_KEY: u8 = 0x1d;
/// Ctrl-\: the run ends.
pub const QUIT_KEY: u8 = 0x1c;

/// What the terminal's bytes mean.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Key {
    Text(Vec<u8>),
    Switch,
    Quit,
}

/// Splits what the terminal sent into text for the guest and Partita's keys.
pub fn keys(bytes: &[u8]) -> Vec<Key> {
    let mut keys = Vec::new();
    let mut text = Vec::new();
    for &byte in bytes {
        let key = match byte {
            SWITCH_KEY => Key::Switch,
            QUIT_KEY => Key::Quit,
            _ => {
                text.push(byte);
                continue;
            }
        };
        if !text.is_empty() {
            keys.push(Key::Text(std::mem::take(&mut text)));
        }
        keys.push(key);
    }
    if !text.is_empty() {
        keys.push(Key::Text(text));
    }
    keys
}

/// The partition after `current` among `attachable`, wrapping around.
pub fn next(attachable: &[usize], current: usize) -> usize {
    let at = attachable.iter().position(|&p| p == current).map_or(0, |i| i + 1);
    attachable[at % attachable.len()]
}

/// The terminal while attached: its settings come back when this drops,
/// on every way out of the run.
pub struct Terminal {
    saved: Option<Termios>,
}

impl Terminal {
    /// Starts passing stdin to partition `first`'s console (a name the
    /// command line has checked). Stdin may also be a pipe: its bytes are
    /// typed the same way.
    pub fn start(first: &str, names: &[String], links: &Links, typist: &Typist) -> Terminal {
        let attachable = links.partitions();
        let Some(first) = names.iter().position(|n| n == first).filter(|i| attachable.contains(i)) else {
            eprintln!("warning: {first} has no virtio console; the terminal stays detached");
            return Terminal { saved: None };
        };
        let view = links.raw_view();
        *view.lock().unwrap_or_else(|p| p.into_inner()) = Some(first);
        let saved = keys_one_by_one();
        announce(&names[first]);
        let (names, typist) = (names.to_vec(), typist.clone());
        std::thread::spawn(move || pass_keys(&names, &attachable, &view, &typist));
        Terminal { saved }
    }
}

impl Drop for Terminal {
    fn drop(&mut self) {
        if let Some(saved) = &self.saved {
            let _ = termios::tcsetattr(std::io::stdin(), SetArg::TCSANOW, saved);
        }
    }
}

/// Turns off line editing, echo and signal keys; output processing stays
/// on so that the live view's lines still start at the left margin.
fn keys_one_by_one() -> Option<Termios> {
    let stdin = std::io::stdin();
    if !stdin.is_terminal() {
        return None;
    }
    let saved = termios::tcgetattr(&stdin).ok()?;
    let mut raw = saved.clone();
    raw.local_flags.remove(LocalFlags::ICANON | LocalFlags::ECHO | LocalFlags::ISIG | LocalFlags::IEXTEN);
    raw.input_flags.remove(InputFlags::IXON | InputFlags::ICRNL);
    termios::tcsetattr(&stdin, SetArg::TCSANOW, &raw).ok()?;
    Some(saved)
}

fn pass_keys(names: &[String], attachable: &[usize], view: &RawView, typist: &Typist) {
    let mut stdin = std::io::stdin().lock();
    let mut buffer = [0u8; 256];
    while let Ok(n) = stdin.read(&mut buffer) {
        if n == 0 {
            return;
        }
        for key in keys(&buffer[..n]) {
            let current = view.lock().unwrap_or_else(|p| p.into_inner()).unwrap_or(attachable[0]);
            match key {
                Key::Text(text) => typist.type_to(&names[current], text),
                Key::Switch => {
                    let to = next(attachable, current);
                    *view.lock().unwrap_or_else(|p| p.into_inner()) = Some(to);
                    announce(&names[to]);
                }
                Key::Quit => crate::run::request_stop(),
            }
        }
    }
}

fn announce(name: &str) {
    let mut err = std::io::stderr().lock();
    let _ = write!(err, "\r\n[keys go to {name}: Ctrl-] next console, Ctrl-\\ stop]\r\n");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn partitas_keys_are_taken_out_of_the_text() {
        assert_eq!(keys(b"ls\r"), [Key::Text(b"ls\r".to_vec())]);
        assert_eq!(
            keys(b"a\x1db\x1c\x03"),
            [Key::Text(b"a".to_vec()), Key::Switch, Key::Text(b"b".to_vec()), Key::Quit, Key::Text(vec![3])]
        );
        assert_eq!(keys(b""), []);
    }

    #[test]
    fn switching_cycles_through_the_consoles() {
        assert_eq!(next(&[1, 3], 1), 3);
        assert_eq!(next(&[1, 3], 3), 1);
        assert_eq!(next(&[2], 2), 2);
    }
}
