//! How every tokio wrapper takes permits from its raw `tokio::sync::Semaphore`, written once:
//! the queued `queue` of an async acquisition (`probe::acquire!`; its fast path is
//! `probe::poll_fast`), and the timed, blocking and `try_` forms. The permits are forgotten on
//! the way: the guard or permit made from the returned [`Token`] gives them back.

use std::future::Future;
use std::panic::Location;
use std::time::Duration;

use lockscope_detector::__private::hooks::{Acq, Mode};
use lockscope_detector::__private::prim::Prim;
use tokio::sync::{AcquireError, Semaphore, SemaphorePermit, TryAcquireError};

use super::guard::{One, SemOwner};
use super::owned::Owned;
use super::{TimeoutError, assert_blocking_allowed, block_on};
use crate::probe::{self, Timed, TimedError, Token, forget};

/// Queues for `count` permits: tokio's FIFO acquire future itself (no `async` layer around
/// it, which would grow every waiting task's future); `probe::acquire!` forgets the permit it
/// gives ([`forget`](probe::forget)).
#[inline]
pub(crate) fn queue<C: Count>(
    sem: &Semaphore,
    count: C,
) -> impl Future<Output = Result<SemaphorePermit<'_>, AcquireError>> {
    C::queue(sem, count.get())
}

/// How many permits an acquisition asks for, as a type: [`One`] (a mutex's, a reader's, a
/// one-permit `acquire`) or a `u32`. Only an owned form's future tells them apart: with one
/// permit it waits in tokio's `acquire`, whose future is a word smaller than
/// `acquire_many`'s (see [`owned`](super::owned)).
pub(crate) trait Count: Copy {
    /// The number.
    fn get(self) -> u32;

    /// Tokio's future for `n` permits (`n` is [`Count::get`] of a value of this type).
    fn queue(
        sem: &Semaphore,
        n: u32,
    ) -> impl Future<Output = Result<SemaphorePermit<'_>, AcquireError>>;
}

impl Count for One {
    #[inline]
    fn get(self) -> u32 {
        1
    }

    #[inline]
    fn queue(
        sem: &Semaphore,
        _n: u32,
    ) -> impl Future<Output = Result<SemaphorePermit<'_>, AcquireError>> {
        sem.acquire()
    }
}

impl Count for u32 {
    #[inline]
    fn get(self) -> u32 {
        self
    }

    #[inline]
    fn queue(
        sem: &Semaphore,
        n: u32,
    ) -> impl Future<Output = Result<SemaphorePermit<'_>, AcquireError>> {
        sem.acquire_many(n)
    }
}

/// An owned form's async acquisition of `acq` (of `count` permits) from `owner`, the `Arc` it
/// was called on: [`Owned`], whose result (the owner, the count and the token) `make` turns
/// into the guard or permit.
#[inline]
pub(crate) fn owned<O: SemOwner, C: Count, R>(
    owner: O,
    acq: Acq,
    _count: C,
    make: impl Fn(Result<(O, u32, Token), AcquireError>) -> R,
) -> impl Future<Output = R> {
    Owned::new(
        owner,
        acq,
        |sem: &'static Semaphore, n| C::queue(sem, n),
        make,
    )
}

/// `n` permits, or a [`TimeoutError`] after `timeout` (or when the semaphore is closed). The
/// deadline is set now, at the call (so that a runtime without time panics here, as tokio's
/// `timeout` does), not at the first poll.
#[track_caller]
pub(crate) fn timed<'a>(
    sem: &'a Semaphore,
    prim: &'a Prim,
    acq: Acq,
    n: u32,
    timeout: Duration,
) -> impl Future<Output = Result<Token, TimeoutError>> + 'a {
    let timed = Timed::new(prim, acq, timeout, sem.acquire_many(n));
    async move {
        match timed.await {
            Ok((permit, token)) => {
                forget(permit);
                Ok(token)
            }
            Err(TimedError::Elapsed(waited)) => Err(TimeoutError::elapsed(prim, waited)),
            Err(TimedError::Inner(_)) => Err(TimeoutError::closed(prim)),
        }
    }
}

/// `n` permits, blocking this thread as tokio's `blocking_*` methods do.
///
/// # Panics
///
/// Within an asynchronous execution context, as tokio's.
#[track_caller]
pub(crate) fn blocking(
    sem: &Semaphore,
    prim: &Prim,
    acq: Acq,
    n: u32,
) -> Result<Token, AcquireError> {
    assert_blocking_allowed();
    block(sem, prim, acq, n)
}

/// [`blocking`] once the caller has checked that it may block this thread.
pub(crate) fn block(sem: &Semaphore, prim: &Prim, acq: Acq, n: u32) -> Result<Token, AcquireError> {
    if crate::stress::on() {
        crate::stress::pause_blocking(acq.site(), || sem.try_acquire_many(n).ok());
    }
    let (permit, token) = probe::blocking(
        prim,
        acq,
        || sem.try_acquire_many(n).ok(),
        || block_on(sem.acquire_many(n)),
    )?;
    forget(permit);
    Ok(token)
}

/// `n` permits if they are free now (a `try_` form; a failure is counted). `prim` is looked
/// up only when the detector is on.
pub(crate) fn try_take<'p>(
    sem: &Semaphore,
    prim: impl FnOnce() -> &'p Prim,
    acq: Acq,
    n: u32,
) -> Result<Token, TryAcquireError> {
    match sem.try_acquire_many(n) {
        Ok(permit) => {
            forget(permit);
            Ok(probe::try_acquired::<
                lockscope_detector::__private::hooks::Tasks,
            >(prim, acq))
        }
        Err(e) => {
            probe::try_failed(prim, acq);
            Err(e)
        }
    }
}

/// The acquisition of `n` permits in `mode` at the caller's location (a `try_`, timed or
/// blocking form: the async forms build theirs where the fast path uses it).
#[track_caller]
#[inline]
pub(crate) fn here(n: u32, mode: Mode) -> Acq {
    Acq::new(Location::caller(), n, mode)
}

/// The value of a lock's acquisition, whose semaphore is never closed.
#[inline]
pub(crate) fn never_closed<T, E>(r: Result<T, E>) -> T {
    match r {
        Ok(t) => t,
        Err(_) => unreachable!("a lock's semaphore is never closed"),
    }
}

/// The seven acquisition forms of one lock mode (`Mutex::lock*`, `RwLock::read*`,
/// `RwLock::write*`), written once: async, timed, blocking, owned, owned timed, `try_` and
/// owned `try_`. `$mode` and `$n` (a [`Count`]) say what is taken; `$guard` and `$owned` make
/// the borrowed and the owned guard from `$l` (the lock, or its `Arc`) and `$t` (the token).
/// The methods follow, each after its docs, in the order above (`fn lock = async;`, ...).
///
/// The borrowed async form keeps the shape of the one fast path (`probe::acquire!` inside the
/// method's own `async` block, the `Acq` built where it is used); the owned one is [`owned`]'s
/// future, whose size matters more than a nanosecond (see [`super::owned`]).
macro_rules! lock_forms {
    (
        |$l:ident, $t:ident| $mode:expr, $n:expr,
        $guard:expr => $g:ty, $owned:expr => $og:ty;
        $(#[$d_async:meta])* fn $async_fn:ident = async;
        $(#[$d_timeout:meta])* fn $timeout_fn:ident = timed;
        $(#[$d_blocking:meta])* fn $blocking_fn:ident = blocking;
        $(#[$d_owned:meta])* fn $owned_fn:ident = owned;
        $(#[$d_owned_timeout:meta])* fn $owned_timeout_fn:ident = owned_timed;
        $(#[$d_try:meta])* fn $try_fn:ident = try;
        $(#[$d_try_owned:meta])* fn $try_owned_fn:ident = try_owned;
    ) => {
        $(#[$d_async])*
        #[inline]
        #[track_caller]
        pub fn $async_fn(&self) -> impl ::std::future::Future<Output = $g> + '_ {
            let site = ::std::panic::Location::caller();
            async move {
                let $l = self;
                if $crate::stress::on() {
                    let n = lock_forms!(@n $n);
                    $crate::stress::pause(site, || ($l.sem.available_permits() as u64) < u64::from(n)).await;
                }
                let $t = lock_forms!(@acquire $l, site, $mode, $n);
                $guard
            }
        }

        $(#[$d_timeout])*
        #[track_caller]
        pub fn $timeout_fn(
            &self,
            timeout: ::std::time::Duration,
        ) -> impl ::std::future::Future<Output = Result<$g, $crate::tokio::TimeoutError>> + '_ {
            let $l = self;
            let n = lock_forms!(@n $n);
            let acq = $crate::tokio::acquire::here(n, $mode);
            let timed = $crate::tokio::acquire::timed(&$l.sem, $l.prim(), acq, n, timeout);
            async move {
                let $t = timed.await?;
                Ok($guard)
            }
        }

        $(#[$d_blocking])*
        #[track_caller]
        pub fn $blocking_fn(&self) -> $g {
            let $l = self;
            let n = lock_forms!(@n $n);
            let acq = $crate::tokio::acquire::here(n, $mode);
            let $t = $crate::tokio::acquire::blocking(&$l.sem, $l.prim(), acq, n);
            let $t = $crate::tokio::acquire::never_closed($t);
            $guard
        }

        $(#[$d_owned])*
        #[inline]
        #[track_caller]
        pub fn $owned_fn(self: ::std::sync::Arc<Self>) -> impl ::std::future::Future<Output = $og> {
            #[allow(unused_variables)] // `$n` may not read the lock
            let $l = &self;
            let count = $n;
            let acq = lock_forms!(@flags MOVABLE, $crate::tokio::acquire::here(
                $crate::tokio::acquire::Count::get(count),
                $mode,
            ));
            $crate::tokio::acquire::owned(self, acq, count, |r| {
                let ($l, _, $t) = $crate::tokio::acquire::never_closed(r);
                $owned
            })
        }

        $(#[$d_owned_timeout])*
        #[track_caller]
        pub fn $owned_timeout_fn(
            self: ::std::sync::Arc<Self>,
            timeout: ::std::time::Duration,
        ) -> impl ::std::future::Future<Output = Result<$og, $crate::tokio::TimeoutError>> {
            let site = ::std::panic::Location::caller();
            async move {
                let $l = self;
                let n = lock_forms!(@n $n);
                let acq = ::lockscope_detector::__private::hooks::Acq::new(site, n, $mode)
                    .with_flags(::lockscope_detector::__private::hooks::MOVABLE);
                let $t = $crate::tokio::acquire::timed(&$l.sem, $l.prim(), acq, n, timeout);
                let $t = $t.await?;
                Ok($owned)
            }
        }

        $(#[$d_try])*
        #[track_caller]
        pub fn $try_fn(&self) -> Result<$g, $crate::tokio::TryLockError> {
            let $l = self;
            let $t = lock_forms!(@try $l, $mode, $n, 0)?;
            Ok($guard)
        }

        $(#[$d_try_owned])*
        #[track_caller]
        pub fn $try_owned_fn(
            self: ::std::sync::Arc<Self>,
        ) -> Result<$og, $crate::tokio::TryLockError> {
            let $l = self;
            let $t = lock_forms!(@try $l, $mode, $n, MOVABLE)?;
            Ok($owned)
        }
    };
    // The borrowed async acquisition: `probe::acquire!`'s fast path (the owned one is
    // `owned`'s future).
    (@acquire $l:ident, $site:ident, $mode:expr, $n:expr) => {
        $crate::tokio::acquire::never_closed($crate::probe::acquire!(
            $l.prim(),
            ::lockscope_detector::__private::hooks::Acq::new($site, lock_forms!(@n $n), $mode),
            &$l.sem,
            lock_forms!(@n $n),
            $crate::tokio::acquire::queue(&$l.sem, $n)
        ))
    };
    // A `try_` form's token, or tokio's `TryLockError`.
    (@try $l:ident, $mode:expr, $n:expr, $flags:tt) => {
        $crate::tokio::acquire::try_take(
            &$l.sem,
            || $l.prim(),
            lock_forms!(@flags $flags, $crate::tokio::acquire::here(lock_forms!(@n $n), $mode)),
            lock_forms!(@n $n),
        )
        .map_err(|_| $crate::tokio::try_lock_error())
    };
    // The number of permits of a count (see `Count`).
    (@n $n:expr) => { $crate::tokio::acquire::Count::get($n) };
    // A borrowed form's `Acq` as it is; an owned one's marked movable.
    (@flags 0, $acq:expr) => { $acq };
    (@flags MOVABLE, $acq:expr) => { $acq.with_flags(::lockscope_detector::__private::hooks::MOVABLE) };
}
pub(crate) use lock_forms;

/// `get_mut` and `into_inner` (each after its docs, in that order), `From<T>`,
/// `Default` and `Debug` of a tokio lock (`$name`): as tokio's, `Debug` shows the data if one
/// permit (a reader's, for an `RwLock`) is free, else `<locked>`.
macro_rules! lock_traits {
    (
        $name:ident;
        $(#[$get_mut:meta])* fn get_mut;
        $(#[$into_inner:meta])* fn into_inner;
    ) => {
        impl<T: ?Sized> $name<T> {
            $(#[$get_mut])*
            pub fn get_mut(&mut self) -> &mut T {
                self.c.get_mut()
            }

            $(#[$into_inner])*
            pub fn into_inner(self) -> T
            where
                T: Sized,
            {
                self.c.into_inner()
            }
        }

        impl<T> From<T> for $name<T> {
            #[track_caller]
            fn from(s: T) -> Self {
                Self::new(s)
            }
        }

        impl<T> Default for $name<T>
        where
            T: Default,
        {
            #[track_caller]
            fn default() -> Self {
                Self::new(T::default())
            }
        }

        impl<T: ?Sized> ::std::fmt::Debug for $name<T>
        where
            T: ::std::fmt::Debug,
        {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                let mut d = f.debug_struct(stringify!($name));
                match self.sem.try_acquire() {
                    // SAFETY: the permit keeps writers (any other holder, for a mutex) out
                    // while we read.
                    Ok(_permit) => d.field("data", &unsafe { &*self.c.get() }),
                    Err(_) => d.field("data", &format_args!("<locked>")),
                };
                d.finish()
            }
        }
    };
}
pub(crate) use lock_traits;
