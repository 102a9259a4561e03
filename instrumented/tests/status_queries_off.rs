//! With the detector off, the status queries that the wrapped lock can answer still answer
//! right (std's through a `try_` probe), and those that need lockscope's books say so by
//! answering `false` and nothing, as documented. One test: switching off is process-wide.

#[tokio::test]
async fn off_the_locks_still_answer_and_the_books_are_empty() {
    lockscope::detector::set_enabled(false);

    let m = lockscope::std::sync::Mutex::named("off_std", ());
    let g = m.lock().unwrap();
    assert!(m.is_locked() && !m.can_lock());
    assert!(!m.held_by_current() && m.holders().is_empty());
    drop(g);
    assert!(!m.is_locked() && m.can_lock());

    let l = lockscope::std::sync::RwLock::named("off_stdrw", ());
    let r = l.read().unwrap();
    assert!(l.is_locked() && l.can_read() && !l.can_lock());
    drop(r);
    let w = l.write().unwrap();
    assert!(!l.can_read());
    drop(w);
    assert!(!l.is_locked());

    let p = lockscope::parking_lot::Mutex::named("off_pl", ());
    let g = p.lock();
    assert!(p.is_locked() && !p.can_lock() && !p.held_by_current());
    drop(g);

    let t = lockscope::tokio::Mutex::named("off_tokio", ());
    let g = t.lock().await;
    assert!(t.is_locked() && !t.can_lock() && t.holders().is_empty());
    drop(g);
    assert!(t.can_lock());
}
