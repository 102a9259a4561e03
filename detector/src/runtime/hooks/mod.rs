//! Entry points for instrumentation: what a wrapper tells the detector, in order.
//!
//! `lockscope`'s wrappers call these (through the detector's one internal path,
//! `__private`). Each step has one entry point, which says what happened; whether
//! the detector records it on its inline fast half or its out-of-line slow half is its own
//! business. The life of one acquisition:
//!
//! | step | entry point |
//! |---|---|
//! | granted at once | [`acquired`], told who usually takes the primitive ([`Takers`]), or [`acquired_at`] with a start read by [`now`] before the lock |
//! | it must wait | [`wait_begin`] ([`wait_begin_timed_precisely`]: a wait whose length is shown) |
//! | granted after waiting | [`acquired_after_wait`] ([`acquired_after_wait_ns`]: with its length) |
//! | the acquire future is dropped | [`wait_cancelled`] |
//! | a timed form gives up | [`wait_timed_out`] ([`timed_out_at_once`]: it never queued) |
//! | the wait fails (a closed semaphore) | [`wait_failed`] |
//! | a `try_` form gives up | [`try_failed`] |
//! | the guard or permit is dropped | [`release_books`] before the inner unlock and [`release_stats`] after it, told what the guard's type knows ([`Class`], [`GuardMarker`]); or [`released`], both at once |
//!
//! A semaphore's capacity changes through [`forgot`], [`added_permits`], [`removed_permits`]
//! and [`closed`]; channels and joins have their waits in [`chan_wait_begin`] and
//! [`join_begin`]; tasks end in [`task_ended`]. A cross-process lock held by another
//! process says who that is with [`held_elsewhere`].
//!
//! The modules follow the steps: `hold` (the grants), `order` (the checks a grant or a wait
//! makes first), `wait`, `release`, `permits`, and `hold_time` (where a hold's time goes).
//! The inline halves of [`acquired`] and [`release_books`] are the hot path: no lock, no
//! allocation, no precise clock read but for a sample, relaxed stores into the thread's hold
//! table; everything that waits is `#[cold]`.

mod channels;
mod hold;
mod hold_time;
mod joins;
mod order;
mod permits;
mod recorded;
mod release;
mod tasks;
mod wait;

pub use channels::{ChanOp, ChanWait, ChanWaits, Channel, chan_wait_begin, channel};
pub use hold::{Hold, TakenBy, Takers, Tasks, Threads, acquired, acquired_at, now};
pub use joins::{JoinTarget, JoinWait, Joins, SetMembers, Started, join_begin, task_actor};
pub use permits::{added_permits, closed, forgot, removed_permits};
pub use recorded::{Book, Recorded};
pub use release::{
    AnyPrim, Class, GuardMarker, GuardNoSend, GuardSend, IsMutex, NotMutex, Released,
    release_books, release_stats, released,
};
pub use tasks::{task_ended, task_poll_ended};
pub use wait::{
    WAIT_SAMPLE_EVERY, Waiting, acquired_after_wait, acquired_after_wait_ns, timed_out_at_once,
    try_failed, wait_begin, wait_begin_timed_precisely, wait_cancelled, wait_failed,
    wait_timed_out, waited_ms,
};

pub use crate::model::acq::Acq;
pub use crate::report::traces::{Tracer, set_task_tracer};

pub use crate::base::config::enabled;
pub use crate::runtime::cell::PrimCell;
pub use crate::state::elsewhere::set as held_elsewhere;
pub use crate::state::held::{
    FLAG_MOVABLE as MOVABLE, FLAG_REENTRY as REENTRY, FLAG_TRY as TRY, Mode,
};
pub use crate::state::prim::PrimKind;
