//! `select_permit`: a permit held inside a `select!` branch across an `.await`.
//!
//! The job dispatcher loops over a `select!`: one branch takes a database connection (a
//! permit of the pool semaphore) "so that it is ready when a job comes", then awaits the next
//! job; the other branch watches for shutdown. Meanwhile, `submit` needs a connection to
//! validate a job before queueing it. With the pool's only connection parked in the
//! dispatcher's branch:
//!
//! - `submit` waits for a connection that is held by the dispatcher, which waits for a job
//!   that `submit` would send: the pipeline stops, with no error (field note 4);
//! - and the shutdown branch is dead: `select!` polls its branches only while it is waiting
//!   in the `select!` itself, never while one branch's body runs. Shutdown is ignored.
//!
//! lockscope cannot see the channel between the two, but it sees the connection: a waiter
//! queued on `db_pool` while nothing is granted, and the dispatcher holding the permit,
//! acquired at the `select!` branch, for as long as the queue has been stuck.
//!
//! The fix: select on the job first, and take the connection inside the branch, for that
//! job only (then release it before looping back to the `select!`).
//!
//! Run: `cargo run --example select_permit`
use std::sync::Arc;
use std::time::Duration;

use lockscope::detector::FindingKind;
use lockscope::tokio::Semaphore;
use lockscope_examples::{
    detector_for_examples, exit, expect_finding, findings_about, print_finding, step,
};
use tokio::sync::{mpsc, watch};

type Job = u32;

async fn run(job: Job) {
    tokio::time::sleep(Duration::from_millis(5)).await;
    println!("job {job}: done");
}

/// BUG: takes a connection before there is a job, and holds it across `jobs.recv()`.
async fn dispatcher(
    pool: Arc<Semaphore>,
    mut jobs: mpsc::Receiver<Job>,
    mut stop: watch::Receiver<bool>,
) {
    loop {
        tokio::select! {
            permit = pool.acquire() => {
                let _conn = permit.expect("never closed");
                let Some(job) = jobs.recv().await else { break };
                run(job).await;
            }
            _ = stop.changed() => break,
        }
    }
    println!("dispatcher: stopped");
}

/// The fix: wait for a job; only then take a connection, for that job.
async fn dispatcher_fixed(
    pool: Arc<Semaphore>,
    mut jobs: mpsc::Receiver<Job>,
    mut stop: watch::Receiver<bool>,
) {
    loop {
        tokio::select! {
            job = jobs.recv() => {
                let Some(job) = job else { break };
                let _conn = pool.acquire().await.expect("never closed");
                run(job).await;
            }
            _ = stop.changed() => break,
        }
    }
    println!("dispatcher: stopped");
}

/// Validates the job against the database, then queues it.
async fn submit(pool: &Semaphore, jobs: &mpsc::Sender<Job>, job: Job) {
    let conn = pool.acquire().await.expect("never closed");
    // ... validation query ...
    drop(conn);
    jobs.send(job).await.expect("the dispatcher is running");
    println!("job {job}: submitted");
}

/// Starts a dispatcher (`fixed` or not) on a pool of one connection named `pool_name`,
/// submits two jobs, then asks it to shut down; returns whether it stopped within 500 ms.
async fn scenario(pool_name: &str, fixed: bool) -> (Arc<Semaphore>, bool) {
    let pool = Arc::new(Semaphore::named(pool_name, 1));
    let (tx, rx) = mpsc::channel(8);
    let (stop_tx, stop_rx) = watch::channel(false);
    let dispatcher = if fixed {
        tokio::spawn(dispatcher_fixed(pool.clone(), rx, stop_rx))
    } else {
        tokio::spawn(dispatcher(pool.clone(), rx, stop_rx))
    };
    tokio::time::sleep(Duration::from_millis(10)).await; // the dispatcher is up
    let p = pool.clone();
    tokio::spawn(async move {
        for job in 1..=2 {
            submit(&p, &tx, job).await;
        }
    });
    tokio::time::sleep(Duration::from_millis(50)).await;
    let _ = stop_tx.send(true);
    let stopped = tokio::time::timeout(Duration::from_millis(500), dispatcher)
        .await
        .is_ok();
    (pool, stopped)
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    detector_for_examples(Duration::from_millis(500), Duration::from_millis(500), None);

    step("1. the dispatcher parks the pool's only connection in its select! branch");
    let (_pool, stopped) = scenario("db_pool", false).await;
    println!("no job ran; dispatcher stopped on shutdown: {stopped}");
    print_finding(&expect_finding(FindingKind::StuckQueue, &["db_pool"]).await);

    step("2. the fix: select on the job, take the connection inside the branch");
    let (_pool, stopped) = scenario("db_pool_fixed", true).await;
    lockscope::detector::check_now();
    let found = findings_about(&["db_pool_fixed"]);
    println!(
        "dispatcher stopped on shutdown: {stopped}; lockscope findings about db_pool_fixed: {}",
        found.len()
    );
    // Part 1's dispatcher and submitter are stuck for good.
    exit(if stopped && found.is_empty() { 0 } else { 1 });
}
