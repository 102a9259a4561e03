//! The swap works on real code: `api_swap/app.rs`, a small program written against
//! `tokio::sync` (a bank on `Mutex`, a cache on `RwLock`, a pool on `Semaphore`, with its own
//! tests), is compiled twice, once importing `tokio::sync::{...}` (`with_tokio`) and once
//! `lockscope::tokio::{...}` (`with_lockscope`); nothing else differs. Both copies' own tests
//! run, and `run()`, which calls every method below and records what it saw, must return the
//! same transcript from both.
//!
//! Checklist: every public item of tokio 1.x's `Mutex`, `RwLock` and `Semaphore` that `app.rs`
//! calls (API.md's list and the rest of tokio's public surface):
//!
//! - `Mutex`: `new`, `const_new`, `lock`, `try_lock`, `lock_owned`, `try_lock_owned`,
//!   `blocking_lock`, `blocking_lock_owned`, `get_mut`, `into_inner`; `Debug`, `Default`,
//!   `From<T>`. `MutexGuard::{map, try_map, mutex}`, `OwnedMutexGuard::{map, try_map, mutex}`,
//!   `MappedMutexGuard::{map, try_map}`, `OwnedMappedMutexGuard::{map, try_map}`; guards'
//!   `Debug`/`Display`; owned guards moved into another task.
//! - `RwLock`: `new`, `const_new`, `with_max_readers`, `const_with_max_readers`, `read`,
//!   `write`, `read_owned`, `write_owned`, `try_read`, `try_read_owned`, `try_write`,
//!   `try_write_owned`, `blocking_read`, `blocking_write`, `get_mut`, `into_inner`; `Debug`,
//!   `Default`, `From<T>`. `RwLockWriteGuard::{map, try_map, downgrade, downgrade_map,
//!   try_downgrade_map, into_mapped}`, `RwLockMappedWriteGuard::{map, try_map}`,
//!   `RwLockReadGuard::{map, try_map}`, `OwnedRwLockWriteGuard::{map, try_map, downgrade,
//!   downgrade_map, try_downgrade_map, into_mapped, rwlock}`,
//!   `OwnedRwLockMappedWriteGuard::{map, try_map, rwlock}`, `OwnedRwLockReadGuard::{map,
//!   try_map, rwlock}`.
//! - `Semaphore`: `new`, `const_new`, `MAX_PERMITS`, `acquire`, `acquire_many`,
//!   `acquire_owned`, `acquire_many_owned`, `try_acquire`, `try_acquire_many`,
//!   `try_acquire_owned`, `try_acquire_many_owned`, `blocking_acquire`,
//!   `blocking_acquire_many`, `blocking_acquire_owned`, `blocking_acquire_many_owned`,
//!   `add_permits`, `forget_permits`, `close`, `is_closed`, `available_permits`; `Debug`.
//!   `SemaphorePermit::{forget, merge, split, num_permits, semaphore}` and the same on
//!   `OwnedSemaphorePermit`; permits' `Debug`.
//! - Errors: `TryLockError`, `AcquireError`, `TryAcquireError` (`Display`, `Debug`,
//!   `Error::source`, `PartialEq`, variants), boxed as `dyn Error + Send + Sync`, returned
//!   through `?`.
//! - Panics: the `blocking_*` forms inside a runtime, `with_max_readers(0 | too many)`,
//!   `Semaphore::new(usize::MAX)`, merging permits of two semaphores.
//!
//! What lockscope lacks: nothing. Every public method, associated constant and trait impl of
//! tokio 1.54's `Mutex`, `RwLock`, `Semaphore`, their guards and permits exists in
//! `lockscope::tokio` under the same name and signature (checked by compiling `app.rs`
//! against both; the Send/Sync/Unpin side is `tests/async_send_sync.rs`). lockscope's own
//! additions (`named`, `name`, the `*_timeout` forms and `TimeoutError`) are not part of the
//! swap and are not used here.

//! The same for `std::sync`: `api_swap/std_app.rs` (a job queue on `Mutex` + `Condvar`, settings
//! on `RwLock`, a static counter, a worker that panics and poisons the queue), compiled against
//! `std::sync::{...}` (`with_std`) and `lockscope::std::sync::{...}` (`with_lockscope_std`).
//! Checklist: `Mutex::{new (const, in a static), lock, try_lock, is_poisoned, clear_poison,
//! get_mut, into_inner}`, `RwLock::{new, read, try_read, write, try_write, get_mut,
//! into_inner}`, `Condvar::{new, wait, wait_while, wait_timeout, wait_timeout_while,
//! wait_timeout_ms, notify_one, notify_all}`; `Debug`, `Default`, `From<T>`; guards' `Debug`
//! and `Display`; `LockResult`, `TryLockResult`, `PoisonError::{into_inner, get_ref}` (also as
//! a `fn` path), `TryLockError` variants, both through `?` into `Box<dyn Error>`;
//! `WaitTimeoutResult::timed_out`. What lockscope lacks: std's unstable lock APIs
//! (`MappedMutexGuard`, `Mutex::set`/`replace`/`get_cloned`, `RwLockWriteGuard::downgrade`
//! before Rust 1.92).

// Loading `app.rs` (and `std_app.rs`) twice is the point of this test.
#![allow(clippy::duplicate_mod)]

#[path = "api_swap/with_tokio.rs"]
mod with_tokio;

#[path = "api_swap/with_lockscope.rs"]
mod with_lockscope;

#[path = "api_swap/with_std.rs"]
mod with_std;

#[path = "api_swap/with_lockscope_std.rs"]
mod with_lockscope_std;

/// Asserts two transcripts are equal line by line, naming the first line that differs.
fn same_transcript(wrapped: &[String], raw: &[String], what: &str) {
    println!("{raw:#?}");
    for (i, (r, w)) in raw.iter().zip(wrapped).enumerate() {
        assert_eq!(w, r, "line {i} differs: lockscope (left) vs {what} (right)");
    }
    assert_eq!(wrapped.len(), raw.len(), "transcripts of different lengths");
}

#[test]
fn both_imports_give_the_same_transcript() {
    same_transcript(
        &with_lockscope::app::run(),
        &with_tokio::app::run(),
        "tokio",
    );
}

#[test]
fn both_std_imports_give_the_same_transcript() {
    same_transcript(
        &with_lockscope_std::app::run(),
        &with_std::app::run(),
        "std::sync",
    );
}

#[test]
fn the_std_transcript_says_what_std_does() {
    let log = with_std::app::run();
    let has = |line: &str| log.iter().any(|l| l == line);
    assert!(has("jobs total 5050"), "{log:#?}");
    assert!(has("woken poisoned [7]"), "{log:#?}");
    assert!(has("try_lock poisoned true"), "{log:#?}");
    assert!(
        has("strict poisoned: poisoned lock: another task failed inside / PoisonError { .. }"),
        "{log:#?}"
    );
}

#[test]
fn the_transcript_says_what_tokio_does() {
    // A few lines pinned down, so that a transcript both sides got wrong the same way would
    // still fail here.
    let log = with_tokio::app::run();
    let has = |line: &str| log.iter().any(|l| l == line);
    assert!(has("transfers [true, true, true, false]"), "{log:#?}");
    assert!(has("served [10, 11, 12, 13]"), "{log:#?}");
    assert!(
        has("mutex debug while mapped Mutex { data: <locked> }"),
        "{log:#?}"
    );
    assert!(
        has("blocking inside a runtime panics: true true true true true"),
        "{log:#?}"
    );
}
