//! `global_lock`: one lock for every process of the machine (an emulator, a port, a shared
//! cache directory that two test runs must not use at once).
//!
//! 1. Another process (this example run again with `--hold`) takes the global lock
//!    "lockscope-example-emulator" and keeps it.
//! 2. Here, `try_lock` finds it held.
//! 3. A task waits for it. Past the stuck threshold (300 ms here), lockscope reports a
//!    `stuck-queue` that names the holding process: its pid and command line.
//! 4. The holder is killed (as a crash would end it): the OS releases its lock at once, and
//!    the waiting task gets it.
//!
//! Run: `cargo run --example global_lock`
use std::io::{BufRead, BufReader, Read};
use std::process::{Command, Stdio};
use std::time::Duration;

use lockscope::detector::FindingKind;
use lockscope::tokio::GlobalLock;
use lockscope_examples::{
    PATIENCE, detector_for_examples, exit, expect_finding, print_finding, step,
};

const NAME: &str = "lockscope-example-emulator";

/// The other process's part: holds the lock until its stdin closes (or it is killed).
fn hold() {
    let lock = lockscope::parking_lot::GlobalLock::named(NAME).expect("the lock directory");
    let _g = lock.lock().expect("the lock file");
    println!("holding");
    let _ = std::io::stdin().read_to_end(&mut Vec::new());
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    if std::env::args().any(|a| a == "--hold") {
        return hold();
    }
    detector_for_examples(Duration::from_millis(300), Duration::from_secs(1), None);

    step("1. another process takes the global lock");
    let mut holder = Command::new(std::env::current_exe().expect("this example's path"))
        .arg("--hold")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("the holder process");
    let mut said = String::new();
    BufReader::new(holder.stdout.take().expect("piped"))
        .read_line(&mut said)
        .expect("the holder's first line");
    assert_eq!(said.trim(), "holding");
    println!("process {} holds {NAME:?}", holder.id());

    step("2. try_lock here");
    let emulator = GlobalLock::named(NAME).expect("the lock directory");
    let held_elsewhere = emulator.try_lock().expect("the lock file").is_none();
    println!("held by another process: {held_elsewhere}");

    step("3. a task waits for it; lockscope names who holds it");
    let waiter = tokio::spawn(async move {
        let _g = emulator.lock().await.expect("the lock file");
    });
    let f = expect_finding(FindingKind::StuckQueue, &[NAME]).await;
    print_finding(&f);

    step("4. the holder is killed: the OS releases its lock at once");
    holder.kill().expect("kill the holder");
    holder.wait().expect("reap the holder");
    match tokio::time::timeout(PATIENCE, waiter).await {
        Ok(Ok(())) => println!("the waiting task got the lock"),
        _ => exit(1),
    }
    exit(0);
}
