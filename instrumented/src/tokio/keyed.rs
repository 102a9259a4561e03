//! [`KeyedMutex`]: one async mutex per key, made when first locked, gone when unused.

use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::hash::Hash;
use std::panic::Location;
use std::pin::Pin;
use std::sync::Arc;

use lockscope_detector::hooks::{PrimCell, PrimKind};

use super::{Mutex, MutexGuard};

/// One async mutex per key (lockscope addition): per-user, per-file, per-account locks
/// without a map of mutexes to manage. A key's mutex is made when the key is first locked and
/// removed when its last guard and waiter are gone, so the map holds only keys in use,
/// however many keys pass through it.
///
/// Each key's mutex is a primitive like any other for the detector, named `"<map>[<key>]"`
/// (the key's `Display`) in reports, `/debug/*` and the live view: an ABBA over two keys is a
/// `lock-order-inversion` and, live, a `deadlock`. Metrics count every key under the map's
/// name, so keys never become metric labels.
///
/// Unlike Dart's `synchronized` on any object, the namespace is the map's own: two maps never
/// share a key's lock.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// use lockscope::tokio::KeyedMutex;
///
/// let users = KeyedMutex::named("users");
/// let alice = users.lock(&"alice".to_string()).await;
/// let bob = users.lock(&"bob".to_string()).await; // another key: no contention
/// assert_eq!(users.len(), 2);
/// drop((alice, bob));
/// assert!(users.is_empty(), "unused keys are removed");
/// # }
/// ```
pub struct KeyedMutex<K> {
    name: Arc<str>,
    site: &'static Location<'static>,
    /// Each key in use: its mutex, and how many guards and waiters use it. Changed only
    /// under this lock (an uninstrumented one: lockscope's own books), for a few instructions.
    keys: std::sync::Mutex<Keys<K>>,
}

/// The keys in use: each one's mutex and count of users (guards and waiters).
type Keys<K> = HashMap<K, (Arc<Mutex<()>>, usize)>;

/// A use of one key's mutex (a waiter's or a guard's): dropped, it counts itself out, and the
/// last one removes the key.
struct Ticket<'a, K: Eq + Hash> {
    map: &'a KeyedMutex<K>,
    key: K,
    mutex: Arc<Mutex<()>>,
}

/// The hold of one key of a [`KeyedMutex`]; dropped, it unlocks the key.
#[must_use = "if unused the key will immediately unlock"]
pub struct KeyedMutexGuard<'a, K: Eq + Hash> {
    // Field order is drop order: the guard borrows the mutex that `ticket` keeps alive.
    _guard: MutexGuard<'static, ()>,
    ticket: Ticket<'a, K>,
}

/// A lock of a key in progress. Field order is drop order, as in the guard.
struct Waiting<'a, K: Eq + Hash> {
    lock: Pin<Box<dyn Future<Output = MutexGuard<'static, ()>> + Send>>,
    ticket: Ticket<'a, K>,
}

impl<K: Eq + Hash + Clone + fmt::Display> KeyedMutex<K> {
    /// A keyed mutex named after the caller's location (`path/to/file.rs:LINE`).
    #[track_caller]
    pub fn new() -> Self {
        let site = Location::caller();
        Self::make(lockscope_detector::prim::site_string(site).into(), site)
    }

    /// A keyed mutex named `name`: its keys are named `"name[key]"`.
    ///
    /// ```
    /// let files = lockscope::tokio::KeyedMutex::<u32>::named("files");
    /// assert_eq!(files.name(), "files");
    /// ```
    #[track_caller]
    pub fn named(name: impl AsRef<str>) -> Self {
        Self::make(name.as_ref().into(), Location::caller())
    }

    fn make(name: Arc<str>, site: &'static Location<'static>) -> Self {
        KeyedMutex {
            name,
            site,
            keys: std::sync::Mutex::new(HashMap::new()),
        }
    }

    /// The map's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    fn keys(&self) -> std::sync::MutexGuard<'_, Keys<K>> {
        // Poisoning cannot leave the map inconsistent: each change is one insert or remove.
        self.keys.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Counts one more use of `key`, making its mutex if the key is not in use.
    fn enter(&self, key: &K) -> Ticket<'_, K> {
        let mut keys = self.keys();
        let (mutex, users) = keys.entry(key.clone()).or_insert_with(|| {
            let name = format!("{}[{key}]", self.name);
            let cell = PrimCell::in_series(&name, &self.name, PrimKind::Mutex, self.site, 1);
            let mutex = Mutex {
                cell,
                sem: super::untraced(|| tokio::sync::Semaphore::new(1)),
                c: std::cell::UnsafeCell::new(()),
            };
            (Arc::new(mutex), 0)
        });
        *users += 1;
        Ticket {
            map: self,
            key: key.clone(),
            mutex: mutex.clone(),
        }
    }

    /// Locks `key`, waiting in FIFO order as [`Mutex::lock`] does while another task holds
    /// it.
    ///
    /// # Cancel safety
    ///
    /// As [`Mutex::lock`]: dropping the future gives up its place in the key's queue (and the
    /// key, if nobody else uses it).
    #[track_caller]
    pub fn lock<'a>(&'a self, key: &K) -> impl Future<Output = KeyedMutexGuard<'a, K>> + 'a
    where
        K: Send + Sync,
    {
        let ticket = self.enter(key);
        // SAFETY: the mutex lives in an `Arc` that `ticket` keeps, and both `Waiting` and the
        // guard drop the borrow before the ticket (field order); the borrow never leaves them.
        let mutex: &'static Mutex<()> = unsafe { &*Arc::as_ptr(&ticket.mutex) };
        let mut waiting = Waiting {
            lock: Box::pin(mutex.lock()),
            ticket,
        };
        async move {
            let guard = (&mut waiting.lock).await;
            KeyedMutexGuard {
                _guard: guard,
                ticket: waiting.ticket,
            }
        }
    }

    /// Locks `key` if no other task holds it; `None` otherwise.
    ///
    /// ```
    /// let m = lockscope::tokio::KeyedMutex::named("try");
    /// let a = m.try_lock(&1).unwrap();
    /// assert!(m.try_lock(&1).is_none());
    /// assert!(m.try_lock(&2).is_some());
    /// drop(a);
    /// ```
    #[track_caller]
    pub fn try_lock(&self, key: &K) -> Option<KeyedMutexGuard<'_, K>> {
        let ticket = self.enter(key);
        // SAFETY: as in `lock`.
        let mutex: &'static Mutex<()> = unsafe { &*Arc::as_ptr(&ticket.mutex) };
        let guard = mutex.try_lock().ok()?;
        Some(KeyedMutexGuard {
            _guard: guard,
            ticket,
        })
    }

    /// How many keys are in use (held or waited for) now.
    pub fn len(&self) -> usize {
        self.keys().len()
    }

    /// Whether no key is in use.
    pub fn is_empty(&self) -> bool {
        self.keys().is_empty()
    }
}

impl<K: Eq + Hash + Clone + fmt::Display> Default for KeyedMutex<K> {
    #[track_caller]
    fn default() -> Self {
        Self::new()
    }
}

impl<K: Eq + Hash> Drop for Ticket<'_, K> {
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

impl<K: Eq + Hash> KeyedMutexGuard<'_, K> {
    /// The key held.
    pub fn key(&self) -> &K {
        &self.ticket.key
    }
}

impl<K: Eq + Hash + fmt::Debug> fmt::Debug for KeyedMutexGuard<'_, K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KeyedMutexGuard")
            .field("key", &self.ticket.key)
            .finish()
    }
}

impl<K> fmt::Debug for KeyedMutex<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KeyedMutex")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}
