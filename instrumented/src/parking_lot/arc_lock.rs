//! The `*_arc` acquisitions of parking_lot's `arc_lock` feature (`lock_arc`, `read_arc`, ...):
//! each is its borrowed form, recorded the same way, whose guard an Arc guard then adopts.

use std::sync::Arc;
use std::time::{Duration, Instant};

use super::{
    ArcGuard, ArcMutexGuard, ArcRwLockReadGuard, ArcRwLockUpgradableReadGuard, ArcRwLockWriteGuard,
    Mutex, RawMutex, RawRwLock, RwLock,
};

/// The `*_arc` acquisitions of `$lock`, each its borrowed form adopted by an Arc guard; with
/// `try`, the forms that may give up (`None`).
macro_rules! arc_acquisitions {
    (impl $lock:ident($raw:ident) {
        $($(#[$doc:meta])* $name:ident($($arg:ident: $ty:ty),*) -> $guard:ident = $borrowed:ident;)*
    }) => {
        impl<T: ?Sized> $lock<T> {
            $(
                $(#[$doc])*
                #[inline]
                #[track_caller]
                pub fn $name(self: &Arc<Self>, $($arg: $ty),*) -> $guard<$raw, T> {
                    ArcGuard::adopt(self, self.$borrowed($($arg),*))
                }
            )*
        }
    };
    (impl $lock:ident($raw:ident) try {
        $($(#[$doc:meta])* $name:ident($($arg:ident: $ty:ty),*) -> $guard:ident = $borrowed:ident;)*
    }) => {
        impl<T: ?Sized> $lock<T> {
            $(
                $(#[$doc])*
                #[inline]
                #[track_caller]
                pub fn $name(self: &Arc<Self>, $($arg: $ty),*) -> Option<$guard<$raw, T>> {
                    Some(ArcGuard::adopt(self, self.$borrowed($($arg),*)?))
                }
            )*
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
        lock_arc() -> ArcMutexGuard = lock;
    }
}

arc_acquisitions! {
    impl Mutex(RawMutex) try {
        /// Wrapper for [`parking_lot::Mutex::try_lock_arc`]; see [`try_lock`](Mutex::try_lock).
        ///
        /// ```
        /// use std::sync::Arc;
        /// let m = Arc::new(lockscope::parking_lot::Mutex::new(0));
        /// let g = m.try_lock_arc().unwrap();
        /// assert!(m.try_lock_arc().is_none());
        /// ```
        try_lock_arc() -> ArcMutexGuard = try_lock;
        /// Wrapper for [`parking_lot::Mutex::try_lock_arc_for`]; see
        /// [`try_lock_for`](Mutex::try_lock_for).
        ///
        /// ```
        /// use std::{sync::Arc, time::Duration};
        /// let m = Arc::new(lockscope::parking_lot::Mutex::new(0));
        /// let g = m.lock_arc();
        /// assert!(m.try_lock_arc_for(Duration::from_millis(1)).is_none());
        /// ```
        try_lock_arc_for(timeout: Duration) -> ArcMutexGuard = try_lock_for;
        /// Wrapper for [`parking_lot::Mutex::try_lock_arc_until`]; see
        /// [`try_lock_for`](Mutex::try_lock_for).
        ///
        /// ```
        /// use std::{sync::Arc, time::Instant};
        /// let m = Arc::new(lockscope::parking_lot::Mutex::new(0));
        /// assert!(m.try_lock_arc_until(Instant::now()).is_some());
        /// ```
        try_lock_arc_until(timeout: Instant) -> ArcMutexGuard = try_lock_until;
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
        read_arc() -> ArcRwLockReadGuard = read;
        /// Wrapper for [`parking_lot::RwLock::read_arc_recursive`]; see
        /// [`read_recursive`](RwLock::read_recursive).
        ///
        /// ```
        /// use std::sync::Arc;
        /// let r = Arc::new(lockscope::parking_lot::RwLock::new(1));
        /// let a = r.read_arc();
        /// assert_eq!(*r.read_arc_recursive(), *a);
        /// ```
        read_arc_recursive() -> ArcRwLockReadGuard = read_recursive;
        /// Wrapper for [`parking_lot::RwLock::write_arc`]; see [`write`](RwLock::write).
        ///
        /// ```
        /// use std::sync::Arc;
        /// let r = Arc::new(lockscope::parking_lot::RwLock::new(1));
        /// *r.write_arc() = 2;
        /// assert_eq!(*r.read(), 2);
        /// ```
        write_arc() -> ArcRwLockWriteGuard = write;
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
        upgradable_read_arc() -> ArcRwLockUpgradableReadGuard = upgradable_read;
    }
}

arc_acquisitions! {
    impl RwLock(RawRwLock) try {
        /// Wrapper for [`parking_lot::RwLock::try_read_arc`].
        ///
        /// ```
        /// use std::sync::Arc;
        /// let r = Arc::new(lockscope::parking_lot::RwLock::new(1));
        /// let w = r.write_arc();
        /// assert!(r.try_read_arc().is_none());
        /// ```
        try_read_arc() -> ArcRwLockReadGuard = try_read;
        /// Wrapper for [`parking_lot::RwLock::try_read_arc_for`].
        ///
        /// ```
        /// use std::{sync::Arc, time::Duration};
        /// let r = Arc::new(lockscope::parking_lot::RwLock::new(1));
        /// assert!(r.try_read_arc_for(Duration::from_millis(1)).is_some());
        /// ```
        try_read_arc_for(timeout: Duration) -> ArcRwLockReadGuard = try_read_for;
        /// Wrapper for [`parking_lot::RwLock::try_read_arc_until`].
        ///
        /// ```
        /// use std::{sync::Arc, time::Instant};
        /// let r = Arc::new(lockscope::parking_lot::RwLock::new(1));
        /// assert!(r.try_read_arc_until(Instant::now()).is_some());
        /// ```
        try_read_arc_until(timeout: Instant) -> ArcRwLockReadGuard = try_read_until;
        /// Wrapper for [`parking_lot::RwLock::try_read_recursive_arc`].
        ///
        /// ```
        /// use std::sync::Arc;
        /// let r = Arc::new(lockscope::parking_lot::RwLock::new(1));
        /// assert!(r.try_read_recursive_arc().is_some());
        /// ```
        try_read_recursive_arc() -> ArcRwLockReadGuard = try_read_recursive;
        /// Wrapper for [`parking_lot::RwLock::try_read_arc_recursive_for`].
        ///
        /// ```
        /// use std::{sync::Arc, time::Duration};
        /// let r = Arc::new(lockscope::parking_lot::RwLock::new(1));
        /// assert!(r.try_read_arc_recursive_for(Duration::from_millis(1)).is_some());
        /// ```
        try_read_arc_recursive_for(timeout: Duration) -> ArcRwLockReadGuard = try_read_recursive_for;
        /// Wrapper for [`parking_lot::RwLock::try_read_arc_recursive_until`].
        ///
        /// ```
        /// use std::{sync::Arc, time::Instant};
        /// let r = Arc::new(lockscope::parking_lot::RwLock::new(1));
        /// assert!(r.try_read_arc_recursive_until(Instant::now()).is_some());
        /// ```
        try_read_arc_recursive_until(timeout: Instant) -> ArcRwLockReadGuard = try_read_recursive_until;
        /// Wrapper for [`parking_lot::RwLock::try_write_arc`].
        ///
        /// ```
        /// use std::sync::Arc;
        /// let r = Arc::new(lockscope::parking_lot::RwLock::new(1));
        /// let g = r.read_arc();
        /// assert!(r.try_write_arc().is_none());
        /// ```
        try_write_arc() -> ArcRwLockWriteGuard = try_write;
        /// Wrapper for [`parking_lot::RwLock::try_write_arc_for`].
        ///
        /// ```
        /// use std::{sync::Arc, time::Duration};
        /// let r = Arc::new(lockscope::parking_lot::RwLock::new(1));
        /// assert!(r.try_write_arc_for(Duration::from_millis(1)).is_some());
        /// ```
        try_write_arc_for(timeout: Duration) -> ArcRwLockWriteGuard = try_write_for;
        /// Wrapper for [`parking_lot::RwLock::try_write_arc_until`].
        ///
        /// ```
        /// use std::{sync::Arc, time::Instant};
        /// let r = Arc::new(lockscope::parking_lot::RwLock::new(1));
        /// assert!(r.try_write_arc_until(Instant::now()).is_some());
        /// ```
        try_write_arc_until(timeout: Instant) -> ArcRwLockWriteGuard = try_write_until;
        /// Wrapper for [`parking_lot::RwLock::try_upgradable_read_arc`].
        ///
        /// ```
        /// use std::sync::Arc;
        /// let r = Arc::new(lockscope::parking_lot::RwLock::new(1));
        /// let u = r.upgradable_read_arc();
        /// assert!(r.try_upgradable_read_arc().is_none());
        /// ```
        try_upgradable_read_arc() -> ArcRwLockUpgradableReadGuard = try_upgradable_read;
        /// Wrapper for [`parking_lot::RwLock::try_upgradable_read_arc_for`].
        ///
        /// ```
        /// use std::{sync::Arc, time::Duration};
        /// let r = Arc::new(lockscope::parking_lot::RwLock::new(1));
        /// assert!(r.try_upgradable_read_arc_for(Duration::from_millis(1)).is_some());
        /// ```
        try_upgradable_read_arc_for(timeout: Duration) -> ArcRwLockUpgradableReadGuard = try_upgradable_read_for;
        /// Wrapper for [`parking_lot::RwLock::try_upgradable_read_arc_until`].
        ///
        /// ```
        /// use std::{sync::Arc, time::Instant};
        /// let r = Arc::new(lockscope::parking_lot::RwLock::new(1));
        /// assert!(r.try_upgradable_read_arc_until(Instant::now()).is_some());
        /// ```
        try_upgradable_read_arc_until(timeout: Instant) -> ArcRwLockUpgradableReadGuard = try_upgradable_read_until;
    }
}
