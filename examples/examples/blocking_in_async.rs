//! `blocking_in_async`: a blocking (parking_lot) guard held across an `.await`.
//!
//! `save_settings` locks the settings with a parking_lot mutex (fine for a few nanoseconds of
//! work), then, still holding the guard, awaits the write to disk. While it is suspended, its
//! worker thread runs other tasks, and the guard stays locked.
//!
//! 1. Another task runs on the same thread meanwhile: lockscope sees the guard outlive its
//!    task's turn on the thread, and reports the guard held across an `.await`.
//! 2. Another task (`render`) wants the settings meanwhile: `lock()` blocks the thread itself.
//!    On this single-threaded runtime that is the only thread, so `save_settings` can never
//!    resume to release the guard: the whole runtime freezes. lockscope reports the blocking
//!    wait on an async worker and the deadlock between the blocked thread and the task that
//!    can only run on it.
//!
//! The fix: copy what you need and drop the guard before the `.await` (or use
//! `lockscope::tokio::Mutex` for data held across awaits).
//!
//! parking_lot guards are not `Send`, so `tokio::spawn` on a multi-threaded runtime refuses
//! this code at compile time; the bug lives on where futures need not be `Send`: local tasks
//! (`spawn_local`, as here), `block_on` bodies, and builds with parking_lot's `send_guard`.
//!
//! The frozen runtime can never be shut down, so `main` watches from its own thread and
//! ends the program with `process::exit`.
//!
//! Run: `cargo run --example blocking_in_async`
use std::sync::Arc;
use std::time::Duration;

use lockscope::detector::FindingKind;
use lockscope::parking_lot::Mutex as BlockingMutex;
use lockscope::tokio::Mutex;
use lockscope_examples::{
    detector_for_examples, exit, expect_finding_blocking, expect_finding_blocking_where,
    print_finding, step,
};
use tokio::task::spawn_local;

struct Settings {
    theme: &'static str,
    version: u32,
}

async fn write_to_disk(version: u32) {
    tokio::time::sleep(Duration::from_millis(50)).await;
    let _ = version;
}

async fn save_settings(settings: Arc<BlockingMutex<Settings>>, theme: &'static str) {
    let mut s = settings.lock();
    s.theme = theme;
    s.version += 1;
    // BUG: the blocking guard `s` is still held while the task is suspended here.
    write_to_disk(s.version).await;
}

async fn heartbeat(stats: Arc<Mutex<u64>>) {
    // Any lockscope primitive used on the thread while the guard is held gives it away.
    *stats.lock().await += 1;
}

async fn render(settings: Arc<BlockingMutex<Settings>>) {
    let theme = settings.lock().theme; // blocks the runtime's only thread
    println!("rendering with the {theme} theme"); // never printed
}

fn main() {
    detector_for_examples(Duration::from_secs(1), Duration::from_secs(1), None);
    let settings = Arc::new(BlockingMutex::named(
        "settings",
        Settings {
            theme: "light",
            version: 0,
        },
    ));
    let stats = Arc::new(Mutex::named("stats", 0u64));
    let (go_on, part_two) = tokio::sync::oneshot::channel::<()>();
    let (part_one_done, saved) = std::sync::mpsc::channel::<()>();

    // The service: a single-threaded runtime on a thread of its own.
    let s = settings.clone();
    std::thread::Builder::new()
        .name("runtime".into())
        .spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("build a runtime");
            let local = tokio::task::LocalSet::new();
            local.block_on(&rt, async move {
                let save = spawn_local(save_settings(s.clone(), "dark"));
                spawn_local(heartbeat(stats)).await.expect("no panic");
                save.await.expect("no panic");
                println!("settings saved (the guard was released after the write)");
                let _ = part_one_done.send(());
                let _ = part_two.await;
                spawn_local(save_settings(s.clone(), "solarized"));
                tokio::time::sleep(Duration::from_millis(10)).await;
                spawn_local(render(s));
                std::future::pending::<()>().await
            })
        })
        .expect("spawn the runtime thread");

    step("1. save_settings awaits the disk with the settings guard held; a heartbeat runs");
    print_finding(&expect_finding_blocking(
        FindingKind::BlockingInAsync,
        &["settings"],
    ));

    // UNWRAP: the runtime thread sends this unless it panicked, which it does not.
    saved.recv().expect("part 1 completes");

    step("2. again, and this time render() locks the settings meanwhile");
    let _ = go_on.send(());
    // The first report was about the guard held across the await; this one is the wait.
    let waits = expect_finding_blocking_where(FindingKind::BlockingInAsync, &["settings"], |f| {
        f.summary.contains("waits for blocking")
    });
    print_finding(&waits);
    print_finding(&expect_finding_blocking(
        FindingKind::Deadlock,
        &["settings"],
    ));
    println!("\nthe runtime is frozen for good; leaving");
    exit(0);
}
