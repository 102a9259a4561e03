//! A hold's time at its release, and where it is recorded: the primitive's histogram, or
//! this thread's tally (see `base::clock` for why only one hold in `SAMPLE_EVERY` is timed
//! precisely).

use crate::base::clock;
use crate::state::held::{self, FLAG_SAMPLED, FLAG_SPLIT};
use crate::state::prim::Prim;
use crate::state::tls::Local;

use super::{TIME, meta_flags};

/// How long a hold lasted, as far as the statistics are concerned.
#[derive(Clone, Copy, Default, Debug)]
pub(super) enum HoldTime {
    /// Not an acquisition of its own (a split-off part), or nothing was recorded.
    #[default]
    None,
    /// Under a tick of the published clock, and not timed: counted in the bucket of the
    /// latest sampled short hold (see `state::held::tally`).
    Short,
    /// Under a tick, timed precisely (a sample): `ns`.
    ShortSample(u64),
    /// A tick or more: `ns`, precise when sampled, else in whole ticks (unbiased).
    Long(u64),
}

/// The hold time of a hold that started at `since` (packed `meta`), read at its release.
#[inline]
pub(super) fn hold_time(since: u64, meta: u64) -> HoldTime {
    let flags = meta_flags(meta);
    if flags & FLAG_SPLIT != 0 {
        return HoldTime::None;
    }
    let tick = clock::hold_now() & TIME;
    if flags & FLAG_SAMPLED == 0 {
        match tick.saturating_sub(since) {
            0 => HoldTime::Short,
            ns => HoldTime::Long(ns),
        }
    } else {
        sampled_time(since, tick)
    }
}

#[cold]
#[inline(never)]
fn sampled_time(since: u64, tick: u64) -> HoldTime {
    let ns = (clock::precise_now() & TIME).saturating_sub(since);
    // Short if no tick was published since the precise start: the same test the unsampled
    // holds pass (their start and end read the same tick), so both classes hold the same holds.
    if tick <= since {
        HoldTime::ShortSample(ns)
    } else {
        HoldTime::Long(ns)
    }
}

/// Records `time` in this thread's tally (`l`), else in the primitive's histogram; a mutex's
/// in its own statistics, by its holder (see [`record_mutex_hold`]).
#[inline]
pub(super) fn record_hold_time(prim: &Prim, time: HoldTime, l: Option<&Local>, exclusive: bool) {
    if prim.kind.is_mutex() {
        return record_mutex_hold(prim, time);
    }
    let (ns, sample) = match time {
        HoldTime::None => return,
        HoldTime::Short => (0, None),
        HoldTime::ShortSample(ns) => (ns, Some(ns)),
        HoldTime::Long(ns) => return prim.stats.hold.observe(ns, exclusive),
    };
    if !l.is_some_and(|l| held::tally_in(l, prim.id.0, sample)) {
        prim.stats.hold.observe(ns, exclusive);
    }
}

/// Records a mutex's `time` in its own statistics, by its holder before the unlock (see
/// [`PrimKind::is_mutex`](crate::model::prim::PrimKind::is_mutex)): plain loads and stores.
#[inline]
pub(super) fn record_mutex_hold(prim: &Prim, time: HoldTime) {
    match time {
        HoldTime::None => {}
        HoldTime::Short => prim.stats.observe_short(None),
        HoldTime::ShortSample(ns) => prim.stats.observe_short(Some(ns)),
        HoldTime::Long(ns) => prim.stats.hold.observe(ns, true),
    }
}
