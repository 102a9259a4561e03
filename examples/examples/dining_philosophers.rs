//! `dining_philosophers`: the classic, on OS threads and blocking (parking_lot) mutexes.
//!
//! Five philosophers sit at a round table with a fork between each pair. To eat, each picks
//! up the fork on their left, then the one on their right. If all five pick up their left
//! fork at once, each waits for the right one, held by the neighbour: nobody ever eats.
//!
//! 1. Left fork first: lockscope reports the cyclic lock order (five forks taken in a circle)
//!    as soon as the circle closes, and then the deadlock of the five threads.
//! 2. The fix (Dijkstra's): number the forks and always pick up the lower-numbered one
//!    first. The last philosopher then reaches for fork 0 before fork 4, the circle never
//!    closes, everyone eats, and lockscope reports nothing.
//!
//! The deadlocked threads can never be joined, so the program ends with `process::exit`.
//!
//! Run: `cargo run --example dining_philosophers`
use std::sync::{Arc, Barrier};
use std::time::Duration;

use lockscope::detector::FindingKind;
use lockscope::parking_lot::Mutex;
use lockscope_examples::{
    detector_for_examples, exit, expect_finding_blocking, findings_about, print_finding, step,
};

const SEATS: usize = 5;

/// Forks named `<table> fork 0` .. `<table> fork 4`.
fn table(name: &str) -> (Arc<Vec<Mutex<u32>>>, Vec<String>) {
    let names: Vec<String> = (0..SEATS).map(|i| format!("{name} fork {i}")).collect();
    let forks = names.iter().map(|n| Mutex::named(n, 0)).collect();
    (Arc::new(forks), names)
}

/// One philosopher: `meals` times, take `first`, think a little, take `second`, eat. With
/// `all_hold_first`, everyone waits until all have their first fork before reaching for the
/// second: the unlucky interleaving, forced, so that the deadlock happens on every run.
fn dine(
    forks: &[Mutex<u32>],
    first: usize,
    second: usize,
    meals: u32,
    all_hold_first: Option<&Barrier>,
) {
    for _ in 0..meals {
        let mut a = forks[first].lock();
        match all_hold_first {
            Some(b) => {
                b.wait();
            }
            None => std::thread::sleep(Duration::from_millis(5)),
        }
        let mut b = forks[second].lock();
        *a += 1;
        *b += 1;
    }
}

/// Seats philosopher `i` on a thread of their own.
fn seat(
    forks: &Arc<Vec<Mutex<u32>>>,
    i: usize,
    ordered: bool,
    meals: u32,
    all_hold_first: Option<&Arc<Barrier>>,
) -> std::thread::JoinHandle<()> {
    let (left, right) = (i, (i + 1) % SEATS);
    let (first, second) = if ordered {
        (left.min(right), left.max(right))
    } else {
        (left, right)
    };
    let (forks, barrier) = (forks.clone(), all_hold_first.cloned());
    std::thread::Builder::new()
        .name(format!("philosopher {i}"))
        .spawn(move || dine(&forks, first, second, meals, barrier.as_deref()))
        .expect("spawn a philosopher thread")
}

fn main() {
    detector_for_examples(Duration::from_secs(1), Duration::from_secs(1), None);

    step("1. five philosophers, each takes the left fork, then the right one");
    let (forks, names) = table("round");
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    let all_hold_left = Arc::new(Barrier::new(SEATS));
    for i in 0..SEATS {
        // Never joined: these threads will deadlock.
        let _ = seat(&forks, i, false, 1, Some(&all_hold_left));
    }
    print_finding(&expect_finding_blocking(
        FindingKind::LockOrderInversion,
        &names,
    ));
    print_finding(&expect_finding_blocking(FindingKind::Deadlock, &names));

    step("2. the fix: each takes the lower-numbered fork first (3 meals each)");
    let (forks, names) = table("ordered");
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    let diners: Vec<_> = (0..SEATS).map(|i| seat(&forks, i, true, 3, None)).collect();
    for d in diners {
        d.join().expect("a philosopher panicked");
    }
    lockscope::detector::check_now();
    let found = findings_about(&names);
    let uses: Vec<u32> = forks.iter().map(|f| *f.lock()).collect();
    println!(
        "everyone ate; fork uses {uses:?}; lockscope findings about these forks: {}",
        found.len()
    );
    // The five threads of part 1 are still deadlocked and can never be joined.
    exit(if found.is_empty() { 0 } else { 1 });
}
