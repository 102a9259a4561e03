//! The two macros every parking_lot guard file is written with: [`guard_struct!`] (a guard's
//! struct) and [`guard_methods!`] (its methods, each kind written once).

/// A public guard: a newtype over the shell, its constructor, `Deref` (and `DerefMut` where
/// it gives `&mut`), `Debug` and `Display` (the guarded value's, as parking_lot's); the
/// struct's docs and attributes are the caller's. Its `Drop` is the shell's
/// ([`Guard`](crate::shell::Guard)): the books are released first, then parking_lot's guard
/// unlocks, then the hold time is recorded, outside the critical section.
///
/// - `pub struct Guard for Lock (+ DerefMut);`: a lock's own guard, which keeps parking_lot's
///   guard of the same name as `Held` (the owner is the lock, and the value is reached
///   through it). `Sync` when `T` is, as parking_lot's (its borrow of the lock alone would ask
///   `T: Send` too).
/// - `pub struct Mapped [&mut];` (or `[&]`): a mapped guard, which keeps parking_lot's mapped
///   guard of the same name and the bare primitive; its auto traits are its fields'.
macro_rules! guard_struct {
    ($(#[$attr:meta])* pub struct $guard:ident for $lock:ident $(+ $mutable:ident)?;) => {
        $(#[$attr])*
        #[clippy::has_significant_drop]
        pub struct $guard<'a, T: ?Sized> {
            pub(super) shell: $crate::shell::Guard<
                &'a $lock<T>,
                $crate::parking_lot::guard::Held<::parking_lot::$guard<'a, T>>,
            >,
        }

        // SAFETY: as parking_lot's guard, which is `Sync` when `T: Sync`: a shared guard gives
        // `&T`, and reaches the lock only while the guard holds it. The token is `Sync`.
        unsafe impl<T: ?Sized + Sync> Sync for $guard<'_, T> {}

        impl<'a, T: ?Sized> $guard<'a, T> {
            /// A guard over parking_lot's, whose hold is recorded in `token`.
            #[inline]
            pub(super) fn new(
                owner: &'a $lock<T>,
                inner: ::parking_lot::$guard<'a, T>,
                token: $crate::probe::Token,
            ) -> Self {
                $guard {
                    shell: $crate::shell::Guard::new(
                        owner,
                        $crate::parking_lot::guard::Held::keep(inner),
                        token,
                    ),
                }
            }
        }

        impl<T: ?Sized> ::std::ops::Deref for $guard<'_, T> {
            type Target = T;
            #[inline]
            fn deref(&self) -> &T {
                // SAFETY: the guard holds the lock (as parking_lot's guard it kept did).
                unsafe { &*self.shell.owner().inner.data_ptr() }
            }
        }

        $(guard_struct!(@$mutable $guard);)?

        guard_struct!(@fmt $guard);
    };
    ($(#[$attr:meta])* pub struct $guard:ident [& mut];) => {
        guard_struct!(@mapped $(#[$attr])* $guard);

        impl<T: ?Sized> ::std::ops::DerefMut for $guard<'_, T> {
            #[inline]
            fn deref_mut(&mut self) -> &mut T {
                &mut self.shell
            }
        }
    };
    ($(#[$attr:meta])* pub struct $guard:ident [&];) => {
        guard_struct!(@mapped $(#[$attr])* $guard);
    };
    (@DerefMut $guard:ident) => {
        impl<T: ?Sized> ::std::ops::DerefMut for $guard<'_, T> {
            #[inline]
            fn deref_mut(&mut self) -> &mut T {
                // SAFETY: the guard holds the lock exclusively, and `&mut self` is unique.
                unsafe { &mut *self.shell.owner().inner.data_ptr() }
            }
        }
    };
    (@mapped $(#[$attr:meta])* $guard:ident) => {
        $(#[$attr])*
        #[clippy::has_significant_drop]
        pub struct $guard<'a, T: ?Sized> {
            pub(super) shell: $crate::shell::Guard<
                &'a ::lockscope_detector::__private::prim::Prim,
                ::parking_lot::$guard<'a, T>,
            >,
        }

        impl<'a, T: ?Sized> $guard<'a, T> {
            /// A guard over parking_lot's, whose hold is recorded in `token`.
            #[inline]
            pub(super) fn new(
                owner: &'a ::lockscope_detector::__private::prim::Prim,
                inner: ::parking_lot::$guard<'a, T>,
                token: $crate::probe::Token,
            ) -> Self {
                $guard {
                    shell: $crate::shell::Guard::new(owner, inner, token),
                }
            }
        }

        impl<T: ?Sized> ::std::ops::Deref for $guard<'_, T> {
            type Target = T;
            #[inline]
            fn deref(&self) -> &T {
                &self.shell
            }
        }

        guard_struct!(@fmt $guard);
    };
    (@fmt $guard:ident) => {
        impl<T: ?Sized + ::std::fmt::Debug> ::std::fmt::Debug for $guard<'_, T> {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                ::std::fmt::Debug::fmt(&**self, f)
            }
        }

        impl<T: ?Sized + ::std::fmt::Display> ::std::fmt::Display for $guard<'_, T> {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                ::std::fmt::Display::fmt(&**self, f)
            }
        }
    };
}

/// A guard's methods, each written once for every guard that has it: inside `impl Guard { ..
/// }` (parking_lot's guard of the same name is the one each method calls), the caller lists
/// them as `$(#[doc])* fn name = kind(args);`, in the order the docs show them, where `kind`
/// is:
///
/// - `owner(Lock)`: the lock the guard holds (`mutex`, `rwlock`, `remutex`);
/// - `map(Mapped, &mut)`, `try_map(..)`, `try_map_or_err(..)` (parking_lot's method of the
///   same name; a user closure that panics releases the books before the unlock);
/// - `unlocked(force_unlock, relock_at)`: the lock's `force_unlock*` method, and its blocking
///   acquisition at a given site, which records the re-lock;
/// - `unlock_fair()`, `leak()`;
/// - `bump(regrant)`: `regrant(prim, site)` is the hold recorded after the bump;
/// - `downgrade(Target, Mode)`: the hold is rewritten in the books first, then weakened.
macro_rules! guard_methods {
    (impl $guard:ident {
        $($(#[$doc:meta])* fn $name:ident = $kind:ident $args:tt;)*
    }) => {
        impl<'a, T: ?Sized> $guard<'a, T> {
            $(guard_methods!(@$kind [$(#[$doc])*] $guard $name $args);)*
        }
    };
    (@owner [$(#[$doc:meta])*] $inner:ident $name:ident ($lock:ident)) => {
        $(#[$doc])*
        pub fn $name(s: &Self) -> &'a $lock<T> {
            *s.shell.owner()
        }
    };
    (@map [$(#[$doc:meta])*] $inner:ident $name:ident ($mapped:ident, $($r:tt)+)) => {
        $(#[$doc])*
        #[inline]
        pub fn $name<U: ?Sized, F>(s: Self, f: F) -> $mapped<'a, U>
        where
            F: FnOnce($($r)+ T) -> $($r)+ U,
        {
            use $crate::parking_lot::guard::{PrimRef, Real, books_first};
            let (owner, mut token, inner) = s.shell.into_parts();
            // SAFETY: the parts of one guard, `inner` used once.
            let inner = unsafe { inner.real(&owner) };
            let prim = owner.prim_ref();
            let inner = ::parking_lot::$inner::map(inner, |t| books_first(prim, &mut token, || f(t)));
            $mapped::new(prim, inner, token)
        }
    };
    (@try_map [$(#[$doc:meta])*] $inner:ident $name:ident ($mapped:ident, $($r:tt)+)) => {
        $(#[$doc])*
        #[inline]
        pub fn $name<U: ?Sized, F>(s: Self, f: F) -> Result<$mapped<'a, U>, Self>
        where
            F: FnOnce($($r)+ T) -> Option<$($r)+ U>,
        {
            use $crate::parking_lot::guard::{PrimRef, Real, books_first};
            let (owner, mut token, inner) = s.shell.into_parts();
            // SAFETY: the parts of one guard, `inner` used once.
            let inner = unsafe { inner.real(&owner) };
            let prim = owner.prim_ref();
            match ::parking_lot::$inner::try_map(inner, |t| books_first(prim, &mut token, || f(t))) {
                Ok(inner) => Ok($mapped::new(prim, inner, token)),
                Err(inner) => Err(Self::new(owner, inner, token)),
            }
        }
    };
    (@try_map_or_err [$(#[$doc:meta])*] $inner:ident $name:ident ($mapped:ident, $($r:tt)+)) => {
        $(#[$doc])*
        #[inline]
        pub fn $name<U: ?Sized, F, E>(s: Self, f: F) -> Result<$mapped<'a, U>, (Self, E)>
        where
            F: FnOnce($($r)+ T) -> Result<$($r)+ U, E>,
        {
            use $crate::parking_lot::guard::{PrimRef, Real, books_first};
            let (owner, mut token, inner) = s.shell.into_parts();
            // SAFETY: the parts of one guard, `inner` used once.
            let inner = unsafe { inner.real(&owner) };
            let prim = owner.prim_ref();
            match ::parking_lot::$inner::$name(inner, |t| books_first(prim, &mut token, || f(t))) {
                Ok(inner) => Ok($mapped::new(prim, inner, token)),
                Err((inner, e)) => Err((Self::new(owner, inner, token), e)),
            }
        }
    };
    (@unlocked [$(#[$doc:meta])*] $inner:ident $name:ident ($force:ident, $relock:ident)) => {
        $(#[$doc])*
        #[track_caller]
        pub fn $name<F, U>(s: &mut Self, f: F) -> U
        where
            F: FnOnce() -> U,
        {
            use $crate::parking_lot::guard::{token_of, unlocked};
            let site = ::std::panic::Location::caller();
            let lock = *s.shell.owner();
            unlocked(
                lock.prim(),
                s.shell.token_mut(),
                // SAFETY: this guard holds the lock, and the re-lock takes it again before the
                // guard is used again (also when `f` panics).
                || unsafe { lock.$force() },
                || token_of(lock.$relock(site).shell),
                f,
            )
        }
    };
    (@unlock_fair [$(#[$doc:meta])*] $inner:ident $name:ident ()) => {
        $(#[$doc])*
        #[inline]
        pub fn $name(s: Self) {
            use $crate::parking_lot::guard::Real;
            let (owner, inner) = s.shell.release();
            // SAFETY: the parts of one guard, `inner` used once.
            ::parking_lot::$inner::unlock_fair(unsafe { inner.real(&owner) });
        }
    };
    (@leak [$(#[$doc:meta])*] $inner:ident $name:ident ()) => {
        $(#[$doc])*
        pub fn $name(s: Self) -> &'a mut T {
            use $crate::parking_lot::guard::Real;
            let (owner, inner) = s.shell.release();
            // SAFETY: the parts of one guard, `inner` used once.
            ::parking_lot::$inner::leak(unsafe { inner.real(&owner) })
        }
    };
    (@bump [$(#[$doc:meta])*] $inner:ident $name:ident ($regrant:path)) => {
        $(#[$doc])*
        #[track_caller]
        pub fn $name(s: &mut Self) {
            use $crate::parking_lot::guard::{PrimRef, bumped};
            let site = ::std::panic::Location::caller();
            let (owner, held, token) = s.shell.parts_mut();
            // SAFETY: `owner` is the lock this guard holds (the bump leaves it held again).
            let mut inner = unsafe { held.lend(*owner) };
            let prim = owner.prim_ref();
            bumped(
                prim,
                token,
                || ::parking_lot::$inner::bump(&mut inner),
                || $regrant(prim, site),
            );
        }
    };
    (@downgrade [$(#[$doc:meta])*] $inner:ident $name:ident ($target:ident, $mode:ident)) => {
        $(#[$doc])*
        pub fn $name(s: Self) -> $target<'a, T> {
            use $crate::parking_lot::guard::Real;
            let (lock, mut token, inner) = s.shell.into_parts();
            // SAFETY: the parts of one guard, `inner` used once.
            let inner = unsafe { inner.real(&lock) };
            // Books first: weaker in the books before it is weaker in fact.
            token.update(lock.prim(), 1, ::lockscope_detector::__private::hooks::Mode::$mode);
            $target::new(lock, ::parking_lot::$inner::$name(inner), token)
        }
    };
}
