//! One hold entry ([`Entry`]), its seqlock fill and read, and the view rules read of it
//! ([`HoldView`]).

use std::panic::Location;
use std::sync::atomic::Ordering;

use crate::base::loom::{AtomicPtr, AtomicU64, fence};
use crate::model::mode::*;
use crate::state::actor;

use super::*;

impl Entry {
    pub(super) fn new(owner: *const ThreadHeld, slot: u32) -> Entry {
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
    /// Its permits, mode and flags.
    pub(crate) meta: Meta,
    /// Test scope of the acquiring thread.
    pub(crate) scope: u32,
}

/// The seqlock of a table's hold entries and wait slots, written once (the module docs above
/// say why): the writer, the slot's only owner, marks the generation in `tag` odd (keeping the
/// test scope in its upper half), stores the fields (`fields`), publishes `key` (the
/// primitive's id) and marks the generation even.
#[inline(always)]
pub(super) fn seq_fill(
    tag: &AtomicU64,
    key: &AtomicU64,
    prim: u64,
    scope: u32,
    fields: impl FnOnce(),
) {
    let generation = (tag.load(Ordering::Relaxed) as u32) | 1;
    let scope = u64::from(scope) << 32;
    tag.store(u64::from(generation) | scope, Ordering::Relaxed);
    // Release fence: a reader that sees any field stored below sees the odd generation
    // above (or later), so it drops what it read (the seqlock's writer side).
    fence(Ordering::Release);
    fields();
    // Release: a reader that sees this key (Acquire) sees the fields stored above (the
    // owner's bitmap refresh and the task index read the key alone).
    key.store(prim, Ordering::Release);
    // Release: a reader that sees this even generation (Acquire) sees the fields above.
    tag.store(
        u64::from(generation.wrapping_add(1)) | scope,
        Ordering::Release,
    );
}

/// The reader's side of [`seq_fill`]: `read`'s loads of the fields, with the key and the test
/// scope, if they all come from one fill; `None` when the slot is free or being refilled.
#[inline(always)]
pub(super) fn seq_view<R>(
    tag: &AtomicU64,
    key: &AtomicU64,
    read: impl FnOnce() -> R,
) -> Option<(u64, u32, R)> {
    // Acquire: pairs with the Release of the even generation in `seq_fill`.
    let t = tag.load(Ordering::Acquire);
    if t & 1 != 0 {
        return None; // being filled
    }
    let prim = key.load(Ordering::Acquire);
    if prim == 0 {
        return None;
    }
    let r = read();
    // Acquire fence: if a load in `read` saw a later fill's store, the generation below is
    // that fill's (or later), not `t` (the seqlock's reader side).
    fence(Ordering::Acquire);
    (tag.load(Ordering::Relaxed) == t).then_some((prim, (t >> 32) as u32, r))
}

impl Entry {
    /// Fills a free entry. Only the table's owner fills, so the generation has one writer.
    #[inline]
    pub(super) fn fill(&self, h: NewHold) {
        seq_fill(&self.tag, &self.key, h.prim, h.scope, || {
            self.actor.store(h.actor, Ordering::Relaxed);
            self.site.store(
                (h.site as *const Location<'static>).cast_mut(),
                Ordering::Relaxed,
            );
            self.since.store(h.since, Ordering::Relaxed);
            self.meta.store(h.meta.bits(), Ordering::Relaxed);
        });
    }

    /// The permits, mode and flags (its holder reads them, or a reader inside the seqlock).
    #[inline(always)]
    pub(super) fn meta(&self) -> Meta {
        Meta::from_bits(self.meta.load(Ordering::Relaxed))
    }

    /// A consistent copy of the hold, or `None` when the entry is free or being refilled.
    pub(super) fn view(&self, thread: u64) -> Option<HoldView> {
        let (prim, scope, (actor, site, since, meta)) = seq_view(&self.tag, &self.key, || {
            (
                self.actor.load(Ordering::Relaxed),
                self.site.load(Ordering::Relaxed),
                self.since.load(Ordering::Relaxed),
                Meta::from_bits(self.meta.load(Ordering::Relaxed)),
            )
        })?;
        if site.is_null() {
            return None;
        }
        Some(HoldView {
            prim,
            actor: actor::ActorId::from_u64(actor)?,
            // SAFETY: `site` was stored from a `&'static Location` in `fill`; non-null checked.
            site: unsafe { &*site },
            since,
            permits: meta.permits(),
            mode: meta.mode(),
            flags: meta.flags(),
            scope,
            thread,
        })
    }
}
