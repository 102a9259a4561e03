//! `thread_join_deadlock`: a thread holds a mutex and joins a thread that waits for it.
//!
//! A shutdown routine locks the shared log so that nothing more is written, then joins the
//! background flusher "to be sure it is done". The flusher's last act is one more write to
//! the log: it waits for the mutex the shutdown routine holds, and the shutdown routine waits
//! for the flusher to finish. Both threads are blocked for good.
//!
//! 1. The deadlock: lockscope reports it, naming the join (`join of thread 'flusher' (#N)
//!    (spawned at ...)`), the line of the `join()`, and the mutex with who holds it.
//! 2. The fix: join the flusher first, then lock the log. Nothing is reported.
//!
//! Run: `cargo run --example thread_join_deadlock`
use std::sync::Arc;
use std::time::Duration;

use lockscope::detector::FindingKind;
use lockscope::parking_lot::Mutex;
use lockscope::std::thread;
use lockscope_examples::{
    detector_for_examples, exit, expect_finding_blocking, findings_about, print_finding, step,
};

/// The background flusher: its last act is one more write to the log.
fn start_flusher(log: Arc<Mutex<Vec<String>>>) -> thread::JoinHandle<()> {
    thread::Builder::new()
        .name("flusher".into())
        .spawn(move || {
            thread::sleep(Duration::from_millis(20));
            log.lock().push("flushed".into());
        })
        .expect("a thread")
}

/// BUG: joins the flusher while holding the log, which the flusher needs.
fn shutdown(log: Arc<Mutex<Vec<String>>>) {
    let _closed = log.lock();
    let flusher = start_flusher(log.clone());
    flusher.join().expect("the flusher does not panic");
}

/// The fix: join the flusher first, then lock the log.
fn shutdown_fixed(log: Arc<Mutex<Vec<String>>>) {
    let flusher = start_flusher(log.clone());
    flusher.join().expect("the flusher does not panic");
    log.lock().push("closed".into());
}

fn main() {
    detector_for_examples(Duration::from_secs(1), Duration::from_secs(1), None);

    step("1. shutdown holds the log and joins the flusher, which needs the log");
    let log = Arc::new(Mutex::named("log", Vec::new()));
    let l = log.clone();
    thread::Builder::new()
        .name("shutdown".into())
        .spawn(move || shutdown(l))
        .expect("a thread");
    print_finding(&expect_finding_blocking(FindingKind::Deadlock, &["log"]));

    step("2. the fix: join the flusher, then lock the log; a fresh log");
    let fresh = Arc::new(Mutex::named("fresh log", Vec::new()));
    shutdown_fixed(fresh.clone());
    lockscope::detector::check_now();
    let about_fixed = findings_about(&["fresh log"]);
    println!(
        "log closed: {:?}; lockscope findings about the fresh log: {}",
        fresh.lock(),
        about_fixed.len()
    );
    exit(if about_fixed.is_empty() { 0 } else { 1 });
}
