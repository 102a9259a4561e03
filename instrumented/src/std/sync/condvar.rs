//! [`Condvar`]: a drop-in `std::sync::Condvar` that works with lockscope's [`MutexGuard`].

use std::fmt;
use std::panic::Location;
use std::time::Duration;

use super::guard::MutexGuard;
use super::{LockResult, WaitTimeoutResult, wrap_lock};
use crate::blocking_shell::{Books, OnUnwind};

/// Wrapper for [`std::sync::Condvar`], for lockscope's [`MutexGuard`]s.
///
/// Waiting releases the mutex (std unlocks it while the thread sleeps), so lockscope takes
/// the guard apart, records the release before the wait and a new hold, at the `wait` call's
/// site, once std has re-locked the mutex, and rebuilds the guard: the detector never sees a
/// sleeping thread holding the mutex, and never reports the notifier as waiting for it.
/// Waiting for the notification itself is not a wait on a lock and is not in the detector's
/// graphs. Spurious wake-ups, timeouts and poisoning are std's.
///
/// ```
/// use std::sync::Arc;
/// use lockscope::std::sync::{Condvar, Mutex};
///
/// let pair = Arc::new((Mutex::named("started", false), Condvar::new()));
/// let p = pair.clone();
/// std::thread::spawn(move || {
///     *p.0.lock().unwrap() = true;
///     p.1.notify_one();
/// });
/// let (lock, cvar) = &*pair;
/// let mut started = lock.lock().unwrap();
/// while !*started {
///     started = cvar.wait(started).unwrap();
/// }
/// ```
#[derive(Default)]
pub struct Condvar {
    inner: std::sync::Condvar,
}

/// A wait on std's condvar: takes `guard` apart, hands std's guard and the books to `wait`
/// (which releases them before waiting), and rebuilds lockscope's guard, hold recorded again,
/// from what std returns, poisoned or not.
fn waited<'a, T: ?Sized, R>(
    guard: MutexGuard<'a, T>,
    site: &'static Location<'static>,
    wait: impl FnOnce(
        std::sync::MutexGuard<'a, T>,
        &mut Books<'_>,
    ) -> LockResult<(std::sync::MutexGuard<'a, T>, R)>,
) -> LockResult<(MutexGuard<'a, T>, R)> {
    let (prim, mut token, inner) = guard.shell.into_parts();
    let mut books = Books::new(prim, &mut token, site, OnUnwind::Release);
    let r = wait(inner, &mut books);
    books.finish();
    wrap_lock(r, |(g, x)| (MutexGuard::new(prim, g, token), x))
}

impl Condvar {
    /// Wrapper for [`std::sync::Condvar::new`]: `const`, usable in `static`s.
    ///
    /// ```
    /// use lockscope::std::sync::Condvar;
    /// static CV: Condvar = Condvar::new();
    /// CV.notify_one(); // nobody waits
    /// ```
    #[inline]
    pub const fn new() -> Condvar {
        Condvar {
            inner: std::sync::Condvar::new(),
        }
    }

    /// Wrapper for [`std::sync::Condvar::wait`]. lockscope releases the hold before the wait
    /// and records a new one, at this call's site, when the mutex is re-taken.
    ///
    /// # Errors
    ///
    /// As std's: if the mutex is poisoned when re-taken, a
    /// [`PoisonError`](super::PoisonError) carrying the guard.
    ///
    /// # Panics
    ///
    /// As std's: it may panic if the condvar is used with more than one mutex.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use lockscope::std::sync::{Condvar, Mutex};
    /// let pair = Arc::new((Mutex::new(false), Condvar::new()));
    /// let p = pair.clone();
    /// std::thread::spawn(move || {
    ///     *p.0.lock().unwrap() = true;
    ///     p.1.notify_one();
    /// });
    /// let mut started = pair.0.lock().unwrap();
    /// while !*started {
    ///     started = pair.1.wait(started).unwrap();
    /// }
    /// ```
    #[track_caller]
    pub fn wait<'a, T>(&self, guard: MutexGuard<'a, T>) -> LockResult<MutexGuard<'a, T>> {
        let r = waited(guard, Location::caller(), |g, books| {
            books.release();
            wrap_lock(self.inner.wait(g), |g| (g, ()))
        });
        wrap_lock(r, |(g, ())| g)
    }

    /// Wrapper for [`std::sync::Condvar::wait_while`]: `condition` runs with the mutex held
    /// in the books too; each wait in between releases and re-records the hold.
    ///
    /// # Errors
    ///
    /// As [`wait`](Condvar::wait).
    ///
    /// # Panics
    ///
    /// As [`wait`](Condvar::wait).
    ///
    /// ```
    /// use std::sync::Arc;
    /// use lockscope::std::sync::{Condvar, Mutex};
    /// let pair = Arc::new((Mutex::new(0), Condvar::new()));
    /// let p = pair.clone();
    /// std::thread::spawn(move || {
    ///     *p.0.lock().unwrap() = 3;
    ///     p.1.notify_all();
    /// });
    /// let n = pair.1.wait_while(pair.0.lock().unwrap(), |n| *n < 3).unwrap();
    /// assert_eq!(*n, 3);
    /// ```
    #[track_caller]
    pub fn wait_while<'a, T, F>(
        &self,
        guard: MutexGuard<'a, T>,
        mut condition: F,
    ) -> LockResult<MutexGuard<'a, T>>
    where
        F: FnMut(&mut T) -> bool,
    {
        let r = waited(guard, Location::caller(), |g, books| {
            let r = self
                .inner
                .wait_while(g, |t| books.condition(&mut condition, t));
            wrap_lock(r, |g| (g, ()))
        });
        wrap_lock(r, |(g, ())| g)
    }

    /// Wrapper for [`std::sync::Condvar::wait_timeout`]; see [`wait`](Condvar::wait).
    ///
    /// # Errors
    ///
    /// As [`wait`](Condvar::wait).
    ///
    /// # Panics
    ///
    /// As [`wait`](Condvar::wait).
    ///
    /// ```
    /// use std::time::Duration;
    /// use lockscope::std::sync::{Condvar, Mutex};
    /// let (m, cv) = (Mutex::new(()), Condvar::new());
    /// let (_g, r) = cv.wait_timeout(m.lock().unwrap(), Duration::from_millis(1)).unwrap();
    /// assert!(r.timed_out());
    /// ```
    #[track_caller]
    pub fn wait_timeout<'a, T>(
        &self,
        guard: MutexGuard<'a, T>,
        dur: Duration,
    ) -> LockResult<(MutexGuard<'a, T>, WaitTimeoutResult)> {
        waited(guard, Location::caller(), |g, books| {
            books.release();
            self.inner.wait_timeout(g, dur)
        })
    }

    /// Wrapper for [`std::sync::Condvar::wait_timeout_ms`], deprecated there as here.
    ///
    /// # Errors
    ///
    /// As [`wait`](Condvar::wait).
    ///
    /// ```
    /// # #![allow(deprecated)]
    /// use lockscope::std::sync::{Condvar, Mutex};
    /// let (m, cv) = (Mutex::new(()), Condvar::new());
    /// let (_g, notified) = cv.wait_timeout_ms(m.lock().unwrap(), 1).unwrap();
    /// assert!(!notified);
    /// ```
    #[track_caller]
    #[deprecated(since = "1.6.0", note = "replaced by `Condvar::wait_timeout`")]
    pub fn wait_timeout_ms<'a, T>(
        &self,
        guard: MutexGuard<'a, T>,
        ms: u32,
    ) -> LockResult<(MutexGuard<'a, T>, bool)> {
        let r = self.wait_timeout(guard, Duration::from_millis(u64::from(ms)));
        wrap_lock(r, |(g, t)| (g, !t.timed_out()))
    }

    /// Wrapper for [`std::sync::Condvar::wait_timeout_while`]; see
    /// [`wait_while`](Condvar::wait_while).
    ///
    /// # Errors
    ///
    /// As [`wait`](Condvar::wait).
    ///
    /// # Panics
    ///
    /// As [`wait`](Condvar::wait).
    ///
    /// ```
    /// use std::time::Duration;
    /// use lockscope::std::sync::{Condvar, Mutex};
    /// let (m, cv) = (Mutex::new(0), Condvar::new());
    /// let (g, r) = cv
    ///     .wait_timeout_while(m.lock().unwrap(), Duration::from_millis(1), |n| *n == 0)
    ///     .unwrap();
    /// assert!(r.timed_out());
    /// assert_eq!(*g, 0);
    /// ```
    #[track_caller]
    pub fn wait_timeout_while<'a, T, F>(
        &self,
        guard: MutexGuard<'a, T>,
        dur: Duration,
        mut condition: F,
    ) -> LockResult<(MutexGuard<'a, T>, WaitTimeoutResult)>
    where
        F: FnMut(&mut T) -> bool,
    {
        waited(guard, Location::caller(), |g, books| {
            self.inner
                .wait_timeout_while(g, dur, |t| books.condition(&mut condition, t))
        })
    }

    /// Wrapper for [`std::sync::Condvar::notify_one`].
    ///
    /// ```
    /// let cv = lockscope::std::sync::Condvar::new();
    /// cv.notify_one(); // nobody waits: nothing happens
    /// ```
    #[inline]
    pub fn notify_one(&self) {
        self.inner.notify_one()
    }

    /// Wrapper for [`std::sync::Condvar::notify_all`].
    ///
    /// ```
    /// let cv = lockscope::std::sync::Condvar::new();
    /// cv.notify_all();
    /// ```
    #[inline]
    pub fn notify_all(&self) {
        self.inner.notify_all()
    }
}

impl fmt::Debug for Condvar {
    /// As std's: `Condvar { .. }`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.inner, f)
    }
}
