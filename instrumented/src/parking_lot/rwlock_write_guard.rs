//! [`RwLockWriteGuard`] and [`MappedRwLockWriteGuard`].

use super::guard::bump_exclusive;
use super::rwlock::RwLock;
use super::rwlock_read_guard::RwLockReadGuard;
use super::rwlock_upgradable_guard::RwLockUpgradableReadGuard;

guard_struct! {
    /// Wrapper for [`parking_lot::RwLockWriteGuard`]: exclusive access until it drops.
    ///
    /// ```
    /// use lockscope::parking_lot::{RwLock, RwLockWriteGuard};
    /// let r = RwLock::new(1);
    /// let mut g: RwLockWriteGuard<'_, i32> = r.write();
    /// *g += 1;
    /// ```
    #[must_use = "if unused the RwLock will immediately unlock"]
    pub struct RwLockWriteGuard for RwLock + DerefMut;
}

guard_methods! {
    impl RwLockWriteGuard {
        /// Wrapper for [`parking_lot::RwLockWriteGuard::rwlock`].
        ///
        /// ```
        /// use lockscope::parking_lot::{RwLock, RwLockWriteGuard};
        /// let r = RwLock::new(());
        /// let g = r.write();
        /// assert!(std::ptr::eq(RwLockWriteGuard::rwlock(&g), &r));
        /// ```
        fn rwlock = owner(RwLock);

        /// Wrapper for [`parking_lot::RwLockWriteGuard::unlocked`]. lockscope records the release
        /// and the re-lock (a write) at this call's site.
        ///
        /// ```
        /// use lockscope::parking_lot::{RwLock, RwLockWriteGuard};
        /// let r = RwLock::new(0);
        /// let mut g = r.write();
        /// RwLockWriteGuard::unlocked(&mut g, || assert_eq!(*r.read(), 0));
        /// *g += 1;
        /// ```
        fn unlocked = unlocked(force_unlock_write, write_at);

        /// Wrapper for [`parking_lot::RwLockWriteGuard::unlock_fair`].
        ///
        /// ```
        /// use lockscope::parking_lot::{RwLock, RwLockWriteGuard};
        /// let r = RwLock::new(());
        /// RwLockWriteGuard::unlock_fair(r.write());
        /// assert!(!r.is_locked());
        /// ```
        fn unlock_fair = unlock_fair();

        /// Wrapper for [`parking_lot::RwLockWriteGuard::unlocked_fair`]; see
        /// [`unlocked`](RwLockWriteGuard::unlocked).
        ///
        /// ```
        /// use lockscope::parking_lot::{RwLock, RwLockWriteGuard};
        /// let r = RwLock::new(0);
        /// let mut g = r.write();
        /// RwLockWriteGuard::unlocked_fair(&mut g, || assert!(!r.is_locked()));
        /// ```
        fn unlocked_fair = unlocked(force_unlock_write_fair, write_at);

        /// Wrapper for [`parking_lot::RwLockWriteGuard::bump`]; lockscope records a release and a
        /// new write hold at this call's site.
        ///
        /// ```
        /// use lockscope::parking_lot::{RwLock, RwLockWriteGuard};
        /// let r = RwLock::new(());
        /// let mut g = r.write();
        /// RwLockWriteGuard::bump(&mut g);
        /// ```
        fn bump = bump(bump_exclusive);

        /// Wrapper for [`parking_lot::RwLockWriteGuard::map`].
        ///
        /// ```
        /// use lockscope::parking_lot::{RwLock, RwLockWriteGuard};
        /// let r = RwLock::new([1, 2]);
        /// *RwLockWriteGuard::map(r.write(), |a| &mut a[1]) = 3;
        /// assert_eq!(*r.read(), [1, 3]);
        /// ```
        fn map = map(MappedRwLockWriteGuard, &mut);

        /// Wrapper for [`parking_lot::RwLockWriteGuard::try_map`].
        ///
        /// # Errors
        ///
        /// Gives the original guard back when `f` returns `None`.
        ///
        /// ```
        /// use lockscope::parking_lot::{RwLock, RwLockWriteGuard};
        /// let r = RwLock::new(vec![1]);
        /// assert!(RwLockWriteGuard::try_map(r.write(), |v| v.get_mut(3)).is_err());
        /// ```
        fn try_map = try_map(MappedRwLockWriteGuard, &mut);

        /// Wrapper for [`parking_lot::RwLockWriteGuard::try_map_or_err`].
        ///
        /// # Errors
        ///
        /// Gives the original guard back, with `f`'s error, when `f` fails.
        ///
        /// ```
        /// use lockscope::parking_lot::{RwLock, RwLockWriteGuard};
        /// let r = RwLock::new(vec![1]);
        /// assert!(RwLockWriteGuard::try_map_or_err(r.write(), |v| v.get_mut(3).ok_or(())).is_err());
        /// ```
        fn try_map_or_err = try_map_or_err(MappedRwLockWriteGuard, &mut);

        /// Wrapper for [`parking_lot::RwLockWriteGuard::downgrade`]: lockscope rewrites the hold
        /// as a read (before parking_lot lets other readers in).
        ///
        /// ```
        /// use lockscope::parking_lot::{RwLock, RwLockWriteGuard};
        /// let r = RwLock::new(1);
        /// let mut w = r.write();
        /// *w += 1;
        /// let g = RwLockWriteGuard::downgrade(w);
        /// assert_eq!(*r.try_read().unwrap(), 2);
        /// drop(g);
        /// ```
        fn downgrade = downgrade(RwLockReadGuard, Shared);

        /// Wrapper for [`parking_lot::RwLockWriteGuard::downgrade_to_upgradable`]: lockscope
        /// rewrites the hold as an upgradable read.
        ///
        /// ```
        /// use lockscope::parking_lot::{RwLock, RwLockWriteGuard};
        /// let r = RwLock::new(1);
        /// let u = RwLockWriteGuard::downgrade_to_upgradable(r.write());
        /// assert!(r.try_read().is_some());
        /// assert!(r.try_upgradable_read().is_none());
        /// drop(u);
        /// ```
        fn downgrade_to_upgradable = downgrade(RwLockUpgradableReadGuard, Upgradable);
    }
}

guard_struct! {
    /// Wrapper for [`parking_lot::MappedRwLockWriteGuard`], made by [`RwLockWriteGuard::map`].
    ///
    /// ```
    /// use lockscope::parking_lot::{RwLock, RwLockWriteGuard};
    /// let r = RwLock::new((1, 2));
    /// *RwLockWriteGuard::map(r.write(), |t| &mut t.0) = 5;
    /// assert_eq!(*r.read(), (5, 2));
    /// ```
    #[must_use = "if unused the RwLock will immediately unlock"]
    pub struct MappedRwLockWriteGuard [&mut];
}

guard_methods! {
    impl MappedRwLockWriteGuard {
        /// Wrapper for [`parking_lot::MappedRwLockWriteGuard::map`].
        ///
        /// ```
        /// use lockscope::parking_lot::{MappedRwLockWriteGuard, RwLock, RwLockWriteGuard};
        /// let r = RwLock::new(((1, 2), 3));
        /// let pair = RwLockWriteGuard::map(r.write(), |t| &mut t.0);
        /// *MappedRwLockWriteGuard::map(pair, |p| &mut p.1) = 9;
        /// assert_eq!(r.read().0 .1, 9);
        /// ```
        fn map = map(MappedRwLockWriteGuard, &mut);

        /// Wrapper for [`parking_lot::MappedRwLockWriteGuard::try_map`].
        ///
        /// # Errors
        ///
        /// Gives the original guard back when `f` returns `None`.
        ///
        /// ```
        /// use lockscope::parking_lot::{MappedRwLockWriteGuard, RwLock, RwLockWriteGuard};
        /// let r = RwLock::new(vec![vec![1]]);
        /// let row = RwLockWriteGuard::map(r.write(), |v| &mut v[0]);
        /// assert!(MappedRwLockWriteGuard::try_map(row, |r| r.get_mut(5)).is_err());
        /// ```
        fn try_map = try_map(MappedRwLockWriteGuard, &mut);

        /// Wrapper for [`parking_lot::MappedRwLockWriteGuard::try_map_or_err`].
        ///
        /// # Errors
        ///
        /// Gives the original guard back, with `f`'s error, when `f` fails.
        ///
        /// ```
        /// use lockscope::parking_lot::{MappedRwLockWriteGuard, RwLock, RwLockWriteGuard};
        /// let r = RwLock::new(vec![vec![1]]);
        /// let row = RwLockWriteGuard::map(r.write(), |v| &mut v[0]);
        /// assert!(MappedRwLockWriteGuard::try_map_or_err(row, |r| r.get_mut(5).ok_or(())).is_err());
        /// ```
        fn try_map_or_err = try_map_or_err(MappedRwLockWriteGuard, &mut);

        /// Wrapper for [`parking_lot::MappedRwLockWriteGuard::unlock_fair`].
        ///
        /// ```
        /// use lockscope::parking_lot::{MappedRwLockWriteGuard, RwLock, RwLockWriteGuard};
        /// let r = RwLock::new((1, 2));
        /// MappedRwLockWriteGuard::unlock_fair(RwLockWriteGuard::map(r.write(), |t| &mut t.0));
        /// assert!(!r.is_locked());
        /// ```
        fn unlock_fair = unlock_fair();
    }
}
