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

pub use crate::model::mode::{
    FLAG_BLOCKING_IN_TASK, FLAG_MOVABLE, FLAG_PINNED_THREAD, FLAG_REENTRY, FLAG_SPLIT, FLAG_TRY,
    Mode, pack_meta,
};

mod entry;
#[cfg(all(test, loom))]
mod loom_models;
mod table;
mod tally;
mod task_index;
#[cfg(test)]
mod tests;

pub use entry::*;
pub use table::*;
pub(crate) use tally::*;
pub(crate) use task_index::*;

/// Inline entries per thread (two in the loom models, to keep them small).
pub const INLINE: usize = if cfg!(loom) { 2 } else { 16 };
const FULL: u32 = (1u32 << INLINE) - 1;
const CHUNK: usize = 32;
