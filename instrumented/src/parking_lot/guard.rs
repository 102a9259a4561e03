//! What every parking_lot guard shares. Each public guard is a newtype over the one guard
//! shell ([`Guard`](crate::shell::Guard)), which owns the release order; parking_lot's guard
//! API differs from guard to guard only in names, so the guards' structs and their `map`,
//! `try_map`, `unlocked`, `bump`, `unlock_fair`, `downgrade`, ... are written once here, as
//! macros over those names ([`guard_family!`], built on [`guard_struct!`] and
//! [`guard_methods!`]), and each guard file gives its family's spec and docs.

use std::marker::PhantomData;
use std::mem::ManuallyDrop;
use std::panic::Location;

use lockscope_detector::hooks::{self, Acq, Mode};
use lockscope_detector::prim::Prim;

use super::{Mutex, ReentrantMutex, RwLock, holds_here, holds_shared_here};
use crate::blocking_shell::acq;
use crate::probe::{self, Token};
use crate::shell::{Guard, Owner};

/// A borrow of what a guard holds its lock through (a lockscope lock, or the bare primitive of
/// a mapped guard), as the primitive it names for as long as the borrow lasts.
pub(super) trait PrimRef<'a>: Copy {
    /// The primitive whose books hold the guard's token.
    fn prim_ref(self) -> &'a Prim;
}

impl<'a> PrimRef<'a> for &'a Prim {
    #[inline]
    fn prim_ref(self) -> &'a Prim {
        self
    }
}

/// What a guard of a lockscope lock keeps of parking_lot's guard `G`: nothing but its type
/// (so, its auto traits: `!Send` as parking_lot's). parking_lot's guard is a reference to
/// the lock, which the shell's owner already is; without it, a guard is two words (the lock
/// and the token), which the Rust ABI passes in registers, where a third word sends every
/// move of the guard through memory: a `drop(guard)` then copied it and read it back at
/// once, stalling on store forwarding (a fifth of a nested pair of locks' time).
pub(super) struct Held<G>(PhantomData<G>);

impl<G> Held<G> {
    /// Keeps parking_lot's guard `g` as [`Held`]: the lock stays held ([`Remake::remake`]
    /// gives the guard back).
    #[inline(always)]
    pub(super) fn keep(g: G) -> Held<G> {
        std::mem::forget(g);
        Held(PhantomData)
    }

    /// parking_lot's guard of this hold, lent for a call that takes it by `&mut` and leaves
    /// the lock held (a `bump`, a condvar wait): never dropped, so the hold stays this one's.
    ///
    /// # Safety
    ///
    /// `lock` is the lock this hold's guard holds (the shell's owner).
    #[inline(always)]
    pub(super) unsafe fn lend<'a, L: ?Sized>(&mut self, lock: &'a L) -> ManuallyDrop<G>
    where
        G: Remake<'a, L>,
    {
        // SAFETY: as the caller promises; the guard made here is never dropped.
        ManuallyDrop::new(unsafe { G::remake(lock) })
    }
}

/// parking_lot's guard of one access to a lockscope lock `L`, made again from the lock.
pub(super) trait Remake<'a, L: ?Sized>: Sized {
    /// The guard of `lock`.
    ///
    /// # Safety
    ///
    /// This thread holds `lock` with this guard's access, and no other guard owns that hold
    /// (the one made here does, from now on).
    unsafe fn remake(lock: &'a L) -> Self;
}

macro_rules! remake {
    ($($lock:ident, $guard:ident, $make:ident;)*) => {$(
        impl<'a, T: ?Sized> Remake<'a, $lock<T>> for parking_lot::$guard<'a, T> {
            #[inline(always)]
            unsafe fn remake(lock: &'a $lock<T>) -> Self {
                // SAFETY: as the caller promises.
                unsafe { lock.inner.$make() }
            }
        }
    )*};
}

remake! {
    Mutex, MutexGuard, make_guard_unchecked;
    ReentrantMutex, ReentrantMutexGuard, make_guard_unchecked;
    RwLock, RwLockReadGuard, make_read_guard_unchecked;
    RwLock, RwLockWriteGuard, make_write_guard_unchecked;
    RwLock, RwLockUpgradableReadGuard, make_upgradable_guard_unchecked;
}

/// The shell's hold part `Self`, as parking_lot's guard, for a method that gives it to
/// parking_lot (`map`, `unlock_fair`, ...): a [`Held`] is made again from its owner, a mapped
/// guard's is the guard itself.
pub(super) trait Real<O>: Sized {
    /// parking_lot's guard.
    type Guard;

    /// parking_lot's guard of the hold `self`, whose lock `owner` is.
    ///
    /// # Safety
    ///
    /// `self` and `owner` come from one guard, taken apart; `self` is used once.
    unsafe fn real(self, owner: &O) -> Self::Guard;
}

impl<'a, L: ?Sized, G: Remake<'a, L>> Real<&'a L> for Held<G> {
    type Guard = G;

    #[inline(always)]
    unsafe fn real(self, owner: &&'a L) -> G {
        // SAFETY: the guard this `Held` kept holds `owner`, and gives its hold to the new one.
        unsafe { G::remake(owner) }
    }
}

macro_rules! real_mapped {
    ($($guard:ident),*) => {$(
        impl<'a, T: ?Sized> Real<&'a Prim> for parking_lot::$guard<'a, T> {
            type Guard = Self;

            #[inline(always)]
            unsafe fn real(self, _: &&'a Prim) -> Self {
                self
            }
        }
    )*};
}

real_mapped!(
    MappedMutexGuard,
    MappedReentrantMutexGuard,
    MappedRwLockReadGuard,
    MappedRwLockWriteGuard
);

/// [`Owner`] and [`PrimRef`] for a borrow of each lock: a guard that must give its lock back
/// (`MutexGuard::mutex`, `rwlock`, `remutex`) keeps the lock; parking_lot's guard, made again
/// from it, unlocks.
macro_rules! lock_owner {
    ($($lock:ident: $mutex:expr),*) => {$(
        impl<'a, T: ?Sized> PrimRef<'a> for &'a $lock<T> {
            #[inline]
            fn prim_ref(self) -> &'a Prim {
                $lock::prim(self)
            }
        }

        impl<'a, T: ?Sized, G: Remake<'a, $lock<T>>> Owner<Held<G>> for &'a $lock<T> {
            #[inline]
            fn prim(&self) -> &Prim {
                $lock::prim(self)
            }

            #[inline(always)]
            fn unlock(&self, held: Held<G>) {
                // SAFETY: the shell unlocks once, with the hold its guard kept.
                drop(unsafe { held.real(self) });
            }

            const MUTEX: Option<bool> = Some($mutex);

            const QUICK: bool = true;

            #[inline]
            unsafe fn prim_registered(&self) -> &Prim {
                // SAFETY: as the caller promises, the primitive was looked up before.
                unsafe { $lock::prim_registered(self) }
            }
        }
    )*};
}

lock_owner!(Mutex: true, RwLock: false, ReentrantMutex: true);

/// Runs `f` (a user closure that takes a guard apart, as in `map`) so that, if it panics, the
/// books are released before the inner guard unlocks on the way out: the detector never sees
/// a hold of a lock that is free.
#[inline]
pub(super) fn books_first<R>(prim: &Prim, token: &mut Token, f: impl FnOnce() -> R) -> R {
    struct OnUnwind<'a> {
        prim: &'a Prim,
        token: &'a mut Token,
    }
    impl Drop for OnUnwind<'_> {
        fn drop(&mut self) {
            self.token.release(self.prim);
        }
    }
    let armed = OnUnwind { prim, token };
    let r = f();
    std::mem::forget(armed);
    r
}

/// The body of every guard's `unlocked`/`unlocked_fair`: releases the books, then the lock
/// (`unlock`), runs `f`, and re-takes the lock with `relock` (which records the new hold) into
/// `token`, also when `f` panics, so that the guard is whole again before it is dropped.
pub(super) fn unlocked<U>(
    prim: &Prim,
    token: &mut Token,
    unlock: impl FnOnce(),
    relock: impl FnOnce() -> Token,
    f: impl FnOnce() -> U,
) -> U {
    struct Relock<'t, R: FnOnce() -> Token> {
        token: &'t mut Token,
        relock: Option<R>,
    }
    impl<R: FnOnce() -> Token> Drop for Relock<'_, R> {
        fn drop(&mut self) {
            if let Some(relock) = self.relock.take() {
                *self.token = relock();
            }
        }
    }
    token.release(prim);
    unlock();
    let _relock = Relock {
        token,
        relock: Some(relock),
    };
    f()
}

/// The body of every guard's `bump`: releases the books, lets parking_lot yield the lock to a
/// waiter if there is one (`bump`), and records the hold again as `regrant` says (parking_lot
/// does not tell whether it yielded).
#[inline]
pub(super) fn bumped(
    prim: &Prim,
    token: &mut Token,
    bump: impl FnOnce(),
    regrant: impl FnOnce() -> Acq,
) {
    token.release(prim);
    bump();
    *token = probe::granted(prim, regrant());
}

/// The hold of a guard taken apart whose inner guard is forgotten, so that the lock stays
/// held: the re-lock of `unlocked` (the outer guard keeps its own inner guard), or an Arc
/// guard adopting a borrowed one.
#[inline]
pub(super) fn token_of<O: Owner<G>, G>(shell: Guard<O, G>) -> Token {
    let (_, token, inner) = shell.into_parts();
    std::mem::forget(inner);
    token
}

/// `a`, marked as a re-entry when `reentry`: a hold that cannot have waited, so it is neither
/// a nested acquisition nor a lock-order edge.
#[inline]
fn reentry_if(reentry: bool, a: Acq) -> Acq {
    if reentry {
        a.with_flags(hooks::REENTRY)
    } else {
        a
    }
}

/// The hold after a `bump` of an exclusive hold (a mutex, a write): the same, at `site`.
pub(super) fn bump_exclusive(_: &Prim, site: &'static Location<'static>) -> Acq {
    acq(site, Mode::Exclusive)
}

/// The hold after a `bump` of a read. With another read of this thread still held,
/// parking_lot did not yield (it only bumps the last reader): a re-entry, not a nested read.
pub(super) fn bump_shared(prim: &Prim, site: &'static Location<'static>) -> Acq {
    reentry_if(holds_shared_here(prim), acq(site, Mode::Shared))
}

/// The hold after a `bump` of an upgradable read. With a read of this thread still held,
/// parking_lot did not yield (it only bumps when the upgradable reader is alone): a re-entry,
/// not a nested acquisition.
pub(super) fn bump_upgradable(prim: &Prim, site: &'static Location<'static>) -> Acq {
    reentry_if(holds_shared_here(prim), acq(site, Mode::Upgradable))
}

/// The hold after a `bump` of one level of a reentrant mutex. With other levels of this
/// thread's hold still in the books, parking_lot did not yield (it only bumps the last
/// level): a re-entry.
pub(super) fn bump_reentrant(prim: &Prim, site: &'static Location<'static>) -> Acq {
    reentry_if(holds_here(prim, |_| true), acq(site, Mode::Exclusive))
}

/// A public guard: a newtype over the shell, with the owner `$owner` and parking_lot's guard
/// `$inner`, its constructor, `Deref` (and `DerefMut` with `+ DerefMut`), `Debug` and
/// `Display` (the guarded value's, as parking_lot's). The struct's docs and attributes are
/// the caller's; explicit `Send`/`Sync` impls stay next to the invocation.
macro_rules! guard_struct {
    // A lock's own guard: parking_lot's guard is kept as `Held` (the owner is the lock), and
    // the value is reached through the lock (`DerefMut` with `+ DerefMut`).
    (plain $(#[$attr:meta])* pub struct $guard:ident($lock:ident, $inner:ident) $(+ $mutable:ident)?;) => {
        $(#[$attr])*
        pub struct $guard<'a, T: ?Sized> {
            // The shell's `Drop` releases the books first, then makes parking_lot's guard
            // again and drops it, which unlocks, then records the hold time.
            pub(super) shell: $crate::shell::Guard<
                &'a $lock<T>,
                $crate::parking_lot::guard::Held<::parking_lot::$inner<'a, T>>,
            >,
        }

        impl<'a, T: ?Sized> $guard<'a, T> {
            /// A guard over parking_lot's, whose hold is recorded in `token`.
            #[inline]
            pub(super) fn new(
                owner: &'a $lock<T>,
                inner: ::parking_lot::$inner<'a, T>,
                token: $crate::probe::Token,
            ) -> Self {
                $guard {
                    shell: $crate::shell::Guard::new(
                        owner,
                        $crate::parking_lot::guard::Held::keep(inner),
                        token,
                    ),
                }
            }
        }

        impl<T: ?Sized> ::std::ops::Deref for $guard<'_, T> {
            type Target = T;
            #[inline]
            fn deref(&self) -> &T {
                // SAFETY: the guard holds the lock (as parking_lot's guard it kept did).
                unsafe { &*self.shell.owner().inner.data_ptr() }
            }
        }

        $(guard_struct!(@$mutable $guard);)?

        guard_struct!(@fmt $guard);
    };
    (@DerefMut $guard:ident) => {
        impl<T: ?Sized> ::std::ops::DerefMut for $guard<'_, T> {
            #[inline]
            fn deref_mut(&mut self) -> &mut T {
                // SAFETY: the guard holds the lock exclusively, and `&mut self` is unique.
                unsafe { &mut *self.shell.owner().inner.data_ptr() }
            }
        }
    };
    (@fmt $guard:ident) => {
        impl<T: ?Sized + ::std::fmt::Debug> ::std::fmt::Debug for $guard<'_, T> {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                ::std::fmt::Debug::fmt(&**self, f)
            }
        }

        impl<T: ?Sized + ::std::fmt::Display> ::std::fmt::Display for $guard<'_, T> {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                ::std::fmt::Display::fmt(&**self, f)
            }
        }
    };
    // A mapped guard: `DerefMut` when its `map` gives `&mut`.
    ($(#[$attr:meta])* pub struct $guard:ident($owner:ty, $inner:ident) [& mut];) => {
        guard_struct!($(#[$attr])* pub struct $guard($owner, $inner) + DerefMut;);
    };
    ($(#[$attr:meta])* pub struct $guard:ident($owner:ty, $inner:ident) [&];) => {
        guard_struct!($(#[$attr])* pub struct $guard($owner, $inner););
    };
    ($(#[$attr:meta])* pub struct $guard:ident($owner:ty, $inner:ident) + DerefMut;) => {
        guard_struct!($(#[$attr])* pub struct $guard($owner, $inner););

        impl<T: ?Sized> ::std::ops::DerefMut for $guard<'_, T> {
            #[inline]
            fn deref_mut(&mut self) -> &mut T {
                &mut self.shell
            }
        }
    };
    ($(#[$attr:meta])* pub struct $guard:ident($owner:ty, $inner:ident);) => {
        $(#[$attr])*
        pub struct $guard<'a, T: ?Sized> {
            // The shell's `Drop` releases the books first, then drops the inner guard, which
            // unlocks, then records the hold time, outside the critical section.
            pub(super) shell: $crate::shell::Guard<$owner, ::parking_lot::$inner<'a, T>>,
        }

        impl<'a, T: ?Sized> $guard<'a, T> {
            /// A guard over parking_lot's, whose hold is recorded in `token`.
            #[inline]
            pub(super) fn new(
                owner: $owner,
                inner: ::parking_lot::$inner<'a, T>,
                token: $crate::probe::Token,
            ) -> Self {
                $guard {
                    shell: $crate::shell::Guard::new(owner, inner, token),
                }
            }
        }

        impl<T: ?Sized> ::std::ops::Deref for $guard<'_, T> {
            type Target = T;
            #[inline]
            fn deref(&self) -> &T {
                &self.shell
            }
        }

        guard_struct!(@fmt $guard);
    };
}

/// A guard family: a lock's guard and its methods, and with `mapped` its `map`s, its mapped
/// guard and theirs, from a spec and the docs, in brackets, in this order: the guard, its
/// accessor, `unlocked`, `unlock_fair`, `unlocked_fair`, `bump`; with `mapped`, then its
/// `map`, `try_map`, `try_map_or_err`, the mapped guard, and the mapped guard's `map`,
/// `try_map`, `try_map_or_err` and `unlock_fair`. Each doc opens with the parking_lot item it
/// wraps. `impl { .. }` adds more methods of the guard, as in [`guard_methods!`]. The guard is
/// `Sync` when `T` is, as parking_lot's (its borrow of the lock alone would ask `T: Send`
/// too); the mapped guard's auto traits are its fields'.
macro_rules! guard_family {
    (
        pub struct $guard:ident($lock:ident) $(+ $mutable:ident)?, $must_use:literal;
        $(mapped $mapped:ident($($r:tt)+), $try_map_or_err:ident;)?
        fn $accessor:ident, unlocked($force:ident, $force_fair:ident, $relock:ident), bump($regrant:path);
        [$(#[$doc:meta])*] [$(#[$owner_doc:meta])*] [$(#[$unlocked_doc:meta])*]
        [$(#[$unlock_fair_doc:meta])*] [$(#[$unlocked_fair_doc:meta])*] [$(#[$bump_doc:meta])*]
        $([$(#[$map_doc:meta])*] [$(#[$try_map_doc:meta])*] [$(#[$try_map_or_err_doc:meta])*]
        [$(#[$mapped_doc:meta])*] [$(#[$mapped_map_doc:meta])*] [$(#[$mapped_try_map_doc:meta])*]
        [$(#[$mapped_try_map_or_err_doc:meta])*] [$(#[$mapped_unlock_fair_doc:meta])*])?
        $(impl { $($more:tt)* })?
    ) => {
        guard_struct! {
            plain
            $(#[$doc])*
            #[clippy::has_significant_drop]
            #[must_use = $must_use]
            pub struct $guard($lock, $guard) $(+ $mutable)?;
        }

        // SAFETY: as parking_lot's guard, which is `Sync` when `T: Sync`: a shared guard gives
        // `&T`, and reaches the lock only while the guard holds it. The token is `Sync`.
        unsafe impl<T: ?Sized + Sync> Sync for $guard<'_, T> {}

        guard_methods! {
            impl $guard($guard) {
                $(#[$owner_doc])* fn $accessor = owner($lock);
                $(#[$unlocked_doc])* fn unlocked = unlocked($force, $relock);
                $(#[$unlock_fair_doc])* fn unlock_fair = unlock_fair();
                $(#[$unlocked_fair_doc])* fn unlocked_fair = unlocked($force_fair, $relock);
                $(#[$bump_doc])* fn bump = bump($regrant);
            }
        }

        $(
            guard_methods! {
                impl $guard($guard) {
                    $(#[$map_doc])* fn map = map($mapped, $($r)+);
                    $(#[$try_map_doc])* fn try_map = try_map($mapped, $($r)+);
                    $(#[$try_map_or_err_doc])* fn try_map_or_err = try_map_or_err($mapped, $($r)+);
                }
            }

            guard_struct! {
                $(#[$mapped_doc])*
                #[clippy::has_significant_drop]
                #[must_use = $must_use]
                pub struct $mapped(&'a ::lockscope_detector::prim::Prim, $mapped) [$($r)+];
            }

            guard_methods! {
                impl $mapped($mapped) {
                    $(#[$mapped_map_doc])* fn map = map($mapped, $($r)+);
                    $(#[$mapped_try_map_doc])* fn try_map = try_map($mapped, $($r)+);
                    $(#[$mapped_try_map_or_err_doc])*
                    fn $try_map_or_err = try_map_or_err($mapped, $($r)+);
                    $(#[$mapped_unlock_fair_doc])* fn unlock_fair = unlock_fair();
                }
            }
        )?

        $(guard_methods! {
            impl $guard($guard) {
                $($more)*
            }
        })?
    };
}

/// A guard's methods, each written once for every guard that has it: the caller lists them
/// as `$(#[doc])* fn name = kind(args);`, in the order the docs show them, where `kind` is:
///
/// - `owner(Lock)`: the lock the guard holds (`mutex`, `rwlock`, `remutex`);
/// - `map(Mapped, &mut)`, `try_map(..)`, `try_map_or_err(..)` (parking_lot's method of the
///   same name; a user closure that panics releases the books before the unlock);
/// - `unlocked(force_unlock, relock_at)`: the lock's `force_unlock*` method, and its blocking
///   acquisition at a given site, which records the re-lock;
/// - `unlock_fair()`, `leak()`;
/// - `bump(regrant)`: `regrant(prim, site)` is the hold recorded after the bump;
/// - `downgrade(Target, Mode)`: the hold is rewritten in the books first, then weakened.
macro_rules! guard_methods {
    (impl $guard:ident($inner:ident) {
        $($(#[$doc:meta])* fn $name:ident = $kind:ident $args:tt;)*
    }) => {
        impl<'a, T: ?Sized> $guard<'a, T> {
            $(guard_methods!(@$kind [$(#[$doc])*] $inner $name $args);)*
        }
    };
    (@owner [$(#[$doc:meta])*] $inner:ident $name:ident ($lock:ident)) => {
        $(#[$doc])*
        pub fn $name(s: &Self) -> &'a $lock<T> {
            *s.shell.owner()
        }
    };
    (@map [$(#[$doc:meta])*] $inner:ident $name:ident ($mapped:ident, $($r:tt)+)) => {
        $(#[$doc])*
        #[inline]
        pub fn $name<U: ?Sized, F>(s: Self, f: F) -> $mapped<'a, U>
        where
            F: FnOnce($($r)+ T) -> $($r)+ U,
        {
            use $crate::parking_lot::guard::{PrimRef, Real, books_first};
            let (owner, mut token, inner) = s.shell.into_parts();
            // SAFETY: the parts of one guard, `inner` used once.
            let inner = unsafe { inner.real(&owner) };
            let prim = owner.prim_ref();
            let inner = ::parking_lot::$inner::map(inner, |t| books_first(prim, &mut token, || f(t)));
            $mapped::new(prim, inner, token)
        }
    };
    (@try_map [$(#[$doc:meta])*] $inner:ident $name:ident ($mapped:ident, $($r:tt)+)) => {
        $(#[$doc])*
        #[inline]
        pub fn $name<U: ?Sized, F>(s: Self, f: F) -> Result<$mapped<'a, U>, Self>
        where
            F: FnOnce($($r)+ T) -> Option<$($r)+ U>,
        {
            use $crate::parking_lot::guard::{PrimRef, Real, books_first};
            let (owner, mut token, inner) = s.shell.into_parts();
            // SAFETY: the parts of one guard, `inner` used once.
            let inner = unsafe { inner.real(&owner) };
            let prim = owner.prim_ref();
            match ::parking_lot::$inner::try_map(inner, |t| books_first(prim, &mut token, || f(t))) {
                Ok(inner) => Ok($mapped::new(prim, inner, token)),
                Err(inner) => Err(Self::new(owner, inner, token)),
            }
        }
    };
    (@try_map_or_err [$(#[$doc:meta])*] $inner:ident $name:ident ($mapped:ident, $($r:tt)+)) => {
        $(#[$doc])*
        #[inline]
        pub fn $name<U: ?Sized, F, E>(s: Self, f: F) -> Result<$mapped<'a, U>, (Self, E)>
        where
            F: FnOnce($($r)+ T) -> Result<$($r)+ U, E>,
        {
            use $crate::parking_lot::guard::{PrimRef, Real, books_first};
            let (owner, mut token, inner) = s.shell.into_parts();
            // SAFETY: the parts of one guard, `inner` used once.
            let inner = unsafe { inner.real(&owner) };
            let prim = owner.prim_ref();
            match ::parking_lot::$inner::$name(inner, |t| books_first(prim, &mut token, || f(t))) {
                Ok(inner) => Ok($mapped::new(prim, inner, token)),
                Err((inner, e)) => Err((Self::new(owner, inner, token), e)),
            }
        }
    };
    (@unlocked [$(#[$doc:meta])*] $inner:ident $name:ident ($force:ident, $relock:ident)) => {
        $(#[$doc])*
        #[track_caller]
        pub fn $name<F, U>(s: &mut Self, f: F) -> U
        where
            F: FnOnce() -> U,
        {
            use $crate::parking_lot::guard::{token_of, unlocked};
            let site = ::std::panic::Location::caller();
            let lock = *s.shell.owner();
            unlocked(
                lock.prim(),
                s.shell.token_mut(),
                // SAFETY: this guard holds the lock, and the re-lock takes it again before the
                // guard is used again (also when `f` panics).
                || unsafe { lock.$force() },
                || token_of(lock.$relock(site).shell),
                f,
            )
        }
    };
    (@unlock_fair [$(#[$doc:meta])*] $inner:ident $name:ident ()) => {
        $(#[$doc])*
        #[inline]
        pub fn $name(s: Self) {
            use $crate::parking_lot::guard::Real;
            let (owner, inner) = s.shell.release();
            // SAFETY: the parts of one guard, `inner` used once.
            ::parking_lot::$inner::unlock_fair(unsafe { inner.real(&owner) });
        }
    };
    (@leak [$(#[$doc:meta])*] $inner:ident $name:ident ()) => {
        $(#[$doc])*
        pub fn $name(s: Self) -> &'a mut T {
            use $crate::parking_lot::guard::Real;
            let (owner, inner) = s.shell.release();
            // SAFETY: the parts of one guard, `inner` used once.
            ::parking_lot::$inner::leak(unsafe { inner.real(&owner) })
        }
    };
    (@bump [$(#[$doc:meta])*] $inner:ident $name:ident ($regrant:path)) => {
        $(#[$doc])*
        #[track_caller]
        pub fn $name(s: &mut Self) {
            use $crate::parking_lot::guard::{PrimRef, bumped};
            let site = ::std::panic::Location::caller();
            let (owner, held, token) = s.shell.parts_mut();
            // SAFETY: `owner` is the lock this guard holds (the bump leaves it held again).
            let mut inner = unsafe { held.lend(*owner) };
            let prim = owner.prim_ref();
            bumped(
                prim,
                token,
                || ::parking_lot::$inner::bump(&mut inner),
                || $regrant(prim, site),
            );
        }
    };
    (@downgrade [$(#[$doc:meta])*] $inner:ident $name:ident ($target:ident, $mode:ident)) => {
        $(#[$doc])*
        pub fn $name(s: Self) -> $target<'a, T> {
            use $crate::parking_lot::guard::Real;
            let (lock, mut token, inner) = s.shell.into_parts();
            // SAFETY: the parts of one guard, `inner` used once.
            let inner = unsafe { inner.real(&lock) };
            // Books first: weaker in the books before it is weaker in fact.
            token.update(lock.prim(), 1, ::lockscope_detector::hooks::Mode::$mode);
            $target::new(lock, ::parking_lot::$inner::$name(inner), token)
        }
    };
}

#[cfg(test)]
mod tests {
    use std::mem::size_of;

    use crate::parking_lot::{
        MutexGuard, ReentrantMutexGuard, RwLockReadGuard, RwLockUpgradableReadGuard,
        RwLockWriteGuard,
    };

    /// A guard is two words (the lock and the token), which the Rust ABI keeps in registers:
    /// a third one sent every move of a guard through memory (see `Held`).
    #[test]
    fn a_guard_is_two_words() {
        const TWO: usize = 2 * size_of::<usize>();
        assert_eq!(size_of::<MutexGuard<'_, u64>>(), TWO);
        assert_eq!(size_of::<ReentrantMutexGuard<'_, u64>>(), TWO);
        assert_eq!(size_of::<RwLockReadGuard<'_, u64>>(), TWO);
        assert_eq!(size_of::<RwLockWriteGuard<'_, u64>>(), TWO);
        assert_eq!(size_of::<RwLockUpgradableReadGuard<'_, u64>>(), TWO);
        // An `Option` of one costs nothing more (the lock's reference is never null).
        assert_eq!(size_of::<Option<MutexGuard<'_, u64>>>(), TWO);
    }
}
