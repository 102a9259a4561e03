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
