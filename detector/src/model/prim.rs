//! What names a primitive: its id, its kind, its name and its creation site.

use std::panic::Location;

use crate::base::names;

/// A primitive's lasting identity (never reused within a process).
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Debug, serde::Serialize)]
pub struct PrimitiveId(pub u64);

impl std::fmt::Display for PrimitiveId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "#{}", self.0)
    }
}

/// What kind of primitive this is; decides the `kind` label and how waiters are granted.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, PartialOrd, Ord)]
#[non_exhaustive]
pub enum PrimKind {
    /// `tokio::sync::Mutex`: one permit, strict FIFO.
    Mutex,
    /// `tokio::sync::RwLock`: `max_readers` permits, a write takes all; strict FIFO, so a
    /// queued writer blocks later readers.
    RwLock,
    /// `tokio::sync::Semaphore`: strict FIFO, a large `acquire_many` blocks later small ones.
    Semaphore,
    /// `parking_lot::Mutex`: exclusive, no queue order.
    BlockingMutex,
    /// `parking_lot::ReentrantMutex`: exclusive to one thread, which may re-enter freely.
    BlockingReentrantMutex,
    /// `parking_lot::RwLock`: task-fair (readers wait behind a waiting writer, except
    /// `read_recursive` while readers hold it), with upgradable reads.
    BlockingRwLock,
    /// `tokio::sync::OnceCell`: one permit, strict FIFO, held by the actor running the
    /// initialiser while its future runs; a caller of `get_or_init` that must wait for it
    /// waits in the queue. The hold is work in progress, not a guard: the rules that judge a
    /// guard's life (leaks, long holds, stuck queues) leave it alone.
    OnceCell,
}

impl PrimKind {
    /// The `kind` string of spans and metrics.
    pub const fn as_str(self) -> &'static str {
        match self {
            PrimKind::Mutex => names::KIND_MUTEX,
            PrimKind::RwLock => names::KIND_RWLOCK,
            PrimKind::Semaphore => names::KIND_SEMAPHORE,
            PrimKind::BlockingMutex | PrimKind::BlockingReentrantMutex => {
                names::KIND_BLOCKING_MUTEX
            }
            PrimKind::BlockingRwLock => names::KIND_BLOCKING_RWLOCK,
            PrimKind::OnceCell => names::KIND_ONCE_CELL,
        }
    }

    /// Whether waiting blocks the OS thread (parking_lot) rather than a task.
    pub const fn is_blocking(self) -> bool {
        matches!(
            self,
            PrimKind::BlockingMutex | PrimKind::BlockingReentrantMutex | PrimKind::BlockingRwLock
        )
    }

    /// Whether every hold excludes every other (a mutex, tokio's or a blocking one): its
    /// holder is alone until it unlocks, so it may update the primitive's statistics with
    /// plain loads and stores (an RwLock is not: its readers count after their unlock).
    pub const fn is_mutex(self) -> bool {
        matches!(
            self,
            PrimKind::Mutex | PrimKind::BlockingMutex | PrimKind::BlockingReentrantMutex
        )
    }

    /// Whether the primitive grants waiters in strict FIFO order (tokio's batch semaphore).
    pub const fn is_fifo(self) -> bool {
        matches!(
            self,
            PrimKind::Mutex | PrimKind::RwLock | PrimKind::Semaphore | PrimKind::OnceCell
        )
    }

    /// Whether the primitive counts permits (semaphore) rather than being a lock.
    pub const fn is_semaphore(self) -> bool {
        matches!(self, PrimKind::Semaphore)
    }

    /// Whether a hold is an initialiser at work (a once-cell) rather than a guard: it ends
    /// with its future, so it is never leaked, and it lasts as long as the initialisation
    /// does, so neither its length nor its waiters' is a finding of its own. A cycle through
    /// it is still a deadlock.
    pub const fn is_once_cell(self) -> bool {
        matches!(self, PrimKind::OnceCell)
    }
}

impl std::fmt::Display for PrimKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why a name given to `named(..)` was refused. The primitive still works: it is named
/// after a cleaned-up version of the name (see [`clean_name`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NameError {
    reason: &'static str,
}

impl std::fmt::Display for NameError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "invalid lock name: {}", self.reason)
    }
}

impl std::error::Error for NameError {}

/// Longest accepted name, in bytes.
pub const MAX_NAME_LEN: usize = 200;

/// Checks a primitive name: 1 to [`MAX_NAME_LEN`] bytes, no control characters.
///
/// ```
/// use lockscope_detector::validate_name;
/// assert!(validate_name("db_pool").is_ok());
/// assert_eq!(validate_name("").unwrap_err().to_string(), "invalid lock name: empty");
/// ```
pub fn validate_name(name: &str) -> Result<(), NameError> {
    if name.is_empty() {
        return Err(NameError { reason: "empty" });
    }
    if name.len() > MAX_NAME_LEN {
        return Err(NameError {
            reason: "longer than 200 bytes",
        });
    }
    if name.chars().any(char::is_control) {
        return Err(NameError {
            reason: "contains a control character",
        });
    }
    Ok(())
}

/// The name a refused name is replaced with: control characters become `?`, the rest is cut
/// at [`MAX_NAME_LEN`] bytes, and an empty name becomes `unnamed`.
pub fn clean_name(name: &str) -> String {
    let mut out: String = name
        .chars()
        .map(|c| if c.is_control() { '?' } else { c })
        .collect();
    if out.len() > MAX_NAME_LEN {
        let mut cut = MAX_NAME_LEN;
        while !out.is_char_boundary(cut) {
            cut -= 1;
        }
        out.truncate(cut);
    }
    if out.is_empty() {
        out.push_str("unnamed");
    }
    out
}

/// The name of a primitive created without one: `path/to/file.rs:LINE`.
pub fn site_name(site: &Location<'_>) -> String {
    format!("{}:{}", site.file(), site.line())
}

/// A site as `file:line:col`, the form of the `site` span field.
pub fn site_string(site: &Location<'_>) -> String {
    format!("{}:{}:{}", site.file(), site.line(), site.column())
}
