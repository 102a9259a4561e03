//! [`ReentrantMutexGuard`] and [`MappedReentrantMutexGuard`].

use super::guard::bump_reentrant;
use super::remutex::ReentrantMutex;

guard_struct! {
    /// Wrapper for [`parking_lot::ReentrantMutexGuard`]: one level of a (possibly re-entered)
    /// hold, released when it drops. Always `!Send`, as parking_lot's.
    ///
    /// ```
    /// use lockscope::parking_lot::{ReentrantMutex, ReentrantMutexGuard};
    /// let m = ReentrantMutex::new(1);
    /// let g: ReentrantMutexGuard<'_, i32> = m.lock();
    /// assert_eq!(*g, 1);
    /// ```
    #[must_use = "if unused the ReentrantMutex will immediately unlock"]
    pub struct ReentrantMutexGuard for ReentrantMutex;
}

guard_methods! {
    impl ReentrantMutexGuard {
        /// Wrapper for [`parking_lot::ReentrantMutexGuard::remutex`].
        ///
        /// ```
        /// use lockscope::parking_lot::{ReentrantMutex, ReentrantMutexGuard};
        /// let m = ReentrantMutex::new(());
        /// let g = m.lock();
        /// assert!(std::ptr::eq(ReentrantMutexGuard::remutex(&g), &m));
        /// ```
        fn remutex = owner(ReentrantMutex);

        /// Wrapper for [`parking_lot::ReentrantMutexGuard::unlocked`]: releases this level of the
        /// hold (the mutex itself only if it was the last), and records the re-lock as a new
        /// acquisition at this call's site.
        ///
        /// ```
        /// use lockscope::parking_lot::{ReentrantMutex, ReentrantMutexGuard};
        /// let m = ReentrantMutex::new(());
        /// let mut g = m.lock();
        /// ReentrantMutexGuard::unlocked(&mut g, || assert!(!m.is_locked()));
        /// ```
        fn unlocked = unlocked(force_unlock, lock_at);

        /// Wrapper for [`parking_lot::ReentrantMutexGuard::unlock_fair`].
        ///
        /// ```
        /// use lockscope::parking_lot::{ReentrantMutex, ReentrantMutexGuard};
        /// let m = ReentrantMutex::new(());
        /// ReentrantMutexGuard::unlock_fair(m.lock());
        /// assert!(!m.is_locked());
        /// ```
        fn unlock_fair = unlock_fair();

        /// Wrapper for [`parking_lot::ReentrantMutexGuard::unlocked_fair`]; see
        /// [`unlocked`](ReentrantMutexGuard::unlocked).
        ///
        /// ```
        /// use lockscope::parking_lot::{ReentrantMutex, ReentrantMutexGuard};
        /// let m = ReentrantMutex::new(());
        /// let mut g = m.lock();
        /// ReentrantMutexGuard::unlocked_fair(&mut g, || assert!(!m.is_locked()));
        /// ```
        fn unlocked_fair = unlocked(force_unlock_fair, lock_at);

        /// Wrapper for [`parking_lot::ReentrantMutexGuard::bump`]; lockscope records a release
        /// and a new hold at this call's site.
        ///
        /// ```
        /// use lockscope::parking_lot::{ReentrantMutex, ReentrantMutexGuard};
        /// let m = ReentrantMutex::new(());
        /// let mut g = m.lock();
        /// ReentrantMutexGuard::bump(&mut g);
        /// ```
        fn bump = bump(bump_reentrant);

        /// Wrapper for [`parking_lot::ReentrantMutexGuard::map`].
        ///
        /// ```
        /// use lockscope::parking_lot::{ReentrantMutex, ReentrantMutexGuard};
        /// let m = ReentrantMutex::new([1, 2]);
        /// assert_eq!(*ReentrantMutexGuard::map(m.lock(), |a| &a[0]), 1);
        /// ```
        fn map = map(MappedReentrantMutexGuard, &);

        /// Wrapper for [`parking_lot::ReentrantMutexGuard::try_map`].
        ///
        /// # Errors
        ///
        /// Gives the original guard back when `f` returns `None`.
        ///
        /// ```
        /// use lockscope::parking_lot::{ReentrantMutex, ReentrantMutexGuard};
        /// let m = ReentrantMutex::new(vec![1]);
        /// assert!(ReentrantMutexGuard::try_map(m.lock(), |v| v.get(4)).is_err());
        /// ```
        fn try_map = try_map(MappedReentrantMutexGuard, &);

        /// Wrapper for [`parking_lot::ReentrantMutexGuard::try_map_or_err`].
        ///
        /// # Errors
        ///
        /// Gives the original guard back, with `f`'s error, when `f` fails.
        ///
        /// ```
        /// use lockscope::parking_lot::{ReentrantMutex, ReentrantMutexGuard};
        /// let m = ReentrantMutex::new(vec![1]);
        /// let r = ReentrantMutexGuard::try_map_or_err(m.lock(), |v| v.first().ok_or(()));
        /// assert_eq!(*r.ok().unwrap(), 1);
        /// ```
        fn try_map_or_err = try_map_or_err(MappedReentrantMutexGuard, &);
    }
}

guard_struct! {
    /// Wrapper for [`parking_lot::MappedReentrantMutexGuard`], made by
    /// [`ReentrantMutexGuard::map`].
    ///
    /// ```
    /// use lockscope::parking_lot::{ReentrantMutex, ReentrantMutexGuard};
    /// let m = ReentrantMutex::new((1, 2));
    /// let g = ReentrantMutexGuard::map(m.lock(), |t| &t.1);
    /// assert_eq!(*g, 2);
    /// ```
    #[must_use = "if unused the ReentrantMutex will immediately unlock"]
    pub struct MappedReentrantMutexGuard [&];
}

guard_methods! {
    impl MappedReentrantMutexGuard {
        /// Wrapper for [`parking_lot::MappedReentrantMutexGuard::map`].
        ///
        /// ```
        /// use lockscope::parking_lot::{MappedReentrantMutexGuard, ReentrantMutex, ReentrantMutexGuard};
        /// let m = ReentrantMutex::new(((1, 2), 3));
        /// let pair = ReentrantMutexGuard::map(m.lock(), |t| &t.0);
        /// assert_eq!(*MappedReentrantMutexGuard::map(pair, |p| &p.1), 2);
        /// ```
        fn map = map(MappedReentrantMutexGuard, &);

        /// Wrapper for [`parking_lot::MappedReentrantMutexGuard::try_map`].
        ///
        /// # Errors
        ///
        /// Gives the original guard back when `f` returns `None`.
        ///
        /// ```
        /// use lockscope::parking_lot::{MappedReentrantMutexGuard, ReentrantMutex, ReentrantMutexGuard};
        /// let m = ReentrantMutex::new(vec![vec![1]]);
        /// let row = ReentrantMutexGuard::map(m.lock(), |v| &v[0]);
        /// assert!(MappedReentrantMutexGuard::try_map(row, |r| r.get(9)).is_err());
        /// ```
        fn try_map = try_map(MappedReentrantMutexGuard, &);

        /// Wrapper for [`parking_lot::MappedReentrantMutexGuard::try_map_or_err`].
        ///
        /// # Errors
        ///
        /// Gives the original guard back, with `f`'s error, when `f` fails.
        ///
        /// ```
        /// use lockscope::parking_lot::{MappedReentrantMutexGuard, ReentrantMutex, ReentrantMutexGuard};
        /// let m = ReentrantMutex::new(vec![vec![1]]);
        /// let row = ReentrantMutexGuard::map(m.lock(), |v| &v[0]);
        /// assert!(MappedReentrantMutexGuard::try_map_or_err(row, |r| r.get(9).ok_or(())).is_err());
        /// ```
        fn try_map_or_err = try_map_or_err(MappedReentrantMutexGuard, &);

        /// Wrapper for [`parking_lot::MappedReentrantMutexGuard::unlock_fair`].
        ///
        /// ```
        /// use lockscope::parking_lot::{MappedReentrantMutexGuard, ReentrantMutex, ReentrantMutexGuard};
        /// let m = ReentrantMutex::new((1, 2));
        /// MappedReentrantMutexGuard::unlock_fair(ReentrantMutexGuard::map(m.lock(), |t| &t.0));
        /// assert!(!m.is_locked());
        /// ```
        fn unlock_fair = unlock_fair();
    }
}
