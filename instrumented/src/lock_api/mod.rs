//! Adapters for code generic over [`lock_api`]'s raw locks (feature `lock_api`):
//! [`RawMutex<R>`] and [`RawRwLock<R>`] wrap any raw lock `R` and implement the same `lock_api`
//! traits it does, recording every acquisition, so that
//! `lock_api::Mutex<lockscope::lock_api::RawMutex<R>, T>` (alias [`Mutex<R, T>`]) and
//! `lock_api::RwLock<lockscope::lock_api::RawRwLock<R>, T>` (alias [`RwLock<R, T>`]) are
//! tracked in the same wait-for and lock-order graphs as lockscope's other wrappers. `R` may be
//! parking_lot's raw locks, `spin`'s, or any other; a crate generic over `R: lock_api::RawMutex`
//! takes the adapter as it is.
//!
//! ```
//! use lockscope::lock_api::{Mutex, RawMutex, RwLock};
//!
//! // was: lock_api::Mutex<parking_lot::RawMutex, u32>
//! let hits: Mutex<parking_lot::RawMutex, u32> = Mutex::new(0);
//! *hits.lock() += 1;
//!
//! // Named explicitly, as `lockscope::parking_lot::Mutex::named` would be.
//! let db: Mutex<parking_lot::RawMutex, Vec<u8>> =
//!     Mutex::from_raw(RawMutex::named("db"), Vec::new());
//! db.lock().push(1);
//!
//! // A `static`, named after its first acquisition's site.
//! static TABLE: RwLock<parking_lot::RawRwLock, u8> = RwLock::new(7);
//! assert_eq!(*TABLE.read(), 7);
//! assert_eq!(*hits.lock(), 1);
//! ```
//!
//! # Names
//!
//! `lock_api`'s constructors take the raw lock from [`RawMutex::INIT`](::lock_api::RawMutex::INIT),
//! a `const` that knows no caller: an adapter made that way registers with the detector at its
//! first acquisition, named after that acquisition's site (`path/to/file.rs:LINE`, the caller of
//! `lock()`, `read()`, ...; lock_api 0.4.14 passes its callers' locations through). To name one,
//! build the raw lock yourself and give it to `from_raw` / `const_new`:
//! [`RawMutex::named`] (registered at once, with the caller as creation site) or
//! [`RawMutex::const_named`] (`const`, for `static`s; registered at first use). The same for
//! [`RawRwLock`].
//!
//! # What the books record
//!
//! Kinds `blocking_mutex` and `blocking_rwlock` (as parking_lot's wrappers), so a wait on an
//! async runtime's worker thread is `blocking-in-async` too. `try_` forms add no lock-order
//! edge; timed forms do. A read inside a read of the same thread is `nested-acquire`: lock_api
//! promises nothing about re-entering a plain `lock_shared` (writer-preferring locks such as
//! parking_lot's deadlock when a writer queues in between), and offers
//! [`RawRwLockRecursive`](::lock_api::RawRwLockRecursive) for that; a recursive read, and any
//! read by the holder of the upgradable read, is a re-entry and never reported. An upgrade is a
//! wait for write access by the upgradable holder, as in `lockscope::parking_lot`.
//!
//! The exclusive (or upgradable) holder's record lives in the adapter, written after the inner
//! lock granted it and cleared before the inner unlock. Reads have no slot of their own: their
//! records sit in a short list per adapter, behind an internal (uninstrumented) lock that a read
//! and its release each take once while the detector is on; a release takes back the record of
//! the releasing thread or task, or, for a guard that moved to another thread (a
//! [`GuardSend`](::lock_api::GuardSend) lock's), the latest other one, so the books always
//! balance. The guard marker is the inner lock's, so guards are `Send` exactly when they were.
//!
//! # What the books cannot see
//!
//! - `lock_api::ReentrantMutex<RawMutex<R>, G, T>` works (the owner's re-entries never reach
//!   the raw mutex, so only the outer hold is recorded), but lock_api's raw reentrant mutex does
//!   not pass its callers' locations on: its holds are recorded at a line of lock_api's, and an
//!   unnamed one is named after it. Name it with [`RawMutex::named`].
//! - Holds of a lock whose guard was given to `std::mem::forget` stay in the books, as with
//!   the other wrappers (a `force_unlock` releases them).
//! - With the detector switched off while a read is held and on again before its release, the
//!   release may take another reader's record (the counts stay right; who holds is then off
//!   until those readers leave).

use std::borrow::Cow;
use std::cell::UnsafeCell;
use std::panic::Location;
use std::ptr;
use std::sync::atomic::{AtomicPtr, AtomicUsize, Ordering};

use lockscope_detector::__private::hooks::{self, Mode, PrimCell, PrimKind};
use lockscope_detector::__private::prim::Prim;
use lockscope_detector::__private::{actor, held};

use crate::probe::Token;
use crate::shell::{Guard, Owner};

mod mutex;
mod rwlock;

pub use mutex::RawMutex;
pub use rwlock::RawRwLock;

/// [`lock_api::Mutex`] over the adapter: what `lock_api::Mutex<R, T>` becomes.
pub type Mutex<R, T> = ::lock_api::Mutex<RawMutex<R>, T>;
/// [`lock_api::MutexGuard`] of a [`Mutex`].
pub type MutexGuard<'a, R, T> = ::lock_api::MutexGuard<'a, RawMutex<R>, T>;
/// [`lock_api::RwLock`] over the adapter: what `lock_api::RwLock<R, T>` becomes.
pub type RwLock<R, T> = ::lock_api::RwLock<RawRwLock<R>, T>;
/// [`lock_api::RwLockReadGuard`] of an [`RwLock`].
pub type RwLockReadGuard<'a, R, T> = ::lock_api::RwLockReadGuard<'a, RawRwLock<R>, T>;
/// [`lock_api::RwLockWriteGuard`] of an [`RwLock`].
pub type RwLockWriteGuard<'a, R, T> = ::lock_api::RwLockWriteGuard<'a, RawRwLock<R>, T>;
/// [`lock_api::RwLockUpgradableReadGuard`] of an
/// [`RwLock`].
pub type RwLockUpgradableReadGuard<'a, R, T> =
    ::lock_api::RwLockUpgradableReadGuard<'a, RawRwLock<R>, T>;

/// What both adapters keep beside the inner lock: the primitive (registered at first use unless
/// named at once), an explicit `const` name, and the exclusive (or upgradable) holder's token.
pub(crate) struct Core {
    /// The primitive, once registered: read on every recorded acquisition (one load).
    prim: AtomicPtr<Prim>,
    /// The boxed cell that owns `prim` and unregisters it on drop; null until registered.
    cell: AtomicPtr<PrimCell>,
    /// The name given to [`RawMutex::const_named`] (`None`: named after a site).
    name: Option<&'static str>,
    /// The exclusive or upgradable holder's hold: written by that holder after the inner lock
    /// granted it, taken back by it before the inner unlock, so the inner lock's own
    /// acquire/release ordering keeps every access apart (at most one exclusive or upgradable
    /// holder at a time).
    held: UnsafeCell<Token>,
}

impl Core {
    /// An unregistered core, named `name` or, if `None`, after its first acquisition's site.
    pub(crate) const fn new(name: Option<&'static str>) -> Core {
        Core {
            prim: AtomicPtr::new(ptr::null_mut()),
            cell: AtomicPtr::new(ptr::null_mut()),
            name,
            held: UnsafeCell::new(Token::none()),
        }
    }

    /// A core registered at once as `name`, created at `site`.
    pub(crate) fn registered(
        name: &str,
        kind: PrimKind,
        capacity: u64,
        site: &'static Location<'static>,
    ) -> Core {
        let core = Core::new(None);
        core.publish(Box::new(PrimCell::new(
            Some(name.into()),
            kind,
            site,
            capacity,
        )));
        core
    }

    /// The primitive, registered now (named after `site` unless named) if this is the first use.
    #[inline]
    pub(crate) fn prim(
        &self,
        kind: PrimKind,
        capacity: u64,
        site: &'static Location<'static>,
    ) -> &Prim {
        // Acquire: pairs with the Release in `publish`, so the primitive's fields are visible.
        let p = self.prim.load(Ordering::Acquire);
        if p.is_null() {
            return self.register(kind, capacity, site);
        }
        // SAFETY: a non-null `prim` points into the cell this core owns until it drops.
        unsafe { &*p }
    }

    /// The primitive, known to be registered (a hold of it was recorded).
    #[inline]
    pub(crate) fn prim_registered(&self) -> &Prim {
        let p = self.prim.load(Ordering::Acquire);
        debug_assert!(
            !p.is_null(),
            "a recorded hold implies a registered primitive"
        );
        // SAFETY: as in `prim`; non-null, since a token was recorded against it.
        unsafe { &*p }
    }

    /// The name used in spans, metrics and reports, if registered.
    pub(crate) fn name(&self) -> Option<&str> {
        let p = self.prim.load(Ordering::Acquire);
        // SAFETY: as in `prim`.
        (!p.is_null()).then(|| unsafe { &*p }.name())
    }

    #[cold]
    #[inline(never)]
    fn register(&self, kind: PrimKind, capacity: u64, site: &'static Location<'static>) -> &Prim {
        let name = self.name.map(Cow::Borrowed);
        self.publish(Box::new(PrimCell::new(name, kind, site, capacity)))
    }

    /// Installs `cell` unless another thread registered first (then `cell` is dropped, which
    /// unregisters it), and returns the winner's primitive.
    fn publish(&self, cell: Box<PrimCell>) -> &Prim {
        let fresh = Box::into_raw(cell);
        // AcqRel: publishes the new cell (Release) and, on failure, reads the winner's (Acquire).
        let cell = match self.cell.compare_exchange(
            ptr::null_mut(),
            fresh,
            Ordering::AcqRel,
            Ordering::Acquire,
        ) {
            Ok(_) => fresh,
            Err(winner) => {
                // SAFETY: `fresh` came from `Box::into_raw` above and was never shared.
                drop(unsafe { Box::from_raw(fresh) });
                winner
            }
        };
        // SAFETY: the installed cell lives until this core drops.
        let prim = unsafe { &*cell }.get();
        // Release: the primitive is visible to whoever reads this pointer (see `prim`).
        self.prim
            .store(ptr::from_ref(prim).cast_mut(), Ordering::Release);
        prim
    }

    /// Keeps the exclusive or upgradable holder's token.
    ///
    /// # Safety
    ///
    /// The caller holds the inner lock exclusively (or upgradably) and the slot is empty.
    #[inline]
    pub(crate) unsafe fn put(&self, token: Token) {
        // SAFETY: only the holder touches the slot (see `held`).
        let slot = unsafe { &mut *self.held.get() };
        debug_assert!(slot.is_none(), "one exclusive holder at a time");
        *slot = token;
    }

    /// Takes the exclusive or upgradable holder's token back, leaving the slot empty.
    ///
    /// # Safety
    ///
    /// The caller holds the inner lock exclusively (or upgradably).
    #[inline]
    pub(crate) unsafe fn take(&self) -> Token {
        // SAFETY: only the holder touches the slot (see `held`).
        std::mem::take(unsafe { &mut *self.held.get() })
    }

    /// Rewrites the mode of the exclusive holder's hold (a downgrade to upgradable).
    ///
    /// # Safety
    ///
    /// As [`Core::take`].
    pub(crate) unsafe fn update(&self, mode: Mode) {
        // SAFETY: only the holder touches the slot (see `held`).
        let slot = unsafe { &mut *self.held.get() };
        if !slot.is_none() {
            slot.update(self.prim_registered(), 1, mode);
        }
    }
}

impl Drop for Core {
    fn drop(&mut self) {
        // A hold still here was never released: its guard was forgotten. It stays in the books
        // as a forgotten guard of the other wrappers does, so the primitive's unregistering
        // sees it (a `leaked-permit` in an armed test).
        std::mem::forget(std::mem::take(self.held.get_mut()));
        let cell = *self.cell.get_mut();
        if !cell.is_null() {
            // SAFETY: the cell came from `Box::into_raw` in `publish`; this is its one release.
            drop(unsafe { Box::from_raw(cell) });
        }
    }
}

/// The one release of a recorded hold: the shell's release order (books, the inner unlock,
/// statistics) with `unlock` as the inner unlock, or just `unlock` when nothing was recorded.
#[inline]
pub(crate) fn release(core: &Core, token: Token, unlock: impl FnOnce()) {
    if token.is_none() {
        return unlock();
    }
    drop(Guard::new(Unlock(core.prim_registered()), unlock, token));
}

/// The shell's owner for one raw release: the "inner guard" is the inner unlock itself.
struct Unlock<'a>(&'a Prim);

/// Either kind of lock (the adapter wraps mutexes and rwlocks), released on any thread.
impl<F: FnOnce()> Owner<F> for Unlock<'_> {
    type Class = hooks::AnyPrim;
    type Marker = hooks::GuardSend;

    #[inline]
    fn prim(&self) -> &Prim {
        self.0
    }

    #[inline]
    fn unlock(&self, unlock: F) {
        unlock();
    }
}

/// The records of the reads of one rwlock: `(actor, token)`, the latest last. Behind an
/// uninstrumented mutex of its own, taken only while a read is recorded.
pub(crate) struct Readers {
    /// How many records `list` holds (written under its lock): 0 lets a release that has
    /// nothing to take skip the lock. A thread sees its own records (program order), and a
    /// guard moved to it came with a happens-before edge.
    len: AtomicUsize,
    list: parking_lot::Mutex<Vec<(u64, Token)>>,
}

impl Readers {
    pub(crate) const fn new() -> Readers {
        Readers {
            len: AtomicUsize::new(0),
            list: parking_lot::const_mutex(Vec::new()),
        }
    }

    /// Keeps the record of a read by the current thread or task (nothing if none was made).
    #[inline]
    pub(crate) fn push(&self, token: Token) {
        if token.is_none() {
            return;
        }
        let me = actor::current().as_u64();
        let mut list = self.list.lock();
        list.push((me, token));
        self.len.store(list.len(), Ordering::Relaxed);
    }

    /// Takes back the latest record of the current thread or task, else (a guard that moved
    /// here from another thread) the latest record; a token that records nothing if there is
    /// none.
    #[inline]
    pub(crate) fn pop(&self) -> Token {
        if self.len.load(Ordering::Relaxed) == 0 {
            return Token::none();
        }
        self.pop_recorded()
    }

    #[inline(never)]
    fn pop_recorded(&self) -> Token {
        let me = actor::current().as_u64();
        let mut list = self.list.lock();
        let at = list
            .iter()
            .rposition(|(actor, _)| *actor == me)
            .or_else(|| list.len().checked_sub(1));
        let token = at.map_or_else(Token::none, |i| list.remove(i).1);
        self.len.store(list.len(), Ordering::Relaxed);
        token
    }
}

impl Drop for Readers {
    fn drop(&mut self) {
        // Reads never released (forgotten guards) stay in the books, as in `Core::drop`.
        for (_, token) in self.list.get_mut().drain(..) {
            std::mem::forget(token);
        }
    }
}

/// Whether the current thread or task holds `prim` in a mode `pred` accepts, by the detector's
/// books (this thread's hold table). The caller checked that the detector is on.
#[inline]
pub(crate) fn holds_here(prim: &Prim, pred: impl Fn(Mode) -> bool) -> bool {
    held::any_here() && holds_here_scan(prim, &pred)
}

#[inline(never)]
fn holds_here_scan(prim: &Prim, pred: &dyn Fn(Mode) -> bool) -> bool {
    let me = actor::current().as_u64();
    let id = prim.id().0;
    let mut found = false;
    held::for_each_mine(me, |h| found |= h.prim == id && pred(h.mode));
    found
}

/// `a`, a re-entry when `reentry`: a hold that cannot have waited, so neither a nested
/// acquisition nor a lock-order edge.
#[inline]
pub(crate) fn reentry_if(reentry: bool, a: hooks::Acq) -> hooks::Acq {
    if reentry {
        a.with_flags(hooks::REENTRY)
    } else {
        a
    }
}
