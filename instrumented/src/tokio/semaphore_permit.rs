//! Permits of [`Semaphore`]: borrowed and owned.

use std::fmt;
use std::sync::Arc;

use lockscope_detector::hooks::Mode;

use super::Semaphore;
use crate::probe::Token;

/// A permit count as the detector's hold tables keep it (`u32`, saturating): only permits
/// merged past `u32::MAX` (tokio counts in `usize`) lose precision there, never here.
fn book(permits: usize) -> u32 {
    u32::try_from(permits).unwrap_or(u32::MAX)
}

/// Wrapper for [`tokio::sync::SemaphorePermit`]: permits returned to the semaphore on drop.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let s = lockscope::tokio::Semaphore::new(3);
/// let mut p = s.acquire_many(2).await.unwrap();
/// let q = p.split(1).unwrap();
/// assert_eq!((p.num_permits(), q.num_permits()), (1, 1));
/// p.merge(q);
/// assert_eq!(p.num_permits(), 2);
/// # }
/// ```
#[clippy::has_significant_drop]
#[must_use]
pub struct SemaphorePermit<'a> {
    sem: &'a Semaphore,
    /// As tokio's, in `usize`: merged permits may exceed `u32::MAX`.
    permits: usize,
    token: Token,
}

/// Wrapper for [`tokio::sync::OwnedSemaphorePermit`]: keeps an `Arc` of the semaphore, so it
/// can move into a spawned task (the holder lockscope reports stays the acquiring task, marked
/// as an owned permit that may have moved).
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// use std::sync::Arc;
/// let s = Arc::new(lockscope::tokio::Semaphore::new(1));
/// let p = s.clone().acquire_owned().await.unwrap();
/// assert!(Arc::ptr_eq(p.semaphore(), &s));
/// # }
/// ```
#[clippy::has_significant_drop]
#[must_use]
pub struct OwnedSemaphorePermit {
    sem: Arc<Semaphore>,
    /// As tokio's, in `usize` (see [`SemaphorePermit`]).
    permits: usize,
    token: Token,
}

impl<'a> SemaphorePermit<'a> {
    pub(crate) fn new(sem: &'a Semaphore, permits: u32, token: Token) -> Self {
        SemaphorePermit {
            sem,
            permits: permits as usize,
            token,
        }
    }

    /// Wrapper for [`tokio::sync::SemaphorePermit::forget`]: the permits never come back.
    /// lockscope counts them as forgotten; a later `add_permits` pays them back, otherwise
    /// the end of a test (or the leak threshold) reports `leaked-permit`.
    ///
    /// ```
    /// let s = lockscope::tokio::Semaphore::new(2);
    /// s.try_acquire().unwrap().forget();
    /// assert_eq!(s.available_permits(), 1);
    /// s.add_permits(1); // paid back
    /// ```
    pub fn forget(mut self) {
        let n = self.permits as u64;
        self.token.forget(self.sem.prim(), n);
        self.permits = 0;
    }

    /// Wrapper for [`tokio::sync::SemaphorePermit::merge`].
    ///
    /// # Panics
    ///
    /// If the permits come from different semaphores, as tokio's.
    ///
    /// ```
    /// let s = lockscope::tokio::Semaphore::new(2);
    /// let mut a = s.try_acquire().unwrap();
    /// a.merge(s.try_acquire().unwrap());
    /// assert_eq!(a.num_permits(), 2);
    /// ```
    #[track_caller]
    pub fn merge(&mut self, mut other: Self) {
        assert!(
            std::ptr::eq(self.sem, other.sem),
            "merging permits from different semaphore instances"
        );
        self.permits += other.permits;
        other.permits = 0;
        let prim = self.sem.prim();
        self.token.update(prim, book(self.permits), Mode::Permits);
        other.token.release(prim);
    }

    /// Wrapper for [`tokio::sync::SemaphorePermit::split`].
    ///
    /// ```
    /// let s = lockscope::tokio::Semaphore::new(3);
    /// let mut a = s.try_acquire_many(3).unwrap();
    /// assert!(a.split(4).is_none());
    /// assert_eq!(a.split(2).unwrap().num_permits(), 2);
    /// ```
    pub fn split(&mut self, n: usize) -> Option<Self> {
        if n > self.permits {
            return None;
        }
        self.permits -= n;
        let prim = self.sem.prim();
        self.token.update(prim, book(self.permits), Mode::Permits);
        Some(SemaphorePermit {
            sem: self.sem,
            permits: n,
            token: self.token.split(prim, book(n)),
        })
    }

    /// Wrapper for [`tokio::sync::SemaphorePermit::semaphore`].
    ///
    /// ```
    /// let s = lockscope::tokio::Semaphore::new(1);
    /// let p = s.try_acquire().unwrap();
    /// assert!(std::ptr::eq(p.semaphore(), &s));
    /// ```
    pub fn semaphore(&self) -> &Semaphore {
        self.sem
    }

    /// Wrapper for [`tokio::sync::SemaphorePermit::num_permits`].
    ///
    /// ```
    /// let s = lockscope::tokio::Semaphore::new(2);
    /// assert_eq!(s.try_acquire_many(2).unwrap().num_permits(), 2);
    /// ```
    pub fn num_permits(&self) -> usize {
        self.permits
    }
}

impl Drop for SemaphorePermit<'_> {
    #[inline]
    fn drop(&mut self) {
        self.token.release(self.sem.prim());
        self.sem.ll.add_permits(self.permits);
    }
}

impl fmt::Debug for SemaphorePermit<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SemaphorePermit")
            .field("sem", &self.sem)
            .field("permits", &self.permits)
            .finish()
    }
}

impl OwnedSemaphorePermit {
    pub(crate) fn new(sem: Arc<Semaphore>, permits: u32, token: Token) -> Self {
        OwnedSemaphorePermit {
            sem,
            permits: permits as usize,
            token,
        }
    }

    /// Wrapper for [`tokio::sync::OwnedSemaphorePermit::forget`] (see
    /// [`SemaphorePermit::forget`] for what lockscope records).
    ///
    /// ```
    /// use std::sync::Arc;
    /// let s = Arc::new(lockscope::tokio::Semaphore::new(1));
    /// s.clone().try_acquire_owned().unwrap().forget();
    /// assert_eq!(s.available_permits(), 0);
    /// s.add_permits(1);
    /// ```
    pub fn forget(mut self) {
        let n = self.permits as u64;
        self.token.forget(self.sem.prim(), n);
        self.permits = 0;
    }

    /// Wrapper for [`tokio::sync::OwnedSemaphorePermit::merge`].
    ///
    /// # Panics
    ///
    /// If the permits come from different semaphores, as tokio's.
    ///
    /// ```
    /// use std::sync::Arc;
    /// let s = Arc::new(lockscope::tokio::Semaphore::new(2));
    /// let mut a = s.clone().try_acquire_owned().unwrap();
    /// a.merge(s.clone().try_acquire_owned().unwrap());
    /// assert_eq!(a.num_permits(), 2);
    /// ```
    #[track_caller]
    pub fn merge(&mut self, mut other: Self) {
        assert!(
            Arc::ptr_eq(&self.sem, &other.sem),
            "merging permits from different semaphore instances"
        );
        self.permits += other.permits;
        other.permits = 0;
        let prim = self.sem.prim();
        self.token.update(prim, book(self.permits), Mode::Permits);
        other.token.release(prim);
    }

    /// Wrapper for [`tokio::sync::OwnedSemaphorePermit::split`].
    ///
    /// ```
    /// use std::sync::Arc;
    /// let s = Arc::new(lockscope::tokio::Semaphore::new(2));
    /// let mut a = s.try_acquire_many_owned(2).unwrap();
    /// assert_eq!(a.split(1).unwrap().num_permits(), 1);
    /// ```
    pub fn split(&mut self, n: usize) -> Option<Self> {
        if n > self.permits {
            return None;
        }
        self.permits -= n;
        let prim = self.sem.prim();
        self.token.update(prim, book(self.permits), Mode::Permits);
        Some(OwnedSemaphorePermit {
            sem: self.sem.clone(),
            permits: n,
            token: self.token.split(prim, book(n)),
        })
    }

    /// Wrapper for [`tokio::sync::OwnedSemaphorePermit::semaphore`].
    ///
    /// ```
    /// use std::sync::Arc;
    /// let s = Arc::new(lockscope::tokio::Semaphore::new(1));
    /// let p = s.clone().try_acquire_owned().unwrap();
    /// assert!(Arc::ptr_eq(p.semaphore(), &s));
    /// ```
    pub fn semaphore(&self) -> &Arc<Semaphore> {
        &self.sem
    }

    /// Wrapper for [`tokio::sync::OwnedSemaphorePermit::num_permits`].
    ///
    /// ```
    /// use std::sync::Arc;
    /// let s = Arc::new(lockscope::tokio::Semaphore::new(1));
    /// assert_eq!(s.try_acquire_owned().unwrap().num_permits(), 1);
    /// ```
    pub fn num_permits(&self) -> usize {
        self.permits
    }
}

impl Drop for OwnedSemaphorePermit {
    fn drop(&mut self) {
        self.token.release(self.sem.prim());
        self.sem.ll.add_permits(self.permits);
    }
}

impl fmt::Debug for OwnedSemaphorePermit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OwnedSemaphorePermit")
            .field("sem", &self.sem)
            .field("permits", &self.permits)
            .finish()
    }
}
