//! The one table of names: span and event names, field keys, `kind` strings and finding kinds.
//!
//! Everything that appears in a span, an event, a metric label or a report comes from here,
//! so the instrumented crate, the detector and the exporter can never disagree on spelling.

/// Tracing target of every acquisition span and event.
pub const TARGET: &str = "lockscope";
/// Tracing target of findings (`WARN`, `ERROR` for deadlocks).
pub const DETECTOR_TARGET: &str = "lockscope::detector";

/// Name of the span that covers one acquisition, from `acquiring` to `released`.
pub const SPAN_ACQUIRE: &str = "acquire";

/// Event: the acquisition starts (before any wait).
pub const EV_ACQUIRING: &str = "acquiring";
/// Event: the primitive was granted; carries [`FIELD_WAIT_MS`].
pub const EV_ACQUIRED: &str = "acquired";
/// Event: the guard or permit was released; carries [`FIELD_HOLD_MS`].
pub const EV_RELEASED: &str = "released";
/// Event: an acquire future was dropped while it waited.
pub const EV_CANCELLED: &str = "cancelled";
/// Event: a timed acquisition gave up after its deadline.
pub const EV_TIMED_OUT: &str = "timed_out";
/// Event: a `try_` acquisition found the primitive unavailable.
pub const EV_GAVE_UP: &str = "gave_up";

/// Span field: the primitive's name.
pub const FIELD_LOCK: &str = "lock";
/// Span field: the primitive's kind (see [`PrimKind::as_str`](crate::PrimKind::as_str)).
pub const FIELD_KIND: &str = "kind";
/// Span field: permits requested.
pub const FIELD_PERMITS: &str = "permits";
/// Span field: the caller's source location, `file:line:col`.
pub const FIELD_SITE: &str = "site";
/// Event field: milliseconds waited before the grant.
pub const FIELD_WAIT_MS: &str = "wait_ms";
/// Event field: milliseconds the guard or permit was held.
pub const FIELD_HOLD_MS: &str = "hold_ms";

/// `kind` of a `tokio::sync::Mutex` wrapper.
pub const KIND_MUTEX: &str = "mutex";
/// `kind` of a `tokio::sync::RwLock` wrapper.
pub const KIND_RWLOCK: &str = "rwlock";
/// `kind` of a `tokio::sync::Semaphore` wrapper.
pub const KIND_SEMAPHORE: &str = "semaphore";
/// `kind` of a `parking_lot::Mutex` or `ReentrantMutex` wrapper.
pub const KIND_BLOCKING_MUTEX: &str = "blocking_mutex";
/// `kind` of a `parking_lot::RwLock` wrapper.
pub const KIND_BLOCKING_RWLOCK: &str = "blocking_rwlock";
/// `kind` of a `tokio::sync::OnceCell` wrapper: its running initialiser holds it, and a
/// caller waiting for that initialiser to finish waits for it.
pub const KIND_ONCE_CELL: &str = "once_cell";

/// `kind` of a join in a finding (a task's `JoinHandle` awaited, a thread's `join()`): not a
/// primitive, never a metric label; the end of a task or thread that another waits for.
pub const KIND_JOIN: &str = "join";

/// `kind` of a channel send in a finding (a bounded `mpsc` send waiting for capacity): not a
/// primitive, never a metric label.
pub const KIND_CHANNEL: &str = "channel";

/// Finding kind: tasks or threads that can never proceed.
pub const FINDING_DEADLOCK: &str = "deadlock";
/// Finding kind: a primitive acquired (or waited for) by its own holder.
pub const FINDING_NESTED_ACQUIRE: &str = "nested-acquire";
/// Finding kind: primitives taken in inconsistent orders.
pub const FINDING_LOCK_ORDER_INVERSION: &str = "lock-order-inversion";
/// Finding kind: permits that are not coming back.
pub const FINDING_LEAKED_PERMIT: &str = "leaked-permit";
/// Finding kind: waiters queued while the primitive granted nothing.
pub const FINDING_STUCK_QUEUE: &str = "stuck-queue";
/// Finding kind: a waiter bypassed for too long, or a contended primitive held too long.
pub const FINDING_STARVATION: &str = "starvation";
/// Finding kind: a blocking lock waited for, or held across `.await`, on an async worker.
pub const FINDING_BLOCKING_IN_ASYNC: &str = "blocking-in-async";

/// Every finding kind, in the order of API.md's table.
pub const FINDING_KINDS: [&str; 7] = [
    FINDING_DEADLOCK,
    FINDING_NESTED_ACQUIRE,
    FINDING_LOCK_ORDER_INVERSION,
    FINDING_LEAKED_PERMIT,
    FINDING_STUCK_QUEUE,
    FINDING_STARVATION,
    FINDING_BLOCKING_IN_ASYNC,
];

/// Series name every primitive beyond the label cap is folded into.
pub const OTHER_SERIES: &str = "other";
