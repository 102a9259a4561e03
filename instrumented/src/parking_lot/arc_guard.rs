//! parking_lot's `arc_lock` guards (feature `arc_lock`): [`ArcMutexGuard`],
//! [`ArcRwLockReadGuard`], [`ArcRwLockWriteGuard`], [`ArcRwLockUpgradableReadGuard`] (the
//! `lock_arc`, `read_arc`, ... methods that return them are in `arc_lock.rs`).
//!
//! One generic guard, [`ArcGuard`], a newtype over the one guard shell with the `Arc` of the
//! lock as its owner (so its release order is every guard's); the four public names are aliases
//! of it. It never re-implements a guard method: every acquisition is the borrowed form's
//! (`lock_arc` is `lock`, then the borrowed guard is adopted), and every guard method lends the
//! hold back to the borrowed guard type ([`Access::lend`]) and calls that guard's own method, so
//! the books of `unlocked`, `bump`, upgrades and downgrades exist once, in the borrowed guards.

use std::fmt;
use std::marker::PhantomData;
use std::mem::ManuallyDrop;
use std::ops::{Deref, DerefMut};
use std::ptr::NonNull;
use std::sync::Arc;
use std::time::{Duration, Instant};

use lockscope_detector::__private::hooks;
use lockscope_detector::__private::prim::Prim;

use super::guard::token_of;
use super::{
    Mutex, MutexGuard, RawMutex, RawRwLock, RwLock, RwLockReadGuard, RwLockUpgradableReadGuard,
    RwLockWriteGuard,
};
use crate::probe::Token;
use crate::shell::{Guard, Owner};

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
/// Dropping it releases the books first, then the lock, as for every lockscope guard (the
/// one guard shell does both). Like parking_lot's, it
/// is `!Send` unless parking_lot's `send_guard` feature is on. It is `Sync` when both `T` and
/// the `Arc` of its lock are (for a mutex: `T: Send + Sync`), where parking_lot's
/// `ArcMutexGuard` asks only `T: Sync`: a shared guard hands out `&Arc<Mutex<T>>`, whose
/// clones may drop `T` on another thread.
#[clippy::has_significant_drop]
#[must_use = "if unused the lock will immediately unlock"]
pub struct ArcGuard<R, L: ?Sized, A> {
    shell: Guard<ArcLock<L>, ()>,
    marker: Marker<R, A>,
}

/// What an Arc guard holds its lock through: the `Arc`, the lock's primitive, and the unlock of
/// the access held (set where `A: Access<L>` is known, so that the guard's type needs no bound).
struct ArcLock<L: ?Sized> {
    lock: Arc<L>,
    /// The primitive of the lock in `lock`, which owns it for as long as the `Arc` lives.
    prim: NonNull<Prim>,
    unlock: unsafe fn(&L),
}

// SAFETY: `prim` is a shared borrow of a `Prim` (which is `Sync`) that lives as long as `lock`;
// otherwise the fields are the `Arc` and a function pointer, so the `Arc` decides, as before.
unsafe impl<L: ?Sized> Send for ArcLock<L> where Arc<L>: Send {}
// SAFETY: as for `Send`; and a shared guard hands out `&T`, so `T` must be `Sync` too, which
// `Arc<Mutex<T>>: Sync` alone does not ask (a mutex is `Sync` for any `T: Send`).
unsafe impl<L: ?Sized + SharedData> Sync for ArcLock<L> where Arc<L>: Sync {}

/// A lock whose data may be shared between threads (`T: Sync`): what sharing a guard of it
/// hands out.
trait SharedData {}
impl<T: ?Sized + Sync> SharedData for Mutex<T> {}
impl<T: ?Sized + Sync> SharedData for RwLock<T> {}

/// Either kind of lock, and a guard that may be `Send` (as parking_lot's arc guards are with
/// its `send_guard` feature).
impl<L: ?Sized> Owner<()> for ArcLock<L> {
    type Class = hooks::AnyPrim;
    type Marker = hooks::GuardSend;

    #[inline]
    fn prim(&self) -> &Prim {
        // SAFETY: the primitive lives as long as the lock, which `self.lock` keeps alive.
        unsafe { self.prim.as_ref() }
    }

    #[inline]
    fn unlock(&self, (): ()) {
        // SAFETY: the shell unlocks once, for the hold this guard owns (its books released).
        unsafe { (self.unlock)(&self.lock) }
    }
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

    /// The lock's primitive.
    fn prim(lock: &L) -> &Prim;

    /// Unlocks the access held.
    ///
    /// # Safety
    ///
    /// The lock is held with this access, by a guard that no longer records it.
    unsafe fn unlock(lock: &L);
}

/// [`Access`] for the four accesses, which differ in names only.
macro_rules! access {
    ($($access:ident: $lock:ident => $guard:ident, $make:ident, $unlock:ident;)*) => {$(
        impl<T: ?Sized> Access<$lock<T>> for $access {
            type Guard<'a>
                = $guard<'a, T>
            where
                T: 'a;

            unsafe fn lend(lock: &$lock<T>, token: Token) -> $guard<'_, T> {
                // SAFETY: the caller's contract: this hold, owned by no other guard.
                $guard::new(lock, unsafe { lock.inner.$make() }, token)
            }

            fn take_back(guard: $guard<'_, T>) -> Token {
                token_of(guard.shell)
            }

            #[inline]
            fn prim(lock: &$lock<T>) -> &Prim {
                lock.prim()
            }

            #[inline]
            unsafe fn unlock(lock: &$lock<T>) {
                // SAFETY: the caller's contract.
                unsafe { lock.$unlock() }
            }
        }
    )*};
}

access! {
    Excl: Mutex => MutexGuard, make_guard_unchecked, force_unlock;
    Read: RwLock => RwLockReadGuard, make_read_guard_unchecked, force_unlock_read;
    Write: RwLock => RwLockWriteGuard, make_write_guard_unchecked, force_unlock_write;
    Upgradable: RwLock => RwLockUpgradableReadGuard, make_upgradable_guard_unchecked,
        force_unlock_upgradable;
}

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
    pub(super) fn adopt(lock: &Arc<L>, guard: A::Guard<'_>) -> Self {
        let token = A::take_back(guard);
        let lock = lock.clone();
        let prim = NonNull::from(A::prim(&lock));
        let owner = ArcLock {
            lock,
            prim,
            unlock: A::unlock,
        };
        ArcGuard {
            shell: Guard::new(owner, (), token),
            marker: PhantomData,
        }
    }

    /// Takes the guard apart: the `Arc` and the hold's token.
    fn into_parts(s: Self) -> (Arc<L>, Token) {
        let (owner, token, ()) = s.shell.into_parts();
        (owner.lock, token)
    }

    /// Lends the hold to the borrowed guard until the returned value drops.
    fn lend(&mut self) -> Lent<'_, A::Guard<'_>> {
        let (owner, (), token) = self.shell.parts_mut();
        let lent = std::mem::take(token);
        Lent {
            // SAFETY: this guard's hold; its token was taken just above, and `Lent` gives it
            // back.
            guard: ManuallyDrop::new(unsafe { A::lend(&owner.lock, lent) }),
            token,
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

/// Data access for a lock with a `data_ptr`.
macro_rules! arc_deref {
    ($lock:ident, $($mut_access:ident),*) => {
        impl<R, T: ?Sized, A> Deref for ArcGuard<R, $lock<T>, A> {
            type Target = T;
            #[inline]
            fn deref(&self) -> &T {
                // SAFETY: the guard holds the lock with at least read access while it lives.
                unsafe { &*self.shell.owner().lock.inner.data_ptr() }
            }
        }
        $(
            impl<R, T: ?Sized> DerefMut for ArcGuard<R, $lock<T>, $mut_access> {
                #[inline]
                fn deref_mut(&mut self) -> &mut T {
                    // SAFETY: the guard holds the lock exclusively, and `&mut self` is unique.
                    unsafe { &mut *self.shell.owner().lock.inner.data_ptr() }
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

// ===== Guard methods: the borrowed guards' own, on the lent hold =====

/// The methods every Arc guard has, with the borrowed guard type `$b` and its lock accessor
/// name (`mutex` or `rwlock`).
macro_rules! arc_guard_common {
    ($lock:ident, $access:ident, $b:ident, $accessor:ident, $raw:ident) => {
        impl<T: ?Sized> ArcGuard<$raw, $lock<T>, $access> {
            #[doc = concat!("Wrapper for `", stringify!($accessor), "` of parking_lot's Arc guard: the `Arc` of the lock.")]
            pub fn $accessor(s: &Self) -> &Arc<$lock<T>> {
                &s.shell.owner().lock
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

/// Guard methods that take the Arc guard by value: the hold is lent to the borrowed guard of
/// `$access`, whose own method `$name` runs, and `$wrap` adopts what it returns.
macro_rules! arc_by_value {
    ($($(#[$attr:meta])* fn $name:ident($($arg:ident: $ty:ty),*) -> $ret:ty
        = $access:ident, $b:ident, $wrap:path;)*) => {$(
        $(#[$attr])*
        pub fn $name(s: Self, $($arg: $ty),*) -> $ret {
            let (lock, token) = Self::into_parts(s);
            // SAFETY: this guard's hold, taken out of it just above.
            let g = unsafe { $access::lend(&lock, token) };
            $wrap(&lock, $b::$name(g $(, $arg)*))
        }
    )*};
}

/// The `with_upgraded` forms of the upgradable Arc guard: the borrowed guard's, on the lent
/// hold.
macro_rules! arc_with_upgraded {
    ($($(#[$attr:meta])* fn $name:ident($($arg:ident: $ty:ty),*) -> $ret:ty;)*) => {$(
        $(#[$attr])*
        #[track_caller]
        pub fn $name<Ret, F: FnOnce(&mut T) -> Ret>(&mut self, $($arg: $ty,)* f: F) -> $ret {
            self.lend().$name($($arg,)* f)
        }
    )*};
}

impl<T: ?Sized> ArcRwLockWriteGuard<RawRwLock, T> {
    arc_by_value! {
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
        fn downgrade() -> ArcRwLockReadGuard<RawRwLock, T> = Write, RwLockWriteGuard, ArcGuard::adopt;
        /// Wrapper for `downgrade_to_upgradable` of parking_lot's Arc guard; see
        /// [`RwLockWriteGuard::downgrade_to_upgradable`].
        fn downgrade_to_upgradable() -> ArcRwLockUpgradableReadGuard<RawRwLock, T>
            = Write, RwLockWriteGuard, ArcGuard::adopt;
    }
}

impl<T: ?Sized> ArcRwLockUpgradableReadGuard<RawRwLock, T> {
    arc_by_value! {
        /// Wrapper for `upgrade` of parking_lot's Arc guard; see
        /// [`RwLockUpgradableReadGuard::upgrade`].
        #[track_caller]
        fn upgrade() -> ArcRwLockWriteGuard<RawRwLock, T>
            = Upgradable, RwLockUpgradableReadGuard, ArcGuard::adopt;
        /// Wrapper for `try_upgrade` of parking_lot's Arc guard; see
        /// [`RwLockUpgradableReadGuard::try_upgrade`].
        ///
        /// # Errors
        ///
        /// Gives the guard back when other readers hold the lock.
        #[track_caller]
        fn try_upgrade() -> Result<ArcRwLockWriteGuard<RawRwLock, T>, Self>
            = Upgradable, RwLockUpgradableReadGuard, Self::upgraded;
        /// Wrapper for `try_upgrade_for` of parking_lot's Arc guard; see
        /// [`RwLockUpgradableReadGuard::try_upgrade_for`].
        ///
        /// # Errors
        ///
        /// Gives the guard back when the timeout passes first.
        #[track_caller]
        fn try_upgrade_for(timeout: Duration) -> Result<ArcRwLockWriteGuard<RawRwLock, T>, Self>
            = Upgradable, RwLockUpgradableReadGuard, Self::upgraded;
        /// Wrapper for `try_upgrade_until` of parking_lot's Arc guard; see
        /// [`RwLockUpgradableReadGuard::try_upgrade_until`].
        ///
        /// # Errors
        ///
        /// Gives the guard back when the deadline passes first.
        #[track_caller]
        fn try_upgrade_until(timeout: Instant) -> Result<ArcRwLockWriteGuard<RawRwLock, T>, Self>
            = Upgradable, RwLockUpgradableReadGuard, Self::upgraded;
        /// Wrapper for `downgrade` of parking_lot's Arc guard; see
        /// [`RwLockUpgradableReadGuard::downgrade`].
        fn downgrade() -> ArcRwLockReadGuard<RawRwLock, T>
            = Upgradable, RwLockUpgradableReadGuard, ArcGuard::adopt;
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

    arc_with_upgraded! {
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
        fn with_upgraded() -> Ret;
        /// Wrapper for `try_with_upgraded` of parking_lot's Arc guard; see
        /// [`RwLockUpgradableReadGuard::try_with_upgraded`].
        fn try_with_upgraded() -> Option<Ret>;
        /// Wrapper for `try_with_upgraded_for` of parking_lot's Arc guard; see
        /// [`RwLockUpgradableReadGuard::try_with_upgraded_for`].
        fn try_with_upgraded_for(timeout: Duration) -> Option<Ret>;
        /// Wrapper for `try_with_upgraded_until` of parking_lot's Arc guard; see
        /// [`RwLockUpgradableReadGuard::try_with_upgraded_until`].
        fn try_with_upgraded_until(timeout: Instant) -> Option<Ret>;
    }
}
