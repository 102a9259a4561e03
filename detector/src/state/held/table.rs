//! The per-thread hold table ([`ThreadHeld`]): inline entries, the overflow list, the
//! recycling of tables of exited threads, and the walks over every table.

use std::cell::Cell;
use std::collections::HashMap;
use std::panic::Location;
use std::ptr::NonNull;
use std::sync::atomic::Ordering;
use std::sync::{Arc, LazyLock};

use parking_lot::Mutex;

use crate::base::loom::{AtomicBool, AtomicU64, AtomicUsize};
use crate::model::mode::*;
use crate::state::actor;
use crate::state::tls::{LOCAL, Local};

use super::*;

impl Overflow {
    pub(super) fn entry(&self, i: u32) -> &Entry {
        &self.chunks[i as usize / CHUNK][i as usize % CHUNK]
    }
}

// SAFETY: every mutable field is atomic or behind the mutex; the raw `owner` pointers of the
// entries only point back at this table and are never written after creation.
unsafe impl Send for ThreadHeld {}
// SAFETY: as above.
unsafe impl Sync for ThreadHeld {}

impl ThreadHeld {
    /// A new table for thread number `thread`.
    pub(super) fn new(thread: u64) -> Arc<ThreadHeld> {
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
            waits: std::array::from_fn(|_| waits::WaitSlot::new()),
        })
    }

    /// Takes this table for thread number `thread` if its thread exited and it holds
    /// nothing. Called under the table list's lock, so two threads never take one table.
    pub(super) fn recycle(&self, thread: u64) -> bool {
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

    pub(super) fn occupied(&self) -> bool {
        self.overflow_len.load(Ordering::Acquire) != 0
            || self.waits_occupied()
            || self
                .inline
                .iter()
                .any(|e| e.key.load(Ordering::Acquire) != 0)
    }

    pub(super) fn fresh_mask(&self) -> u32 {
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

pub(super) static THREADS: LazyLock<Mutex<Vec<Arc<ThreadHeld>>>> = LazyLock::new(Mutex::default);

thread_local! {
    pub(super) static OWNER: Cell<Option<OwnerGuard>> = const { Cell::new(None) };
}

/// Keeps this thread's table alive and marks it orphaned when the thread exits.
pub(super) struct OwnerGuard(Arc<ThreadHeld>);

impl Drop for OwnerGuard {
    fn drop(&mut self) {
        let _ = LOCAL.try_with(|l| {
            l.held.set(std::ptr::null());
            // The quick paths run only with a countdown above 0 (see `hooks::record_hold`).
            l.hold_sample.set(0);
            l.dead.set(true);
        });
        // The table stays listed (its entries may outlive the thread in moved guards); an
        // exited thread's table is recycled once it holds nothing.
        self.0.orphaned.store(true, Ordering::Release);
    }
}

#[cold]
#[inline(never)]
pub(super) fn init(l: &Local) -> Option<*const ThreadHeld> {
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
    l.wait_mask.set(0);
    Some(ptr)
}

// SAFETY: an EntryRef only clears or rewrites its own entry with atomic stores (overflow
// bookkeeping under the table's mutex); tables are never freed.
unsafe impl Send for EntryRef {}
// SAFETY: as above; `&EntryRef` offers only atomic operations.
unsafe impl Sync for EntryRef {}

impl EntryRef {
    pub(super) fn entry(&self) -> &Entry {
        // SAFETY: see the type docs: tables (and their boxed overflow chunks) are never freed.
        unsafe { self.0.as_ref() }
    }

    pub(super) fn table(&self) -> &ThreadHeld {
        // SAFETY: as above; `owner` was set from the table's own address at creation.
        unsafe { &*self.entry().owner }
    }

    /// Rewrites permits and mode (permit `split`/`merge`, rwlock `downgrade`, upgrades).
    pub fn update(&self, permits: u32, mode: Mode) {
        let e = self.entry();
        e.meta
            .store(e.meta().remade(permits, mode).bits(), Ordering::Relaxed);
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

    /// [`EntryRef::index_task`], where the task's slot was read as `look` (see
    /// [`index_looked`]).
    #[inline(always)]
    pub(crate) fn index_looked(&self, task: u64, look: TaskLook) {
        index_looked(self.entry(), task, look);
    }

    /// The id of the primitive held (its holder reads it: the entry is live).
    #[inline]
    pub(crate) fn prim_id(&self) -> u64 {
        self.entry().key.load(Ordering::Relaxed)
    }

    /// The hold's start (coarse clock) and its permits, mode and flags, as written at the
    /// grant.
    #[inline]
    pub(crate) fn since_and_meta(&self) -> (u64, Meta) {
        let e = self.entry();
        (e.since.load(Ordering::Relaxed), e.meta())
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
    #[inline(always)]
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
pub(super) fn release_overflow(th: &ThreadHeld, i: u32) {
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
    meta: Meta,
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
        // SAFETY: `th` is `l.held` and `mask` is `l.mask`, not full.
        return Some(unsafe { push_quick(l, th, mask, hold) });
    }
    push_overflow(th, hold)
}

/// Clears an inline hold from the books, from the thread that took it, without looking it
/// up: `false` (nothing done) for any other entry, which [`EntryRef::release_in`] handles.
#[inline(always)]
pub(crate) fn release_quick(e: &EntryRef, l: &Local) -> bool {
    if e.entry().slot as usize >= INLINE || !is_mine(e, l) {
        return false;
    }
    unindex(e.entry());
    release_own(e, l);
    true
}

/// Whether `e` is an entry of this thread's table.
#[inline(always)]
pub(crate) fn is_mine(e: &EntryRef, l: &Local) -> bool {
    std::ptr::eq(l.held.get(), e.entry().owner)
}

/// Clears an inline hold, in no task index, on its own thread (a hold of the quick path,
/// [`FLAG_QUICK`], is both by construction): nothing is checked.
#[inline(always)]
pub(crate) fn release_own(e: &EntryRef, l: &Local) {
    let entry = e.entry();
    debug_assert!(std::ptr::eq(l.held.get(), entry.owner) || l.held.get().is_null());
    debug_assert!(
        (entry.slot as usize) < INLINE && entry.task_ref.load(Ordering::Relaxed).is_null()
    );
    // Release: as in `release_in`.
    entry.key.store(0, Ordering::Release);
    l.mask.set(l.mask.get() & !(1 << entry.slot));
}

/// Records a hold in a free inline entry of `th`, this thread's table, whose inline entries
/// in use are `mask` (not [`FULL`]); nothing spilled over.
///
/// # Safety
///
/// `th` is `l.held`, non-null, and `mask` is `l.mask`.
#[inline(always)]
pub(crate) unsafe fn push_quick(
    l: &Local,
    th: *const ThreadHeld,
    mask: u32,
    hold: NewHold,
) -> EntryRef {
    let i = (!mask).trailing_zeros() as usize;
    // SAFETY: as the caller promises; the table lives while its thread does (see `push_in`),
    // and `i < INLINE` as `mask` is not full.
    let e = unsafe { (*th).inline.get_unchecked(i) };
    e.fill(hold);
    l.mask.set(mask | (1 << i));
    EntryRef(NonNull::from(e))
}

/// Whether the quick path may record a hold on `th`, this thread's table with inline entries
/// `mask` in use, for `actor`: a free inline entry, nothing spilled over, and `ok(prim, flags)`
/// for each hold of `actor` among them (those of other actors, and entries released by another
/// thread, are skipped).
///
/// # Safety
///
/// `th` is `l.held`, non-null, and `mask` is `l.mask`.
#[inline(always)]
pub(crate) unsafe fn quick_room(
    th: *const ThreadHeld,
    mask: u32,
    actor: u64,
    mut ok: impl FnMut(u64, u8) -> bool,
) -> bool {
    if mask == FULL {
        return false;
    }
    if mask == 0 {
        return true;
    }
    // SAFETY: as the caller promises.
    let th = unsafe { &*th };
    if th.overflow_len.load(Ordering::Relaxed) != 0 {
        return false;
    }
    let mut m = mask;
    while m != 0 {
        let e = &th.inline[m.trailing_zeros() as usize];
        m &= m - 1;
        if e.actor.load(Ordering::Relaxed) != actor {
            continue;
        }
        let prim = e.key.load(Ordering::Acquire);
        if prim != 0 && !ok(prim, e.meta().flags()) {
            return false;
        }
    }
    true
}

#[cold]
#[inline(never)]
pub(super) fn push_overflow(th: &ThreadHeld, hold: NewHold) -> Option<EntryRef> {
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
                let flags = e.meta().flags();
                out[n] = (prim, flags, e);
                n += 1;
            }
        }
    }
    let more = mask != 0 || th.overflow_len.load(Ordering::Acquire) != 0;
    (n, more)
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
