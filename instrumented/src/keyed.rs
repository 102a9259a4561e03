//! What the async and blocking `KeyedMutex`es share ([`crate::tokio::KeyedMutex`],
//! [`crate::parking_lot::KeyedMutex`]): the map of keys in use, each key's mutex made when the
//! key is first used and removed with its last user, and the guard of one key.

use std::collections::HashMap;
use std::fmt;
use std::hash::Hash;
use std::panic::Location;
use std::sync::Arc;

use lockscope_detector::__private::hooks::{PrimCell, PrimKind};

/// The keys in use of one keyed mutex, each with its mutex `M` and its count of users
/// (guards and waiters).
pub(crate) struct Keyed<K, M> {
    name: Arc<str>,
    site: &'static Location<'static>,
    /// Changed only under this lock (an uninstrumented one: lockscope's own books), for a
    /// few instructions.
    keys: std::sync::Mutex<HashMap<K, (Arc<M>, usize)>>,
}

/// A use of one key's mutex (a waiter's or a guard's): dropped, it counts itself out, and the
/// last one removes the key.
pub(crate) struct Ticket<'a, K: Eq + Hash, M> {
    map: &'a Keyed<K, M>,
    key: K,
    mutex: Arc<M>,
}

impl<K: Eq + Hash + Clone + fmt::Display, M> Keyed<K, M> {
    /// An empty map named `name` (`None`: after `site`).
    pub(crate) fn new(name: Option<&str>, site: &'static Location<'static>) -> Self {
        let name = match name {
            Some(n) => n.into(),
            None => lockscope_detector::__private::prim::site_string(site).into(),
        };
        Keyed {
            name,
            site,
            keys: std::sync::Mutex::new(HashMap::new()),
        }
    }

    pub(crate) fn name(&self) -> &str {
        &self.name
    }

    fn keys(&self) -> std::sync::MutexGuard<'_, HashMap<K, (Arc<M>, usize)>> {
        // Poisoning cannot leave the map inconsistent: each change is one insert or remove.
        self.keys.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Counts one more use of `key`, making its mutex with `make` if the key is not in use:
    /// `make` is given the key's primitive, named `"<map>[<key>]"` and counted in the map's
    /// metrics series, of `kind`.
    pub(crate) fn enter(
        &self,
        key: &K,
        kind: PrimKind,
        make: impl FnOnce(PrimCell) -> M,
    ) -> Ticket<'_, K, M> {
        let mut keys = self.keys();
        let (mutex, users) = keys.entry(key.clone()).or_insert_with(|| {
            let name = format!("{}[{key}]", self.name);
            let cell = PrimCell::in_series(&name, &self.name, kind, self.site);
            (Arc::new(make(cell)), 0)
        });
        *users += 1;
        Ticket {
            map: self,
            key: key.clone(),
            mutex: mutex.clone(),
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.keys().len()
    }
}

impl<K: Eq + Hash, M> Ticket<'_, K, M> {
    /// The key's mutex, for as long as the caller says.
    ///
    /// # Safety
    ///
    /// Every borrow made from it must end before this ticket is dropped (a field declared
    /// before the ticket in the same struct is dropped before it): the ticket keeps the mutex
    /// alive, and nothing else does.
    pub(crate) unsafe fn mutex<'m>(&self) -> &'m M {
        // SAFETY: the `Arc` this ticket holds keeps the mutex alive; the caller ends every
        // borrow before dropping the ticket.
        unsafe { &*Arc::as_ptr(&self.mutex) }
    }
}

impl<K: Eq + Hash, M> Drop for Ticket<'_, K, M> {
    fn drop(&mut self) {
        let mut keys = self.map.keys.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((_, users)) = keys.get_mut(&self.key) {
            *users -= 1;
            if *users == 0 {
                keys.remove(&self.key);
            }
        }
    }
}

impl<K, M> fmt::Debug for Keyed<K, M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KeyedMutex")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

/// The hold of one key of a keyed mutex, whichever form's
/// ([`lockscope::tokio::KeyedMutexGuard`](crate::tokio::KeyedMutexGuard) and
/// [`lockscope::parking_lot::KeyedMutexGuard`](crate::parking_lot::KeyedMutexGuard) are this
/// over their mutexes' guards `G` and mutexes `M`); dropped, it unlocks the key.
#[must_use = "if unused the key will immediately unlock"]
pub struct KeyedGuard<'a, K: Eq + Hash, G, M> {
    // Field order is drop order: the guard borrows the mutex that `ticket` keeps alive.
    guard: G,
    ticket: Ticket<'a, K, M>,
}

impl<'a, K: Eq + Hash, G, M> KeyedGuard<'a, K, G, M> {
    /// `guard`, a hold of `ticket`'s mutex, borrowed through [`Ticket::mutex`].
    pub(crate) fn new(guard: G, ticket: Ticket<'a, K, M>) -> Self {
        KeyedGuard { guard, ticket }
    }

    /// The key held.
    pub fn key(&self) -> &K {
        &self.ticket.key
    }
}

impl<K: Eq + Hash + fmt::Debug, G, M> fmt::Debug for KeyedGuard<'_, K, G, M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let _ = &self.guard;
        f.debug_struct("KeyedMutexGuard")
            .field("key", &self.ticket.key)
            .finish()
    }
}
