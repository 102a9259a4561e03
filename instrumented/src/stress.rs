//! Stress mode at the wrappers' acquisition points: the perturbation the detector's
//! [`decide`](lockscope_detector::__private::stress::decide) asks for, before an acquisition starts.
//!
//! Off, a wrapper pays [`on`]: one relaxed load. The perturbation happens before the
//! acquisition is attempted, so it changes no acquisition's semantics: an async one dropped
//! while it pauses has not queued, and a blocking one has not touched the lock (a directed
//! pause looks with `try_` forms, and lets go of what they take).

use std::panic::Location;
use std::time::{Duration, Instant};

use lockscope_detector::__private::stress::{self, DIRECTED_BOUND, Perturb};
use parking_lot::Mutex;

pub(crate) use lockscope_detector::__private::stress::on;

/// The pause before an async acquisition at `site`, which would have to wait now when
/// `would_wait` says so. Await it only when [`on`].
#[cold]
pub(crate) async fn pause(site: &'static Location<'static>, would_wait: impl Fn() -> bool) {
    match stress::decide(site) {
        Perturb::Yield(n) => {
            for _ in 0..n {
                tokio::task::yield_now().await;
            }
        }
        Perturb::Directed => {
            let end = Instant::now() + DIRECTED_BOUND;
            while !would_wait() && Instant::now() < end {
                tokio::task::yield_now().await;
            }
        }
        _ => {}
    }
}

/// The pause before a blocking acquisition at `site`; `try_` takes the lock if it is free
/// (`None`: it would have to wait). Call it only when [`on`].
#[cold]
pub(crate) fn pause_blocking<P>(site: &'static Location<'static>, try_: impl FnMut() -> Option<P>) {
    let mut try_ = try_;
    match stress::decide(site) {
        Perturb::Yield(n) => {
            if n == 1 {
                std::thread::yield_now();
            } else {
                std::thread::sleep(Duration::from_micros(u64::from(n) * 50));
            }
        }
        Perturb::Directed => {
            let end = Instant::now() + DIRECTED_BOUND;
            // Free now: let go at once (the detector never saw this take) and look again.
            while try_().is_some() && Instant::now() < end {
                std::thread::sleep(Duration::from_micros(100));
            }
        }
        _ => {}
    }
}

/// How many polls a hand-written future's directed pause lasts at most (it keeps no clock).
const DIRECTED_POLLS: u16 = 2000;

/// The pauses in progress of hand-written acquire futures, by the future's (pinned) address:
/// kept here, not in the future, so that stress mode adds nothing to a future's size. Empty
/// unless stress mode is on.
static PAUSES: Mutex<Vec<(usize, PollPause)>> = Mutex::new(Vec::new());

/// More entries than this are from futures dropped while they paused: forgotten.
const MAX_PAUSES: usize = 1024;

/// A hand-written future's pause in progress.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum PollPause {
    /// Yields left.
    Yields(u16),
    /// Directed polls left.
    Directed(u16),
}

/// [`pause`] for a hand-written acquire future (the owned forms' `Owned`), which has no
/// `async` block to await it in: whether the future, pinned at `key`, must return `Pending`
/// now (its waker woken) instead of starting its acquisition. A directed pause is bounded by
/// a number of polls rather than a clock. Call it only when [`on`], before the acquisition
/// starts.
#[cold]
pub(crate) fn poll_pause(
    key: usize,
    site: &'static Location<'static>,
    cx: &mut std::task::Context<'_>,
    would_wait: impl Fn() -> bool,
) -> bool {
    let mut pauses = PAUSES.lock();
    let at = pauses.iter().position(|(k, _)| *k == key);
    let mut pause = match at {
        Some(i) => pauses.swap_remove(i).1,
        None => match stress::decide(site) {
            Perturb::Yield(n) => PollPause::Yields(u16::try_from(n).unwrap_or(u16::MAX)),
            Perturb::Directed => PollPause::Directed(DIRECTED_POLLS),
            _ => return false,
        },
    };
    let more = match &mut pause {
        PollPause::Yields(n) if *n > 0 => {
            *n -= 1;
            true
        }
        PollPause::Directed(n) if *n > 0 && !would_wait() => {
            *n -= 1;
            true
        }
        _ => false,
    };
    if more {
        if pauses.len() >= MAX_PAUSES {
            pauses.clear();
        }
        pauses.push((key, pause));
        cx.waker().wake_by_ref();
    }
    more
}
