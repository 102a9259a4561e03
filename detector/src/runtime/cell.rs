//! The wrapper's handle on its primitive ([`PrimCell`]) and the two entry points of a
//! primitive's life: registering (the first primitive starts the watchdog) and
//! [`unregister`] (which judges what the dropped primitive left behind).

use std::borrow::Cow;
use std::panic::Location;
use std::sync::Arc;
use std::sync::atomic::{AtomicPtr, Ordering};

use crate::report::finding;
use crate::rules::leaked_permit;
use crate::state::prim as books;
// The wrappers' one path to primitives (`lockscope_detector::prim`): the registry's items,
// with this module's `PrimCell` and `unregister` (which shadows the registry's own).
pub use crate::state::prim::*;

/// `prim`, just registered: the first primitive starts the watchdog (and the clock thread),
/// so a program that only swapped its imports gets its deadlocks, stuck queues, starvation
/// and leaks found too.
fn watched(prim: Arc<Prim>) -> Arc<Prim> {
    if crate::base::config::enabled() {
        crate::runtime::watchdog::ensure_started();
    }
    prim
}

/// Removes a primitive (its wrapper was dropped): folds its statistics into its series,
/// reports what a test's primitive left behind, and drops its lock-order edges and findings.
pub fn unregister(prim: &Prim) {
    if !books::unregister(prim) {
        return;
    }
    if crate::report::scopes::is_armed(prim.scope()) {
        if prim.forgotten() > 0 {
            // A test's semaphore dropped with permits forgotten: they can never come back now.
            finding::report(leaked_permit::dropped_forgotten(prim));
        }
        // A borrowed guard cannot outlive its primitive, so a hold still in the books now was
        // leaked (`std::mem::forget`, `Box::leak`): it can never be released.
        finding::report_all(leaked_permit::dropped_with_holds(prim));
    }
    crate::analysis::graph::lockorder::remove_node(prim.id());
    crate::state::elsewhere::forget(prim.id().0);
    finding::primitive_dropped(prim.id());
}

// ---------------------------------------------------------------------------------------------
// PrimCell: the wrapper's handle, registered eagerly or on first use
// ---------------------------------------------------------------------------------------------

/// The handle a wrapper keeps to its [`Prim`]. `const` constructors build an empty cell that
/// registers on first use; the others register at once.
pub struct PrimCell {
    ptr: AtomicPtr<Prim>,
    kind: PrimKind,
    site: &'static Location<'static>,
    init_capacity: u64,
}

impl PrimCell {
    /// A registered cell (non-`const` constructors).
    pub fn new(
        name: Option<Cow<'_, str>>,
        kind: PrimKind,
        site: &'static Location<'static>,
        capacity: u64,
    ) -> PrimCell {
        Self::registered(books::register(name, kind, site, capacity), site, capacity)
    }

    /// A registered cell of one permit (a keyed lock's entry), named `name` and counted in
    /// the metrics series `series` (`"map[key]"` in the series `"map"`).
    pub fn in_series(
        name: &str,
        series: &str,
        kind: PrimKind,
        site: &'static Location<'static>,
    ) -> PrimCell {
        let prim = books::register_in(Some(name.into()), Some(series), kind, site, 1);
        Self::registered(prim, site, 1)
    }

    /// The cell of `prim`, just registered (made at `site` with `capacity`), now watched.
    fn registered(prim: Arc<Prim>, site: &'static Location<'static>, capacity: u64) -> PrimCell {
        let kind = prim.kind;
        PrimCell {
            ptr: AtomicPtr::new(Arc::into_raw(watched(prim)).cast_mut()),
            kind,
            site,
            init_capacity: capacity,
        }
    }

    /// An unregistered cell for `const` constructors; it registers on first [`get`](Self::get).
    pub const fn lazy(kind: PrimKind, site: &'static Location<'static>, capacity: u64) -> PrimCell {
        PrimCell {
            ptr: AtomicPtr::new(std::ptr::null_mut()),
            kind,
            site,
            init_capacity: capacity,
        }
    }

    /// The primitive, registering it first if this cell is lazy.
    #[inline]
    pub fn get(&self) -> &Prim {
        // Acquire: pairs with the Release publish in `init`, so the Prim's fields are visible.
        let p = self.ptr.load(Ordering::Acquire);
        if p.is_null() {
            return self.init();
        }
        // SAFETY: a non-null pointer came from `Arc::into_raw` in `new`/`init`; this cell owns
        // that reference until `drop`, which needs `&mut self`, so it outlives `&self`.
        unsafe { &*p }
    }

    /// [`PrimCell::get`] for a cell known to be registered: no check.
    ///
    /// # Safety
    ///
    /// [`PrimCell::get`] returned before for this cell (it never unregisters but on drop).
    #[inline]
    pub unsafe fn get_registered(&self) -> &Prim {
        let p = self.ptr.load(Ordering::Acquire);
        debug_assert!(!p.is_null());
        // SAFETY: as the caller promises, non-null: the pointer `get` published; see `get`.
        unsafe { &*p }
    }

    #[cold]
    #[inline(never)]
    fn init(&self) -> &Prim {
        let fresh = Arc::into_raw(watched(books::register(
            None,
            self.kind,
            self.site,
            self.init_capacity,
        )));
        // AcqRel: publishes the new Prim (Release) and, on failure, reads the winner's (Acquire).
        match self.ptr.compare_exchange(
            std::ptr::null_mut(),
            fresh.cast_mut(),
            Ordering::AcqRel,
            Ordering::Acquire,
        ) {
            // SAFETY: we just stored `fresh`, a live Arc reference owned by this cell.
            Ok(_) => unsafe { &*fresh },
            Err(winner) => {
                // SAFETY: `fresh` came from `Arc::into_raw` above and was never shared.
                let lost = unsafe { Arc::from_raw(fresh) };
                unregister(&lost);
                // SAFETY: `winner` is the non-null pointer another thread published; owned by
                // this cell until drop.
                unsafe { &*winner }
            }
        }
    }

    /// The primitive if registered, without registering it.
    pub fn try_get(&self) -> Option<&Prim> {
        let p = self.ptr.load(Ordering::Acquire);
        // SAFETY: as in `get`.
        (!p.is_null()).then(|| unsafe { &*p })
    }

    /// The kind given at construction.
    pub fn kind(&self) -> PrimKind {
        self.kind
    }

    /// The creation site.
    pub fn site(&self) -> &'static Location<'static> {
        self.site
    }
}

impl Drop for PrimCell {
    fn drop(&mut self) {
        let p = *self.ptr.get_mut();
        if !p.is_null() {
            // SAFETY: the pointer came from `Arc::into_raw` and this is the cell's only release.
            let prim = unsafe { Arc::from_raw(p) };
            unregister(&prim);
        }
    }
}

impl std::fmt::Debug for PrimCell {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.try_get() {
            Some(p) => write!(f, "{:?}", p.name()),
            None => write!(f, "{:?}", site_name(self.site)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memory_per_primitive_stays_within_budget() {
        // The performance budget: <= 512 bytes per live primitive beyond the raw one
        // (registry + statistics). Prim lives in an Arc (16 bytes of counts), the registry
        // map holds (u64, Arc) plus a control byte, the wrapper a PrimCell.
        let total = std::mem::size_of::<Prim>()
            + 16
            + std::mem::size_of::<(u64, Arc<Prim>)>()
            + 1
            + std::mem::size_of::<PrimCell>();
        println!("Prim {} bytes, total {total}", std::mem::size_of::<Prim>());
        assert!(total <= 512, "{total} bytes per primitive");
    }
}
