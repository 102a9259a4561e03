//! Stress mode at the wrappers' acquisition points: the perturbation the detector's
//! [`decide`](lockscope_detector::stress::decide) asks for, before an acquisition starts.
//!
//! Off, a wrapper pays [`on`]: one relaxed load. The perturbation happens before the
//! acquisition is attempted, so it changes no acquisition's semantics: an async one dropped
//! while it pauses has not queued, and a blocking one has not touched the lock (a directed
//! pause looks with `try_` forms, and lets go of what they take).

use std::panic::Location;
use std::time::{Duration, Instant};

use lockscope_detector::stress::{self, DIRECTED_BOUND, Perturb};

pub(crate) use lockscope_detector::stress::on;

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

/// Stress mode inside a hand-written acquire future (the owned forms' [`Owned`]), which has
/// no `async` block to await [`pause`] in: the pause as a count of polls left.
///
/// [`Owned`]: crate::tokio::owned::Owned
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum PollPause {
    /// Stress mode is off, or the pause is over.
    Done,
    /// Not decided yet (decided at the first poll).
    Undecided,
    /// Yields left.
    Yields(u16),
    /// Directed polls left.
    Directed(u16),
}

impl PollPause {
    /// `Done` when stress mode is off (the one check), else to be decided.
    #[inline]
    pub(crate) fn new() -> PollPause {
        if on() {
            PollPause::Undecided
        } else {
            PollPause::Done
        }
    }

    /// Whether the future must yield now (its waker woken) instead of acquiring. Call it
    /// only when not `Done`.
    #[cold]
    pub(crate) fn yield_now(
        &mut self,
        site: &'static Location<'static>,
        cx: &mut std::task::Context<'_>,
        would_wait: impl Fn() -> bool,
    ) -> bool {
        if *self == PollPause::Undecided {
            *self = match stress::decide(site) {
                Perturb::Yield(n) => PollPause::Yields(n as u16),
                Perturb::Directed => PollPause::Directed(DIRECTED_POLLS),
                _ => PollPause::Done,
            };
        }
        let pause = match self {
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
        if pause {
            cx.waker().wake_by_ref();
        } else {
            *self = PollPause::Done;
        }
        pause
    }
}
