//! What every blocking wrapper shares, whichever thread-parking lock it wraps (parking_lot's
//! or std's): the translation of a blocking or `try_` acquisition into the probe's calls, the
//! guard shell that keeps the release order, and the books of a guard across a condvar wait.
//!
//! Release order, for every guard built here: the books are released first, then the inner
//! guard unlocks, then the statistics are recorded (out of the critical section), so the
//! detector never sees two holders of one mutex.

use std::convert::Infallible;
use std::panic::Location;

use lockscope_detector::__private::hooks::{self, Acq, Mode};
use lockscope_detector::__private::prim::Prim;

use lockscope_detector::__private::hooks::{PrimCell, PrimKind};

use crate::probe::{self, Token};
use crate::shell::Guard;

/// An acquisition of a blocking lock: one permit (a reader counts one, a writer is
/// exclusive).
#[inline]
pub(crate) fn acq(site: &'static Location<'static>, mode: Mode) -> Acq {
    Acq::new(site, 1, mode)
}

/// [`probe::blocking`] for a lock whose blocking form cannot fail (std's poisoning is part
/// of `P`, not a failure: the lock is held either way). With the detector off it is `block()`
/// and a branch, inlined into the wrapper (`prim` is not even looked up). Recording, the
/// uncontended grant (`fast`'s first try and [`probe::granted`]) is inline too; the waits
/// stay out of line, so that they do not keep the wrapper from inlining.
#[inline(always)]
pub(crate) fn blocking<'p, P>(
    prim: impl FnOnce() -> &'p Prim,
    acq: Acq,
    mut fast: impl FnMut() -> Option<P>,
    block: impl FnOnce() -> P,
) -> (P, Token) {
    if !hooks::enabled() {
        return (block(), Token::none());
    }
    if crate::stress::on() {
        crate::stress::pause_blocking(acq.site(), &mut fast);
    }
    let prim = prim();
    // Uncontended, the common case: one `try_` and the grant, inline.
    if let Some(p) = fast() {
        return (
            p,
            probe::grant::<lockscope_detector::__private::hooks::Threads>(prim, acq),
        );
    }
    blocking_recorded(prim, acq, fast, block)
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

/// The cell of a lock named `name` in spans, metrics and reports, created at the caller's
/// location and registered at once (the `named` constructors).
#[track_caller]
pub(crate) fn named_cell(name: &str, kind: PrimKind, capacity: u64) -> PrimCell {
    PrimCell::new(Some(name.into()), kind, Location::caller(), capacity)
}

/// A blocking lock wrapper `$lock`: the struct (a `cell` for the detector's primitive and its
/// `inner` lock, of type `$inner`), `new` (`const`, named after the caller's location,
/// registered on first use), `named` (registered at once) and `into_inner`, each after its
/// docs; `$val` names the value. A parking_lot lock also lists, after those, its free `const`
/// constructor (`const fn const_mutex;`), lock_api's `const_new` over the given raw parts and
/// `from_raw`.
macro_rules! lock_struct {
    (
        $(#[$doc:meta])*
        pub struct $lock:ident($vis:vis $inner:ty, $kind:ident, $capacity:expr, $val:ident);
        $(#[$new_doc:meta])* fn new;
        $(#[$named_doc:meta])* fn named;
        $(#[$into_doc:meta])* fn into_inner -> $into:ty;
    ) => {
        $(#[$doc])*
        pub struct $lock<T: ?Sized> {
            cell: ::lockscope_detector::__private::hooks::PrimCell,
            $vis inner: $inner,
        }

        impl<T> $lock<T> {
            $(#[$new_doc])*
            #[track_caller]
            pub const fn new($val: T) -> $lock<T> {
                $lock {
                    cell: lock_struct!(@lazy $kind, $capacity),
                    inner: <$inner>::new($val),
                }
            }

            $(#[$named_doc])*
            #[track_caller]
            pub fn named(name: impl AsRef<str>, $val: T) -> $lock<T> {
                let kind = ::lockscope_detector::__private::hooks::PrimKind::$kind;
                $lock {
                    cell: $crate::blocking_shell::named_cell(name.as_ref(), kind, $capacity),
                    inner: <$inner>::new($val),
                }
            }

            $(#[$into_doc])*
            #[inline]
            pub fn into_inner(self) -> $into {
                self.inner.into_inner()
            }
        }
    };
    (
        $(#[$doc:meta])*
        pub struct $lock:ident($vis:vis $inner:ty, $kind:ident, $capacity:expr, $val:ident);
        $(#[$new_doc:meta])* fn new;
        $(#[$named_doc:meta])* fn named;
        $(#[$into_doc:meta])* fn into_inner -> $into:ty;
        $(#[$const_fn_doc:meta])* const fn $const_fn:ident;
        $(#[$const_new_doc:meta])* fn const_new($($raw:ident: $raw_ty:ty),+);
        $(#[$from_raw_doc:meta])* fn from_raw;
    ) => {
        lock_struct! {
            $(#[$doc])*
            pub struct $lock($vis $inner, $kind, $capacity, $val);
            $(#[$new_doc])* fn new;
            $(#[$named_doc])* fn named;
            $(#[$into_doc])* fn into_inner -> $into;
        }

        $(#[$const_fn_doc])*
        #[track_caller]
        pub const fn $const_fn<T>($val: T) -> $lock<T> {
            $lock::new($val)
        }

        impl<T> $lock<T> {
            $(#[$const_new_doc])*
            #[track_caller]
            pub const fn const_new($($raw: $raw_ty,)+ $val: T) -> $lock<T> {
                $lock {
                    cell: lock_struct!(@lazy $kind, $capacity),
                    inner: <$inner>::const_new($($raw,)+ $val),
                }
            }

            $(#[$from_raw_doc])*
            #[track_caller]
            pub const fn from_raw($($raw: $raw_ty,)+ $val: T) -> $lock<T> {
                $lock::const_new($($raw,)+ $val)
            }
        }
    };
    (@lazy $kind:ident, $capacity:expr) => {
        ::lockscope_detector::__private::hooks::PrimCell::lazy(
            ::lockscope_detector::__private::hooks::PrimKind::$kind,
            ::std::panic::Location::caller(),
            $capacity,
        )
    };
}
pub(crate) use lock_struct;

/// `Default`, `From<T>` and `Debug` of a blocking lock wrapper `$lock` (a struct with `new` and
/// `inner`) of the crate path `$krate` (`"std::sync"`, `"parking_lot"`), as the wrapped lock's:
/// the two constructors name the lock after the caller's location; `Debug`'s docs are given.
macro_rules! lock_traits {
    ($krate:literal, $lock:ident, $(#[$debug_doc:meta])*) => {
        impl<T: Default> Default for $lock<T> {
            #[doc = concat!("Wrapper for `", $krate, "::", stringify!($lock), "::default`, named after the caller's location.")]
            #[track_caller]
            fn default() -> $lock<T> {
                $lock::new(T::default())
            }
        }

        impl<T> From<T> for $lock<T> {
            #[doc = concat!("Wrapper for `", $krate, "::", stringify!($lock), "::from`, named after the caller's location.")]
            #[track_caller]
            fn from(t: T) -> $lock<T> {
                $lock::new(t)
            }
        }

        impl<T: ?Sized + ::std::fmt::Debug> ::std::fmt::Debug for $lock<T> {
            $(#[$debug_doc])*
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                ::std::fmt::Debug::fmt(&self.inner, f)
            }
        }
    };
}
pub(crate) use lock_traits;

/// A `try_` form: records the hold, or the give-up. `prim` is looked up only when the
/// detector is on.
#[inline]
pub(crate) fn tried<'p, G>(
    prim: impl FnOnce() -> &'p Prim,
    acq: Acq,
    got: Option<G>,
) -> Option<(G, Token)> {
    match got {
        Some(g) => Some((
            g,
            probe::try_acquired::<lockscope_detector::__private::hooks::Threads>(prim, acq),
        )),
        None => {
            probe::try_failed(prim, acq);
            None
        }
    }
}

/// A guard of a blocking lock: the inner guard `G` (whose drop unlocks) and the hold's token,
/// in the one [`Guard`] shell, which owns the release order.
pub(crate) type Shell<'a, G> = Guard<&'a Prim, G>;

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
            *self.token = probe::granted::<lockscope_detector::__private::hooks::Threads>(
                || self.prim,
                acq(self.site, Mode::Exclusive),
            );
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
