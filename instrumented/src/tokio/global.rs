//! [`GlobalLock`]: a named lock across the processes of a machine, async form.

use std::fmt;
use std::io;
use std::panic::Location;
use std::path::{Path, PathBuf};
use std::time::Duration;

use lockscope_detector::__private::hooks::{Acq, Mode, PrimKind};
use lockscope_detector::HolderSnapshot;

pub use crate::global::GlobalLockGuard;
use crate::global::{Backoff, Core};
use crate::probe::{self, State, Token};

/// A named lock across the processes of the machine, async form (lockscope addition): the
/// same lock, on the same files, as the blocking
/// [`lockscope::parking_lot::GlobalLock`](crate::parking_lot::GlobalLock) (see it for where
/// the files live and what the detector sees); the two forms exclude each other.
///
/// A task waiting for it never blocks its worker: the OS has no asynchronous file lock, so
/// the wait polls the lock without blocking (from every millisecond, backing off to every
/// 32 ms) and sleeps on tokio's timer in between. A blocking lock on `spawn_blocking`'s pool
/// would take the lock sooner after its release, but could not be cancelled: a dropped
/// future would leave a thread blocked in the OS, which would then take the lock for no one.
/// Opening the lock file is a plain, short file-system call on the worker.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> std::io::Result<()> {
/// use lockscope::tokio::GlobalLock;
///
/// let emulator = GlobalLock::named("docs-async-emulator")?;
/// let guard = emulator.lock().await?;
/// assert!(emulator.try_lock()?.is_none());
/// drop(guard);
/// # Ok(())
/// # }
/// ```
pub struct GlobalLock {
    core: Core,
}

/// A wait for the lock in progress: dropped (the future was), it ends the wait in the books
/// as cancelled. Nothing else needs undoing: between polls the lock is not held, and the file
/// is closed with the future.
struct Waiting<'a> {
    core: &'a Core,
    state: State,
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        // After a grant, a failure or a timeout the state is done, and this records nothing.
        let waited = matches!(self.state, State::Waiting(_) | State::Traced(_));
        self.state.cancel(self.core.prim());
        if waited {
            self.core.wait_ended();
        }
    }
}

impl GlobalLock {
    /// The global lock named `name`, on the file `<global_lock_dir>/<name>.lock`; see
    /// [`lockscope::parking_lot::GlobalLock::named`](crate::parking_lot::GlobalLock::named).
    ///
    /// # Errors
    ///
    /// The directory cannot be created, or its path is not a directory.
    #[track_caller]
    pub fn named(name: impl AsRef<str>) -> io::Result<Self> {
        let core = Core::named(name.as_ref(), PrimKind::Mutex, Location::caller())?;
        Ok(GlobalLock { core })
    }

    /// The global lock named `name` (in reports) on the file `path`, created when first
    /// locked. Its directory must exist.
    #[track_caller]
    pub fn at(name: impl AsRef<str>, path: impl Into<PathBuf>) -> Self {
        let core = Core::at(
            name.as_ref(),
            path.into(),
            PrimKind::Mutex,
            Location::caller(),
        );
        GlobalLock { core }
    }

    /// The name used in spans, metrics and reports.
    pub fn name(&self) -> &str {
        self.core.prim().name()
    }

    /// The lock file.
    pub fn path(&self) -> &Path {
        self.core.path()
    }

    /// Locks it, waiting (without blocking the worker) until no other process, and no other
    /// acquisition in this one, holds it.
    ///
    /// # Errors
    ///
    /// The lock file cannot be opened or locked (permissions, a full disk, a file system
    /// without locks).
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: dropping the future while it waits ends its wait in the books (no ghost
    /// waiter) and closes its file; it never holds the lock between polls. A fair queue
    /// among waiters there is not (the OS's file locks keep none): a waiter takes the lock
    /// at its next poll after the release.
    #[track_caller]
    pub fn lock(&self) -> impl Future<Output = io::Result<GlobalLockGuard<'_>>> + '_ {
        let site = Location::caller();
        async move {
            let guard = self.acquire(site, None).await?;
            // UNWRAP: without a deadline, `acquire` returns only with the lock or an error.
            Ok(guard.expect("no deadline"))
        }
    }

    /// Locks it, waiting at most `timeout`; `Ok(None)` when it is still held then.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> std::io::Result<()> {
    /// use std::time::Duration;
    /// let lock = lockscope::tokio::GlobalLock::named("docs-async-timed")?;
    /// let held = lock.lock().await?;
    /// assert!(lock.lock_timeout(Duration::from_millis(5)).await?.is_none());
    /// drop(held);
    /// assert!(lock.lock_timeout(Duration::from_millis(5)).await?.is_some());
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    ///
    /// As [`lock`](GlobalLock::lock).
    ///
    /// # Cancel safety
    ///
    /// As [`lock`](GlobalLock::lock).
    #[track_caller]
    pub fn lock_timeout(
        &self,
        timeout: Duration,
    ) -> impl Future<Output = io::Result<Option<GlobalLockGuard<'_>>>> + '_ {
        let site = Location::caller();
        async move {
            let deadline = tokio::time::Instant::now().checked_add(timeout);
            self.acquire(site, Some(deadline)).await
        }
    }

    /// Locks it if no other process or acquisition holds it now; `Ok(None)` otherwise.
    ///
    /// # Errors
    ///
    /// As [`lock`](GlobalLock::lock).
    #[track_caller]
    pub fn try_lock(&self) -> io::Result<Option<GlobalLockGuard<'_>>> {
        let acq = Acq::new(Location::caller(), 1, Mode::Exclusive);
        let file = self.core.open()?;
        if self.core.try_file(&file)? {
            let token = probe::try_acquired::<lockscope_detector::__private::hooks::Tasks>(
                || self.core.prim(),
                acq,
            );
            Ok(Some(self.core.guard(file, token)))
        } else {
            probe::try_failed(|| self.core.prim(), acq);
            Ok(None)
        }
    }

    /// The wait of [`lock`](GlobalLock::lock) (`deadline` `None`) and
    /// [`lock_timeout`](GlobalLock::lock_timeout) (`Some(None)`: a deadline too far to
    /// represent), recorded step by step by the probe's [`State`].
    async fn acquire(
        &self,
        site: &'static Location<'static>,
        deadline: Option<Option<tokio::time::Instant>>,
    ) -> io::Result<Option<GlobalLockGuard<'_>>> {
        let prim = self.core.prim();
        let acq = Acq::new(site, 1, Mode::Exclusive);
        let file = self.core.open()?;
        let mut w = Waiting {
            core: &self.core,
            state: State::Start {
                timed: deadline.is_some(),
            },
        };
        let mut backoff = Backoff::new();
        loop {
            let taken = self.core.try_file(&file).inspect_err(|_| {
                w.state.failed(prim);
                self.core.wait_ended();
            })?;
            if taken {
                let token = if w.state.is_off() {
                    Token::none()
                } else {
                    w.state.granted(prim, acq)
                };
                return Ok(Some(self.core.guard(file, token)));
            }
            if !w.state.is_off() {
                w.state.pending(prim, acq);
            }
            self.core.describe_holder(&file);
            let left = deadline
                .flatten()
                .map(|d| d.saturating_duration_since(tokio::time::Instant::now()));
            if left == Some(Duration::ZERO) {
                if !w.state.is_off() {
                    w.state.timed_out(prim);
                }
                self.core.wait_ended();
                return Ok(None);
            }
            tokio::time::sleep(backoff.next(left)).await;
        }
    }

    /// Whether any process (this one included) holds it now: `!self.can_lock()` (lockscope
    /// addition). A racy snapshot, as in [`status`](crate::status).
    pub fn is_locked(&self) -> bool {
        !self.can_lock()
    }

    /// Whether a `try_lock` would succeed now (lockscope addition). A racy snapshot; to find
    /// out, it takes the OS lock for an instant on a file of its own (a `try_lock` by another
    /// process at that very instant fails). `false` when the lock file cannot be opened.
    ///
    /// ```
    /// let lock = lockscope::tokio::GlobalLock::named("docs-can-lock")?;
    /// assert!(lock.can_lock() && !lock.is_locked());
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn can_lock(&self) -> bool {
        self.core.can_lock()
    }

    /// Whether the current task (or thread) holds it, by lockscope's books (lockscope
    /// addition). A racy snapshot, as in [`status`](crate::status); always `false` while the
    /// detector is off.
    pub fn held_by_current(&self) -> bool {
        self.core.held_by_current()
    }

    /// Its holders in this process now, by lockscope's books, oldest first (a holder in
    /// another process is not among them: `/debug/locks` names it as `held_elsewhere` while
    /// someone here waits). A racy snapshot.
    pub fn holders(&self) -> Vec<HolderSnapshot> {
        self.core.holders()
    }
}

impl fmt::Debug for GlobalLock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.core.fmt(f)
    }
}
