//! A hold's time at its release, and where it is recorded: the primitive's histogram, or
//! this thread's tally (see `base::clock` for why only one hold in `SAMPLE_EVERY` is timed
//! precisely).

use crate::base::{clock, stats};
use crate::state::held::{self, FLAG_SAMPLED, FLAG_SPLIT, Meta};
use crate::state::prim::Prim;
use crate::state::tls::Local;

use super::hold::TIME;

/// Holds (and waits) shorter than this are "short": the published clock cannot time them (it moves at
/// least every [`clock::PUBLISH_EVERY`], so a hold under that crosses at most one publish),
/// and they are counted from the samples. Longer ones are recorded with their own duration.
///
/// Why not "a tick or more": an untimed hold that happens to cross one publish would be
/// recorded as lasting a whole tick, a count that is right in expectation on its own (it
/// happens with probability `d / tick`) but comes on top of the samples, which already
/// stand for that hold: the sum came out twice the true one, and phantom 100 ms holds
/// appeared in the buckets.
pub(super) const LONG_NS: u64 = 2 * clock::PUBLISH_EVERY.as_nanos() as u64;

/// How long a hold lasted, as far as the statistics are concerned.
#[derive(Clone, Copy, Default, Debug)]
pub(super) enum HoldTime {
    /// Not an acquisition of its own (a split-off part), or nothing was recorded.
    #[default]
    None,
    /// Under [`LONG_NS`] by the published clock, and not timed: counted, and given the
    /// buckets and durations of the sampled short holds when read (see `Stats::count_short`).
    Short,
    /// Under [`LONG_NS`], timed precisely (a sample): `ns`.
    ShortSample(u64),
    /// [`LONG_NS`] or more: `ns`, precise when sampled, else by the published clock.
    Long(u64),
}

/// The hold time of a hold that started at `since` (described by `meta`), read at its
/// release.
#[inline]
pub(super) fn hold_time(since: u64, meta: Meta) -> HoldTime {
    if meta.any(FLAG_SPLIT) {
        return HoldTime::None;
    }
    let tick = clock::hold_now() & TIME;
    if !meta.any(FLAG_SAMPLED) {
        match tick.saturating_sub(since) {
            ns if ns < LONG_NS => HoldTime::Short,
            ns => HoldTime::Long(ns),
        }
    } else {
        sampled_time(since)
    }
}

#[cold]
#[inline(never)]
fn sampled_time(since: u64) -> HoldTime {
    let ns = (clock::precise_now() & TIME).saturating_sub(since);
    // The same threshold as the untimed holds', so that both classes hold (nearly) the same
    // holds: they differ only for holds within a publish of the threshold.
    if ns < LONG_NS {
        HoldTime::ShortSample(ns)
    } else {
        HoldTime::Long(ns)
    }
}

/// Records `time` in this thread's tally (`l`), else in the primitive's statistics; a mutex's
/// in its own statistics, by its holder (see [`record_mutex_hold`]).
#[inline]
pub(super) fn record_hold_time(prim: &Prim, time: HoldTime, l: Option<&Local>, exclusive: bool) {
    if prim.kind.is_mutex() {
        return record_mutex_hold(prim, time);
    }
    let tallied = |sample| l.is_some_and(|l| held::tally_in(l, prim.id.0, sample));
    match time {
        HoldTime::None => {}
        HoldTime::Short => {
            if !tallied(None) {
                prim.stats.count_short(exclusive);
            }
        }
        HoldTime::ShortSample(ns) if stats::drawable(ns) => {
            if !tallied(Some(ns)) {
                prim.stats.observe_short_sample(ns, exclusive);
            }
        }
        // (A sample above the buckets untimed holds are drawn into is counted as it is.)
        HoldTime::ShortSample(ns) | HoldTime::Long(ns) => prim.stats.hold.observe(ns, exclusive),
    }
}

/// Records a mutex's `time` in its own statistics, by its holder before the unlock (see
/// [`PrimKind::is_mutex`](crate::model::prim::PrimKind::is_mutex)): plain loads and stores.
#[inline]
pub(super) fn record_mutex_hold(prim: &Prim, time: HoldTime) {
    match time {
        HoldTime::None => {}
        HoldTime::Short => prim.stats.count_short(true),
        HoldTime::ShortSample(ns) => prim.stats.observe_short_sample(ns, true),
        HoldTime::Long(ns) => prim.stats.hold.observe(ns, true),
    }
}
