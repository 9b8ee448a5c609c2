//! The virtual device manager's decisions (Ker-ONE section 4.4.2): what to
//! do, in which order, for each event of the fabric. The hypervisor feeds
//! it events (a write fault on an unconnected interface, a PRR that
//! stopped, a download that completed, a computation that started or
//! ended, a hold that expired, a partition that restarted, a device its
//! partition gave up) and carries out
//! the [`Action`]s it returns: remap an interface page, save or restore a
//! context, start a download, ask an accelerator to stop, signal a guest.
//!
//! Every PRR state change goes through the transition table in
//! [`super::prr`], and every search through [`super::monitor`]. Requests no
//! PRR can serve wait in the monitor's list and are searched again each
//! time a PRR becomes free.

use super::monitor::{search, Client, Compatible, Descriptor, Method, Request, Solution, Waiting, MAX_PRRS};
use super::prr::{PrrEvent, PrrState};

/// The signals a guest receives (Ker-ONE Table 2), as virtual interrupts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Signal {
    /// IPC_WAIT: the device is not available yet.
    Wait,
    /// IPC_READY: the device is connected.
    Ready,
    /// IPC_PREEMPT: the device was taken away; its work resumes later.
    Preempt,
}

/// How a connection came about: Ker-ONE's four paths (Fig. 15, eq. 6)
/// for a request served at once, or a wait in the list first.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Path {
    /// Path 1: an Idle PRR that held the accelerator.
    Assign,
    /// Path 2: an Idle PRR, downloaded first.
    AssignReconfig,
    /// Path 3: a PRR taken from a client of lower priority.
    Preempt,
    /// Path 4: taken, then downloaded.
    PreemptReconfig,
    /// Unavailable when asked, served from the waiting list.
    Waited,
    /// A preempted client's work, connected again to resume.
    Resumed,
}

impl Path {
    pub const ALL: [Path; 6] =
        [Path::Assign, Path::AssignReconfig, Path::Preempt, Path::PreemptReconfig, Path::Waited, Path::Resumed];

    /// The path of a solution found for a fresh request.
    pub fn of(solution: &Solution) -> Path {
        match (solution.method, solution.reconfig) {
            (Method::Assign(_), false) => Path::Assign,
            (Method::Assign(_), true) => Path::AssignReconfig,
            (Method::Preempt(_), false) => Path::Preempt,
            (Method::Preempt(_), true) => Path::PreemptReconfig,
            (Method::Unavailable, _) => Path::Waited,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Path::Assign => "assign",
            Path::AssignReconfig => "assign+reconfig",
            Path::Preempt => "preempt",
            Path::PreemptReconfig => "preempt+reconfig",
            Path::Waited => "unavailable, then served",
            Path::Resumed => "preempted, resumed",
        }
    }

    pub fn from_index(index: usize) -> Option<Path> {
        Path::ALL.get(index).copied()
    }
}

/// What the hypervisor must do, in the order given.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    /// Save `client`'s accelerator context from `prr` into its interface
    /// and make its page read-only.
    Disconnect { client: Client, prr: usize },
    /// Ask the accelerator in `prr` to stop at its next consistency point;
    /// [`Event::Stopped`] follows.
    Stop { prr: usize },
    /// Download `accelerator` into `prr`; [`Event::Reconfigured`] follows.
    Reconfigure { prr: usize, accelerator: u8 },
    /// Restore `client`'s context into `prr` and make its page read-write:
    /// the device is connected, a stalled write may go on. `path` is how
    /// the request got here.
    Connect { client: Client, prr: usize, path: Path },
    /// Tell `client` about its device.
    Signal { client: Client, signal: Signal },
}

/// What happened.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event {
    /// A write to an unconnected interface page.
    Request(Request),
    /// The accelerator in `prr` stopped at a consistency point. `work`:
    /// its client had work there (a job computing, one about to resume, a
    /// START not yet taken), which asks for a PRR again.
    Stopped { prr: usize, work: bool },
    /// The download into `prr` completed.
    Reconfigured { prr: usize },
    /// The client of `prr` started a computation.
    Started { prr: usize },
    /// The computation in `prr` is over.
    Done { prr: usize },
    /// `prr` waited in Hold for its client too long.
    Expired { prr: usize },
    /// `client` left `prr` Idle for a whole hold after its last job (or
    /// after its Hold expired): it lets the PRR go, and its next job asks
    /// again. Nothing happens unless `prr` is still Idle and `client`'s,
    /// so a report that crossed a new connection changes nothing.
    LetGo { prr: usize, client: Client },
    /// Partition `partition` restarted or halted: whatever it held or
    /// asked for is released.
    Released { partition: u8 },
    /// `client`'s partition gave its device up (it does the work on its
    /// CPU instead): as [`Event::Released`], for that one device. Its
    /// request, waiting or under way, is dropped, an unfinished one with
    /// it, so its saved work never resumes; a PRR it holds becomes free,
    /// a computation there abandoned at once, for nothing will resume it.
    Withdrawn { client: Client },
}

/// A solution under way on a PRR: who gets it once it is free.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Incoming {
    request: Request,
    /// Its partition was released meanwhile: the PRR becomes free instead.
    cancelled: bool,
    path: Path,
}

/// The manager's state: each PRR's descriptor and incoming client, the
/// compatibility table, the waiting list of at most `W` requests.
#[derive(Clone)]
pub struct Manager<const W: usize> {
    prrs: heapless::Vec<Descriptor, MAX_PRRS>,
    incoming: heapless::Vec<Option<Incoming>, MAX_PRRS>,
    compatible: heapless::Vec<Compatible, MAX_ACCELERATORS>,
    waiting: Waiting<W>,
    /// Path 1's index of the descriptors, a bit per PRR, rebuilt after
    /// every event: the requester's trap reads two words instead of
    /// scanning every PRR. `idle`: in Idle. `engaged`: with a client or
    /// one incoming.
    idle: Compatible,
    engaged: Compatible,
}

/// Accelerators a fabric may describe.
pub const MAX_ACCELERATORS: usize = 32;

/// An event that no longer applies to its PRR.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stale;

/// A fabric larger than the monitor's bitmask, or an accelerator index the
/// table does not have.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TooLarge;

impl<const W: usize> Manager<W> {
    /// A fabric of PRRs of `sizes`, every one Idle and empty, with
    /// `compatible[a]` the PRRs that can host accelerator `a`.
    pub fn new(sizes: &[u32], compatible: &[Compatible]) -> Result<Self, TooLarge> {
        if sizes.len() > MAX_PRRS {
            return Err(TooLarge);
        }
        let idle = |&size| Descriptor { state: PrrState::Idle, loaded: None, client: None, size };
        let mut manager = Self {
            prrs: sizes.iter().map(idle).collect(),
            incoming: sizes.iter().map(|_| None).collect(),
            compatible: heapless::Vec::from_slice(compatible).map_err(|_| TooLarge)?,
            waiting: Waiting::new(),
            idle: 0,
            engaged: 0,
        };
        manager.index();
        Ok(manager)
    }

    pub fn prrs(&self) -> &[Descriptor] {
        &self.prrs
    }

    pub fn waiting(&self) -> impl Iterator<Item = &Request> {
        self.waiting.iter()
    }

    /// The PRR `client`'s device is connected to, if any.
    pub fn connected(&self, client: Client) -> Option<usize> {
        self.prrs.iter().position(|d| d.client.is_some_and(|c| c.same_device(client)))
    }

    /// Handles `event`, handing each action to `act` in order. An event
    /// the PRR's state does not allow (a report that crossed a decision,
    /// or a PRR that does not exist) changes nothing: `Err(Stale)`.
    pub fn handle(&mut self, event: Event, act: &mut impl FnMut(Action)) -> Result<(), Stale> {
        let external = match event {
            Event::Stopped { prr, .. } => Some((prr, PrrEvent::Stopped)),
            Event::Reconfigured { prr } => Some((prr, PrrEvent::Reconfigured)),
            Event::Started { prr } => Some((prr, PrrEvent::Start)),
            Event::Done { prr } => Some((prr, PrrEvent::Done)),
            Event::Expired { prr } => Some((prr, PrrEvent::Expire)),
            Event::Request(_) | Event::Released { .. } | Event::Withdrawn { .. } | Event::LetGo { .. } => None,
        };
        if let Some((prr, event)) = external {
            // A start reported for a client that was released meanwhile
            // would leave a Busy PRR nobody holds, never done.
            let orphan = |d: &Descriptor| event == PrrEvent::Start && d.client.is_none();
            let allowed = self.prrs.get(prr).is_some_and(|d| d.state.next(event).is_ok() && !orphan(d));
            if !allowed {
                return Err(Stale);
            }
        }
        match event {
            Event::Request(request) => self.request(request, act),
            Event::Stopped { prr, work } => self.stopped(prr, work, act),
            Event::Reconfigured { prr } => {
                self.step(prr, PrrEvent::Reconfigured);
                if let Some(request) = self.incoming[prr].map(|i| i.request) {
                    self.prrs[prr].loaded = Some(request.accelerator);
                }
                self.hand_over(prr, act);
            }
            Event::Started { prr } => self.step(prr, PrrEvent::Start),
            Event::Done { prr } => {
                self.step(prr, PrrEvent::Done);
                self.serve_waiting(act);
            }
            Event::Expired { prr } => {
                self.step(prr, PrrEvent::Expire);
                self.serve_waiting(act);
            }
            Event::LetGo { prr, client } => {
                let idle = self.prrs.get(prr).is_some_and(|d| d.state == PrrState::Idle);
                let theirs = self.prrs.get(prr).and_then(|d| d.client).is_some_and(|c| c.same_device(client));
                if !(idle && theirs) {
                    return Err(Stale);
                }
                self.prrs[prr].client = None;
                act(Action::Disconnect { client, prr });
            }
            Event::Released { partition } => self.release(|c| c.partition == partition, act),
            Event::Withdrawn { client } => self.release(|c| c.same_device(client), act),
        }
        self.index();
        Ok(())
    }

    /// Path 1 on its own: `request` served at once by an Idle PRR that
    /// holds its accelerator already, with no client of its own to
    /// disconnect and no request waiting to be searched again once it is
    /// in Hold. The PRR goes to Hold for the requester and is returned:
    /// the caller carries out the one action, [`Action::Connect`] by
    /// [`Path::Assign`]. Any other request changes nothing: `None`, and it
    /// goes through [`Manager::handle`].
    ///
    /// The hypervisor calls this in the requester's trap, so it reads
    /// [`Manager::index`]'s words rather than every descriptor: whether
    /// the device is served or under way already (only engaged PRRs can
    /// say), and the PRR [`search`] would assign (the smallest Idle
    /// compatible one, the lowest index among equals). A test pins it to
    /// the general path, search included.
    pub fn assign_at_once(&mut self, request: Request) -> Option<usize> {
        if !self.waiting.is_empty() || self.engages(request.client) {
            return None;
        }
        let prr = self.smallest(self.compatible_with(request.accelerator) & self.idle)?;
        let descriptor = &self.prrs[prr];
        if descriptor.loaded != Some(request.accelerator) || descriptor.client.is_some() {
            return None;
        }
        self.step(prr, PrrEvent::Allocate);
        self.step(prr, PrrEvent::Switched { reconfig: false });
        self.prrs[prr].client = Some(request.client);
        // Hold now, and the client's: the index as `index` would rebuild it.
        self.idle &= !(1 << prr);
        self.engaged |= 1 << prr;
        Some(prr)
    }

    /// Some PRR has `client`'s device as its client or incoming one.
    fn engages(&self, client: Client) -> bool {
        let mine = |c: Client| c.same_device(client);
        let mut engaged = self.engaged;
        while engaged != 0 {
            let prr = engaged.trailing_zeros() as usize;
            engaged &= engaged - 1;
            if self.prrs[prr].client.is_some_and(mine) || self.incoming[prr].is_some_and(|i| mine(i.request.client)) {
                return true;
            }
        }
        false
    }

    /// The smallest of `prrs` (a bit each), the lowest index among equals.
    fn smallest(&self, mut prrs: Compatible) -> Option<usize> {
        let mut best: Option<(u32, usize)> = None;
        while prrs != 0 {
            let prr = prrs.trailing_zeros() as usize;
            prrs &= prrs - 1;
            let size = self.prrs[prr].size;
            if best.is_none_or(|(smallest, _)| size < smallest) {
                best = Some((size, prr));
            }
        }
        best.map(|(_, prr)| prr)
    }

    /// Rebuilds Path 1's index (`idle`, `engaged`) from the descriptors.
    fn index(&mut self) {
        let (mut idle, mut engaged) = (0, 0);
        for (prr, (d, incoming)) in self.prrs.iter().zip(&self.incoming).enumerate() {
            idle |= Compatible::from(d.state.allocatable()) << prr;
            engaged |= Compatible::from(d.client.is_some() || incoming.is_some()) << prr;
        }
        (self.idle, self.engaged) = (idle, engaged);
    }

    /// `client` is served, under way, or waiting in its place in the list.
    fn asked_already(&self, client: Client) -> bool {
        self.engages(client) || self.waiting.iter().any(|r| r.client.same_device(client))
    }

    fn request(&mut self, request: Request, act: &mut impl FnMut(Action)) {
        if let Some(prr) = self.assign_at_once(request) {
            act(Action::Connect { client: request.client, prr, path: Path::Assign });
            return;
        }
        if self.asked_already(request.client) {
            // A write that raced the connection, or a second fault of a
            // stalled vCPU.
            return;
        }
        let solution = search(&request, &self.prrs, self.compatible_with(request.accelerator));
        if solution.method == Method::Unavailable {
            // A full list drops the request; the stalled write faults again.
            let _ = self.waiting.push(request);
        }
        self.carry_out(solution, Path::of(&solution), Signal::Wait, act);
    }

    /// Starts `solution`, which connects by `path`: `on_wait` tells the
    /// requester it must wait (a fresh request), or nothing (one from the
    /// waiting list, already told).
    fn carry_out(&mut self, solution: Solution, path: Path, on_wait: Signal, act: &mut impl FnMut(Action)) {
        let client = solution.request.client;
        let told = |act: &mut dyn FnMut(Action)| {
            if on_wait == Signal::Wait {
                act(Action::Signal { client, signal: Signal::Wait });
            }
        };
        match solution.method {
            Method::Unavailable => told(act),
            Method::Assign(prr) => {
                self.step(prr, PrrEvent::Allocate);
                self.incoming[prr] = Some(Incoming { request: solution.request, cancelled: false, path });
                if let Some(previous) = self.prrs[prr].client.take() {
                    act(Action::Disconnect { client: previous, prr });
                }
                self.switched(prr, solution.reconfig, &mut |a| act(a));
                if solution.reconfig {
                    told(act);
                }
            }
            Method::Preempt(prr) => {
                self.step(prr, PrrEvent::Preempt);
                self.incoming[prr] = Some(Incoming { request: solution.request, cancelled: false, path });
                act(Action::Stop { prr });
                told(act);
            }
        }
    }

    /// The context switch on `prr` is done: download, or hand over.
    fn switched(&mut self, prr: usize, reconfig: bool, act: &mut dyn FnMut(Action)) {
        self.step(prr, PrrEvent::Switched { reconfig });
        match (reconfig, self.incoming[prr]) {
            (true, Some(incoming)) => act(Action::Reconfigure { prr, accelerator: incoming.request.accelerator }),
            _ => self.hand_over(prr, &mut |a| act(a)),
        }
    }

    /// `prr` is in Hold: its incoming client gets it, unless that client's
    /// partition was released meanwhile.
    fn hand_over(&mut self, prr: usize, act: &mut impl FnMut(Action)) {
        let Some(incoming) = self.incoming[prr].take() else { return };
        if incoming.cancelled {
            self.step(prr, PrrEvent::Expire);
            self.serve_waiting(act);
            return;
        }
        let client = incoming.request.client;
        self.prrs[prr].client = Some(client);
        act(Action::Connect { client, prr, path: incoming.path });
        // Path 1 connects before the request returns, which tells the
        // requester as much: READY is for a client that was told to wait.
        if incoming.path != Path::Assign {
            act(Action::Signal { client, signal: Signal::Ready });
        }
        // The PRR left Switch or Reconfig for Hold, where a request that
        // waited meanwhile may preempt its new client: searched again now,
        // not once that client's job is over.
        self.serve_waiting(act);
    }

    /// The preempted accelerator stopped: its client loses the PRR (and
    /// asks again, its work unfinished), the incoming one takes it.
    fn stopped(&mut self, prr: usize, work: bool, act: &mut impl FnMut(Action)) {
        let loaded = self.prrs[prr].loaded;
        let incoming = self.incoming[prr];
        self.step(prr, PrrEvent::Stopped);
        if let Some(victim) = self.prrs[prr].client.take() {
            act(Action::Disconnect { client: victim, prr });
            act(Action::Signal { client: victim, signal: Signal::Preempt });
            if let (Some(accelerator), true) = (loaded, work) {
                let _ = self.waiting.push(Request { client: victim, accelerator, unfinished: true });
            }
        }
        // A cancelled preemptor needs no download: the PRR just goes free.
        let reconfig = incoming.is_some_and(|i| !i.cancelled && loaded != Some(i.request.accelerator));
        self.switched(prr, reconfig, &mut |a| act(a));
    }

    /// Releases whatever the clients `whose` picks hold or asked for.
    fn release(&mut self, whose: impl Fn(Client) -> bool, act: &mut impl FnMut(Action)) {
        self.waiting.forget_clients(&whose);
        for prr in 0..self.prrs.len() {
            if let Some(incoming) = self.incoming[prr].as_mut().filter(|i| whose(i.request.client)) {
                incoming.cancelled = true;
            }
            let held = self.prrs[prr].client.is_some_and(&whose);
            if held && self.prrs[prr].state.next(PrrEvent::Release).is_ok() {
                let client = self.prrs[prr].client.take().expect("held");
                act(Action::Disconnect { client, prr });
                self.step(prr, PrrEvent::Release);
                if self.prrs[prr].state == PrrState::Switch {
                    // It was being preempted: the preemptor gets it now.
                    let reconfig =
                        self.incoming[prr].is_some_and(|i| self.prrs[prr].loaded != Some(i.request.accelerator));
                    self.switched(prr, reconfig, &mut |a| act(a));
                }
            }
        }
        self.serve_waiting(act);
    }

    /// Searches the waiting list again, serving what can be served.
    fn serve_waiting(&mut self, act: &mut impl FnMut(Action)) {
        while let Some(solution) = {
            let compatible = &self.compatible;
            self.waiting.solve_next(&self.prrs, |a| compatible.get(usize::from(a)).copied().unwrap_or(0))
        } {
            let path = if solution.request.unfinished { Path::Resumed } else { Path::Waited };
            self.carry_out(solution, path, Signal::Ready, act);
        }
    }

    fn compatible_with(&self, accelerator: u8) -> Compatible {
        self.compatible.get(usize::from(accelerator)).copied().unwrap_or(0)
    }

    /// Moves `prr` through `event`. The manager only asks for changes the
    /// table allows; one it does not is a bug in this module.
    fn step(&mut self, prr: usize, event: PrrEvent) {
        let descriptor = &mut self.prrs[prr];
        descriptor.state = descriptor.state.next(event).expect("the manager follows the PRR table");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec::Vec;

    use crate::fabric::ker_one::*;
    const RTOS: u8 = 200;
    const GPOS: u8 = 50;

    fn manager() -> Manager<8> {
        Manager::new(&SIZES, &COMPATIBLE).unwrap()
    }

    fn client(partition: u8, device: u8, priority: u8) -> Client {
        Client { partition, device, priority }
    }

    fn ask(m: &mut Manager<8>, c: Client, accelerator: u8) -> Vec<Action> {
        run(m, Event::Request(Request { client: c, accelerator, unfinished: false }))
    }

    fn run(m: &mut Manager<8>, event: Event) -> Vec<Action> {
        let mut actions = Vec::new();
        m.handle(event, &mut |a| actions.push(a)).expect("an event the PRR's state allows");
        actions
    }

    #[test]
    fn path_1_assign_connects_at_once() {
        let mut m = manager();
        let rtos = client(0, 0, RTOS);
        m.prrs[0].loaded = Some(QAM16);
        let actions = ask(&mut m, rtos, QAM16);
        assert_eq!(
            actions,
            [Action::Connect { client: rtos, prr: 0, path: Path::Assign }],
            "connected before the request returns: no READY"
        );
        assert_eq!(m.prrs()[0].state, PrrState::Hold);
        assert_eq!(m.connected(rtos), Some(0));
        run(&mut m, Event::Started { prr: 0 });
        assert_eq!(m.prrs()[0].state, PrrState::Busy);
    }

    #[test]
    fn path_1_takes_the_prr_the_search_would_even_among_equal_sizes() {
        let equal = || Manager::<8>::new(&[8; 3], &COMPATIBLE).unwrap();
        let rtos = client(0, 0, RTOS);
        let request = Request { client: rtos, accelerator: QAM16, unfinished: false };
        // The search takes PRR 0, the lowest index, and must download.
        let mut m = equal();
        (m.prrs[0].loaded, m.prrs[1].loaded) = (Some(QAM64), Some(QAM16));
        assert_eq!(m.assign_at_once(request), None);
        assert_eq!(m.prrs()[1].state, PrrState::Idle, "nothing changed");
        let actions = ask(&mut m, rtos, QAM16);
        let wait = Action::Signal { client: rtos, signal: Signal::Wait };
        assert_eq!(actions, [Action::Reconfigure { prr: 0, accelerator: QAM16 }, wait]);
        let mut m = equal();
        (m.prrs[0].loaded, m.prrs[1].loaded) = (Some(QAM16), Some(QAM16));
        assert_eq!(m.assign_at_once(request), Some(0));
    }

    #[test]
    fn a_client_idle_for_a_hold_lets_its_prr_go_and_its_next_job_asks_again() {
        let mut m = manager();
        let rtos = client(0, 0, RTOS);
        m.prrs[0].loaded = Some(QAM16);
        ask(&mut m, rtos, QAM16);
        run(&mut m, Event::Started { prr: 0 });
        run(&mut m, Event::Done { prr: 0 });
        // Not its PRR, or not Idle: nothing happens.
        let other = client(1, 0, GPOS);
        assert_eq!(m.handle(Event::LetGo { prr: 0, client: other }, &mut |_| {}), Err(Stale));
        assert_eq!(m.handle(Event::LetGo { prr: 1, client: rtos }, &mut |_| {}), Err(Stale));
        let actions = run(&mut m, Event::LetGo { prr: 0, client: rtos });
        assert_eq!(actions, [Action::Disconnect { client: rtos, prr: 0 }]);
        assert_eq!((m.prrs()[0].state, m.prrs()[0].client, m.connected(rtos)), (PrrState::Idle, None, None));
        // The accelerator stays loaded: the next job is Path 1.
        assert_eq!(ask(&mut m, rtos, QAM16)[0], Action::Connect { client: rtos, prr: 0, path: Path::Assign });
        // Once connected again, a late report of the last hold is stale.
        assert_eq!(m.handle(Event::LetGo { prr: 0, client: rtos }, &mut |_| {}), Err(Stale));
    }

    #[test]
    fn path_2_assign_with_reconfiguration_waits_for_the_download() {
        let mut m = manager();
        let rtos = client(0, 0, RTOS);
        let actions = ask(&mut m, rtos, QAM16);
        assert_eq!(
            actions,
            [Action::Reconfigure { prr: 0, accelerator: QAM16 }, Action::Signal { client: rtos, signal: Signal::Wait }]
        );
        assert_eq!(m.prrs()[0].state, PrrState::Reconfig);
        assert_eq!(m.connected(rtos), None);
        let actions = run(&mut m, Event::Reconfigured { prr: 0 });
        assert_eq!(
            actions,
            [
                Action::Connect { client: rtos, prr: 0, path: Path::AssignReconfig },
                Action::Signal { client: rtos, signal: Signal::Ready }
            ]
        );
        assert_eq!((m.prrs()[0].state, m.prrs()[0].loaded), (PrrState::Hold, Some(QAM16)));
    }

    /// The GPOS holds every PRR that can host QAM-16, computing.
    fn gpos_everywhere(m: &mut Manager<8>) -> [Client; 2] {
        let gpos = [client(1, 0, GPOS), client(1, 1, GPOS)];
        for (prr, (&c, accel)) in gpos.iter().zip([QAM16, FFT512]).enumerate() {
            m.prrs[prr].loaded = Some(accel);
            ask(m, c, accel);
            run(m, Event::Started { prr });
        }
        gpos
    }

    #[test]
    fn path_3_preempt_stops_the_gpos_then_connects_the_rtos() {
        let mut m = manager();
        let [gpos, _] = gpos_everywhere(&mut m);
        let rtos = client(0, 0, RTOS);
        let actions = ask(&mut m, rtos, QAM16);
        assert_eq!(actions, [Action::Stop { prr: 0 }, Action::Signal { client: rtos, signal: Signal::Wait }]);
        assert_eq!(m.prrs()[0].state, PrrState::Preempt);
        let actions = run(&mut m, Event::Stopped { prr: 0, work: true });
        assert_eq!(
            actions,
            [
                Action::Disconnect { client: gpos, prr: 0 },
                Action::Signal { client: gpos, signal: Signal::Preempt },
                Action::Connect { client: rtos, prr: 0, path: Path::Preempt },
                Action::Signal { client: rtos, signal: Signal::Ready },
            ]
        );
        // The GPOS's unfinished work waits for a PRR.
        assert_eq!(m.waiting().map(|r| (r.client, r.unfinished)).collect::<Vec<_>>(), [(gpos, true)]);
    }

    #[test]
    fn preempted_work_resumes_when_a_prr_frees_and_is_work_even_in_hold() {
        let mut m = manager();
        let [gpos, _] = gpos_everywhere(&mut m);
        let rtos = client(0, 0, RTOS);
        ask(&mut m, rtos, QAM16);
        run(&mut m, Event::Stopped { prr: 0, work: true });
        run(&mut m, Event::Started { prr: 0 });
        let actions = run(&mut m, Event::Done { prr: 0 });
        assert_eq!(
            actions,
            [
                Action::Disconnect { client: rtos, prr: 0 },
                Action::Connect { client: gpos, prr: 0, path: Path::Resumed },
                Action::Signal { client: gpos, signal: Signal::Ready },
            ]
        );
        // Preempted again before its work restarted: the logic reports it
        // as work, and it asks again once stopped.
        ask(&mut m, rtos, QAM16);
        run(&mut m, Event::Stopped { prr: 0, work: true });
        assert_eq!(m.waiting().map(|r| (r.client, r.unfinished)).collect::<Vec<_>>(), [(gpos, true)]);
    }

    #[test]
    fn a_request_that_waited_for_a_download_preempts_its_lower_client_as_soon_as_it_is_in() {
        let mut m = manager();
        let (rtos, gpos, peer) = (client(0, 0, RTOS), client(1, 0, GPOS), client(2, 0, RTOS));
        // The RTOS's peer keeps PRR 2, the other PRR that hosts QAM-16.
        m.prrs[1].loaded = Some(FFT512);
        ask(&mut m, peer, FFT512);
        run(&mut m, Event::Started { prr: 1 });
        ask(&mut m, gpos, QAM16);
        assert_eq!(m.prrs()[0].state, PrrState::Reconfig);
        // Halfway through the GPOS's allocation: nothing to take yet.
        assert_eq!(ask(&mut m, rtos, QAM16), [Action::Signal { client: rtos, signal: Signal::Wait }]);
        let actions = run(&mut m, Event::Reconfigured { prr: 0 });
        assert_eq!(
            actions,
            [
                Action::Connect { client: gpos, prr: 0, path: Path::AssignReconfig },
                Action::Signal { client: gpos, signal: Signal::Ready },
                Action::Stop { prr: 0 },
            ],
            "the RTOS preempts the GPOS in Hold, before its job starts"
        );
        let actions = run(&mut m, Event::Stopped { prr: 0, work: false });
        assert_eq!(
            actions,
            [
                Action::Disconnect { client: gpos, prr: 0 },
                Action::Signal { client: gpos, signal: Signal::Preempt },
                Action::Connect { client: rtos, prr: 0, path: Path::Waited },
                Action::Signal { client: rtos, signal: Signal::Ready },
            ]
        );
    }

    #[test]
    fn path_4_preempt_with_reconfiguration() {
        let mut m = manager();
        let [_, gpos_fft] = gpos_everywhere(&mut m);
        let rtos = client(0, 1, RTOS);
        // QAM-64 fits PRR 1 and 2; both busy; the smallest is preempted,
        // and it holds QAM-16, not QAM-64.
        ask(&mut m, rtos, QAM64);
        let actions = run(&mut m, Event::Stopped { prr: 0, work: true });
        assert!(matches!(
            actions[..],
            [Action::Disconnect { .. }, Action::Signal { .. }, Action::Reconfigure { prr: 0, accelerator: QAM64 }]
        ));
        let actions = run(&mut m, Event::Reconfigured { prr: 0 });
        assert_eq!(actions[0], Action::Connect { client: rtos, prr: 0, path: Path::PreemptReconfig });
        assert_eq!(m.connected(gpos_fft), Some(1), "the other PRR is untouched");
    }

    #[test]
    fn unavailable_waits_and_is_served_when_a_prr_frees() {
        let mut m = manager();
        let rtos = client(0, 0, RTOS);
        let other_rtos = client(2, 0, RTOS);
        m.prrs[2].loaded = Some(FFT1024);
        ask(&mut m, rtos, FFT1024);
        run(&mut m, Event::Started { prr: 2 });
        // Equal priority: no preemption, the request waits.
        let actions = ask(&mut m, other_rtos, FFT1024);
        assert_eq!(actions, [Action::Signal { client: other_rtos, signal: Signal::Wait }]);
        assert_eq!(m.waiting().count(), 1);
        let actions = run(&mut m, Event::Done { prr: 2 });
        assert_eq!(
            actions,
            [
                Action::Disconnect { client: rtos, prr: 2 },
                Action::Connect { client: other_rtos, prr: 2, path: Path::Waited },
                Action::Signal { client: other_rtos, signal: Signal::Ready },
            ]
        );
        assert_eq!(m.waiting().count(), 0);
    }

    #[test]
    fn a_repeated_fault_is_one_request() {
        let mut m = manager();
        let rtos = client(0, 0, RTOS);
        ask(&mut m, rtos, QAM16);
        assert_eq!(ask(&mut m, rtos, QAM16), [], "under way: nothing more to do");
        run(&mut m, Event::Reconfigured { prr: 0 });
        assert_eq!(ask(&mut m, rtos, QAM16), [], "connected: the write simply goes on");
    }

    #[test]
    fn a_hold_expires_and_the_waiting_list_is_served() {
        let mut m = manager();
        let a = client(0, 0, GPOS);
        let b = client(1, 0, GPOS);
        m.prrs[2].loaded = Some(FFT1024);
        ask(&mut m, a, FFT1024);
        ask(&mut m, b, FFT1024);
        let actions = run(&mut m, Event::Expired { prr: 2 });
        assert_eq!(actions[0], Action::Disconnect { client: a, prr: 2 });
        assert_eq!(m.connected(b), Some(2));
    }

    #[test]
    fn a_restart_releases_what_the_partition_held_and_asked_for() {
        let mut m = manager();
        let [gpos, gpos_fft] = gpos_everywhere(&mut m);
        let waiter = client(1, 2, GPOS);
        ask(&mut m, waiter, FFT1024);
        let rtos = client(0, 0, RTOS);
        m.prrs[2].loaded = Some(FFT1024);
        let actions = run(&mut m, Event::Released { partition: 1 });
        assert_eq!(
            actions[..2],
            [Action::Disconnect { client: gpos, prr: 0 }, Action::Disconnect { client: gpos_fft, prr: 1 }]
        );
        assert!(m.prrs().iter().all(|d| d.client.is_none_or(|c| c.partition != 1)));
        assert_eq!(m.waiting().count(), 0);
        // Everything is free again for others.
        assert_eq!(ask(&mut m, rtos, QAM16)[0], Action::Connect { client: rtos, prr: 0, path: Path::Assign });
    }

    #[test]
    fn a_release_during_a_download_frees_the_prr_instead_of_connecting() {
        let mut m = manager();
        let gpos = client(1, 0, GPOS);
        ask(&mut m, gpos, FFT1024);
        run(&mut m, Event::Released { partition: 1 });
        let actions = run(&mut m, Event::Reconfigured { prr: 2 });
        assert_eq!(actions, []);
        assert_eq!(m.prrs()[2].state, PrrState::Idle);
        assert_eq!(m.connected(gpos), None);
    }

    #[test]
    fn a_report_that_crossed_a_decision_changes_nothing() {
        let mut m = manager();
        let mut actions = Vec::new();
        assert_eq!(m.handle(Event::Done { prr: 0 }, &mut |a| actions.push(a)), Err(Stale));
        assert_eq!(m.handle(Event::Stopped { prr: 7, work: false }, &mut |a| actions.push(a)), Err(Stale));
        assert!(actions.is_empty());
        assert!(m.prrs().iter().all(|d| d.state == PrrState::Idle));
    }

    #[test]
    fn a_client_preempted_before_it_started_does_not_ask_again() {
        let mut m = manager();
        let gpos = client(1, 0, GPOS);
        m.prrs[0].loaded = Some(QAM16);
        m.prrs[1] =
            Descriptor { state: PrrState::Busy, loaded: Some(FFT512), client: Some(client(1, 1, GPOS)), size: 8 };
        ask(&mut m, gpos, QAM16);
        assert_eq!(m.prrs()[0].state, PrrState::Hold);
        let rtos = client(0, 0, RTOS);
        ask(&mut m, rtos, QAM16);
        run(&mut m, Event::Stopped { prr: 0, work: false });
        assert_eq!(m.connected(rtos), Some(0));
        assert_eq!(m.waiting().count(), 0);
    }

    #[test]
    fn a_client_preempted_in_hold_with_work_asks_again() {
        // It wrote START, which the logic had not taken yet: that is work.
        let mut m = manager();
        let gpos = client(1, 0, GPOS);
        m.prrs[0].loaded = Some(QAM16);
        m.prrs[1] =
            Descriptor { state: PrrState::Busy, loaded: Some(FFT512), client: Some(client(1, 1, GPOS)), size: 8 };
        ask(&mut m, gpos, QAM16);
        ask(&mut m, client(0, 0, RTOS), QAM16);
        run(&mut m, Event::Stopped { prr: 0, work: true });
        assert_eq!(m.waiting().map(|r| (r.client, r.unfinished)).collect::<Vec<_>>(), [(gpos, true)]);
    }

    fn withdraw(m: &mut Manager<8>, c: Client) -> Vec<Action> {
        run(m, Event::Withdrawn { client: c })
    }

    #[test]
    fn a_withdrawn_request_leaves_the_waiting_list_and_is_never_served() {
        let mut m = manager();
        let rtos = client(0, 0, RTOS);
        let gpos = client(1, 0, GPOS);
        m.prrs[2].loaded = Some(FFT1024);
        ask(&mut m, rtos, FFT1024);
        run(&mut m, Event::Started { prr: 2 });
        ask(&mut m, gpos, FFT1024);
        assert_eq!(m.waiting().count(), 1);
        assert_eq!(withdraw(&mut m, gpos), []);
        assert_eq!(m.waiting().count(), 0);
        assert_eq!(run(&mut m, Event::Done { prr: 2 }), [], "nobody waits for the freed PRR");
        assert_eq!(m.connected(rtos), Some(2), "the holder keeps its idle PRR");
    }

    #[test]
    fn a_withdrawn_preempted_client_s_work_never_resumes() {
        let mut m = manager();
        let [gpos, _] = gpos_everywhere(&mut m);
        let rtos = client(0, 0, RTOS);
        ask(&mut m, rtos, QAM16);
        run(&mut m, Event::Stopped { prr: 0, work: true });
        assert_eq!(m.waiting().map(|r| (r.client, r.unfinished)).collect::<Vec<_>>(), [(gpos, true)]);
        assert_eq!(withdraw(&mut m, gpos), []);
        assert_eq!(m.waiting().count(), 0);
        run(&mut m, Event::Started { prr: 0 });
        let actions = run(&mut m, Event::Done { prr: 0 });
        assert!(!actions.iter().any(|a| matches!(a, Action::Connect { .. })), "{actions:?}");
        assert_eq!((m.prrs()[0].state, m.connected(rtos)), (PrrState::Idle, Some(0)));
    }

    #[test]
    fn a_connected_idle_client_that_withdraws_frees_its_prr_for_the_waiting_list() {
        let mut m = manager();
        let gpos = client(1, 0, GPOS);
        let other = client(2, 0, GPOS);
        m.prrs[2].loaded = Some(FFT1024);
        ask(&mut m, gpos, FFT1024);
        assert_eq!(m.prrs()[2].state, PrrState::Hold);
        // Of equal priority: it waits, the Hold is not taken from the GPOS.
        ask(&mut m, other, FFT1024);
        assert_eq!(
            withdraw(&mut m, gpos),
            [
                Action::Disconnect { client: gpos, prr: 2 },
                Action::Connect { client: other, prr: 2, path: Path::Waited },
                Action::Signal { client: other, signal: Signal::Ready },
            ]
        );
        assert_eq!(m.connected(gpos), None);
        // Done with it after a job: it just gives the idle PRR back.
        run(&mut m, Event::Started { prr: 2 });
        run(&mut m, Event::Done { prr: 2 });
        assert_eq!(withdraw(&mut m, other), [Action::Disconnect { client: other, prr: 2 }]);
        assert_eq!((m.prrs()[2].state, m.prrs()[2].client), (PrrState::Idle, None));
    }

    #[test]
    fn a_busy_client_that_withdraws_abandons_its_computation_at_once() {
        let mut m = manager();
        let [gpos, gpos_fft] = gpos_everywhere(&mut m);
        let other = client(2, 0, GPOS);
        ask(&mut m, other, QAM16);
        assert_eq!(m.waiting().count(), 1);
        // No stop, no consistency point: nothing will resume the work.
        assert_eq!(
            withdraw(&mut m, gpos),
            [
                Action::Disconnect { client: gpos, prr: 0 },
                Action::Connect { client: other, prr: 0, path: Path::Waited },
                Action::Signal { client: other, signal: Signal::Ready },
            ]
        );
        assert_eq!(m.connected(gpos_fft), Some(1), "its partition's other device keeps its PRR");
        assert_eq!(m.prrs()[1].state, PrrState::Busy);
        // The done of the abandoned computation crossed the decision.
        assert_eq!(m.handle(Event::Done { prr: 0 }, &mut |_| {}), Err(Stale));
    }

    #[test]
    fn withdrawing_a_device_that_holds_and_asks_for_nothing_changes_nothing() {
        let mut m = manager();
        let [gpos, _] = gpos_everywhere(&mut m);
        let before = m.prrs().to_vec();
        assert_eq!(withdraw(&mut m, client(1, 2, GPOS)), []);
        assert_eq!(withdraw(&mut m, client(2, 0, GPOS)), []);
        assert_eq!(m.prrs(), &before[..]);
        withdraw(&mut m, gpos);
        assert_eq!(withdraw(&mut m, gpos), [], "twice is once");
    }

    #[test]
    fn a_client_that_withdraws_while_being_preempted_hands_over_without_a_stop() {
        let mut m = manager();
        let [gpos, _] = gpos_everywhere(&mut m);
        let rtos = client(0, 0, RTOS);
        ask(&mut m, rtos, QAM16);
        assert_eq!(m.prrs()[0].state, PrrState::Preempt);
        assert_eq!(
            withdraw(&mut m, gpos),
            [
                Action::Disconnect { client: gpos, prr: 0 },
                Action::Connect { client: rtos, prr: 0, path: Path::Preempt },
                Action::Signal { client: rtos, signal: Signal::Ready },
            ]
        );
        assert_eq!(m.waiting().count(), 0, "its work does not ask again");
        assert_eq!(m.handle(Event::Stopped { prr: 0, work: true }, &mut |_| {}), Err(Stale));
    }

    #[test]
    fn a_client_that_withdraws_during_its_download_is_not_connected() {
        let mut m = manager();
        let gpos = client(1, 0, GPOS);
        ask(&mut m, gpos, FFT1024);
        assert_eq!(withdraw(&mut m, gpos), []);
        assert_eq!(run(&mut m, Event::Reconfigured { prr: 2 }), []);
        assert_eq!((m.prrs()[2].state, m.prrs()[2].loaded), (PrrState::Idle, Some(FFT1024)));
        assert_eq!(m.connected(gpos), None);
    }

    #[test]
    fn a_start_reported_after_its_client_left_is_stale() {
        let mut m = manager();
        let gpos = client(1, 0, GPOS);
        m.prrs[2].loaded = Some(FFT1024);
        ask(&mut m, gpos, FFT1024);
        withdraw(&mut m, gpos);
        assert_eq!(m.handle(Event::Started { prr: 2 }, &mut |_| {}), Err(Stale));
        assert_eq!(m.prrs()[2].state, PrrState::Idle, "still free for others");
    }

    fn any_event() -> impl proptest::strategy::Strategy<Value = Event> {
        use proptest::prelude::*;
        let request = (0u8..3, 0u8..2, 0u8..4).prop_map(|(partition, device, accelerator)| {
            // Partition 0 is the most urgent; 1 and 2 share a priority.
            let priority = if partition == 0 { RTOS } else { GPOS };
            Event::Request(Request { client: client(partition, device, priority), accelerator, unfinished: false })
        });
        let prr = 0usize..4;
        prop_oneof![
            3 => request,
            1 => (prr.clone(), proptest::bool::ANY).prop_map(|(prr, work)| Event::Stopped { prr, work }),
            1 => prr.clone().prop_map(|prr| Event::Reconfigured { prr }),
            1 => prr.clone().prop_map(|prr| Event::Started { prr }),
            1 => prr.clone().prop_map(|prr| Event::Done { prr }),
            1 => prr.clone().prop_map(|prr| Event::Expired { prr }),
            1 => (prr, 0u8..3, 0u8..2).prop_map(|(prr, partition, device)| {
                let priority = if partition == 0 { RTOS } else { GPOS };
                Event::LetGo { prr, client: client(partition, device, priority) }
            }),
            1 => (0u8..3).prop_map(|partition| Event::Released { partition }),
            1 => (0u8..3, 0u8..2).prop_map(|(partition, device)| {
                let priority = if partition == 0 { RTOS } else { GPOS };
                Event::Withdrawn { client: client(partition, device, priority) }
            }),
        ]
    }

    proptest::proptest! {
        /// Whatever happens, in whatever order: nothing panics, a device is
        /// connected to one PRR at most, a PRR in transition has an incoming
        /// client and no connected one, and no connected device waits.
        #[test]
        fn any_sequence_of_events_keeps_the_manager_sound(events in proptest::collection::vec(any_event(), 0..200)) {
            let mut m = manager();
            for event in events {
                let _ = m.handle(event, &mut |_| {});
                if let Event::Withdrawn { client } = event {
                    let gone = |c: Client| !c.same_device(client);
                    proptest::prop_assert!(m.connected(client).is_none() && m.waiting().all(|r| gone(r.client)));
                    proptest::prop_assert!(m.incoming.iter().flatten().all(|i| i.cancelled || gone(i.request.client)));
                }
                let clients: Vec<Client> = m.prrs().iter().filter_map(|d| d.client).collect();
                for (i, a) in clients.iter().enumerate() {
                    proptest::prop_assert!(!clients[i + 1..].iter().any(|b| a.same_device(*b)), "{a:?} on two PRRs");
                }
                for (prr, d) in m.prrs().iter().enumerate() {
                    if matches!(d.state, PrrState::Switch | PrrState::Reconfig) {
                        proptest::prop_assert!(d.client.is_none() && m.incoming[prr].is_some(), "{prr}: {d:?}");
                    }
                    if d.state == PrrState::Preempt {
                        proptest::prop_assert!(d.client.is_some() && m.incoming[prr].is_some(), "{prr}: {d:?}");
                    }
                }
                for r in m.waiting() {
                    proptest::prop_assert!(m.connected(r.client).is_none(), "{r:?} waits while connected");
                }
                let kept = (m.idle, m.engaged);
                m.index();
                proptest::prop_assert_eq!(kept, (m.idle, m.engaged), "Path 1's index went stale");
            }
        }
    }

    proptest::proptest! {
        /// Path 1's shortcut leaves the manager as the general path does:
        /// the same PRRs, incoming slots and waiting list, one `Connect`;
        /// and where it does not apply it changes nothing.
        #[test]
        fn assigning_at_once_is_the_general_path_cut_short(
            events in proptest::collection::vec(any_event(), 0..100),
            asked in any_event(),
            equal_sizes in proptest::bool::ANY,
        ) {
            let Event::Request(request) = asked else { return Ok(()) };
            // Equal sizes make the search break ties by index.
            let sizes = if equal_sizes { [8; 3] } else { SIZES };
            let mut m = Manager::<8>::new(&sizes, &COMPATIBLE).unwrap();
            for event in events {
                let _ = m.handle(event, &mut |_| {});
            }
            let (before, mut general) = (m.prrs.clone(), m.clone());
            match m.assign_at_once(request) {
                Some(prr) => {
                    let solution = search(&request, &general.prrs, general.compatible_with(request.accelerator));
                    let mut actions = Vec::new();
                    general.carry_out(solution, Path::of(&solution), Signal::Wait, &mut |a| actions.push(a));
                    let connect = Action::Connect { client: request.client, prr, path: Path::Assign };
                    proptest::prop_assert_eq!(actions, [connect]);
                    proptest::prop_assert_eq!(&m.prrs, &general.prrs);
                    proptest::prop_assert_eq!(&m.incoming, &general.incoming);
                    proptest::prop_assert!(m.waiting().eq(general.waiting()));
                    let kept = (m.idle, m.engaged);
                    m.index();
                    proptest::prop_assert_eq!(kept, (m.idle, m.engaged), "Path 1's index went stale");
                }
                None => {
                    proptest::prop_assert_eq!(&m.prrs, &before);
                    // Nor does it miss one: the general path would not
                    // connect this request at once by Path 1 alone.
                    let solution = search(&request, &m.prrs, m.compatible_with(request.accelerator));
                    let alone = matches!(solution.method, Method::Assign(prr) if m.prrs[prr].client.is_none())
                        && !solution.reconfig
                        && m.waiting.is_empty();
                    proptest::prop_assert!(!alone || m.asked_already(request.client), "{request:?} missed");
                }
            }
        }
    }

    #[test]
    fn a_fabric_beyond_the_bitmask_is_refused() {
        assert!(Manager::<4>::new(&[1; MAX_PRRS + 1], &[1]).is_err());
        assert!(Manager::<4>::new(&[1; 3], &[1; MAX_ACCELERATORS + 1]).is_err());
    }
}
