//! The `*_arc` acquisitions of parking_lot's `arc_lock` feature (`lock_arc`, `read_arc`, ...):
//! each is its borrowed form, recorded the same way, whose guard an Arc guard then adopts.

use std::sync::Arc;
use std::time::{Duration, Instant};

use super::{
    ArcGuard, ArcMutexGuard, ArcRwLockReadGuard, ArcRwLockUpgradableReadGuard, ArcRwLockWriteGuard,
    Mutex, RawMutex, RawRwLock, RwLock,
};

/// The `*_arc` acquisitions of `$lock`, each listed with its docs as `fn name =
/// adopt(borrowed) -> Guard;` (the blocking form), `adopt_some(borrowed)` (the `try_` form) or
/// `adopt_some(borrowed; timeout: Type)` (a timed one): the borrowed form `borrowed`, whose
/// guard an Arc guard adopts.
macro_rules! arc_acquisitions {
    (impl $lock:ident($raw:ident) {
        $($(#[$doc:meta])* fn $name:ident = $kind:ident $args:tt -> $guard:ident;)*
    }) => {
        impl<T: ?Sized> $lock<T> {
            $(arc_acquisitions!(@$kind [$(#[$doc])*] $name $args -> $guard<$raw, T>);)*
        }
    };
    (@adopt [$(#[$doc:meta])*] $name:ident ($b:ident) -> $guard:ty) => {
        $(#[$doc])*
        #[inline]
        #[track_caller]
        pub fn $name(self: &Arc<Self>) -> $guard {
            ArcGuard::adopt(self, self.$b())
        }
    };
    (@adopt_some [$(#[$doc:meta])*] $name:ident ($b:ident $(; $arg:ident: $ty:ty)?) -> $guard:ty) => {
        $(#[$doc])*
        #[inline]
        #[track_caller]
        pub fn $name(self: &Arc<Self> $(, $arg: $ty)?) -> Option<$guard> {
            Some(ArcGuard::adopt(self, self.$b($($arg)?)?))
        }
    };
}

arc_acquisitions! {
    impl Mutex(RawMutex) {
        /// Wrapper for [`parking_lot::Mutex::lock_arc`]: [`lock`](Mutex::lock), recorded the same
        /// way, with a guard that owns an `Arc` of the mutex.
        ///
        /// ```
        /// use std::sync::Arc;
        /// let m = Arc::new(lockscope::parking_lot::Mutex::new(0));
        /// *m.lock_arc() += 1;
        /// assert_eq!(*m.lock(), 1);
        /// ```
        fn lock_arc = adopt(lock) -> ArcMutexGuard;

        /// Wrapper for [`parking_lot::Mutex::try_lock_arc`]; see [`try_lock`](Mutex::try_lock).
        ///
        /// ```
        /// use std::sync::Arc;
        /// let m = Arc::new(lockscope::parking_lot::Mutex::new(0));
        /// let g = m.try_lock_arc().unwrap();
        /// assert!(m.try_lock_arc().is_none());
        /// ```
        fn try_lock_arc = adopt_some(try_lock) -> ArcMutexGuard;

        /// Wrapper for [`parking_lot::Mutex::try_lock_arc_for`]; see
        /// [`try_lock_for`](Mutex::try_lock_for).
        ///
        /// ```
        /// use std::{sync::Arc, time::Duration};
        /// let m = Arc::new(lockscope::parking_lot::Mutex::new(0));
        /// let g = m.lock_arc();
        /// assert!(m.try_lock_arc_for(Duration::from_millis(1)).is_none());
        /// ```
        fn try_lock_arc_for = adopt_some(try_lock_for; timeout: Duration) -> ArcMutexGuard;

        /// Wrapper for [`parking_lot::Mutex::try_lock_arc_until`]; see
        /// [`try_lock_for`](Mutex::try_lock_for).
        ///
        /// ```
        /// use std::{sync::Arc, time::Instant};
        /// let m = Arc::new(lockscope::parking_lot::Mutex::new(0));
        /// assert!(m.try_lock_arc_until(Instant::now()).is_some());
        /// ```
        fn try_lock_arc_until = adopt_some(try_lock_until; timeout: Instant) -> ArcMutexGuard;
    }
}

arc_acquisitions! {
    impl RwLock(RawRwLock) {
        /// Wrapper for [`parking_lot::RwLock::read_arc`]; see [`read`](RwLock::read).
        ///
        /// ```
        /// use std::sync::Arc;
        /// let r = Arc::new(lockscope::parking_lot::RwLock::new(1));
        /// assert_eq!(*r.read_arc(), 1);
        /// ```
        fn read_arc = adopt(read) -> ArcRwLockReadGuard;

        /// Wrapper for [`parking_lot::RwLock::try_read_arc`].
        ///
        /// ```
        /// use std::sync::Arc;
        /// let r = Arc::new(lockscope::parking_lot::RwLock::new(1));
        /// let w = r.write_arc();
        /// assert!(r.try_read_arc().is_none());
        /// ```
        fn try_read_arc = adopt_some(try_read) -> ArcRwLockReadGuard;

        /// Wrapper for [`parking_lot::RwLock::try_read_arc_for`].
        ///
        /// ```
        /// use std::{sync::Arc, time::Duration};
        /// let r = Arc::new(lockscope::parking_lot::RwLock::new(1));
        /// assert!(r.try_read_arc_for(Duration::from_millis(1)).is_some());
        /// ```
        fn try_read_arc_for = adopt_some(try_read_for; timeout: Duration) -> ArcRwLockReadGuard;

        /// Wrapper for [`parking_lot::RwLock::try_read_arc_until`].
        ///
        /// ```
        /// use std::{sync::Arc, time::Instant};
        /// let r = Arc::new(lockscope::parking_lot::RwLock::new(1));
        /// assert!(r.try_read_arc_until(Instant::now()).is_some());
        /// ```
        fn try_read_arc_until = adopt_some(try_read_until; timeout: Instant) -> ArcRwLockReadGuard;

        /// Wrapper for [`parking_lot::RwLock::read_arc_recursive`]; see
        /// [`read_recursive`](RwLock::read_recursive).
        ///
        /// ```
        /// use std::sync::Arc;
        /// let r = Arc::new(lockscope::parking_lot::RwLock::new(1));
        /// let a = r.read_arc();
        /// assert_eq!(*r.read_arc_recursive(), *a);
        /// ```
        fn read_arc_recursive = adopt(read_recursive) -> ArcRwLockReadGuard;

        /// Wrapper for [`parking_lot::RwLock::try_read_recursive_arc`].
        ///
        /// ```
        /// use std::sync::Arc;
        /// let r = Arc::new(lockscope::parking_lot::RwLock::new(1));
        /// assert!(r.try_read_recursive_arc().is_some());
        /// ```
        fn try_read_recursive_arc = adopt_some(try_read_recursive) -> ArcRwLockReadGuard;

        /// Wrapper for [`parking_lot::RwLock::try_read_arc_recursive_for`].
        ///
        /// ```
        /// use std::{sync::Arc, time::Duration};
        /// let r = Arc::new(lockscope::parking_lot::RwLock::new(1));
        /// assert!(r.try_read_arc_recursive_for(Duration::from_millis(1)).is_some());
        /// ```
        fn try_read_arc_recursive_for = adopt_some(try_read_recursive_for; timeout: Duration) -> ArcRwLockReadGuard;

        /// Wrapper for [`parking_lot::RwLock::try_read_arc_recursive_until`].
        ///
        /// ```
        /// use std::{sync::Arc, time::Instant};
        /// let r = Arc::new(lockscope::parking_lot::RwLock::new(1));
        /// assert!(r.try_read_arc_recursive_until(Instant::now()).is_some());
        /// ```
        fn try_read_arc_recursive_until = adopt_some(try_read_recursive_until; timeout: Instant) -> ArcRwLockReadGuard;

        /// Wrapper for [`parking_lot::RwLock::write_arc`]; see [`write`](RwLock::write).
        ///
        /// ```
        /// use std::sync::Arc;
        /// let r = Arc::new(lockscope::parking_lot::RwLock::new(1));
        /// *r.write_arc() = 2;
        /// assert_eq!(*r.read(), 2);
        /// ```
        fn write_arc = adopt(write) -> ArcRwLockWriteGuard;

        /// Wrapper for [`parking_lot::RwLock::try_write_arc`].
        ///
        /// ```
        /// use std::sync::Arc;
        /// let r = Arc::new(lockscope::parking_lot::RwLock::new(1));
        /// let g = r.read_arc();
        /// assert!(r.try_write_arc().is_none());
        /// ```
        fn try_write_arc = adopt_some(try_write) -> ArcRwLockWriteGuard;

        /// Wrapper for [`parking_lot::RwLock::try_write_arc_for`].
        ///
        /// ```
        /// use std::{sync::Arc, time::Duration};
        /// let r = Arc::new(lockscope::parking_lot::RwLock::new(1));
        /// assert!(r.try_write_arc_for(Duration::from_millis(1)).is_some());
        /// ```
        fn try_write_arc_for = adopt_some(try_write_for; timeout: Duration) -> ArcRwLockWriteGuard;

        /// Wrapper for [`parking_lot::RwLock::try_write_arc_until`].
        ///
        /// ```
        /// use std::{sync::Arc, time::Instant};
        /// let r = Arc::new(lockscope::parking_lot::RwLock::new(1));
        /// assert!(r.try_write_arc_until(Instant::now()).is_some());
        /// ```
        fn try_write_arc_until = adopt_some(try_write_until; timeout: Instant) -> ArcRwLockWriteGuard;

        /// Wrapper for [`parking_lot::RwLock::upgradable_read_arc`]; see
        /// [`upgradable_read`](RwLock::upgradable_read).
        ///
        /// ```
        /// use std::sync::Arc;
        /// let r = Arc::new(lockscope::parking_lot::RwLock::new(1));
        /// let u = r.upgradable_read_arc();
        /// assert!(r.try_upgradable_read().is_none());
        /// assert_eq!(*r.read(), *u);
        /// ```
        fn upgradable_read_arc = adopt(upgradable_read) -> ArcRwLockUpgradableReadGuard;

        /// Wrapper for [`parking_lot::RwLock::try_upgradable_read_arc`].
        ///
        /// ```
        /// use std::sync::Arc;
        /// let r = Arc::new(lockscope::parking_lot::RwLock::new(1));
        /// let u = r.upgradable_read_arc();
        /// assert!(r.try_upgradable_read_arc().is_none());
        /// ```
        fn try_upgradable_read_arc = adopt_some(try_upgradable_read) -> ArcRwLockUpgradableReadGuard;

        /// Wrapper for [`parking_lot::RwLock::try_upgradable_read_arc_for`].
        ///
        /// ```
        /// use std::{sync::Arc, time::Duration};
        /// let r = Arc::new(lockscope::parking_lot::RwLock::new(1));
        /// assert!(r.try_upgradable_read_arc_for(Duration::from_millis(1)).is_some());
        /// ```
        fn try_upgradable_read_arc_for = adopt_some(try_upgradable_read_for; timeout: Duration) -> ArcRwLockUpgradableReadGuard;

        /// Wrapper for [`parking_lot::RwLock::try_upgradable_read_arc_until`].
        ///
        /// ```
        /// use std::{sync::Arc, time::Instant};
        /// let r = Arc::new(lockscope::parking_lot::RwLock::new(1));
        /// assert!(r.try_upgradable_read_arc_until(Instant::now()).is_some());
        /// ```
        fn try_upgradable_read_arc_until = adopt_some(try_upgradable_read_until; timeout: Instant) -> ArcRwLockUpgradableReadGuard;
    }
}
