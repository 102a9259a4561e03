//! [`KeyedMutex`]: one async mutex per key, made when first locked, gone when unused.

use std::fmt;
use std::future::Future;
use std::hash::Hash;
use std::panic::Location;
use std::pin::Pin;

use lockscope_detector::__private::hooks::PrimKind;

use super::{Mutex, MutexGuard};
use crate::keyed::{Keyed, KeyedGuard, Ticket};

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
    keys: Keyed<K, Mutex<()>>,
}

/// The hold of one key of a [`KeyedMutex`]; dropped, it unlocks the key.
pub type KeyedMutexGuard<'a, K> = KeyedGuard<'a, K, MutexGuard<'static, ()>, Mutex<()>>;

/// A lock of a key in progress. Field order is drop order, as in the guard.
struct Waiting<'a, K: Eq + Hash> {
    lock: Pin<Box<dyn Future<Output = MutexGuard<'static, ()>> + Send>>,
    ticket: Ticket<'a, K, Mutex<()>>,
}

impl<K: Eq + Hash + Clone + fmt::Display> KeyedMutex<K> {
    /// A keyed mutex named after the caller's location (`path/to/file.rs:LINE`).
    #[track_caller]
    pub fn new() -> Self {
        KeyedMutex {
            keys: Keyed::new(None, Location::caller()),
        }
    }

    /// A keyed mutex named `name`: its keys are named `"name[key]"`.
    ///
    /// ```
    /// let files = lockscope::tokio::KeyedMutex::<u32>::named("files");
    /// assert_eq!(files.name(), "files");
    /// ```
    #[track_caller]
    pub fn named(name: impl AsRef<str>) -> Self {
        KeyedMutex {
            keys: Keyed::new(Some(name.as_ref()), Location::caller()),
        }
    }

    /// The map's name.
    pub fn name(&self) -> &str {
        self.keys.name()
    }

    /// Counts one more use of `key`, making its mutex if the key is not in use.
    fn enter(&self, key: &K) -> Ticket<'_, K, Mutex<()>> {
        self.keys.enter(key, PrimKind::Mutex, |cell| Mutex {
            cell,
            sem: super::untraced(|| tokio::sync::Semaphore::new(1)),
            c: std::cell::UnsafeCell::new(()),
        })
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
        // SAFETY: both `Waiting` and the guard drop the borrow before the ticket (field
        // order); the borrow never leaves them.
        let mutex: &'static Mutex<()> = unsafe { ticket.mutex() };
        let mut waiting = Waiting {
            lock: Box::pin(mutex.lock()),
            ticket,
        };
        async move {
            let guard = (&mut waiting.lock).await;
            KeyedGuard::new(guard, waiting.ticket)
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
        let mutex: &'static Mutex<()> = unsafe { ticket.mutex() };
        let guard = mutex.try_lock().ok()?;
        Some(KeyedGuard::new(guard, ticket))
    }

    /// How many keys are in use (held or waited for) now.
    pub fn len(&self) -> usize {
        self.keys.len()
    }

    /// Whether no key is in use.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl<K: Eq + Hash + Clone + fmt::Display> Default for KeyedMutex<K> {
    #[track_caller]
    fn default() -> Self {
        Self::new()
    }
}

impl<K> fmt::Debug for KeyedMutex<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.keys.fmt(f)
    }
}
