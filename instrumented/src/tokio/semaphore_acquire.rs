//! The acquisition forms of [`Semaphore`], borrowed and owned, written once
//! ([`permit_forms!`] over generic bodies: `acquire`, `acquire_many`, their timed,
//! `try_` and blocking forms).

use std::future::Future;
use std::panic::Location;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use lockscope_detector::__private::hooks::{self, Acq, Mode};
use pin_project_lite::pin_project;

use super::acquire::{Count, block, owned, queue, timed, try_take};
use super::guard::{One, SemOwner};
use super::semaphore_permit::{OwnedSemaphorePermit, SemaphorePermit};
use super::{AcquireError, Semaphore, TimeoutError, TryAcquireError, assert_blocking_allowed};
use crate::probe::{self, Token};

/// A borrowed permit's acquisition.
#[inline]
fn acq(site: &'static Location<'static>, n: u32) -> Acq {
    Acq::new(site, n, Mode::Permits)
}

/// An owned permit's acquisition: it may move to another task.
#[inline]
fn owned_acq(site: &'static Location<'static>, n: u32) -> Acq {
    acq(site, n).with_flags(hooks::MOVABLE)
}

/// Where an acquisition is made. The generic bodies below also take how to describe it
/// (`acq`) and how to make the permit from `this` (the semaphore, or its `Arc`), the count and
/// the token.
type Site = &'static Location<'static>;

impl Semaphore {
    /// `n` permits of the semaphore in `this`, async (the owned forms): [`owned`]'s future.
    #[inline]
    fn owned_n<C: Count, P>(
        this: Arc<Self>,
        site: Site,
        n: C,
        acq: impl Fn(Site, u32) -> Acq,
        permit: impl Fn(Arc<Self>, u32, Token) -> P,
    ) -> impl Future<Output = Result<P, AcquireError>> {
        owned(this, acq(site, n.get()), n, move |r| {
            r.map(|(this, n, token)| permit(this, n, token))
        })
    }

    /// `count` permits of a borrowed semaphore, async: the fast path of `probe::acquire!`,
    /// else tokio's queue, in an `async` block that gives only the token; the permit is made
    /// from it in [`Made`]'s poll, which inlines into the caller's.
    #[inline]
    fn acquire_borrowed<'a, C: Count + 'a, P>(
        &'a self,
        site: Site,
        count: C,
        acq: impl Fn(Site, u32) -> Acq + 'a,
        permit: impl Fn(&'a Self, u32, Token) -> P + 'a,
    ) -> impl Future<Output = Result<P, AcquireError>> + 'a {
        let n = count.get();
        let tokens = async move {
            if crate::stress::on() {
                let wants = u64::from(n);
                crate::stress::pause(site, || (self.ll.available_permits() as u64) < wants).await;
            }
            probe::acquire!(
                self.prim(),
                acq(site, n),
                &self.ll,
                n,
                queue(&self.ll, count)
            )
        };
        Made {
            tokens,
            owner: self,
            n,
            make: permit,
        }
    }

    /// `n` permits or a timeout, the deadline set now (the borrowed forms).
    #[track_caller]
    fn timed_now<'a, P>(
        &'a self,
        site: Site,
        n: u32,
        timeout: Duration,
        permit: impl FnOnce(&'a Self, u32, Token) -> P + 'a,
    ) -> impl Future<Output = Result<P, TimeoutError>> + 'a {
        let timed = timed(&self.ll, self.prim(), acq(site, n), n, timeout);
        async move { Ok(permit(self, n, timed.await?)) }
    }

    /// `n` permits or a timeout, the deadline set at the first poll (the owned forms).
    async fn timed_later<P>(
        this: Arc<Self>,
        site: Site,
        n: u32,
        timeout: Duration,
        permit: impl FnOnce(Arc<Self>, u32, Token) -> P,
    ) -> Result<P, TimeoutError> {
        let token = timed(&this.ll, this.prim(), owned_acq(site, n), n, timeout).await?;
        Ok(permit(this, n, token))
    }

    /// `n` permits now: if they are free (`take` is `try_take`), or after blocking this
    /// thread (`block`, once the caller has checked that it may).
    fn now_n<O: SemOwner, P, E>(
        this: O,
        site: Site,
        n: u32,
        acq: impl Fn(Site, u32) -> Acq,
        permit: impl FnOnce(O, u32, Token) -> P,
        take: impl FnOnce(&O, Acq, u32) -> Result<Token, E>,
    ) -> Result<P, E> {
        let token = take(&this, acq(site, n), n)?;
        Ok(permit(this, n, token))
    }
}

pin_project! {
    /// A permit made from the token `tokens` gives, with `make`, from the owner and the count
    /// (`Copy`: they are also in `tokens`).
    ///
    /// A permit is three words (the token, the count, the semaphore): an `async` block that
    /// returned it wrote it to memory field by field, and the caller read it back whole, which
    /// stalled on store forwarding (most of an uncontended acquisition's overhead). A token
    /// and its `Result` are two words and come back in registers; this poll, small, inlines
    /// into the caller's, where the permit is made.
    struct Made<F, O, M> {
        #[pin]
        tokens: F,
        owner: O,
        n: u32,
        make: M,
    }
}

impl<F, O, M, P> Future for Made<F, O, M>
where
    F: Future<Output = Result<Token, AcquireError>>,
    O: Copy,
    M: Fn(O, u32, Token) -> P,
{
    type Output = Result<P, AcquireError>;

    #[inline(always)]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        match this.tokens.poll(cx) {
            Poll::Ready(Ok(token)) => Poll::Ready(Ok((this.make)(*this.owner, *this.n, token))),
            Poll::Ready(Err(e)) => Poll::Ready(Err(e)),
            Poll::Pending => Poll::Pending,
        }
    }
}

/// The eight acquisition methods of one permit type: `acquire`, `acquire_many`, their timed
/// forms, `try_` forms and blocking forms, each after its docs, in that order (`fn acquire =
/// one;`, `fn acquire_many = many;`, ...). `($($recv)*) $this` is the receiver (`&self` or `self: Arc<Self>`),
/// `[$($bound)*]` the futures' lifetime bound, `$p` the permit type and `$permit` its
/// constructor, `$acq` the acquisition's description, `$acquire_n` the async body
/// ([`Semaphore::acquire_borrowed`] or [`Semaphore::owned_n`]) and `$timed` the timed body
/// (of the call site, the count and the timeout).
macro_rules! permit_forms {
    (
        ($($recv:tt)*) $this:ident [$($bound:tt)*] -> $p:ty, $permit:expr, $acq:expr,
        $acquire_n:ident, |$site:ident, $n:ident, $t:ident| $timed:expr;
        $(#[$d1:meta])* fn $acquire:ident = one;
        $(#[$d2:meta])* fn $many:ident = many;
        $(#[$d3:meta])* fn $timeout:ident = timed;
        $(#[$d4:meta])* fn $many_timeout:ident = timed_many;
        $(#[$d5:meta])* fn $try_one:ident = try;
        $(#[$d6:meta])* fn $try_many:ident = try_many;
        $(#[$d7:meta])* fn $blocking:ident = blocking;
        $(#[$d8:meta])* fn $blocking_many:ident = blocking_many;
    ) => {
        permit_forms!(@pair [One] ($($recv)*) $n, $acquire { $(#[$d1])* } $many { $(#[$d2])* } ()
            [impl Future<Output = Result<$p, AcquireError>> $($bound)*]
            Self::$acquire_n($this, Location::caller(), $n, $acq, $permit));
        permit_forms!(@pair [1] ($($recv)*) $n, $timeout { $(#[$d3])* } $many_timeout { $(#[$d4])* }
            ($t: Duration) [impl Future<Output = Result<$p, TimeoutError>> $($bound)*]
            { let $site = Location::caller(); $timed });
        permit_forms!(@pair [1] ($($recv)*) $n, $try_one { $(#[$d5])* } $try_many { $(#[$d6])* } ()
            [Result<$p, TryAcquireError>]
            Self::now_n($this, Location::caller(), $n, $acq, $permit, |o, acq, n| {
                try_take(o.sem(), || SemOwner::prim(o), acq, n)
            }));
        permit_forms!(@pair [1] ($($recv)*) $n, $blocking { $(#[$d7])* } $blocking_many { $(#[$d8])* }
            () [Result<$p, AcquireError>]
            {
                assert_blocking_allowed();
                Self::now_n($this, Location::caller(), $n, $acq, $permit, |o, acq, n| {
                    block(o.sem(), SemOwner::prim(o), acq, n)
                })
            });
    };
    // One method for a permit and one for `n` (its `_many` form), over one body of `$n`:
    // `$one_n` in the first (`One` for the async forms: see `Count`), a `u32` in the second.
    (
        @pair [$one_n:expr] ($($recv:tt)*) $n:ident,
        $one:ident { $(#[$d_one:meta])* } $many:ident { $(#[$d_many:meta])* }
        ($($arg:ident: $arg_ty:ty)?) [$($ret:tt)*] $body:expr
    ) => {
        $(#[$d_one])*
        #[inline]
        #[track_caller]
        pub fn $one($($recv)*, $($arg: $arg_ty)?) -> $($ret)* {
            let $n = $one_n;
            $body
        }

        $(#[$d_many])*
        #[inline]
        #[track_caller]
        pub fn $many($($recv)*, $n: u32, $($arg: $arg_ty)?) -> $($ret)* {
            $body
        }
    };
}

impl Semaphore {
    permit_forms! {
        (&self) self [+ '_] -> SemaphorePermit<'_>, SemaphorePermit::new, acq, acquire_borrowed,
        |site, n, timeout| self.timed_now(site, n, timeout, SemaphorePermit::new);

        /// Wrapper for [`tokio::sync::Semaphore::acquire`].
        ///
        /// # Errors
        ///
        /// [`AcquireError`] if the semaphore is closed.
        ///
        /// # Cancel safety
        ///
        /// As tokio's: FIFO; a dropped future gives up its place (recorded as `cancelled`).
        ///
        /// ```
        /// # #[tokio::main(flavor = "current_thread")]
        /// # async fn main() {
        /// let s = lockscope::tokio::Semaphore::new(1);
        /// let p = s.acquire().await.unwrap();
        /// assert_eq!(p.num_permits(), 1);
        /// # }
        /// ```
        fn acquire = one;

        /// Wrapper for [`tokio::sync::Semaphore::acquire_many`].
        ///
        /// # Errors
        ///
        /// [`AcquireError`] if the semaphore is closed.
        ///
        /// # Cancel safety
        ///
        /// As tokio's: FIFO, and a large request at the head blocks smaller ones behind it.
        ///
        /// ```
        /// # #[tokio::main(flavor = "current_thread")]
        /// # async fn main() {
        /// let s = lockscope::tokio::Semaphore::new(5);
        /// let p = s.acquire_many(3).await.unwrap();
        /// assert_eq!(s.available_permits(), 2);
        /// # drop(p);
        /// # }
        /// ```
        fn acquire_many = many;

        /// Like [`acquire`](Semaphore::acquire), but gives up after `timeout` (lockscope
        /// addition). The error names the semaphore, how long it waited and who holds permits.
        ///
        /// # Errors
        ///
        /// [`TimeoutError`] when the deadline passes first or the semaphore is closed
        /// ([`TimeoutError::is_closed`]).
        ///
        /// # Panics
        ///
        /// Outside a tokio runtime with time enabled.
        ///
        /// ```
        /// # #[tokio::main(flavor = "current_thread")]
        /// # async fn main() {
        /// use std::time::Duration;
        /// let s = lockscope::tokio::Semaphore::named("pool", 1);
        /// let _p = s.acquire().await.unwrap();
        /// let err = s.acquire_timeout(Duration::from_millis(5)).await.unwrap_err();
        /// assert!(err.to_string().contains("semaphore \"pool\""));
        /// # }
        /// ```
        fn acquire_timeout = timed;

        /// Like [`acquire_many`](Semaphore::acquire_many) with a deadline (lockscope addition).
        ///
        /// # Errors
        ///
        /// [`TimeoutError`] when the deadline passes first or the semaphore is closed.
        ///
        /// # Panics
        ///
        /// Outside a tokio runtime with time enabled.
        ///
        /// ```
        /// # #[tokio::main(flavor = "current_thread")]
        /// # async fn main() {
        /// use std::time::Duration;
        /// let s = lockscope::tokio::Semaphore::new(1);
        /// assert!(s.acquire_many_timeout(2, Duration::from_millis(5)).await.is_err());
        /// # }
        /// ```
        fn acquire_many_timeout = timed_many;

        /// Wrapper for [`tokio::sync::Semaphore::try_acquire`].
        ///
        /// # Errors
        ///
        /// [`TryAcquireError::NoPermits`] or [`TryAcquireError::Closed`] (counted in
        /// `lockscope_try_failures_total`).
        ///
        /// ```
        /// let s = lockscope::tokio::Semaphore::new(1);
        /// let p = s.try_acquire().unwrap();
        /// assert!(s.try_acquire().is_err());
        /// drop(p);
        /// ```
        fn try_acquire = try;

        /// Wrapper for [`tokio::sync::Semaphore::try_acquire_many`].
        ///
        /// # Errors
        ///
        /// [`TryAcquireError::NoPermits`] or [`TryAcquireError::Closed`].
        ///
        /// ```
        /// let s = lockscope::tokio::Semaphore::new(2);
        /// assert!(s.try_acquire_many(3).is_err());
        /// assert!(s.try_acquire_many(2).is_ok());
        /// ```
        fn try_acquire_many = try_many;

        /// Wrapper for [`tokio::sync::Semaphore::blocking_acquire`].
        ///
        /// # Errors
        ///
        /// [`AcquireError`] if the semaphore is closed.
        ///
        /// # Panics
        ///
        /// When called within an asynchronous execution context, as tokio's.
        ///
        /// ```
        /// let s = lockscope::tokio::Semaphore::new(1);
        /// let p = s.blocking_acquire().unwrap();
        /// assert_eq!(p.num_permits(), 1);
        /// ```
        fn blocking_acquire = blocking;

        /// Wrapper for [`tokio::sync::Semaphore::blocking_acquire_many`].
        ///
        /// # Errors
        ///
        /// [`AcquireError`] if the semaphore is closed.
        ///
        /// # Panics
        ///
        /// When called within an asynchronous execution context, as tokio's.
        ///
        /// ```
        /// let s = lockscope::tokio::Semaphore::new(3);
        /// let p = s.blocking_acquire_many(2).unwrap();
        /// assert_eq!(p.num_permits(), 2);
        /// ```
        fn blocking_acquire_many = blocking_many;
    }
}

impl Semaphore {
    permit_forms! {
        (self: Arc<Self>) self [] -> OwnedSemaphorePermit, OwnedSemaphorePermit::new, owned_acq,
        owned_n, |site, n, timeout| Self::timed_later(self, site, n, timeout, OwnedSemaphorePermit::new);

        /// Wrapper for [`tokio::sync::Semaphore::acquire_owned`].
        ///
        /// # Errors
        ///
        /// [`AcquireError`] if the semaphore is closed.
        ///
        /// # Cancel safety
        ///
        /// As [`acquire`](Semaphore::acquire).
        ///
        /// ```
        /// # #[tokio::main(flavor = "current_thread")]
        /// # async fn main() {
        /// use std::sync::Arc;
        /// let s = Arc::new(lockscope::tokio::Semaphore::new(1));
        /// let p = s.clone().acquire_owned().await.unwrap();
        /// tokio::spawn(async move { drop(p) }).await.unwrap();
        /// assert_eq!(s.available_permits(), 1);
        /// # }
        /// ```
        fn acquire_owned = one;

        /// Wrapper for [`tokio::sync::Semaphore::acquire_many_owned`].
        ///
        /// # Errors
        ///
        /// [`AcquireError`] if the semaphore is closed.
        ///
        /// # Cancel safety
        ///
        /// As [`acquire_many`](Semaphore::acquire_many).
        ///
        /// ```
        /// # #[tokio::main(flavor = "current_thread")]
        /// # async fn main() {
        /// use std::sync::Arc;
        /// let s = Arc::new(lockscope::tokio::Semaphore::new(4));
        /// let p = s.clone().acquire_many_owned(3).await.unwrap();
        /// assert_eq!(p.num_permits(), 3);
        /// # }
        /// ```
        fn acquire_many_owned = many;

        /// Like [`acquire_owned`](Semaphore::acquire_owned) with a deadline (lockscope addition).
        ///
        /// # Errors
        ///
        /// [`TimeoutError`] when the deadline passes first or the semaphore is closed.
        ///
        /// # Panics
        ///
        /// Outside a tokio runtime with time enabled.
        ///
        /// ```
        /// # #[tokio::main(flavor = "current_thread")]
        /// # async fn main() {
        /// use std::{sync::Arc, time::Duration};
        /// let s = Arc::new(lockscope::tokio::Semaphore::new(1));
        /// let p = s.clone().acquire_owned_timeout(Duration::from_millis(5)).await.unwrap();
        /// assert_eq!(p.num_permits(), 1);
        /// # }
        /// ```
        fn acquire_owned_timeout = timed;

        /// Like [`acquire_many_owned`](Semaphore::acquire_many_owned) with a deadline
        /// (lockscope addition).
        ///
        /// # Errors
        ///
        /// [`TimeoutError`] when the deadline passes first or the semaphore is closed.
        ///
        /// # Panics
        ///
        /// Outside a tokio runtime with time enabled.
        ///
        /// ```
        /// # #[tokio::main(flavor = "current_thread")]
        /// # async fn main() {
        /// use std::{sync::Arc, time::Duration};
        /// let s = Arc::new(lockscope::tokio::Semaphore::new(1));
        /// assert!(s.acquire_many_owned_timeout(2, Duration::from_millis(5)).await.is_err());
        /// # }
        /// ```
        fn acquire_many_owned_timeout = timed_many;

        /// Wrapper for [`tokio::sync::Semaphore::try_acquire_owned`].
        ///
        /// # Errors
        ///
        /// [`TryAcquireError::NoPermits`] or [`TryAcquireError::Closed`].
        ///
        /// ```
        /// use std::sync::Arc;
        /// let s = Arc::new(lockscope::tokio::Semaphore::new(1));
        /// let p = s.clone().try_acquire_owned().unwrap();
        /// assert!(s.clone().try_acquire_owned().is_err());
        /// drop(p);
        /// ```
        fn try_acquire_owned = try;

        /// Wrapper for [`tokio::sync::Semaphore::try_acquire_many_owned`].
        ///
        /// # Errors
        ///
        /// [`TryAcquireError::NoPermits`] or [`TryAcquireError::Closed`].
        ///
        /// ```
        /// use std::sync::Arc;
        /// let s = Arc::new(lockscope::tokio::Semaphore::new(2));
        /// assert_eq!(s.try_acquire_many_owned(2).unwrap().num_permits(), 2);
        /// ```
        fn try_acquire_many_owned = try_many;

        /// Wrapper for [`tokio::sync::Semaphore::blocking_acquire_owned`].
        ///
        /// # Errors
        ///
        /// [`AcquireError`] if the semaphore is closed.
        ///
        /// # Panics
        ///
        /// When called within an asynchronous execution context, as tokio's.
        ///
        /// ```
        /// use std::sync::Arc;
        /// let s = Arc::new(lockscope::tokio::Semaphore::new(1));
        /// assert_eq!(s.blocking_acquire_owned().unwrap().num_permits(), 1);
        /// ```
        fn blocking_acquire_owned = blocking;

        /// Wrapper for [`tokio::sync::Semaphore::blocking_acquire_many_owned`].
        ///
        /// # Errors
        ///
        /// [`AcquireError`] if the semaphore is closed.
        ///
        /// # Panics
        ///
        /// When called within an asynchronous execution context, as tokio's.
        ///
        /// ```
        /// use std::sync::Arc;
        /// let s = Arc::new(lockscope::tokio::Semaphore::new(3));
        /// assert_eq!(s.blocking_acquire_many_owned(3).unwrap().num_permits(), 3);
        /// ```
        fn blocking_acquire_many_owned = blocking_many;
    }
}
