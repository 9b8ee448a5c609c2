//! Vectors for `hardware/prr_monitor.v`, answered by the core's
//! [`search`] and [`Waiting`]: a fabric of random PRRs (sizes that tie
//! included), searches while descriptors change under them, every PRR
//! busy, the waiting list filled past its end, served in order and
//! forgotten by partition.
//!
//! The register map is the one `docs/hardware.md` documents; the constants
//! below are its Rust spelling.

use super::vectors::{Rng, Vectors, OKAY, SLVERR};
use partita_core::fabric::monitor::{
    search, Client, Compatible, Descriptor, Method, Request, Solution, Waiting, MAX_PRRS,
};
use partita_core::fabric::prr::PrrState;

/// Cycle-count tags, in the order of [`TAGS`].
pub mod tag {
    pub const SETUP: u8 = 0;
    pub const SEARCH: u8 = 1;
    pub const PUSH: u8 = 2;
    pub const SOLVE_NEXT: u8 = 3;
    pub const FORGET: u8 = 4;
    pub const LIST: u8 = 5;
}

pub const TAGS: &[&str] = &["register write", "search", "push", "solve next", "forget", "list read"];

/// Register addresses.
pub mod addr {
    /// DESC of PRR p at DESC + 8 * p, its SIZE 4 bytes on.
    pub const DESC: u32 = 0x000;
    pub const SIZE: u32 = 0x004;
    /// COMPAT of accelerator a at COMPAT + 4 * a.
    pub const COMPAT: u32 = 0x200;
    pub const COUNT: u32 = 0x400;
    pub const REQUEST: u32 = 0x404;
    pub const SEARCH: u32 = 0x408;
    pub const PUSH: u32 = 0x40c;
    pub const SOLVE_NEXT: u32 = 0x410;
    pub const FORGET: u32 = 0x414;
    pub const LEN: u32 = 0x418;
    /// Waiting entry i at WAITING + 4 * i.
    pub const WAITING: u32 = 0x600;
}

/// SOLVE_NEXT when no waiting request can be served.
pub const NOTHING: u32 = 0xc000_0000;
/// Rows of the RTL's compatibility table.
pub const ACCELS: usize = 16;

/// DESC: what the search needs of a descriptor.
pub fn desc(d: &Descriptor) -> u32 {
    let loaded = d.loaded.map_or(0, |a| 1 << 3 | u32::from(a) << 8);
    let client = d.client.map_or(0, |c| 1 << 4 | u32::from(c.priority) << 16);
    d.state as u32 | loaded | client
}

/// REQUEST and PUSH: the request in one word.
pub fn request_word(r: &Request) -> u32 {
    u32::from_le_bytes([r.client.partition, r.client.device, r.client.priority, r.accelerator])
}

/// SEARCH and SOLVE_NEXT: a solution in one word.
pub fn solution_word(s: &Solution) -> u32 {
    let (method, prr) = match s.method {
        Method::Unavailable => (0, 0),
        Method::Assign(p) => (1, p as u32),
        Method::Preempt(p) => (2, p as u32),
    };
    let who = u32::from(s.request.client.partition) | u32::from(s.request.client.device) << 8;
    method << 30 | u32::from(s.reconfig) << 29 | prr << 24 | u32::from(s.request.accelerator) << 16 | who
}

struct Generator<const W: usize> {
    prrs: Vec<Descriptor>,
    compatible: [Compatible; ACCELS],
    waiting: Waiting<W>,
    rng: Rng,
    vectors: Vectors,
}

impl<const W: usize> Generator<W> {
    fn compatible(&self, accelerator: u8) -> Compatible {
        self.compatible.get(usize::from(accelerator)).copied().unwrap_or(0)
    }

    /// Priorities from a few levels, so equal ones meet often.
    fn priority(&mut self) -> u8 {
        self.rng.pick(&[0, 10, 50, 50, 100, 200, 255])
    }

    /// An accelerator of the table, now and then one beyond it.
    fn accelerator(&mut self) -> u8 {
        if self.rng.chance(5) {
            ACCELS as u8 + self.rng.byte() % 8
        } else {
            (self.rng.below(6)) as u8
        }
    }

    fn request(&mut self) -> Request {
        let client =
            Client { partition: self.rng.below(4) as u8, device: self.rng.below(3) as u8, priority: self.priority() };
        Request { client, accelerator: self.accelerator(), unfinished: false }
    }

    fn descriptor(&mut self) -> Descriptor {
        let state = PrrState::from_u8(self.rng.below(6) as u8);
        let loaded = self.rng.chance(60).then(|| self.rng.below(6) as u8);
        let holder = !matches!(state, PrrState::Idle) || self.rng.chance(10);
        let client = holder.then(|| Client { partition: 9, device: 0, priority: self.priority() });
        Descriptor { state, loaded, client, size: self.rng.pick(&[1, 2, 2, 8, 13, 40, u32::MAX]) }
    }

    fn set_prr(&mut self, p: usize, d: Descriptor) {
        self.prrs[p] = d;
        self.vectors.write(tag::SETUP, addr::DESC + 8 * p as u32, desc(&d), OKAY);
        self.vectors.write(tag::SETUP, addr::SIZE + 8 * p as u32, d.size, OKAY);
    }

    fn set_count(&mut self, count: usize) {
        self.prrs.resize(count, Descriptor { state: PrrState::Idle, loaded: None, client: None, size: 1 });
        for p in 0..count {
            let d = self.descriptor();
            self.set_prr(p, d);
        }
        self.vectors.write(tag::SETUP, addr::COUNT, count as u32, OKAY);
    }

    fn set_table(&mut self) {
        for a in 0..ACCELS {
            self.compatible[a] = self.rng.next_u64() as u32 & self.rng.next_u64() as u32;
            self.vectors.write(tag::SETUP, addr::COMPAT + 4 * a as u32, self.compatible[a], OKAY);
        }
    }

    fn search(&mut self, r: Request) {
        let solution = search(&r, &self.prrs, self.compatible(r.accelerator));
        self.vectors.write(tag::SETUP, addr::REQUEST, request_word(&r), OKAY);
        self.vectors.read(tag::SEARCH, addr::SEARCH, solution_word(&solution));
    }

    fn push(&mut self, r: Request) {
        let resp = if self.waiting.push(r).is_ok() { OKAY } else { SLVERR };
        self.vectors.write(tag::PUSH, addr::PUSH, request_word(&r), resp);
    }

    fn solve_next(&mut self) {
        let table = self.compatible;
        let compatible = |a: u8| table.get(usize::from(a)).copied().unwrap_or(0);
        let expected = self.waiting.solve_next(&self.prrs, compatible).map_or(NOTHING, |s| solution_word(&s));
        self.vectors.read(tag::SOLVE_NEXT, addr::SOLVE_NEXT, expected);
    }

    fn forget(&mut self, partition: u8) {
        self.waiting.forget(partition);
        self.vectors.write(tag::FORGET, addr::FORGET, u32::from(partition), OKAY);
    }

    /// The list as the RTL holds it: its length and every entry in order.
    fn check_list(&mut self) {
        self.vectors.read(tag::LIST, addr::LEN, self.waiting.len() as u32);
        let words: Vec<u32> = self.waiting.iter().map(request_word).collect();
        for (i, word) in words.into_iter().enumerate() {
            self.vectors.read(tag::LIST, addr::WAITING + 4 * i as u32, word);
        }
    }

    /// Every PRR busy: only a client of higher priority than some holder
    /// gets one, by preemption.
    fn all_busy(&mut self) {
        for p in 0..self.prrs.len() {
            let priority = self.priority();
            let client = Client { partition: 9, device: 0, priority };
            let d = Descriptor { state: PrrState::Busy, client: Some(client), ..self.prrs[p] };
            self.set_prr(p, d);
        }
        for _ in 0..20 {
            let r = self.request();
            self.search(r);
        }
    }

    /// More requests than the list holds, the same device again, and the
    /// list served until nothing more can be.
    fn fill_and_serve(&mut self) {
        for _ in 0..W + 4 {
            let r = self.request();
            self.push(r);
        }
        let again = *self.waiting.iter().next().expect("the list is full");
        self.push(again);
        self.check_list();
        for _ in 0..W + 1 {
            self.solve_next();
            let p = self.rng.below(self.prrs.len());
            let d = self.descriptor();
            self.set_prr(p, d);
        }
        self.check_list();
    }

    fn random(&mut self, ops: usize) {
        for _ in 0..ops {
            match self.rng.below(100) {
                0..=24 => {
                    let p = self.rng.below(self.prrs.len());
                    let d = self.descriptor();
                    self.set_prr(p, d);
                }
                25..=49 => {
                    let r = self.request();
                    self.search(r);
                }
                50..=69 => {
                    let r = self.request();
                    self.push(r);
                }
                70..=84 => self.solve_next(),
                85..=89 => {
                    let partition = self.rng.below(5) as u8;
                    self.forget(partition);
                }
                90..=97 => self.check_list(),
                _ => {
                    let count = 1 + self.rng.below(MAX_PRRS);
                    self.set_count(count);
                }
            }
        }
    }
}

/// The whole sequence for a waiting list of `W` entries: the edge cases,
/// then `random_ops` random operations from `seed`.
pub fn generate<const W: usize>(seed: u64, random_ops: usize) -> Vectors {
    const { assert!(W >= 1 && W <= 256, "the RTL's waiting list holds 1 to 256") };
    let mut g = Generator::<W> {
        prrs: Vec::new(),
        compatible: [0; ACCELS],
        waiting: Waiting::new(),
        rng: Rng::new(seed),
        vectors: Vectors::default(),
    };
    g.solve_next();
    let r = g.request();
    g.search(r);
    g.set_table();
    g.set_count(MAX_PRRS);
    g.check_list();
    g.all_busy();
    g.fill_and_serve();
    g.set_count(3);
    g.random(random_ops);
    g.set_count(MAX_PRRS);
    g.all_busy();
    g.random(random_ops);
    g.check_list();
    g.vectors
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_phases_reach_every_outcome() {
        let vectors = generate::<4>(3, 1500);
        let methods: Vec<u32> = vectors
            .lines
            .iter()
            .filter(|v| v.tag == tag::SEARCH || v.tag == tag::SOLVE_NEXT)
            .map(|v| v.expected >> 29)
            .collect();
        for (method_reconfig, what) in
            [(0, "unavailable"), (2, "assign"), (3, "assign+reconfig"), (4, "preempt"), (5, "preempt+reconfig")]
        {
            assert!(methods.contains(&method_reconfig), "no {what}");
        }
        assert!(vectors.lines.iter().any(|v| v.tag == tag::PUSH && v.expected == SLVERR), "a full list");
        assert!(vectors.lines.iter().any(|v| v.tag == tag::SOLVE_NEXT && v.expected == NOTHING));
    }

    #[test]
    fn words_pack_as_the_register_map_says() {
        let client = Client { partition: 1, device: 2, priority: 200 };
        let r = Request { client, accelerator: 3, unfinished: false };
        assert_eq!(request_word(&r), 0x03c8_0201);
        let s = Solution { request: r, method: Method::Preempt(17), reconfig: true };
        assert_eq!(solution_word(&s), 0xb103_0201);
        let d = Descriptor { state: PrrState::Hold, loaded: Some(7), client: Some(client), size: 5 };
        assert_eq!(desc(&d), 0x00c8_071d);
    }
}
