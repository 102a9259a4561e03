//! `std_app.rs` compiled against `lockscope::std::sync`.

/// The one line that picks the implementation.
pub mod sync_impl {
    pub use lockscope::std::sync::{
        Condvar, LockResult, Mutex, MutexGuard, PoisonError, RwLock, RwLockReadGuard,
        RwLockWriteGuard, TryLockError, TryLockResult, WaitTimeoutResult,
    };
}

#[path = "std_app.rs"]
pub mod app;
