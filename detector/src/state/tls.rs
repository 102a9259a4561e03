//! Everything the hot path keeps per OS thread, in one `const` thread-local so that an
//! acquisition touches thread-local storage once.

use std::cell::Cell;

use crate::state::held::ThreadHeld;

pub(crate) struct Local {
    /// lockscope's number for this thread (0: not assigned yet).
    pub(crate) thread_seq: Cell<u64>,
    /// Test scope stamped on this thread (0: none).
    pub(crate) scope: Cell<u32>,
    /// This thread's hold table (null until first use, and again once the thread exits).
    pub(crate) held: Cell<*const ThreadHeld>,
    /// Inline entries this thread filled and has not seen released (may over-report).
    pub(crate) mask: Cell<u32>,
    /// The thread is exiting: record nothing more.
    pub(crate) dead: Cell<bool>,
    /// Blocking guards held by tasks on this thread, and the last task that took one.
    pub(crate) blocking_in_task: Cell<u32>,
    pub(crate) blocking_task: Cell<u64>,
    /// Flavor of the runtime this thread serves: 0 unknown, 1 current-thread, 2 other.
    pub(crate) flavor: Cell<u8>,
    /// Acquisitions left before the next one whose hold is timed precisely (see
    /// `base::clock::SAMPLE_EVERY`); 0: the next one is.
    pub(crate) hold_sample: Cell<u32>,
    /// Waits left before the next one timed precisely (see `runtime::hooks::wait_begin`).
    pub(crate) wait_sample: Cell<u32>,
    /// Wait slots this thread filled and has not seen freed (may over-report), and the count
    /// of waits recorded in them (see `state::held::waits`).
    pub(crate) wait_mask: Cell<u64>,
    pub(crate) wait_seq: Cell<u64>,
    /// The latest precise reading this thread gave a hold as its start (a sampled
    /// acquisition, a grant after a precisely timed wait): a join's start is never before it
    /// (see `runtime::hooks::join_begin`).
    pub(crate) last_precise_hold: Cell<u64>,
}

impl Local {
    /// A thread's locals before its first use of lockscope.
    pub(crate) const fn fresh() -> Local {
        Local {
            thread_seq: Cell::new(0),
            scope: Cell::new(0),
            held: Cell::new(std::ptr::null()),
            mask: Cell::new(0),
            dead: Cell::new(false),
            blocking_in_task: Cell::new(0),
            blocking_task: Cell::new(0),
            flavor: Cell::new(0),
            hold_sample: Cell::new(0),
            wait_sample: Cell::new(0),
            wait_mask: Cell::new(0),
            wait_seq: Cell::new(0),
            last_precise_hold: Cell::new(0),
        }
    }
}

thread_local! {
    pub(crate) static LOCAL: Local = const { Local::fresh() };
}

/// This thread's locals, without a closure (a closure passed to `LocalKey::with` on the hot
/// path keeps it from inlining, at the price of a call and its register saves).
///
/// `LOCAL` has a `const` initializer and no destructor, so its storage is valid for the
/// thread's whole life, destructors of other thread-locals included; and the reference
/// cannot leave the thread, as `Local` is not `Sync` (its fields are `Cell`s).
#[inline(always)]
pub(crate) fn local() -> &'static Local {
    // SAFETY: as above: valid while the thread lives, and confined to it.
    LOCAL.with(|l| unsafe { &*std::ptr::from_ref(l) })
}
