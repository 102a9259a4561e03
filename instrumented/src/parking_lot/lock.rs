//! What the three parking_lot lock wrappers share: their acquisitions differ only in names
//! (which of parking_lot's methods to call, which guard to build, which access to record), so
//! [`lock_methods!`] writes each kind of method once and each lock lists its own with their
//! docs.

/// A lock's methods: the caller lists them as `$(#[doc])* fn name = kind(args);` inside
/// `impl Lock { .. }`, where `kind` is:
///
/// - `blocking(Guard: acq(Mode); try_, block)`: parking_lot's `block`, with `try_` as the
///   probe's fast path, recorded as `acq` (`plain`, or a method of the lock that checks for a
///   re-entry); `fn name / name_at = ..` also writes `name_at(site)`, the same at a given site
///   (the re-lock of a guard's `unlocked`);
/// - `tried(Guard: acq(Mode); try_)`: a `try_` form;
/// - `timed(Guard: acq(Mode); try_, timed; arg: Type)`: a timed form;
/// - `unchecked(Guard: acq(Mode))`: `make_*_guard_unchecked`, recorded as a `try_` form;
/// - `get(&self)`, `get(&mut self)`, `unsafe get(&self)`: parking_lot's method of the same
///   name, passed through (nothing is recorded).
macro_rules! lock_methods {
    (impl $lock:ident {
        $($(#[$doc:meta])* fn $name:ident $(/ $at:ident)? = $($kind:ident)+ ($($args:tt)*) $(-> $ret:ty)?;)*
    }) => {
        impl<T: ?Sized> $lock<T> {
            $(lock_methods!(@$($kind)+ [$(#[$doc])*] $name [$($at)?] ($($args)*) [$($ret)?]);)*
        }
    };
    (@blocking [$(#[$doc:meta])*] $name:ident [] $args:tt []) => {
        $(#[$doc])*
        #[inline]
        #[track_caller]
        pub fn $name(&self) -> lock_methods!(@guard $args) {
            let site = ::std::panic::Location::caller();
            lock_methods!(@block self site $args)
        }
    };
    (@blocking [$(#[$doc:meta])*] $name:ident [$at:ident] $args:tt []) => {
        $(#[$doc])*
        #[inline]
        #[track_caller]
        pub fn $name(&self) -> lock_methods!(@guard $args) {
            self.$at(::std::panic::Location::caller())
        }

        #[doc = concat!("[`", stringify!($name), "`](Self::", stringify!($name), "), recorded at `site` (also the re-lock of `unlocked`).")]
        #[inline(always)]
        pub(super) fn $at(
            &self,
            site: &'static ::std::panic::Location<'static>,
        ) -> lock_methods!(@guard $args) {
            lock_methods!(@block self site $args)
        }
    };
    (@tried [$(#[$doc:meta])*] $name:ident [] ($guard:ident: $acq:ident($mode:ident); $try:ident) []) => {
        $(#[$doc])*
        #[inline]
        #[track_caller]
        pub fn $name(&self) -> Option<$guard<'_, T>> {
            let site = ::std::panic::Location::caller();
            let acq = lock_methods!(@acq self site $acq $mode);
            let (inner, token) = $crate::blocking_shell::tried(self.prim(), acq, self.inner.$try())?;
            Some($guard::new(self, inner, token))
        }
    };
    (@timed [$(#[$doc:meta])*] $name:ident []
        ($guard:ident: $acq:ident($mode:ident); $try:ident, $timed:ident; $arg:ident: $ty:ty) []) => {
        $(#[$doc])*
        #[inline]
        #[track_caller]
        pub fn $name(&self, $arg: $ty) -> Option<$guard<'_, T>> {
            let site = ::std::panic::Location::caller();
            let (inner, token) = $crate::probe::blocking_timed(
                self.prim(),
                lock_methods!(@acq self site $acq $mode),
                || self.inner.$try(),
                || self.inner.$timed($arg),
            )?;
            Some($guard::new(self, inner, token))
        }
    };
    (@unchecked [$(#[$doc:meta])*] $name:ident [] ($guard:ident: $acq:ident($mode:ident)) []) => {
        $(#[$doc])*
        #[inline]
        #[track_caller]
        pub unsafe fn $name(&self) -> $guard<'_, T> {
            let site = ::std::panic::Location::caller();
            // SAFETY: the caller's contract is parking_lot's.
            let inner = unsafe { self.inner.$name() };
            let acq = lock_methods!(@acq self site $acq $mode);
            $guard::new(self, inner, $crate::probe::try_acquired(self.prim(), acq))
        }
    };
    (@get [$(#[$doc:meta])*] $name:ident [] (&self) [$($ret:ty)?]) => {
        $(#[$doc])*
        #[inline]
        pub fn $name(&self) $(-> $ret)? {
            self.inner.$name()
        }
    };
    (@get [$(#[$doc:meta])*] $name:ident [] (&mut self) [$($ret:ty)?]) => {
        $(#[$doc])*
        #[inline]
        pub fn $name(&mut self) $(-> $ret)? {
            self.inner.$name()
        }
    };
    (@unsafe get [$(#[$doc:meta])*] $name:ident [] (&self) [$($ret:ty)?]) => {
        $(#[$doc])*
        #[inline]
        pub unsafe fn $name(&self) $(-> $ret)? {
            // SAFETY: the caller's contract is parking_lot's.
            unsafe { self.inner.$name() }
        }
    };
    // The pieces.
    (@guard ($guard:ident: $($rest:tt)*)) => { $guard<'_, T> };
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
        $crate::blocking_shell::acq($site, ::lockscope_detector::hooks::Mode::$mode)
    };
    (@acq $s:ident $site:ident $acq:ident $mode:ident) => {
        $s.$acq($site, ::lockscope_detector::hooks::Mode::$mode)
    };
}
