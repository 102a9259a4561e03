//! What the async and blocking [`MultiLock`](crate::tokio::MultiLock)s share: the one global
//! order in which every multi-lock takes its members, and the error for a set that lists a
//! lock twice.
//!
//! The order is the detector's primitive id, ascending: unique per live primitive, stable for
//! its life (a lock that moves keeps it), and the same for every `MultiLock` in the process. Two
//! multi-locks over the same locks, listed in different orders, so take them in the same order
//! and cannot deadlock each other (Dart's `MultiLock` takes them as listed, and does).

use std::fmt;

use lockscope_detector::prim::Prim;

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

/// The positions of `prims` in the global order (ascending primitive id), or the error for a
/// primitive listed twice.
pub(crate) fn global_order(prims: &[&Prim]) -> Result<Vec<usize>, MultiLockError> {
    let mut order: Vec<usize> = (0..prims.len()).collect();
    order.sort_by_key(|&i| prims[i].id().0);
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

/// The guards of a lock set, kept in the order they were taken; `slot[i]`: where the guard
/// of the lock listed `i`-th is. Dropped, it releases them in reverse order.
pub(crate) struct Guards<G> {
    taken: Vec<Option<G>>,
    slot: Vec<usize>,
}

impl<G> Guards<G> {
    pub(crate) fn new(order: &[usize], taken: Vec<G>) -> Self {
        let mut slot = vec![0; order.len()];
        for (k, &i) in order.iter().enumerate() {
            slot[i] = k;
        }
        Guards {
            taken: taken.into_iter().map(Some).collect(),
            slot,
        }
    }

    pub(crate) fn get(&self, i: usize) -> &G {
        // UNWRAP: guards are taken out only by `drop`.
        self.taken[self.slot[i]].as_ref().expect("guard present")
    }

    pub(crate) fn get_mut(&mut self, i: usize) -> &mut G {
        // UNWRAP: as in `get`.
        self.taken[self.slot[i]].as_mut().expect("guard present")
    }

    pub(crate) fn len(&self) -> usize {
        self.slot.len()
    }
}

impl<G> Drop for Guards<G> {
    fn drop(&mut self) {
        // Last taken, first released.
        while let Some(g) = self.taken.pop() {
            drop(g);
        }
    }
}
