//! [`KeyedMutex`]: one blocking mutex per key, made when first locked, gone when unused.

use std::fmt;
use std::hash::Hash;
use std::panic::Location;
use std::time::Duration;

use lockscope_detector::__private::hooks::PrimKind;

use super::{Mutex, MutexGuard};
use crate::keyed::{Keyed, KeyedGuard, Ticket};

/// One blocking mutex per key (lockscope addition), the blocking form of
/// [`lockscope::tokio::KeyedMutex`](crate::tokio::KeyedMutex): per-user, per-file,
/// per-account locks without a map of mutexes to manage. A key's mutex is made when the key is
/// first locked and removed when its last guard and waiter are gone, so the map holds only keys
/// in use, however many keys pass through it.
///
/// Each key's mutex is a blocking mutex like any other for the detector, named
/// `"<map>[<key>]"` (the key's `Display`) in reports, `/debug/*` and the live view: an ABBA
/// over two keys is a `lock-order-inversion` and, live, a `deadlock`. Metrics count every key
/// under the map's name, so keys never become metric labels.
///
/// ```
/// use lockscope::parking_lot::KeyedMutex;
///
/// let files = KeyedMutex::named("files");
/// let a = files.lock(&"a.txt");
/// let b = files.lock(&"b.txt"); // another key: no contention
/// assert!(files.try_lock(&"a.txt").is_none());
/// drop((a, b));
/// assert!(files.is_empty(), "unused keys are removed");
/// ```
pub struct KeyedMutex<K> {
    keys: Keyed<K, Mutex<()>>,
}

/// The hold of one key of a [`KeyedMutex`]; dropped, it unlocks the key.
pub type KeyedMutexGuard<'a, K> = KeyedGuard<'a, K, MutexGuard<'static, ()>, Mutex<()>>;

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
    /// let users = lockscope::parking_lot::KeyedMutex::<u32>::named("users");
    /// assert_eq!(users.name(), "users");
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
        self.keys.enter(key, PrimKind::BlockingMutex, |cell| {
            Mutex::with_cell(cell, ())
        })
    }

    /// Locks `key`, blocking while another thread holds it, as [`Mutex::lock`] does.
    #[track_caller]
    pub fn lock(&self, key: &K) -> KeyedMutexGuard<'_, K> {
        let ticket = self.enter(key);
        // SAFETY: the guard holds the borrow in a field dropped before its ticket; the borrow
        // never leaves it. (The same in the other forms below.)
        let mutex: &'static Mutex<()> = unsafe { ticket.mutex() };
        KeyedGuard::new(mutex.lock(), ticket)
    }

    /// Locks `key` if no other thread holds it; `None` otherwise.
    #[track_caller]
    pub fn try_lock(&self, key: &K) -> Option<KeyedMutexGuard<'_, K>> {
        let ticket = self.enter(key);
        // SAFETY: as in `lock`.
        let mutex: &'static Mutex<()> = unsafe { ticket.mutex() };
        Some(KeyedGuard::new(mutex.try_lock()?, ticket))
    }

    /// Locks `key`, waiting at most `timeout`, as [`Mutex::try_lock_for`] does; `None` when
    /// it is still held then.
    ///
    /// ```
    /// use std::time::Duration;
    /// let m = lockscope::parking_lot::KeyedMutex::named("timed");
    /// let held = m.lock(&1);
    /// assert!(std::thread::scope(|s| {
    ///     s.spawn(|| m.try_lock_for(&1, Duration::from_millis(5)).is_none()).join().unwrap()
    /// }));
    /// drop(held);
    /// ```
    #[track_caller]
    pub fn try_lock_for(&self, key: &K, timeout: Duration) -> Option<KeyedMutexGuard<'_, K>> {
        let ticket = self.enter(key);
        // SAFETY: as in `lock`.
        let mutex: &'static Mutex<()> = unsafe { ticket.mutex() };
        Some(KeyedGuard::new(mutex.try_lock_for(timeout)?, ticket))
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
