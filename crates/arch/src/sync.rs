//! Partita's locks: spin locks whose waiters say YIELD between tries.
//!
//! On a core YIELD is only a hint. Under QEMU's `-icount`, where one host
//! thread runs the CPUs in turn, it ends the waiter's turn, so the CPU that
//! holds the lock runs on and lets it go. A waiter that spun with another
//! hint would keep its turn until QEMU's next round, 100 ms of guest time
//! later, while the holder stood still.

use core::cell::UnsafeCell;
use core::ops::{Deref, DerefMut};
use core::sync::atomic::{AtomicBool, Ordering};
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

/// The lock of a vCPU's context, whose guard the guest entry can consume
/// (`exception::enter_guest`): the entry loads the registers from the
/// context while it is locked, and the same assembly releases the lock
/// after its last load. A lock the entry could not release itself would
/// have the registers copied out first, on every partition switch.
#[repr(C)]
pub struct ContextLock<T> {
    locked: AtomicBool,
    data: UnsafeCell<T>,
}

// SAFETY: the data is reached only through a guard, and a guard exists only
// while its owner holds `locked`: one CPU at a time, as with a mutex.
unsafe impl<T: Send> Sync for ContextLock<T> {}

impl<T> ContextLock<T> {
    pub const fn new(data: T) -> Self {
        Self { locked: AtomicBool::new(false), data: UnsafeCell::new(data) }
    }

    /// Spins, saying YIELD between tries like every Partita lock.
    pub fn lock(&self) -> ContextGuard<'_, T> {
        while self.locked.compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed).is_err() {
            while self.locked.load(Ordering::Relaxed) {
                crate::cpu::yield_now();
            }
        }
        ContextGuard { lock: self }
    }
}

/// The lock held; released when dropped, or by the guest entry.
pub struct ContextGuard<'a, T> {
    lock: &'a ContextLock<T>,
}

impl<T> ContextGuard<'_, T> {
    /// Gives up the guard without releasing the lock: the word to release,
    /// for the entry that does.
    pub(crate) fn into_lock_word(self) -> *const AtomicBool {
        let word = &self.lock.locked as *const AtomicBool;
        core::mem::forget(self);
        word
    }
}

impl<T> Deref for ContextGuard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        // SAFETY: the guard holds the lock, so no other reference to the
        // data exists but through this guard.
        unsafe { &*self.lock.data.get() }
    }
}

impl<T> DerefMut for ContextGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: as in `deref`, and `&mut self` makes this the only one.
        unsafe { &mut *self.lock.data.get() }
    }
}

impl<T> Drop for ContextGuard<'_, T> {
    fn drop(&mut self) {
        self.lock.locked.store(false, Ordering::Release);
    }
}

/// A shared reference that lives for the whole run, set and read without
/// a lock: what a pCPU notes of the vCPU it runs, for the fast path to read
/// in a load instead of looking it up in the system's tables (a `Once`,
/// two bounds checks and two indexings, about 25 instructions a trap).
/// Written by hand because no crate holds an optional `&'static T` in an
/// atomic: `AtomicPtr` with the one invariant that makes it sound.
pub struct StaticRef<T: 'static> {
    ptr: core::sync::atomic::AtomicPtr<T>,
}

impl<T: Sync + 'static> StaticRef<T> {
    pub const fn none() -> Self {
        Self { ptr: core::sync::atomic::AtomicPtr::new(core::ptr::null_mut()) }
    }

    pub fn set(&self, value: Option<&'static T>) {
        let ptr = value.map_or(core::ptr::null_mut(), |r| core::ptr::from_ref(r).cast_mut());
        self.ptr.store(ptr, Ordering::Relaxed);
    }

    pub fn get(&self) -> Option<&'static T> {
        let ptr = self.ptr.load(Ordering::Relaxed);
        // SAFETY: `set` stores only null or a `&'static T` (never written
        // through: the cast to `*mut` is AtomicPtr's type only), so a
        // non-null pointer is valid for reads for the rest of the run, and
        // `T: Sync` lets any CPU share it.
        unsafe { ptr.as_ref() }
    }
}
