//! `app.rs` compiled against `lockscope::tokio`.

/// The one line that picks the implementation.
pub mod sync_impl {
    pub use lockscope::tokio::{
        AcquireError, MappedMutexGuard, Mutex, MutexGuard, OwnedMappedMutexGuard, OwnedMutexGuard,
        OwnedRwLockMappedWriteGuard, OwnedRwLockReadGuard, OwnedRwLockWriteGuard,
        OwnedSemaphorePermit, RwLock, RwLockMappedWriteGuard, RwLockReadGuard, RwLockWriteGuard,
        Semaphore, SemaphorePermit, TryAcquireError, TryLockError,
    };
}

#[path = "app.rs"]
pub mod app;
