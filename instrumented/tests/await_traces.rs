//! Await traces in deadlock reports (`--cfg tokio_unstable`, the `taskdump` feature, Linux):
//! a deadlock among tasks names where each task of its knot is suspended, in both runtime
//! flavours; a deadlock through the executor (whose blocked workers a dump would wait for)
//! carries none and is reported as fast as without the feature. Each deadlock runs in a child
//! process (this test binary, filtered to one `#[ignore]`d test), bounded by the parent.
#![cfg(all(tokio_unstable, feature = "taskdump", target_os = "linux"))]

use std::sync::Arc;

use lockscope::tokio::{Barrier, Mutex};

#[path = "common/mod.rs"]
mod common;

/// Set in the child's environment only: the deadlocking tests do nothing without it.
const CHILD_ENV: &str = "LOCKSCOPE_AWAIT_TRACES_CHILD";

fn child() -> bool {
    std::env::var_os(CHILD_ENV).is_some()
}

/// The line where [`take_first_then_second`] waits for its second lock.
const SECOND_LOCK_LINE: u32 = line!() + 6;

/// Takes `first`, meets the other task, then waits for `second`.
async fn take_first_then_second(first: Arc<Mutex<u32>>, second: Arc<Mutex<u32>>, b: Arc<Barrier>) {
    let _g = first.lock().await;
    b.wait().await;
    *second.lock().await += 1;
}

/// The line where [`serve`] awaits [`take_first_then_second`].
const SERVE_LINE: u32 = line!() + 4;

/// A task's outer function, so that its trace has two frames of the user's.
async fn serve(first: Arc<Mutex<u32>>, second: Arc<Mutex<u32>>, b: Arc<Barrier>) {
    take_first_then_second(first, second, b).await;
}

/// Two tasks in an ABBA; the body awaits both.
async fn abba(prefix: &str) {
    let a = Arc::new(Mutex::named(format!("{prefix}_a"), 0));
    let b = Arc::new(Mutex::named(format!("{prefix}_b"), 0));
    let meet = Arc::new(Barrier::new(2));
    let t1 = tokio::spawn(serve(a.clone(), b.clone(), meet.clone()));
    let t2 = tokio::spawn(serve(b, a, meet));
    let _ = t1.await;
    let _ = t2.await;
}

#[lockscope::test]
#[ignore = "deliberately deadlocks; run in a child process by the tests below"]
async fn ct_abba() {
    if child() {
        abba("traces_ct").await;
    }
}

#[lockscope::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "deliberately deadlocks; run in a child process by the tests below"]
async fn mt_abba() {
    if child() {
        abba("traces_mt").await;
    }
}

/// A blocking guard held across an `.await` by the body while a task on the only thread
/// waits for it: a deadlock through the executor.
#[lockscope::test]
#[ignore = "deliberately deadlocks; run in a child process by the tests below"]
async fn ct_executor() {
    if child() {
        common::body_holds_while_a_task_locks("traces_exec").await;
    }
}

/// Runs `test` in a child; it must fail within 3 s with a deadlock report naming `lock`.
fn deadlock_report(test: &str, lock: &str) -> String {
    let run = common::child_deadlock(test, CHILD_ENV, lock);
    format!("{}\n{}", run.stdout, run.stderr)
}

/// Both tasks of the knot, each with a trace from its function to the `.await` it is
/// suspended at.
fn assert_traced(all: &str) {
    let traces: Vec<&str> = all.split("await trace of task").skip(1).collect();
    assert_eq!(
        traces.len(),
        2,
        "one await trace per task of the knot:\n{all}"
    );
    let outer = format!("tests/await_traces.rs:{SERVE_LINE}:");
    let inner = format!("tests/await_traces.rs:{SECOND_LOCK_LINE}:");
    for t in traces {
        let t = t.split("primitives:").next().unwrap();
        let frames: Vec<&str> = t.lines().skip(1).filter(|l| l.contains('╼')).collect();
        assert!(
            frames.len() == 2 && frames[0].contains(&outer) && frames[1].contains(&inner),
            "each trace goes from the task's function ({outer}) to its wait ({inner}):\n{all}"
        );
        // lockscope's own frames, and tokio's under them, are left out.
        assert!(
            !t.contains("probe") && !t.contains("batch_semaphore"),
            "the trace ends at the user's frame:\n{all}"
        );
    }
}

#[test]
fn a_deadlock_among_tasks_on_a_current_thread_runtime_carries_their_await_traces() {
    assert_traced(&deadlock_report("ct_abba", "traces_ct_a"));
}

#[test]
fn a_deadlock_among_tasks_on_a_multi_thread_runtime_carries_their_await_traces() {
    assert_traced(&deadlock_report("mt_abba", "traces_mt_a"));
}

#[test]
fn a_deadlock_through_the_executor_carries_no_trace() {
    let all = deadlock_report("ct_executor", "traces_exec");
    assert!(
        !all.contains("await trace"),
        "no dump of a blocked runtime:\n{all}"
    );
}
