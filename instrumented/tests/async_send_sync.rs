//! The Send/Sync/Unpin matrix of tokio's `tests/async_send_sync.rs`, for every public type of
//! `tokio::sync`'s Mutex, RwLock, Semaphore, OnceCell, Notify, Barrier, watch and broadcast
//! family and for the futures of every async method, checked with the same expectations against
//! `tokio::sync` (module `raw`) and `lockscope::tokio` (module `wrapped`): swapping the import
//! must not change what may cross threads or be pinned. The same is done for every wrapper of
//! `parking_lot` (the `arc_lock` guards with that feature), of `std::sync` and, with the
//! `tokio-util` feature, for `tokio_util::sync::PollSemaphore`: each expectation is checked
//! against the original crate and against lockscope's. The one deliberate difference is written
//! out beside it (`ArcMutexGuard`'s `Sync`, where lockscope keeps the stricter bound).
//!
//! Everything here is checked at compile time. Positive checks call `require_send(&v)`;
//! negative ones use tokio's trick: `AmbiguousIfSend::some_item(&v)` has two candidate impls
//! when `v` is `Send` (so it fails to compile), and one when it is not.
//!
//! `T` comes in four flavours: as in tokio's file, `YY` (Send + Sync), `YN` (Send, not Sync)
//! and `NN` (neither), plus `NY` (Sync, not Send), which tells a lock's `T: Send` bound from a
//! `T: Sync` one. The same file also pins `UnwindSafe`/`RefUnwindSafe` (the bounds of
//! `catch_unwind`) for tokio's family: code that needed `AssertUnwindSafe` around a tokio lock
//! still needs it, and code that did not, still does not.
#![allow(clippy::type_complexity, clippy::diverging_sub_expression)]
#![allow(dead_code, unused_variables, unreachable_code)]

use std::cell::Cell;
use std::future::Future;
use std::panic::{RefUnwindSafe, UnwindSafe};
use std::pin::Pin;
use std::rc::Rc;

/// Send: yes, Sync: yes.
#[derive(Clone)]
struct YY {}

/// Send: yes, Sync: no.
#[derive(Clone)]
struct YN {
    _value: Cell<u8>,
}

/// Send: no, Sync: no.
#[derive(Clone)]
struct NN {
    _value: Rc<u8>,
}

/// Send: no, Sync: yes (as a `std::sync::MutexGuard` of a `Sync` value).
struct NY {
    _value: std::marker::PhantomData<std::sync::MutexGuard<'static, u8>>,
}

fn require_send<T: Send>(_t: &T) {}
fn require_sync<T: Sync>(_t: &T) {}
fn require_unpin<T: Unpin>(_t: &T) {}
fn require_unwind_safe<T: UnwindSafe>(_t: &T) {}
fn require_ref_unwind_safe<T: RefUnwindSafe>(_t: &T) {}

struct Invalid;

trait AmbiguousIfSend<A> {
    fn some_item(&self) {}
}
impl<T: ?Sized> AmbiguousIfSend<()> for T {}
impl<T: ?Sized + Send> AmbiguousIfSend<Invalid> for T {}

trait AmbiguousIfSync<A> {
    fn some_item(&self) {}
}
impl<T: ?Sized> AmbiguousIfSync<()> for T {}
impl<T: ?Sized + Sync> AmbiguousIfSync<Invalid> for T {}

trait AmbiguousIfUnpin<A> {
    fn some_item(&self) {}
}
impl<T: ?Sized> AmbiguousIfUnpin<()> for T {}
impl<T: ?Sized + Unpin> AmbiguousIfUnpin<Invalid> for T {}

trait AmbiguousIfUnwindSafe<A> {
    fn some_item(&self) {}
}
impl<T: ?Sized> AmbiguousIfUnwindSafe<()> for T {}
impl<T: ?Sized + UnwindSafe> AmbiguousIfUnwindSafe<Invalid> for T {}

trait AmbiguousIfRefUnwindSafe<A> {
    fn some_item(&self) {}
}
impl<T: ?Sized> AmbiguousIfRefUnwindSafe<()> for T {}
impl<T: ?Sized + RefUnwindSafe> AmbiguousIfRefUnwindSafe<Invalid> for T {}

macro_rules! into_todo {
    ($typ:ty) => {{
        let x: $typ = todo!();
        x
    }};
}

macro_rules! async_assert_fn_send {
    (Send & $(!)?Sync & $(!)?Unpin, $value:expr) => {
        require_send(&$value);
    };
    (!Send & $(!)?Sync & $(!)?Unpin, $value:expr) => {
        AmbiguousIfSend::some_item(&$value);
    };
}
macro_rules! async_assert_fn_sync {
    ($(!)?Send & Sync & $(!)?Unpin, $value:expr) => {
        require_sync(&$value);
    };
    ($(!)?Send & !Sync & $(!)?Unpin, $value:expr) => {
        AmbiguousIfSync::some_item(&$value);
    };
}
macro_rules! async_assert_fn_unpin {
    ($(!)?Send & $(!)?Sync & Unpin, $value:expr) => {
        require_unpin(&$value);
    };
    ($(!)?Send & $(!)?Sync & !Unpin, $value:expr) => {
        AmbiguousIfUnpin::some_item(&$value);
    };
}

/// The future returned by a call (arguments made up with `todo!()`) has these traits.
macro_rules! async_assert_fn {
    ($($f:ident $(< $($generic:ty),* > )? )::+($($arg:ty),*): $($tok:tt)*) => {
        const _: fn() = || {
            let f = $($f $(::<$($generic),*>)? )::+( $( into_todo!($arg) ),* );
            async_assert_fn_send!($($tok)*, f);
            async_assert_fn_sync!($($tok)*, f);
            async_assert_fn_unpin!($($tok)*, f);
        };
    };
}

/// A value of this type has these traits.
macro_rules! assert_value {
    ($type:ty: $($tok:tt)*) => {
        const _: fn() = || {
            let f: $type = todo!();
            async_assert_fn_send!($($tok)*, f);
            async_assert_fn_sync!($($tok)*, f);
            async_assert_fn_unpin!($($tok)*, f);
        };
    };
}

macro_rules! unwind_check {
    (UnwindSafe, $v:expr) => {
        require_unwind_safe(&$v);
    };
    (!UnwindSafe, $v:expr) => {
        AmbiguousIfUnwindSafe::some_item(&$v);
    };
    (RefUnwindSafe, $v:expr) => {
        require_ref_unwind_safe(&$v);
    };
    (!RefUnwindSafe, $v:expr) => {
        AmbiguousIfRefUnwindSafe::some_item(&$v);
    };
}

/// A value of this type is (or is not) `UnwindSafe` and `RefUnwindSafe`.
macro_rules! assert_unwind {
    ($type:ty: $($a:ident)? $(!$na:ident)? & $($b:ident)? $(!$nb:ident)?) => {
        const _: fn() = || {
            let f: $type = todo!();
            unwind_check!($($a)? $(!$na)?, f);
            unwind_check!($($b)? $(!$nb)?, f);
        };
    };
}

/// The whole matrix, for the module `$s` (`tokio::sync` or `lockscope::tokio`).
macro_rules! matrix {
    ($s:ident) => {
        // ----- Mutex and its guards -----
        assert_value!($s::Mutex<NN>: !Send & !Sync & Unpin);
        assert_value!($s::Mutex<YN>: Send & Sync & Unpin);
        assert_value!($s::Mutex<YY>: Send & Sync & Unpin);
        assert_value!($s::MutexGuard<'_, NN>: !Send & !Sync & Unpin);
        assert_value!($s::MutexGuard<'_, YN>: Send & !Sync & Unpin);
        assert_value!($s::MutexGuard<'_, YY>: Send & Sync & Unpin);
        assert_value!($s::OwnedMutexGuard<NN>: !Send & !Sync & Unpin);
        assert_value!($s::OwnedMutexGuard<YN>: Send & !Sync & Unpin);
        assert_value!($s::OwnedMutexGuard<YY>: Send & Sync & Unpin);
        assert_value!($s::MappedMutexGuard<'_, NN>: !Send & !Sync & Unpin);
        assert_value!($s::MappedMutexGuard<'_, YN>: Send & !Sync & Unpin);
        assert_value!($s::MappedMutexGuard<'_, YY>: Send & Sync & Unpin);
        assert_value!($s::OwnedMappedMutexGuard<NN, NN>: !Send & !Sync & Unpin);
        assert_value!($s::OwnedMappedMutexGuard<NN, YN>: !Send & !Sync & Unpin);
        assert_value!($s::OwnedMappedMutexGuard<NN, YY>: !Send & !Sync & Unpin);
        assert_value!($s::OwnedMappedMutexGuard<YN, NN>: !Send & !Sync & Unpin);
        assert_value!($s::OwnedMappedMutexGuard<YN, YN>: Send & !Sync & Unpin);
        assert_value!($s::OwnedMappedMutexGuard<YN, YY>: Send & !Sync & Unpin);
        assert_value!($s::OwnedMappedMutexGuard<YY, NN>: !Send & !Sync & Unpin);
        assert_value!($s::OwnedMappedMutexGuard<YY, YN>: Send & !Sync & Unpin);
        assert_value!($s::OwnedMappedMutexGuard<YY, YY>: Send & Sync & Unpin);

        // ----- RwLock and its guards -----
        assert_value!($s::RwLock<NN>: !Send & !Sync & Unpin);
        assert_value!($s::RwLock<YN>: Send & !Sync & Unpin);
        assert_value!($s::RwLock<YY>: Send & Sync & Unpin);
        assert_value!($s::RwLockReadGuard<'_, NN>: !Send & !Sync & Unpin);
        assert_value!($s::RwLockReadGuard<'_, YN>: !Send & !Sync & Unpin);
        assert_value!($s::RwLockReadGuard<'_, YY>: Send & Sync & Unpin);
        assert_value!($s::OwnedRwLockReadGuard<NN>: !Send & !Sync & Unpin);
        assert_value!($s::OwnedRwLockReadGuard<YN>: !Send & !Sync & Unpin);
        assert_value!($s::OwnedRwLockReadGuard<YY>: Send & Sync & Unpin);
        assert_value!($s::OwnedRwLockReadGuard<YY, NN>: !Send & !Sync & Unpin);
        assert_value!($s::OwnedRwLockReadGuard<YY, YN>: !Send & !Sync & Unpin);
        assert_value!($s::OwnedRwLockReadGuard<YN, YY>: !Send & !Sync & Unpin);
        assert_value!($s::OwnedRwLockReadGuard<NN, YY>: !Send & !Sync & Unpin);
        assert_value!($s::RwLockWriteGuard<'_, NN>: !Send & !Sync & Unpin);
        assert_value!($s::RwLockWriteGuard<'_, YN>: !Send & !Sync & Unpin);
        assert_value!($s::RwLockWriteGuard<'_, YY>: Send & Sync & Unpin);
        assert_value!($s::OwnedRwLockWriteGuard<NN>: !Send & !Sync & Unpin);
        assert_value!($s::OwnedRwLockWriteGuard<YN>: !Send & !Sync & Unpin);
        assert_value!($s::OwnedRwLockWriteGuard<YY>: Send & Sync & Unpin);
        assert_value!($s::RwLockMappedWriteGuard<'_, NN>: !Send & !Sync & Unpin);
        assert_value!($s::RwLockMappedWriteGuard<'_, YN>: !Send & !Sync & Unpin);
        assert_value!($s::RwLockMappedWriteGuard<'_, YY>: Send & Sync & Unpin);
        assert_value!($s::OwnedRwLockMappedWriteGuard<NN>: !Send & !Sync & Unpin);
        assert_value!($s::OwnedRwLockMappedWriteGuard<YN>: !Send & !Sync & Unpin);
        assert_value!($s::OwnedRwLockMappedWriteGuard<YY>: Send & Sync & Unpin);
        assert_value!($s::OwnedRwLockMappedWriteGuard<YY, NN>: !Send & !Sync & Unpin);
        assert_value!($s::OwnedRwLockMappedWriteGuard<YY, YN>: !Send & !Sync & Unpin);
        assert_value!($s::OwnedRwLockMappedWriteGuard<YN, YY>: !Send & !Sync & Unpin);
        assert_value!($s::OwnedRwLockMappedWriteGuard<NN, YY>: !Send & !Sync & Unpin);

        // ----- Semaphore, permits, errors -----
        assert_value!($s::Semaphore: Send & Sync & Unpin);
        assert_value!($s::SemaphorePermit<'_>: Send & Sync & Unpin);
        assert_value!($s::OwnedSemaphorePermit: Send & Sync & Unpin);
        assert_value!($s::TryLockError: Send & Sync & Unpin);
        assert_value!($s::AcquireError: Send & Sync & Unpin);
        assert_value!($s::TryAcquireError: Send & Sync & Unpin);

        // ----- OnceCell (tokio's own lines) -----
        assert_value!($s::OnceCell<NN>: !Send & !Sync & Unpin);
        assert_value!($s::OnceCell<YN>: Send & !Sync & Unpin);
        assert_value!($s::OnceCell<YY>: Send & Sync & Unpin);
        assert_value!($s::SetError<YY>: Send & Sync & Unpin);
        async_assert_fn!($s::OnceCell<NN>::get_or_init(_, fn() -> Pin<Box<dyn Future<Output = NN> + Send + Sync>>): !Send & !Sync & !Unpin);
        async_assert_fn!($s::OnceCell<YN>::get_or_init(_, fn() -> Pin<Box<dyn Future<Output = YN> + Send + Sync>>): !Send & !Sync & !Unpin);
        async_assert_fn!($s::OnceCell<YY>::get_or_init(_, fn() -> Pin<Box<dyn Future<Output = YY> + Send + Sync>>): Send & Sync & !Unpin);
        async_assert_fn!($s::OnceCell<YY>::get_or_init(_, fn() -> Pin<Box<dyn Future<Output = YY> + Send>>): Send & !Sync & !Unpin);
        async_assert_fn!($s::OnceCell<YY>::get_or_init(_, fn() -> Pin<Box<dyn Future<Output = YY>>>): !Send & !Sync & !Unpin);
        async_assert_fn!($s::OnceCell<NN>::get_or_try_init(_, fn() -> Pin<Box<dyn Future<Output = std::io::Result<NN>> + Send + Sync>>): !Send & !Sync & !Unpin);
        async_assert_fn!($s::OnceCell<YN>::get_or_try_init(_, fn() -> Pin<Box<dyn Future<Output = std::io::Result<YN>> + Send + Sync>>): !Send & !Sync & !Unpin);
        async_assert_fn!($s::OnceCell<YY>::get_or_try_init(_, fn() -> Pin<Box<dyn Future<Output = std::io::Result<YY>> + Send + Sync>>): Send & Sync & !Unpin);
        async_assert_fn!($s::OnceCell<YY>::get_or_try_init(_, fn() -> Pin<Box<dyn Future<Output = std::io::Result<YY>> + Send>>): Send & !Sync & !Unpin);
        async_assert_fn!($s::OnceCell<YY>::get_or_try_init(_, fn() -> Pin<Box<dyn Future<Output = std::io::Result<YY>>>>): !Send & !Sync & !Unpin);
        assert_unwind!($s::OnceCell<YY>: !UnwindSafe & !RefUnwindSafe);

        // ----- Notify, Barrier (tokio's own lines) -----
        assert_value!($s::Notify: Send & Sync & Unpin);
        assert_value!($s::futures::Notified<'_>: Send & Sync & !Unpin);
        assert_value!($s::futures::OwnedNotified: Send & Sync & !Unpin);
        async_assert_fn!($s::Notify::notified(_): Send & Sync & !Unpin);
        assert_value!($s::Barrier: Send & Sync & Unpin);
        assert_value!($s::BarrierWaitResult: Send & Sync & Unpin);
        async_assert_fn!($s::Barrier::wait(_): Send & Sync & !Unpin);
        assert_unwind!($s::Notify: UnwindSafe & RefUnwindSafe);

        // ----- watch (tokio's own lines) -----
        assert_value!($s::watch::Receiver<NN>: !Send & !Sync & Unpin);
        assert_value!($s::watch::Receiver<YN>: !Send & !Sync & Unpin);
        assert_value!($s::watch::Receiver<YY>: Send & Sync & Unpin);
        assert_value!($s::watch::Ref<'_, NN>: !Send & !Sync & Unpin);
        assert_value!($s::watch::Ref<'_, YN>: !Send & !Sync & Unpin);
        assert_value!($s::watch::Ref<'_, YY>: !Send & Sync & Unpin);
        assert_value!($s::watch::Sender<NN>: !Send & !Sync & Unpin);
        assert_value!($s::watch::Sender<YN>: !Send & !Sync & Unpin);
        assert_value!($s::watch::Sender<YY>: Send & Sync & Unpin);
        async_assert_fn!($s::watch::Receiver<NN>::changed(_): !Send & !Sync & !Unpin);
        async_assert_fn!($s::watch::Receiver<YN>::changed(_): !Send & !Sync & !Unpin);
        async_assert_fn!($s::watch::Receiver<YY>::changed(_): Send & Sync & !Unpin);
        async_assert_fn!($s::watch::Sender<NN>::closed(_): !Send & !Sync & !Unpin);
        async_assert_fn!($s::watch::Sender<YN>::closed(_): !Send & !Sync & !Unpin);
        async_assert_fn!($s::watch::Sender<YY>::closed(_): Send & Sync & !Unpin);

        // ----- broadcast (tokio's own lines) -----
        assert_value!($s::broadcast::Receiver<NN>: !Send & !Sync & Unpin);
        assert_value!($s::broadcast::Receiver<YN>: Send & Sync & Unpin);
        assert_value!($s::broadcast::Receiver<YY>: Send & Sync & Unpin);
        assert_value!($s::broadcast::Sender<NN>: !Send & !Sync & Unpin);
        assert_value!($s::broadcast::Sender<YN>: Send & Sync & Unpin);
        assert_value!($s::broadcast::Sender<YY>: Send & Sync & Unpin);
        assert_value!($s::broadcast::WeakSender<NN>: !Send & !Sync & Unpin);
        assert_value!($s::broadcast::WeakSender<YN>: Send & Sync & Unpin);
        assert_value!($s::broadcast::WeakSender<YY>: Send & Sync & Unpin);
        async_assert_fn!($s::broadcast::Receiver<NN>::recv(_): !Send & !Sync & !Unpin);
        async_assert_fn!($s::broadcast::Receiver<YN>::recv(_): Send & Sync & !Unpin);
        async_assert_fn!($s::broadcast::Receiver<YY>::recv(_): Send & Sync & !Unpin);
        // Every channel handle shares lockscope's channel record: it must not take their
        // unwind safety away (a parking_lot lock in it once did). tokio's mpsc handles are
        // unwind safe whatever tokio's features (its broadcast and watch depend on them).
        assert_unwind!($s::mpsc::Sender<YY>: UnwindSafe & RefUnwindSafe);
        assert_unwind!($s::mpsc::Receiver<YY>: UnwindSafe & RefUnwindSafe);

        // ----- Futures of the async methods -----
        async_assert_fn!($s::Mutex<NN>::lock(_): !Send & !Sync & !Unpin);
        async_assert_fn!($s::Mutex<NN>::lock_owned(_): !Send & !Sync & !Unpin);
        async_assert_fn!($s::Mutex<YN>::lock(_): Send & Sync & !Unpin);
        async_assert_fn!($s::Mutex<YN>::lock_owned(_): Send & Sync & !Unpin);
        async_assert_fn!($s::Mutex<YY>::lock(_): Send & Sync & !Unpin);
        async_assert_fn!($s::Mutex<YY>::lock_owned(_): Send & Sync & !Unpin);
        async_assert_fn!($s::RwLock<NN>::read(_): !Send & !Sync & !Unpin);
        async_assert_fn!($s::RwLock<NN>::write(_): !Send & !Sync & !Unpin);
        async_assert_fn!($s::RwLock<NN>::read_owned(_): !Send & !Sync & !Unpin);
        async_assert_fn!($s::RwLock<NN>::write_owned(_): !Send & !Sync & !Unpin);
        async_assert_fn!($s::RwLock<YN>::read(_): !Send & !Sync & !Unpin);
        async_assert_fn!($s::RwLock<YN>::write(_): !Send & !Sync & !Unpin);
        async_assert_fn!($s::RwLock<YN>::read_owned(_): !Send & !Sync & !Unpin);
        async_assert_fn!($s::RwLock<YN>::write_owned(_): !Send & !Sync & !Unpin);
        async_assert_fn!($s::RwLock<YY>::read(_): Send & Sync & !Unpin);
        async_assert_fn!($s::RwLock<YY>::write(_): Send & Sync & !Unpin);
        async_assert_fn!($s::RwLock<YY>::read_owned(_): Send & Sync & !Unpin);
        async_assert_fn!($s::RwLock<YY>::write_owned(_): Send & Sync & !Unpin);
        async_assert_fn!($s::Semaphore::acquire(_): Send & Sync & !Unpin);
        async_assert_fn!($s::Semaphore::acquire_many(_, u32): Send & Sync & !Unpin);
        async_assert_fn!($s::Semaphore::acquire_owned(_): Send & Sync & !Unpin);
        async_assert_fn!($s::Semaphore::acquire_many_owned(_, u32): Send & Sync & !Unpin);

        // ----- Unwind safety (tokio's primitives hold wait lists in `UnsafeCell`s) -----
        assert_unwind!($s::Mutex<YY>: !UnwindSafe & !RefUnwindSafe);
        assert_unwind!($s::RwLock<YY>: !UnwindSafe & !RefUnwindSafe);
        assert_unwind!($s::Semaphore: !UnwindSafe & !RefUnwindSafe);
        assert_unwind!($s::MutexGuard<'_, YY>: !UnwindSafe & !RefUnwindSafe);
        assert_unwind!($s::OwnedMutexGuard<YY>: !UnwindSafe & !RefUnwindSafe);
        assert_unwind!($s::MappedMutexGuard<'_, YY>: !UnwindSafe & !RefUnwindSafe);
        assert_unwind!($s::OwnedMappedMutexGuard<YY>: !UnwindSafe & !RefUnwindSafe);
        assert_unwind!($s::RwLockReadGuard<'_, YY>: !UnwindSafe & !RefUnwindSafe);
        assert_unwind!($s::OwnedRwLockReadGuard<YY>: !UnwindSafe & !RefUnwindSafe);
        assert_unwind!($s::RwLockWriteGuard<'_, YY>: !UnwindSafe & !RefUnwindSafe);
        assert_unwind!($s::OwnedRwLockWriteGuard<YY>: !UnwindSafe & !RefUnwindSafe);
        assert_unwind!($s::RwLockMappedWriteGuard<'_, YY>: !UnwindSafe & !RefUnwindSafe);
        assert_unwind!($s::OwnedRwLockMappedWriteGuard<YY>: !UnwindSafe & !RefUnwindSafe);
        assert_unwind!($s::SemaphorePermit<'_>: !UnwindSafe & !RefUnwindSafe);
        assert_unwind!($s::OwnedSemaphorePermit: !UnwindSafe & !RefUnwindSafe);
        assert_unwind!($s::TryLockError: UnwindSafe & RefUnwindSafe);
        assert_unwind!($s::AcquireError: UnwindSafe & RefUnwindSafe);
        assert_unwind!($s::TryAcquireError: UnwindSafe & RefUnwindSafe);
    };
}

/// The matrix against tokio itself: proves the expectations are tokio's.
mod raw {
    use super::*;
    use tokio::sync as s;
    matrix!(s);
}

/// The same matrix against the drop-in replacements.
mod wrapped {
    use super::*;
    use lockscope::tokio as s;
    matrix!(s);
}

/// tokio's own `mpsc` and `oneshot` lines of its `tests/async_send_sync.rs` (and the forms it
/// leaves out: `PermitIterator`, `reserve_many`, `recv_many`), for the modules `$m` and `$o`.
macro_rules! channel_matrix {
    ($m:ident, $o:ident) => {
        assert_value!($m::OwnedPermit<NN>: !Send & !Sync & Unpin);
        assert_value!($m::OwnedPermit<YN>: Send & Sync & Unpin);
        assert_value!($m::OwnedPermit<YY>: Send & Sync & Unpin);
        assert_value!($m::Permit<'_, NN>: !Send & !Sync & Unpin);
        assert_value!($m::Permit<'_, YN>: Send & Sync & Unpin);
        assert_value!($m::Permit<'_, YY>: Send & Sync & Unpin);
        assert_value!($m::Receiver<NN>: !Send & !Sync & Unpin);
        assert_value!($m::Receiver<YN>: Send & Sync & Unpin);
        assert_value!($m::Receiver<YY>: Send & Sync & Unpin);
        assert_value!($m::Sender<NN>: !Send & !Sync & Unpin);
        assert_value!($m::Sender<YN>: Send & Sync & Unpin);
        assert_value!($m::Sender<YY>: Send & Sync & Unpin);
        assert_value!($m::UnboundedReceiver<NN>: !Send & !Sync & Unpin);
        assert_value!($m::UnboundedReceiver<YN>: Send & Sync & Unpin);
        assert_value!($m::UnboundedReceiver<YY>: Send & Sync & Unpin);
        assert_value!($m::UnboundedSender<NN>: !Send & !Sync & Unpin);
        assert_value!($m::UnboundedSender<YN>: Send & Sync & Unpin);
        assert_value!($m::UnboundedSender<YY>: Send & Sync & Unpin);
        assert_value!($m::WeakSender<NN>: !Send & !Sync & Unpin);
        assert_value!($m::WeakSender<YN>: Send & Sync & Unpin);
        assert_value!($m::WeakSender<YY>: Send & Sync & Unpin);
        assert_value!($m::WeakUnboundedSender<NN>: !Send & !Sync & Unpin);
        assert_value!($m::WeakUnboundedSender<YN>: Send & Sync & Unpin);
        assert_value!($m::WeakUnboundedSender<YY>: Send & Sync & Unpin);
        assert_value!($m::error::SendError<NN>: !Send & !Sync & Unpin);
        assert_value!($m::error::SendError<YN>: Send & !Sync & Unpin);
        assert_value!($m::error::SendError<YY>: Send & Sync & Unpin);
        assert_value!($m::error::SendTimeoutError<NN>: !Send & !Sync & Unpin);
        assert_value!($m::error::SendTimeoutError<YN>: Send & !Sync & Unpin);
        assert_value!($m::error::SendTimeoutError<YY>: Send & Sync & Unpin);
        assert_value!($m::error::TrySendError<NN>: !Send & !Sync & Unpin);
        assert_value!($m::error::TrySendError<YN>: Send & !Sync & Unpin);
        assert_value!($m::error::TrySendError<YY>: Send & Sync & Unpin);
        assert_value!($o::Receiver<NN>: !Send & !Sync & Unpin);
        assert_value!($o::Receiver<YN>: Send & Sync & Unpin);
        assert_value!($o::Receiver<YY>: Send & Sync & Unpin);
        assert_value!($o::Sender<NN>: !Send & !Sync & Unpin);
        assert_value!($o::Sender<YN>: Send & Sync & Unpin);
        assert_value!($o::Sender<YY>: Send & Sync & Unpin);
        async_assert_fn!($m::Receiver<NN>::recv(_): !Send & !Sync & !Unpin);
        async_assert_fn!($m::Receiver<YN>::recv(_): Send & Sync & !Unpin);
        async_assert_fn!($m::Receiver<YY>::recv(_): Send & Sync & !Unpin);
        async_assert_fn!($m::Sender<NN>::closed(_): !Send & !Sync & !Unpin);
        async_assert_fn!($m::Sender<NN>::reserve(_): !Send & !Sync & !Unpin);
        async_assert_fn!($m::Sender<NN>::reserve_owned(_): !Send & !Sync & !Unpin);
        async_assert_fn!($m::Sender<NN>::send(_, NN): !Send & !Sync & !Unpin);
        async_assert_fn!($m::Sender<NN>::send_timeout(_, NN, Duration): !Send & !Sync & !Unpin);
        async_assert_fn!($m::Sender<YN>::closed(_): Send & Sync & !Unpin);
        async_assert_fn!($m::Sender<YN>::reserve(_): Send & Sync & !Unpin);
        async_assert_fn!($m::Sender<YN>::reserve_owned(_): Send & Sync & !Unpin);
        async_assert_fn!($m::Sender<YN>::send(_, YN): Send & !Sync & !Unpin);
        async_assert_fn!($m::Sender<YN>::send_timeout(_, YN, Duration): Send & !Sync & !Unpin);
        async_assert_fn!($m::Sender<YY>::closed(_): Send & Sync & !Unpin);
        async_assert_fn!($m::Sender<YY>::reserve(_): Send & Sync & !Unpin);
        async_assert_fn!($m::Sender<YY>::reserve_owned(_): Send & Sync & !Unpin);
        async_assert_fn!($m::Sender<YY>::send(_, YY): Send & Sync & !Unpin);
        async_assert_fn!($m::Sender<YY>::send_timeout(_, YY, Duration): Send & Sync & !Unpin);
        async_assert_fn!($m::UnboundedReceiver<NN>::recv(_): !Send & !Sync & !Unpin);
        async_assert_fn!($m::UnboundedReceiver<YN>::recv(_): Send & Sync & !Unpin);
        async_assert_fn!($m::UnboundedReceiver<YY>::recv(_): Send & Sync & !Unpin);
        async_assert_fn!($m::UnboundedSender<NN>::closed(_): !Send & !Sync & !Unpin);
        async_assert_fn!($m::UnboundedSender<YN>::closed(_): Send & Sync & !Unpin);
        async_assert_fn!($m::UnboundedSender<YY>::closed(_): Send & Sync & !Unpin);
        async_assert_fn!($o::Sender<NN>::closed(_): !Send & !Sync & !Unpin);
        async_assert_fn!($o::Sender<YN>::closed(_): Send & Sync & !Unpin);
        async_assert_fn!($o::Sender<YY>::closed(_): Send & Sync & !Unpin);
        assert_value!($m::PermitIterator<'_, NN>: !Send & !Sync & Unpin);
        assert_value!($m::PermitIterator<'_, YN>: Send & Sync & Unpin);
        assert_value!($m::PermitIterator<'_, YY>: Send & Sync & Unpin);
        async_assert_fn!($m::Sender<NN>::reserve_many(_, usize): !Send & !Sync & !Unpin);
        async_assert_fn!($m::Sender<YN>::reserve_many(_, usize): Send & Sync & !Unpin);
        async_assert_fn!($m::Sender<YY>::reserve_many(_, usize): Send & Sync & !Unpin);
        async_assert_fn!($m::Receiver<NN>::recv_many(_, _, usize): !Send & !Sync & !Unpin);
        async_assert_fn!($m::Receiver<YN>::recv_many(_, _, usize): Send & !Sync & !Unpin);
        async_assert_fn!($m::Receiver<YY>::recv_many(_, _, usize): Send & Sync & !Unpin);
    };
}

/// The channel matrix against tokio itself.
mod raw_channels {
    use super::*;
    use std::time::Duration;
    use tokio::sync::{mpsc, oneshot};
    channel_matrix!(mpsc, oneshot);
}

/// The same matrix against lockscope's channels.
mod wrapped_channels {
    use super::*;
    use lockscope::tokio::{mpsc, oneshot};
    use std::time::Duration;
    channel_matrix!(mpsc, oneshot);
}

/// lockscope's own additions follow the same rules as the forms they extend.
mod lockscope_additions {
    use super::*;
    use lockscope::tokio as s;
    use std::time::Duration;

    async_assert_fn!(s::Mutex<NN>::lock_timeout(_, Duration): !Send & !Sync & !Unpin);
    async_assert_fn!(s::Mutex<YN>::lock_timeout(_, Duration): Send & Sync & !Unpin);
    async_assert_fn!(s::Mutex<YY>::lock_timeout(_, Duration): Send & Sync & !Unpin);
    async_assert_fn!(s::Mutex<NN>::lock_owned_timeout(_, Duration): !Send & !Sync & !Unpin);
    async_assert_fn!(s::Mutex<YN>::lock_owned_timeout(_, Duration): Send & Sync & !Unpin);
    async_assert_fn!(s::Mutex<YY>::lock_owned_timeout(_, Duration): Send & Sync & !Unpin);
    async_assert_fn!(s::RwLock<NN>::read_timeout(_, Duration): !Send & !Sync & !Unpin);
    async_assert_fn!(s::RwLock<YN>::read_timeout(_, Duration): !Send & !Sync & !Unpin);
    async_assert_fn!(s::RwLock<YY>::read_timeout(_, Duration): Send & Sync & !Unpin);
    async_assert_fn!(s::RwLock<NN>::write_timeout(_, Duration): !Send & !Sync & !Unpin);
    async_assert_fn!(s::RwLock<YN>::write_timeout(_, Duration): !Send & !Sync & !Unpin);
    async_assert_fn!(s::RwLock<YY>::write_timeout(_, Duration): Send & Sync & !Unpin);
    async_assert_fn!(s::RwLock<YN>::read_owned_timeout(_, Duration): !Send & !Sync & !Unpin);
    async_assert_fn!(s::RwLock<YY>::read_owned_timeout(_, Duration): Send & Sync & !Unpin);
    async_assert_fn!(s::RwLock<YN>::write_owned_timeout(_, Duration): !Send & !Sync & !Unpin);
    async_assert_fn!(s::RwLock<YY>::write_owned_timeout(_, Duration): Send & Sync & !Unpin);
    async_assert_fn!(s::Semaphore::acquire_timeout(_, Duration): Send & Sync & !Unpin);
    async_assert_fn!(s::Semaphore::acquire_many_timeout(_, u32, Duration): Send & Sync & !Unpin);
    async_assert_fn!(s::Semaphore::acquire_owned_timeout(_, Duration): Send & Sync & !Unpin);
    async_assert_fn!(
        s::Semaphore::acquire_many_owned_timeout(_, u32, Duration): Send & Sync & !Unpin
    );
    assert_value!(s::TimeoutError: Send & Sync & Unpin);
}

/// The matrix of the blocking locks that parking_lot and lockscope::parking_lot share (every
/// guard is `!Send`, as parking_lot's without its `send_guard` feature).
macro_rules! parking_lot_matrix {
    ($s:ident) => {
        assert_value!($s::Mutex<NN>: !Send & !Sync & Unpin);
        assert_value!($s::Mutex<NY>: !Send & !Sync & Unpin);
        assert_value!($s::Mutex<YN>: Send & Sync & Unpin);
        assert_value!($s::Mutex<YY>: Send & Sync & Unpin);
        assert_value!($s::MutexGuard<'_, NN>: !Send & !Sync & Unpin);
        assert_value!($s::MutexGuard<'_, NY>: !Send & Sync & Unpin);
        assert_value!($s::MutexGuard<'_, YN>: !Send & !Sync & Unpin);
        assert_value!($s::MutexGuard<'_, YY>: !Send & Sync & Unpin);
        assert_value!($s::MappedMutexGuard<'_, NN>: !Send & !Sync & Unpin);
        assert_value!($s::MappedMutexGuard<'_, NY>: !Send & Sync & Unpin);
        assert_value!($s::MappedMutexGuard<'_, YN>: !Send & !Sync & Unpin);
        assert_value!($s::MappedMutexGuard<'_, YY>: !Send & Sync & Unpin);

        assert_value!($s::ReentrantMutex<NN>: !Send & !Sync & Unpin);
        assert_value!($s::ReentrantMutex<NY>: !Send & !Sync & Unpin);
        assert_value!($s::ReentrantMutex<YN>: Send & Sync & Unpin);
        assert_value!($s::ReentrantMutex<YY>: Send & Sync & Unpin);
        assert_value!($s::ReentrantMutexGuard<'_, NN>: !Send & !Sync & Unpin);
        assert_value!($s::ReentrantMutexGuard<'_, NY>: !Send & Sync & Unpin);
        assert_value!($s::ReentrantMutexGuard<'_, YN>: !Send & !Sync & Unpin);
        assert_value!($s::ReentrantMutexGuard<'_, YY>: !Send & Sync & Unpin);
        assert_value!($s::MappedReentrantMutexGuard<'_, NN>: !Send & !Sync & Unpin);
        assert_value!($s::MappedReentrantMutexGuard<'_, NY>: !Send & Sync & Unpin);
        assert_value!($s::MappedReentrantMutexGuard<'_, YN>: !Send & !Sync & Unpin);
        assert_value!($s::MappedReentrantMutexGuard<'_, YY>: !Send & Sync & Unpin);

        assert_value!($s::RwLock<NN>: !Send & !Sync & Unpin);
        assert_value!($s::RwLock<NY>: !Send & !Sync & Unpin);
        assert_value!($s::RwLock<YN>: Send & !Sync & Unpin);
        assert_value!($s::RwLock<YY>: Send & Sync & Unpin);
        assert_value!($s::RwLockReadGuard<'_, NN>: !Send & !Sync & Unpin);
        assert_value!($s::RwLockReadGuard<'_, NY>: !Send & Sync & Unpin);
        assert_value!($s::RwLockReadGuard<'_, YN>: !Send & !Sync & Unpin);
        assert_value!($s::RwLockReadGuard<'_, YY>: !Send & Sync & Unpin);
        assert_value!($s::RwLockWriteGuard<'_, NN>: !Send & !Sync & Unpin);
        assert_value!($s::RwLockWriteGuard<'_, NY>: !Send & Sync & Unpin);
        assert_value!($s::RwLockWriteGuard<'_, YN>: !Send & !Sync & Unpin);
        assert_value!($s::RwLockWriteGuard<'_, YY>: !Send & Sync & Unpin);
        assert_value!($s::RwLockUpgradableReadGuard<'_, NN>: !Send & !Sync & Unpin);
        assert_value!($s::RwLockUpgradableReadGuard<'_, NY>: !Send & Sync & Unpin);
        assert_value!($s::RwLockUpgradableReadGuard<'_, YN>: !Send & !Sync & Unpin);
        assert_value!($s::RwLockUpgradableReadGuard<'_, YY>: !Send & Sync & Unpin);
        assert_value!($s::MappedRwLockReadGuard<'_, NN>: !Send & !Sync & Unpin);
        assert_value!($s::MappedRwLockReadGuard<'_, NY>: !Send & Sync & Unpin);
        assert_value!($s::MappedRwLockReadGuard<'_, YN>: !Send & !Sync & Unpin);
        assert_value!($s::MappedRwLockReadGuard<'_, YY>: !Send & Sync & Unpin);
        assert_value!($s::MappedRwLockWriteGuard<'_, NN>: !Send & !Sync & Unpin);
        assert_value!($s::MappedRwLockWriteGuard<'_, NY>: !Send & Sync & Unpin);
        assert_value!($s::MappedRwLockWriteGuard<'_, YN>: !Send & !Sync & Unpin);
        assert_value!($s::MappedRwLockWriteGuard<'_, YY>: !Send & Sync & Unpin);

        assert_value!($s::Condvar: Send & Sync & Unpin);
        assert_value!($s::WaitTimeoutResult: Send & Sync & Unpin);
    };
}

/// The `arc_lock` guards' rows that parking_lot and lockscope share.
#[cfg(feature = "arc_lock")]
macro_rules! parking_lot_arc_matrix {
    ($s:ident) => {
        assert_value!($s::ArcMutexGuard<$s::RawMutex, NN>: !Send & !Sync & Unpin);
        assert_value!($s::ArcMutexGuard<$s::RawMutex, YN>: !Send & !Sync & Unpin);
        assert_value!($s::ArcMutexGuard<$s::RawMutex, YY>: !Send & Sync & Unpin);
        assert_value!($s::ArcRwLockReadGuard<$s::RawRwLock, NN>: !Send & !Sync & Unpin);
        assert_value!($s::ArcRwLockReadGuard<$s::RawRwLock, NY>: !Send & !Sync & Unpin);
        assert_value!($s::ArcRwLockReadGuard<$s::RawRwLock, YN>: !Send & !Sync & Unpin);
        assert_value!($s::ArcRwLockReadGuard<$s::RawRwLock, YY>: !Send & Sync & Unpin);
        assert_value!($s::ArcRwLockWriteGuard<$s::RawRwLock, NN>: !Send & !Sync & Unpin);
        assert_value!($s::ArcRwLockWriteGuard<$s::RawRwLock, NY>: !Send & !Sync & Unpin);
        assert_value!($s::ArcRwLockWriteGuard<$s::RawRwLock, YN>: !Send & !Sync & Unpin);
        assert_value!($s::ArcRwLockWriteGuard<$s::RawRwLock, YY>: !Send & Sync & Unpin);
        assert_value!($s::ArcRwLockUpgradableReadGuard<$s::RawRwLock, NN>: !Send & !Sync & Unpin);
        assert_value!($s::ArcRwLockUpgradableReadGuard<$s::RawRwLock, NY>: !Send & !Sync & Unpin);
        assert_value!($s::ArcRwLockUpgradableReadGuard<$s::RawRwLock, YN>: !Send & !Sync & Unpin);
        assert_value!($s::ArcRwLockUpgradableReadGuard<$s::RawRwLock, YY>: !Send & Sync & Unpin);
    };
}

/// parking_lot itself: proves the expectations are parking_lot's.
mod parking_lot_raw {
    use super::*;
    use parking_lot as s;
    parking_lot_matrix!(s);
    #[cfg(feature = "arc_lock")]
    parking_lot_arc_matrix!(s);

    // parking_lot's `ArcMutexGuard` is `Sync` when `T: Sync`, even for a `T` that is not
    // `Send`: see `parking_lot_wrapped` for why lockscope's is not.
    #[cfg(feature = "arc_lock")]
    assert_value!(s::ArcMutexGuard<s::RawMutex, NY>: !Send & Sync & Unpin);
}

/// The same against lockscope::parking_lot.
mod parking_lot_wrapped {
    use super::*;
    use lockscope::parking_lot as s;
    parking_lot_matrix!(s);
    #[cfg(feature = "arc_lock")]
    parking_lot_arc_matrix!(s);

    // Kept stricter on purpose: a shared `&ArcMutexGuard` hands out the `Arc<Mutex<T>>` (its
    // `mutex()` accessor), and a clone of that `Arc` sent to another thread may drop the
    // `T` there, so sharing the guard needs `T: Send` as well as `T: Sync`, as sharing the
    // `Arc` does. A `T` that is `Sync` but not `Send` makes lockscope's guard `!Sync`.
    #[cfg(feature = "arc_lock")]
    assert_value!(s::ArcMutexGuard<s::RawMutex, NY>: !Send & !Sync & Unpin);
}

/// std::sync's locks, against std and lockscope::std::sync.
macro_rules! std_matrix {
    ($s:ident) => {
        assert_value!($s::Mutex<NN>: !Send & !Sync & Unpin);
        assert_value!($s::Mutex<NY>: !Send & !Sync & Unpin);
        assert_value!($s::Mutex<YN>: Send & Sync & Unpin);
        assert_value!($s::Mutex<YY>: Send & Sync & Unpin);
        assert_value!($s::MutexGuard<'_, NN>: !Send & !Sync & Unpin);
        assert_value!($s::MutexGuard<'_, NY>: !Send & Sync & Unpin);
        assert_value!($s::MutexGuard<'_, YN>: !Send & !Sync & Unpin);
        assert_value!($s::MutexGuard<'_, YY>: !Send & Sync & Unpin);
        assert_value!($s::RwLock<NN>: !Send & !Sync & Unpin);
        assert_value!($s::RwLock<NY>: !Send & !Sync & Unpin);
        assert_value!($s::RwLock<YN>: Send & !Sync & Unpin);
        assert_value!($s::RwLock<YY>: Send & Sync & Unpin);
        assert_value!($s::RwLockReadGuard<'_, NN>: !Send & !Sync & Unpin);
        assert_value!($s::RwLockReadGuard<'_, NY>: !Send & Sync & Unpin);
        assert_value!($s::RwLockReadGuard<'_, YN>: !Send & !Sync & Unpin);
        assert_value!($s::RwLockReadGuard<'_, YY>: !Send & Sync & Unpin);
        assert_value!($s::RwLockWriteGuard<'_, NN>: !Send & !Sync & Unpin);
        assert_value!($s::RwLockWriteGuard<'_, NY>: !Send & Sync & Unpin);
        assert_value!($s::RwLockWriteGuard<'_, YN>: !Send & !Sync & Unpin);
        assert_value!($s::RwLockWriteGuard<'_, YY>: !Send & Sync & Unpin);
        assert_value!($s::Condvar: Send & Sync & Unpin);
        assert_value!($s::PoisonError<$s::MutexGuard<'_, YY>>: !Send & Sync & Unpin);
        assert_value!($s::TryLockError<$s::MutexGuard<'_, YY>>: !Send & Sync & Unpin);
    };
}

/// std itself.
mod std_raw {
    use super::*;
    use std::sync as s;
    std_matrix!(s);
}

/// lockscope::std::sync.
mod std_wrapped {
    use super::*;
    use lockscope::std::sync as s;
    std_matrix!(s);
}

/// tokio-util's `PollSemaphore` and lockscope's: `Send`, `Sync` (tower's `BoxCloneSyncService`
/// of a `ConcurrencyLimit` needs it) and `Unpin`.
#[cfg(feature = "tokio-util")]
macro_rules! poll_semaphore_matrix {
    ($s:ident) => {
        assert_value!($s::PollSemaphore: Send & Sync & Unpin);
    };
}

#[cfg(feature = "tokio-util")]
mod tokio_util_raw {
    use super::*;
    use tokio_util::sync as s;
    poll_semaphore_matrix!(s);
}

#[cfg(feature = "tokio-util")]
mod tokio_util_wrapped {
    use super::*;
    use lockscope::tokio_util as s;
    poll_semaphore_matrix!(s);
}

/// The checks above are compile-time; this test only makes the file show up in the test run.
#[test]
fn the_matrix_compiles() {}
