//! Hold tables of exited threads are recycled, never freed. Its own test binary: it counts the
//! process's tables, which tests running in parallel threads would change under it.

use std::panic::Location;

use lockscope_detector::__private::held::{Meta, for_each_all, push, table_counts};

#[test]
fn exited_threads_tables_are_recycled_once_empty() {
    let site = Location::caller();
    let held = std::thread::spawn(move || push(9, 1, site, 1, Meta::default()).expect("a table"))
        .join()
        .unwrap();
    let mut seen = false;
    for_each_all(|v| seen |= v.prim == 9);
    assert!(seen, "a hold outlives its thread");
    let (_, with_hold) = table_counts();
    // A new thread cannot take a table that still holds something.
    std::thread::spawn(move || {
        push(10, 2, site, 1, Meta::default())
            .expect("a table")
            .release()
    })
    .join()
    .unwrap();
    let (_, grown) = table_counts();
    assert_eq!(grown, with_hold + 1, "the occupied table was not reused");
    held.release();
    // Both exited tables are empty now: new threads take them instead of growing the list.
    for prim in 11..15 {
        std::thread::spawn(move || {
            push(prim, 3, site, 1, Meta::default())
                .expect("a table")
                .release()
        })
        .join()
        .unwrap();
    }
    let (live, after) = table_counts();
    assert_eq!(after, grown, "{grown} tables, then {after}");
    assert!(
        live <= 1,
        "exited threads' tables are not counted live: {live}"
    );
}
