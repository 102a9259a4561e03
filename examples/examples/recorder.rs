//! `recorder`: a resource with one real instance, and async handlers that race for it.
//!
//! Field note 1: a recording app's microphone. The OS delivers "start" and "stop" taps on its
//! own callback thread; the app spawns an async handler for each and returns at once
//! (handlers run unawaited). A handler checks the microphone's state, then awaits the
//! hardware (150 ms): by the time the await returns, the check is stale. A double tap on
//! "stop" runs two handlers that both saw "recording", and both release the device.
//!
//! The device is modelled the way a driver counts it: a semaphore with one permit, taken and
//! `forget`-ed when the microphone opens, added back when it closes. Three versions of the
//! app get the same taps: start, then 300 ms later a double tap on stop (5 ms apart).
//!
//! 1. Unguarded: the double release is caught by lockscope's own gauge of the device,
//!    `lockscope_permits_capacity{lock="mic_unguarded"} 2`: the driver now believes in two
//!    microphones, and the next two starts would both "succeed".
//! 2. "Give up" (`try_lock` on a transition lock; right for double taps and periodic syncs):
//!    a tap that arrives while a transition is in progress is dropped, and counted in
//!    `lockscope_try_failures_total`, so dropped calls are visible, not silent.
//! 3. "Wait" (a serialising `Mutex` held across the hardware call; right when every call
//!    matters): every tap runs, in order, and each re-checks the state when its turn comes;
//!    the second "stop" finds the microphone already stopped and does nothing. The queueing
//!    shows in `lockscope_contended_acquisitions_total`.
//!
//! One lock per resource (not one global queue), and never re-enter it from inside its own
//! critical section (see the `nested_acquire` example).
//!
//! Run: `cargo run --example recorder`
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use lockscope::tokio::{Mutex, Semaphore};
use lockscope_examples::{detector_for_examples, findings_about, metric_lines, step};
use tokio::runtime::Handle;
use tokio::task::JoinHandle;

/// A tap on the record button.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Tap {
    Start,
    Stop,
}
/// The taps, as the OS delivers them, with the milliseconds since the previous one: start,
/// record a little, then a double tap on stop.
const TAPS: [(Tap, u64); 3] = [(Tap::Start, 0), (Tap::Stop, 300), (Tap::Stop, 5)];

/// The microphone driver: one physical device, counted by a semaphore of one permit.
struct Driver {
    device: Arc<Semaphore>,
}

impl Driver {
    fn new(name: &str) -> Driver {
        Driver {
            device: Arc::new(Semaphore::named(name, 1)),
        }
    }

    /// Opens the device: claims its permit for as long as it is open (across calls, so the
    /// permit is forgotten here and added back by `close`).
    async fn open(&self) -> bool {
        tokio::time::sleep(Duration::from_millis(150)).await;
        match self.device.try_acquire() {
            Ok(permit) => {
                permit.forget();
                true
            }
            Err(_) => false,
        }
    }

    /// Closes the device: gives its permit back. Like many drivers, it trusts its caller.
    async fn close(&self) {
        tokio::time::sleep(Duration::from_millis(150)).await;
        self.device.add_permits(1);
    }
}

/// 1. Unguarded: check, await, act on the stale check.
struct Unguarded {
    driver: Driver,
    recording: AtomicBool,
}

impl Unguarded {
    async fn on_tap(self: Arc<Self>, n: usize, tap: Tap) {
        let recording = self.recording.load(Ordering::SeqCst);
        match tap {
            Tap::Start if !recording => {
                let opened = self.driver.open().await;
                self.recording.store(true, Ordering::SeqCst);
                println!("tap {n} {tap:?}: opened the microphone: {opened}");
            }
            Tap::Stop if recording => {
                // BUG: another handler may have closed it during this await.
                self.driver.close().await;
                self.recording.store(false, Ordering::SeqCst);
                println!("tap {n} {tap:?}: released the microphone");
            }
            _ => println!("tap {n} {tap:?}: nothing to do"),
        }
    }
}

/// 2. Give up: a transition lock taken with `try_lock`; a tap during a transition is dropped.
struct GiveUp {
    driver: Driver,
    transition: Mutex<()>,
    recording: AtomicBool,
}

impl GiveUp {
    async fn on_tap(self: Arc<Self>, n: usize, tap: Tap) {
        let Ok(_busy) = self.transition.try_lock() else {
            println!("tap {n} {tap:?}: dropped, a transition is in progress");
            return;
        };
        let recording = self.recording.load(Ordering::SeqCst);
        match tap {
            Tap::Start if !recording => {
                let opened = self.driver.open().await;
                self.recording.store(true, Ordering::SeqCst);
                println!("tap {n} {tap:?}: opened the microphone: {opened}");
            }
            Tap::Stop if recording => {
                self.driver.close().await;
                self.recording.store(false, Ordering::SeqCst);
                println!("tap {n} {tap:?}: released the microphone");
            }
            _ => println!("tap {n} {tap:?}: nothing to do"),
        }
    }
}

/// 3. Wait: the state lives in a Mutex held across the hardware call; calls run in order.
struct Wait {
    driver: Driver,
    recording: Mutex<bool>,
}

impl Wait {
    async fn on_tap(self: Arc<Self>, n: usize, tap: Tap) {
        let mut recording = self.recording.lock().await;
        // Re-check now that it is our turn: the state may have changed while we queued.
        match tap {
            Tap::Start if !*recording => {
                let opened = self.driver.open().await;
                *recording = true;
                println!("tap {n} {tap:?}: opened the microphone: {opened}");
            }
            Tap::Stop if *recording => {
                self.driver.close().await;
                *recording = false;
                println!("tap {n} {tap:?}: released the microphone");
            }
            _ => println!("tap {n} {tap:?}: already done when its turn came, nothing to do"),
        }
    }
}

/// The OS: delivers `TAPS` on its own thread, at their times, spawning `handler` for each
/// without awaiting it (as a platform callback does); then waits for the handlers.
async fn deliver<F>(handler: impl Fn(usize, Tap) -> F + Send + 'static)
where
    F: Future<Output = ()> + Send + 'static,
{
    let rt = Handle::current();
    let os = std::thread::Builder::new()
        .name("audio-callbacks".into())
        .spawn(move || -> Vec<JoinHandle<()>> {
            TAPS.iter()
                .enumerate()
                .map(|(n, (tap, after_ms))| {
                    std::thread::sleep(Duration::from_millis(*after_ms));
                    rt.spawn(handler(n + 1, *tap))
                })
                .collect()
        })
        .expect("spawn the callback thread");
    let handlers = tokio::task::spawn_blocking(move || os.join().expect("no panic"))
        .await
        .expect("no panic");
    for h in handlers {
        h.await.expect("no panic");
    }
}

fn show(lock: &str, families: &[&str]) {
    for line in metric_lines(lock, families) {
        println!("  {line}");
    }
}

#[tokio::main]
async fn main() {
    detector_for_examples(Duration::from_secs(1), Duration::from_secs(1), None);
    println!("taps (and ms since the previous one): {TAPS:?}; the hardware takes 150 ms per call");

    step("1. unguarded handlers");
    let app = Arc::new(Unguarded {
        driver: Driver::new("mic_unguarded"),
        recording: AtomicBool::new(false),
    });
    let a = app.clone();
    deliver(move |n, tap| a.clone().on_tap(n, tap)).await;
    println!("the device has 1 microphone, stopped now; lockscope counts its permits:");
    show("mic_unguarded", &["lockscope_permits_capacity"]);
    let total = app.driver.device.available_permits();
    if total > 1 {
        println!("caught: a double release, {total} permits for one microphone");
    }

    step("2. give up: try_lock on a transition lock");
    let app = Arc::new(GiveUp {
        driver: Driver::new("mic_give_up"),
        transition: Mutex::named("mic_transition", ()),
        recording: AtomicBool::new(false),
    });
    let a = app.clone();
    deliver(move |n, tap| a.clone().on_tap(n, tap)).await;
    show("mic_give_up", &["lockscope_permits_capacity"]);
    println!("dropped taps, as lockscope counts them:");
    show("mic_transition", &["lockscope_try_failures_total"]);

    step("3. wait: a Mutex serialises the handlers, each re-checks the state");
    let app = Arc::new(Wait {
        driver: Driver::new("mic_wait"),
        recording: Mutex::named("mic_state", false),
    });
    let a = app.clone();
    deliver(move |n, tap| a.clone().on_tap(n, tap)).await;
    show("mic_wait", &["lockscope_permits_capacity"]);
    println!("taps that queued for their turn, as lockscope counts them:");
    show(
        "mic_state",
        &[
            "lockscope_acquisitions_total",
            "lockscope_contended_acquisitions_total",
        ],
    );

    lockscope::detector::check_now();
    let found = findings_about(&["mic_transition", "mic_state", "mic_give_up", "mic_wait"]);
    println!(
        "\nlockscope findings about the guarded versions: {}",
        found.len()
    );
}
