//! [`MutexGuard`] and [`MappedMutexGuard`].

use super::guard::bump_exclusive;
use super::mutex::Mutex;

guard_struct! {
    /// Wrapper for [`parking_lot::MutexGuard`]: the mutex is held until it drops.
    ///
    /// Dropping it records the release in lockscope's books, then unlocks. Like parking_lot's,
    /// it is `!Send` unless parking_lot's `send_guard` feature is on.
    ///
    /// ```
    /// use lockscope::parking_lot::{Mutex, MutexGuard};
    /// let m = Mutex::new(vec![1]);
    /// let mut g: MutexGuard<'_, Vec<i32>> = m.lock();
    /// g.push(2);
    /// assert_eq!(*g, [1, 2]);
    /// ```
    #[must_use = "if unused the Mutex will immediately unlock"]
    pub struct MutexGuard for Mutex + DerefMut;
}

guard_methods! {
    impl MutexGuard {
        /// Wrapper for [`parking_lot::MutexGuard::mutex`].
        ///
        /// ```
        /// use lockscope::parking_lot::{Mutex, MutexGuard};
        /// let m = Mutex::new(());
        /// let g = m.lock();
        /// assert!(std::ptr::eq(MutexGuard::mutex(&g), &m));
        /// ```
        fn mutex = owner(Mutex);

        /// Wrapper for [`parking_lot::MutexGuard::unlocked`]. lockscope records the release, and
        /// the re-lock (at this call's site) as a new acquisition, with its wait if it waits.
        ///
        /// ```
        /// use lockscope::parking_lot::{Mutex, MutexGuard};
        /// let m = Mutex::new(0);
        /// let mut g = m.lock();
        /// MutexGuard::unlocked(&mut g, || assert!(!m.is_locked()));
        /// *g += 1;
        /// ```
        fn unlocked = unlocked(force_unlock, lock_at);

        /// Wrapper for [`parking_lot::MutexGuard::unlock_fair`]: hands the mutex directly to a
        /// waiting thread, if there is one.
        ///
        /// ```
        /// use lockscope::parking_lot::{Mutex, MutexGuard};
        /// let m = Mutex::new(());
        /// MutexGuard::unlock_fair(m.lock());
        /// assert!(!m.is_locked());
        /// ```
        fn unlock_fair = unlock_fair();

        /// Wrapper for [`parking_lot::MutexGuard::unlocked_fair`]; see
        /// [`unlocked`](MutexGuard::unlocked).
        ///
        /// ```
        /// use lockscope::parking_lot::{Mutex, MutexGuard};
        /// let m = Mutex::new(0);
        /// let mut g = m.lock();
        /// MutexGuard::unlocked_fair(&mut g, || assert!(m.try_lock().is_some()));
        /// ```
        fn unlocked_fair = unlocked(force_unlock_fair, lock_at);

        /// Wrapper for [`parking_lot::MutexGuard::bump`]. lockscope records a release and a new
        /// hold at this call's site (parking_lot does not say whether it yielded).
        ///
        /// ```
        /// use lockscope::parking_lot::{Mutex, MutexGuard};
        /// let m = Mutex::new(0);
        /// let mut g = m.lock();
        /// MutexGuard::bump(&mut g);
        /// *g += 1;
        /// ```
        fn bump = bump(bump_exclusive);

        /// Wrapper for [`parking_lot::MutexGuard::map`]. The hold carries over to the new guard;
        /// if `f` panics, the mutex is released as by a drop.
        ///
        /// ```
        /// use lockscope::parking_lot::{Mutex, MutexGuard};
        /// let m = Mutex::new([1, 2]);
        /// let mut g = MutexGuard::map(m.lock(), |a| &mut a[1]);
        /// *g = 5;
        /// drop(g);
        /// assert_eq!(*m.lock(), [1, 5]);
        /// ```
        fn map = map(MappedMutexGuard, &mut);

        /// Wrapper for [`parking_lot::MutexGuard::try_map`].
        ///
        /// # Errors
        ///
        /// Gives the original guard back when `f` returns `None`.
        ///
        /// ```
        /// use lockscope::parking_lot::{Mutex, MutexGuard};
        /// let m = Mutex::new(vec![1]);
        /// let g = MutexGuard::try_map(m.lock(), |v| v.get_mut(5));
        /// assert!(g.is_err());
        /// ```
        fn try_map = try_map(MappedMutexGuard, &mut);

        /// Wrapper for [`parking_lot::MutexGuard::try_map_or_err`].
        ///
        /// # Errors
        ///
        /// Gives the original guard back, with `f`'s error, when `f` fails.
        ///
        /// ```
        /// use lockscope::parking_lot::{Mutex, MutexGuard};
        /// let m = Mutex::new(vec![1]);
        /// let r = MutexGuard::try_map_or_err(m.lock(), |v| v.get_mut(3).ok_or("no such item"));
        /// assert_eq!(r.err().map(|(_, e)| e), Some("no such item"));
        /// ```
        fn try_map_or_err = try_map_or_err(MappedMutexGuard, &mut);

        /// Wrapper for [`parking_lot::MutexGuard::leak`]. lockscope records the release now: the
        /// mutex stays locked (until [`Mutex::force_unlock`]), but no longer in lockscope's books.
        ///
        /// ```
        /// use lockscope::parking_lot::{Mutex, MutexGuard};
        /// let m = Mutex::new(1);
        /// let data: &mut i32 = MutexGuard::leak(m.lock());
        /// *data = 2;
        /// assert!(m.is_locked());
        /// ```
        fn leak = leak();
    }
}

guard_struct! {
    /// Wrapper for [`parking_lot::MappedMutexGuard`]: a guard for part of the locked data, made
    /// by [`MutexGuard::map`].
    ///
    /// ```
    /// use lockscope::parking_lot::{MappedMutexGuard, Mutex, MutexGuard};
    /// let m = Mutex::new((1, 2));
    /// let second: MappedMutexGuard<'_, i32> = MutexGuard::map(m.lock(), |t| &mut t.1);
    /// assert_eq!(*second, 2);
    /// ```
    #[must_use = "if unused the Mutex will immediately unlock"]
    pub struct MappedMutexGuard [&mut];
}

guard_methods! {
    impl MappedMutexGuard {
        /// Wrapper for [`parking_lot::MappedMutexGuard::map`].
        ///
        /// ```
        /// use lockscope::parking_lot::{MappedMutexGuard, Mutex, MutexGuard};
        /// let m = Mutex::new(((1, 2), 3));
        /// let pair = MutexGuard::map(m.lock(), |t| &mut t.0);
        /// let one = MappedMutexGuard::map(pair, |p| &mut p.0);
        /// assert_eq!(*one, 1);
        /// ```
        fn map = map(MappedMutexGuard, &mut);

        /// Wrapper for [`parking_lot::MappedMutexGuard::try_map`].
        ///
        /// # Errors
        ///
        /// Gives the original guard back when `f` returns `None`.
        ///
        /// ```
        /// use lockscope::parking_lot::{MappedMutexGuard, Mutex, MutexGuard};
        /// let m = Mutex::new(vec![vec![1]]);
        /// let row = MutexGuard::map(m.lock(), |v| &mut v[0]);
        /// assert!(MappedMutexGuard::try_map(row, |r| r.get_mut(3)).is_err());
        /// ```
        fn try_map = try_map(MappedMutexGuard, &mut);

        /// Wrapper for [`parking_lot::MappedMutexGuard::try_map_or_err`].
        ///
        /// # Errors
        ///
        /// Gives the original guard back, with `f`'s error, when `f` fails.
        ///
        /// ```
        /// use lockscope::parking_lot::{MappedMutexGuard, Mutex, MutexGuard};
        /// let m = Mutex::new(vec![vec![1]]);
        /// let row = MutexGuard::map(m.lock(), |v| &mut v[0]);
        /// let r = MappedMutexGuard::try_map_or_err(row, |r| r.get_mut(0).ok_or(()));
        /// assert_eq!(*r.ok().unwrap(), 1);
        /// ```
        fn try_map_or_err = try_map_or_err(MappedMutexGuard, &mut);

        /// Wrapper for [`parking_lot::MappedMutexGuard::unlock_fair`].
        ///
        /// ```
        /// use lockscope::parking_lot::{MappedMutexGuard, Mutex, MutexGuard};
        /// let m = Mutex::new((1, 2));
        /// MappedMutexGuard::unlock_fair(MutexGuard::map(m.lock(), |t| &mut t.0));
        /// assert!(!m.is_locked());
        /// ```
        fn unlock_fair = unlock_fair();
    }
}
