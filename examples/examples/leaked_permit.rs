//! `leaked_permit`: an `OwnedSemaphorePermit` moved into a long-lived struct, never dropped.
//!
//! The upload service bounds concurrent uploads with a semaphore of 2 slots (field note 4:
//! back-pressure). `start_upload` takes a slot with `acquire_owned` and moves the permit into
//! the upload's `Session`, which lives in the service's session table until the upload is
//! done. `finish_upload` marks the session done, but never removes it from the table: the
//! permit lives as long as the table, that is, forever. After two uploads the service has no
//! slot left, and the third upload waits with no error, no panic, nothing in the logs.
//!
//! lockscope reports the permits held past the leak threshold by whoever keeps them now
//! (the owned permit, it says, lives in some struct or task that keeps it), and the upload
//! queued behind them while the semaphore granted nothing.
//!
//! The fix: scope the permit to the work it stands for: remove the session from the table in
//! `finish_upload` (dropping the permit with it), or keep the permit in the task doing the
//! upload rather than in shared state.
//!
//! Run: `cargo run --example leaked_permit`
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use lockscope::detector::FindingKind;
use lockscope::tokio::{Mutex, OwnedSemaphorePermit, Semaphore};
use lockscope_examples::{detector_for_examples, expect_finding, print_finding, step};

struct Session {
    /// The upload slot: given back when the session is dropped.
    _slot: OwnedSemaphorePermit,
    bytes: usize,
    done: bool,
}

struct Uploads {
    slots: Arc<Semaphore>,
    /// Lives as long as the service.
    sessions: Mutex<HashMap<u32, Session>>,
}

impl Uploads {
    async fn start_upload(&self, id: u32) {
        let slot = self
            .slots
            .clone()
            .acquire_owned()
            .await
            .expect("never closed");
        let session = Session {
            _slot: slot,
            bytes: 0,
            done: false,
        };
        self.sessions.lock().await.insert(id, session);
        println!("upload {id}: started");
    }

    async fn finish_upload(&self, id: u32, bytes: usize) {
        if let Some(s) = self.sessions.lock().await.get_mut(&id) {
            s.bytes = bytes;
            // BUG: the session (and the permit inside it) stays in the table.
            s.done = true;
        }
        println!("upload {id}: finished, {bytes} bytes");
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    // Leak threshold 1 s (production default: 60 s); stuck-queue threshold 1 s.
    detector_for_examples(
        Duration::from_secs(1),
        Duration::from_secs(1),
        Some(Duration::from_secs(1)),
    );
    let uploads = Arc::new(Uploads {
        slots: Arc::new(Semaphore::named("upload_slots", 2)),
        sessions: Mutex::named("sessions", HashMap::new()),
    });

    step("two uploads start and finish; a third one starts");
    for id in 1..=2 {
        let u = uploads.clone();
        tokio::spawn(async move {
            u.start_upload(id).await;
            u.finish_upload(id, 1024 * id as usize).await;
        })
        .await
        .expect("no panic");
    }
    let u = uploads.clone();
    tokio::spawn(async move { u.start_upload(3).await });
    tokio::time::sleep(Duration::from_millis(50)).await;
    let table = uploads.sessions.lock().await;
    println!(
        "slots available: {}; sessions kept: {} (done: {}, {} bytes in all); upload 3 waits",
        uploads.slots.available_permits(),
        table.len(),
        table.values().filter(|s| s.done).count(),
        table.values().map(|s| s.bytes).sum::<usize>()
    );
    drop(table);

    step("what lockscope reports");
    print_finding(&expect_finding(FindingKind::LeakedPermit, &["upload_slots"]).await);
    print_finding(&expect_finding(FindingKind::StuckQueue, &["upload_slots"]).await);
}
