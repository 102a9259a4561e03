//! The one acquisition state machine. Wrappers only translate: they say which primitive,
//! which [`Acq`] (site, permits, mode, flags) and which inner tokio/parking_lot call; the probe
//! emits the `acquire` span and its events, measures waits and holds, and feeds the detector.
//!
//! | state | event | next | detector call |
//! |---|---|---|---|
//! | start | first poll, granted | held | [`hooks::acquired`] |
//! | start | first poll, pending | waiting | [`hooks::wait_begin`] |
//! | waiting | granted | held | [`hooks::acquired_after_wait_ns`] |
//! | waiting | future dropped | cancelled | [`hooks::wait_cancelled`] |
//! | waiting | deadline passed | timed out | [`hooks::wait_timed_out`] |
//! | waiting | semaphore closed | failed | [`hooks::wait_failed`] |
//! | held | guard dropped | released | the [`Token`]'s release: [`hooks::release_books`], then [`hooks::release_stats`] after the inner unlock |
//!
//! Ordering rule, for every wrapper: `acquired` is recorded after the inner primitive granted
//! the acquisition, and `released` before the inner primitive is released, so the detector
//! never sees two holders of one mutex.
//!
//! With the detector off ([`hooks::enabled`] false) every function here is one relaxed load
//! and a branch in front of the inner call. Spans and events are built only when a
//! subscriber wants target `lockscope` at TRACE.

use std::future::Future;
use std::panic::Location;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use lockscope_detector::__private::hooks::{self, Acq, Takers, Tasks, Waiting};
use lockscope_detector::__private::prim::Prim;
use lockscope_detector::names;
use pin_project_lite::pin_project;
use tracing::Level;

mod timed;
mod token;

pub(crate) use timed::{Timed, TimedError, holders_of};

pub(crate) use token::{SpanPtr, Token};
use token::{box_span, free};

/// The `acquire` span, or `None` after one level check when nobody listens at TRACE.
#[inline]
fn span(prim: &Prim, acq: &Acq) -> Option<SpanPtr> {
    if tracing::level_enabled!(Level::TRACE) {
        make_span(prim, acq)
    } else {
        None
    }
}

#[cold]
fn make_span(prim: &Prim, acq: &Acq) -> Option<SpanPtr> {
    let span = tracing::trace_span!(
        target: "lockscope",
        names::SPAN_ACQUIRE,
        lock = prim.name(),
        kind = prim.kind().as_str(),
        permits = acq.permits(),
        site = %SiteField(acq.site()),
    );
    if span.is_none() {
        return None;
    }
    tracing::event!(name: "acquiring", target: "lockscope", parent: &span, Level::TRACE, "acquiring");
    Some(box_span(span))
}

struct SiteField(&'static Location<'static>);

impl std::fmt::Display for SiteField {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}:{}", self.0.file(), self.0.line(), self.0.column())
    }
}

#[cold]
fn emit_acquired(span: &Option<SpanPtr>, wait_ms: f64) {
    let Some(span) = span else { return };
    let span = span.as_ref();
    tracing::event!(name: "acquired", target: "lockscope", parent: span, Level::TRACE, wait_ms, "acquired");
}

#[cold]
fn emit(span: &Option<SpanPtr>, what: &'static str, waited_ms: f64) {
    let Some(span) = span else { return };
    let span = span.as_ref();
    match what {
        "cancelled" => {
            tracing::event!(name: "cancelled", target: "lockscope", parent: span, Level::TRACE, wait_ms = waited_ms, "cancelled")
        }
        "timed_out" => {
            tracing::event!(name: "timed_out", target: "lockscope", parent: span, Level::TRACE, wait_ms = waited_ms, "timed_out")
        }
        _ => {
            tracing::event!(name: "gave_up", target: "lockscope", parent: span, Level::TRACE, "gave_up")
        }
    }
}

/// Whether `n` permits of `sem` look free: one load of the word that tokio's try and its
/// acquire future's poll each read first too (so the line moves no more than it did). An
/// async acquisition tries [`poll_fast`] only then: a contended one, whose permits are queued
/// for, pays neither the budget nor the try on top of tokio's future.
#[inline(always)]
pub(crate) fn looks_free(sem: &tokio::sync::Semaphore, n: u32) -> bool {
    sem.available_permits() >= n as usize
}

/// The first poll of an async acquisition of `n` permits of `sem` (which [`looks_free`]):
/// spend one unit of the task's cooperative budget, then take them if they are free, without
/// queueing. `Ready(false)`: they were not free (the budget unit is given back), or the budget
/// is spent; either way the caller goes on to tokio's own acquire future in the same poll,
/// which queues the waiter (or takes the permits) and yields exactly as raw tokio does, so
/// FIFO order holds for a task out of budget. Skipping the construction of that future is
/// what keeps the uncontended path as cheap as tokio's.
#[inline(always)]
pub(crate) fn poll_fast(cx: &mut Context<'_>, sem: &tokio::sync::Semaphore, n: u32) -> Poll<bool> {
    let Poll::Ready(coop) = tokio::task::coop::poll_proceed(cx) else {
        return Poll::Ready(false);
    };
    if sem.try_acquire_many(n).map(forget).is_ok() {
        coop.made_progress();
        Poll::Ready(true)
    } else {
        Poll::Ready(false)
    }
}

/// A permit of a raw tokio semaphore, kept by the wrapper's guard or permit (its count)
/// instead. Not tokio's `forget`, which zeroes the count and still runs the permit's drop (a
/// call that gives back nothing): a permit owns nothing but its count, so not dropping it is
/// the same.
#[inline]
pub(crate) fn forget(permit: tokio::sync::SemaphorePermit<'_>) {
    std::mem::forget(permit);
}

/// An async acquisition, written inside the wrapper's own `async` block (a macro rather than
/// an `async fn`, so that no second state machine wraps the first): the fast path of
/// [`poll_fast`] for `$n` permits of `$sem` if they [`looks_free`], else `$queue` (tokio's
/// acquire future, its permit forgotten with [`forget`]) under [`Acquire`], in
/// the same state machine: no box on the contended path. With the detector off, the fast
/// path or `$queue` alone: `$prim` is never evaluated (a primitive registered on first use is
/// not registered by it). Evaluates to `Result<Token, E>`.
///
/// `$acq` (a cheap constructor expression) is evaluated where it is used rather than kept in
/// the future, and the fast path's `poll_fn` returns a bool, the token being made after it in
/// the caller's body: a multi-word value written field by field into a future or a `Poll`
/// and read back whole stalls on store forwarding (docs/performance.md, "Store forwarding").
macro_rules! acquire {
    ($prim:expr, $acq:expr, $sem:expr, $n:expr, $queue:expr) => {{
        // `$prim` is read after the take: the wrapper's pointer to its primitive may share a
        // cache line with the semaphore's state, which every worker writes; read first, the
        // line came in shared and the take's compare-and-swap took it a second time.
        if $crate::probe::looks_free($sem, $n)
            && ::std::future::poll_fn(|cx| $crate::probe::poll_fast(cx, $sem, $n)).await
        {
            Ok($crate::probe::granted::<
                ::lockscope_detector::__private::hooks::Tasks,
            >(|| $prim, $acq))
        } else if !::lockscope_detector::__private::hooks::enabled() {
            // Off: tokio's future alone, as raw tokio queues.
            $queue.await.map(|permit| {
                $crate::probe::forget(permit);
                $crate::probe::Token::none()
            })
        } else {
            $crate::probe::Acquire::new($prim, $acq, $queue)
                .await
                .map(|(permit, token)| {
                    $crate::probe::forget(permit);
                    token
                })
        }
    }};
}
pub(crate) use acquire;

/// Records an acquisition granted without waiting (also: a lock re-taken after a condvar
/// wait). `prim` is called only when the detector is on: off, a primitive registered on first
/// use is not looked up (nor registered).
#[inline(always)]
pub(crate) fn granted<'p, T: Takers>(prim: impl FnOnce() -> &'p Prim, acq: Acq) -> Token {
    if !hooks::enabled() {
        return Token::none();
    }
    grant::<T>(prim(), acq)
}

/// [`granted`] once the detector is known to be on: the hold ([`hooks::acquired`], whose
/// common case, for the takers `T` says, is inline), and, when a subscriber listens at
/// TRACE, the span and the `acquired` event, out of line.
#[inline(always)]
pub(crate) fn grant<T: Takers>(prim: &Prim, acq: Acq) -> Token {
    if tracing::level_enabled!(Level::TRACE) {
        return grant_traced::<T>(prim, acq);
    }
    Token::new(hooks::acquired::<T>(prim, acq), None)
}

#[cold]
#[inline(never)]
fn grant_traced<T: Takers>(prim: &Prim, acq: Acq) -> Token {
    let span = span(prim, &acq);
    token(span, hooks::acquired::<T>(prim, acq), 0)
}

/// The token of a hold granted after waiting `waited_ns` (0: no wait), with the `acquired`
/// event when a span is listened to.
#[inline(always)]
fn token(span: Option<SpanPtr>, hold: hooks::Hold, waited_ns: u64) -> Token {
    if span.is_some() {
        emit_acquired(&span, waited_ns as f64 / 1e6);
    }
    Token::new(hold, span)
}

/// A wait that ended without the primitive: the event `what` when a span is listened to,
/// then `hook` (the detector's record of how it ended).
#[inline(always)]
fn ended_without(
    prim: &Prim,
    w: Waiting,
    span: Option<SpanPtr>,
    what: &'static str,
    hook: fn(&Prim, Waiting),
) {
    if span.is_some() {
        emit(&span, what, hooks::waited_ms(&w));
    }
    free(span);
    hook(prim, w);
}

/// A `try_` form succeeded (`prim` as in [`granted`]).
#[inline]
pub(crate) fn try_acquired<'p, T: Takers>(prim: impl FnOnce() -> &'p Prim, acq: Acq) -> Token {
    granted::<T>(prim, acq.with_flags(hooks::TRY))
}

/// A `try_` form gave up (`prim` as in [`granted`]).
#[cold]
pub(crate) fn try_failed<'p>(prim: impl FnOnce() -> &'p Prim, acq: Acq) {
    if !hooks::enabled() {
        return;
    }
    let prim = prim();
    let span = span(prim, &acq);
    emit(&span, "gave_up", 0.0);
    free(span);
    hooks::try_failed(prim);
}

/// `fast` (a `try_lock`), retried a few times with exponential backoff (254 spin hints, about
/// as long as parking_lot itself spins and yields before it parks), so that a lock held for a
/// few instructions by another thread is taken without the books of a wait: registering a
/// waiter costs more than such a wait lasts, and would turn parking_lot's cheap spinning into
/// parking. (Why seven rounds and not five: docs/performance.md, "Spinning before a wait".)
#[inline]
fn spin<P>(fast: &mut impl FnMut() -> Option<P>) -> Option<P> {
    if let Some(p) = fast() {
        return Some(p);
    }
    spin_more(fast)
}

#[inline(never)]
fn spin_more<P>(fast: &mut impl FnMut() -> Option<P>) -> Option<P> {
    for round in 1..=7 {
        for _ in 0..(1u32 << round) {
            std::hint::spin_loop();
        }
        if let Some(p) = fast() {
            return Some(p);
        }
    }
    None
}

/// Records a blocking acquisition around `block`, which must not return before the grant.
/// `fast` tries first without waiting; `None` from it means "must wait".
#[inline]
pub(crate) fn blocking<P, E>(
    prim: &Prim,
    acq: Acq,
    fast: impl FnMut() -> Option<P>,
    block: impl FnOnce() -> Result<P, E>,
) -> Result<(P, Token), E> {
    blocking_with(prim, acq, false, fast, block, |prim, w, span| {
        free(span);
        hooks::wait_failed(prim, w);
    })
}

/// Records a timed blocking acquisition (parking_lot's `try_*_for`/`try_*_until`) around
/// `block`, which returns `None` when its deadline passed.
pub(crate) fn blocking_timed<P>(
    prim: &Prim,
    acq: Acq,
    fast: impl FnMut() -> Option<P>,
    block: impl FnOnce() -> Option<P>,
) -> Option<(P, Token)> {
    let timed_out = |prim: &Prim, w: Waiting, span: Option<SpanPtr>| {
        ended_without(prim, w, span, "timed_out", hooks::wait_timed_out);
    };
    blocking_with(prim, acq, true, fast, || block().ok_or(()), timed_out).ok()
}

/// The body of [`blocking`] and [`blocking_timed`]: `missed` records a wait that ended
/// without the lock (`block` returned `Err`).
#[inline]
fn blocking_with<P, E>(
    prim: &Prim,
    acq: Acq,
    timed: bool,
    mut fast: impl FnMut() -> Option<P>,
    block: impl FnOnce() -> Result<P, E>,
    missed: impl FnOnce(&Prim, Waiting, Option<SpanPtr>),
) -> Result<(P, Token), E> {
    if !hooks::enabled() {
        return block().map(|p| (p, Token::none()));
    }
    let span = span(prim, &acq);
    // Read before taking the lock, so the clock stays out of a blocking critical section.
    let since = hooks::now();
    if let Some(p) = spin(&mut fast) {
        return Ok((p, token(span, hooks::acquired_at(prim, acq, since), 0)));
    }
    struct Unwind<'p> {
        prim: &'p Prim,
        waiting: Option<Waiting>,
    }
    impl Drop for Unwind<'_> {
        fn drop(&mut self) {
            if let Some(w) = self.waiting.take() {
                hooks::wait_failed(self.prim, w);
            }
        }
    }
    let mut guard = Unwind {
        prim,
        waiting: Some(wait_begin(prim, acq, timed, &span)),
    };
    let r = block();
    // UNWRAP: `waiting` is Some until here; `Unwind` only takes it on unwinding.
    let w = guard.waiting.take().expect("waiting token present");
    match r {
        Ok(p) => {
            let (hold, waited) = hooks::acquired_after_wait_ns(prim, acq, w);
            Ok((p, token(span, hold, waited)))
        }
        Err(e) => {
            missed(prim, w, span);
            Err(e)
        }
    }
}

/// [`hooks::wait_begin`], timed precisely when a span shows the wait's length.
#[inline]
fn wait_begin(prim: &Prim, acq: Acq, timed: bool, span: &Option<SpanPtr>) -> Waiting {
    if span.is_some() {
        hooks::wait_begin_timed_precisely(prim, acq, timed)
    } else {
        hooks::wait_begin(prim, acq, timed)
    }
}

/// Where an acquisition stands. Three words: the span of a traced wait is boxed with it
/// ([`State::Traced`]), so that an untraced one, the common case, keeps every waiting task's
/// future a word smaller.
pub(crate) enum State {
    /// Not polled yet; `timed`: a timed form's (its deadline may end the wait).
    Start {
        timed: bool,
    },
    /// The detector was off at the first poll: the inner future runs alone.
    Off,
    Waiting(Waiting),
    /// A wait whose `acquire` span a subscriber listens to.
    Traced(Box<(Waiting, SpanPtr)>),
    Done,
}

impl State {
    /// A wait that began now, with its span if one is listened to.
    #[inline]
    fn waiting(w: Waiting, span: Option<SpanPtr>) -> State {
        match span {
            None => State::Waiting(w),
            Some(span) => State::Traced(Box::new((w, span))),
        }
    }

    /// The wait in progress and its span (`None` when not waiting); the state is `Done` after.
    #[inline]
    fn take_wait(&mut self) -> Option<(Waiting, Option<SpanPtr>)> {
        match std::mem::replace(self, State::Done) {
            State::Waiting(w) => Some((w, None)),
            State::Traced(b) => {
                let (w, span) = *b;
                Some((w, Some(span)))
            }
            other => {
                *self = other;
                None
            }
        }
    }

    /// One poll of `inner`, the acquisition `acq` of `prim` in this state: the probe's state
    /// machine (see the module docs), shared by [`Acquire`] and the owned forms' future
    /// (`tokio::owned::Owned`), which passes `prim` and `acq` in rather than keep them.
    #[inline]
    pub(crate) fn poll<P, E, F: Future<Output = Result<P, E>>>(
        &mut self,
        inner: Pin<&mut F>,
        cx: &mut Context<'_>,
        prim: &Prim,
        acq: Acq,
    ) -> Poll<Result<(P, Token), E>> {
        if self.is_off() {
            return inner.poll(cx).map_ok(|p| (p, Token::none()));
        }
        match inner.poll(cx) {
            Poll::Ready(Ok(p)) => Poll::Ready(Ok((p, self.granted(prim, acq)))),
            Poll::Ready(Err(e)) => {
                self.failed(prim);
                Poll::Ready(Err(e))
            }
            Poll::Pending => {
                self.pending(prim, acq);
                Poll::Pending
            }
        }
    }

    /// A fresh state, for a wait driven step by step ([`State::granted`], [`State::pending`],
    /// [`State::failed`], [`State::cancel`]) rather than by [`State::poll`].
    #[inline]
    pub(crate) fn start() -> State {
        State::Start { timed: false }
    }

    /// Whether nothing is recorded: the detector was off when the acquisition began (checked
    /// once, at its first step).
    #[inline]
    pub(crate) fn is_off(&mut self) -> bool {
        if let State::Start { .. } = self
            && !hooks::enabled()
        {
            *self = State::Off;
        }
        matches!(self, State::Off)
    }

    /// The primitive was granted: ends a wait in progress and records the hold. The caller
    /// checked [`State::is_off`].
    #[inline]
    pub(crate) fn granted(&mut self, prim: &Prim, acq: Acq) -> Token {
        match self.take_wait() {
            Some((w, span)) => {
                let (hold, waited) = hooks::acquired_after_wait_ns(prim, acq, w);
                token(span, hold, waited)
            }
            None => {
                *self = State::Done;
                grant::<Tasks>(prim, acq)
            }
        }
    }

    /// The acquisition ended without a grant (a closed semaphore): a wait in progress ends.
    #[inline]
    pub(crate) fn failed(&mut self, prim: &Prim) {
        if let Some((w, span)) = self.take_wait() {
            free(span);
            hooks::wait_failed(prim, w);
        }
        *self = State::Done;
    }

    /// The acquisition must wait: the wait begins, unless it already has. The caller checked
    /// [`State::is_off`].
    #[inline]
    pub(crate) fn pending(&mut self, prim: &Prim, acq: Acq) {
        if let State::Start { timed } = *self {
            let span = span(prim, &acq);
            let w = wait_begin(prim, acq, timed, &span);
            *self = State::waiting(w, span);
        }
    }

    /// A timed acquisition driven step by step gave up at its deadline: a wait in progress
    /// is recorded as timed out (else, unless the detector was off, a timeout without a wait).
    #[cold]
    pub(crate) fn timed_out(&mut self, prim: &Prim) {
        match self.take_wait() {
            Some((w, span)) => ended_without(prim, w, span, "timed_out", hooks::wait_timed_out),
            None => {
                if !matches!(std::mem::replace(self, State::Done), State::Off) {
                    hooks::timed_out_at_once(prim);
                }
            }
        }
    }

    /// The future is dropped: a wait in progress is recorded as `cancelled`.
    #[inline]
    pub(crate) fn cancel(&mut self, prim: &Prim) {
        if let Some((w, span)) = self.take_wait() {
            ended_without(prim, w, span, "cancelled", hooks::wait_cancelled);
        }
    }
}

pin_project! {
    /// Wraps an inner acquire future; see the module docs for its states.
    pub(crate) struct Acquire<'p, F> {
        #[pin]
        inner: F,
        prim: &'p Prim,
        acq: Acq,
        state: State,
    }

    impl<'p, F> PinnedDrop for Acquire<'p, F> {
        fn drop(this: Pin<&mut Self>) {
            let this = this.project();
            this.state.cancel(this.prim);
        }
    }
}

impl<'p, F> Acquire<'p, F> {
    /// Instruments `inner`, an acquisition of `prim` described by `acq`.
    #[inline]
    pub(crate) fn new(prim: &'p Prim, acq: Acq, inner: F) -> Self {
        Acquire {
            inner,
            prim,
            acq,
            state: State::Start { timed: false },
        }
    }

    fn timed(mut self) -> Self {
        self.state = State::Start { timed: true };
        self
    }

    /// The deadline passed: records the timeout; returns how long it waited.
    fn time_out(self: Pin<&mut Self>) -> Duration {
        let this = self.project();
        let waited = match this.state {
            State::Waiting(w) => hooks::waited_ms(w),
            State::Traced(b) => hooks::waited_ms(&b.0),
            _ => 0.0,
        };
        this.state.timed_out(this.prim);
        Duration::from_secs_f64(waited / 1e3)
    }
}

impl<P, E, F: Future<Output = Result<P, E>>> Future for Acquire<'_, F> {
    type Output = Result<(P, Token), E>;

    #[inline]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        this.state.poll(this.inner, cx, this.prim, *this.acq)
    }
}
