//! `GlobalLock`: two processes exclude each other, a killed holder releases at once, and a
//! waiter's stuck report names the holding process. The other process is this test binary,
//! run again with `GLOBAL_CHILD` set (its `child_process` test then plays the part); the two
//! synchronise through the child's stdout and stdin, with bounded waits.
#![cfg(unix)]

use std::io::{BufRead, BufReader, Read, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use lockscope::detector::{ScopeOptions, TestScope};
use lockscope::parking_lot::GlobalLock;

/// How long any step may take on a loaded machine before the test fails.
const PATIENCE: Duration = Duration::from_secs(30);

/// The child's part: `GLOBAL_CHILD` says which, `GLOBAL_PATH` which lock file. A no-op in a
/// normal run.
#[test]
fn child_process() {
    let Ok(part) = std::env::var("GLOBAL_CHILD") else {
        return;
    };
    let lock = GlobalLock::at("child", std::env::var("GLOBAL_PATH").unwrap());
    let say = |what: &str| {
        let mut out = std::io::stdout();
        writeln!(out, "GLOBAL:{what}").unwrap();
        out.flush().unwrap();
    };
    match part.as_str() {
        // Holds the lock until the parent closes our stdin (or kills us).
        "hold" => {
            let g = lock.lock().unwrap();
            say("locked");
            let _ = std::io::stdin().read_to_end(&mut Vec::new());
            drop(g);
            say("released");
        }
        // Says whether the lock is free now.
        "try" => say(if lock.try_lock().unwrap().is_some() {
            "free"
        } else {
            "busy"
        }),
        other => panic!("unknown part {other}"),
    }
}

/// A child process playing `part` on the lock file `path`, and its stdout's `GLOBAL:` lines.
struct Peer {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: mpsc::Receiver<String>,
}

impl Peer {
    fn spawn(part: &str, path: &PathBuf) -> Peer {
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args([
                "child_process",
                "--exact",
                "--nocapture",
                "--test-threads=1",
            ])
            .env("GLOBAL_CHILD", part)
            .env("GLOBAL_PATH", path)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                // libtest's `test child_process ... ` may start the line.
                if let Some(at) = line.find("GLOBAL:") {
                    let _ = tx.send(line[at + "GLOBAL:".len()..].to_owned());
                }
            }
        });
        Peer {
            stdin: child.stdin.take(),
            child,
            lines,
        }
    }

    /// The child's next line, within [`PATIENCE`].
    fn next(&self) -> String {
        self.lines
            .recv_timeout(PATIENCE)
            .unwrap_or_else(|e| panic!("the child said nothing within {PATIENCE:?}: {e}"))
    }

    /// Closes the child's stdin (a holder then releases) and waits for it to exit.
    fn finish(mut self) {
        drop(self.stdin.take());
        let status = self.child.wait().unwrap();
        assert!(status.success(), "child failed: {status}");
    }
}

/// What the child says when it runs `part` now.
fn ask(part: &str, path: &PathBuf) -> String {
    let peer = Peer::spawn(part, path);
    let said = peer.next();
    peer.finish();
    said
}

/// A fresh lock file for one test.
fn lock_path(test: &str) -> PathBuf {
    let path = std::env::temp_dir().join(format!(
        "lockscope-global-test-{}-{test}.lock",
        std::process::id()
    ));
    let _ = std::fs::remove_file(&path);
    path
}

#[test]
fn two_processes_exclude_each_other() {
    let path = lock_path("exclude");
    let lock = GlobalLock::at("exclude", &path);
    // The child holds it: this process cannot take it, not even within a while.
    assert!(lock.can_lock() && !lock.is_locked(), "free before the child");
    let holder = Peer::spawn("hold", &path);
    assert_eq!(holder.next(), "locked");
    assert!(!lock.can_lock() && lock.is_locked(), "held by the child");
    assert!(!lock.held_by_current() && lock.holders().is_empty());
    assert!(lock.try_lock().unwrap().is_none());
    assert!(
        lock.try_lock_for(Duration::from_millis(50))
            .unwrap()
            .is_none()
    );
    let listed = lockscope::detector::locks()
        .into_iter()
        .find(|l| l.name == "exclude")
        .unwrap();
    assert_eq!(listed.held_elsewhere, None, "named with nobody waiting");
    let pid = holder.child.id();
    let written = std::fs::read_to_string(&path).unwrap();
    assert!(
        written.starts_with(&format!("{pid}\n")) && written.contains("child_process"),
        "the holder did not write its pid and command line: {written:?}"
    );
    // A timed wait in this process gets it when the holder releases.
    let timed = {
        let path = path.clone();
        std::thread::spawn(move || {
            let lock = GlobalLock::at("exclude", path);
            lock.try_lock_for(PATIENCE).unwrap().is_some()
        })
    };
    holder.finish();
    assert!(timed.join().unwrap(), "the timed wait gave up");
    // Released: taken at once, and now the other way round.
    let g = lock
        .try_lock()
        .unwrap()
        .expect("free after the holder released");
    assert_eq!(ask("try", &path), "busy");
    // Held here: locked for every form of the question, and ours.
    assert!(lock.is_locked() && !lock.can_lock() && lock.held_by_current());
    // The status query took the OS lock for an instant only: the child still finds it
    // free once released here.
    drop(g);
    assert!(lock.can_lock());
    assert_eq!(ask("try", &path), "free");
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        "",
        "a released lock names nobody"
    );
    let _ = std::fs::remove_file(&path);
}

#[test]
fn a_killed_holder_releases_at_once() {
    let path = lock_path("killed");
    let lock = GlobalLock::at("killed", &path);
    let mut holder = Peer::spawn("hold", &path);
    assert_eq!(holder.next(), "locked");
    // A thread of this process blocks in the OS's wait for the lock.
    let (tx, got) = mpsc::channel();
    let waiter = {
        let path = path.clone();
        std::thread::spawn(move || {
            let lock = GlobalLock::at("killed", path);
            let g = lock.lock().unwrap();
            tx.send(()).unwrap();
            drop(g);
        })
    };
    assert!(lock.try_lock().unwrap().is_none());
    holder.child.kill().unwrap(); // SIGKILL: no destructor runs in the child
    holder.child.wait().unwrap();
    got.recv_timeout(PATIENCE)
        .expect("the waiter did not get the lock of a killed holder");
    waiter.join().unwrap();
    assert!(lock.try_lock().unwrap().is_some());
    let _ = std::fs::remove_file(&path);
}

#[test]
fn a_killed_holder_releases_to_an_async_waiter() {
    let path = lock_path("killed-async");
    let mut holder = Peer::spawn("hold", &path);
    assert_eq!(holder.next(), "locked");
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let lock = lockscope::tokio::GlobalLock::at("killed-async", &path);
        assert!(lock.try_lock().unwrap().is_none());
        let wait = lock.lock();
        tokio::pin!(wait);
        // Still held: the wait goes on (one poll interval at least, on the real clock).
        assert!(
            tokio::time::timeout(Duration::from_millis(20), &mut wait)
                .await
                .is_err()
        );
        holder.child.kill().unwrap();
        holder.child.wait().unwrap();
        let g = tokio::time::timeout(PATIENCE, wait)
            .await
            .expect("the async waiter did not get the lock of a killed holder")
            .unwrap();
        drop(g);
    });
    let _ = std::fs::remove_file(&path);
}

/// A wait for a holder in another process past the stuck threshold is a `stuck-queue` that
/// names the process, in the report and in `/debug/locks`.
#[test]
fn the_stuck_report_names_the_holding_process() {
    let path = lock_path("stuck");
    let holder = Peer::spawn("hold", &path);
    assert_eq!(holder.next(), "locked");
    let pid = holder.child.id();
    let mut options = ScopeOptions::default();
    options.stuck_ms = Some(100);
    let scope = TestScope::arm("the_stuck_report_names_the_holding_process", options);
    let lock = std::sync::Arc::new(GlobalLock::at("emulator-stuck", &path));
    let waiter = {
        let lock = lock.clone();
        std::thread::spawn(move || drop(lock.lock().unwrap()))
    };
    let deadline = Instant::now() + PATIENCE;
    let report = loop {
        let found = scope
            .findings()
            .into_iter()
            .map(|f| f.to_string())
            .find(|f| f.starts_with("lockscope: stuck-queue") && f.contains("emulator-stuck"));
        if let Some(f) = found {
            break f;
        }
        assert!(
            Instant::now() < deadline,
            "no stuck-queue within {PATIENCE:?}"
        );
        std::thread::sleep(Duration::from_millis(10));
    };
    assert!(
        report.contains(&format!("held by process {pid} (`")) && report.contains("child_process"),
        "{report}"
    );
    let listed = lockscope::detector::locks()
        .into_iter()
        .find(|l| l.name == "emulator-stuck")
        .unwrap();
    assert!(
        listed
            .held_elsewhere
            .is_some_and(|h| h.starts_with(&format!("process {pid} ("))),
        "/debug/locks does not name the holder"
    );
    holder.finish();
    waiter.join().unwrap();
    drop(scope);
    let _ = std::fs::remove_file(&path);
}

/// A lock future dropped while it waits leaves no waiter in the books and holds nothing:
/// the lock is free for the next one at once.
#[tokio::test]
async fn a_dropped_lock_future_leaves_no_ghost() {
    let path = lock_path("cancel");
    let blocking = GlobalLock::at("cancel-blocking", &path);
    let lock = lockscope::tokio::GlobalLock::at("cancel", &path);
    let listed = || {
        lockscope::detector::locks()
            .into_iter()
            .find(|l| l.name == "cancel")
            .unwrap()
    };
    let waiters = || listed().waiters_total;
    let held = blocking.lock().unwrap();
    fn send_sync<T: Send + Sync>(_: &T) {}
    send_sync(&lock.lock()); // a task may wait for it in `tokio::spawn`
    send_sync(&held);
    let mut wait = tokio_test::task::spawn(lock.lock());
    assert!(wait.poll().is_pending());
    assert_eq!(waiters(), 1);
    // The holder is another acquisition of this process, and the file says so.
    let holder = listed().held_elsewhere.expect("the waiter named no holder");
    assert!(holder.contains("this process"), "{holder}");
    drop(wait);
    assert_eq!(waiters(), 0, "a ghost waiter");
    assert_eq!(
        listed().held_elsewhere,
        None,
        "a holder named with nobody waiting"
    );
    drop(held);
    assert!(
        blocking.try_lock().unwrap().is_some(),
        "the dropped future held the lock"
    );
    let _ = std::fs::remove_file(&path);
}

/// Hostile names stay inside the lock directory.
#[test]
fn hostile_names_stay_in_the_directory() {
    let dir = lockscope::parking_lot::global_lock_dir();
    for name in ["../escape", "/etc/passwd", "..", "a\nb"] {
        let lock = GlobalLock::named(name).unwrap();
        assert_eq!(lock.path().parent(), Some(dir.as_path()), "{name:?}");
        drop(lock.lock().unwrap());
    }
}

/// A global lock is a primitive like any other in this process: its acquisitions are in the
/// lock-order graph (taken in both orders with a mutex, it is a `lock-order-inversion`) and
/// in the metrics under its name.
#[test]
fn acquisitions_are_ordered_and_counted_like_any_lock() {
    let path = lock_path("ordered");
    let scope = TestScope::arm(
        "acquisitions_are_ordered_and_counted_like_any_lock",
        ScopeOptions::default(),
    );
    let global = GlobalLock::at("ordered-global", &path);
    let mutex = lockscope::parking_lot::Mutex::named("ordered-mutex", ());
    {
        let _m = mutex.lock();
        let _g = global.lock().unwrap();
    }
    assert!(global.try_lock().unwrap().is_some());
    {
        let _g = global.lock().unwrap();
        assert!(global.held_by_current() && global.holders().len() == 1);
        let _m = mutex.lock();
    }
    let deadline = Instant::now() + PATIENCE;
    while !scope.findings().iter().any(|f| {
        f.kind == lockscope::detector::FindingKind::LockOrderInversion
            && f.primitives.iter().any(|p| p.name == "ordered-global")
            && f.primitives.iter().any(|p| p.name == "ordered-mutex")
    }) {
        assert!(
            Instant::now() < deadline,
            "no lock-order-inversion: {:#?}",
            scope.findings()
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    let series = lockscope::detector::metrics()
        .series
        .into_iter()
        .find(|s| &*s.lock == "ordered-global")
        .expect("no metrics series");
    assert_eq!(series.acquisitions, 3);
    drop(scope);
    let _ = std::fs::remove_file(&path);
}
