//! Helpers of the parity and detector tests on blocking locks (`parking_lot_*`, `std_*`): "a thread is parked on
//! the lock" read from `/proc` instead of guessed from elapsed time, and compile-time
//! Send/Sync assertions.
#![allow(dead_code, unused_macros)]

pub mod findings;

use std::thread;
use std::time::{Duration, Instant};

/// Waits (bounded) until `cond` holds; panics with `what` after 10 s.
pub fn eventually(what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !cond() {
        assert!(Instant::now() < deadline, "timed out waiting until {what}");
        thread::yield_now();
    }
}

/// This thread's kernel id (Linux).
pub fn tid() -> u64 {
    // UNWRAP: tests; /proc/thread-self is "<pid>/task/<tid>" on Linux.
    let link = std::fs::read_link("/proc/thread-self").unwrap();
    link.file_name().unwrap().to_str().unwrap().parse().unwrap()
}

/// Whether thread `tid` of this process is asleep in the kernel (state `S`): for a thread
/// whose only possible sleep is parking on a lock, "it is parked". Threads that use it call
/// `warm_up!` first, so that lockscope's one-time set-up (registering the thread's hold
/// table under a global lock) cannot be mistaken for parking.
pub fn sleeping(tid: u64) -> bool {
    let stat = std::fs::read_to_string(format!("/proc/self/task/{tid}/stat")).unwrap_or_default();
    stat.rsplit_once(')')
        .and_then(|(_, rest)| rest.trim_start().chars().next())
        == Some('S')
}

/// Spawns `f` on a new thread (first warmed up by `warm`, see [`sleeping`]) and returns once
/// that thread is parked: for an `f` whose only possible sleep is waiting for a lock the
/// caller holds, once it waits for it.
pub fn spawn_parked<R: Send + 'static>(
    warm: fn(),
    f: impl FnOnce() -> R + Send + 'static,
) -> thread::JoinHandle<R> {
    let (tid_tx, tid_rx) = std::sync::mpsc::channel();
    let handle = thread::spawn(move || {
        warm();
        tid_tx.send(tid()).unwrap();
        f()
    });
    let t = tid_rx.recv().unwrap();
    eventually("the thread parks on the lock", || sleeping(t));
    handle
}

/// Runs a scenario twice, as the same source text: `parity_of!(raw, wrapped; fn name(m) {..})`
/// makes a module `name` with tests `raw` (`m` naming the `raw` module, say `std::sync`) and
/// `lockscope` (`m` naming `wrapped`, say `lockscope::std::sync`).
macro_rules! parity_of {
    ($raw:path, $wrapped:path; $(#[$m:meta])* fn $name:ident($ss:ident) $body:block) => {
        mod $name {
            #[allow(unused_imports)]
            use super::*;

            $(#[$m])*
            #[test]
            fn raw() {
                #[allow(unused_imports)]
                use $raw as $ss;
                $body
            }

            $(#[$m])*
            #[test]
            fn lockscope() {
                #[allow(unused_imports)]
                use $wrapped as $ss;
                $body
            }
        }
    };
}

/// Takes and releases a fresh `Mutex` and `RwLock` of module `$m` on this thread (see
/// [`sleeping`]). The guards are dropped whether `lock` returns them bare or in a `Result`.
macro_rules! warm_up {
    ($m:ident) => {{
        drop($m::Mutex::new(()).lock());
        drop($m::RwLock::new(()).write());
    }};
}

pub struct Invalid;

pub trait AmbiguousIfSend<A> {
    fn some_item(&self) {}
}
impl<T: ?Sized> AmbiguousIfSend<()> for T {}
impl<T: ?Sized + Send> AmbiguousIfSend<Invalid> for T {}

pub trait AmbiguousIfSync<A> {
    fn some_item(&self) {}
}
impl<T: ?Sized> AmbiguousIfSync<()> for T {}
impl<T: ?Sized + Sync> AmbiguousIfSync<Invalid> for T {}

pub fn require_send<T: ?Sized + Send>() {}
pub fn require_sync<T: ?Sized + Sync>() {}

/// `assert_traits!(Type: Send, !Sync)` and so on: fails to compile if the type disagrees
/// (a negative check names a method with two candidate impls when the trait holds).
macro_rules! assert_traits {
    ($t:ty: Send, Sync) => {
        $crate::support::require_send::<$t>();
        $crate::support::require_sync::<$t>();
    };
    ($t:ty: !Send, Sync) => {
        let _check = <$t as $crate::support::AmbiguousIfSend<_>>::some_item;
        $crate::support::require_sync::<$t>();
    };
    ($t:ty: Send, !Sync) => {
        $crate::support::require_send::<$t>();
        let _check = <$t as $crate::support::AmbiguousIfSync<_>>::some_item;
    };
    ($t:ty: !Send, !Sync) => {
        let _check = <$t as $crate::support::AmbiguousIfSend<_>>::some_item;
        let _check = <$t as $crate::support::AmbiguousIfSync<_>>::some_item;
    };
}
