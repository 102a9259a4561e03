//! The lock-order graph's bound counts known and inverted edges together, and a dropped
//! primitive takes its edges with it (issue 17: mutants of both went unnoticed). Its own test binary: it installs a process-wide
//! configuration with a tiny bound.

use std::panic::Location;

use lockscope_detector::__private::graph::lockorder;
use lockscope_detector::__private::hooks::{self, Acq, Mode};
use lockscope_detector::__private::prim::PrimCell;
use lockscope_detector::{Config, PrimKind, dropped_counts};

fn dropped_edges() -> u64 {
    dropped_counts()
        .iter()
        .find(|(what, _)| *what == "edges")
        .map_or(0, |(_, n)| *n)
}

/// Takes `outer`, then `inner` inside it, then releases both: the edge `outer -> inner`.
fn nest(outer: &PrimCell, inner: &PrimCell) {
    let site = Location::caller();
    let a = hooks::acquired::<hooks::Threads>(outer.get(), Acq::new(site, 1, Mode::Exclusive));
    let b = hooks::acquired::<hooks::Threads>(inner.get(), Acq::new(site, 1, Mode::Exclusive));
    hooks::released(inner.get(), b);
    hooks::released(outer.get(), a);
}

#[test]
fn the_edge_bound_counts_inverted_edges_and_drops_free_room() {
    Config::builder()
        .max_edges(3)
        .build()
        .expect("a valid configuration")
        .install();
    let cell =
        |name: &str| PrimCell::new(Some(name.into()), PrimKind::Mutex, Location::caller(), 1);
    let [a, b, c, d, e, f] = ["cap/a", "cap/b", "cap/c", "cap/d", "cap/e", "cap/f"].map(cell);
    let id = |p: &PrimCell| p.get().id().0;
    nest(&a, &b);
    nest(&b, &a); // inverted: one known edge and one inverted edge
    nest(&c, &d); // the third edge: within the bound
    let before = dropped_edges();
    nest(&e, &f); // a fourth: dropped
    let edges = lockorder::edges();
    let has = |x: &PrimCell, y: &PrimCell| edges.iter().any(|o| o.from == id(x) && o.to == id(y));
    assert!(
        has(&a, &b) && has(&b, &a) && has(&c, &d),
        "an edge within the bound is missing"
    );
    assert!(!has(&e, &f), "an edge past the bound was kept");
    assert_eq!(
        dropped_edges(),
        before + 1,
        "the dropped edge was not counted"
    );
    assert_eq!(lockorder::edge_count(), 3);

    // A dropped primitive takes its edges, known and inverted, with it (and frees room).
    let gone = id(&a);
    drop(a);
    let edges = lockorder::edges();
    assert!(
        !edges.iter().any(|o| o.from == gone || o.to == gone),
        "edges of a dropped primitive stay: {edges:?}"
    );
    assert_eq!(lockorder::edge_count(), 1, "{edges:?}");
    nest(&e, &f);
    assert!(
        lockorder::edges()
            .iter()
            .any(|o| o.from == id(&e) && o.to == id(&f)),
        "no room after the drop"
    );
}
