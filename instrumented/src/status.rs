//! Status queries, on every lockscope primitive (lockscope additions): `is_locked`,
//! `can_lock`, `held_by_current` and `holders`, as Kotlin's `Mutex.isLocked`/`holdsLock` and
//! Dart's `locked`/`inLock`/`canLock` offer them.
//!
//! All four are racy snapshots, as tokio's `available_permits` is: another task or thread
//! may take or release the primitive before the caller reads the answer. Use them for
//! diagnostics, assertions in tests and debug checks (`debug_assert!(m.held_by_current())`),
//! never to decide whether to lock (`if m.can_lock() { m.lock() }` is a race: use the `try_`
//! forms). `is_locked` and `can_lock` read the wrapped primitive itself where it can tell
//! (tokio's semaphores, parking_lot's locks), else lockscope's books; `held_by_current` and
//! `holders` read lockscope's books, so they answer `false` and nothing while the detector
//! is off (`LOCKSCOPE_MODE=off`).

use lockscope_detector::__private::hooks;
use lockscope_detector::__private::prim::Prim;
use lockscope_detector::__private::status;
use lockscope_detector::HolderSnapshot;

/// The holders of `prim` in lockscope's books, oldest first (none while the detector is off).
pub(crate) fn holders(prim: &Prim) -> Vec<HolderSnapshot> {
    if !hooks::enabled() {
        return Vec::new();
    }
    status::holders_of(prim)
}

/// Whether the current task (else thread) holds `prim`, in lockscope's books.
pub(crate) fn held_by_current(prim: &Prim) -> bool {
    hooks::enabled() && status::held_by_current(prim)
}

/// Whether lockscope's books show a holder of `prim`; `exclusive`: a holder in exclusive mode
/// (a writer). `None` while the detector is off: the books are empty then, and the caller asks
/// the wrapped lock instead.
pub(crate) fn booked(prim: &Prim, exclusive: bool) -> Option<bool> {
    hooks::enabled().then(|| status::is_held(prim, exclusive))
}

/// The four status queries as inherent methods of a wrapper, from three expressions over
/// `self`: its detector record (`prim`), whether any holder has it now (`is_locked`, left
/// out where the wrapper already passes parking_lot's through) and whether a `try_` form
/// would take it now (`can_lock`). `$path` names the type in the doc example, which must hold
/// for every wrapper: a fresh one built by `new(1)` is free.
macro_rules! status_queries {
    (
        impl [$($gen:tt)*] $ty:ty as $path:literal;
        prim: |$sp:ident| $prim:expr;
        $(is_locked: |$si:ident| $is_locked:expr;)?
        can_lock: |$sc:ident| $can_lock:expr;
    ) => {
        impl<$($gen)*> $ty {
            $(
                /// Whether any task or thread holds it now (lockscope addition). A racy
                /// snapshot: see [`status`](crate::status).
                #[doc = concat!("```\nlet p = ", $path, "::new(1);\nassert!(!p.is_locked());\n```")]
                pub fn is_locked(&self) -> bool {
                    let $si = self;
                    $is_locked
                }
            )?

            /// Whether a `try_` form (exclusive: `try_lock`, `try_write`, `try_acquire`) would
            /// succeed now, for the current task or thread (lockscope addition). A racy
            /// snapshot, for diagnostics: to lock only if free, call the `try_` form itself.
            #[doc = concat!("```\nlet p = ", $path, "::new(1);\nassert!(p.can_lock());\n```")]
            pub fn can_lock(&self) -> bool {
                let $sc = self;
                $can_lock
            }

            /// Whether the current task (or, outside a task, the current thread) holds it,
            /// in any mode, by lockscope's books (lockscope addition; Kotlin's `holdsLock`). A
            /// task's holds are its own across `.await` points, whichever worker it resumes
            /// on. Always `false` while the detector is off.
            #[doc = concat!("```\nlet p = ", $path, "::new(1);\nassert!(!p.held_by_current());\n```")]
            pub fn held_by_current(&self) -> bool {
                let $sp = self;
                $crate::status::held_by_current($prim)
            }

            /// Its holders now, by lockscope's books, oldest first: each one's task or thread,
            /// acquisition site, hold time, permits and mode, as `/debug/locks` lists them
            /// (lockscope addition). A racy snapshot; empty while the detector is off.
            #[doc = concat!("```\nlet p = ", $path, "::new(1);\nassert!(p.holders().is_empty());\n```")]
            pub fn holders(&self) -> ::std::vec::Vec<::lockscope_detector::HolderSnapshot> {
                let $sp = self;
                $crate::status::holders($prim)
            }
        }
    };
}
pub(crate) use status_queries;
