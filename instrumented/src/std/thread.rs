//! Drop-in replacements for `std::thread::{spawn, scope, Builder, JoinHandle, Scope,
//! ScopedJoinHandle}`: `join()` is a wait the detector sees.
//!
//! Swap `use std::thread;` for `use lockscope::std::thread;` and nothing else changes: the
//! threads are std's, with the same names, stack sizes, panics and results; the items not
//! wrapped here (`current`, `sleep`, `park`, `Thread`, `ThreadId`, `Result`, ...) are std's,
//! re-exported.
//!
//! What you gain: a thread's `join()` before it has finished waits for exactly that thread,
//! and the detector sees it. A thread that holds a lockscope mutex (parking_lot's or
//! std's) and joins a thread that waits for it is a `deadlock`, naming the join (`join of
//! thread 'worker' (#7) (spawned at src/main.rs:10:5)`), where it was called, and the lock.
//! A thread spawned here also works for the test its spawner works for (`#[lockscope::test]`):
//! its findings fail that test alone.
//!
//! ```
//! use std::sync::Arc;
//! use lockscope::std::{sync::Mutex, thread};
//!
//! let m = Arc::new(Mutex::named("counter", 0));
//! let m2 = m.clone();
//! let t = thread::spawn(move || *m2.lock().unwrap() += 1);
//! t.join().unwrap(); // joined without holding `m`: fine
//! assert_eq!(*m.lock().unwrap(), 1);
//! ```
//!
//! # What the books cannot see
//!
//! - The implicit join at the end of [`scope`] waits for every scoped thread still running;
//!   the books record it as a wait for any one of them (a deadlock is reported when all of
//!   them are stuck behind the scope's owner, not when only one is).

use std::collections::HashMap;
use std::panic::Location;
use std::sync::{Arc, LazyLock};

use parking_lot::Mutex;

use lockscope_detector::__private::actor;
use lockscope_detector::__private::hooks::{self, JoinTarget, JoinWait, SetMembers, Started};

/// std's own thread items, passed through unchanged.
pub use std::thread::{
    AccessError, LocalKey, Result, Thread, ThreadId, available_parallelism, current, panicking,
    park, park_timeout, sleep, yield_now,
};

/// What a spawned thread does first: publishes its actor (so that a join knows whom it waits
/// for) and takes its spawner's test scope.
fn wrap<F, T>(f: F) -> (Arc<Started>, impl FnOnce() -> T)
where
    F: FnOnce() -> T,
{
    let started = Arc::new(Started::new());
    let book = started.clone();
    let scope = actor::current_scope();
    let on = hooks::enabled();
    let run = move || {
        if on {
            if scope != 0 {
                actor::set_thread_scope(scope);
            }
            book.here();
        }
        drop(book);
        f()
    };
    (started, run)
}

/// The threads of each live [`scope`] that are running now (each adds itself when it starts
/// and leaves when its closure ends, panics included), by the address of std's scope (unique
/// while it lives; its entry is removed before the scope returns). Only scoped spawns and
/// scope ends take this lock.
static SCOPES: LazyLock<Mutex<HashMap<usize, Arc<SetMembers>>>> = LazyLock::new(Mutex::default);

/// A scoped thread in its scope's set while it runs: it leaves when dropped (at the end of
/// its closure, or while it unwinds).
struct InScope(Arc<SetMembers>, lockscope_detector::ActorId);

impl Drop for InScope {
    fn drop(&mut self) {
        self.0.remove(self.1);
    }
}

/// The implicit join of a scope (its closure returned) begins: a wait for any of its threads
/// still running, kept until std's scope has joined them all. A thread not started yet is not
/// in the set: the wait is then for fewer threads than std waits for, which can only make a
/// deadlock claim rarer (std's join needs every one to end).
#[cold]
fn implicit_join(members: Arc<SetMembers>, site: &'static Location<'static>) -> JoinWait {
    if !hooks::enabled() {
        return JoinWait::none();
    }
    hooks::join_begin(JoinTarget::AnyOf(members), site, site, true)
}

/// The join of a thread, spawned at `spawned_at`, begins at `site` (unless it has finished).
#[cold]
#[inline(never)]
fn join_thread(
    started: &Arc<Started>,
    spawned_at: &'static Location<'static>,
    site: &'static Location<'static>,
) -> JoinWait {
    hooks::join_begin(JoinTarget::Thread(started.clone()), spawned_at, site, true)
}

/// An owned permission to join on a thread: wrapper for [`std::thread::JoinHandle`].
///
/// [`join`](JoinHandle::join) before the thread has finished is a wait the detector sees.
///
/// ```
/// let t = lockscope::std::thread::spawn(|| 6 * 7);
/// assert_eq!(t.join().unwrap(), 42);
/// ```
pub struct JoinHandle<T> {
    inner: std::thread::JoinHandle<T>,
    started: Arc<Started>,
    spawned_at: &'static Location<'static>,
}

impl<T> JoinHandle<T> {
    /// Wrapper for [`std::thread::JoinHandle::join`]: waits for the thread to finish, a wait
    /// the detector sees (at the caller's line).
    ///
    /// # Errors
    ///
    /// As std's: the thread's panic payload, if it panicked.
    ///
    /// ```
    /// let t = lockscope::std::thread::spawn(|| panic!("boom"));
    /// assert!(t.join().is_err());
    /// ```
    #[track_caller]
    pub fn join(self) -> Result<T> {
        let _wait = if self.inner.is_finished() || !hooks::enabled() {
            JoinWait::none()
        } else {
            join_thread(&self.started, self.spawned_at, Location::caller())
        };
        self.inner.join()
    }

    /// Wrapper for [`std::thread::JoinHandle::thread`].
    ///
    /// ```
    /// let t = lockscope::std::thread::Builder::new().name("w".into()).spawn(|| {}).unwrap();
    /// assert_eq!(t.thread().name(), Some("w"));
    /// # t.join().unwrap();
    /// ```
    pub fn thread(&self) -> &Thread {
        self.inner.thread()
    }

    /// Wrapper for [`std::thread::JoinHandle::is_finished`].
    ///
    /// ```
    /// let t = lockscope::std::thread::spawn(|| {});
    /// while !t.is_finished() {
    ///     std::thread::yield_now();
    /// }
    /// # t.join().unwrap();
    /// ```
    pub fn is_finished(&self) -> bool {
        self.inner.is_finished()
    }

    /// Where the thread was spawned (lockscope's; reports name the join after it).
    ///
    /// ```
    /// let t = lockscope::std::thread::spawn(|| {});
    /// assert_eq!(t.spawned_at().file(), file!());
    /// # t.join().unwrap();
    /// ```
    pub fn spawned_at(&self) -> &'static Location<'static> {
        self.spawned_at
    }

    /// std's handle inside (lockscope's): joining it is no longer a wait the detector sees.
    ///
    /// ```
    /// let t: std::thread::JoinHandle<u8> = lockscope::std::thread::spawn(|| 1).into_inner();
    /// assert_eq!(t.join().unwrap(), 1);
    /// ```
    pub fn into_inner(self) -> std::thread::JoinHandle<T> {
        self.inner
    }
}

impl<T> std::fmt::Debug for JoinHandle<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.inner.fmt(f)
    }
}

#[cfg(unix)]
impl<T> std::os::unix::thread::JoinHandleExt for JoinHandle<T> {
    fn as_pthread_t(&self) -> std::os::unix::thread::RawPthread {
        self.inner.as_pthread_t()
    }

    fn into_pthread_t(self) -> std::os::unix::thread::RawPthread {
        self.inner.into_pthread_t()
    }
}

#[cfg(windows)]
impl<T> std::os::windows::io::AsRawHandle for JoinHandle<T> {
    fn as_raw_handle(&self) -> std::os::windows::io::RawHandle {
        self.inner.as_raw_handle()
    }
}

#[cfg(windows)]
impl<T> std::os::windows::io::IntoRawHandle for JoinHandle<T> {
    fn into_raw_handle(self) -> std::os::windows::io::RawHandle {
        self.inner.into_raw_handle()
    }
}

/// Wrapper for [`std::thread::spawn`].
///
/// # Panics
///
/// As std's: when the OS fails to create a thread.
///
/// ```
/// let t = lockscope::std::thread::spawn(|| "done");
/// assert_eq!(t.join().unwrap(), "done");
/// ```
#[track_caller]
pub fn spawn<F, T>(f: F) -> JoinHandle<T>
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    Builder::new().spawn(f).expect("failed to spawn thread")
}

/// Thread factory: wrapper for [`std::thread::Builder`].
///
/// ```
/// let t = lockscope::std::thread::Builder::new()
///     .name("worker".into())
///     .stack_size(256 * 1024)
///     .spawn(|| std::thread::current().name().map(str::to_owned))
///     .unwrap();
/// assert_eq!(t.join().unwrap().as_deref(), Some("worker"));
/// ```
#[derive(Debug)]
pub struct Builder {
    inner: std::thread::Builder,
}

impl Builder {
    /// Wrapper for [`std::thread::Builder::new`].
    ///
    /// ```
    /// let t = lockscope::std::thread::Builder::new().spawn(|| 1).unwrap();
    /// assert_eq!(t.join().unwrap(), 1);
    /// ```
    #[allow(clippy::new_without_default)] // as std's
    pub fn new() -> Builder {
        Builder {
            inner: std::thread::Builder::new(),
        }
    }

    /// Wrapper for [`std::thread::Builder::name`].
    ///
    /// ```
    /// let b = lockscope::std::thread::Builder::new().name("n".into());
    /// # b.spawn(|| {}).unwrap().join().unwrap();
    /// ```
    pub fn name(self, name: String) -> Builder {
        Builder {
            inner: self.inner.name(name),
        }
    }

    /// Wrapper for [`std::thread::Builder::stack_size`].
    ///
    /// ```
    /// let b = lockscope::std::thread::Builder::new().stack_size(1 << 20);
    /// # b.spawn(|| {}).unwrap().join().unwrap();
    /// ```
    pub fn stack_size(self, size: usize) -> Builder {
        Builder {
            inner: self.inner.stack_size(size),
        }
    }

    /// Wrapper for [`std::thread::Builder::spawn`].
    ///
    /// # Errors
    ///
    /// As std's: when the OS fails to create a thread.
    ///
    /// ```
    /// let t = lockscope::std::thread::Builder::new().spawn(|| 2).unwrap();
    /// assert_eq!(t.join().unwrap(), 2);
    /// ```
    #[track_caller]
    pub fn spawn<F, T>(self, f: F) -> std::io::Result<JoinHandle<T>>
    where
        F: FnOnce() -> T + Send + 'static,
        T: Send + 'static,
    {
        let spawned_at = Location::caller();
        let (started, run) = wrap(f);
        let inner = self.inner.spawn(run)?;
        Ok(JoinHandle {
            inner,
            started,
            spawned_at,
        })
    }

    /// Wrapper for [`std::thread::Builder::spawn_scoped`].
    ///
    /// # Errors
    ///
    /// As std's: when the OS fails to create a thread.
    ///
    /// ```
    /// let n = 1;
    /// let two = lockscope::std::thread::scope(|s| {
    ///     let t = lockscope::std::thread::Builder::new().spawn_scoped(s, || n + 1).unwrap();
    ///     t.join().unwrap()
    /// });
    /// assert_eq!(two, 2);
    /// ```
    #[track_caller]
    pub fn spawn_scoped<'scope, 'env, F, T>(
        self,
        scope: &'scope Scope<'scope, 'env>,
        f: F,
    ) -> std::io::Result<ScopedJoinHandle<'scope, T>>
    where
        F: FnOnce() -> T + Send + 'scope,
        T: Send + 'scope,
    {
        let spawned_at = Location::caller();
        let members = SCOPES.lock().get(&scope.key()).cloned();
        let (started, run) = wrap(move || {
            let _in_scope = members.map(|m| {
                let me = actor::current();
                m.add(me, spawned_at);
                InScope(m, me)
            });
            f()
        });
        let inner = self.inner.spawn_scoped(&scope.inner, run)?;
        Ok(ScopedJoinHandle {
            inner,
            started,
            spawned_at,
        })
    }

    /// Wrapper for [`std::thread::Builder::spawn_unchecked`].
    ///
    /// # Safety
    ///
    /// As std's: the caller ensures that the thread does not outlive what `f` borrows (and its
    /// result), see [`std::thread::Builder::spawn_unchecked`].
    ///
    /// # Errors
    ///
    /// As std's: when the OS fails to create a thread.
    ///
    /// ```
    /// let x = 5;
    /// // SAFETY: joined before `x` goes out of scope.
    /// let t = unsafe { lockscope::std::thread::Builder::new().spawn_unchecked(|| x + 1) }.unwrap();
    /// assert_eq!(t.join().unwrap(), 6);
    /// ```
    #[track_caller]
    pub unsafe fn spawn_unchecked<F, T>(self, f: F) -> std::io::Result<JoinHandle<T>>
    where
        F: FnOnce() -> T + Send,
        T: Send,
    {
        let spawned_at = Location::caller();
        let (started, run) = wrap(f);
        // SAFETY: as the caller promises for `f`; `run` only adds an `Arc` it owns.
        let inner = unsafe { self.inner.spawn_unchecked(run) }?;
        Ok(JoinHandle {
            inner,
            started,
            spawned_at,
        })
    }
}

/// A scope to spawn scoped threads in: wrapper for [`std::thread::Scope`].
///
/// ```
/// let mut v = vec![1, 2];
/// lockscope::std::thread::scope(|s| {
///     s.spawn(|| v.push(3));
/// });
/// assert_eq!(v, [1, 2, 3]);
/// ```
#[repr(transparent)]
pub struct Scope<'scope, 'env: 'scope> {
    inner: std::thread::Scope<'scope, 'env>,
}

impl<'scope, 'env> Scope<'scope, 'env> {
    /// This scope's key in `SCOPES`.
    fn key(&self) -> usize {
        std::ptr::from_ref(self).addr()
    }

    fn wrap(inner: &'scope std::thread::Scope<'scope, 'env>) -> &'scope Scope<'scope, 'env> {
        // SAFETY: `Scope` is `repr(transparent)` over `std::thread::Scope` (same layout), and
        // the reference keeps its lifetime.
        unsafe { &*std::ptr::from_ref(inner).cast::<Scope<'scope, 'env>>() }
    }

    /// Wrapper for [`std::thread::Scope::spawn`].
    ///
    /// # Panics
    ///
    /// As std's: when the OS fails to create a thread.
    ///
    /// ```
    /// let a = 20;
    /// let r = lockscope::std::thread::scope(|s| s.spawn(|| a + 1).join().unwrap());
    /// assert_eq!(r, 21);
    /// ```
    #[track_caller]
    pub fn spawn<F, T>(&'scope self, f: F) -> ScopedJoinHandle<'scope, T>
    where
        F: FnOnce() -> T + Send + 'scope,
        T: Send + 'scope,
    {
        Builder::new()
            .spawn_scoped(self, f)
            .expect("failed to spawn thread")
    }
}

impl std::fmt::Debug for Scope<'_, '_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.inner.fmt(f)
    }
}

/// Wrapper for [`std::thread::scope`].
///
/// # Panics
///
/// As std's: when a scoped thread that nobody joined panicked, after all have finished.
///
/// ```
/// let data = [1, 2, 3];
/// let sum: i32 = lockscope::std::thread::scope(|s| {
///     let h: Vec<_> = data.iter().map(|x| s.spawn(move || x * 2)).collect();
///     h.into_iter().map(|h| h.join().unwrap()).sum()
/// });
/// assert_eq!(sum, 12);
/// ```
#[track_caller]
pub fn scope<'env, F, T>(f: F) -> T
where
    F: for<'scope> FnOnce(&'scope Scope<'scope, 'env>) -> T,
{
    let site = Location::caller();
    let (out, _implicit) = std::thread::scope(|s| {
        let scope = Scope::wrap(s);
        let members = Arc::new(SetMembers::named("thread::scope"));
        SCOPES.lock().insert(scope.key(), members.clone());
        // The entry must go whatever `f` does (a panic unwinds through std's scope).
        struct Forget(usize);
        impl Drop for Forget {
            fn drop(&mut self) {
                SCOPES.lock().remove(&self.0);
            }
        }
        let _forget = Forget(scope.key());
        let out = f(scope);
        // std's scope joins every thread still running once this closure returns: that wait
        // is in the books until it ends (`_implicit` is dropped after std's scope returned,
        // or while a scoped thread's panic unwinds out of it).
        let implicit = implicit_join(members, site);
        (out, implicit)
    });
    out
}

/// An owned permission to join on a scoped thread: wrapper for
/// [`std::thread::ScopedJoinHandle`].
///
/// ```
/// lockscope::std::thread::scope(|s| {
///     let t = s.spawn(|| 1);
///     assert_eq!(t.join().unwrap(), 1);
/// });
/// ```
pub struct ScopedJoinHandle<'scope, T> {
    inner: std::thread::ScopedJoinHandle<'scope, T>,
    started: Arc<Started>,
    spawned_at: &'static Location<'static>,
}

impl<T> ScopedJoinHandle<'_, T> {
    /// Wrapper for [`std::thread::ScopedJoinHandle::join`]: a wait the detector sees.
    ///
    /// # Errors
    ///
    /// As std's: the thread's panic payload, if it panicked.
    ///
    /// ```
    /// lockscope::std::thread::scope(|s| {
    ///     assert!(s.spawn(|| panic!("boom")).join().is_err());
    /// });
    /// ```
    #[track_caller]
    pub fn join(self) -> Result<T> {
        let _wait = if self.inner.is_finished() || !hooks::enabled() {
            JoinWait::none()
        } else {
            join_thread(&self.started, self.spawned_at, Location::caller())
        };
        self.inner.join()
    }

    /// Wrapper for [`std::thread::ScopedJoinHandle::thread`].
    ///
    /// ```
    /// lockscope::std::thread::scope(|s| {
    ///     let t = s.spawn(|| {});
    ///     let _ = t.thread().id();
    /// });
    /// ```
    pub fn thread(&self) -> &Thread {
        self.inner.thread()
    }

    /// Wrapper for [`std::thread::ScopedJoinHandle::is_finished`].
    ///
    /// ```
    /// lockscope::std::thread::scope(|s| {
    ///     let t = s.spawn(|| {});
    ///     while !t.is_finished() {
    ///         std::thread::yield_now();
    ///     }
    /// });
    /// ```
    pub fn is_finished(&self) -> bool {
        self.inner.is_finished()
    }
}

impl<T> std::fmt::Debug for ScopedJoinHandle<'_, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.inner.fmt(f)
    }
}
