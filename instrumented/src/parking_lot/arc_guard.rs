//! parking_lot's `arc_lock` guards (feature `arc_lock`): [`ArcMutexGuard`],
//! [`ArcRwLockReadGuard`], [`ArcRwLockWriteGuard`], [`ArcRwLockUpgradableReadGuard`], and the
//! `lock_arc`, `read_arc`, ... methods that return them.
//!
//! One generic guard, [`ArcGuard`], holds the `Arc` of the lock and the hold's token; the four
//! public names are aliases of it. It never re-implements a guard method: every acquisition is
//! the borrowed form's (`lock_arc` is `lock`, then the borrowed guard is adopted), and every
//! guard method lends the hold back to the borrowed guard type ([`Access::lend`]) and calls
//! that guard's own method, so the release order, the books of `unlocked`, `bump`, upgrades and
//! downgrades exist once, in the borrowed guards.

use std::fmt;
use std::marker::PhantomData;
use std::mem::ManuallyDrop;
use std::ops::{Deref, DerefMut};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::guard::token_of;
use super::{
    Mutex, MutexGuard, RawMutex, RawRwLock, RwLock, RwLockReadGuard, RwLockUpgradableReadGuard,
    RwLockWriteGuard,
};
use crate::probe::Token;

/// Wrapper for [`parking_lot::ArcMutexGuard`]: a mutex guard that owns an `Arc` of its mutex
/// (no lifetime), made by [`Mutex::lock_arc`] and friends. `R` is parking_lot's
/// [`RawMutex`], as in parking_lot's name.
///
/// ```
/// use std::sync::Arc;
/// use lockscope::parking_lot::{ArcMutexGuard, Mutex, RawMutex};
///
/// let m = Arc::new(Mutex::named("jobs", vec![1]));
/// let mut g: ArcMutexGuard<RawMutex, Vec<i32>> = m.lock_arc();
/// std::thread::spawn(move || assert!(m.try_lock().is_none())).join().unwrap();
/// g.push(2); // the guard outlives every borrow of the mutex
/// assert_eq!(*g, [1, 2]);
/// ```
pub type ArcMutexGuard<R, T> = ArcGuard<R, Mutex<T>, Excl>;

/// Wrapper for [`parking_lot::ArcRwLockReadGuard`], made by [`RwLock::read_arc`] and friends.
///
/// ```
/// use std::sync::Arc;
/// use lockscope::parking_lot::{ArcRwLockReadGuard, RawRwLock, RwLock};
/// let r = Arc::new(RwLock::new(1));
/// let g: ArcRwLockReadGuard<RawRwLock, i32> = r.read_arc();
/// assert_eq!(*g, 1);
/// assert!(r.try_write().is_none());
/// ```
pub type ArcRwLockReadGuard<R, T> = ArcGuard<R, RwLock<T>, Read>;

/// Wrapper for [`parking_lot::ArcRwLockWriteGuard`], made by [`RwLock::write_arc`] and
/// friends.
///
/// ```
/// use std::sync::Arc;
/// use lockscope::parking_lot::RwLock;
/// let r = Arc::new(RwLock::new(1));
/// *r.write_arc() += 1;
/// assert_eq!(*r.read(), 2);
/// ```
pub type ArcRwLockWriteGuard<R, T> = ArcGuard<R, RwLock<T>, Write>;

/// Wrapper for [`parking_lot::ArcRwLockUpgradableReadGuard`], made by
/// [`RwLock::upgradable_read_arc`] and friends.
///
/// ```
/// use std::sync::Arc;
/// use lockscope::parking_lot::{ArcRwLockUpgradableReadGuard, RwLock};
/// let r = Arc::new(RwLock::new(1));
/// let u = r.upgradable_read_arc();
/// let mut w = ArcRwLockUpgradableReadGuard::upgrade(u);
/// *w += 1;
/// drop(w);
/// assert_eq!(*r.read(), 2);
/// ```
pub type ArcRwLockUpgradableReadGuard<R, T> = ArcGuard<R, RwLock<T>, Upgradable>;

/// The guard behind the four `Arc*Guard` names: the lock's `Arc` and the hold's token. `R` is
/// parking_lot's raw lock type (only in the name), `L` the lockscope lock, `A` the access held
/// ([`Excl`], [`Read`], [`Write`] or [`Upgradable`]).
///
/// Dropping it lends the hold to the borrowed guard of its access and drops that: the books
/// are released first, then the lock, as for every lockscope guard. Like parking_lot's, it
/// is `!Send` unless parking_lot's `send_guard` feature is on. It is `Sync` when the `Arc` of
/// its lock is (for a mutex: `T: Send + Sync`), where parking_lot's `ArcMutexGuard` asks only
/// `T: Sync`: a shared guard hands out `&Arc<Mutex<T>>`, whose clones may drop `T` on another
/// thread.
#[clippy::has_significant_drop]
#[must_use = "if unused the lock will immediately unlock"]
pub struct ArcGuard<R, L: ?Sized, A> {
    lock: Arc<L>,
    token: Token,
    /// Drops the hold through the borrowed guard of `A` (set where `A: Access<L>` is known).
    release: fn(&L, Token),
    marker: Marker<R, A>,
}

/// parking_lot's guard marker (`!Send` unless its `send_guard` feature is on); `R` and `A`
/// only name the guard and take no part in its auto traits.
type Marker<R, A> = PhantomData<(fn() -> (R, A), GuardMarker)>;
type GuardMarker = <RawMutex as super::lock_api::RawMutex>::GuardMarker;

/// Access marker of [`ArcMutexGuard`]: the mutex, exclusively.
#[derive(Debug)]
pub struct Excl;
/// Access marker of [`ArcRwLockReadGuard`]: a shared read.
#[derive(Debug)]
pub struct Read;
/// Access marker of [`ArcRwLockWriteGuard`]: the write lock.
#[derive(Debug)]
pub struct Write;
/// Access marker of [`ArcRwLockUpgradableReadGuard`]: an upgradable read.
#[derive(Debug)]
pub struct Upgradable;

/// An access `Self` to lock `L`, as lockscope's borrowed guard for it.
pub(super) trait Access<L: ?Sized> {
    /// The borrowed guard of this access.
    type Guard<'a>
    where
        L: 'a;

    /// A borrowed guard for the hold recorded in `token`.
    ///
    /// # Safety
    ///
    /// The lock is held with this access, and no other guard owns that hold.
    unsafe fn lend(lock: &L, token: Token) -> Self::Guard<'_>;

    /// Takes the hold back from a borrowed guard: its token; the inner guard is forgotten,
    /// so the lock stays held.
    fn take_back(guard: Self::Guard<'_>) -> Token;
}

impl<T: ?Sized> Access<Mutex<T>> for Excl {
    type Guard<'a>
        = MutexGuard<'a, T>
    where
        T: 'a;

    unsafe fn lend(lock: &Mutex<T>, token: Token) -> MutexGuard<'_, T> {
        // SAFETY: the caller's contract: this thread's hold, owned by no other guard.
        MutexGuard::new(lock, unsafe { lock.inner.make_guard_unchecked() }, token)
    }

    fn take_back(guard: MutexGuard<'_, T>) -> Token {
        token_of(guard.shell)
    }
}

/// [`Access`] for the three rwlock accesses, which differ in names only.
macro_rules! rwlock_access {
    ($access:ident, $guard:ident, $make:ident) => {
        impl<T: ?Sized> Access<RwLock<T>> for $access {
            type Guard<'a>
                = $guard<'a, T>
            where
                T: 'a;

            unsafe fn lend(lock: &RwLock<T>, token: Token) -> $guard<'_, T> {
                // SAFETY: the caller's contract: this hold, owned by no other guard.
                $guard::new(lock, unsafe { lock.inner.$make() }, token)
            }

            fn take_back(guard: $guard<'_, T>) -> Token {
                token_of(guard.shell)
            }
        }
    };
}

rwlock_access!(Read, RwLockReadGuard, make_read_guard_unchecked);
rwlock_access!(Write, RwLockWriteGuard, make_write_guard_unchecked);
rwlock_access!(
    Upgradable,
    RwLockUpgradableReadGuard,
    make_upgradable_guard_unchecked
);

/// A hold lent to a borrowed guard for the length of one method; given back to the Arc guard
/// when dropped, also when the method unwinds (the borrowed guard's methods leave it whole).
struct Lent<'a, G> {
    guard: ManuallyDrop<G>,
    token: &'a mut Token,
    back: fn(G) -> Token,
}

impl<G> Drop for Lent<'_, G> {
    fn drop(&mut self) {
        // SAFETY: `guard` is taken once, here, and never used again.
        let guard = unsafe { ManuallyDrop::take(&mut self.guard) };
        *self.token = (self.back)(guard);
    }
}

impl<G> Deref for Lent<'_, G> {
    type Target = G;
    fn deref(&self) -> &G {
        &self.guard
    }
}

impl<G> DerefMut for Lent<'_, G> {
    fn deref_mut(&mut self) -> &mut G {
        &mut self.guard
    }
}

// The crate-private `Access` bound gates only the private helpers below.
#[allow(private_bounds)]
impl<R, L: ?Sized, A: Access<L>> ArcGuard<R, L, A> {
    /// Adopts the hold of a borrowed guard of `lock`: the lock stays held, now by this guard.
    fn adopt(lock: &Arc<L>, guard: A::Guard<'_>) -> Self {
        let token = A::take_back(guard);
        Self::from_parts(lock.clone(), token)
    }

    fn from_parts(lock: Arc<L>, token: Token) -> Self {
        ArcGuard {
            lock,
            token,
            // SAFETY: called from `Drop` with this guard's own hold.
            release: |lock, token| drop(unsafe { A::lend(lock, token) }),
            marker: PhantomData,
        }
    }

    /// Takes the guard apart without running its `Drop`.
    fn into_parts(s: Self) -> (Arc<L>, Token) {
        let s = ManuallyDrop::new(s);
        // SAFETY: `s` is never dropped or used again, so each field is moved out exactly once.
        unsafe { (std::ptr::read(&s.lock), std::ptr::read(&s.token)) }
    }

    /// Lends the hold to the borrowed guard until the returned value drops.
    fn lend(&mut self) -> Lent<'_, A::Guard<'_>> {
        let token = std::mem::take(&mut self.token);
        Lent {
            // SAFETY: this guard's hold; its token was taken just above, and `Lent` gives it
            // back.
            guard: ManuallyDrop::new(unsafe { A::lend(&self.lock, token) }),
            token: &mut self.token,
            back: A::take_back,
        }
    }

    /// Unlocks and returns the `Arc`: the borrowed guard's drop, books first.
    fn release_into_arc(s: Self) -> Arc<L> {
        let (lock, token) = Self::into_parts(s);
        // SAFETY: this guard's hold, taken out of it just above.
        drop(unsafe { A::lend(&lock, token) });
        lock
    }
}

impl<R, L: ?Sized, A> Drop for ArcGuard<R, L, A> {
    #[inline]
    fn drop(&mut self) {
        (self.release)(&self.lock, std::mem::take(&mut self.token));
    }
}

/// Data access for a lock with a `data_ptr`.
macro_rules! arc_deref {
    ($lock:ident, $($mut_access:ident),*) => {
        impl<R, T: ?Sized, A> Deref for ArcGuard<R, $lock<T>, A> {
            type Target = T;
            #[inline]
            fn deref(&self) -> &T {
                // SAFETY: the guard holds the lock with at least read access while it lives.
                unsafe { &*self.lock.inner.data_ptr() }
            }
        }
        $(
            impl<R, T: ?Sized> DerefMut for ArcGuard<R, $lock<T>, $mut_access> {
                #[inline]
                fn deref_mut(&mut self) -> &mut T {
                    // SAFETY: the guard holds the lock exclusively, and `&mut self` is unique.
                    unsafe { &mut *self.lock.inner.data_ptr() }
                }
            }
        )*
        impl<R, T: ?Sized + fmt::Debug, A> fmt::Debug for ArcGuard<R, $lock<T>, A> {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                fmt::Debug::fmt(&**self, f)
            }
        }
        impl<R, T: ?Sized + fmt::Display, A> fmt::Display for ArcGuard<R, $lock<T>, A> {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                fmt::Display::fmt(&**self, f)
            }
        }
    };
}

arc_deref!(Mutex, Excl);
arc_deref!(RwLock, Write);

// ===== Acquisitions =====

impl<T: ?Sized> Mutex<T> {
    /// Wrapper for [`parking_lot::Mutex::lock_arc`]: [`lock`](Mutex::lock), recorded the same
    /// way, with a guard that owns an `Arc` of the mutex.
    ///
    /// ```
    /// use std::sync::Arc;
    /// let m = Arc::new(lockscope::parking_lot::Mutex::new(0));
    /// *m.lock_arc() += 1;
    /// assert_eq!(*m.lock(), 1);
    /// ```
    #[inline]
    #[track_caller]
    pub fn lock_arc(self: &Arc<Self>) -> ArcMutexGuard<RawMutex, T> {
        ArcGuard::adopt(self, self.lock())
    }

    /// Wrapper for [`parking_lot::Mutex::try_lock_arc`]; see [`try_lock`](Mutex::try_lock).
    ///
    /// ```
    /// use std::sync::Arc;
    /// let m = Arc::new(lockscope::parking_lot::Mutex::new(0));
    /// let g = m.try_lock_arc().unwrap();
    /// assert!(m.try_lock_arc().is_none());
    /// ```
    #[inline]
    #[track_caller]
    pub fn try_lock_arc(self: &Arc<Self>) -> Option<ArcMutexGuard<RawMutex, T>> {
        Some(ArcGuard::adopt(self, self.try_lock()?))
    }

    /// Wrapper for [`parking_lot::Mutex::try_lock_arc_for`]; see
    /// [`try_lock_for`](Mutex::try_lock_for).
    ///
    /// ```
    /// use std::{sync::Arc, time::Duration};
    /// let m = Arc::new(lockscope::parking_lot::Mutex::new(0));
    /// let g = m.lock_arc();
    /// assert!(m.try_lock_arc_for(Duration::from_millis(1)).is_none());
    /// ```
    #[inline]
    #[track_caller]
    pub fn try_lock_arc_for(
        self: &Arc<Self>,
        timeout: Duration,
    ) -> Option<ArcMutexGuard<RawMutex, T>> {
        Some(ArcGuard::adopt(self, self.try_lock_for(timeout)?))
    }

    /// Wrapper for [`parking_lot::Mutex::try_lock_arc_until`]; see
    /// [`try_lock_for`](Mutex::try_lock_for).
    ///
    /// ```
    /// use std::{sync::Arc, time::Instant};
    /// let m = Arc::new(lockscope::parking_lot::Mutex::new(0));
    /// assert!(m.try_lock_arc_until(Instant::now()).is_some());
    /// ```
    #[inline]
    #[track_caller]
    pub fn try_lock_arc_until(
        self: &Arc<Self>,
        timeout: Instant,
    ) -> Option<ArcMutexGuard<RawMutex, T>> {
        Some(ArcGuard::adopt(self, self.try_lock_until(timeout)?))
    }
}

/// The `*_arc` acquisitions of [`RwLock`], each its borrowed form adopted by an Arc guard.
macro_rules! rwlock_arc {
    ($($(#[$doc:meta])* $name:ident($($arg:ident: $ty:ty),*) -> $guard:ident = $borrowed:ident;)*) => {
        impl<T: ?Sized> RwLock<T> {
            $(
                $(#[$doc])*
                #[inline]
                #[track_caller]
                pub fn $name(self: &Arc<Self>, $($arg: $ty),*) -> $guard<RawRwLock, T> {
                    ArcGuard::adopt(self, self.$borrowed($($arg),*))
                }
            )*
        }
    };
}

/// The `try_*_arc` acquisitions of [`RwLock`].
macro_rules! rwlock_try_arc {
    ($($(#[$doc:meta])* $name:ident($($arg:ident: $ty:ty),*) -> $guard:ident = $borrowed:ident;)*) => {
        impl<T: ?Sized> RwLock<T> {
            $(
                $(#[$doc])*
                #[inline]
                #[track_caller]
                pub fn $name(self: &Arc<Self>, $($arg: $ty),*) -> Option<$guard<RawRwLock, T>> {
                    Some(ArcGuard::adopt(self, self.$borrowed($($arg),*)?))
                }
            )*
        }
    };
}

rwlock_arc! {
    /// Wrapper for [`parking_lot::RwLock::read_arc`]; see [`read`](RwLock::read).
    ///
    /// ```
    /// use std::sync::Arc;
    /// let r = Arc::new(lockscope::parking_lot::RwLock::new(1));
    /// assert_eq!(*r.read_arc(), 1);
    /// ```
    read_arc() -> ArcRwLockReadGuard = read;
    /// Wrapper for [`parking_lot::RwLock::read_arc_recursive`]; see
    /// [`read_recursive`](RwLock::read_recursive).
    ///
    /// ```
    /// use std::sync::Arc;
    /// let r = Arc::new(lockscope::parking_lot::RwLock::new(1));
    /// let a = r.read_arc();
    /// assert_eq!(*r.read_arc_recursive(), *a);
    /// ```
    read_arc_recursive() -> ArcRwLockReadGuard = read_recursive;
    /// Wrapper for [`parking_lot::RwLock::write_arc`]; see [`write`](RwLock::write).
    ///
    /// ```
    /// use std::sync::Arc;
    /// let r = Arc::new(lockscope::parking_lot::RwLock::new(1));
    /// *r.write_arc() = 2;
    /// assert_eq!(*r.read(), 2);
    /// ```
    write_arc() -> ArcRwLockWriteGuard = write;
    /// Wrapper for [`parking_lot::RwLock::upgradable_read_arc`]; see
    /// [`upgradable_read`](RwLock::upgradable_read).
    ///
    /// ```
    /// use std::sync::Arc;
    /// let r = Arc::new(lockscope::parking_lot::RwLock::new(1));
    /// let u = r.upgradable_read_arc();
    /// assert!(r.try_upgradable_read().is_none());
    /// assert_eq!(*r.read(), *u);
    /// ```
    upgradable_read_arc() -> ArcRwLockUpgradableReadGuard = upgradable_read;
}

rwlock_try_arc! {
    /// Wrapper for [`parking_lot::RwLock::try_read_arc`].
    ///
    /// ```
    /// use std::sync::Arc;
    /// let r = Arc::new(lockscope::parking_lot::RwLock::new(1));
    /// let w = r.write_arc();
    /// assert!(r.try_read_arc().is_none());
    /// ```
    try_read_arc() -> ArcRwLockReadGuard = try_read;
    /// Wrapper for [`parking_lot::RwLock::try_read_arc_for`].
    ///
    /// ```
    /// use std::{sync::Arc, time::Duration};
    /// let r = Arc::new(lockscope::parking_lot::RwLock::new(1));
    /// assert!(r.try_read_arc_for(Duration::from_millis(1)).is_some());
    /// ```
    try_read_arc_for(timeout: Duration) -> ArcRwLockReadGuard = try_read_for;
    /// Wrapper for [`parking_lot::RwLock::try_read_arc_until`].
    ///
    /// ```
    /// use std::{sync::Arc, time::Instant};
    /// let r = Arc::new(lockscope::parking_lot::RwLock::new(1));
    /// assert!(r.try_read_arc_until(Instant::now()).is_some());
    /// ```
    try_read_arc_until(timeout: Instant) -> ArcRwLockReadGuard = try_read_until;
    /// Wrapper for [`parking_lot::RwLock::try_read_recursive_arc`].
    ///
    /// ```
    /// use std::sync::Arc;
    /// let r = Arc::new(lockscope::parking_lot::RwLock::new(1));
    /// assert!(r.try_read_recursive_arc().is_some());
    /// ```
    try_read_recursive_arc() -> ArcRwLockReadGuard = try_read_recursive;
    /// Wrapper for [`parking_lot::RwLock::try_read_arc_recursive_for`].
    ///
    /// ```
    /// use std::{sync::Arc, time::Duration};
    /// let r = Arc::new(lockscope::parking_lot::RwLock::new(1));
    /// assert!(r.try_read_arc_recursive_for(Duration::from_millis(1)).is_some());
    /// ```
    try_read_arc_recursive_for(timeout: Duration) -> ArcRwLockReadGuard = try_read_recursive_for;
    /// Wrapper for [`parking_lot::RwLock::try_read_arc_recursive_until`].
    ///
    /// ```
    /// use std::{sync::Arc, time::Instant};
    /// let r = Arc::new(lockscope::parking_lot::RwLock::new(1));
    /// assert!(r.try_read_arc_recursive_until(Instant::now()).is_some());
    /// ```
    try_read_arc_recursive_until(timeout: Instant) -> ArcRwLockReadGuard = try_read_recursive_until;
    /// Wrapper for [`parking_lot::RwLock::try_write_arc`].
    ///
    /// ```
    /// use std::sync::Arc;
    /// let r = Arc::new(lockscope::parking_lot::RwLock::new(1));
    /// let g = r.read_arc();
    /// assert!(r.try_write_arc().is_none());
    /// ```
    try_write_arc() -> ArcRwLockWriteGuard = try_write;
    /// Wrapper for [`parking_lot::RwLock::try_write_arc_for`].
    ///
    /// ```
    /// use std::{sync::Arc, time::Duration};
    /// let r = Arc::new(lockscope::parking_lot::RwLock::new(1));
    /// assert!(r.try_write_arc_for(Duration::from_millis(1)).is_some());
    /// ```
    try_write_arc_for(timeout: Duration) -> ArcRwLockWriteGuard = try_write_for;
    /// Wrapper for [`parking_lot::RwLock::try_write_arc_until`].
    ///
    /// ```
    /// use std::{sync::Arc, time::Instant};
    /// let r = Arc::new(lockscope::parking_lot::RwLock::new(1));
    /// assert!(r.try_write_arc_until(Instant::now()).is_some());
    /// ```
    try_write_arc_until(timeout: Instant) -> ArcRwLockWriteGuard = try_write_until;
    /// Wrapper for [`parking_lot::RwLock::try_upgradable_read_arc`].
    ///
    /// ```
    /// use std::sync::Arc;
    /// let r = Arc::new(lockscope::parking_lot::RwLock::new(1));
    /// let u = r.upgradable_read_arc();
    /// assert!(r.try_upgradable_read_arc().is_none());
    /// ```
    try_upgradable_read_arc() -> ArcRwLockUpgradableReadGuard = try_upgradable_read;
    /// Wrapper for [`parking_lot::RwLock::try_upgradable_read_arc_for`].
    ///
    /// ```
    /// use std::{sync::Arc, time::Duration};
    /// let r = Arc::new(lockscope::parking_lot::RwLock::new(1));
    /// assert!(r.try_upgradable_read_arc_for(Duration::from_millis(1)).is_some());
    /// ```
    try_upgradable_read_arc_for(timeout: Duration) -> ArcRwLockUpgradableReadGuard = try_upgradable_read_for;
    /// Wrapper for [`parking_lot::RwLock::try_upgradable_read_arc_until`].
    ///
    /// ```
    /// use std::{sync::Arc, time::Instant};
    /// let r = Arc::new(lockscope::parking_lot::RwLock::new(1));
    /// assert!(r.try_upgradable_read_arc_until(Instant::now()).is_some());
    /// ```
    try_upgradable_read_arc_until(timeout: Instant) -> ArcRwLockUpgradableReadGuard = try_upgradable_read_until;
}

// ===== Guard methods: the borrowed guards' own, on the lent hold =====

/// The methods every Arc guard has, with the borrowed guard type `$b` and its lock accessor
/// name (`mutex` or `rwlock`).
macro_rules! arc_guard_common {
    ($lock:ident, $access:ident, $b:ident, $accessor:ident, $raw:ident) => {
        impl<T: ?Sized> ArcGuard<$raw, $lock<T>, $access> {
            #[doc = concat!("Wrapper for `", stringify!($accessor), "` of parking_lot's Arc guard: the `Arc` of the lock.")]
            pub fn $accessor(s: &Self) -> &Arc<$lock<T>> {
                &s.lock
            }

            /// Wrapper for `into_arc` of parking_lot's Arc guard: unlocks (books first) and
            /// returns the `Arc`.
            pub fn into_arc(s: Self) -> Arc<$lock<T>> {
                Self::release_into_arc(s)
            }

            /// Wrapper for `into_arc_fair` of parking_lot's Arc guard: a fair unlock, then the
            /// `Arc`.
            pub fn into_arc_fair(s: Self) -> Arc<$lock<T>> {
                let (lock, token) = Self::into_parts(s);
                // SAFETY: this guard's hold, taken out of it just above.
                $b::unlock_fair(unsafe { <$access as Access<$lock<T>>>::lend(&lock, token) });
                lock
            }

            /// Wrapper for `unlock_fair` of parking_lot's Arc guard.
            pub fn unlock_fair(s: Self) {
                drop(Self::into_arc_fair(s));
            }

            #[doc = concat!("Wrapper for `unlocked` of parking_lot's Arc guard; see [`", stringify!($b), "::unlocked`].")]
            #[track_caller]
            pub fn unlocked<F: FnOnce() -> U, U>(s: &mut Self, f: F) -> U {
                $b::unlocked(&mut s.lend(), f)
            }

            #[doc = concat!("Wrapper for `unlocked_fair` of parking_lot's Arc guard; see [`", stringify!($b), "::unlocked_fair`].")]
            #[track_caller]
            pub fn unlocked_fair<F: FnOnce() -> U, U>(s: &mut Self, f: F) -> U {
                $b::unlocked_fair(&mut s.lend(), f)
            }

            #[doc = concat!("Wrapper for `bump` of parking_lot's Arc guard; see [`", stringify!($b), "::bump`].")]
            #[track_caller]
            pub fn bump(s: &mut Self) {
                $b::bump(&mut s.lend())
            }
        }
    };
}

arc_guard_common!(Mutex, Excl, MutexGuard, mutex, RawMutex);
arc_guard_common!(RwLock, Read, RwLockReadGuard, rwlock, RawRwLock);
arc_guard_common!(RwLock, Write, RwLockWriteGuard, rwlock, RawRwLock);
arc_guard_common!(
    RwLock,
    Upgradable,
    RwLockUpgradableReadGuard,
    rwlock,
    RawRwLock
);

impl<T: ?Sized> ArcRwLockWriteGuard<RawRwLock, T> {
    /// Wrapper for `downgrade` of parking_lot's Arc guard; see [`RwLockWriteGuard::downgrade`].
    ///
    /// ```
    /// use std::sync::Arc;
    /// use lockscope::parking_lot::{ArcRwLockWriteGuard, RwLock};
    /// let r = Arc::new(RwLock::new(1));
    /// let g = ArcRwLockWriteGuard::downgrade(r.write_arc());
    /// assert!(r.try_read().is_some());
    /// assert_eq!(*g, 1);
    /// ```
    pub fn downgrade(s: Self) -> ArcRwLockReadGuard<RawRwLock, T> {
        let (lock, token) = Self::into_parts(s);
        // SAFETY: this guard's hold, taken out of it just above.
        let g = unsafe { Write::lend(&lock, token) };
        ArcGuard::adopt(&lock, RwLockWriteGuard::downgrade(g))
    }

    /// Wrapper for `downgrade_to_upgradable` of parking_lot's Arc guard; see
    /// [`RwLockWriteGuard::downgrade_to_upgradable`].
    pub fn downgrade_to_upgradable(s: Self) -> ArcRwLockUpgradableReadGuard<RawRwLock, T> {
        let (lock, token) = Self::into_parts(s);
        // SAFETY: as in `downgrade`.
        let g = unsafe { Write::lend(&lock, token) };
        ArcGuard::adopt(&lock, RwLockWriteGuard::downgrade_to_upgradable(g))
    }
}

impl<T: ?Sized> ArcRwLockUpgradableReadGuard<RawRwLock, T> {
    /// Wrapper for `upgrade` of parking_lot's Arc guard; see
    /// [`RwLockUpgradableReadGuard::upgrade`].
    #[track_caller]
    pub fn upgrade(s: Self) -> ArcRwLockWriteGuard<RawRwLock, T> {
        let (lock, token) = Self::into_parts(s);
        // SAFETY: this guard's hold, taken out of it just above.
        let g = unsafe { Upgradable::lend(&lock, token) };
        ArcGuard::adopt(&lock, RwLockUpgradableReadGuard::upgrade(g))
    }

    /// Wrapper for `try_upgrade` of parking_lot's Arc guard; see
    /// [`RwLockUpgradableReadGuard::try_upgrade`].
    ///
    /// # Errors
    ///
    /// Gives the guard back when other readers hold the lock.
    #[track_caller]
    pub fn try_upgrade(s: Self) -> Result<ArcRwLockWriteGuard<RawRwLock, T>, Self> {
        let (lock, token) = Self::into_parts(s);
        // SAFETY: as in `upgrade`.
        let g = unsafe { Upgradable::lend(&lock, token) };
        Self::upgraded(&lock, RwLockUpgradableReadGuard::try_upgrade(g))
    }

    /// Wrapper for `try_upgrade_for` of parking_lot's Arc guard; see
    /// [`RwLockUpgradableReadGuard::try_upgrade_for`].
    ///
    /// # Errors
    ///
    /// Gives the guard back when the timeout passes first.
    #[track_caller]
    pub fn try_upgrade_for(
        s: Self,
        timeout: Duration,
    ) -> Result<ArcRwLockWriteGuard<RawRwLock, T>, Self> {
        let (lock, token) = Self::into_parts(s);
        // SAFETY: as in `upgrade`.
        let g = unsafe { Upgradable::lend(&lock, token) };
        Self::upgraded(
            &lock,
            RwLockUpgradableReadGuard::try_upgrade_for(g, timeout),
        )
    }

    /// Wrapper for `try_upgrade_until` of parking_lot's Arc guard; see
    /// [`RwLockUpgradableReadGuard::try_upgrade_until`].
    ///
    /// # Errors
    ///
    /// Gives the guard back when the deadline passes first.
    #[track_caller]
    pub fn try_upgrade_until(
        s: Self,
        timeout: Instant,
    ) -> Result<ArcRwLockWriteGuard<RawRwLock, T>, Self> {
        let (lock, token) = Self::into_parts(s);
        // SAFETY: as in `upgrade`.
        let g = unsafe { Upgradable::lend(&lock, token) };
        Self::upgraded(
            &lock,
            RwLockUpgradableReadGuard::try_upgrade_until(g, timeout),
        )
    }

    /// The Arc guards of a `try_upgrade*` result.
    fn upgraded(
        lock: &Arc<RwLock<T>>,
        r: Result<RwLockWriteGuard<'_, T>, RwLockUpgradableReadGuard<'_, T>>,
    ) -> Result<ArcRwLockWriteGuard<RawRwLock, T>, Self> {
        match r {
            Ok(w) => Ok(ArcGuard::adopt(lock, w)),
            Err(u) => Err(ArcGuard::adopt(lock, u)),
        }
    }

    /// Wrapper for `downgrade` of parking_lot's Arc guard; see
    /// [`RwLockUpgradableReadGuard::downgrade`].
    pub fn downgrade(s: Self) -> ArcRwLockReadGuard<RawRwLock, T> {
        let (lock, token) = Self::into_parts(s);
        // SAFETY: as in `upgrade`.
        let g = unsafe { Upgradable::lend(&lock, token) };
        ArcGuard::adopt(&lock, RwLockUpgradableReadGuard::downgrade(g))
    }

    /// Wrapper for `with_upgraded` of parking_lot's Arc guard; see
    /// [`RwLockUpgradableReadGuard::with_upgraded`].
    ///
    /// ```
    /// use std::sync::Arc;
    /// let r = Arc::new(lockscope::parking_lot::RwLock::new(1));
    /// let mut u = r.upgradable_read_arc();
    /// u.with_upgraded(|v| *v += 1);
    /// assert_eq!(*u, 2);
    /// ```
    #[track_caller]
    pub fn with_upgraded<Ret, F: FnOnce(&mut T) -> Ret>(&mut self, f: F) -> Ret {
        self.lend().with_upgraded(f)
    }

    /// Wrapper for `try_with_upgraded` of parking_lot's Arc guard; see
    /// [`RwLockUpgradableReadGuard::try_with_upgraded`].
    #[track_caller]
    pub fn try_with_upgraded<Ret, F: FnOnce(&mut T) -> Ret>(&mut self, f: F) -> Option<Ret> {
        self.lend().try_with_upgraded(f)
    }

    /// Wrapper for `try_with_upgraded_for` of parking_lot's Arc guard; see
    /// [`RwLockUpgradableReadGuard::try_with_upgraded_for`].
    #[track_caller]
    pub fn try_with_upgraded_for<Ret, F: FnOnce(&mut T) -> Ret>(
        &mut self,
        timeout: Duration,
        f: F,
    ) -> Option<Ret> {
        self.lend().try_with_upgraded_for(timeout, f)
    }

    /// Wrapper for `try_with_upgraded_until` of parking_lot's Arc guard; see
    /// [`RwLockUpgradableReadGuard::try_with_upgraded_until`].
    #[track_caller]
    pub fn try_with_upgraded_until<Ret, F: FnOnce(&mut T) -> Ret>(
        &mut self,
        timeout: Instant,
        f: F,
    ) -> Option<Ret> {
        self.lend().try_with_upgraded_until(timeout, f)
    }
}
