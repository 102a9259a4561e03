//! The one guard shell: every guard lockscope hands out, blocking or async, borrowed, owned or
//! mapped, is a thin newtype over [`Guard`], which owns the release order once:
//!
//! 1. the books: the hold leaves lockscope's books (`Token::release_books`), while the lock is
//!    still held, so the detector never sees two holders of one mutex;
//! 2. the unlock: [`Owner::unlock`] hands the lock back (drops parking_lot's or std's guard,
//!    or returns permits to tokio's semaphore);
//! 3. the statistics: the hold time is recorded after the unlock, out of the critical section.
//!
//! A guard is taken apart only through [`Guard::into_parts`], which gives the token to the
//! caller; a [`Token`] dropped without being released releases its books itself (see
//! [`probe`](crate::probe)), so no path can leave a ghost holder behind.

use std::mem::ManuallyDrop;
use std::ops::{Deref, DerefMut};

use lockscope_detector::hooks;
use lockscope_detector::prim::Prim;

use crate::probe::{self, Token};

/// What a guard holds its lock through (a reference to the wrapper, an `Arc` of it, or the
/// bare primitive for a mapped guard), and how the lock is handed back.
///
/// `G` is the part of the guard that *is* the hold: parking_lot's or std's guard, or a count
/// of tokio permits.
pub(crate) trait Owner<G> {
    /// The primitive whose books the guard's token is in.
    fn prim(&self) -> &Prim;

    /// Whether the primitive is a mutex (`PrimKind::is_mutex`), when the owner's type says so
    /// (`None`: the release reads the primitive's kind).
    const MUTEX: Option<bool> = None;

    /// Whether the guard's holds are mostly quick ones (a blocking lock's): its drop then
    /// keeps only the quick release inline, and the rest out of line.
    const QUICK: bool = false;

    /// Whether the guard is an async primitive's (tokio's): its token is never a quick one
    /// (those are for guards that cannot leave their thread), and its whole release is out
    /// of line (see [`Guard::drop_async`]).
    const ASYNC: bool = false;

    /// [`Owner::prim`], without the check a lazily registered primitive needs.
    ///
    /// # Safety
    ///
    /// The primitive was looked up before through this owner (a hold of it was recorded).
    #[inline]
    unsafe fn prim_registered(&self) -> &Prim {
        self.prim()
    }

    /// Hands the lock back. The default drops `inner`: the wrapped lock's own guard, whose
    /// drop unlocks.
    #[inline]
    fn unlock(&self, inner: G) {
        drop(inner);
    }
}

/// A mapped blocking guard keeps only the primitive: its inner guard unlocks by itself.
impl<G> Owner<G> for &Prim {
    #[inline]
    fn prim(&self) -> &Prim {
        self
    }
}

/// A guard: the owner `O`, the hold `G` and the hold's token. Its `Drop` is the only place
/// that releases a guard in lockscope (books, unlock, statistics; see the module docs).
///
/// `Send`/`Sync` are those of `O` and `G` (the token is both), so a newtype over it has the
/// auto traits of the fields it had before; guards whose wrapped type says otherwise still
/// spell their impls out.
///
/// The fields are in a fixed order, token first: a three-word guard moved before its drop (a
/// `drop(guard)`) is copied as a 16-byte chunk and a word, and the drop reads them back at
/// once, which costs store-forwarding stalls that depend on which fields share the chunk.
/// Of the three orders measured on a nested pair of parking_lot locks (the yardstick's S4b,
/// when their guards were three words), this one was the fastest: 2.24x raw, against 2.30x
/// and 2.41x. (parking_lot's guards are two words now, see `parking_lot::guard::Held`; a
/// tokio guard or permit is still three.)
#[repr(C)]
pub(crate) struct Guard<O: Owner<G>, G> {
    /// Released (or dropped) by `Drop` on every path: not dropped again by the glue, so that
    /// a guard's drop needs no second look at it.
    token: ManuallyDrop<Token>,
    inner: ManuallyDrop<G>,
    owner: O,
}

impl<O: Owner<G>, G> Guard<O, G> {
    /// A guard over `inner`, whose acquisition of `owner.prim()` the probe recorded in `token`.
    #[inline]
    pub(crate) fn new(owner: O, inner: G, token: Token) -> Self {
        Guard {
            owner,
            inner: ManuallyDrop::new(inner),
            token: ManuallyDrop::new(token),
        }
    }

    /// Takes the guard apart without running its `Drop`: the caller now owns the release (a
    /// token it drops releases its books by itself).
    #[inline]
    pub(crate) fn into_parts(self) -> (O, Token, G) {
        let s = ManuallyDrop::new(self);
        // SAFETY: `s` is never dropped or used again, so each field is moved out exactly once.
        unsafe {
            (
                std::ptr::read(&s.owner),
                ManuallyDrop::into_inner(std::ptr::read(&s.token)),
                ManuallyDrop::into_inner(std::ptr::read(&s.inner)),
            )
        }
    }

    /// Releases the books now (with the statistics), and gives back the owner and the hold
    /// for an unlock of the caller's choosing (`unlock_fair`, `leak`, `forget`).
    #[inline]
    pub(crate) fn release(self) -> (O, G) {
        let (owner, mut token, inner) = self.into_parts();
        token.release(owner.prim());
        (owner, inner)
    }

    /// The owner: the wrapper the guard locks (or the primitive, for a mapped guard).
    #[inline]
    pub(crate) fn owner(&self) -> &O {
        &self.owner
    }

    /// The hold's token, for a method that re-records it (`unlocked`, `bump`, a condvar wait,
    /// a permit `split`).
    #[inline]
    pub(crate) fn token_mut(&mut self) -> &mut Token {
        &mut self.token
    }

    /// All three at once, for a method that needs the owner and both mutable parts.
    #[inline]
    pub(crate) fn parts_mut(&mut self) -> (&O, &mut G, &mut Token) {
        (&self.owner, &mut self.inner, &mut self.token)
    }
}

impl<O: Owner<G>, G> Drop for Guard<O, G> {
    #[inline(always)]
    fn drop(&mut self) {
        // SAFETY: `inner` is taken once, here, and never used again (moving it out does not
        // unlock: `unlock` below does).
        let inner = unsafe { ManuallyDrop::take(&mut self.inner) };
        if O::ASYNC {
            // SAFETY: the token is read once, here, and never dropped (`ManuallyDrop`).
            let token = unsafe { ManuallyDrop::take(&mut self.token) };
            return Self::drop_async(token, &self.owner, inner);
        }
        if self.token.is_quick() {
            // The thread's own untimed hold, on the thread that took it: the books in two
            // stores, the unlock, then the hold time (see `hooks::release_own`).
            // SAFETY: the token is read once, here, and never dropped (`ManuallyDrop`).
            let hold = unsafe { ManuallyDrop::take(&mut self.token) }.into_quick();
            // SAFETY: a quick token was recorded for this owner's primitive, so it is there.
            let prim = unsafe { self.owner.prim_registered() };
            let mutex = Self::is_mutex(prim);
            // SAFETY: the hold of a quick token, released once (the token is now empty), on
            // its thread (quick tokens are made only for guards that cannot leave it).
            let released = unsafe { hooks::release_own(prim, hold, mutex) };
            self.owner.unlock(inner);
            return probe::release_stats(prim, released);
        }
        if O::QUICK {
            self.drop_other(inner)
        } else {
            self.release_other(inner)
        }
    }
}

impl<O: Owner<G>, G> Guard<O, G> {
    /// Whether `prim` (the owner's) is a mutex: known from the owner's type, or read.
    #[inline(always)]
    fn is_mutex(prim: &Prim) -> bool {
        O::MUTEX.unwrap_or_else(|| prim.kind().is_mutex())
    }

    /// The whole release of an async guard ([`Owner::ASYNC`]), out of line and given the
    /// guard's words (in registers: the owner's by reference), so that the guard's drop is a
    /// call small enough to inline into the caller: a guard dropped out of line is read back
    /// from memory right after it was written, which stalls on store forwarding.
    #[inline(never)]
    fn drop_async(mut token: Token, owner: &O, inner: G) {
        if token.is_none() {
            return owner.unlock(inner);
        }
        if O::MUTEX == Some(false)
            && let Some(released) = token.release_books_shared()
        {
            // The common release of a semaphore's permits: the primitive is looked up only if
            // the statistics need it, after the unlock (see `hooks::release_quick_shared`).
            owner.unlock(inner);
            if released.has_stats() {
                probe::release_stats(owner.prim(), released);
            }
            return;
        }
        let prim = owner.prim();
        let released = token.release_books(prim, Self::is_mutex(prim));
        owner.unlock(inner);
        probe::release_stats(prim, released);
    }

    /// [`Guard::release_other`] out of line, so that the quick release of a blocking lock's
    /// guard is small enough to inline into the caller.
    #[inline(never)]
    fn drop_other(&mut self, inner: G) {
        self.release_other(inner);
    }

    /// The rest of `drop`: a hold recorded on another path than the thread's quick one, or
    /// none.
    #[inline(always)]
    fn release_other(&mut self, inner: G) {
        if self.token.is_none() {
            // Nothing recorded (the detector was off): not even the primitive is looked up.
            return self.owner.unlock(inner);
        }
        let prim = self.owner.prim();
        let mutex = Self::is_mutex(prim);
        let released = self.token.release_books(prim, mutex);
        self.owner.unlock(inner);
        // The primitive outlives the unlock (the owner keeps it), so `prim` is still good.
        probe::release_stats(prim, released);
        // SAFETY: dropped once, here (released by now: this only checks).
        unsafe { ManuallyDrop::drop(&mut self.token) };
    }
}

impl<O: Owner<G>, G> Deref for Guard<O, G> {
    type Target = G;
    #[inline]
    fn deref(&self) -> &G {
        &self.inner
    }
}

impl<O: Owner<G>, G> DerefMut for Guard<O, G> {
    #[inline]
    fn deref_mut(&mut self) -> &mut G {
        &mut self.inner
    }
}

#[cfg(test)]
mod tests {
    use lockscope_detector::locks;

    use crate::std::sync::Mutex;

    fn holders(name: &str) -> usize {
        locks()
            .into_iter()
            .find(|l| l.name == name)
            .map_or(usize::MAX, |l| l.holders.len())
    }

    /// A guard taken apart whose token is then dropped, unreleased (a path that forgot it):
    /// the token releases its books itself, while the lock itself is still held.
    #[test]
    fn a_dropped_token_releases_its_books() {
        let m = Mutex::named("shell-orphan-token", ());
        let g = m.lock().unwrap();
        assert_eq!(holders("shell-orphan-token"), 1);
        let (_prim, token, inner) = g.shell.into_parts();
        drop(token);
        assert_eq!(
            holders("shell-orphan-token"),
            0,
            "the token released the books"
        );
        assert!(m.try_lock().is_err(), "the lock itself is still held");
        drop(inner);
        assert!(m.try_lock().is_ok());
    }
}
