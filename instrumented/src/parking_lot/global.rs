//! [`GlobalLock`]: a named lock across the processes of a machine, blocking form.

use std::fmt;
use std::io;
use std::panic::Location;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use lockscope_detector::__private::hooks::{Acq, Mode, PrimKind};
use lockscope_detector::HolderSnapshot;

use crate::global::{Backoff, Core};
pub use crate::global::{GlobalLockGuard, global_lock_dir};
use crate::probe;

/// A named lock across the processes of the machine, blocking form (lockscope addition):
/// Dart's `GlobalLock('name')`, on the OS's file locks (`flock` on Unix, `LockFileEx` on
/// Windows) rather than a heartbeat, so a holder that dies, however it dies, releases the lock
/// at once. The async form is [`lockscope::tokio::GlobalLock`](crate::tokio::GlobalLock).
///
/// The lock is a file: [`named`](GlobalLock::named) puts it in [`global_lock_dir`] (the name
/// made safe for a file name), [`at`](GlobalLock::at) wherever you say. Processes that use the
/// same file exclude each other, and so do two acquisitions in one process (each opens the
/// file anew). The holder writes its pid and command line into the file, so that a waiter can
/// say who holds it. The file stays after use (removing a lock file races with a process
/// about to lock it); it is empty when nobody holds the lock.
///
/// For the detector it is a blocking mutex like any other: named, in `/debug/locks` and the
/// metrics, its acquisitions in the lock-order graph, its waits in the books. A wait for a
/// holder in another process past the stuck threshold is a `stuck-queue` that names that
/// process (``held by process 4121 (`cargo test`)``); a wait for a holder in this process is
/// judged as for any mutex (a deadlock through it is found).
///
/// ```
/// use lockscope::parking_lot::GlobalLock;
///
/// let emulator = GlobalLock::named("docs-emulator")?;
/// let guard = emulator.lock()?; // no other process holds "docs-emulator" until it drops
/// assert!(emulator.try_lock()?.is_none(), "an acquisition in this process waits too");
/// drop(guard);
/// assert!(emulator.try_lock()?.is_some());
/// # Ok::<(), std::io::Error>(())
/// ```
pub struct GlobalLock {
    core: Core,
}

impl GlobalLock {
    /// The global lock named `name`, on the file `<global_lock_dir>/<name>.lock`: any
    /// character of `name` other than ASCII letters, digits, `-`, `_` and `.` becomes `_`
    /// (and a hash of the name is added then), so no name reaches outside the directory.
    /// Creates the directory when missing.
    ///
    /// # Errors
    ///
    /// The directory cannot be created, or its path is not a directory.
    #[track_caller]
    pub fn named(name: impl AsRef<str>) -> io::Result<Self> {
        let core = Core::named(name.as_ref(), PrimKind::BlockingMutex, Location::caller())?;
        Ok(GlobalLock { core })
    }

    /// The global lock named `name` (in reports) on the file `path`, created when first
    /// locked. Its directory must exist.
    ///
    /// ```
    /// let dir = std::env::temp_dir();
    /// let lock = lockscope::parking_lot::GlobalLock::at("docs-at", dir.join("docs-at.lock"));
    /// assert_eq!(lock.path(), dir.join("docs-at.lock"));
    /// drop(lock.lock()?);
    /// # Ok::<(), std::io::Error>(())
    /// ```
    #[track_caller]
    pub fn at(name: impl AsRef<str>, path: impl Into<PathBuf>) -> Self {
        let core = Core::at(
            name.as_ref(),
            path.into(),
            PrimKind::BlockingMutex,
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

    /// Locks it, blocking the thread until no other process (and no other acquisition in
    /// this one) holds it. The OS wakes the waiter as soon as the holder releases or dies.
    ///
    /// # Errors
    ///
    /// The lock file cannot be opened or locked (permissions, a full disk, a file system
    /// without locks).
    #[track_caller]
    pub fn lock(&self) -> io::Result<GlobalLockGuard<'_>> {
        let acq = Acq::new(Location::caller(), 1, Mode::Exclusive);
        let file = self.core.open()?;
        if self.core.try_file(&file)? {
            return Ok(self.core.guard(
                file,
                probe::granted::<lockscope_detector::__private::hooks::Threads>(
                    || self.core.prim(),
                    acq,
                ),
            ));
        }
        let block = || {
            self.core.describe_holder(&file);
            self.core.lock_file(&file)
        };
        let ((), token) = probe::blocking(self.core.prim(), acq, || None, block)
            .inspect_err(|_| self.core.wait_ended())?;
        Ok(self.core.guard(file, token))
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
            let token = probe::try_acquired::<lockscope_detector::__private::hooks::Threads>(
                || self.core.prim(),
                acq,
            );
            Ok(Some(self.core.guard(file, token)))
        } else {
            probe::try_failed(|| self.core.prim(), acq);
            Ok(None)
        }
    }

    /// Locks it, waiting at most `timeout`; `Ok(None)` when it is still held then. The OS
    /// offers no timed file lock, so the wait polls: from every millisecond, backing off to
    /// every 32 ms.
    ///
    /// ```
    /// use std::time::Duration;
    /// let lock = lockscope::parking_lot::GlobalLock::named("docs-timed")?;
    /// let held = lock.lock()?;
    /// assert!(lock.try_lock_for(Duration::from_millis(5))?.is_none());
    /// drop(held);
    /// assert!(lock.try_lock_for(Duration::from_millis(5))?.is_some());
    /// # Ok::<(), std::io::Error>(())
    /// ```
    ///
    /// # Errors
    ///
    /// As [`lock`](GlobalLock::lock).
    #[track_caller]
    pub fn try_lock_for(&self, timeout: Duration) -> io::Result<Option<GlobalLockGuard<'_>>> {
        self.lock_until(Location::caller(), Instant::now().checked_add(timeout))
    }

    /// Locks it, waiting until `deadline` at most; see
    /// [`try_lock_for`](GlobalLock::try_lock_for).
    ///
    /// # Errors
    ///
    /// As [`lock`](GlobalLock::lock).
    #[track_caller]
    pub fn try_lock_until(&self, deadline: Instant) -> io::Result<Option<GlobalLockGuard<'_>>> {
        self.lock_until(Location::caller(), Some(deadline))
    }

    /// A timed lock (`deadline` `None`: too far to represent, so none).
    fn lock_until(
        &self,
        site: &'static Location<'static>,
        deadline: Option<Instant>,
    ) -> io::Result<Option<GlobalLockGuard<'_>>> {
        let acq = Acq::new(site, 1, Mode::Exclusive);
        let file = self.core.open()?;
        if self.core.try_file(&file)? {
            return Ok(Some(self.core.guard(
                file,
                probe::granted::<lockscope_detector::__private::hooks::Threads>(
                    || self.core.prim(),
                    acq,
                ),
            )));
        }
        let mut failed = None;
        let poll = || {
            let mut backoff = Backoff::new();
            loop {
                self.core.describe_holder(&file);
                let left = deadline.map(|d| d.saturating_duration_since(Instant::now()));
                if left == Some(Duration::ZERO) {
                    return None;
                }
                std::thread::sleep(backoff.next(left));
                match self.core.try_file(&file) {
                    Ok(true) => return Some(()),
                    Ok(false) => {}
                    Err(e) => {
                        failed = Some(e);
                        return None;
                    }
                }
            }
        };
        let r = probe::blocking_timed(self.core.prim(), acq, || None, poll);
        if r.is_none() {
            self.core.wait_ended();
        }
        if let Some(e) = failed {
            return Err(e);
        }
        Ok(r.map(|((), token)| self.core.guard(file, token)))
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
    /// let lock = lockscope::parking_lot::GlobalLock::named("docs-can-lock")?;
    /// assert!(lock.can_lock() && !lock.is_locked());
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn can_lock(&self) -> bool {
        self.core.can_lock()
    }

    /// Whether the current thread (or task) holds it, by lockscope's books (lockscope
    /// addition). A racy snapshot, as in [`status`](crate::status); always `false` while the
    /// detector is off.
    ///
    /// ```
    /// let lock = lockscope::parking_lot::GlobalLock::named("docs-held")?;
    /// let g = lock.lock()?;
    /// assert!(lock.held_by_current());
    /// drop(g);
    /// assert!(!lock.held_by_current());
    /// # Ok::<(), std::io::Error>(())
    /// ```
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
