//! [`MultiLock`]: a set of tokio mutexes and rwlock halves taken together, in one global
//! order.

use std::future::Future;
use std::marker::PhantomData;
use std::ops::Deref;
use std::time::Duration;

use lockscope_detector::__private::prim::Prim;

use super::{
    Mutex, MutexGuard, RwLock, RwLockReadGuard, RwLockWriteGuard, TimeoutError, TryLockError,
};
use crate::multilock::{FromHeld, Held, HeldFuture, MultiLockGuard as Guards, global_order};

pub use crate::multilock::MultiLockError;

/// One member of a [`MultiLock`] made by [`MultiLock::with_members`]: a mutex
/// (`Member::Lock(&m)`), or an rwlock's read half (`Member::Read(&rw)`) or write half
/// (`Member::Write(&rw)`).
pub type Member<'a, T> = crate::multilock::Member<&'a Mutex<T>, &'a RwLock<T>>;

/// The guard of one member of a [`MultiLock`]: derefs to its value (mutably, all but a read
/// half).
pub type MemberGuard<'a, T> =
    Held<MutexGuard<'a, T>, RwLockReadGuard<'a, T>, RwLockWriteGuard<'a, T>>;

/// A set of [`Mutex`]es (or, through [`MultiLock::with_members`], mutexes and [`RwLock`] read
/// and write halves) taken together (lockscope addition): whatever order they are listed
/// in, every `MultiLock` of the process takes them in one global order, so two multi-locks
/// over the same locks cannot deadlock each other; one timeout covers the whole set; the
/// guards are released in reverse order. Each member's acquisition is an ordinary one for the
/// detector (its wait, its hold, its lock-order edges), at the caller's line.
///
/// The guard gives each member's value by its position in the list given to
/// [`MultiLock::new`].
///
/// # Cancel safety
///
/// As [`Mutex::lock`]: dropping the future releases the members taken so far and gives up
/// the place in the queue of the one it waits for.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// use lockscope::tokio::{MultiLock, Mutex};
///
/// let alice = Mutex::named("alice", 100u64);
/// let bob = Mutex::named("bob", 0u64);
/// // Listed bob-first here and alice-first elsewhere: taken in the same order anyway.
/// let both = MultiLock::new([&bob, &alice]).unwrap();
/// let mut g = both.lock().await;
/// *g.get_mut(1) -= 30;
/// *g.get_mut(0) += 30;
/// drop(g);
/// assert_eq!((*alice.lock().await, *bob.lock().await), (70, 30));
/// # }
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

/// The detector's record of a member's lock.
fn prim_of<'a, T: ?Sized>(m: &Member<'a, T>) -> &'a Prim {
    match *m {
        Member::Lock(l) => l.prim(),
        Member::Read(l) | Member::Write(l) => l.prim(),
    }
}

/// A member's name.
fn name_of<'a, T: ?Sized>(m: &Member<'a, T>) -> &'a str {
    prim_of(m).name()
}

impl<'a, T: ?Sized> MultiLock<'a, T> {
    /// A lock set over `locks`, listed in any order.
    ///
    /// # Errors
    ///
    /// [`MultiLockError`] if a lock is listed twice.
    ///
    /// ```
    /// let m = lockscope::tokio::Mutex::named("once", ());
    /// let err = lockscope::tokio::MultiLock::new([&m, &m]).err().unwrap();
    /// assert_eq!((err.lock(), err.positions()), ("once", (0, 1)));
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
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// use lockscope::tokio::{Member, MultiLock, Mutex, RwLock};
    ///
    /// let config = RwLock::named("config", 3);
    /// let counter = Mutex::named("counter", 0);
    /// let set = MultiLock::with_members([Member::Read(&config), Member::Lock(&counter)]).unwrap();
    /// let mut g = set.lock().await;
    /// *g.get_mut(1) += *g.get(0);
    /// assert!(config.try_read().is_ok(), "a read half leaves other readers in");
    /// drop(g);
    /// assert_eq!(*counter.lock().await, 3);
    /// # }
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

    /// The members' futures, in the global order, each recorded at the caller's line.
    #[track_caller]
    fn member_futures(&self) -> Vec<impl Future<Output = MemberGuard<'a, T>> + 'a> {
        let mut futures = Vec::with_capacity(self.order.len());
        // A loop, not a closure: `#[track_caller]` reaches `lock` only from this body.
        for &i in &self.order {
            futures.push(match self.locks[i] {
                Member::Lock(l) => HeldFuture::Lock { f: l.lock() },
                Member::Read(l) => HeldFuture::Read { f: l.read() },
                Member::Write(l) => HeldFuture::Write { f: l.write() },
            });
        }
        futures
    }

    /// Locks every member, in the global order, waiting as [`Mutex::lock`] does for each.
    #[track_caller]
    pub fn lock(&self) -> impl Future<Output = Guards<G>> + '_ {
        let futures = self.member_futures();
        async move {
            let mut taken = Vec::with_capacity(futures.len());
            for f in futures {
                taken.push(G::from_held(f.await));
            }
            Guards::new(&self.order, taken)
        }
    }

    /// [`lock`](MultiLock::lock) within `timeout` for the whole set: if the set is not all
    /// taken by then, the members taken are released and the error names the member still
    /// waited for and its holders. (Its wait counts as cancelled in the metrics: it was
    /// given up for the set's deadline, not its own.)
    ///
    /// # Errors
    ///
    /// [`TimeoutError`] when the deadline passed.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// use std::time::Duration;
    /// let (a, b) = (lockscope::tokio::Mutex::named("a", ()), lockscope::tokio::Mutex::named("b", ()));
    /// let _held = b.lock().await;
    /// let set = lockscope::tokio::MultiLock::new([&a, &b]).unwrap();
    /// let err = set.lock_timeout(Duration::from_millis(50)).await.err().unwrap();
    /// assert_eq!(err.lock(), "b");
    /// assert!(a.try_lock().is_ok(), "the member taken was released");
    /// # }
    /// ```
    #[track_caller]
    pub fn lock_timeout(
        &self,
        timeout: Duration,
    ) -> impl Future<Output = Result<Guards<G>, TimeoutError>> + '_ {
        let futures = self.member_futures();
        async move {
            let mut at = 0;
            let all = async {
                let mut taken = Vec::with_capacity(futures.len());
                for (k, f) in futures.into_iter().enumerate() {
                    at = k;
                    taken.push(G::from_held(f.await));
                }
                taken
            };
            match tokio::time::timeout(timeout, all).await {
                Ok(taken) => Ok(Guards::new(&self.order, taken)),
                Err(_) => {
                    let waited_for = &self.locks[self.order[at]];
                    Err(TimeoutError::elapsed(prim_of(waited_for), timeout))
                }
            }
        }
    }

    /// Takes every member now, or none: a `try_lock` of each in the global order; the
    /// members taken are released if one is held.
    ///
    /// # Errors
    ///
    /// [`TryLockError`] if any member is held.
    ///
    /// ```
    /// let (a, b) = (lockscope::tokio::Mutex::new(1), lockscope::tokio::Mutex::new(2));
    /// let set = lockscope::tokio::MultiLock::new([&a, &b]).unwrap();
    /// let g = set.try_lock().unwrap();
    /// assert_eq!((*g.get(0), *g.get(1)), (1, 2));
    /// assert!(set.try_lock().is_err());
    /// ```
    #[track_caller]
    pub fn try_lock(&self) -> Result<Guards<G>, TryLockError> {
        let mut taken = Vec::with_capacity(self.order.len());
        for &i in &self.order {
            taken.push(G::from_held(match self.locks[i] {
                Member::Lock(l) => Held::Lock(l.try_lock()?),
                Member::Read(l) => Held::Read(l.try_read()?),
                Member::Write(l) => Held::Write(l.try_write()?),
            }));
        }
        Ok(Guards::new(&self.order, taken))
    }
}

impl<T: ?Sized, G> std::fmt::Debug for MultiLock<'_, T, G> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(self.locks.iter().map(name_of))
            .finish()
    }
}
