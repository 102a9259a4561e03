//! Primitives created on one line (a library's pool, made twice) are told apart: reports and
//! `/debug/locks` give each its instance number after the name (`file.rs:LINE#2`), while the
//! metrics keep one series per name.

mod common;

use std::sync::Arc;

use lockscope::detector::FindingKind;
use lockscope::tokio::Semaphore;

use common::{arm, until};

/// A "library" constructor: every pool is created on this one line.
fn pool(permits: usize) -> Arc<Semaphore> {
    Arc::new(Semaphore::new(permits)) // site:pool
}

/// `instances.rs:LINE`, the name of the pools above.
fn pool_name() -> String {
    let line = include_str!("instances.rs")
        .lines()
        .position(|l| l.trim_end().ends_with("// site:pool"))
        .unwrap()
        + 1;
    format!("instrumented/tests/instances.rs:{line}")
}

#[tokio::test]
async fn two_pools_made_on_one_line_are_told_apart_in_reports_and_locks() {
    let scope = arm("instances", 300, 60_000);
    let first = pool(1);
    let second = pool(1);
    let name = pool_name();
    let mut mine: Vec<_> = lockscope::detector::locks()
        .into_iter()
        .filter(|l| l.name == name)
        .collect();
    mine.sort_by_key(|l| l.instance);
    assert_eq!(
        mine.iter().map(|l| l.instance).collect::<Vec<_>>(),
        [1, 2],
        "{mine:#?}"
    );

    // The second pool gets stuck: its report names it with its instance.
    let held = second.clone().acquire_owned().await.unwrap();
    let s = second.clone();
    let waiter = tokio::spawn(async move { drop(s.acquire().await) });
    let f = until(&scope, FindingKind::StuckQueue, &name).await;
    let text = f.to_string();
    assert!(text.contains(&format!("semaphore \"{name}#2\"")), "{text}");
    assert!(!text.contains(&format!("\"{name}#1\"")), "{text}");
    assert_eq!(f.primitives[0].instance, 2);
    waiter.abort();
    let _ = waiter.await;
    drop((held, first));
    drop(scope.finish());

    // Metrics keep one series for the name: labels stay bounded.
    let m = lockscope::detector::metrics();
    assert_eq!(
        m.series.iter().filter(|s| *s.lock == *name).count(),
        1,
        "one series per name"
    );
}

#[test]
fn a_named_primitive_or_the_only_one_of_its_line_has_no_instance() {
    let named = [
        Semaphore::named("instances_named", 1),
        Semaphore::named("instances_named", 1),
    ];
    let alone = Semaphore::new(1);
    let alone_name = format!("{}:{}", file!(), line!() - 1);
    let locks = lockscope::detector::locks();
    let named_ones: Vec<_> = locks
        .iter()
        .filter(|l| l.name == "instances_named")
        .collect();
    assert_eq!(named_ones.len(), 2);
    assert!(
        named_ones.iter().all(|l| l.instance == 0),
        "{named_ones:#?}"
    );
    let alone_one: Vec<_> = locks.iter().filter(|l| l.name == alone_name).collect();
    assert_eq!(alone_one.len(), 1, "{locks:#?}");
    assert_eq!(alone_one[0].instance, 0);
    drop((named, alone));
}
