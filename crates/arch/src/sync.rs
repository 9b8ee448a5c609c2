//! Partita's locks: spin locks whose waiters say YIELD between tries.
//!
//! On a core YIELD is only a hint. Under QEMU's `-icount`, where one host
//! thread runs the CPUs in turn, it ends the waiter's turn, so the CPU that
//! holds the lock runs on and lets it go. A waiter that spun with another
//! hint would keep its turn until QEMU's next round, 100 ms of guest time
//! later, while the holder stood still.

use spin::RelaxStrategy;

/// The waiting strategy of every Partita lock.
pub struct Yield;

impl RelaxStrategy for Yield {
    fn relax() {
        crate::cpu::yield_now();
    }
}

pub type Mutex<T> = spin::mutex::Mutex<T, Yield>;
pub type MutexGuard<'a, T> = spin::mutex::MutexGuard<'a, T>;
/// First come, first served: for a lock one CPU takes again and again.
pub type TicketMutex<T> = spin::mutex::TicketMutex<T, Yield>;
