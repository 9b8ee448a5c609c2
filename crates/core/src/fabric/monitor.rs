//! The PRR monitor (Ker-ONE section 4.4.1): for a request (partition,
//! device, accelerator, priority) it finds a solution from the PRR
//! descriptors and the compatibility table, and keeps the requests it
//! cannot solve yet in a priority-ordered FIFO that is searched again
//! whenever a PRR changes state.
//!
//! The policy: only PRRs that can host the accelerator are candidates; an
//! Idle one is assigned, the smallest first; failing that, a Busy or Hold
//! one whose client has a lower priority is preempted, the smallest first;
//! otherwise the request waits. Clients of equal priority never preempt
//! each other. The search is a bounded scan of at most [`MAX_PRRS`]
//! descriptors, the same in the RTL twin.

use super::prr::PrrState;

/// PRRs a fabric may have: one bit each in a compatibility mask.
pub const MAX_PRRS: usize = 32;

/// Which PRRs can host an accelerator: bit `p` for PRR `p` (Ker-ONE's HW
/// task index table, one row).
pub type Compatible = u32;

/// Who holds a PRR, or asks for one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Client {
    /// Bytes, not `usize`s, for every index here (the limits keep each
    /// below 256): the manager passes clients, requests and actions by
    /// value on Path 1, and small ones move in registers instead of
    /// through `memcpy`.
    pub partition: u8,
    /// The partition's virtual device (its interface page).
    pub device: u8,
    /// Inherited from the partition: higher is more urgent.
    pub priority: u8,
}

impl Client {
    /// The same virtual device (of the same partition), whatever the
    /// priority.
    pub fn same_device(self, other: Client) -> bool {
        self.device_key() == other.device_key()
    }

    /// Partition and device in one number: one comparison rather than
    /// two on Path 1's scans.
    fn device_key(self) -> u16 {
        u16::from_le_bytes([self.partition, self.device])
    }
}

/// What the monitor knows of one PRR (Ker-ONE's PRR descriptor).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Descriptor {
    pub state: PrrState,
    /// The accelerator its logic holds now, if any.
    pub loaded: Option<u8>,
    /// The client it is allocated to, if any.
    pub client: Option<Client>,
    /// Its size in the fabric's resources: the smallest candidate wins,
    /// being the cheapest to reconfigure.
    pub size: u32,
}

/// A request: `client` wants accelerator `accelerator`.
// Aligned to its whole 8 bytes, so a copy is one load and one store, not a
// byte-wise `memcpy` on Path 1.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(align(8))]
pub struct Request {
    pub client: Client,
    pub accelerator: u8,
    /// Asked on the client's behalf after a preemption: its saved work
    /// resumes as soon as it is connected again.
    pub unfinished: bool,
}

/// How a request is served.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Method {
    /// The PRR is Idle: it goes to the requester.
    Assign(usize),
    /// The PRR serves a client of lower priority: it is stopped at its
    /// next consistency point, then goes to the requester.
    Preempt(usize),
    /// No PRR can serve it now: it waits.
    Unavailable,
}

/// Ker-ONE's `Solution{vm, dev, Method(prr), Reconfig}`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Solution {
    pub request: Request,
    pub method: Method,
    /// The PRR holds another accelerator: it must be reconfigured.
    pub reconfig: bool,
}

/// The best solution for `request`, given every PRR's descriptor and the
/// PRRs that can host its accelerator.
pub fn search(request: &Request, prrs: &[Descriptor], compatible: Compatible) -> Solution {
    let candidates = || prrs.iter().enumerate().take(MAX_PRRS).filter(move |&(p, _)| compatible & (1 << p) != 0);
    let idle = smallest(candidates().filter(|(_, d)| d.state.allocatable()));
    let lower = |d: &Descriptor| d.client.is_some_and(|c| c.priority < request.client.priority);
    let method = match idle {
        Some(p) => Method::Assign(p),
        None => match smallest(candidates().filter(|(_, d)| d.state.preemptible() && lower(d))) {
            Some(p) => Method::Preempt(p),
            None => Method::Unavailable,
        },
    };
    let reconfig = match method {
        Method::Assign(p) | Method::Preempt(p) => prrs[p].loaded != Some(request.accelerator),
        Method::Unavailable => false,
    };
    Solution { request: *request, method, reconfig }
}

/// The smallest PRR among `candidates`, the lowest index among equals.
fn smallest<'a>(candidates: impl Iterator<Item = (usize, &'a Descriptor)>) -> Option<usize> {
    candidates.min_by_key(|&(p, d)| (d.size, p)).map(|(p, _)| p)
}

/// The waiting list is full: the request is refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Full;

/// Requests no PRR could serve yet, most urgent first, first come first
/// served among equals; at most `N`.
#[derive(Clone, Debug, Default)]
pub struct Waiting<const N: usize> {
    requests: heapless::Vec<Request, N>,
}

impl<const N: usize> Waiting<N> {
    pub const fn new() -> Self {
        Self { requests: heapless::Vec::new() }
    }

    pub fn len(&self) -> usize {
        self.requests.len()
    }

    pub fn is_empty(&self) -> bool {
        self.requests.is_empty()
    }

    /// Queues `request` behind every request of its priority or higher. A
    /// request for a device already waiting is the same request again (a
    /// stalled vCPU faulting once more) and is not queued twice.
    pub fn push(&mut self, request: Request) -> Result<(), Full> {
        let same =
            |r: &Request| r.client.partition == request.client.partition && r.client.device == request.client.device;
        if self.requests.iter().any(same) {
            return Ok(());
        }
        let at = self.requests.iter().position(|r| r.client.priority < request.client.priority);
        let at = at.unwrap_or(self.requests.len());
        self.requests.insert(at, request).map_err(|_| Full)
    }

    /// Searches again, in order, and takes out the first request that now
    /// has a solution: the most urgent one a PRR can serve.
    pub fn solve_next(&mut self, prrs: &[Descriptor], compatible: impl Fn(u8) -> Compatible) -> Option<Solution> {
        let (at, solution) = self.requests.iter().enumerate().find_map(|(at, request)| {
            let solution = search(request, prrs, compatible(request.accelerator));
            (solution.method != Method::Unavailable).then_some((at, solution))
        })?;
        self.requests.remove(at);
        Some(solution)
    }

    /// Forgets every request of `partition` (it restarted or halted).
    pub fn forget(&mut self, partition: u8) {
        self.forget_clients(|c| c.partition == partition);
    }

    /// Forgets every request of the clients `whose` picks.
    pub fn forget_clients(&mut self, whose: impl Fn(Client) -> bool) {
        self.requests.retain(|r| !whose(r.client));
    }

    /// The requests in the order they will be searched.
    pub fn iter(&self) -> impl Iterator<Item = &Request> {
        self.requests.iter()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use PrrState::*;

    use crate::fabric::ker_one::*;

    fn prr(state: PrrState, loaded: Option<u8>, holder: Option<(u8, u8)>, size: u32) -> Descriptor {
        let client = holder.map(|(partition, priority)| Client { partition, device: 0, priority });
        Descriptor { state, loaded, client, size }
    }

    fn fabric() -> [Descriptor; 3] {
        [prr(Idle, None, None, 2), prr(Idle, None, None, 8), prr(Idle, None, None, 13)]
    }

    fn request(partition: u8, priority: u8, accelerator: u8) -> Request {
        Request { client: Client { partition, device: accelerator, priority }, accelerator, unfinished: false }
    }

    fn solve(r: Request, prrs: &[Descriptor]) -> (Method, bool) {
        let s = search(&r, prrs, COMPATIBLE[usize::from(r.accelerator)]);
        (s.method, s.reconfig)
    }

    #[test]
    fn an_idle_prr_is_assigned_the_smallest_first() {
        let prrs = fabric();
        assert_eq!(solve(request(0, 200, QAM16), &prrs), (Method::Assign(0), true));
        assert_eq!(solve(request(0, 200, FFT512), &prrs), (Method::Assign(1), true));
        assert_eq!(solve(request(0, 200, FFT1024), &prrs), (Method::Assign(2), true));
    }

    #[test]
    fn a_prr_that_holds_the_accelerator_needs_no_reconfiguration() {
        let mut prrs = fabric();
        prrs[0].loaded = Some(QAM64);
        assert_eq!(solve(request(0, 1, QAM64), &prrs), (Method::Assign(0), false));
        assert_eq!(solve(request(0, 1, QAM16), &prrs), (Method::Assign(0), true));
    }

    #[test]
    fn idle_is_preferred_to_preemption_even_when_larger() {
        let mut prrs = fabric();
        prrs[0] = prr(Busy, Some(QAM16), Some((1, 10)), 2);
        assert_eq!(solve(request(0, 200, QAM16), &prrs), (Method::Assign(1), true));
    }

    #[test]
    fn only_a_lower_priority_client_is_preempted_the_smallest_first() {
        let prrs = [
            prr(Busy, Some(QAM16), Some((1, 10)), 2),
            prr(Busy, Some(QAM64), Some((1, 10)), 8),
            prr(Busy, Some(FFT1024), Some((1, 10)), 13),
        ];
        assert_eq!(solve(request(0, 200, QAM16), &prrs), (Method::Preempt(0), false));
        assert_eq!(solve(request(0, 200, FFT512), &prrs), (Method::Preempt(1), true));
        // Equal priority never preempts; lower never does either.
        assert_eq!(solve(request(2, 10, QAM16), &prrs), (Method::Unavailable, false));
        assert_eq!(solve(request(2, 5, FFT1024), &prrs), (Method::Unavailable, false));
    }

    #[test]
    fn a_hold_is_preempted_but_prrs_in_transition_are_not() {
        let mut prrs = fabric();
        prrs[0] = prr(Hold, Some(QAM16), Some((1, 10)), 2);
        prrs[1] = prr(Reconfig, Some(QAM64), Some((1, 10)), 8);
        assert_eq!(solve(request(0, 200, QAM16), &prrs), (Method::Preempt(0), false));
        prrs[0].state = Switch;
        assert_eq!(solve(request(0, 200, QAM16), &prrs), (Method::Unavailable, false));
    }

    #[test]
    fn a_prr_outside_the_table_is_never_chosen() {
        let prrs = fabric();
        let s = search(&request(0, 1, FFT1024), &prrs, 0);
        assert_eq!(s.method, Method::Unavailable);
        // Bits beyond the descriptors are ignored.
        let s = search(&request(0, 1, FFT1024), &prrs[..2], COMPATIBLE[usize::from(FFT1024)]);
        assert_eq!(s.method, Method::Unavailable);
    }

    #[test]
    fn the_waiting_list_serves_by_priority_then_arrival() {
        let mut waiting: Waiting<8> = Waiting::new();
        waiting.push(request(1, 10, QAM16)).unwrap();
        waiting.push(request(2, 50, QAM64)).unwrap();
        waiting.push(request(3, 10, QAM64)).unwrap();
        waiting.push(request(4, 50, QAM16)).unwrap();
        let order: Vec<u8> = waiting.iter().map(|r| r.client.partition).collect();
        assert_eq!(order, [2, 4, 1, 3]);
        // The same device asking again is not queued twice.
        waiting.push(request(1, 10, QAM16)).unwrap();
        assert_eq!(waiting.len(), 4);
        let mut prrs = [
            prr(Busy, None, Some((9, 255)), 2),
            prr(Busy, None, Some((9, 255)), 8),
            prr(Busy, None, Some((9, 255)), 13),
        ];
        assert_eq!(waiting.solve_next(&prrs, |a| COMPATIBLE[usize::from(a)]), None, "nothing is free");
        prrs[1] = prr(Idle, Some(QAM16), None, 8);
        let served: Vec<u8> = core::iter::from_fn(|| {
            let s = waiting.solve_next(&prrs, |a| COMPATIBLE[usize::from(a)])?;
            Some(s.request.client.partition)
        })
        .take(4)
        .collect();
        assert_eq!(served, [2, 4, 1, 3], "the PRR stays Idle here, so every request is served in order");
        assert!(waiting.is_empty());
    }

    #[test]
    fn a_lower_request_is_served_when_the_higher_one_still_cannot_be() {
        let mut waiting: Waiting<4> = Waiting::new();
        waiting.push(request(1, 50, FFT1024)).unwrap();
        waiting.push(request(2, 10, QAM16)).unwrap();
        let prrs = [prr(Idle, None, None, 2), prr(Busy, None, Some((9, 99)), 8), prr(Busy, None, Some((9, 99)), 13)];
        let s = waiting.solve_next(&prrs, |a| COMPATIBLE[usize::from(a)]).unwrap();
        assert_eq!((s.request.client.partition, s.method), (2, Method::Assign(0)));
        assert_eq!(waiting.len(), 1);
    }

    #[test]
    fn a_full_list_refuses_and_a_restart_forgets() {
        let mut waiting: Waiting<2> = Waiting::new();
        waiting.push(request(1, 1, QAM16)).unwrap();
        waiting.push(request(2, 1, QAM16)).unwrap();
        assert_eq!(waiting.push(request(3, 1, QAM16)), Err(Full));
        waiting.forget(1);
        let left: Vec<u8> = waiting.iter().map(|r| r.client.partition).collect();
        assert_eq!(left, [2]);
    }

    fn any_descriptor() -> impl Strategy<Value = Descriptor> {
        let state = (0u8..6).prop_map(PrrState::from_u8);
        let client = proptest::option::of((0u8..4, 0u8..4).prop_map(|(p, pr)| Client {
            partition: p,
            device: 0,
            priority: pr * 50,
        }));
        (state, proptest::option::of(0u8..4), client, 1u32..20).prop_map(|(state, loaded, client, size)| Descriptor {
            state,
            loaded,
            client,
            size,
        })
    }

    proptest! {
        /// Whatever the descriptors, a solution names a compatible PRR the
        /// table lets it take, idle if any compatible PRR is idle, and
        /// preempts only a client of lower priority.
        #[test]
        fn every_solution_keeps_the_policy(prrs in proptest::collection::vec(any_descriptor(), 1..8), accel in 0u8..4, priority in 0u8..255, mask in 0u32..256) {
            let r = request(7, priority, accel);
            let s = search(&r, &prrs, mask);
            let compatible = |p: usize| mask & (1 << p) != 0;
            let any_idle = prrs.iter().enumerate().any(|(p, d)| compatible(p) && d.state == Idle);
            match s.method {
                Method::Assign(p) => {
                    prop_assert!(compatible(p) && prrs[p].state == Idle);
                    let smallest = prrs.iter().enumerate().filter(|(q, d)| compatible(*q) && d.state == Idle).map(|(_, d)| d.size).min();
                    prop_assert_eq!(Some(prrs[p].size), smallest);
                }
                Method::Preempt(p) => {
                    prop_assert!(!any_idle && compatible(p) && prrs[p].state.next(super::super::prr::PrrEvent::Preempt).is_ok());
                    prop_assert!(prrs[p].client.unwrap().priority < priority);
                }
                Method::Unavailable => {
                    prop_assert!(!any_idle);
                    let preemptible = prrs.iter().enumerate().any(|(p, d)| compatible(p) && d.state.preemptible() && d.client.is_some_and(|c| c.priority < priority));
                    prop_assert!(!preemptible);
                }
            }
        }
    }
}
