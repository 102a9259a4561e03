//! Holders outside this process: a primitive whose holder the books cannot see (a
//! cross-process lock held by another process) may carry a description of it, set by its
//! wrapper while it waits, for reports and `/debug/locks`.
//!
//! A side table rather than a field of [`Prim`]: only cross-process locks use it, and every
//! other primitive pays nothing for it (not a word, not a load: [`ANY`] keeps readers out of
//! the table until a description was first set).

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, LazyLock};

use parking_lot::Mutex;

use crate::state::prim::Prim;

/// Whether a description was ever set: until then, readers skip the table.
static ANY: AtomicBool = AtomicBool::new(false);

/// Primitive id → who holds it outside this process.
static TABLE: LazyLock<Mutex<HashMap<u64, Arc<str>>>> = LazyLock::new(Default::default);

/// Sets (or, with `None`, clears) the description of `prim`'s holder outside this process,
/// e.g. ``process 4121 (`cargo test`)``: reports of its waits say it is held by that.
pub fn set(prim: &Prim, who: Option<&str>) {
    match who {
        Some(who) => {
            // Relaxed: the table's lock orders the entry itself; the flag only lets readers
            // skip a table that was never written.
            ANY.store(true, Ordering::Relaxed);
            TABLE.lock().insert(prim.id().0, who.into());
        }
        None if ANY.load(Ordering::Relaxed) => {
            TABLE.lock().remove(&prim.id().0);
        }
        None => {}
    }
}

/// Who holds primitive `id` outside this process, as last described, if anyone.
pub fn of(id: u64) -> Option<Arc<str>> {
    if !ANY.load(Ordering::Relaxed) {
        return None;
    }
    TABLE.lock().get(&id).cloned()
}

/// The primitive is gone: its description too.
pub(crate) fn forget(id: u64) {
    if ANY.load(Ordering::Relaxed) {
        TABLE.lock().remove(&id);
    }
}
