//! The owned forms' acquisition (`lock_owned`, `read_owned`, `write_owned`, `acquire_owned`,
//! `acquire_many_owned`) as one hand-written future, [`Owned`]: the `Arc` it was called on,
//! the acquisition, the probe's [`State`] and tokio's acquire future, nothing else.
//!
//! Why not an `async` block around `probe::acquire!`, as the borrowed forms: that block keeps
//! the `Arc`, the call site and the count, then the probe's future keeps the primitive and the
//! acquisition again beside tokio's future, and tokio's `acquire_many` its own count and
//! semaphore. An owned acquisition was 176 bytes against raw tokio's 88, and a task spawned
//! around it crossed a step of tokio's task-cell size (the backpressure task of issue 16 fits
//! raw's cell up to 152 bytes, not from 160): a million such tasks took 559 MB instead of raw
//! tokio's 437 MB, with the detector off. Kept once, with tokio's one-permit `acquire` where
//! one permit is asked for, it is 136 bytes, and that task stays in raw tokio's cell size.
//!
//! The one unsafe part: tokio's future borrows the semaphore inside the `Arc` that the same
//! future owns. It is made from a `'static` reference to it, and dropped before the `Arc` can
//! go: at the grant (before the `Arc` is handed on) and in `Drop` (before the fields).

use std::future::Future;
use std::marker::PhantomPinned;
use std::mem::MaybeUninit;
use std::pin::Pin;
use std::task::{Context, Poll};

use lockscope_detector::__private::hooks::Acq;
use tokio::sync::{AcquireError, Semaphore, SemaphorePermit};

use super::guard::SemOwner;
use crate::probe::{self, State, Token, forget};
use crate::stress;

/// An owned form's acquisition of `acq` from `owner` (an `Arc` of the wrapper): the fast path
/// (the permits taken without queueing, and tokio's future never made), else `queue`'s future
/// (tokio's acquire of the count, on the semaphore inside `owner`) under the probe's
/// [`State`]. Gives the owner back with the count and the token; `make` turns them into the
/// guard or permit.
pub(crate) struct Owned<O: SemOwner, Q, F, M> {
    /// Tokio's acquire future: made (and live) while the state is `Off`, `Waiting` or
    /// `Traced`, dropped when it gives its result.
    inner: MaybeUninit<F>,
    state: State,
    acq: Acq,
    /// `Some` until the grant hands it on.
    owner: Option<O>,
    queue: Q,
    make: M,
    _pinned: PhantomPinned,
}

impl<O, Q, F, M> Owned<O, Q, F, M>
where
    O: SemOwner,
    Q: Fn(&'static Semaphore, u32) -> F,
    F: Future<Output = Result<SemaphorePermit<'static>, AcquireError>>,
{
    /// The acquisition `acq` from `owner`; `queue` makes tokio's future, `make` the result.
    #[inline]
    pub(crate) fn new(owner: O, acq: Acq, queue: Q, make: M) -> Self {
        Owned {
            inner: MaybeUninit::uninit(),
            state: State::Start { timed: false },
            acq,
            owner: Some(owner),
            queue,
            make,
            _pinned: PhantomPinned,
        }
    }
}

impl<O, Q, F, M, R> Future for Owned<O, Q, F, M>
where
    O: SemOwner,
    Q: Fn(&'static Semaphore, u32) -> F,
    F: Future<Output = Result<SemaphorePermit<'static>, AcquireError>>,
    M: Fn(Result<(O, u32, Token), AcquireError>) -> R,
{
    type Output = R;

    #[inline]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<R> {
        // SAFETY: nothing is moved out of the pinned future: `inner` is used in place (pinned
        // below), and `owner` is taken only after `inner` is dropped.
        let this = unsafe { self.get_unchecked_mut() };
        let Some(owner) = this.owner.as_ref() else {
            panic!("`Owned` polled after it gave its result");
        };
        let acq = this.acq;
        if let State::Start { .. } = this.state {
            let n = acq.permits();
            if stress::on() {
                let sem = owner.sem();
                let wants = u64::from(n);
                // Pinned: the address names this acquisition until it starts.
                let key = std::ptr::from_ref(&*this) as usize;
                if stress::poll_pause(key, acq.site(), cx, || {
                    (sem.available_permits() as u64) < wants
                }) {
                    return Poll::Pending;
                }
            }
            if probe::looks_free(owner.sem(), n)
                && let Poll::Ready(true) = probe::poll_fast(cx, owner.sem(), n)
            {
                // The primitive is read after the take (see `probe::acquire!`).
                let token = probe::granted::<lockscope_detector::__private::hooks::Tasks>(
                    || owner.prim(),
                    acq,
                );
                this.state = State::Done;
                return Poll::Ready(this.give(Ok(token)));
            }
            // SAFETY: the semaphore is inside `owner`, which this future keeps until `inner`
            // is dropped (in `give` or `drop`), so the reference outlives every use of it.
            let sem: &'static Semaphore = unsafe { &*std::ptr::from_ref(owner.sem()) };
            this.inner.write((this.queue)(sem, n));
        }
        let polled = if this.state.is_off() {
            // Off: tokio's future alone, and the primitive never looked up (one registered
            // on first use is not registered by it), as in the borrowed forms. Should tokio's
            // poll panic, `drop` takes its future out of the queue (the state stays `Off`).
            // SAFETY: `inner` is made above or at an earlier poll, and pinned with the future.
            let inner = unsafe { Pin::new_unchecked(this.inner.assume_init_mut()) };
            inner.poll(cx).map_ok(|permit| (permit, Token::none()))
        } else {
            let prim = owner.prim();
            // Should tokio's poll panic, the unwinding drops its future here, and the books'
            // wait with it, whatever the state says (a future left in tokio's queue past its
            // memory would be unsound).
            let unwind = Unwind {
                inner: this.inner.as_mut_ptr(),
                state: &raw mut this.state,
                prim,
            };
            // SAFETY: `inner` is made above or at an earlier poll (the state is past `Start`,
            // and not `Done`: `owner` would be gone), and pinned with the future; both
            // pointers are the guard's, used by it only if this unwinds.
            let polled = unsafe {
                (*unwind.state).poll(Pin::new_unchecked(&mut *unwind.inner), cx, prim, acq)
            };
            std::mem::forget(unwind);
            polled
        };
        match polled {
            Poll::Pending => Poll::Pending,
            Poll::Ready(r) => {
                // SAFETY: made and not yet dropped (the state was `Off` or waiting, or tokio's
                // future granted at once); dropped once, here, the state then `Done`.
                unsafe { this.inner.assume_init_drop() };
                this.state = State::Done;
                let r = r.map(|(permit, token)| {
                    forget(permit);
                    token
                });
                Poll::Ready(this.give(r))
            }
        }
    }
}

impl<O: SemOwner, Q, F, M> Owned<O, Q, F, M> {
    /// Whether tokio's future is made and not yet dropped.
    #[inline]
    fn live(&self) -> bool {
        matches!(
            self.state,
            State::Off | State::Waiting(_) | State::Traced(_)
        )
    }

    /// The result, with the owner handed on (once tokio's future is gone).
    #[inline]
    fn give<R>(&mut self, token: Result<Token, AcquireError>) -> R
    where
        M: Fn(Result<(O, u32, Token), AcquireError>) -> R,
    {
        // UNWRAP: checked at the top of `poll`, which calls this once.
        let owner = self.owner.take().expect("owner present until the result");
        let n = self.acq.permits();
        (self.make)(token.map(|t| (owner, n, t)))
    }
}

/// Drops tokio's future and ends the wait if its poll unwinds (see [`Owned::poll`]).
struct Unwind<'p, F> {
    inner: *mut F,
    state: *mut State,
    prim: &'p lockscope_detector::__private::prim::Prim,
}

impl<F> Drop for Unwind<'_, F> {
    fn drop(&mut self) {
        // SAFETY: only reached while unwinding out of `State::poll` (the guard is forgotten
        // otherwise), when `inner` is made and the state no longer borrowed; the state is
        // `Done` after, so neither is touched again.
        unsafe {
            (*self.state).cancel(self.prim);
            *self.state = State::Done;
            std::ptr::drop_in_place(self.inner);
        }
    }
}

impl<O: SemOwner, Q, F, M> Drop for Owned<O, Q, F, M> {
    fn drop(&mut self) {
        if !self.live() {
            return;
        }
        if let Some(owner) = &self.owner
            && !matches!(self.state, State::Off)
        {
            // A wait in progress leaves the books (recorded as `cancelled`), then tokio's
            // future leaves its queue, as the probe's `Acquire` does. Off, there is no wait
            // in the books, and the primitive is not looked up.
            self.state.cancel(owner.prim());
        }
        // SAFETY: live (see above); dropped once, in place, before `owner` (a field, dropped
        // after this).
        unsafe { self.inner.assume_init_drop() };
    }
}
