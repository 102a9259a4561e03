//! The `*_arc` acquisitions of parking_lot's `arc_lock` feature (`lock_arc`, `read_arc`, ...):
//! each is its borrowed form, recorded the same way, whose guard an Arc guard then adopts.

use std::sync::Arc;
use std::time::{Duration, Instant};

use super::{
    ArcGuard, ArcMutexGuard, ArcRwLockReadGuard, ArcRwLockUpgradableReadGuard, ArcRwLockWriteGuard,
    Mutex, RawMutex, RawRwLock, RwLock,
};

/// The `*_arc` acquisitions of `$lock`, a family per line: the blocking form, its `try_` form
/// and its two timed forms, each its borrowed form (named after `=`) adopted by an Arc guard;
/// their docs follow in brackets, in that order.
macro_rules! arc_acquisitions {
    (impl $lock:ident($raw:ident) {
        $($name:ident, $try_name:ident, $for_name:ident, $until_name:ident
            = $b:ident, $try_b:ident, $for_b:ident, $until_b:ident -> $guard:ident
            [$(#[$doc:meta])*] [$(#[$try_doc:meta])*] [$(#[$for_doc:meta])*]
            [$(#[$until_doc:meta])*];)*
    }) => {
        impl<T: ?Sized> $lock<T> {
            $(
                $(#[$doc])*
                #[inline]
                #[track_caller]
                pub fn $name(self: &Arc<Self>) -> $guard<$raw, T> {
                    ArcGuard::adopt(self, self.$b())
                }

                $(#[$try_doc])*
                #[inline]
                #[track_caller]
                pub fn $try_name(self: &Arc<Self>) -> Option<$guard<$raw, T>> {
                    Some(ArcGuard::adopt(self, self.$try_b()?))
                }

                $(#[$for_doc])*
                #[inline]
                #[track_caller]
                pub fn $for_name(self: &Arc<Self>, timeout: Duration) -> Option<$guard<$raw, T>> {
                    Some(ArcGuard::adopt(self, self.$for_b(timeout)?))
                }

                $(#[$until_doc])*
                #[inline]
                #[track_caller]
                pub fn $until_name(self: &Arc<Self>, timeout: Instant) -> Option<$guard<$raw, T>> {
                    Some(ArcGuard::adopt(self, self.$until_b(timeout)?))
                }
            )*
        }
    };
}

arc_acquisitions! {
    impl Mutex(RawMutex) {
        lock_arc, try_lock_arc, try_lock_arc_for, try_lock_arc_until
            = lock, try_lock, try_lock_for, try_lock_until -> ArcMutexGuard
        [
        /// Wrapper for [`parking_lot::Mutex::lock_arc`]: [`lock`](Mutex::lock), recorded the same
        /// way, with a guard that owns an `Arc` of the mutex.
        ///
        /// ```
        /// use std::sync::Arc;
        /// let m = Arc::new(lockscope::parking_lot::Mutex::new(0));
        /// *m.lock_arc() += 1;
        /// assert_eq!(*m.lock(), 1);
        /// ```
        ] [
        /// Wrapper for [`parking_lot::Mutex::try_lock_arc`]; see [`try_lock`](Mutex::try_lock).
        ///
        /// ```
        /// use std::sync::Arc;
        /// let m = Arc::new(lockscope::parking_lot::Mutex::new(0));
        /// let g = m.try_lock_arc().unwrap();
        /// assert!(m.try_lock_arc().is_none());
        /// ```
        ] [
        /// Wrapper for [`parking_lot::Mutex::try_lock_arc_for`]; see
        /// [`try_lock_for`](Mutex::try_lock_for).
        ///
        /// ```
        /// use std::{sync::Arc, time::Duration};
        /// let m = Arc::new(lockscope::parking_lot::Mutex::new(0));
        /// let g = m.lock_arc();
        /// assert!(m.try_lock_arc_for(Duration::from_millis(1)).is_none());
        /// ```
        ] [
        /// Wrapper for [`parking_lot::Mutex::try_lock_arc_until`]; see
        /// [`try_lock_for`](Mutex::try_lock_for).
        ///
        /// ```
        /// use std::{sync::Arc, time::Instant};
        /// let m = Arc::new(lockscope::parking_lot::Mutex::new(0));
        /// assert!(m.try_lock_arc_until(Instant::now()).is_some());
        /// ```
        ];
    }
}

arc_acquisitions! {
    impl RwLock(RawRwLock) {
        read_arc, try_read_arc, try_read_arc_for, try_read_arc_until
            = read, try_read, try_read_for, try_read_until -> ArcRwLockReadGuard
        [
        /// Wrapper for [`parking_lot::RwLock::read_arc`]; see [`read`](RwLock::read).
        ///
        /// ```
        /// use std::sync::Arc;
        /// let r = Arc::new(lockscope::parking_lot::RwLock::new(1));
        /// assert_eq!(*r.read_arc(), 1);
        /// ```
        ] [
        /// Wrapper for [`parking_lot::RwLock::try_read_arc`].
        ///
        /// ```
        /// use std::sync::Arc;
        /// let r = Arc::new(lockscope::parking_lot::RwLock::new(1));
        /// let w = r.write_arc();
        /// assert!(r.try_read_arc().is_none());
        /// ```
        ] [
        /// Wrapper for [`parking_lot::RwLock::try_read_arc_for`].
        ///
        /// ```
        /// use std::{sync::Arc, time::Duration};
        /// let r = Arc::new(lockscope::parking_lot::RwLock::new(1));
        /// assert!(r.try_read_arc_for(Duration::from_millis(1)).is_some());
        /// ```
        ] [
        /// Wrapper for [`parking_lot::RwLock::try_read_arc_until`].
        ///
        /// ```
        /// use std::{sync::Arc, time::Instant};
        /// let r = Arc::new(lockscope::parking_lot::RwLock::new(1));
        /// assert!(r.try_read_arc_until(Instant::now()).is_some());
        /// ```
        ];
        read_arc_recursive, try_read_recursive_arc, try_read_arc_recursive_for, try_read_arc_recursive_until
            = read_recursive, try_read_recursive, try_read_recursive_for, try_read_recursive_until -> ArcRwLockReadGuard
        [
        /// Wrapper for [`parking_lot::RwLock::read_arc_recursive`]; see
        /// [`read_recursive`](RwLock::read_recursive).
        ///
        /// ```
        /// use std::sync::Arc;
        /// let r = Arc::new(lockscope::parking_lot::RwLock::new(1));
        /// let a = r.read_arc();
        /// assert_eq!(*r.read_arc_recursive(), *a);
        /// ```
        ] [
        /// Wrapper for [`parking_lot::RwLock::try_read_recursive_arc`].
        ///
        /// ```
        /// use std::sync::Arc;
        /// let r = Arc::new(lockscope::parking_lot::RwLock::new(1));
        /// assert!(r.try_read_recursive_arc().is_some());
        /// ```
        ] [
        /// Wrapper for [`parking_lot::RwLock::try_read_arc_recursive_for`].
        ///
        /// ```
        /// use std::{sync::Arc, time::Duration};
        /// let r = Arc::new(lockscope::parking_lot::RwLock::new(1));
        /// assert!(r.try_read_arc_recursive_for(Duration::from_millis(1)).is_some());
        /// ```
        ] [
        /// Wrapper for [`parking_lot::RwLock::try_read_arc_recursive_until`].
        ///
        /// ```
        /// use std::{sync::Arc, time::Instant};
        /// let r = Arc::new(lockscope::parking_lot::RwLock::new(1));
        /// assert!(r.try_read_arc_recursive_until(Instant::now()).is_some());
        /// ```
        ];
        write_arc, try_write_arc, try_write_arc_for, try_write_arc_until
            = write, try_write, try_write_for, try_write_until -> ArcRwLockWriteGuard
        [
        /// Wrapper for [`parking_lot::RwLock::write_arc`]; see [`write`](RwLock::write).
        ///
        /// ```
        /// use std::sync::Arc;
        /// let r = Arc::new(lockscope::parking_lot::RwLock::new(1));
        /// *r.write_arc() = 2;
        /// assert_eq!(*r.read(), 2);
        /// ```
        ] [
        /// Wrapper for [`parking_lot::RwLock::try_write_arc`].
        ///
        /// ```
        /// use std::sync::Arc;
        /// let r = Arc::new(lockscope::parking_lot::RwLock::new(1));
        /// let g = r.read_arc();
        /// assert!(r.try_write_arc().is_none());
        /// ```
        ] [
        /// Wrapper for [`parking_lot::RwLock::try_write_arc_for`].
        ///
        /// ```
        /// use std::{sync::Arc, time::Duration};
        /// let r = Arc::new(lockscope::parking_lot::RwLock::new(1));
        /// assert!(r.try_write_arc_for(Duration::from_millis(1)).is_some());
        /// ```
        ] [
        /// Wrapper for [`parking_lot::RwLock::try_write_arc_until`].
        ///
        /// ```
        /// use std::{sync::Arc, time::Instant};
        /// let r = Arc::new(lockscope::parking_lot::RwLock::new(1));
        /// assert!(r.try_write_arc_until(Instant::now()).is_some());
        /// ```
        ];
        upgradable_read_arc, try_upgradable_read_arc, try_upgradable_read_arc_for, try_upgradable_read_arc_until
            = upgradable_read, try_upgradable_read, try_upgradable_read_for, try_upgradable_read_until -> ArcRwLockUpgradableReadGuard
        [
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
        ] [
        /// Wrapper for [`parking_lot::RwLock::try_upgradable_read_arc`].
        ///
        /// ```
        /// use std::sync::Arc;
        /// let r = Arc::new(lockscope::parking_lot::RwLock::new(1));
        /// let u = r.upgradable_read_arc();
        /// assert!(r.try_upgradable_read_arc().is_none());
        /// ```
        ] [
        /// Wrapper for [`parking_lot::RwLock::try_upgradable_read_arc_for`].
        ///
        /// ```
        /// use std::{sync::Arc, time::Duration};
        /// let r = Arc::new(lockscope::parking_lot::RwLock::new(1));
        /// assert!(r.try_upgradable_read_arc_for(Duration::from_millis(1)).is_some());
        /// ```
        ] [
        /// Wrapper for [`parking_lot::RwLock::try_upgradable_read_arc_until`].
        ///
        /// ```
        /// use std::{sync::Arc, time::Instant};
        /// let r = Arc::new(lockscope::parking_lot::RwLock::new(1));
        /// assert!(r.try_upgradable_read_arc_until(Instant::now()).is_some());
        /// ```
        ];
    }
}
