//! `KeyedMutex`: one mutex per key, removed when unused (memory flat over a million keys),
//! keys that never contend with each other, and a deadlock over two keys reported like any
//! other, with the keys' names.

use std::sync::Arc;
use std::time::Duration;

use lockscope::tokio::KeyedMutex;

/// A million distinct keys, each locked and released: the map and the detector's registry end
/// as they began, and the metrics count every key under the map's one name.
#[tokio::test]
async fn a_million_keys_leave_nothing_behind() {
    let m = KeyedMutex::<u64>::named("million");
    // Only this map's keys: the other tests of this binary run beside it, with locks of their
    // own coming and going.
    let live = || {
        lockscope::detector::locks()
            .iter()
            .filter(|l| l.name.starts_with("million["))
            .count()
    };
    assert_eq!(live(), 0);
    for k in 0..1_000_000u64 {
        let g = m.lock(&k).await;
        assert_eq!(*g.key(), k);
        if k % 250_000 == 0 {
            // While held, the key is a primitive named after the map and the key.
            assert!(
                lockscope::detector::locks()
                    .iter()
                    .any(|l| l.name == format!("million[{k}]"))
            );
            assert_eq!(m.len(), 1);
        }
    }
    assert!(m.is_empty());
    assert_eq!(live(), 0);
    let series: Vec<_> = lockscope::detector::metrics()
        .series
        .into_iter()
        .filter(|s| s.lock.starts_with("million"))
        .map(|s| (s.lock.to_string(), s.acquisitions))
        .collect();
    assert_eq!(
        series,
        [("million".to_string(), 1_000_000)],
        "keys became metric labels"
    );
}

/// Two keys never contend: while one is held, another is taken at once.
#[tokio::test(start_paused = true)]
async fn two_keys_never_contend_and_one_key_excludes() {
    let m = Arc::new(KeyedMutex::<String>::named("accounts"));
    let a = m.lock(&"a".to_string()).await;
    let b = tokio::time::timeout(Duration::from_millis(10), m.lock(&"b".to_string())).await;
    assert!(b.is_ok(), "key b waited for key a");
    drop(b);
    let again = tokio::time::timeout(Duration::from_millis(10), m.lock(&"a".to_string())).await;
    assert!(again.is_err(), "key a was taken twice");
    // The cancelled wait left no user behind: only a and b are in use.
    assert_eq!(m.len(), 1);
    drop(a);
    assert!(m.is_empty());
}

/// ABBA over two keys of one map: a live deadlock, reported with the keys' names.
#[lockscope::test]
#[should_panic(expected = "mutex \"transfers[2]\"")]
async fn a_deadlock_over_two_keys_is_reported_with_their_names() {
    let m = Arc::new(KeyedMutex::<u32>::named("transfers"));
    let g1 = m.lock(&1).await;
    let m2 = m.clone();
    let other = tokio::spawn(async move {
        let _g2 = m2.lock(&2).await;
        let _g1 = m2.lock(&1).await;
    });
    while m.try_lock(&2).is_some() {
        tokio::task::yield_now().await;
    }
    let _g2 = m.lock(&2).await; // waits forever: deadlock
    drop(g1);
    other.await.unwrap();
}

/// The blocking form (`lockscope::parking_lot::KeyedMutex`, the same core): a million
/// distinct keys leave the map, the registry and the metrics as they began.
#[test]
fn blocking_a_million_keys_leave_nothing_behind() {
    let m = lockscope::parking_lot::KeyedMutex::<u64>::named("pl_million");
    let live = || {
        lockscope::detector::locks()
            .iter()
            .filter(|l| l.name.starts_with("pl_million["))
            .count()
    };
    assert_eq!(live(), 0);
    for k in 0..1_000_000u64 {
        let g = m.lock(&k);
        assert_eq!(*g.key(), k);
        if k % 250_000 == 0 {
            assert!(
                lockscope::detector::locks()
                    .iter()
                    .any(|l| l.name == format!("pl_million[{k}]") && l.kind == "blocking_mutex")
            );
            assert_eq!(m.len(), 1);
        }
    }
    assert!(m.is_empty());
    assert_eq!(live(), 0);
    let series: Vec<_> = lockscope::detector::metrics()
        .series
        .into_iter()
        .filter(|s| s.lock.starts_with("pl_million"))
        .map(|s| (s.lock.to_string(), s.acquisitions))
        .collect();
    assert_eq!(
        series,
        [("pl_million".to_string(), 1_000_000)],
        "keys became metric labels"
    );
}

/// Blocking: two keys never contend, one key excludes (on another thread), and a timed-out
/// wait leaves no user behind.
#[test]
fn blocking_two_keys_never_contend_and_one_key_excludes() {
    let m = lockscope::parking_lot::KeyedMutex::<&str>::named("pl_accounts");
    let a = m.lock(&"a");
    std::thread::scope(|s| {
        s.spawn(|| {
            assert!(m.try_lock(&"b").is_some(), "key b waited for key a");
            assert!(m.try_lock(&"a").is_none(), "key a was taken twice");
            assert!(m.try_lock_for(&"a", Duration::from_millis(5)).is_none());
        });
    });
    assert_eq!(m.len(), 1);
    drop(a);
    assert!(m.is_empty());
}

/// Blocking ABBA over two keys of one map: two threads each hold one key and wait for the
/// other (timed waits, which end by themselves: the keys stay in use meanwhile, so the two
/// orders are seen on the same two primitives); a `lock-order-inversion` naming both keys, as
/// for any two mutexes.
#[test]
fn blocking_abba_over_two_keys_is_reported_with_their_names() {
    use lockscope::detector::{FindingKind, ScopeOptions, TestScope};
    let scope = TestScope::arm(
        "blocking_abba_over_two_keys_is_reported_with_their_names",
        ScopeOptions::default(),
    );
    let m = lockscope::parking_lot::KeyedMutex::<u32>::named("pl_transfers");
    let both_hold = std::sync::Barrier::new(2);
    std::thread::scope(|s| {
        for (first, second) in [(1, 2), (2, 1)] {
            let (m, both_hold) = (&m, &both_hold);
            s.spawn(move || {
                let _g = m.lock(&first);
                both_hold.wait();
                // The other thread holds `second` until after its own wait: this one waits.
                assert!(m.try_lock_for(&second, Duration::from_millis(50)).is_none());
                both_hold.wait();
            });
        }
    });
    let names = |f: &lockscope::detector::Finding| {
        let mut n: Vec<_> = f.primitives.iter().map(|p| p.name.clone()).collect();
        n.sort();
        n
    };
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        let found = scope
            .findings()
            .into_iter()
            .find(|f| f.kind == FindingKind::LockOrderInversion);
        if let Some(f) = found {
            assert_eq!(names(&f), ["pl_transfers[1]", "pl_transfers[2]"], "{f}");
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no lock-order-inversion"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}
