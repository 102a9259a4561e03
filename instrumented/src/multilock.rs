//! What the async and blocking [`MultiLock`](crate::tokio::MultiLock)s share: the one global
//! order in which every multi-lock takes its members, their guard, and the error for a set
//! that lists a lock twice.
//!
//! The order is the members' declared [`Level`](crate::Level)s, lower first (members without
//! one before any with one), then the detector's primitive id, ascending: unique per live
//! primitive, stable for its life (a lock that moves keeps it, and a level is set before first
//! use), and the same for every `MultiLock` in the process. Two multi-locks over the same locks,
//! listed in different orders, so take them in the same order and cannot deadlock each other
//! (Dart's `MultiLock` takes them as listed, and does). Taken this way, a set keeps the declared
//! levels, and members of one level are the one case where a level may be taken while holding
//! itself (see `docs/lock-tools.md`).

use std::fmt;
use std::future::Future;
use std::ops::{Deref, DerefMut};
use std::pin::Pin;
use std::task::{Context, Poll};

use lockscope_detector::__private::prim::Prim;
use pin_project_lite::pin_project;

/// One member of a lock set: a mutex (`M`), or the read or the write half of an rwlock (`R`).
/// [`lockscope::tokio::Member`](crate::tokio::Member) and
/// [`lockscope::parking_lot::Member`](crate::parking_lot::Member) name it over their locks.
#[derive(Debug)]
pub enum Member<M, R> {
    /// A mutex, locked.
    Lock(M),
    /// An rwlock, read (shared with other readers).
    Read(R),
    /// An rwlock, written (exclusive).
    Write(R),
}

impl<M: Copy, R: Copy> Clone for Member<M, R> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<M: Copy, R: Copy> Copy for Member<M, R> {}

/// The guard of one member of a lock set, by the member's kind: a mutex's guard (`M`), a read
/// guard (`R`) or a write guard (`W`). It derefs to the member's value; mutably, all but a
/// read half.
#[derive(Debug)]
pub enum Held<M, R, W> {
    /// A mutex's guard.
    Lock(M),
    /// A read guard.
    Read(R),
    /// A write guard.
    Write(W),
}

impl<M: Deref, R: Deref<Target = M::Target>, W: Deref<Target = M::Target>> Deref for Held<M, R, W> {
    type Target = M::Target;

    fn deref(&self) -> &M::Target {
        match self {
            Held::Lock(g) => g,
            Held::Read(g) => g,
            Held::Write(g) => g,
        }
    }
}

impl<M: DerefMut, R: Deref<Target = M::Target>, W: DerefMut<Target = M::Target>> DerefMut
    for Held<M, R, W>
{
    /// # Panics
    ///
    /// On a read half: it gives only `&T`.
    fn deref_mut(&mut self) -> &mut M::Target {
        match self {
            Held::Lock(g) => g,
            Held::Write(g) => g,
            Held::Read(_) => panic!("a MultiLock member taken for reading gives no &mut access"),
        }
    }
}

/// What a lock set hands out for each member taken (a [`Held`]): the `Held` itself for a set
/// of mutexes and rwlock halves, or the mutex's own guard for a set of mutexes only (so that
/// such a set's guard is `Send` exactly when its mutexes' guards are, whatever an rwlock's
/// read guard would need).
pub trait FromHeld<M, R, W>: Sized {
    /// The member's guard, from the guard it was taken with.
    fn from_held(held: Held<M, R, W>) -> Self;
}

impl<M, R, W> FromHeld<M, R, W> for Held<M, R, W> {
    fn from_held(held: Held<M, R, W>) -> Self {
        held
    }
}

pin_project! {
    /// The acquisition of one member, by kind: its guard as a [`Held`].
    #[project = HeldFutureProj]
    pub(crate) enum HeldFuture<A, B, C> {
        Lock { #[pin] f: A },
        Read { #[pin] f: B },
        Write { #[pin] f: C },
    }
}

impl<A: Future, B: Future, C: Future> Future for HeldFuture<A, B, C> {
    type Output = Held<A::Output, B::Output, C::Output>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match self.project() {
            HeldFutureProj::Lock { f } => f.poll(cx).map(Held::Lock),
            HeldFutureProj::Read { f } => f.poll(cx).map(Held::Read),
            HeldFutureProj::Write { f } => f.poll(cx).map(Held::Write),
        }
    }
}

/// A lock set that cannot be taken: it lists one lock more than once (taking it twice would
/// deadlock at once, and two guards of one mutex cannot both give `&mut`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MultiLockError {
    name: String,
    first: usize,
    again: usize,
}

impl MultiLockError {
    /// The name of the lock listed twice.
    pub fn lock(&self) -> &str {
        &self.name
    }

    /// Its two positions in the list, in the order given.
    pub fn positions(&self) -> (usize, usize) {
        (self.first, self.again)
    }
}

impl fmt::Display for MultiLockError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "lock {:?} is listed twice in one MultiLock (positions {} and {}): a lock set takes \
             each lock once",
            self.name, self.first, self.again
        )
    }
}

impl std::error::Error for MultiLockError {}

/// The positions of `prims` in the global order (ascending declared level, then primitive
/// id), or the error for a primitive listed twice.
pub(crate) fn global_order(prims: &[&Prim]) -> Result<Vec<usize>, MultiLockError> {
    let mut order: Vec<usize> = (0..prims.len()).collect();
    order.sort_by_key(|&i| (prims[i].level().map(|l| l.rank()), prims[i].id().0));
    for pair in order.windows(2) {
        if prims[pair[0]].id() == prims[pair[1]].id() {
            let (first, again) = (pair[0].min(pair[1]), pair[0].max(pair[1]));
            return Err(MultiLockError {
                name: prims[first].name().to_owned(),
                first,
                again,
            });
        }
    }
    Ok(order)
}

/// The guards of a lock set's members, whichever kind of lock the set is of
/// ([`lockscope::tokio::MultiLockGuard`](crate::tokio::MultiLockGuard) and
/// [`lockscope::parking_lot::MultiLockGuard`](crate::parking_lot::MultiLockGuard) are this over
/// their mutexes' guards): each member's value by its position in the list the set was made
/// from. Dropped, it releases the members in the reverse of the order they were taken.
pub struct MultiLockGuard<G> {
    /// In the order taken; `None` only while `drop` releases them.
    taken: Vec<Option<G>>,
    /// `slot[i]`: where the guard of the lock listed `i`-th is in `taken`.
    slot: Vec<usize>,
}

impl<G: Deref> MultiLockGuard<G> {
    /// The guards `taken` in `order` (positions in the list, in the order taken).
    pub(crate) fn new(order: &[usize], taken: Vec<G>) -> Self {
        let mut slot = vec![0; order.len()];
        for (k, &i) in order.iter().enumerate() {
            slot[i] = k;
        }
        MultiLockGuard {
            taken: taken.into_iter().map(Some).collect(),
            slot,
        }
    }

    /// The value of the member listed `i`-th.
    ///
    /// # Panics
    ///
    /// If `i` is not below the set's length.
    pub fn get(&self, i: usize) -> &G::Target {
        // UNWRAP: guards are taken out only by `drop`.
        self.taken[self.slot[i]].as_ref().expect("guard present")
    }

    /// The value of the member listed `i`-th, mutably.
    ///
    /// # Panics
    ///
    /// If `i` is not below the set's length, or the member is an rwlock's read half.
    pub fn get_mut(&mut self, i: usize) -> &mut G::Target
    where
        G: DerefMut,
    {
        // UNWRAP: as in `get`.
        self.taken[self.slot[i]].as_mut().expect("guard present")
    }

    /// How many members the guard holds.
    pub fn len(&self) -> usize {
        self.slot.len()
    }

    /// Whether it holds none.
    pub fn is_empty(&self) -> bool {
        self.slot.is_empty()
    }
}

impl<G> Drop for MultiLockGuard<G> {
    fn drop(&mut self) {
        // Last taken, first released.
        while let Some(g) = self.taken.pop() {
            drop(g);
        }
    }
}

impl<G> fmt::Debug for MultiLockGuard<G> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MultiLockGuard")
            .field("len", &self.slot.len())
            .finish()
    }
}
