//! How a primitive's books change: what the hooks say happened to it (permits forgotten,
//! added, removed, the semaphore closed, a wait for several permits, a wait given up) and
//! what the lock-order analysis remembers of it. Its fields are private to `state::prim`:
//! these methods, and the two beside the struct (the queue's and the level's), are all that
//! writes them.

use std::panic::Location;
use std::sync::atomic::Ordering;

use super::Prim;

impl Prim {
    /// `permits` were `forget`-ed (acquired at `site`, when known): they are counted as
    /// forgotten until `add_permits` pays them back, and the capacity shrinks.
    pub(crate) fn forgot_permits(&self, site: Option<&'static Location<'static>>, permits: u64) {
        if let Some(site) = site {
            let site = std::ptr::from_ref(site).cast_mut();
            // Read first: a semaphore forgetting from one site keeps its line shared.
            if self.forgot_site.load(Ordering::Relaxed) != site {
                self.forgot_site.store(site, Ordering::Relaxed);
            }
        }
        self.forgot_total.fetch_add(permits, Ordering::Relaxed);
        self.forgotten.fetch_add(permits, Ordering::Relaxed);
        self.removed_permits(permits);
    }

    /// `add_permits(n)`: the capacity grows, and makes up for forgotten permits, earlier or
    /// later ones (the forgotten balance goes below zero, read as none: see
    /// [`forgotten`](Prim::forgotten)).
    pub(crate) fn added_permits(&self, n: u64) {
        self.added_total.fetch_add(n, Ordering::Relaxed);
        self.capacity.fetch_add(n, Ordering::Relaxed);
        // Wrapping, as in `removed_permits`.
        self.forgotten.fetch_sub(n, Ordering::Relaxed);
        self.epoch.fetch_add(1, Ordering::Relaxed);
    }

    /// `n` available permits were removed (`forget_permits`, or a `forget`): the capacity
    /// shrinks on purpose.
    pub(crate) fn removed_permits(&self, n: u64) {
        // Wrapping (two's complement): racing changes land in any order and must sum
        // exactly; a saturating update would lose one that raced ahead of its counterpart.
        self.capacity.fetch_sub(n, Ordering::Relaxed);
        self.epoch.fetch_add(1, Ordering::Relaxed);
    }

    /// The semaphore was closed.
    pub(crate) fn close(&self) {
        self.closed.store(true, Ordering::Relaxed);
        self.epoch.fetch_add(1, Ordering::Relaxed);
    }

    /// A wait for `permits` begins: whether the primitive's waits are still all alike (one
    /// permit each), which a semaphore stops being, for good, at its first wait for more.
    #[inline]
    pub(crate) fn waits_alike(&self, permits: u32) -> bool {
        if permits != 1 {
            self.mixed.store(true, Ordering::Relaxed);
        }
        !self.is_mixed()
    }

    /// Whether a wait for more than one permit was ever seen (see [`Prim::waits_alike`]).
    #[inline]
    pub(crate) fn is_mixed(&self) -> bool {
        self.mixed.load(Ordering::Relaxed)
    }

    /// Whether the queue remembers a wait that gave up (a retry loop may be at work).
    #[inline]
    pub(crate) fn is_retrying(&self) -> bool {
        self.retrying.load(Ordering::Relaxed)
    }

    /// A wait gave up and the queue (locked by the caller) remembers it.
    pub(crate) fn gave_up_remembered(&self) {
        self.retrying.store(true, Ordering::Relaxed);
    }

    /// Whether the lock-order context `ctx` is one this primitive remembers being acquired
    /// under, by any thread (a hint: a miss costs only a trip to the graph).
    #[inline]
    pub(crate) fn order_known(&self, ctx: u64) -> bool {
        self.order_cache
            .iter()
            .any(|c| c.load(Ordering::Relaxed) == ctx)
    }

    /// Remembers `ctx` (see [`Prim::order_known`]); `false` when every slot holds another.
    pub(crate) fn remember_order(&self, ctx: u64) -> bool {
        self.order_cache.iter().any(|c| {
            // Relaxed: the cache is a hint.
            c.load(Ordering::Relaxed) == ctx
                || c.compare_exchange(0, ctx, Ordering::Relaxed, Ordering::Relaxed)
                    .is_ok()
        })
    }

    /// Sets the totals the leak rule reads (a rule's test builds a history at once).
    #[cfg(test)]
    pub(crate) fn set_forgot_and_added(&self, forgot: u64, added: u64) {
        self.forgot_total.store(forgot, Ordering::Relaxed);
        self.added_total.store(added, Ordering::Relaxed);
    }

    /// Counts `n` steps of progress that are not releases (a rule's test).
    #[cfg(test)]
    pub(crate) fn progressed(&self, n: u64) {
        self.epoch.fetch_add(n, Ordering::Relaxed);
    }

    /// Sets where the latest forgotten permits were acquired, alone (a rule's test).
    #[cfg(test)]
    pub(crate) fn set_forgot_site(&self, site: &'static Location<'static>) {
        self.forgot_site
            .store(std::ptr::from_ref(site).cast_mut(), Ordering::Relaxed);
    }
}
