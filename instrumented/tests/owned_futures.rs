//! The owned forms' hand-written future (`lock_owned`, `read_owned`, `write_owned`,
//! `acquire_owned`, `acquire_many_owned`): its size, which keeps a task that waits on it in raw
//! tokio's task-cell size (issue 16's backpressure workload), and its two lives the other tests do
//! not reach, with the detector off (tokio's future alone, the primitive not looked up; the
//! borrowed forms' too), switched while a borrowed acquisition waits, and dropped after the lock
//! was handed to it. One test: it switches the detector off for the whole process.

use std::mem::size_of_val;
use std::sync::Arc;

use lockscope::tokio::{Mutex, RwLock, Semaphore};
use tokio_test::task::spawn;
use tokio_test::{assert_pending, assert_ready};

/// Raw tokio's `acquire_owned` future is 88 bytes on 64-bit targets; ours keeps the `Arc`, the
/// acquisition, the probe's state and tokio's `acquire` future: 136. A spawned task around it
/// that also keeps its permit across an `.await` (the backpressure task) is then 152 bytes in
/// a release build, raw's 104 plus 48, which tokio still fits in raw's task cell (a million
/// such tasks: 437 MB either way, against 559 MB at 192 bytes).
#[cfg(target_pointer_width = "64")]
fn sizes() {
    let s = Arc::new(Semaphore::new(1));
    let m = Arc::new(Mutex::new(0u64));
    let l = Arc::new(RwLock::new(0u64));
    assert!(size_of_val(&s.clone().acquire_owned()) <= 136);
    assert!(size_of_val(&m.clone().lock_owned()) <= 136);
    assert!(size_of_val(&l.clone().read_owned()) <= 136);
    // `acquire_many`'s future keeps its count: a word more.
    assert!(size_of_val(&s.clone().acquire_many_owned(2)) <= 144);
    assert!(size_of_val(&l.clone().write_owned()) <= 144);
    // The task, against raw tokio's same task (their layout differs between debug and
    // release builds, alike).
    macro_rules! task {
        ($s:expr) => {{
            let s = $s;
            async move {
                let p = s.acquire_owned().await.expect("open");
                tokio::task::yield_now().await;
                drop(p);
            }
        }};
    }
    let ours = size_of_val(&task!(s.clone()));
    let raw = size_of_val(&task!(Arc::new(tokio::sync::Semaphore::new(1))));
    assert!(ours <= raw + 48, "{ours} bytes against raw tokio's {raw}");
}

#[cfg(not(target_pointer_width = "64"))]
fn sizes() {}

/// Waits with the detector off: tokio's future alone, which a drop must take out of tokio's
/// queue (else the permit handed on would go to a future that is gone) and a grant must hand
/// over; and, on primitives made with `const_new` (registered on first use), neither the
/// futures, polled or dropped, nor the guards and permits they give look the primitive up.
fn off() {
    let s = Arc::new(Semaphore::const_new(1));
    let m = Arc::new(Mutex::const_new(0u64));
    let l = Arc::new(RwLock::const_new(0u64));
    let before = lockscope::detector::locks().len();
    let p = assert_ready!(spawn(s.clone().acquire_owned()).poll()).unwrap();
    let g = assert_ready!(spawn(m.clone().lock_owned()).poll());
    let r = assert_ready!(spawn(l.clone().read_owned()).poll());
    let mut a = spawn(s.clone().acquire_owned());
    let mut b = spawn(s.clone().acquire_many_owned(1));
    let mut c = spawn(m.clone().lock_owned());
    let mut d = spawn(m.clone().lock_owned());
    let mut w = spawn(l.clone().write_owned());
    assert_pending!(a.poll());
    assert_pending!(b.poll());
    assert_pending!(c.poll());
    assert_pending!(d.poll());
    assert_pending!(w.poll());
    drop(a);
    drop(c);
    drop(p);
    assert!(b.is_woken(), "the permit went to the next waiter");
    let pb = assert_ready!(b.poll()).unwrap();
    assert_eq!(pb.num_permits(), 1);
    drop(g);
    assert!(d.is_woken(), "the lock went to the next waiter");
    let mut gd = assert_ready!(d.poll());
    *gd += 1;
    drop(r);
    assert!(w.is_woken(), "the write lock went to the writer");
    *assert_ready!(w.poll()) += 1;
    drop((pb, gd));
    assert_eq!(s.available_permits(), 1);
    assert_eq!((*m.try_lock().unwrap(), *l.try_read().unwrap()), (1, 1));
    assert_eq!(
        lockscope::detector::locks().len(),
        before,
        "nothing was registered"
    );
}

/// The borrowed forms with the detector off: a contended `lock`, `write` or `acquire` waits
/// in tokio's queue alone (FIFO, a dropped waiter leaves it), and a lock made with
/// `const_new` (registered on first use) is never looked up, by these, their guards or the
/// `try_` forms (parking_lot's too).
fn off_borrowed() {
    let m = Mutex::const_new(0u64);
    let l = RwLock::const_new(0u64);
    let s = Semaphore::const_new(1);
    let blocking = lockscope::parking_lot::Mutex::new(0u64);
    let before = lockscope::detector::locks().len();
    let g = assert_ready!(spawn(m.lock()).poll());
    let r = assert_ready!(spawn(l.read()).poll());
    let p = assert_ready!(spawn(s.acquire()).poll()).unwrap();
    let mut first = spawn(m.lock());
    let mut second = spawn(m.lock());
    let mut w = spawn(l.write());
    let mut a = spawn(s.acquire());
    assert_pending!(first.poll());
    assert_pending!(second.poll());
    assert_pending!(w.poll());
    assert_pending!(a.poll());
    drop(first);
    drop(g);
    assert!(second.is_woken(), "the lock went to the next waiter");
    let mut g2 = assert_ready!(second.poll());
    *g2 += 1;
    drop(g2);
    drop(r);
    assert!(w.is_woken());
    *assert_ready!(w.poll()) += 1;
    drop(p);
    assert!(a.is_woken());
    drop(assert_ready!(a.poll()).unwrap());
    assert_eq!(s.available_permits(), 1);
    assert_eq!((*m.try_lock().unwrap(), *l.try_read().unwrap()), (1, 1));
    drop(s.try_acquire_many(1).unwrap());
    *blocking.try_lock().unwrap() += 1;
    *blocking.lock() += 1;
    assert_eq!(
        lockscope::detector::locks().len(),
        before,
        "nothing was registered"
    );
}

/// A future handed the permits while waiting, dropped before it saw them: tokio gives them
/// back, and the books keep no holder and no waiter.
fn handed_then_dropped() {
    let s = Arc::new(Semaphore::named("owned_futures_handed", 2));
    let p = s.try_acquire_many(2).unwrap();
    let mut a = spawn(s.clone().acquire_many_owned(2));
    assert_pending!(a.poll());
    drop(p);
    assert!(a.is_woken());
    drop(a);
    assert_eq!(s.available_permits(), 2);
    let lock = lockscope::detector::locks()
        .into_iter()
        .find(|l| l.name == "owned_futures_handed")
        .expect("registered");
    assert!(lock.holders.is_empty());
    assert!(lock.waiters.is_empty());
}

/// A borrowed acquisition looks at the detector when it is made. One made (and queued) while
/// it was on leaves the books when it is granted after it was switched off; one made while it
/// was off waits in tokio's queue alone and records nothing, though the detector is on again
/// by its grant. Either way the books end with no holder and no waiter.
fn switched_while_waiting() {
    let m = Mutex::named("owned_futures_switched", 0u64);
    let books = || {
        lockscope::detector::locks()
            .into_iter()
            .find(|l| l.name == "owned_futures_switched")
            .expect("registered")
    };
    let g = m.try_lock().unwrap();
    let mut made_on = spawn(m.lock());
    assert_pending!(made_on.poll());
    assert_eq!((books().holders.len(), books().waiters.len()), (1, 1));
    lockscope::detector::set_enabled(false);
    let mut made_off = spawn(m.lock());
    assert_pending!(made_off.poll());
    drop(g);
    assert!(
        made_on.is_woken(),
        "FIFO: the lock went to the first waiter"
    );
    let mut g = assert_ready!(made_on.poll());
    *g += 1;
    lockscope::detector::set_enabled(true);
    assert!(
        books().waiters.is_empty(),
        "the granted wait left the books"
    );
    drop(g);
    assert!(made_off.is_woken());
    let mut g = assert_ready!(made_off.poll());
    *g += 1;
    assert!(
        books().holders.is_empty(),
        "made while off: nothing recorded"
    );
    drop(g);
    let b = books();
    assert!(b.holders.is_empty() && b.waiters.is_empty());
    assert_eq!(*m.try_lock().unwrap(), 2);
}

#[test]
fn owned_futures() {
    sizes();
    handed_then_dropped();
    lockscope::detector::set_enabled(false);
    off();
    off_borrowed();
    lockscope::detector::set_enabled(true);
    handed_then_dropped();
    switched_while_waiting();
}
