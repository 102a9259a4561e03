//! [`RwLockReadGuard`] and [`MappedRwLockReadGuard`].

use super::guard::bump_shared;
use super::rwlock::RwLock;

guard_struct! {
    /// Wrapper for [`parking_lot::RwLockReadGuard`]: shared access until it drops.
    ///
    /// ```
    /// use lockscope::parking_lot::{RwLock, RwLockReadGuard};
    /// let r = RwLock::new(1);
    /// let g: RwLockReadGuard<'_, i32> = r.read();
    /// assert_eq!(*g, 1);
    /// ```
    #[must_use = "if unused the RwLock will immediately unlock"]
    pub struct RwLockReadGuard for RwLock;
}

guard_methods! {
    impl RwLockReadGuard {
        /// Wrapper for [`parking_lot::RwLockReadGuard::rwlock`].
        ///
        /// ```
        /// use lockscope::parking_lot::{RwLock, RwLockReadGuard};
        /// let r = RwLock::new(());
        /// let g = r.read();
        /// assert!(std::ptr::eq(RwLockReadGuard::rwlock(&g), &r));
        /// ```
        fn rwlock = owner(RwLock);

        /// Wrapper for [`parking_lot::RwLockReadGuard::unlocked`]. lockscope records the release
        /// and the re-lock (a plain `read`, as parking_lot's) at this call's site.
        ///
        /// ```
        /// use lockscope::parking_lot::{RwLock, RwLockReadGuard};
        /// let r = RwLock::new(0);
        /// let mut g = r.read();
        /// RwLockReadGuard::unlocked(&mut g, || *r.write() += 1);
        /// assert_eq!(*g, 1);
        /// ```
        fn unlocked = unlocked(force_unlock_read, read_at);

        /// Wrapper for [`parking_lot::RwLockReadGuard::unlock_fair`].
        ///
        /// ```
        /// use lockscope::parking_lot::{RwLock, RwLockReadGuard};
        /// let r = RwLock::new(());
        /// RwLockReadGuard::unlock_fair(r.read());
        /// assert!(!r.is_locked());
        /// ```
        fn unlock_fair = unlock_fair();

        /// Wrapper for [`parking_lot::RwLockReadGuard::unlocked_fair`]; see
        /// [`unlocked`](RwLockReadGuard::unlocked).
        ///
        /// ```
        /// use lockscope::parking_lot::{RwLock, RwLockReadGuard};
        /// let r = RwLock::new(0);
        /// let mut g = r.read();
        /// RwLockReadGuard::unlocked_fair(&mut g, || *r.write() += 1);
        /// assert_eq!(*g, 1);
        /// ```
        fn unlocked_fair = unlocked(force_unlock_read_fair, read_at);

        /// Wrapper for [`parking_lot::RwLockReadGuard::bump`]; lockscope records a release and a
        /// new read hold at this call's site.
        ///
        /// ```
        /// use lockscope::parking_lot::{RwLock, RwLockReadGuard};
        /// let r = RwLock::new(());
        /// let mut g = r.read();
        /// RwLockReadGuard::bump(&mut g);
        /// ```
        fn bump = bump(bump_shared);

        /// Wrapper for [`parking_lot::RwLockReadGuard::map`].
        ///
        /// ```
        /// use lockscope::parking_lot::{RwLock, RwLockReadGuard};
        /// let r = RwLock::new([1, 2]);
        /// assert_eq!(*RwLockReadGuard::map(r.read(), |a| &a[0]), 1);
        /// ```
        fn map = map(MappedRwLockReadGuard, &);

        /// Wrapper for [`parking_lot::RwLockReadGuard::try_map`].
        ///
        /// # Errors
        ///
        /// Gives the original guard back when `f` returns `None`.
        ///
        /// ```
        /// use lockscope::parking_lot::{RwLock, RwLockReadGuard};
        /// let r = RwLock::new(vec![1]);
        /// assert!(RwLockReadGuard::try_map(r.read(), |v| v.get(3)).is_err());
        /// ```
        fn try_map = try_map(MappedRwLockReadGuard, &);

        /// Wrapper for [`parking_lot::RwLockReadGuard::try_map_or_err`].
        ///
        /// # Errors
        ///
        /// Gives the original guard back, with `f`'s error, when `f` fails.
        ///
        /// ```
        /// use lockscope::parking_lot::{RwLock, RwLockReadGuard};
        /// let r = RwLock::new(vec![1]);
        /// assert!(RwLockReadGuard::try_map_or_err(r.read(), |v| v.get(3).ok_or(())).is_err());
        /// ```
        fn try_map_or_err = try_map_or_err(MappedRwLockReadGuard, &);
    }
}

guard_struct! {
    /// Wrapper for [`parking_lot::MappedRwLockReadGuard`], made by [`RwLockReadGuard::map`].
    ///
    /// ```
    /// use lockscope::parking_lot::{RwLock, RwLockReadGuard};
    /// let r = RwLock::new((1, 2));
    /// assert_eq!(*RwLockReadGuard::map(r.read(), |t| &t.1), 2);
    /// ```
    #[must_use = "if unused the RwLock will immediately unlock"]
    pub struct MappedRwLockReadGuard [&];
}

guard_methods! {
    impl MappedRwLockReadGuard {
        /// Wrapper for [`parking_lot::MappedRwLockReadGuard::map`].
        ///
        /// ```
        /// use lockscope::parking_lot::{MappedRwLockReadGuard, RwLock, RwLockReadGuard};
        /// let r = RwLock::new(((1, 2), 3));
        /// let pair = RwLockReadGuard::map(r.read(), |t| &t.0);
        /// assert_eq!(*MappedRwLockReadGuard::map(pair, |p| &p.0), 1);
        /// ```
        fn map = map(MappedRwLockReadGuard, &);

        /// Wrapper for [`parking_lot::MappedRwLockReadGuard::try_map`].
        ///
        /// # Errors
        ///
        /// Gives the original guard back when `f` returns `None`.
        ///
        /// ```
        /// use lockscope::parking_lot::{MappedRwLockReadGuard, RwLock, RwLockReadGuard};
        /// let r = RwLock::new(vec![vec![1]]);
        /// let row = RwLockReadGuard::map(r.read(), |v| &v[0]);
        /// assert!(MappedRwLockReadGuard::try_map(row, |r| r.get(5)).is_err());
        /// ```
        fn try_map = try_map(MappedRwLockReadGuard, &);

        /// Wrapper for [`parking_lot::MappedRwLockReadGuard::try_map_or_else`] (parking_lot's
        /// name for this guard's `try_map_or_err`).
        ///
        /// # Errors
        ///
        /// Gives the original guard back, with `f`'s error, when `f` fails.
        ///
        /// ```
        /// use lockscope::parking_lot::{MappedRwLockReadGuard, RwLock, RwLockReadGuard};
        /// let r = RwLock::new(vec![vec![1]]);
        /// let row = RwLockReadGuard::map(r.read(), |v| &v[0]);
        /// assert!(MappedRwLockReadGuard::try_map_or_else(row, |r| r.get(5).ok_or(())).is_err());
        /// ```
        fn try_map_or_else = try_map_or_err(MappedRwLockReadGuard, &);

        /// Wrapper for [`parking_lot::MappedRwLockReadGuard::unlock_fair`].
        ///
        /// ```
        /// use lockscope::parking_lot::{MappedRwLockReadGuard, RwLock, RwLockReadGuard};
        /// let r = RwLock::new((1, 2));
        /// MappedRwLockReadGuard::unlock_fair(RwLockReadGuard::map(r.read(), |t| &t.0));
        /// assert!(!r.is_locked());
        /// ```
        fn unlock_fair = unlock_fair();
    }
}
