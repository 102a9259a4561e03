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

use lockscope_detector::__private::hooks;
use lockscope_detector::__private::prim::Prim;

use crate::probe::Token;

/// What a guard holds its lock through (a reference to the wrapper, an `Arc` of it, or the
/// bare primitive for a mapped guard), and how the lock is handed back.
///
/// `G` is the part of the guard that *is* the hold: parking_lot's or std's guard, or a count
/// of tokio permits.
pub(crate) trait Owner<G> {
    /// The primitive whose books the guard's token is in.
    fn prim(&self) -> &Prim;

    /// What the guard's type knows of its primitive: a mutex, not one, or either (see
    /// [`hooks::Class`]).
    type Class: hooks::Class;

    /// Whether the guard stays on the thread that took it: lock_api's guard marker, as the
    /// guard's auto traits follow it (see [`hooks::GuardMarker`]).
    type Marker: hooks::GuardMarker;

    /// Where the release's code goes, not what it does: `true` puts the release of a
    /// recorded hold out of line, for tokio's guards (see [`Guard::release_out_of_line`]; with
    /// the detector off, the unlock stays inline); `false` keeps the release inline, whose
    /// slow half the detector keeps out of line itself.
    const OUT_OF_LINE: bool = false;

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

/// A mapped blocking guard and a std guard keep only the primitive: the inner guard unlocks
/// by itself. Either kind of primitive, and a guard that may have moved (a mapped parking_lot
/// guard is `Send` with its `send_guard` feature).
impl<G> Owner<G> for &Prim {
    type Class = hooks::AnyPrim;
    type Marker = hooks::GuardSend;

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
/// The fields are in a fixed order, token first: a three-word guard (a tokio guard or
/// permit) moved before its drop (a `drop(guard)`) is copied as a 16-byte chunk and a word,
/// and the drop reads them back at once, which costs store-forwarding stalls that depend on
/// which fields share the chunk; this order measured the fastest of three
/// (docs/performance.md, "Store forwarding").
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
        // SAFETY: `inner` and `token` are taken once, here, and never used again (moving
        // `inner` out does not unlock: `unlock` does; the token is `ManuallyDrop`).
        let (inner, token) = unsafe {
            (
                ManuallyDrop::take(&mut self.inner),
                ManuallyDrop::take(&mut self.token),
            )
        };
        if token.is_none() {
            // Nothing recorded (the detector was off): the unlock alone, inline, and not even
            // the primitive looked up. (A token that records nothing needs no drop.)
            std::mem::forget(token);
            return self.owner.unlock(inner);
        }
        if O::OUT_OF_LINE {
            Self::release_out_of_line(token, &self.owner, inner);
        } else {
            Self::release_recorded(token, &self.owner, inner);
        }
    }
}

impl<O: Owner<G>, G> Guard<O, G> {
    /// The release of a recorded hold: the books, the unlock, the statistics (see the module
    /// docs).
    #[inline(always)]
    fn release_recorded(token: Token, owner: &O, inner: G) {
        // Never dropped: it records nothing once its books are released below (they are taken
        // out of it first), so no check of it is left after the unlock, nor a landing pad
        // around the unlock.
        let mut token = ManuallyDrop::new(token);
        // SAFETY: the token recorded a hold of this owner's primitive, so it was looked up.
        let prim = || unsafe { owner.prim_registered() };
        let released = token.release_books::<O::Class, O::Marker>(prim);
        owner.unlock(inner);
        if released.has_stats() {
            // The primitive outlives the unlock (the owner keeps it).
            hooks::release_stats(prim(), released);
        }
    }

    /// [`Guard::release_recorded`] out of line ([`Owner::OUT_OF_LINE`]), given the guard's
    /// words (in registers: the owner's by reference), so that the guard's drop is a call
    /// small enough to inline into the caller: a tokio guard dropped out of line is read back
    /// from memory right after it was written, which stalls on store forwarding.
    #[inline(never)]
    fn release_out_of_line(token: Token, owner: &O, inner: G) {
        Self::release_recorded(token, owner, inner);
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
