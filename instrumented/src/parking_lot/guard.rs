//! What every parking_lot guard shares. Each public guard is a newtype over the one guard
//! shell ([`Guard`](crate::shell::Guard)), which owns the release order; parking_lot's guard
//! API differs from guard to guard only in names, so the guards' structs and their `map`,
//! `try_map`, `unlocked`, `bump`, `unlock_fair`, `downgrade`, ... are written once, as macros
//! over those names ([`guard_struct!`] and [`guard_methods!`]), with the helpers they call
//! here; each guard file declares its guards and lists their methods, each with its docs.

use std::marker::PhantomData;
use std::mem::ManuallyDrop;
use std::panic::Location;

use lockscope_detector::__private::hooks::{self, Acq, Mode};
use lockscope_detector::__private::prim::Prim;

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
    ($($lock:ident: $class:ident, $marker:ty);*) => {$(
        impl<'a, T: ?Sized> PrimRef<'a> for &'a $lock<T> {
            #[inline]
            fn prim_ref(self) -> &'a Prim {
                $lock::prim(self)
            }
        }

        impl<'a, T: ?Sized, G: Remake<'a, $lock<T>>> Owner<Held<G>> for &'a $lock<T> {
            type Class = ::lockscope_detector::__private::hooks::$class;
            // parking_lot's own marker: lockscope's guards have the auto traits of its guards.
            type Marker = $marker;

            #[inline]
            fn prim(&self) -> &Prim {
                $lock::prim(self)
            }

            #[inline(always)]
            fn unlock(&self, held: Held<G>) {
                // SAFETY: the shell unlocks once, with the hold its guard kept.
                drop(unsafe { held.real(self) });
            }


            #[inline]
            unsafe fn prim_registered(&self) -> &Prim {
                // SAFETY: as the caller promises, the primitive was looked up before.
                unsafe { $lock::prim_registered(self) }
            }
        }
    )*};
}

lock_owner!(
    Mutex: IsMutex, <super::RawMutex as super::lock_api::RawMutex>::GuardMarker;
    RwLock: NotMutex, <super::RawRwLock as super::lock_api::RawRwLock>::GuardMarker;
    ReentrantMutex: IsMutex, <super::RawMutex as super::lock_api::RawMutex>::GuardMarker
);

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
    *token = probe::granted::<lockscope_detector::__private::hooks::Threads>(|| prim, regrant());
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

#[macro_use]
mod macros;

#[cfg(test)]
mod tests;
