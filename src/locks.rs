//! Locks that survive a panic. Every lock in hearth guards data that stays consistent
//! whatever a holder was doing when it panicked (each update is a single push, pop or
//! assignment), so a poisoned lock is recovered (`PoisonError::into_inner`), never given
//! up on: a panic in one request must not stop the flusher, the event hub or the
//! upload store for everyone.

use std::sync::{
    Condvar, Mutex, MutexGuard, PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard,
};
use std::time::Duration;

/// Locks a mutex, recovering it if a holder panicked.
pub fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Read-locks, recovering the lock if a writer panicked.
pub fn read<T>(l: &RwLock<T>) -> RwLockReadGuard<'_, T> {
    l.read().unwrap_or_else(PoisonError::into_inner)
}

/// Write-locks, recovering the lock if a holder panicked.
pub fn write<T>(l: &RwLock<T>) -> RwLockWriteGuard<'_, T> {
    l.write().unwrap_or_else(PoisonError::into_inner)
}

/// Waits on `condvar` while `condition` holds, at most `timeout`; recovers the lock if
/// a holder panicked meanwhile.
pub fn wait_timeout_while<'a, T>(
    condvar: &Condvar,
    guard: MutexGuard<'a, T>,
    timeout: Duration,
    condition: impl FnMut(&mut T) -> bool,
) -> MutexGuard<'a, T> {
    match condvar.wait_timeout_while(guard, timeout, condition) {
        Ok((guard, _)) => guard,
        Err(poisoned) => poisoned.into_inner().0,
    }
}
