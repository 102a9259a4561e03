//! What every blocking wrapper shares, whichever thread-parking lock it wraps (parking_lot's
//! or std's): the translation of a blocking or `try_` acquisition into the probe's calls, the
//! guard shell that keeps the release order, and the books of a guard across a condvar wait.
//!
//! Release order, for every guard built here: the books are released first, then the inner
//! guard unlocks, then the statistics are recorded (out of the critical section), so the
//! detector never sees two holders of one mutex.

use std::convert::Infallible;
use std::mem::ManuallyDrop;
use std::ops::{Deref, DerefMut};
use std::panic::Location;

use lockscope_detector::hooks::{self, Acq, Mode};
use lockscope_detector::prim::Prim;

use crate::probe::{self, Token};

/// An acquisition of a blocking lock: one permit (a reader counts one, a writer is
/// exclusive).
#[inline]
pub(crate) fn acq(site: &'static Location<'static>, mode: Mode) -> Acq {
    Acq::new(site, 1, mode)
}

/// [`probe::blocking`] for a lock whose blocking form cannot fail (std's poisoning is part
/// of `P`, not a failure: the lock is held either way). With the detector off it is `block()`
/// and a branch, inlined into the wrapper (`prim` is not even looked up); the recording path
/// stays out of line, so that it does not keep the wrapper from inlining.
#[inline(always)]
pub(crate) fn blocking<'p, P>(
    prim: impl FnOnce() -> &'p Prim,
    acq: Acq,
    fast: impl FnMut() -> Option<P>,
    block: impl FnOnce() -> P,
) -> (P, Token) {
    if !hooks::enabled() {
        return (block(), Token::none());
    }
    blocking_recorded(prim(), acq, fast, block)
}

#[inline(never)]
fn blocking_recorded<P>(
    prim: &Prim,
    acq: Acq,
    fast: impl FnMut() -> Option<P>,
    block: impl FnOnce() -> P,
) -> (P, Token) {
    match probe::blocking(prim, acq, fast, || Ok::<P, Infallible>(block())) {
        Ok(granted) => granted,
        Err(never) => match never {},
    }
}

/// A `try_` form: records the hold, or the give-up.
#[inline]
pub(crate) fn tried<G>(prim: &Prim, acq: Acq, got: Option<G>) -> Option<(G, Token)> {
    match got {
        Some(g) => Some((g, probe::try_acquired(prim, acq))),
        None => {
            probe::try_failed(prim, acq);
            None
        }
    }
}

/// A guard of a blocking lock: the inner guard `G`, the primitive and the hold's token.
/// Public guard types are thin newtypes over it; it owns the release order in its `Drop`.
pub(crate) struct Shell<'a, G> {
    // `Drop::drop` releases the books first (`token.release_books`), then drops `inner`,
    // which unlocks, then records the hold time, outside the critical section.
    prim: &'a Prim,
    inner: ManuallyDrop<G>,
    token: Token,
}

impl<'a, G> Shell<'a, G> {
    /// A guard over `inner`, whose acquisition of `prim` the probe recorded in `token`.
    #[inline]
    pub(crate) fn new(prim: &'a Prim, inner: G, token: Token) -> Self {
        Shell {
            prim,
            inner: ManuallyDrop::new(inner),
            token,
        }
    }

    /// Takes the guard apart without running its `Drop`: the caller now owns the release.
    #[inline]
    pub(crate) fn into_parts(self) -> (&'a Prim, Token, G) {
        let s = ManuallyDrop::new(self);
        // SAFETY: `s` is never dropped or used again, so each field is moved out exactly once.
        unsafe {
            (
                s.prim,
                std::ptr::read(&s.token),
                ManuallyDrop::into_inner(std::ptr::read(&s.inner)),
            )
        }
    }
}

impl<G> Drop for Shell<'_, G> {
    #[inline]
    fn drop(&mut self) {
        // Books first, then the unlock, then the statistics (out of the critical section).
        let released = self.token.release_books(self.prim);
        // SAFETY: `inner` is dropped once, here, and never used again.
        unsafe { ManuallyDrop::drop(&mut self.inner) };
        probe::release_stats(self.prim, released);
    }
}

impl<G> Deref for Shell<'_, G> {
    type Target = G;
    #[inline]
    fn deref(&self) -> &G {
        &self.inner
    }
}

impl<G> DerefMut for Shell<'_, G> {
    #[inline]
    fn deref_mut(&mut self) -> &mut G {
        &mut self.inner
    }
}

/// What becomes of the hold when a wait unwinds (see [`Books`]).
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum OnUnwind {
    /// The guard outlives the wait (parking_lot's `wait(&mut guard)`): the mutex is locked
    /// again when the wait unwinds, so the hold is recorded again.
    Regrant,
    /// The guard was taken apart for the wait (std's `wait(guard)` takes it by value): when
    /// the wait unwinds, std drops its guard, unlocking, so the hold is released.
    Release,
}

/// The books of a guard across a condvar wait: released before the condvar unlocks the
/// mutex, recorded again (at the wait's site) once it has re-locked, and on unwinding as
/// [`OnUnwind`] says. The waits inside the re-lock are not recorded as waits.
pub(crate) struct Books<'g> {
    prim: &'g Prim,
    token: &'g mut Token,
    site: &'static Location<'static>,
    held: bool,
    on_unwind: OnUnwind,
}

impl<'g> Books<'g> {
    /// The books of `token`, a hold of `prim` (held now), for a wait at `site`.
    pub(crate) fn new(
        prim: &'g Prim,
        token: &'g mut Token,
        site: &'static Location<'static>,
        on_unwind: OnUnwind,
    ) -> Self {
        Books {
            prim,
            token,
            site,
            held: true,
            on_unwind,
        }
    }

    /// About to wait: the condvar unlocks the mutex next.
    #[inline]
    pub(crate) fn release(&mut self) {
        if self.held {
            self.token.release(self.prim);
            self.held = false;
        }
    }

    /// The mutex is locked again.
    #[inline]
    pub(crate) fn regrant(&mut self) {
        if !self.held {
            *self.token = probe::granted(self.prim, acq(self.site, Mode::Exclusive));
            self.held = true;
        }
    }

    /// Runs a wait's `condition` on `t` with the mutex held in the books too; when it asks to
    /// wait again, releases them before the condvar unlocks.
    #[inline]
    pub(crate) fn condition<T: ?Sized>(
        &mut self,
        condition: &mut impl FnMut(&mut T) -> bool,
        t: &mut T,
    ) -> bool {
        self.regrant();
        let wait = condition(t);
        if wait {
            self.release();
        }
        wait
    }

    /// The wait returned with the mutex locked: the hold is in the token again.
    #[inline]
    pub(crate) fn finish(mut self) {
        self.regrant();
        // Held now; `drop` below leaves the hold to the rebuilt guard.
        self.on_unwind = OnUnwind::Regrant;
    }
}

impl Drop for Books<'_> {
    fn drop(&mut self) {
        match self.on_unwind {
            OnUnwind::Regrant => self.regrant(),
            // Only an unwind gets here without `finish`: the guard is gone, the mutex free.
            OnUnwind::Release => self.release(),
        }
    }
}
