//! `std_app.rs` compiled against `std::sync`.

/// The one line that picks the implementation.
pub mod sync_impl {
    pub use std::sync::{
        Condvar, LockResult, Mutex, MutexGuard, PoisonError, RwLock, RwLockReadGuard,
        RwLockWriteGuard, TryLockError, TryLockResult, WaitTimeoutResult,
    };
}

#[path = "std_app.rs"]
pub mod app;
