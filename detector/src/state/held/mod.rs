//! Who holds what: one small table of hold entries per OS thread.
//!
//! An acquisition writes an entry into the table of the thread it runs on; the entry names the
//! actor (task or thread), the primitive, the site, when, and how (mode, permits). The owning
//! thread is the only writer of free entries, so taking an entry needs no atomic
//! read-modify-write: a few relaxed stores and one release store of the key publish it. A
//! release clears the key with one store, from whichever thread drops the guard; it never
//! touches any other entry, so it cannot race with the owner filling a free one.
//!
//! An entry carries a generation, bumped by every fill, that makes a snapshot's read of it a
//! seqlock read: the owner stores an odd generation, then the fields, then the even one; a
//! reader keeps what it read only if it saw the same even generation before and after, so a
//! view never mixes two holds that used the entry one after the other (even two holds of the
//! same primitive). The owner is the only writer of the generation: plain stores, no RMW.
//!
//! The owner keeps a bitmap of the entries it filled in a `const` thread-local. Remote clears
//! do not update it, so the bitmap may call a free entry taken, never the reverse; it is
//! re-read from the keys when it fills up.
//!
//! Beyond [`INLINE`] entries a thread spills into an overflow list behind a mutex, indexed by
//! actor so that finding one task's holds stays cheap when hundreds of tasks on one worker
//! each hold a permit across an `.await`.
//!
//! Limitation, by design: a task that migrates to another worker while holding a guard leaves
//! its entry on the first thread. Snapshots see every entry wherever it is, so the wait-for
//! graph is complete; only the acquire-time checks (nested acquire, new lock-order edges) look
//! at the current thread's table and may miss a hold taken before the migration. A miss, never
//! a false report.

use std::collections::HashMap;
use std::panic::Location;
use std::ptr::NonNull;
use std::sync::atomic::{self as std_atomic, AtomicU8};

use parking_lot::Mutex;

use crate::base::loom::{AtomicBool, AtomicPtr, AtomicU64, AtomicUsize};
pub use crate::model::mode::{
    FLAG_BLOCKING_IN_TASK, FLAG_MOVABLE, FLAG_PINNED_THREAD, FLAG_QUICK, FLAG_REENTRY,
    FLAG_SAMPLED, FLAG_SPLIT, FLAG_TRY, Meta, Mode,
};

mod entry;
#[cfg(all(test, loom))]
mod loom_models;
mod table;
mod tally;
mod task_index;
#[cfg(test)]
mod tests;
mod waits;

pub use entry::*;
pub use table::*;
pub(crate) use tally::*;
pub(crate) use task_index::*;
pub(crate) use waits::{NewWait, wait_push};
pub use waits::{SLOT_SEQ, WAITS, WaitRef, wait_live, waits_by_prim};

/// Inline entries per thread (two in the loom models, to keep them small).
pub const INLINE: usize = if cfg!(loom) { 2 } else { 16 };
/// Every inline entry in use (a thread's mask).
pub(crate) const FULL: u32 = (1u32 << INLINE) - 1;
const CHUNK: usize = 32;

// The hold table's data, defined here so that its parts (the submodules) share the private
// fields; each part holds the behaviour.

/// One hold. All fields but the two set at creation are atomics, so snapshots can read them
/// while the owner writes.
///
/// 8-aligned (asserted below), so that the low bits of a pointer to it are free for a
/// wrapper's tags (see [`Hold::into_raw`](crate::runtime::hooks::Hold::into_raw)).
pub struct Entry {
    key: AtomicU64,
    /// `generation | scope << 32`: the generation is odd while the owner fills the entry and
    /// even once it is filled (see the module docs); the scope is the acquiring thread's test
    /// scope, whole.
    tag: AtomicU64,
    actor: AtomicU64,
    site: AtomicPtr<Location<'static>>,
    since: AtomicU64,
    meta: AtomicU64,
    /// Where the task index points at this entry (null: not indexed). Touched only by the
    /// entry's current holder.
    task_ref: AtomicPtr<std_atomic::AtomicPtr<Entry>>,
    /// The table this entry belongs to (fixed at creation).
    owner: *const ThreadHeld,
    /// Its index: `< INLINE` inline, else `INLINE + overflow index` (fixed at creation).
    slot: u32,
}

struct Overflow {
    // Boxed on purpose: entries must keep their address when the vector grows.
    #[allow(clippy::vec_box)]
    chunks: Vec<Box<[Entry; CHUNK]>>,
    free: Vec<u32>,
    by_actor: HashMap<u64, Vec<u32>>,
}

/// The hold table of one OS thread.
pub struct ThreadHeld {
    /// lockscope number of the thread using this table now (tables are recycled).
    thread: AtomicU64,
    inline: [Entry; INLINE],
    overflow: Mutex<Overflow>,
    overflow_len: AtomicUsize,
    orphaned: AtomicBool,
    /// Short holds released on this thread, per primitive: see [`tally_in`].
    tallies: [Tally; TALLIES],
    /// Waits that began on this thread (see `waits`).
    waits: [waits::WaitSlot; WAITS],
}

/// Where a hold lives, so that its guard can clear it from any thread: one pointer.
///
/// The entry knows its table and slot. Tables are never freed (only recycled once their
/// thread exited and they hold nothing), so the pointer is always valid.
pub struct EntryRef(NonNull<Entry>);

/// The short holds of one primitive released on one thread (the sampled ones in a histogram
/// of their own, the untimed ones as a count: reads apportion them, see
/// `Stats::count_short`), and the waits that ended there in a grant.
///
/// Written only by the thread using the table (plain load and store, no RMW), read by
/// scrapes, and cleared by the primitive's unregistering, which takes the counts into the
/// retired statistics. A slot is claimed by the first primitive that needs it and kept until
/// that primitive is dropped (no eviction, so that no count is ever in flight between a slot
/// and a primitive, and the sums a scrape reads only grow).
#[derive(Default)]
struct Tally {
    /// The primitive's id; 0: free.
    prim: std_atomic::AtomicU64,
    /// The sampled short holds.
    sampled: crate::base::stats::Histogram,
    /// The untimed short holds.
    untimed: std_atomic::AtomicU64,
    /// Acquisitions granted here after a wait.
    contended: std_atomic::AtomicU64,
    /// Their waits: each untimed short one in the bucket of the latest sampled one here.
    waits: crate::base::stats::Histogram,
    /// The latest sampled short wait here: `bucket << 56 | ns` (0: none yet).
    wait_last: std_atomic::AtomicU64,
}

/// One cache line: the task word and the bits that [`task_any`] reads sit beside the refs an
/// index writes (a task that alternates between workers moves one line, not two).
#[repr(C, align(64))]
struct TaskSlot {
    task: std_atomic::AtomicU64,
    /// Which `refs` are in use (a hint: set by the owner, cleared by releases with a plain
    /// load and store, so a race can leave a stale bit, costing a scan, or lose one, a miss).
    bits: AtomicU8,
    refs: [std_atomic::AtomicPtr<Entry>; REFS],
}
