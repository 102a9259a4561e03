//! The task index: a task's holds, wherever its entries live.

use std::sync::atomic::{self as std_atomic, AtomicU8, Ordering};

use super::*;

// ---------------------------------------------------------------------------------------------
// The task index: a task's holds, wherever its entries live
// ---------------------------------------------------------------------------------------------

// A tokio task moves between worker threads at its `.await`s, so the holds it took before a
// move sit in another thread's table. The task index finds them: a fixed, direct-mapped array
// of slots keyed by task id, each pointing at up to `REFS` entries of its task. A task claims
// its slot with one compare-and-swap the first time it holds something (and keeps it, so a
// task that locks in a loop never pays it again); everything else is plain loads and stores,
// and every pointer is checked against the entry's own actor before use, so a slot taken over
// by another task (a hash collision, or a task that outlived its turn) can only make a check
// miss, never report a hold that is not there.

pub(super) const TASK_SLOTS: usize = 4096;

/// Holds of a task that the index had no room for (its slot serves another task that still
/// holds something, or the task holds more than `REFS` at once): checks that ask the index
/// about that task may miss them. Exported as `lockscope_detector_dropped_total{what="events"}`.
pub(crate) static UNINDEXED: std_atomic::AtomicU64 = std_atomic::AtomicU64::new(0);
/// Holds one slot indexes at once: six, so that a slot is one cache line.
pub(super) const REFS: usize = 6;
const _: () = assert!(
    std::mem::size_of::<TaskSlot>() == 64 && std::mem::align_of::<TaskSlot>() == 64,
    "`unindex` finds a slot by rounding a ref's address down to the slot's size"
);

pub(super) static SLOTS: [TaskSlot; TASK_SLOTS] = [const {
    TaskSlot {
        task: std_atomic::AtomicU64::new(0),
        bits: AtomicU8::new(0),
        refs: [const { std_atomic::AtomicPtr::new(std::ptr::null_mut()) }; REFS],
    }
}; TASK_SLOTS];

#[inline]
pub(super) fn slot_of(task: u64) -> &'static TaskSlot {
    // Fibonacci hashing: sequential task ids spread over the whole table.
    &SLOTS[(task.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 52) as usize & (TASK_SLOTS - 1)]
}

/// The live entry behind an index pointer, if it is a hold of `task`.
#[inline]
pub(super) fn indexed(p: *mut Entry, task: u64) -> Option<&'static Entry> {
    if p.is_null() {
        return None;
    }
    // SAFETY: index pointers point at entries, and tables (so entries) are never freed.
    let e: &'static Entry = unsafe { &*p };
    (e.actor.load(Ordering::Relaxed) == task && e.key.load(Ordering::Acquire) != 0).then_some(e)
}

#[cold]
pub(super) fn claim(s: &TaskSlot, task: u64) -> bool {
    let cur = s.task.load(Ordering::Relaxed);
    let idle = cur == 0
        || s.refs
            .iter()
            .all(|r| indexed(r.load(Ordering::Relaxed), cur).is_none());
    // Relaxed: the slot word only says whose pointers to trust; every use re-checks entries.
    let won = idle
        && s.task
            .compare_exchange(cur, task, Ordering::Relaxed, Ordering::Relaxed)
            .is_ok();
    if won {
        s.bits.store(0, Ordering::Relaxed);
    }
    won
}

/// What a task's slot said when [`task_look`] read it: whether the slot is the task's, and
/// its bits. Read once where an acquisition asks whether the task holds anything, it serves
/// the hold's indexing too ([`index_looked`]).
#[derive(Clone, Copy)]
pub(crate) struct TaskLook {
    slot: &'static TaskSlot,
    mine: bool,
    bits: u8,
}

impl TaskLook {
    /// Whether the task holds anything, on any thread (as far as the index knows), as
    /// [`task_any`].
    #[inline(always)]
    pub(crate) fn holds(&self) -> bool {
        self.mine && self.bits != 0
    }
}

/// `task`'s slot, read: its owner and bits, in one cache line.
#[inline(always)]
pub(crate) fn task_look(task: u64) -> TaskLook {
    let slot = slot_of(task);
    TaskLook {
        slot,
        mine: slot.task.load(Ordering::Relaxed) == task,
        bits: slot.bits.load(Ordering::Relaxed),
    }
}

/// Indexes `e`, a new hold of `task`, whose slot read `look` since the task last held
/// anything: a task's first hold in a slot that is already its own takes the first ref with
/// three stores and no more loads; anything else is [`index_task`].
///
/// The values read may be stale only where [`index_task`]'s would be too: a slot is claimed
/// by another task only once none of its refs is live (`claim`), and this task, running here,
/// is the only one that adds to its own.
#[inline(always)]
pub(crate) fn index_looked(e: &Entry, task: u64, look: TaskLook) {
    if !(look.mine && look.bits == 0) {
        index_task(e, task);
        return;
    }
    let r = &look.slot.refs[0];
    r.store((e as *const Entry).cast_mut(), Ordering::Relaxed);
    look.slot.bits.store(1, Ordering::Relaxed);
    e.task_ref.store(
        (r as *const std_atomic::AtomicPtr<Entry>).cast_mut(),
        Ordering::Relaxed,
    );
}

/// Indexes `e`, a new hold of `task`.
#[inline]
pub(crate) fn index_task(e: &Entry, task: u64) {
    let s = slot_of(task);
    if s.task.load(Ordering::Relaxed) != task && !claim(s, task) {
        // The slot serves a task that still holds something: a miss, never a lie.
        UNINDEXED.fetch_add(1, Ordering::Relaxed);
        return;
    }
    let mut bits = s.bits.load(Ordering::Relaxed);
    if bits == (1 << REFS) - 1 {
        // Full by the hint: drop the bits of refs that no longer point at a live hold.
        bits = 0;
        for (i, r) in s.refs.iter().enumerate() {
            if indexed(r.load(Ordering::Relaxed), task).is_some() {
                bits |= 1 << i;
            }
        }
        if bits == (1 << REFS) - 1 {
            // More than REFS holds at once: the rest go unindexed (a miss).
            UNINDEXED.fetch_add(1, Ordering::Relaxed);
            return;
        }
    }
    let i = (!bits).trailing_zeros() as usize;
    let r = &s.refs[i];
    r.store((e as *const Entry).cast_mut(), Ordering::Relaxed);
    s.bits.store(bits | (1 << i), Ordering::Relaxed);
    e.task_ref.store(
        (r as *const std_atomic::AtomicPtr<Entry>).cast_mut(),
        Ordering::Relaxed,
    );
}

/// Drops `e` from the task index (before its key is cleared).
#[inline(always)]
pub(super) fn unindex(e: &Entry) {
    let r = e.task_ref.load(Ordering::Relaxed);
    if !r.is_null() {
        e.task_ref.store(std::ptr::null_mut(), Ordering::Relaxed);
        // SAFETY: `r` points into the static slot array.
        let cell = unsafe { &*r };
        if std::ptr::eq(cell.load(Ordering::Relaxed), e) {
            cell.store(std::ptr::null_mut(), Ordering::Relaxed);
            // The slot and the ref's index, from the ref's address: a slot is one aligned
            // line (see `TaskSlot`), so its address is the ref's rounded down.
            let at = r as usize;
            let line = std::mem::size_of::<TaskSlot>();
            // SAFETY: `r` points at a ref inside a slot of the static array, and slots are
            // `line` bytes, aligned to `line`: the rounded address is that slot's.
            let slot = unsafe { &*(r.map_addr(|a| a & !(line - 1)) as *const TaskSlot) };
            let i = (at - slot.refs.as_ptr() as usize)
                / std::mem::size_of::<std_atomic::AtomicPtr<Entry>>();
            let bits = slot.bits.load(Ordering::Relaxed);
            slot.bits.store(bits & !(1 << i), Ordering::Relaxed);
        }
    }
}

/// Whether `task` holds anything, on any thread (as far as the index knows).
#[inline]
pub(crate) fn task_any(task: u64) -> bool {
    task_look(task).holds()
}

/// The primitive ids, flags and entries of `task`'s holds, on any thread.
pub(crate) fn task_mine(task: u64, out: &mut [(u64, u8, *const Entry); 8]) -> usize {
    let s = slot_of(task);
    if s.task.load(Ordering::Relaxed) != task {
        return 0;
    }
    let mut n = 0;
    for r in &s.refs {
        if let Some(e) = indexed(r.load(Ordering::Relaxed), task) {
            let prim = e.key.load(Ordering::Acquire);
            let flags = (e.meta.load(Ordering::Relaxed) >> 40) as u8;
            if prim != 0 && n < out.len() {
                out[n] = (prim, flags, e);
                n += 1;
            }
        }
    }
    n
}

/// A full view of any entry (from [`task_mine`] or [`mine_inline`]).
pub(crate) fn view_entry(e: *const Entry) -> Option<HoldView> {
    // SAFETY: entries and their tables are never freed.
    let e = unsafe { &*e };
    // SAFETY: `owner` was set from the table's own address at creation.
    let thread = unsafe { &*e.owner }.thread.load(Ordering::Relaxed);
    e.view(thread)
}
