//! [`Condvar`]: a drop-in `parking_lot::Condvar` that works with lockscope's
//! [`MutexGuard`].

use std::fmt;
use std::panic::Location;
use std::time::{Duration, Instant};

use super::WaitTimeoutResult;
use super::mutex_guard::MutexGuard;
use crate::blocking_shell::{Books, OnUnwind};

/// Wrapper for [`parking_lot::Condvar`], for lockscope's [`MutexGuard`]s.
///
/// Waiting releases the mutex (parking_lot unlocks it while the thread sleeps), so lockscope
/// records the release before the wait and a new hold, at the `wait` call's site, once the
/// mutex is re-taken: the detector never sees a sleeping thread holding the mutex, and never
/// reports the notifier as waiting for it. Waiting for the notification itself is not a wait
/// on a lock and is not in the detector's graphs.
///
/// ```
/// use std::sync::Arc;
/// use lockscope::parking_lot::{Condvar, Mutex};
///
/// let pair = Arc::new((Mutex::named("ready", false), Condvar::new()));
/// let p = pair.clone();
/// let t = std::thread::spawn(move || {
///     *p.0.lock() = true;
///     p.1.notify_one();
/// });
/// let (lock, cvar) = &*pair;
/// let mut ready = lock.lock();
/// cvar.wait_while(&mut ready, |ready| !*ready);
/// assert!(*ready);
/// # drop(ready);
/// # t.join().unwrap();
/// ```
#[derive(Default)]
pub struct Condvar {
    inner: parking_lot::Condvar,
}

/// The timed waits, `plain` (`wait_until`, `wait_for`) or `while` a condition holds
/// (`wait_while_until`, `wait_while_for`): parking_lot's method of the same name, whose
/// deadline is of type `$timeout`, with the books kept as in [`Condvar::wait`].
macro_rules! timed_waits {
    (plain $($(#[$doc:meta])* fn $name:ident($timeout:ty);)*) => {$(
        $(#[$doc])*
        #[track_caller]
        pub fn $name<T: ?Sized>(
            &self,
            guard: &mut MutexGuard<'_, T>,
            timeout: $timeout,
        ) -> WaitTimeoutResult {
            waited(guard, Location::caller(), |g, books| {
                books.release();
                self.inner.$name(g, timeout)
            })
        }
    )*};
    (while $($(#[$doc:meta])* fn $name:ident($timeout:ty);)*) => {$(
        $(#[$doc])*
        #[track_caller]
        pub fn $name<T, F>(
            &self,
            guard: &mut MutexGuard<'_, T>,
            mut condition: F,
            timeout: $timeout,
        ) -> WaitTimeoutResult
        where
            T: ?Sized,
            F: FnMut(&mut T) -> bool,
        {
            waited(guard, Location::caller(), |g, books| {
                self.inner.$name(g, |t| books.condition(&mut condition, t), timeout)
            })
        }
    )*};
}

impl Condvar {
    /// Wrapper for [`parking_lot::Condvar::new`]: `const`, usable in `static`s.
    ///
    /// ```
    /// use lockscope::parking_lot::Condvar;
    /// static CV: Condvar = Condvar::new();
    /// assert!(!CV.notify_one());
    /// ```
    #[inline]
    pub const fn new() -> Condvar {
        Condvar {
            inner: parking_lot::Condvar::new(),
        }
    }

    /// Wrapper for [`parking_lot::Condvar::notify_one`].
    ///
    /// ```
    /// let cv = lockscope::parking_lot::Condvar::new();
    /// assert!(!cv.notify_one()); // nobody waits
    /// ```
    #[inline]
    pub fn notify_one(&self) -> bool {
        self.inner.notify_one()
    }

    /// Wrapper for [`parking_lot::Condvar::notify_all`].
    ///
    /// ```
    /// let cv = lockscope::parking_lot::Condvar::new();
    /// assert_eq!(cv.notify_all(), 0);
    /// ```
    #[inline]
    pub fn notify_all(&self) -> usize {
        self.inner.notify_all()
    }

    /// Wrapper for [`parking_lot::Condvar::wait`]. lockscope releases the hold before the
    /// wait and records a new one, at this call's site, when the mutex is re-taken.
    ///
    /// # Panics
    ///
    /// As parking_lot's: when another thread waits on this condvar with a different mutex.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use lockscope::parking_lot::{Condvar, Mutex};
    /// let pair = Arc::new((Mutex::new(false), Condvar::new()));
    /// let p = pair.clone();
    /// std::thread::spawn(move || {
    ///     *p.0.lock() = true;
    ///     p.1.notify_one();
    /// });
    /// let mut started = pair.0.lock();
    /// while !*started {
    ///     pair.1.wait(&mut started);
    /// }
    /// ```
    #[track_caller]
    pub fn wait<T: ?Sized>(&self, guard: &mut MutexGuard<'_, T>) {
        waited(guard, Location::caller(), |g, books| {
            books.release();
            self.inner.wait(g);
        });
    }

    timed_waits! {
        plain
        /// Wrapper for [`parking_lot::Condvar::wait_until`]; see [`wait`](Condvar::wait).
        ///
        /// # Panics
        ///
        /// As [`wait`](Condvar::wait).
        ///
        /// ```
        /// use std::time::{Duration, Instant};
        /// use lockscope::parking_lot::{Condvar, Mutex};
        /// let (m, cv) = (Mutex::new(()), Condvar::new());
        /// let mut g = m.lock();
        /// assert!(cv.wait_until(&mut g, Instant::now() + Duration::from_millis(1)).timed_out());
        /// ```
        fn wait_until(Instant);
        /// Wrapper for [`parking_lot::Condvar::wait_for`]; see [`wait`](Condvar::wait).
        ///
        /// # Panics
        ///
        /// As [`wait`](Condvar::wait).
        ///
        /// ```
        /// use std::time::Duration;
        /// use lockscope::parking_lot::{Condvar, Mutex};
        /// let (m, cv) = (Mutex::new(()), Condvar::new());
        /// let mut g = m.lock();
        /// assert!(cv.wait_for(&mut g, Duration::from_millis(1)).timed_out());
        /// ```
        fn wait_for(Duration);
    }

    /// Wrapper for [`parking_lot::Condvar::wait_while`]: `condition` runs with the mutex held
    /// in the books too; each wait in between releases and re-records the hold.
    ///
    /// # Panics
    ///
    /// As [`wait`](Condvar::wait).
    ///
    /// ```
    /// use std::sync::Arc;
    /// use lockscope::parking_lot::{Condvar, Mutex};
    /// let pair = Arc::new((Mutex::new(0), Condvar::new()));
    /// let p = pair.clone();
    /// std::thread::spawn(move || {
    ///     *p.0.lock() = 3;
    ///     p.1.notify_all();
    /// });
    /// let mut n = pair.0.lock();
    /// pair.1.wait_while(&mut n, |n| *n < 3);
    /// assert_eq!(*n, 3);
    /// ```
    #[track_caller]
    pub fn wait_while<T, F>(&self, guard: &mut MutexGuard<'_, T>, mut condition: F)
    where
        T: ?Sized,
        F: FnMut(&mut T) -> bool,
    {
        waited(guard, Location::caller(), |g, books| {
            self.inner
                .wait_while(g, |t| books.condition(&mut condition, t));
        });
    }

    timed_waits! {
        while
        /// Wrapper for [`parking_lot::Condvar::wait_while_until`]; see
        /// [`wait_while`](Condvar::wait_while).
        ///
        /// # Panics
        ///
        /// As [`wait`](Condvar::wait).
        ///
        /// ```
        /// use std::time::{Duration, Instant};
        /// use lockscope::parking_lot::{Condvar, Mutex};
        /// let (m, cv) = (Mutex::new(0), Condvar::new());
        /// let mut g = m.lock();
        /// let deadline = Instant::now() + Duration::from_millis(1);
        /// assert!(cv.wait_while_until(&mut g, |n| *n == 0, deadline).timed_out());
        /// ```
        fn wait_while_until(Instant);
        /// Wrapper for [`parking_lot::Condvar::wait_while_for`]; see
        /// [`wait_while`](Condvar::wait_while).
        ///
        /// # Panics
        ///
        /// As [`wait`](Condvar::wait).
        ///
        /// ```
        /// use std::time::Duration;
        /// use lockscope::parking_lot::{Condvar, Mutex};
        /// let (m, cv) = (Mutex::new(0), Condvar::new());
        /// let mut g = m.lock();
        /// assert!(!cv.wait_while_for(&mut g, |n| *n != 0, Duration::from_millis(1)).timed_out());
        /// ```
        fn wait_while_for(Duration);
    }
}

/// A wait on `guard`'s mutex: `wait` gets parking_lot's guard and the books of the hold
/// (released before the condvar unlocks the mutex); once it returns with the mutex locked, the
/// hold is recorded again at `site` (also when it unwinds, as parking_lot re-locks then too).
fn waited<'a, T: ?Sized, R>(
    guard: &mut MutexGuard<'a, T>,
    site: &'static Location<'static>,
    wait: impl FnOnce(&mut parking_lot::MutexGuard<'a, T>, &mut Books<'_>) -> R,
) -> R {
    let (lock, held, token) = guard.shell.parts_mut();
    // SAFETY: `lock` is the mutex this guard holds (the wait returns, or unwinds, with it
    // locked again).
    let mut inner = unsafe { held.lend(*lock) };
    let mut books = Books::new(lock.prim(), token, site, OnUnwind::Regrant);
    let r = wait(&mut inner, &mut books);
    books.regrant();
    r
}

impl fmt::Debug for Condvar {
    /// As parking_lot's: `Condvar { .. }`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.inner, f)
    }
}
