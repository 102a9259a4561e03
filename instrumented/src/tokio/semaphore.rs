//! [`Semaphore`]: a drop-in `tokio::sync::Semaphore`.

use std::fmt;
use std::panic::Location;

use lockscope_detector::__private::hooks::{self, PrimCell, PrimKind};
use lockscope_detector::__private::prim::Prim;

/// Wrapper for [`tokio::sync::Semaphore`]: tokio's fair (FIFO) counting semaphore, with
/// every acquisition, `forget`, `add_permits` and `close` visible to lockscope.
///
/// The detector keeps its capacity (after `add_permits`/`forget_permits`), its holders and
/// waiters, counts forgotten permits, and reports nested acquires (a task asking for a
/// permit while it holds one), leaked permits and stuck queues.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// use std::sync::Arc;
/// use lockscope::tokio::Semaphore;
///
/// let pool = Arc::new(Semaphore::named("db_pool", 2));
/// let mut tasks = Vec::new();
/// for _ in 0..5 {
///     let permit = pool.clone().acquire_owned().await.unwrap();
///     tasks.push(tokio::spawn(async move { drop(permit) }));
/// }
/// for t in tasks { t.await.unwrap(); }
/// assert_eq!(pool.available_permits(), 2);
/// # }
/// ```
// Aligned to a cache line, tokio's semaphore first: its wait list's lock and its permit count
// (the words every acquisition and release of a contended semaphore touches, from every
// worker) then always share one line. Unaligned, whether they did depended on where the
// allocator put the wrapper, so on its size: a contended acquisition that found them on two
// lines moved both between the cores (docs/performance.md, "A semaphore on one cache line").
#[repr(C, align(64))]
pub struct Semaphore {
    pub(crate) ll: tokio::sync::Semaphore,
    pub(crate) cell: PrimCell,
}

impl Semaphore {
    /// The maximum number of permits, as tokio's (`usize::MAX >> 3`).
    pub const MAX_PERMITS: usize = tokio::sync::Semaphore::MAX_PERMITS;

    #[inline]
    pub(crate) fn prim(&self) -> &Prim {
        self.cell.get()
    }

    /// Wrapper for [`tokio::sync::Semaphore::new`], named after the caller's location.
    ///
    /// # Panics
    ///
    /// If `permits` exceeds [`Semaphore::MAX_PERMITS`], as tokio's.
    ///
    /// ```
    /// let s = lockscope::tokio::Semaphore::new(3);
    /// assert_eq!(s.available_permits(), 3);
    /// ```
    #[track_caller]
    pub fn new(permits: usize) -> Self {
        let ll = super::untraced(|| tokio::sync::Semaphore::new(permits));
        Semaphore {
            cell: PrimCell::new(
                None,
                PrimKind::Semaphore,
                Location::caller(),
                permits as u64,
            ),
            ll,
        }
    }

    /// A semaphore named `name` in spans, metrics and reports (lockscope addition).
    ///
    /// # Panics
    ///
    /// If `permits` exceeds [`Semaphore::MAX_PERMITS`].
    ///
    /// ```
    /// let s = lockscope::tokio::Semaphore::named("db_writes", 4);
    /// assert_eq!(s.name(), "db_writes");
    /// ```
    #[track_caller]
    pub fn named(name: impl AsRef<str>, permits: usize) -> Self {
        let ll = super::untraced(|| tokio::sync::Semaphore::new(permits));
        Semaphore {
            cell: PrimCell::new(
                Some(name.as_ref().into()),
                PrimKind::Semaphore,
                Location::caller(),
                permits as u64,
            ),
            ll,
        }
    }

    /// Wrapper for [`tokio::sync::Semaphore::const_new`] (registers on first use).
    ///
    /// ```
    /// use lockscope::tokio::Semaphore;
    /// static PERMITS: Semaphore = Semaphore::const_new(10);
    /// assert_eq!(PERMITS.available_permits(), 10);
    /// ```
    #[track_caller]
    pub const fn const_new(permits: usize) -> Self {
        Semaphore {
            cell: PrimCell::lazy(PrimKind::Semaphore, Location::caller(), permits as u64),
            ll: tokio::sync::Semaphore::const_new(permits),
        }
    }

    /// The name used in spans, metrics and reports (lockscope addition).
    pub fn name(&self) -> &str {
        self.prim().name()
    }

    /// Wrapper for [`tokio::sync::Semaphore::available_permits`].
    ///
    /// ```
    /// let s = lockscope::tokio::Semaphore::new(2);
    /// let _p = s.try_acquire().unwrap();
    /// assert_eq!(s.available_permits(), 1);
    /// ```
    pub fn available_permits(&self) -> usize {
        self.ll.available_permits()
    }

    /// Wrapper for [`tokio::sync::Semaphore::add_permits`]. The detector's capacity grows,
    /// and forgotten permits count as paid back first.
    ///
    /// # Panics
    ///
    /// If the total would exceed [`Semaphore::MAX_PERMITS`], as tokio's.
    ///
    /// ```
    /// let s = lockscope::tokio::Semaphore::new(0);
    /// s.add_permits(2);
    /// assert_eq!(s.available_permits(), 2);
    /// ```
    #[track_caller]
    pub fn add_permits(&self, n: usize) {
        self.ll.add_permits(n);
        if hooks::enabled() {
            hooks::added_permits(self.prim(), n as u64);
        }
    }

    /// Wrapper for [`tokio::sync::Semaphore::forget_permits`]: the capacity shrinks on
    /// purpose (not a leak).
    ///
    /// ```
    /// let s = lockscope::tokio::Semaphore::new(3);
    /// assert_eq!(s.forget_permits(2), 2);
    /// assert_eq!(s.available_permits(), 1);
    /// ```
    pub fn forget_permits(&self, n: usize) -> usize {
        let removed = self.ll.forget_permits(n);
        if hooks::enabled() {
            hooks::removed_permits(self.prim(), removed as u64);
        }
        removed
    }

    /// Wrapper for [`tokio::sync::Semaphore::close`]: waiters get
    /// [`AcquireError`](super::AcquireError), and the detector stops expecting them to be
    /// granted.
    ///
    /// ```
    /// let s = lockscope::tokio::Semaphore::new(1);
    /// s.close();
    /// assert!(s.try_acquire().is_err());
    /// assert!(s.is_closed());
    /// ```
    pub fn close(&self) {
        self.ll.close();
        if hooks::enabled() {
            hooks::closed(self.prim());
        }
    }

    /// Wrapper for [`tokio::sync::Semaphore::is_closed`].
    ///
    /// ```
    /// let s = lockscope::tokio::Semaphore::new(1);
    /// assert!(!s.is_closed());
    /// ```
    pub fn is_closed(&self) -> bool {
        self.ll.is_closed()
    }
}

impl fmt::Debug for Semaphore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.ll, f)
    }
}

crate::status::status_queries! {
    impl[] Semaphore as "lockscope::tokio::Semaphore";
    prim: |s| s.prim();
    // tokio's semaphore cannot tell its capacity (permits may be added or forgotten), so
    // whether any permit is out is read from the books.
    is_locked: |s| crate::status::booked(s.prim(), false).unwrap_or(false);
    can_lock: |s| s.ll.available_permits() > 0 && !s.ll.is_closed();
}

crate::level::declared_levels! {
    impl[] Semaphore as "lockscope::tokio::Semaphore";
    prim: |s| s.prim();
}

#[cfg(test)]
mod tests {
    use super::Semaphore;

    /// The layout the struct's comment relies on: tokio's semaphore at the start of a cache
    /// line, and (without tokio's instrumentation, which adds its spans) within it.
    #[test]
    fn tokio_semaphore_starts_a_cache_line() {
        assert_eq!(std::mem::align_of::<Semaphore>(), 64);
        assert_eq!(std::mem::offset_of!(Semaphore, ll), 0);
        #[cfg(not(tokio_unstable))]
        assert!(
            std::mem::size_of::<tokio::sync::Semaphore>() <= 64,
            "tokio's semaphore no longer fits in one cache line"
        );
    }
}
