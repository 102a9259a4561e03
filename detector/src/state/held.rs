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

use std::cell::Cell;
use std::collections::HashMap;
use std::panic::Location;
use std::ptr::NonNull;
use std::sync::atomic::{self as std_atomic, AtomicU8, Ordering};
use std::sync::{Arc, LazyLock};

use parking_lot::Mutex;

use crate::base::loom::{AtomicBool, AtomicPtr, AtomicU64, AtomicUsize, fence};
pub use crate::model::mode::{
    FLAG_BLOCKING_IN_TASK, FLAG_MOVABLE, FLAG_PINNED_THREAD, FLAG_REENTRY, FLAG_SPLIT, FLAG_TRY,
    Mode, pack_meta,
};
use crate::state::actor;
use crate::state::tls::{LOCAL, Local};

/// Inline entries per thread (two in the loom models, to keep them small).
pub const INLINE: usize = if cfg!(loom) { 2 } else { 16 };
const FULL: u32 = (1u32 << INLINE) - 1;
const CHUNK: usize = 32;

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

impl Entry {
    fn new(owner: *const ThreadHeld, slot: u32) -> Entry {
        Entry {
            key: AtomicU64::new(0),
            tag: AtomicU64::new(0),
            actor: AtomicU64::new(0),
            site: AtomicPtr::new(std::ptr::null_mut()),
            since: AtomicU64::new(0),
            meta: AtomicU64::new(0),
            task_ref: AtomicPtr::new(std::ptr::null_mut()),
            owner,
            slot,
        }
    }
}

/// A copy of one hold, as snapshots and checks see it.
#[derive(Clone, Copy, Debug)]
pub struct HoldView {
    /// Primitive id.
    pub prim: u64,
    /// Holder.
    pub actor: actor::ActorId,
    /// Where it was acquired.
    pub site: &'static Location<'static>,
    /// Since when (coarse ns).
    pub since: u64,
    /// Permits held.
    pub permits: u32,
    /// How it is held.
    pub mode: Mode,
    /// `FLAG_*` bits.
    pub flags: u8,
    /// Test scope of the acquiring thread.
    pub scope: u32,
    /// lockscope number of the thread whose table holds the entry (where it was acquired).
    pub thread: u64,
}

impl HoldView {
    /// Whether the holder may have handed this hold to another task (owned forms).
    pub fn movable(&self) -> bool {
        self.flags & FLAG_MOVABLE != 0
    }
}

/// Alignment of [`Entry`]: the pointer tags a wrapper may use are the bits below it.
pub const ENTRY_ALIGN: usize = std::mem::align_of::<Entry>();
const _: () = assert!(
    ENTRY_ALIGN >= 8,
    "entries leave three low pointer bits free"
);

/// What a new hold entry records.
#[derive(Clone, Copy)]
pub(crate) struct NewHold {
    /// Primitive id (the entry's key).
    pub(crate) prim: u64,
    /// Holder ([`actor::ActorId`] as a word).
    pub(crate) actor: u64,
    /// Where it was acquired.
    pub(crate) site: &'static Location<'static>,
    /// Since when (coarse clock).
    pub(crate) since: u64,
    /// [`pack_meta`]'s word.
    pub(crate) meta: u64,
    /// Test scope of the acquiring thread.
    pub(crate) scope: u32,
}

impl Entry {
    /// Fills a free entry. Only the table's owner fills, so the generation has one writer.
    #[inline]
    fn fill(&self, h: NewHold) {
        let generation = (self.tag.load(Ordering::Relaxed) as u32) | 1;
        let scope = u64::from(h.scope) << 32;
        self.tag
            .store(u64::from(generation) | scope, Ordering::Relaxed);
        // Release fence: a reader that sees any field stored below sees the odd generation
        // above (or later), so it drops what it read (the seqlock's writer side).
        fence(Ordering::Release);
        self.actor.store(h.actor, Ordering::Relaxed);
        self.site.store(
            (h.site as *const Location<'static>).cast_mut(),
            Ordering::Relaxed,
        );
        self.since.store(h.since, Ordering::Relaxed);
        self.meta.store(h.meta, Ordering::Relaxed);
        // Release: a reader that sees this key (Acquire) sees the fields stored above (the
        // owner's bitmap refresh and the task index read the key alone).
        self.key.store(h.prim, Ordering::Release);
        // Release: a reader that sees this even generation (Acquire) sees the fields above.
        self.tag.store(
            u64::from(generation.wrapping_add(1)) | scope,
            Ordering::Release,
        );
    }

    /// A consistent copy of the hold, or `None` when the entry is free or being refilled.
    fn view(&self, thread: u64) -> Option<HoldView> {
        // Acquire: pairs with the Release of the even generation in `fill`.
        let tag = self.tag.load(Ordering::Acquire);
        if tag & 1 != 0 {
            return None; // being filled
        }
        let prim = self.key.load(Ordering::Acquire);
        if prim == 0 {
            return None;
        }
        let actor = self.actor.load(Ordering::Relaxed);
        let site = self.site.load(Ordering::Relaxed);
        let since = self.since.load(Ordering::Relaxed);
        let meta = self.meta.load(Ordering::Relaxed);
        // Acquire fence: if a load above saw a later fill's store, the generation below is
        // that fill's (or later), not `tag` (the seqlock's reader side).
        fence(Ordering::Acquire);
        if self.tag.load(Ordering::Relaxed) != tag || site.is_null() {
            return None;
        }
        Some(HoldView {
            prim,
            actor: actor::ActorId::from_u64(actor)?,
            // SAFETY: `site` was stored from a `&'static Location` in `fill`; non-null checked.
            site: unsafe { &*site },
            since,
            permits: meta as u32,
            mode: Mode::from_u8((meta >> 32) as u8),
            flags: (meta >> 40) as u8,
            scope: (tag >> 32) as u32,
            thread,
        })
    }
}

struct Overflow {
    // Boxed on purpose: entries must keep their address when the vector grows.
    #[allow(clippy::vec_box)]
    chunks: Vec<Box<[Entry; CHUNK]>>,
    free: Vec<u32>,
    by_actor: HashMap<u64, Vec<u32>>,
}

impl Overflow {
    fn entry(&self, i: u32) -> &Entry {
        &self.chunks[i as usize / CHUNK][i as usize % CHUNK]
    }
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
}

/// Tally slots per thread table.
const TALLIES: usize = 16;

/// A count of short holds of one primitive released on one thread.
///
/// Written only by the thread using the table (plain load and store, no RMW), read by
/// scrapes, and cleared by the primitive's unregistering, which takes the count into the
/// retired statistics. A slot is claimed by the first primitive that needs it and kept until
/// that primitive is dropped (no eviction, so that no count is ever in flight between a slot
/// and a primitive, and the sums a scrape reads only grow).
#[derive(Default)]
struct Tally {
    /// The primitive's id; 0: free.
    prim: std_atomic::AtomicU64,
    count: std_atomic::AtomicU64,
}

#[inline]
fn tally_slot(prim: u64) -> usize {
    (prim.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 60) as usize & (TALLIES - 1)
}

/// Counts a release of a hold of `prim` that lasted under a clock tick in this thread's
/// table, if its slot is this primitive's or free: false means the caller must record the
/// hold in the primitive's own histogram. This keeps the common release off the primitive's
/// cache line: no atomic RMW for shared holds, no line bouncing between threads for any.
#[inline]
pub(crate) fn tally_in(l: &Local, prim: u64) -> bool {
    let h = l.held.get();
    if h.is_null() {
        return false;
    }
    // SAFETY: as in `push_in`: this thread's live table.
    let t = &unsafe { &*h }.tallies[tally_slot(prim)];
    let owner = t.prim.load(Ordering::Relaxed);
    if owner == prim {
        // Release: visible only after the hold it counts has left the books (as `bump`).
        t.count
            .store(t.count.load(Ordering::Relaxed) + 1, Ordering::Release);
        true
    } else if owner == 0 {
        t.count.store(1, Ordering::Relaxed);
        // Release: a scrape that sees the owner sees the count that goes with it.
        t.prim.store(prim, Ordering::Release);
        true
    } else {
        false
    }
}

/// Every primitive's short holds released so far (all threads): id -> count.
pub(crate) fn tallies() -> HashMap<u64, u64> {
    let mut out = HashMap::new();
    for t in THREADS.lock().iter() {
        for slot in &t.tallies {
            let prim = slot.prim.load(Ordering::Acquire);
            if prim != 0 {
                *out.entry(prim).or_default() += slot.count.load(Ordering::Acquire);
            }
        }
    }
    out
}

/// The short holds of `prim` released so far (all threads).
pub(crate) fn tally_of(prim: u64) -> u64 {
    let i = tally_slot(prim);
    THREADS
        .lock()
        .iter()
        .map(|t| &t.tallies[i])
        .filter(|slot| slot.prim.load(Ordering::Acquire) == prim)
        .map(|slot| slot.count.load(Ordering::Acquire))
        .sum()
}

/// Takes `prim`'s tallies out of every table (it is being dropped): their sum.
///
/// No thread writes a dropped primitive's slot (it releases no hold of it any more), so the
/// count read before freeing the slot is final.
pub(crate) fn claim_tallies(prim: u64) -> u64 {
    let i = tally_slot(prim);
    let mut sum = 0;
    for t in THREADS.lock().iter() {
        let slot = &t.tallies[i];
        if slot.prim.load(Ordering::Acquire) == prim {
            sum += slot.count.load(Ordering::Relaxed);
            slot.prim.store(0, Ordering::Release);
        }
    }
    sum
}

// SAFETY: every mutable field is atomic or behind the mutex; the raw `owner` pointers of the
// entries only point back at this table and are never written after creation.
unsafe impl Send for ThreadHeld {}
// SAFETY: as above.
unsafe impl Sync for ThreadHeld {}

impl ThreadHeld {
    /// A new table for thread number `thread`.
    fn new(thread: u64) -> Arc<ThreadHeld> {
        Arc::new_cyclic(|me| ThreadHeld {
            thread: AtomicU64::new(thread),
            inline: std::array::from_fn(|i| Entry::new(me.as_ptr(), i as u32)),
            overflow: Mutex::new(Overflow {
                chunks: Vec::new(),
                free: Vec::new(),
                by_actor: HashMap::new(),
            }),
            overflow_len: AtomicUsize::new(0),
            orphaned: AtomicBool::new(false),
            tallies: Default::default(),
        })
    }

    /// Takes this table for thread number `thread` if its thread exited and it holds
    /// nothing. Called under the table list's lock, so two threads never take one table.
    fn recycle(&self, thread: u64) -> bool {
        let free = self.orphaned.load(Ordering::Acquire)
            && !self.occupied()
            && self.overflow_len.load(Ordering::Acquire) == 0;
        if free {
            self.thread.store(thread, Ordering::Relaxed);
            // Release: the new owner's thread number is visible with the table.
            self.orphaned.store(false, Ordering::Release);
        }
        free
    }

    fn occupied(&self) -> bool {
        self.overflow_len.load(Ordering::Acquire) != 0
            || self
                .inline
                .iter()
                .any(|e| e.key.load(Ordering::Acquire) != 0)
    }

    fn fresh_mask(&self) -> u32 {
        let mut m = 0;
        for (i, e) in self.inline.iter().enumerate() {
            if e.key.load(Ordering::Relaxed) != 0 {
                m |= 1 << i;
            }
        }
        m
    }

    /// Every hold in this table.
    pub fn for_each(&self, mut f: impl FnMut(HoldView)) {
        for e in &self.inline {
            if let Some(v) = e.view(self.thread.load(Ordering::Relaxed)) {
                f(v);
            }
        }
        if self.overflow_len.load(Ordering::Acquire) != 0 {
            let o = self.overflow.lock();
            for c in &o.chunks {
                for e in c.iter() {
                    if let Some(v) = e.view(self.thread.load(Ordering::Relaxed)) {
                        f(v);
                    }
                }
            }
        }
    }
}

static THREADS: LazyLock<Mutex<Vec<Arc<ThreadHeld>>>> = LazyLock::new(Mutex::default);

thread_local! {
    static OWNER: Cell<Option<OwnerGuard>> = const { Cell::new(None) };
}

/// Keeps this thread's table alive and marks it orphaned when the thread exits.
struct OwnerGuard(Arc<ThreadHeld>);

impl Drop for OwnerGuard {
    fn drop(&mut self) {
        let _ = LOCAL.try_with(|l| {
            l.held.set(std::ptr::null());
            l.dead.set(true);
        });
        // The table stays listed (its entries may outlive the thread in moved guards); an
        // exited thread's table is recycled once it holds nothing.
        self.0.orphaned.store(true, Ordering::Release);
    }
}

#[cold]
#[inline(never)]
fn init(l: &Local) -> Option<*const ThreadHeld> {
    if l.dead.get() {
        return None;
    }
    let thread = actor::thread_seq_in(l);
    let th = {
        let mut threads = THREADS.lock();
        // Recycle the table of an exited thread that holds nothing: tables are never freed
        // (an entry pointer, in a guard or the task index, must never dangle), so their number
        // stays the peak number of threads alive at once.
        match threads.iter().find(|t| t.recycle(thread)) {
            Some(t) => t.clone(),
            None => {
                let th = ThreadHeld::new(thread);
                threads.push(th.clone());
                th
            }
        }
    };
    let ptr = Arc::as_ptr(&th);
    OWNER.try_with(|o| o.set(Some(OwnerGuard(th)))).ok()?;
    l.held.set(ptr);
    l.mask.set(0);
    Some(ptr)
}

/// Where a hold lives, so that its guard can clear it from any thread: one pointer.
///
/// The entry knows its table and slot. Tables are never freed (only recycled once their
/// thread exited and they hold nothing), so the pointer is always valid.
pub struct EntryRef(NonNull<Entry>);

// SAFETY: an EntryRef only clears or rewrites its own entry with atomic stores (overflow
// bookkeeping under the table's mutex); tables are never freed.
unsafe impl Send for EntryRef {}
// SAFETY: as above; `&EntryRef` offers only atomic operations.
unsafe impl Sync for EntryRef {}

impl EntryRef {
    fn entry(&self) -> &Entry {
        // SAFETY: see the type docs: tables (and their boxed overflow chunks) are never freed.
        unsafe { self.0.as_ref() }
    }

    fn table(&self) -> &ThreadHeld {
        // SAFETY: as above; `owner` was set from the table's own address at creation.
        unsafe { &*self.entry().owner }
    }

    /// Rewrites permits and mode (permit `split`/`merge`, rwlock `downgrade`, upgrades).
    pub fn update(&self, permits: u32, mode: Mode) {
        let e = self.entry();
        let old = e.meta.load(Ordering::Relaxed);
        let meta = (old & !0xff_ffff_ffff) | u64::from(permits) | (u64::from(mode as u8) << 32);
        e.meta.store(meta, Ordering::Relaxed);
    }

    /// Reads the hold back.
    pub fn view(&self) -> Option<HoldView> {
        self.entry()
            .view(self.table().thread.load(Ordering::Relaxed))
    }

    /// Indexes this hold as one of `task`'s (see the task index).
    #[inline]
    pub(crate) fn index_task(&self, task: u64) {
        index_task(self.entry(), task);
    }

    /// The hold's start (coarse clock) and its packed meta word, as written at the grant.
    #[inline]
    pub(crate) fn since_and_meta(&self) -> (u64, u64) {
        let e = self.entry();
        (
            e.since.load(Ordering::Relaxed),
            e.meta.load(Ordering::Relaxed),
        )
    }

    /// The reference as a pointer, for a wrapper that keeps it in one word: entries are
    /// [`ENTRY_ALIGN`]-aligned, so the low three bits are 0 and free for the wrapper's tags
    /// (set and cleared with `map_addr`, which keeps the pointer's provenance).
    #[inline]
    pub(crate) fn into_ptr(self) -> *mut Entry {
        self.0.as_ptr()
    }

    /// # Safety
    ///
    /// `ptr` is null or a pointer from [`EntryRef::into_ptr`] (its tag bits cleared), turned
    /// back once.
    #[inline]
    pub(crate) unsafe fn from_ptr(ptr: *mut Entry) -> Option<EntryRef> {
        NonNull::new(ptr).map(EntryRef)
    }

    /// The lockscope number of the thread whose table holds this entry.
    pub fn thread(&self) -> u64 {
        self.table().thread.load(Ordering::Relaxed)
    }

    /// Clears the hold.
    #[inline]
    pub fn release(self) {
        if LOCAL.try_with(|l| self.release_in(Some(l))).is_err() {
            self.release_in(None);
        }
    }

    /// Clears the hold, with this thread's locals at hand (`None`: the thread is exiting).
    #[inline]
    pub(crate) fn release_in(&self, l: Option<&Local>) {
        let e = self.entry();
        let slot = e.slot as usize;
        if slot >= INLINE {
            return release_overflow(self.table(), (slot - INLINE) as u32);
        }
        let owner = e.owner;
        unindex(e);
        // Release: a snapshot that reads 0 here sees no later reuse half-written.
        e.key.store(0, Ordering::Release);
        if let Some(l) = l
            && std::ptr::eq(l.held.get(), owner)
        {
            l.mask.set(l.mask.get() & !(1 << slot));
        }
    }
}

#[cold]
fn release_overflow(th: &ThreadHeld, i: u32) {
    let mut o = th.overflow.lock();
    let e = o.entry(i);
    let actor = e.actor.load(Ordering::Relaxed);
    unindex(e);
    e.key.store(0, Ordering::Release);
    if let Some(v) = o.by_actor.get_mut(&actor) {
        v.retain(|&x| x != i);
        if v.is_empty() {
            o.by_actor.remove(&actor);
        }
    }
    o.free.push(i);
    th.overflow_len.fetch_sub(1, Ordering::Release);
}

/// Records a hold on the current thread's table, with this thread's test scope. `None` only
/// while the thread is exiting.
#[inline]
pub fn push(
    prim: u64,
    actor: u64,
    site: &'static Location<'static>,
    since: u64,
    meta: u64,
) -> Option<EntryRef> {
    LOCAL
        .try_with(|l| {
            let scope = l.scope.get();
            push_in(
                l,
                NewHold {
                    prim,
                    actor,
                    site,
                    since,
                    meta,
                    scope,
                },
            )
        })
        .ok()
        .flatten()
}

#[inline]
pub(crate) fn push_in(l: &Local, hold: NewHold) -> Option<EntryRef> {
    let mut h = l.held.get();
    if h.is_null() {
        h = init(l)?;
    }
    // SAFETY: `h` is this thread's live table (OWNER keeps it until thread exit, when `held`
    // is nulled first).
    let th = unsafe { &*h };
    let mut mask = l.mask.get();
    if mask == FULL {
        mask = th.fresh_mask();
        l.mask.set(mask);
    }
    if mask != FULL {
        let i = (!mask).trailing_zeros() as usize;
        let e = &th.inline[i];
        e.fill(hold);
        l.mask.set(mask | (1 << i));
        return Some(EntryRef(NonNull::from(e)));
    }
    push_overflow(th, hold)
}

#[cold]
#[inline(never)]
fn push_overflow(th: &ThreadHeld, hold: NewHold) -> Option<EntryRef> {
    let mut o = th.overflow.lock();
    let i = match o.free.pop() {
        Some(i) => i,
        None => {
            let base = (o.chunks.len() * CHUNK) as u32;
            let owner: *const ThreadHeld = th;
            o.chunks.push(Box::new(std::array::from_fn(|k| {
                Entry::new(owner, INLINE as u32 + base + k as u32)
            })));
            o.free.extend((base + 1..base + CHUNK as u32).rev());
            base
        }
    };
    let e: *const Entry = o.entry(i);
    o.entry(i).fill(hold);
    o.by_actor.entry(hold.actor).or_default().push(i);
    th.overflow_len.fetch_add(1, Ordering::Release);
    drop(o);
    // Chunks are boxed and never freed before the table: the address is stable.
    NonNull::new(e.cast_mut()).map(EntryRef)
}

/// Calls `f` with every hold of `actor` recorded on the current thread.
#[inline]
pub fn for_each_mine(actor: u64, mut f: impl FnMut(HoldView)) {
    let _ = LOCAL.try_with(|l| for_each_mine_in(l, actor, &mut f));
}

pub(crate) fn for_each_mine_in(l: &Local, actor: u64, f: &mut dyn FnMut(HoldView)) {
    let h = l.held.get();
    if h.is_null() {
        return;
    }
    // SAFETY: as in `push_in`.
    let th = unsafe { &*h };
    let mut mask = l.mask.get();
    while mask != 0 {
        let i = mask.trailing_zeros() as usize;
        mask &= mask - 1;
        let e = &th.inline[i];
        if e.actor.load(Ordering::Relaxed) == actor
            && let Some(v) = e.view(th.thread.load(Ordering::Relaxed))
            && v.actor.as_u64() == actor
        {
            f(v);
        }
    }
    if th.overflow_len.load(Ordering::Acquire) != 0 {
        let o = th.overflow.lock();
        if let Some(idx) = o.by_actor.get(&actor) {
            for &i in idx {
                if let Some(v) = o.entry(i).view(th.thread.load(Ordering::Relaxed)) {
                    f(v);
                }
            }
        }
    }
}

/// The primitive ids and flags of `actor`'s inline holds on the current thread, cheaply (no
/// full views); `overflow` says whether overflow entries exist too (then use
/// [`for_each_mine`]). Returns how many were written into `out`.
#[inline]
pub(crate) fn mine_inline(
    l: &Local,
    actor: u64,
    out: &mut [(u64, u8, *const Entry); 8],
) -> (usize, bool) {
    let h = l.held.get();
    if h.is_null() {
        return (0, false);
    }
    // SAFETY: as in `push_in`.
    let th = unsafe { &*h };
    let mut n = 0;
    let mut mask = l.mask.get();
    while mask != 0 && n < out.len() {
        let i = mask.trailing_zeros() as usize;
        mask &= mask - 1;
        let e = &th.inline[i];
        if e.actor.load(Ordering::Relaxed) == actor {
            let prim = e.key.load(Ordering::Acquire);
            if prim != 0 {
                let flags = (e.meta.load(Ordering::Relaxed) >> 40) as u8;
                out[n] = (prim, flags, e);
                n += 1;
            }
        }
    }
    let more = mask != 0 || th.overflow_len.load(Ordering::Acquire) != 0;
    (n, more)
}

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

const TASK_SLOTS: usize = 4096;
const REFS: usize = 7;

#[repr(align(64))]
struct TaskSlot {
    task: std_atomic::AtomicU64,
    /// Which `refs` are in use (a hint: set by the owner, cleared by releases with a plain
    /// load and store, so a race can leave a stale bit, costing a scan, or lose one, a miss).
    bits: AtomicU8,
    refs: [std_atomic::AtomicPtr<Entry>; REFS],
}

static SLOTS: [TaskSlot; TASK_SLOTS] = [const {
    TaskSlot {
        task: std_atomic::AtomicU64::new(0),
        bits: AtomicU8::new(0),
        refs: [const { std_atomic::AtomicPtr::new(std::ptr::null_mut()) }; REFS],
    }
}; TASK_SLOTS];

#[inline]
fn slot_of(task: u64) -> &'static TaskSlot {
    // Fibonacci hashing: sequential task ids spread over the whole table.
    &SLOTS[(task.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 52) as usize & (TASK_SLOTS - 1)]
}

/// The live entry behind an index pointer, if it is a hold of `task`.
#[inline]
fn indexed(p: *mut Entry, task: u64) -> Option<&'static Entry> {
    if p.is_null() {
        return None;
    }
    // SAFETY: index pointers point at entries, and tables (so entries) are never freed.
    let e: &'static Entry = unsafe { &*p };
    (e.actor.load(Ordering::Relaxed) == task && e.key.load(Ordering::Acquire) != 0).then_some(e)
}

#[cold]
fn claim(s: &TaskSlot, task: u64) -> bool {
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

/// Indexes `e`, a new hold of `task`.
#[inline]
pub(crate) fn index_task(e: &Entry, task: u64) {
    let s = slot_of(task);
    if s.task.load(Ordering::Relaxed) != task && !claim(s, task) {
        return; // the slot serves a task that still holds something: a miss, never a lie
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
            return; // more than REFS holds at once: the rest go unindexed (a miss)
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
#[inline]
fn unindex(e: &Entry) {
    let r = e.task_ref.load(Ordering::Relaxed);
    if !r.is_null() {
        e.task_ref.store(std::ptr::null_mut(), Ordering::Relaxed);
        // SAFETY: `r` points into the static slot array.
        let cell = unsafe { &*r };
        if std::ptr::eq(cell.load(Ordering::Relaxed), e) {
            cell.store(std::ptr::null_mut(), Ordering::Relaxed);
            // The slot and the ref's index, from the ref's address in the static array.
            let base = SLOTS.as_ptr() as usize;
            let at = r as usize - base;
            let slot = &SLOTS[at / std::mem::size_of::<TaskSlot>()];
            let i = (r as usize - slot.refs.as_ptr() as usize)
                / std::mem::size_of::<std_atomic::AtomicPtr<Entry>>();
            let bits = slot.bits.load(Ordering::Relaxed);
            slot.bits.store(bits & !(1 << i), Ordering::Relaxed);
        }
    }
}

/// Whether `task` holds anything, on any thread (as far as the index knows).
#[inline]
pub(crate) fn task_any(task: u64) -> bool {
    let s = slot_of(task);
    s.task.load(Ordering::Relaxed) == task && s.bits.load(Ordering::Relaxed) != 0
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

/// Whether any hold at all is recorded on the current thread: one thread-local read, so the
/// common case (nothing held) skips every acquire-time check.
#[inline]
pub fn any_here() -> bool {
    LOCAL.try_with(any_in).unwrap_or(false)
}

#[inline]
pub(crate) fn any_in(l: &Local) -> bool {
    let h = l.held.get();
    // SAFETY: as in `push_in`.
    !h.is_null() && (l.mask.get() != 0 || unsafe { &*h }.overflow_len.load(Ordering::Relaxed) != 0)
}

/// Whether `actor` holds anything recorded on the current thread.
#[inline]
pub fn holds_any_here(actor: u64) -> bool {
    let mut any = false;
    for_each_mine(actor, |_| any = true);
    any
}

/// Calls `f` with every hold on every thread's table (snapshots, scrapes).
pub fn for_each_all(mut f: impl FnMut(HoldView)) {
    let threads = THREADS.lock();
    for t in threads.iter() {
        t.for_each(&mut f);
    }
}

/// Tables in use by live threads, and tables listed in all (the rest wait to be recycled).
pub fn table_counts() -> (usize, usize) {
    let threads = THREADS.lock();
    let live = threads
        .iter()
        .filter(|t| !t.orphaned.load(Ordering::Acquire))
        .count();
    (live, threads.len())
}

pub(crate) fn threads_lock() -> parking_lot::MutexGuard<'static, impl Sized> {
    THREADS.lock()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn site() -> &'static Location<'static> {
        Location::caller()
    }

    #[test]
    fn push_release_and_overflow() {
        let me = 77;
        let mut refs = Vec::new();
        for p in 1..=(INLINE as u64 + 40) {
            refs.push(push(1000 + p, me, site(), 5, pack_meta(1, Mode::Permits, 0)).unwrap());
        }
        let mut n = 0;
        for_each_mine(me, |_| n += 1);
        assert_eq!(n, INLINE + 40);
        // Release half from another thread: the owner's view must follow.
        let far: Vec<_> = refs.drain(..30).collect();
        std::thread::spawn(move || far.into_iter().for_each(EntryRef::release))
            .join()
            .unwrap();
        let mut n = 0;
        for_each_mine(me, |_| n += 1);
        assert_eq!(n, INLINE + 10);
        refs.into_iter().for_each(EntryRef::release);
        assert!(!holds_any_here(me));
        // Inline entries are reused after remote clears.
        let r = push(5, me, site(), 5, pack_meta(1, Mode::Exclusive, 0)).unwrap();
        assert_eq!(r.view().unwrap().prim, 5);
        r.release();
    }

    /// A hold's scope is kept whole (it was cut to 16 bits: issue 17).
    #[test]
    fn a_hold_keeps_a_scope_id_past_16_bits() {
        let scope = 0x0012_3456;
        let hold = NewHold {
            prim: 9,
            actor: 78,
            site: site(),
            since: 5,
            meta: pack_meta(1, Mode::Exclusive, 0),
            scope,
        };
        let r = LOCAL.with(|l| push_in(l, hold)).unwrap();
        assert_eq!(r.view().unwrap().scope, scope);
        r.release();
    }

    /// The same entry refilled over and over with holds of one primitive (so the key alone
    /// cannot tell them apart) while another thread snapshots it: every view must be one
    /// hold, never fields of two (issue 17).
    #[test]
    fn a_snapshot_never_mixes_two_holds_of_one_entry() {
        use std::sync::atomic::AtomicBool;
        const FILLS: u64 = 200_000;
        let stop = Arc::new(AtomicBool::new(false));
        // The writer's table, found by the reader through the entry pointer.
        let first = push(7, 1, site(), 1, pack_meta(1, Mode::Permits, 0)).unwrap();
        struct Shared(*const Entry);
        // SAFETY: entries are only read through shared references (atomics), and tables are
        // never freed.
        unsafe impl Send for Shared {}
        let entry = first.0.as_ptr().cast_const();
        let shared = Shared(entry);
        first.release();
        let reader = {
            let stop = stop.clone();
            std::thread::spawn(move || {
                let shared = shared;
                let mut seen = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    // SAFETY: tables are never freed; only read through shared references.
                    let e = unsafe { &*shared.0 };
                    if let Some(v) = e.view(0) {
                        let n = v.actor.as_u64();
                        assert_eq!(v.since, n, "since of another hold: {v:?}");
                        assert_eq!(
                            u64::from(v.permits),
                            n & 0xffff,
                            "permits of another hold: {v:?}"
                        );
                        seen += 1;
                    }
                }
                seen
            })
        };
        for n in 2..FILLS {
            let r = push(
                7,
                n,
                site(),
                n,
                pack_meta((n & 0xffff) as u32, Mode::Permits, 0),
            )
            .unwrap();
            assert!(
                std::ptr::eq(r.0.as_ptr(), entry),
                "the entry was not reused"
            );
            r.release();
        }
        stop.store(true, Ordering::Relaxed);
        let seen = reader.join().unwrap();
        println!("{seen} consistent views");
    }
}

/// Loom models of one hold table (`RUSTFLAGS="--cfg loom" cargo test -p lockscope-detector
/// --release --lib loom`): the owner's acquires and releases, a release from another thread,
/// a snapshot racing a refill, and the recycling of an exited thread's table. Each builds its
/// own table and the owner's thread-locals by hand (loom's threads have no `LOCAL`), and
/// asserts the books: what a snapshot sees is a hold that was taken and not yet released,
/// whole, and the table ends holding exactly what was not released.
#[cfg(all(test, loom))]
mod loom_models {
    use std::cell::Cell;

    use super::*;

    /// Explores `f` with at most three preemptions (enough for these two- and three-thread
    /// models, and minutes rather than hours in CI) unless `LOOM_MAX_PREEMPTIONS` says more.
    fn model(f: impl Fn() + Sync + Send + 'static) {
        let mut b = loom::model::Builder::new();
        if b.preemption_bound.is_none() {
            b.preemption_bound = Some(3);
        }
        b.check(f);
    }

    /// The thread-locals of thread number `seq`, owning `table`.
    fn owner_of(table: &Arc<ThreadHeld>, seq: u64) -> Local {
        Local {
            thread_seq: Cell::new(seq),
            scope: Cell::new(0),
            held: Cell::new(Arc::as_ptr(table)),
            mask: Cell::new(0),
            dead: Cell::new(false),
            blocking_in_task: Cell::new(0),
            blocking_task: Cell::new(0),
            flavor: Cell::new(0),
        }
    }

    /// A hold of `prim` by actor `n`, started at `n`, for `n` permits, in scope `n`: every
    /// field says `n`, so a view mixing two holds shows.
    fn hold(prim: u64, n: u64) -> NewHold {
        NewHold {
            prim,
            actor: n,
            site: Location::caller(),
            since: n,
            meta: pack_meta(n as u32, Mode::Permits, 0),
            scope: n as u32,
        }
    }

    /// Every hold the table shows, each checked whole; `(prim, n)` pairs.
    fn books(table: &ThreadHeld) -> Vec<(u64, u64)> {
        let mut seen = Vec::new();
        table.for_each(|v| {
            let n = v.actor.as_u64();
            assert_eq!(v.since, n, "{v:?} mixes two holds");
            assert_eq!(u64::from(v.permits), n, "{v:?} mixes two holds");
            assert_eq!(u64::from(v.scope), n, "{v:?} mixes two holds");
            seen.push((v.prim, n));
        });
        seen.sort_unstable();
        seen
    }

    /// A thread that takes one snapshot of `table` while the model's owner works.
    fn snapshot(table: &Arc<ThreadHeld>) -> loom::thread::JoinHandle<Vec<(u64, u64)>> {
        let table = table.clone();
        loom::thread::spawn(move || books(&table))
    }

    #[test]
    fn loom_acquire_and_local_release_against_a_snapshot() {
        model(|| {
            let table = ThreadHeld::new(1);
            let snap = snapshot(&table);
            let l = owner_of(&table, 1);
            let a = push_in(&l, hold(10, 1)).unwrap();
            let b = push_in(&l, hold(11, 2)).unwrap();
            a.release_in(Some(&l));
            let seen = snap.join().unwrap();
            assert!(
                seen.iter().all(|h| [(10, 1), (11, 2)].contains(h)),
                "{seen:?}"
            );
            assert_eq!(books(&table), vec![(11, 2)]);
            assert_eq!(l.mask.get(), 0b10, "the owner's bitmap lost track");
            b.release_in(Some(&l));
            assert!(books(&table).is_empty());
        });
    }

    #[test]
    fn loom_release_from_another_thread_frees_the_entry_for_the_owner() {
        model(|| {
            let table = ThreadHeld::new(1);
            let l = owner_of(&table, 1);
            let a = push_in(&l, hold(10, 1)).unwrap();
            let a_entry = a.0;
            let remote = loom::thread::spawn(move || a.release_in(None));
            let b = push_in(&l, hold(11, 2)).unwrap();
            remote.join().unwrap();
            // The bitmap still calls `a`'s entry taken; the full table re-reads the keys.
            let c = push_in(&l, hold(12, 3)).unwrap();
            assert_eq!(c.0, a_entry, "the remotely freed entry was not reused");
            assert_eq!(books(&table), vec![(11, 2), (12, 3)]);
            b.release_in(Some(&l));
            c.release_in(Some(&l));
            assert!(books(&table).is_empty());
        });
    }

    #[test]
    fn loom_a_snapshot_never_mixes_a_hold_with_its_entry_s_next() {
        model(|| {
            let table = ThreadHeld::new(1);
            let snap = snapshot(&table);
            let l = owner_of(&table, 1);
            // Two holds of the same primitive, one after the other, in the same entry.
            push_in(&l, hold(10, 1)).unwrap().release_in(Some(&l));
            let second = push_in(&l, hold(10, 2)).unwrap();
            let seen = snap.join().unwrap();
            assert!(
                seen.iter().all(|h| [(10, 1), (10, 2)].contains(h)),
                "{seen:?}"
            );
            assert_eq!(books(&table), vec![(10, 2)]);
            second.release_in(Some(&l));
        });
    }

    #[test]
    fn loom_an_exited_thread_s_table_is_recycled_only_once_empty() {
        model(|| {
            let table = ThreadHeld::new(1);
            let l = owner_of(&table, 1);
            // The owner takes a hold whose guard moves away, then exits.
            let moved = push_in(&l, hold(10, 1)).unwrap();
            table.orphaned.store(true, Ordering::Release);
            let releaser = loom::thread::spawn(move || moved.release_in(None));
            let newcomer = {
                let table = table.clone();
                loom::thread::spawn(move || {
                    if !table.recycle(2) {
                        return None;
                    }
                    // Taken: it must hold nothing, and its new owner's hold is the only one.
                    assert!(books(&table).is_empty(), "recycled while holding");
                    let l = owner_of(&table, 2);
                    let h = push_in(&l, hold(11, 2)).unwrap();
                    Some((books(&table), h))
                })
            };
            releaser.join().unwrap();
            if let Some((seen, h)) = newcomer.join().unwrap() {
                assert_eq!(seen, vec![(11, 2)]);
                assert_eq!(table.thread.load(Ordering::Relaxed), 2);
                assert_eq!(books(&table), vec![(11, 2)]);
                h.release_in(None);
            } else {
                assert!(
                    table.orphaned.load(Ordering::Relaxed),
                    "not taken, yet not orphaned"
                );
            }
            assert!(books(&table).is_empty());
        });
    }
}
