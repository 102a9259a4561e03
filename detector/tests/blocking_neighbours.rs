//! A blocking guard held across an `.await`, seen when another task runs lockscope code on
//! the same thread (issue 17: only examples exercised it). Only the blocking guard of the
//! task that yielded is reported, in these words; an async hold on that thread is not.

use std::panic::Location;

use lockscope_detector::__private::hooks::{self, Acq, Mode};
use lockscope_detector::__private::prim::{PrimCell, PrimKind};
use tokio::sync::oneshot;

/// A primitive for tasks to share (kept for the whole test process).
fn cell(name: &str, kind: PrimKind) -> &'static PrimCell {
    Box::leak(Box::new(PrimCell::new(
        Some(name.into()),
        kind,
        Location::caller(),
        1,
    )))
}

/// Spawns a task that acquires `cell` at `site` and holds it across an `.await` until told to
/// go on; returns once it holds it.
async fn hold_across_await(
    cell: &'static PrimCell,
    site: &'static Location<'static>,
) -> (tokio::task::JoinHandle<()>, oneshot::Sender<()>) {
    let (ready, held) = oneshot::channel::<()>();
    let (go, wait) = oneshot::channel::<()>();
    let task = tokio::spawn(async move {
        let h = hooks::acquired::<hooks::Threads>(cell.get(), Acq::new(site, 1, Mode::Exclusive));
        ready.send(()).unwrap();
        wait.await.unwrap();
        hooks::released(cell.get(), h);
    });
    held.await.unwrap();
    (task, go)
}

#[test]
fn a_task_running_where_another_holds_a_blocking_guard_reports_that_guard() {
    let blocking = cell("neighbours/blocking", PrimKind::BlockingMutex);
    let asynch = cell("neighbours/async", PrimKind::Mutex);
    let next = cell("neighbours/next", PrimKind::Mutex);
    let (a_site, c_site) = (Location::caller(), Location::caller());
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let (ids, found) = rt.block_on(async {
        // Task C holds an async lock across an await (fine), then task A the blocking guard
        // (the bug).
        let (c, c_go) = hold_across_await(asynch, c_site).await;
        let (a, a_go) = hold_across_await(blocking, a_site).await;
        // Task B runs on the same thread meanwhile.
        let b = tokio::spawn(async move {
            let p = next.get();
            let h = hooks::acquired::<hooks::Threads>(
                p,
                Acq::new(Location::caller(), 1, Mode::Exclusive),
            );
            hooks::released(p, h);
            tokio::task::id()
        });
        let ids = (a.id(), b.await.unwrap());
        a_go.send(()).unwrap();
        c_go.send(()).unwrap();
        a.await.unwrap();
        c.await.unwrap();
        (ids, lockscope_detector::findings())
    });
    let (a_id, b_id) = ids;
    let ours: Vec<&str> = found
        .iter()
        .filter(|f| f.involves("neighbours/blocking") || f.involves("neighbours/async"))
        .map(|f| f.summary.as_str())
        .collect();
    let site = format!("{}:{}:{}", a_site.file(), a_site.line(), a_site.column());
    assert_eq!(
        ours,
        [format!(
            "task {a_id} holds blocking_mutex \"neighbours/blocking\" (acquired at {site}) across an .await: task {b_id} ran on the same thread while it was held, so its holder had yielded"
        )]
    );
}
