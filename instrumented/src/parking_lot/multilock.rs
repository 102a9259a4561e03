//! [`MultiLock`]: a set of parking_lot mutexes and rwlock halves taken together, in one
//! global order.

use std::marker::PhantomData;
use std::ops::Deref;
use std::time::{Duration, Instant};

use lockscope_detector::__private::prim::Prim;

use super::{Mutex, MutexGuard, RwLock, RwLockReadGuard, RwLockWriteGuard};
use crate::multilock::{FromHeld, Held, MultiLockGuard as Guards, global_order};

pub use crate::multilock::MultiLockError;

/// One member of a [`MultiLock`] made by [`MultiLock::with_members`]: a mutex
/// (`Member::Lock(&m)`), or an rwlock's read half (`Member::Read(&rw)`) or write half
/// (`Member::Write(&rw)`).
pub type Member<'a, T> = crate::multilock::Member<&'a Mutex<T>, &'a RwLock<T>>;

/// The guard of one member of a [`MultiLock`]: derefs to its value (mutably, all but a read
/// half).
pub type MemberGuard<'a, T> =
    Held<MutexGuard<'a, T>, RwLockReadGuard<'a, T>, RwLockWriteGuard<'a, T>>;

/// The detector's record of a member's lock.
fn prim_of<'a, T: ?Sized>(m: &Member<'a, T>) -> &'a Prim {
    match *m {
        Member::Lock(l) => l.prim(),
        Member::Read(l) | Member::Write(l) => l.prim(),
    }
}

/// A set of [`Mutex`]es (or, through [`MultiLock::with_members`], mutexes and [`RwLock`] read
/// and write halves) taken together, blocking (lockscope addition; the async form is
/// [`lockscope::tokio::MultiLock`](crate::tokio::MultiLock)): whatever order they are listed
/// in, every `MultiLock` of the process takes them in one global order, so two multi-locks
/// over the same locks cannot deadlock each other; the timed forms bound the whole set; the
/// guards are released in reverse order. Each member's acquisition is an ordinary one for the
/// detector, at the caller's line.
///
/// ```
/// use lockscope::parking_lot::{MultiLock, Mutex};
///
/// let (a, b) = (Mutex::named("a", 1), Mutex::named("b", 2));
/// let set = MultiLock::new([&b, &a]).unwrap();
/// let mut g = set.lock();
/// *g.get_mut(0) = 5;
/// assert_eq!(*g.get(1), 1);
/// drop(g);
/// assert_eq!(*b.lock(), 5);
/// ```
///
/// `G` is what the guard holds for each member: the mutex's own guard for a set made by
/// [`MultiLock::new`], a [`MemberGuard`] for one made by [`MultiLock::with_members`].
pub struct MultiLock<'a, T: ?Sized, G = MutexGuard<'a, T>> {
    locks: Vec<Member<'a, T>>,
    /// Positions in `locks`, in the global order.
    order: Vec<usize>,
    guards: PhantomData<fn() -> G>,
}

/// The guards of a [`MultiLock`]'s members; each member's value by its listed position.
/// Dropped, it releases the members in the reverse of the order they were taken.
pub type MultiLockGuard<'a, T> = Guards<MutexGuard<'a, T>>;

/// The guards of a [`MultiLock`] made by [`MultiLock::with_members`]: each member's
/// [`MemberGuard`] by its listed position.
pub type MembersGuard<'a, T> = Guards<MemberGuard<'a, T>>;

impl<'a, T: ?Sized> FromHeld<MutexGuard<'a, T>, RwLockReadGuard<'a, T>, RwLockWriteGuard<'a, T>>
    for MutexGuard<'a, T>
{
    fn from_held(held: MemberGuard<'a, T>) -> Self {
        match held {
            Held::Lock(g) => g,
            // Only `MultiLock::new` makes a set with mutex guards, of mutexes only.
            Held::Read(_) | Held::Write(_) => unreachable!("a set of mutexes took an rwlock"),
        }
    }
}

impl<'a, T: ?Sized> MultiLock<'a, T> {
    /// A lock set over `locks`, listed in any order.
    ///
    /// # Errors
    ///
    /// [`MultiLockError`] if a lock is listed twice.
    ///
    /// ```
    /// let m = lockscope::parking_lot::Mutex::named("once", ());
    /// assert!(lockscope::parking_lot::MultiLock::new([&m, &m]).is_err());
    /// ```
    pub fn new(locks: impl IntoIterator<Item = &'a Mutex<T>>) -> Result<Self, MultiLockError> {
        Self::make(locks.into_iter().map(Member::Lock))
    }
}

impl<'a, T: ?Sized> MultiLock<'a, T, MemberGuard<'a, T>> {
    /// A lock set over mutexes and rwlock halves, listed in any order: the set reads each
    /// [`Member::Read`] and writes each [`Member::Write`], in the same one global order as
    /// every other set (the halves of an rwlock are one lock in that order).
    ///
    /// # Errors
    ///
    /// [`MultiLockError`] if a lock is listed twice (both halves of one rwlock included).
    ///
    /// ```
    /// use lockscope::parking_lot::{Member, MultiLock, Mutex, RwLock};
    ///
    /// let config = RwLock::named("config", 3);
    /// let counter = Mutex::named("counter", 0);
    /// let set = MultiLock::with_members([Member::Read(&config), Member::Lock(&counter)]).unwrap();
    /// let mut g = set.lock();
    /// *g.get_mut(1) += *g.get(0);
    /// assert!(config.try_read().is_some(), "a read half leaves other readers in");
    /// drop(g);
    /// assert_eq!(*counter.lock(), 3);
    /// ```
    pub fn with_members(
        members: impl IntoIterator<Item = Member<'a, T>>,
    ) -> Result<Self, MultiLockError> {
        Self::make(members)
    }
}

impl<'a, T: ?Sized, G> MultiLock<'a, T, G>
where
    G: FromHeld<MutexGuard<'a, T>, RwLockReadGuard<'a, T>, RwLockWriteGuard<'a, T>> + Deref,
{
    fn make(members: impl IntoIterator<Item = Member<'a, T>>) -> Result<Self, MultiLockError> {
        let locks: Vec<Member<'a, T>> = members.into_iter().collect();
        let prims: Vec<_> = locks.iter().map(prim_of).collect();
        let order = global_order(&prims)?;
        Ok(MultiLock {
            locks,
            order,
            guards: PhantomData,
        })
    }

    /// How many locks the set has.
    pub fn len(&self) -> usize {
        self.locks.len()
    }

    /// Whether the set is empty (its guard then guards nothing).
    pub fn is_empty(&self) -> bool {
        self.locks.is_empty()
    }

    fn guard(&self, taken: Vec<G>) -> Guards<G> {
        Guards::new(&self.order, taken)
    }

    /// Locks every member, in the global order, blocking as [`Mutex::lock`] does for each.
    #[track_caller]
    pub fn lock(&self) -> Guards<G> {
        let mut taken = Vec::with_capacity(self.order.len());
        for &i in &self.order {
            taken.push(G::from_held(match self.locks[i] {
                Member::Lock(l) => Held::Lock(l.lock()),
                Member::Read(l) => Held::Read(l.read()),
                Member::Write(l) => Held::Write(l.write()),
            }));
        }
        self.guard(taken)
    }

    /// [`lock`](MultiLock::lock) within `timeout` for the whole set; `None` (the members
    /// taken released) if the set is not all taken by then.
    ///
    /// ```
    /// use std::time::Duration;
    /// let (a, b) = (lockscope::parking_lot::Mutex::new(()), lockscope::parking_lot::Mutex::new(()));
    /// let set = lockscope::parking_lot::MultiLock::new([&a, &b]).unwrap();
    /// let held = set.lock();
    /// assert!(std::thread::scope(|s| {
    ///     s.spawn(|| set.try_lock_for(Duration::from_millis(20)).is_none()).join().unwrap()
    /// }));
    /// drop(held);
    /// ```
    #[track_caller]
    pub fn try_lock_for(&self, timeout: Duration) -> Option<Guards<G>> {
        self.try_lock_until(Instant::now() + timeout)
    }

    /// [`lock`](MultiLock::lock) until `deadline` for the whole set; `None` (the members
    /// taken released) if the set is not all taken by then.
    #[track_caller]
    pub fn try_lock_until(&self, deadline: Instant) -> Option<Guards<G>> {
        let mut taken = Vec::with_capacity(self.order.len());
        for &i in &self.order {
            // `taken` is dropped on `None`: the members taken so far are released.
            taken.push(G::from_held(match self.locks[i] {
                Member::Lock(l) => Held::Lock(l.try_lock_until(deadline)?),
                Member::Read(l) => Held::Read(l.try_read_until(deadline)?),
                Member::Write(l) => Held::Write(l.try_write_until(deadline)?),
            }));
        }
        Some(self.guard(taken))
    }

    /// Takes every member now, or none (the members taken released if one is held).
    ///
    /// ```
    /// let (a, b) = (lockscope::parking_lot::Mutex::new(1), lockscope::parking_lot::Mutex::new(2));
    /// let set = lockscope::parking_lot::MultiLock::new([&a, &b]).unwrap();
    /// let _b = b.lock();
    /// assert!(set.try_lock().is_none());
    /// assert!(a.try_lock().is_some(), "a was released");
    /// ```
    #[track_caller]
    pub fn try_lock(&self) -> Option<Guards<G>> {
        let mut taken = Vec::with_capacity(self.order.len());
        for &i in &self.order {
            taken.push(G::from_held(match self.locks[i] {
                Member::Lock(l) => Held::Lock(l.try_lock()?),
                Member::Read(l) => Held::Read(l.try_read()?),
                Member::Write(l) => Held::Write(l.try_write()?),
            }));
        }
        Some(self.guard(taken))
    }
}

impl<T: ?Sized, G> std::fmt::Debug for MultiLock<'_, T, G> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(self.locks.iter().map(|m| prim_of(m).name()))
            .finish()
    }
}
