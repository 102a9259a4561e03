//! The macros that write the guard families: [`guard_family!`] (a family's guards, their
//! mapped forms and their shared methods), built on [`guard_struct!`] and [`guard_methods!`].

/// A public guard: a newtype over the shell, with the owner `$owner` and parking_lot's guard
/// `$inner`, its constructor, `Deref` (and `DerefMut` with `+ DerefMut`), `Debug` and
/// `Display` (the guarded value's, as parking_lot's). The struct's docs and attributes are
/// the caller's; explicit `Send`/`Sync` impls stay next to the invocation.
macro_rules! guard_struct {
    // A lock's own guard: parking_lot's guard is kept as `Held` (the owner is the lock), and
    // the value is reached through the lock (`DerefMut` with `+ DerefMut`).
    (plain $(#[$attr:meta])* pub struct $guard:ident($lock:ident, $inner:ident) $(+ $mutable:ident)?;) => {
        $(#[$attr])*
        pub struct $guard<'a, T: ?Sized> {
            // The shell's `Drop` releases the books first, then makes parking_lot's guard
            // again and drops it, which unlocks, then records the hold time.
            pub(super) shell: $crate::shell::Guard<
                &'a $lock<T>,
                $crate::parking_lot::guard::Held<::parking_lot::$inner<'a, T>>,
            >,
        }

        impl<'a, T: ?Sized> $guard<'a, T> {
            /// A guard over parking_lot's, whose hold is recorded in `token`.
            #[inline]
            pub(super) fn new(
                owner: &'a $lock<T>,
                inner: ::parking_lot::$inner<'a, T>,
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
    (@DerefMut $guard:ident) => {
        impl<T: ?Sized> ::std::ops::DerefMut for $guard<'_, T> {
            #[inline]
            fn deref_mut(&mut self) -> &mut T {
                // SAFETY: the guard holds the lock exclusively, and `&mut self` is unique.
                unsafe { &mut *self.shell.owner().inner.data_ptr() }
            }
        }
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
    // A mapped guard: `DerefMut` when its `map` gives `&mut`.
    ($(#[$attr:meta])* pub struct $guard:ident($owner:ty, $inner:ident) [& mut];) => {
        guard_struct!($(#[$attr])* pub struct $guard($owner, $inner) + DerefMut;);
    };
    ($(#[$attr:meta])* pub struct $guard:ident($owner:ty, $inner:ident) [&];) => {
        guard_struct!($(#[$attr])* pub struct $guard($owner, $inner););
    };
    ($(#[$attr:meta])* pub struct $guard:ident($owner:ty, $inner:ident) + DerefMut;) => {
        guard_struct!($(#[$attr])* pub struct $guard($owner, $inner););

        impl<T: ?Sized> ::std::ops::DerefMut for $guard<'_, T> {
            #[inline]
            fn deref_mut(&mut self) -> &mut T {
                &mut self.shell
            }
        }
    };
    ($(#[$attr:meta])* pub struct $guard:ident($owner:ty, $inner:ident);) => {
        $(#[$attr])*
        pub struct $guard<'a, T: ?Sized> {
            // The shell's `Drop` releases the books first, then drops the inner guard, which
            // unlocks, then records the hold time, outside the critical section.
            pub(super) shell: $crate::shell::Guard<$owner, ::parking_lot::$inner<'a, T>>,
        }

        impl<'a, T: ?Sized> $guard<'a, T> {
            /// A guard over parking_lot's, whose hold is recorded in `token`.
            #[inline]
            pub(super) fn new(
                owner: $owner,
                inner: ::parking_lot::$inner<'a, T>,
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
}

/// A guard family: a lock's guard and its methods, and with `mapped` its `map`s, its mapped
/// guard and theirs, from a spec and the docs, in brackets, in this order: the guard, its
/// accessor, `unlocked`, `unlock_fair`, `unlocked_fair`, `bump`; with `mapped`, then its
/// `map`, `try_map`, `try_map_or_err`, the mapped guard, and the mapped guard's `map`,
/// `try_map`, `try_map_or_err` and `unlock_fair`. Each doc opens with the parking_lot item it
/// wraps. `impl { .. }` adds more methods of the guard, as in [`guard_methods!`]. The guard is
/// `Sync` when `T` is, as parking_lot's (its borrow of the lock alone would ask `T: Send`
/// too); the mapped guard's auto traits are its fields'.
macro_rules! guard_family {
    (
        pub struct $guard:ident($lock:ident) $(+ $mutable:ident)?, $must_use:literal;
        $(mapped $mapped:ident($($r:tt)+), $try_map_or_err:ident;)?
        fn $accessor:ident, unlocked($force:ident, $force_fair:ident, $relock:ident), bump($regrant:path);
        [$(#[$doc:meta])*] [$(#[$owner_doc:meta])*] [$(#[$unlocked_doc:meta])*]
        [$(#[$unlock_fair_doc:meta])*] [$(#[$unlocked_fair_doc:meta])*] [$(#[$bump_doc:meta])*]
        $([$(#[$map_doc:meta])*] [$(#[$try_map_doc:meta])*] [$(#[$try_map_or_err_doc:meta])*]
        [$(#[$mapped_doc:meta])*] [$(#[$mapped_map_doc:meta])*] [$(#[$mapped_try_map_doc:meta])*]
        [$(#[$mapped_try_map_or_err_doc:meta])*] [$(#[$mapped_unlock_fair_doc:meta])*])?
        $(impl { $($more:tt)* })?
    ) => {
        guard_struct! {
            plain
            $(#[$doc])*
            #[clippy::has_significant_drop]
            #[must_use = $must_use]
            pub struct $guard($lock, $guard) $(+ $mutable)?;
        }

        // SAFETY: as parking_lot's guard, which is `Sync` when `T: Sync`: a shared guard gives
        // `&T`, and reaches the lock only while the guard holds it. The token is `Sync`.
        unsafe impl<T: ?Sized + Sync> Sync for $guard<'_, T> {}

        guard_methods! {
            impl $guard($guard) {
                $(#[$owner_doc])* fn $accessor = owner($lock);
                $(#[$unlocked_doc])* fn unlocked = unlocked($force, $relock);
                $(#[$unlock_fair_doc])* fn unlock_fair = unlock_fair();
                $(#[$unlocked_fair_doc])* fn unlocked_fair = unlocked($force_fair, $relock);
                $(#[$bump_doc])* fn bump = bump($regrant);
            }
        }

        $(
            guard_methods! {
                impl $guard($guard) {
                    $(#[$map_doc])* fn map = map($mapped, $($r)+);
                    $(#[$try_map_doc])* fn try_map = try_map($mapped, $($r)+);
                    $(#[$try_map_or_err_doc])* fn try_map_or_err = try_map_or_err($mapped, $($r)+);
                }
            }

            guard_struct! {
                $(#[$mapped_doc])*
                #[clippy::has_significant_drop]
                #[must_use = $must_use]
                pub struct $mapped(&'a ::lockscope_detector::__private::prim::Prim, $mapped) [$($r)+];
            }

            guard_methods! {
                impl $mapped($mapped) {
                    $(#[$mapped_map_doc])* fn map = map($mapped, $($r)+);
                    $(#[$mapped_try_map_doc])* fn try_map = try_map($mapped, $($r)+);
                    $(#[$mapped_try_map_or_err_doc])*
                    fn $try_map_or_err = try_map_or_err($mapped, $($r)+);
                    $(#[$mapped_unlock_fair_doc])* fn unlock_fair = unlock_fair();
                }
            }
        )?

        $(guard_methods! {
            impl $guard($guard) {
                $($more)*
            }
        })?
    };
}

/// A guard's methods, each written once for every guard that has it: the caller lists them
/// as `$(#[doc])* fn name = kind(args);`, in the order the docs show them, where `kind` is:
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
    (impl $guard:ident($inner:ident) {
        $($(#[$doc:meta])* fn $name:ident = $kind:ident $args:tt;)*
    }) => {
        impl<'a, T: ?Sized> $guard<'a, T> {
            $(guard_methods!(@$kind [$(#[$doc])*] $inner $name $args);)*
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
