//! What the three parking_lot lock wrappers share: their acquisitions differ only in names
//! (which of parking_lot's methods to call, which guard to build, which access to record), so
//! [`lock_methods!`] writes each kind of method once and each lock lists its own with their
//! docs.

/// A lock's methods, from a spec and their docs (in brackets, in the order the spec names
/// them; each doc opens with the parking_lot method it wraps), inside `impl Lock { .. }`:
///
/// - `name`: the lock's `name()` (the one lockscope adds) and `prim()`, its primitive;
/// - `acquire name / name_at, try_name, try_name_for, try_name_until -> Guard: acq(Mode),
///   try_acq(Mode)`: parking_lot's blocking method `name` (with `try_name` as the probe's fast
///   path), its `try_` form and its two timed forms, of the same names; the waiting forms are
///   recorded as `acq`, the `try_` form as `try_acq` (`plain`, or a method of the lock that
///   checks for a re-entry); `/ name_at` also writes `name_at(site)`, the same at a given site
///   (the re-lock of a guard's `unlocked`);
/// - `unchecked make_*_guard_unchecked -> Guard: acq(Mode)`: recorded as a `try_` form;
/// - `get(&self)`, `get(&mut self)`, `unsafe get(&self)` then `name -> Type, ..`: parking_lot's
///   methods of those names, passed through (nothing is recorded).
macro_rules! lock_methods {
    (impl $lock:ident {
        $(name [$(#[$name_doc:meta])*];)?
        $(acquire $name:ident $(/ $at:ident)?, $try_name:ident, $for_name:ident, $until_name:ident
            -> $guard:ident: $acq:ident($mode:ident), $try_acq:ident($try_mode:ident)
            [$(#[$doc:meta])*] [$(#[$try_doc:meta])*] [$(#[$for_doc:meta])*]
            [$(#[$until_doc:meta])*];)*
        $(unchecked $unchecked:ident -> $unchecked_guard:ident: $unchecked_acq:ident($unchecked_mode:ident)
            [$(#[$unchecked_doc:meta])*];)*
        $(get(&mut self) $($get_mut:ident $(-> $get_mut_ret:ty)?),+
            $([$(#[$get_mut_doc:meta])*])+;)?
        $(get(&self) $($get:ident $(-> $get_ret:ty)?),+ $([$(#[$get_doc:meta])*])+;)?
        $(unsafe get(&self) $($unsafe_get:ident $(-> $unsafe_get_ret:ty)?),+
            $([$(#[$unsafe_get_doc:meta])*])+;)?
    }) => {
        impl<T: ?Sized> $lock<T> {
            $(
                $(#[$name_doc])*
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
            )?
            $(
                lock_methods!(@blocking [$(#[$doc])*] $name [$($at)?]
                    ($guard: $acq($mode); $try_name, $name) []);
                lock_methods!(@tried [$(#[$try_doc])*] $try_name []
                    ($guard: $try_acq($try_mode); $try_name) []);
                lock_methods!(@timed [$(#[$for_doc])*] $for_name []
                    ($guard: $acq($mode); $try_name, $for_name; timeout: ::std::time::Duration) []);
                lock_methods!(@timed [$(#[$until_doc])*] $until_name []
                    ($guard: $acq($mode); $try_name, $until_name; timeout: ::std::time::Instant) []);
            )*
            $(
                lock_methods!(@unchecked [$(#[$unchecked_doc])*] $unchecked []
                    ($unchecked_guard: $unchecked_acq($unchecked_mode)) []);
            )*
            $($(
                lock_methods!(@get [$(#[$get_mut_doc])*] $get_mut [] (&mut self) [$($get_mut_ret)?]);
            )+)?
            $($(
                lock_methods!(@get [$(#[$get_doc])*] $get [] (&self) [$($get_ret)?]);
            )+)?
            $($(
                lock_methods!(@unsafe get [$(#[$unsafe_get_doc])*] $unsafe_get [] (&self)
                    [$($unsafe_get_ret)?]);
            )+)?
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
            let (inner, token) = $crate::blocking_shell::tried(|| self.prim(), acq, self.inner.$try())?;
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
            $guard::new(self, inner, $crate::probe::try_acquired::<::lockscope_detector::__private::hooks::Threads>(|| self.prim(), acq))
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
        $crate::blocking_shell::acq($site, ::lockscope_detector::__private::hooks::Mode::$mode)
    };
    (@acq $s:ident $site:ident $acq:ident $mode:ident) => {
        $s.$acq($site, ::lockscope_detector::__private::hooks::Mode::$mode)
    };
}

/// The methods of a mutex (lockscope's `Mutex` and `ReentrantMutex`, whose APIs differ only in
/// names), as [`lock_methods!`], from the guard, the acquisition (`plain` or the lock's `acq`),
/// and the docs of `name`, `lock`, `try_lock`, `try_lock_for`, `try_lock_until`,
/// `make_guard_unchecked`, `get_mut`, `is_locked`, `data_ptr`, `force_unlock`,
/// `force_unlock_fair` and `raw`, in that order.
macro_rules! mutex_methods {
    (impl $lock:ident -> $guard:ident: $acq:ident;
        [$(#[$name:meta])*] [$(#[$lock_doc:meta])*] [$(#[$try_lock:meta])*] [$(#[$for:meta])*]
        [$(#[$until:meta])*] [$(#[$unchecked:meta])*] [$(#[$get_mut:meta])*]
        [$(#[$is_locked:meta])*] [$(#[$data_ptr:meta])*] [$(#[$force_unlock:meta])*]
        [$(#[$force_unlock_fair:meta])*] [$(#[$raw:meta])*]
    ) => {
        lock_methods! {
            impl $lock {
                name [$(#[$name])*];
                acquire lock / lock_at, try_lock, try_lock_for, try_lock_until
                    -> $guard: $acq(Exclusive), $acq(Exclusive)
                    [$(#[$lock_doc])*] [$(#[$try_lock])*] [$(#[$for])*] [$(#[$until])*];
                unchecked make_guard_unchecked -> $guard: $acq(Exclusive) [$(#[$unchecked])*];
                get(&mut self) get_mut -> &mut T [$(#[$get_mut])*];
                get(&self) is_locked -> bool, data_ptr -> *mut T
                    [$(#[$is_locked])*] [$(#[$data_ptr])*];
                unsafe get(&self) force_unlock, force_unlock_fair, raw -> &$crate::parking_lot::RawMutex
                    [$(#[$force_unlock])*] [$(#[$force_unlock_fair])*] [$(#[$raw])*];
            }
        }
    };
}
