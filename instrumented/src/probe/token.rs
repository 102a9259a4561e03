//! [`Token`]: what a guard keeps of its acquisition, in one word, and the span it may carry.

use std::ptr::NonNull;

use lockscope_detector::__private::hooks::{
    self, AnyPrim, Class, GuardMarker, GuardSend, Hold, Released,
};
use lockscope_detector::__private::prim::{self, Prim, PrimitiveId};
use tracing::{Level, Span};

/// What a guard or permit keeps of its acquisition, in one word: the detector's hold (its
/// raw word, lowest bit 0), or, when a subscriber records lockscope's spans, a box with the
/// hold and the `acquire` span (pointer | [`SPANNED`]). 0: nothing was recorded.
///
/// One word so that a guard is two (the lock and this) and a `(guard, Token)` pair travels
/// in registers: wider values, written field by field and read back whole when they are
/// moved, stall on store forwarding (docs/performance.md, "Store forwarding").
///
/// Every guard consumes its token with [`Token::release`], [`Token::release_books`] or
/// [`Token::forget`] (the shell's `Drop` does it, see [`crate::shell`]); a token dropped any
/// other way releases its hold itself, on a cold path.
pub(crate) struct Token(*mut ());

// SAFETY: the pointer is either a hold table entry (the detector's `Hold`, which is
// `Send + Sync`: only atomic stores from any thread) or a `Box<Spanned>` owned by this
// token alone, whose contents are `Send + Sync`.
unsafe impl Send for Token {}
// SAFETY: `&Token` offers nothing that reads or writes through the pointer.
unsafe impl Sync for Token {}

/// The token's pointer, tag bit cleared, points to a [`Spanned`] (else to a hold entry). The
/// bit is free in both: entries are 8-aligned (the detector asserts it), and so is `Spanned`.
const SPANNED: usize = 1;
const _: () = assert!(std::mem::align_of::<Spanned>() > SPANNED);
const _: () = assert!(lockscope_detector::__private::held::ENTRY_ALIGN > SPANNED);

/// A hold with its span (the slow path: a subscriber listens at TRACE).
struct Spanned {
    hold: Hold,
    span: SpanPtr,
}

/// A token dropped while it still records a hold releases it: a guard taken apart by a path
/// that forgot its token (or unwound before handing it on) leaves no ghost holder in the books.
/// Every guard releases explicitly (through the shell's `Drop`), so this is a safety net on a
/// cold path: it looks the primitive up by id.
impl Drop for Token {
    #[inline]
    fn drop(&mut self) {
        if !self.0.is_null() {
            self.release_orphan();
        }
    }
}

impl Default for Token {
    fn default() -> Token {
        Token::none()
    }
}

impl Token {
    /// A token that recorded nothing (detector off).
    #[inline]
    pub(crate) const fn none() -> Token {
        Token(std::ptr::null_mut())
    }

    #[inline]
    pub(super) fn new(hold: Hold, span: Option<SpanPtr>) -> Token {
        match span {
            None => Token(hold.into_raw()),
            Some(span) => Token::spanned(hold, span),
        }
    }

    #[cold]
    fn spanned(hold: Hold, span: SpanPtr) -> Token {
        let b = Box::into_raw(Box::new(Spanned { hold, span })).cast::<()>();
        Token(b.map_addr(|a| a | SPANNED))
    }

    /// Whether nothing was recorded (the detector was off).
    #[inline(always)]
    pub(crate) fn is_none(&self) -> bool {
        self.0.is_null()
    }

    /// Takes the hold and span out, leaving a token that recorded nothing.
    #[inline]
    fn take(&mut self) -> (Hold, Option<SpanPtr>) {
        let raw = std::mem::replace(&mut self.0, std::ptr::null_mut());
        if raw.addr() & SPANNED == 0 {
            // SAFETY: a pointer from `Hold::into_raw` (or null), its tag cleared, taken once
            // (the token is now null).
            (unsafe { Hold::from_raw(raw) }, None)
        } else {
            // SAFETY: the box `spanned` leaked, taken once (the token is now null).
            let b = unsafe { Box::from_raw(raw.map_addr(|a| a & !SPANNED).cast::<Spanned>()) };
            (b.hold, Some(b.span))
        }
    }

    /// Runs `f` on the hold in place.
    fn with_hold<R>(&mut self, f: impl FnOnce(&mut Hold) -> R) -> R {
        if self.0.addr() & SPANNED == 0 {
            // SAFETY: as in `take`; the word is put back below, so the hold stays owned once.
            let mut hold = unsafe { Hold::from_raw(self.0) };
            let r = f(&mut hold);
            self.0 = hold.into_raw();
            r
        } else {
            // SAFETY: the live box `spanned` leaked, borrowed mutably through `&mut self`.
            f(&mut unsafe { &mut *self.0.map_addr(|a| a & !SPANNED).cast::<Spanned>() }.hold)
        }
    }

    /// Records the whole release (books and statistics) of a guard that unlocks after it
    /// by a way of its own (`unlock_fair`, a `leak`, a condvar wait). Call before releasing
    /// the inner primitive.
    ///
    /// A token that recorded nothing (detector off) returns at once: the recording half is
    /// out of line, so that a guard's `Drop` with the detector off stays a test and a branch.
    #[inline]
    pub(crate) fn release(&mut self, prim: &Prim) {
        if !self.0.is_null() {
            self.release_recorded(prim);
        }
    }

    #[inline(never)]
    fn release_recorded(&mut self, prim: &Prim) {
        let released = self.release_books::<AnyPrim, GuardSend>(|| prim);
        hooks::release_stats(prim, released);
    }

    /// Releases the hold in the books only (call before the inner unlock); give what it
    /// returns to [`hooks::release_stats`] after the unlock, so that the clock read and the
    /// statistics stay out of the lock's critical section. `C` and `M` are what the guard's
    /// type knows (see [`hooks::release_books`]); `prim` is called only if the primitive is
    /// needed. The token records nothing after it.
    #[inline(always)]
    pub(crate) fn release_books<'p, C: Class, M: GuardMarker>(
        &mut self,
        prim: impl Fn() -> &'p Prim,
    ) -> Released {
        if self.0.addr() & SPANNED != 0 {
            return Released::of::<C>(self.release_spanned::<C, M>(prim()));
        }
        let raw = std::mem::replace(&mut self.0, std::ptr::null_mut());
        // SAFETY: a pointer from `Hold::into_raw` (or null), untagged, taken once (the token
        // is now null).
        hooks::release_books::<C, M>(unsafe { Hold::from_raw(raw) }, prim)
    }

    /// [`Token::release_books`] of a hold with its span: the `released` event first.
    #[cold]
    #[inline(never)]
    fn release_spanned<C: Class, M: GuardMarker>(&mut self, prim: &Prim) -> Released {
        let (hold, span) = self.take();
        if let Some(span) = span {
            emit_released(take_span(span), &hold);
        }
        hooks::release_books::<C, M>(hold, || prim)
    }

    #[cold]
    #[inline(never)]
    fn release_orphan(&mut self) {
        let id = self.with_hold(|h| h.prim_id());
        match id.and_then(|id| prim::get(PrimitiveId(id))) {
            Some(prim) => self.release(&prim),
            // The primitive is gone: there are no books left to release it from.
            None => free(self.take().1),
        }
    }

    /// Rewrites permits and mode (permit `split`/`merge`, `downgrade`).
    pub(crate) fn update(&mut self, prim: &Prim, permits: u32, mode: hooks::Mode) {
        self.with_hold(|h| h.update(prim, permits, mode));
    }

    /// A token for `permits` split off this one.
    pub(crate) fn split(&mut self, prim: &Prim, permits: u32) -> Token {
        let span = if self.0.addr() & SPANNED != 0 {
            // SAFETY: the live box `spanned` leaked; only read here.
            let s = unsafe { &*self.0.map_addr(|a| a & !SPANNED).cast::<Spanned>() };
            Some(box_span(s.span.as_ref().clone()))
        } else {
            None
        };
        let hold = self.with_hold(|h| h.split(prim, permits));
        Token::new(hold, span)
    }

    /// The permits were forgotten: they leave the books as held, counted as forgotten.
    pub(crate) fn forget(&mut self, prim: &Prim, permits: u64) {
        let (hold, span) = self.take();
        if let Some(span) = span {
            emit_released(take_span(span), &hold);
        }
        hooks::forgot(prim, hold, permits);
    }
}

/// An owned `Box<Span>` as a raw pointer: no drop glue, freed by [`take_span`] or [`free`].
#[derive(Clone, Copy)]
pub(crate) struct SpanPtr(NonNull<Span>);

// SAFETY: it owns a `Span`, which is Send + Sync.
unsafe impl Send for SpanPtr {}
// SAFETY: as above.
unsafe impl Sync for SpanPtr {}

impl SpanPtr {
    pub(super) fn as_ref(&self) -> &Span {
        // SAFETY: a live box until `take_span` consumes it.
        unsafe { self.0.as_ref() }
    }
}

pub(super) fn box_span(span: Span) -> SpanPtr {
    SpanPtr(NonNull::from(Box::leak(Box::new(span))))
}

/// Drops a span that no token took.
pub(super) fn free(span: Option<SpanPtr>) {
    if let Some(s) = span {
        drop(take_span(s));
    }
}

pub(super) fn take_span(span: SpanPtr) -> Box<Span> {
    // SAFETY: every span pointer comes from `box_span` and is taken exactly once.
    unsafe { Box::from_raw(span.0.as_ptr()) }
}

#[cold]
pub(super) fn emit_released(span: Box<Span>, hold: &Hold) {
    tracing::event!(
        name: "released",
        target: "lockscope",
        parent: &*span,
        Level::TRACE,
        hold_ms = hold.held_ms(),
        "released"
    );
}
