//! What the three parking_lot lock wrappers share: their acquisitions differ only in names
//! (which of parking_lot's methods to call, which guard to build, which access to record), so
//! [`lock_methods!`] writes each kind of method once and each lock lists its own, each with its
//! docs.

/// A lock's methods, listed inside `impl Lock { .. }` as `$(#[doc])* (unsafe) fn name =
/// kind(args);`, each with its docs (which open with the parking_lot method it wraps), where
/// `kind` is:
///
/// - `name()`: the lock's `name()` (the one lockscope adds), and `prim()`, its primitive;
/// - `blocking(Guard: acq(Mode); try_name)`: parking_lot's blocking method `name`, with
///   `try_name` as the probe's fast path; `blocking_at(name_at; ..)` also writes
///   `name_at(site)`, the same at a given site (the re-lock of a guard's `unlocked`);
/// - `tried(Guard: acq(Mode))`: parking_lot's `try_` form `name`;
/// - `timed(Guard: acq(Mode); try_name; timeout: Type)`: its timed form `name`;
/// - `unchecked(Guard: acq(Mode))`: `make_*_guard_unchecked`, recorded as a `try_` form;
/// - `get(&self -> Type)`, `get(&mut self -> Type)` (`-> Type` when it returns something):
///   parking_lot's method, passed through (nothing is recorded); `unsafe fn` for parking_lot's
///   unsafe ones (`force_unlock`, `raw`, ...).
///
/// `acq` is `plain` or a method of the lock that checks for a re-entry: an acquisition is
/// recorded as what it returns.
macro_rules! lock_methods {
    (impl $lock:ident {
        $($(#[$doc:meta])* $($sig:ident)+ = $kind:ident $args:tt;)*
    }) => {
        impl<T: ?Sized> $lock<T> {
            $(lock_methods!(@$kind [$(#[$doc])*] [$($sig)+] $args);)*
        }
    };
    (@name [$(#[$doc:meta])*] [fn name] ()) => {
        $(#[$doc])*
        pub fn name(&self) -> &str {
            self.cell.get().name()
        }

        /// The detector's record of this lock.
        #[inline]
        pub(super) fn prim(&self) -> &::lockscope_detector::__private::prim::Prim {
            self.cell.get()
        }

        /// [`prim`](Self::prim), without the check of a lazy registration.
        ///
        /// # Safety
        ///
        /// `prim` was called before on this lock.
        #[inline]
        pub(super) unsafe fn prim_registered(&self) -> &::lockscope_detector::__private::prim::Prim {
            // SAFETY: as the caller promises.
            unsafe { self.cell.get_registered() }
        }
    };
    (@blocking [$(#[$doc:meta])*] [fn $name:ident] ($guard:ident: $acq:ident($mode:ident); $try:ident)) => {
        $(#[$doc])*
        #[inline]
        #[track_caller]
        pub fn $name(&self) -> $guard<'_, T> {
            let site = ::std::panic::Location::caller();
            lock_methods!(@block self site ($guard: $acq($mode); $try, $name))
        }
    };
    (@blocking_at [$(#[$doc:meta])*] [fn $name:ident]
        ($at:ident; $guard:ident: $acq:ident($mode:ident); $try:ident)) => {
        $(#[$doc])*
        #[inline]
        #[track_caller]
        pub fn $name(&self) -> $guard<'_, T> {
            self.$at(::std::panic::Location::caller())
        }

        #[doc = concat!("[`", stringify!($name), "`](Self::", stringify!($name), "), recorded at `site` (also the re-lock of `unlocked`).")]
        #[inline(always)]
        pub(super) fn $at(&self, site: &'static ::std::panic::Location<'static>) -> $guard<'_, T> {
            lock_methods!(@block self site ($guard: $acq($mode); $try, $name))
        }
    };
    (@tried [$(#[$doc:meta])*] [fn $name:ident] ($guard:ident: $acq:ident($mode:ident))) => {
        $(#[$doc])*
        #[inline]
        #[track_caller]
        pub fn $name(&self) -> Option<$guard<'_, T>> {
            let site = ::std::panic::Location::caller();
            let acq = lock_methods!(@acq self site $acq $mode);
            let (inner, token) = $crate::blocking_shell::tried(|| self.prim(), acq, self.inner.$name())?;
            Some($guard::new(self, inner, token))
        }
    };
    (@timed [$(#[$doc:meta])*] [fn $name:ident]
        ($guard:ident: $acq:ident($mode:ident); $try:ident; $arg:ident: $ty:ty)) => {
        $(#[$doc])*
        #[inline]
        #[track_caller]
        pub fn $name(&self, $arg: $ty) -> Option<$guard<'_, T>> {
            let site = ::std::panic::Location::caller();
            let (inner, token) = $crate::probe::blocking_timed(
                self.prim(),
                lock_methods!(@acq self site $acq $mode),
                || self.inner.$try(),
                || self.inner.$name($arg),
            )?;
            Some($guard::new(self, inner, token))
        }
    };
    (@unchecked [$(#[$doc:meta])*] [unsafe fn $name:ident] ($guard:ident: $acq:ident($mode:ident))) => {
        $(#[$doc])*
        #[inline]
        #[track_caller]
        pub unsafe fn $name(&self) -> $guard<'_, T> {
            let site = ::std::panic::Location::caller();
            // SAFETY: the caller's contract is parking_lot's.
            let inner = unsafe { self.inner.$name() };
            let acq = lock_methods!(@acq self site $acq $mode);
            $guard::new(self, inner, $crate::probe::try_acquired::<::lockscope_detector::__private::hooks::Threads>(|| self.prim(), acq))
        }
    };
    (@get [$(#[$doc:meta])*] [fn $name:ident] (&self $(-> $ret:ty)?)) => {
        $(#[$doc])*
        #[inline]
        pub fn $name(&self) $(-> $ret)? {
            self.inner.$name()
        }
    };
    (@get [$(#[$doc:meta])*] [fn $name:ident] (&mut self $(-> $ret:ty)?)) => {
        $(#[$doc])*
        #[inline]
        pub fn $name(&mut self) $(-> $ret)? {
            self.inner.$name()
        }
    };
    (@get [$(#[$doc:meta])*] [unsafe fn $name:ident] (&self $(-> $ret:ty)?)) => {
        $(#[$doc])*
        #[inline]
        pub unsafe fn $name(&self) $(-> $ret)? {
            // SAFETY: the caller's contract is parking_lot's.
            unsafe { self.inner.$name() }
        }
    };
    // The pieces.
    (@block $s:ident $site:ident ($guard:ident: $acq:ident($mode:ident); $try:ident, $block:ident)) => {{
        let (inner, token) = $crate::blocking_shell::blocking(
            || $s.prim(),
            lock_methods!(@acq $s $site $acq $mode),
            || $s.inner.$try(),
            || $s.inner.$block(),
        );
        $guard::new($s, inner, token)
    }};
    (@acq $s:ident $site:ident plain $mode:ident) => {
        $crate::blocking_shell::acq($site, ::lockscope_detector::__private::hooks::Mode::$mode)
    };
    (@acq $s:ident $site:ident $acq:ident $mode:ident) => {
        $s.$acq($site, ::lockscope_detector::__private::hooks::Mode::$mode)
    };
}
