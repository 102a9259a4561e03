//! Per-primitive statistics: plain atomics on the primitive, aggregated at scrape time.
//!
//! Nothing here allocates or locks. Counters that only the current holder of an exclusive
//! primitive can change (hold and wait observations of a Mutex or an RwLock write) use a
//! relaxed load and store instead of a read-modify-write: the primitive itself orders
//! successive holders, so no update is lost, and the uncontended path saves an atomic RMW.
//! `acquisitions` is not a counter of its own: it is every completed hold plus the holds alive
//! now, which the exporter adds up at scrape time.

use std::sync::atomic::Ordering::{AcqRel, Acquire, Relaxed, Release};
use std::sync::atomic::{AtomicPtr, AtomicU64};

/// Upper bounds (seconds) of the wait and hold histogram buckets; `+Inf` is implied.
pub const BUCKETS_SECONDS: [f64; 13] = [
    0.0001, 0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1.0, 5.0, 10.0, 30.0, 60.0,
];

const BUCKETS_NS: [u64; 13] = {
    let mut out = [0u64; 13];
    let mut i = 0;
    while i < 13 {
        out[i] = (BUCKETS_SECONDS[i] * 1e9) as u64;
        i += 1;
    }
    out
};

/// A fixed-bucket histogram of durations, in nanoseconds.
#[derive(Default)]
pub struct Histogram {
    /// Non-cumulative counts per bucket; index 13 is `+Inf`.
    buckets: [AtomicU64; 14],
    sum_ns: AtomicU64,
}

/// The bucket `ns` falls in (13: `+Inf`).
#[inline]
pub(crate) fn bucket_of(ns: u64) -> usize {
    // Most observations are in the first buckets: a linear scan beats a binary search here.
    let mut i = 0;
    while i < BUCKETS_NS.len() && ns > BUCKETS_NS[i] {
        i += 1;
    }
    i
}

/// Adds `by` to a count: with a load and a store when the caller is its one writer
/// (`exclusive`: a mutex's holder, a thread's own tally), else an atomic add.
///
/// Release: a count becomes visible only after the hold it ends has left the books (see
/// `hooks::released`), so that a scrape never sees both. Free on x86.
#[inline]
pub(crate) fn bump(a: &AtomicU64, by: u64, exclusive: bool) {
    if exclusive {
        a.store(a.load(Relaxed).wrapping_add(by), Release);
    } else {
        a.fetch_add(by, Release);
    }
}

impl Histogram {
    /// Records one duration. `exclusive`: the caller holds the primitive exclusively (see the
    /// module docs), so a load and a store replace the atomic add.
    #[inline]
    pub fn observe(&self, ns: u64, exclusive: bool) {
        bump(&self.buckets[bucket_of(ns)], 1, exclusive);
        if ns != 0 {
            bump(&self.sum_ns, ns, exclusive);
        }
    }

    /// A short wait: `sample` is its duration when it was timed precisely (remembered in
    /// `last`, `bucket << 56 | ns`); a wait that was not is counted in the bucket, and with the
    /// duration, of the latest sampled one. Each short wait is counted once, at once, in a
    /// bucket drawn from the short waits' own distribution, so every count is exact, the
    /// buckets and the sum are right in expectation, and no count ever goes down.
    /// `exclusive`: the caller is the one writer (a tally, a mutex's holder); else the counts
    /// are atomic adds (a semaphore's waiters, granted side by side).
    #[inline(always)]
    pub(crate) fn observe_short(&self, last: &AtomicU64, sample: Option<u64>, exclusive: bool) {
        const NS: u64 = (1 << 56) - 1;
        const LAST: usize = BUCKETS_NS.len();
        let (i, ns) = match sample {
            Some(ns) => {
                let i = bucket_of(ns);
                last.store((i as u64) << 56 | ns.min(NS), Relaxed);
                (i, ns)
            }
            None => {
                let last = last.load(Relaxed);
                // `min`: a branch-free clamp where a bounds check would be (the bucket was
                // stored from `bucket_of` above, so it is in range already).
                (((last >> 56) as usize).min(LAST), last & NS)
            }
        };
        // Release (in `bump`): visible only after the hold it counts has left the books.
        bump(&self.buckets[i], 1, exclusive);
        if ns != 0 {
            bump(&self.sum_ns, ns, exclusive);
        }
    }

    /// Zeroes every count (a tally slot taken by another primitive; nobody else writes it).
    pub(crate) fn reset(&self) {
        for b in &self.buckets {
            b.store(0, Relaxed);
        }
        self.sum_ns.store(0, Relaxed);
    }

    /// A copy of the counts: per bucket (non-cumulative, last is `+Inf`), count and sum.
    pub fn read(&self) -> HistogramSnapshot {
        let mut buckets = [0u64; 14];
        for (out, b) in buckets.iter_mut().zip(&self.buckets) {
            // Acquire: pairs with `bump`'s Release (a counted hold has left the books).
            *out = b.load(Acquire);
        }
        HistogramSnapshot {
            buckets,
            sum_ns: self.sum_ns.load(Relaxed),
        }
    }
}

/// A point-in-time copy of a [`Histogram`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HistogramSnapshot {
    /// Non-cumulative counts; `buckets[i]` counts durations `<= BUCKETS_SECONDS[i]` and above
    /// the previous bound; the last is `+Inf`.
    pub buckets: [u64; 14],
    /// Sum of the observed durations in nanoseconds.
    pub sum_ns: u64,
}

impl HistogramSnapshot {
    /// Number of observations.
    pub fn count(&self) -> u64 {
        self.buckets.iter().sum()
    }

    /// Adds another snapshot into this one.
    pub fn merge(&mut self, other: &HistogramSnapshot) {
        for (a, b) in self.buckets.iter_mut().zip(other.buckets) {
            *a += b;
        }
        self.sum_ns += other.sum_ns;
    }
}

/// What threads' tables counted of a primitive (`state::held::tally`), summed over the
/// tables: the short holds (the sampled ones in their buckets, the untimed ones as a count: a
/// read apportions them, see [`Stats::count_short`]) and the grants after a wait.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Tallied {
    /// The sampled short holds.
    pub(crate) sampled: HistogramSnapshot,
    /// The untimed short holds.
    pub(crate) untimed: u64,
    /// Acquisitions granted after a wait.
    pub(crate) contended: u64,
    /// Their waits.
    pub(crate) waits: HistogramSnapshot,
}

impl Tallied {
    /// Short holds, sampled or not.
    pub(crate) fn count(&self) -> u64 {
        self.sampled.count() + self.untimed
    }

    /// Adds another table's into this one.
    pub(crate) fn merge(&mut self, o: &Tallied) {
        self.sampled.merge(&o.sampled);
        self.untimed += o.untimed;
        self.contended += o.contended;
        self.waits.merge(&o.waits);
    }
}

/// A wait's duration, as far as the statistics are concerned (see `runtime::hooks`: one wait
/// in `WAIT_SAMPLE_EVERY` per thread is timed precisely).
#[derive(Clone, Copy, Debug)]
pub(crate) enum WaitTime {
    /// Short by the published clock, and not timed.
    Short,
    /// Short, timed precisely: `ns`.
    ShortSample(u64),
    /// Long: `ns`, precise when timed, else by the published clock.
    Long(u64),
}

/// The wait histogram and its latest sampled short wait (`bucket << 56 | ns`; 0: none yet).
#[derive(Default)]
struct WaitHistogram {
    hist: Histogram,
    last: AtomicU64,
}

/// Buckets an untimed short hold can fall in: it began and ended within one publish of the
/// hold clock, at most `clock::PUBLISH_EVERY` (100 ms) apart, the bound of bucket 6.
const SHORT_BUCKETS: usize = 7;
const _: () = assert!(BUCKETS_NS[SHORT_BUCKETS - 1] == 100_000_000);

/// Whether a sampled short hold of `ns` is among the samples untimed ones are drawn from (in
/// the first [`SHORT_BUCKETS`] buckets).
#[inline]
pub(crate) fn drawable(ns: u64) -> bool {
    bucket_of(ns) < SHORT_BUCKETS
}

/// The untimed short holds a primitive's reads have apportioned: per bucket and their sum, the
/// count apportioned, and the samples seen at the latest read.
#[derive(Default)]
struct Drawn {
    buckets: [u64; SHORT_BUCKETS],
    sum_ns: u64,
    given: u64,
    seen: [u64; SHORT_BUCKETS],
    seen_ns: u64,
}

impl Drawn {
    /// Apportions the untimed short holds counted up to `untimed` over the buckets as the
    /// samples are (those since the previous read when there are any, else all of them):
    /// every count exact, each bucket and the sum right in expectation, and no bucket ever
    /// going down from one read to the next.
    fn draw(&mut self, untimed: u64, samples: [u64; SHORT_BUCKETS], samples_ns: u64) {
        let new = untimed.saturating_sub(self.given);
        let mut weights = samples;
        let mut weights_ns = samples_ns;
        if samples != self.seen {
            for (w, s) in weights.iter_mut().zip(self.seen) {
                *w -= s;
            }
            weights_ns -= self.seen_ns;
        }
        self.seen = samples;
        self.seen_ns = samples_ns;
        if new == 0 {
            return;
        }
        self.given = untimed;
        let total: u64 = weights.iter().sum();
        if total == 0 {
            // Never sampled: counted as under the first bound, with no duration.
            self.buckets[0] += new;
            return;
        }
        // Largest remainders: the whole shares first, then one more each to the buckets
        // with the largest fractions, until all `new` are given.
        let mut given = 0;
        let mut rest = [(0u128, 0usize); SHORT_BUCKETS];
        for (i, &w) in weights.iter().enumerate() {
            let share = u128::from(new) * u128::from(w);
            let whole = (share / u128::from(total)) as u64;
            self.buckets[i] += whole;
            given += whole;
            rest[i] = (share % u128::from(total), i);
        }
        rest.sort_unstable_by_key(|r| std::cmp::Reverse(r.0));
        for &(_, i) in rest.iter().take((new - given) as usize) {
            self.buckets[i] += 1;
        }
        self.sum_ns += (u128::from(new) * u128::from(weights_ns) / u128::from(total)) as u64;
    }
}

/// The statistics kept on every primitive.
///
/// The wait histogram is allocated the first time the primitive is contended: most
/// primitives never are, and it saves 120 bytes each.
#[derive(Default)]
pub struct Stats {
    pub(crate) contended: AtomicU64,
    pub(crate) try_failures: AtomicU64,
    pub(crate) timeouts: AtomicU64,
    pub(crate) cancelled: AtomicU64,
    /// The wait histogram and the drawn short holds: see [`Cold`].
    cold: ColdBox,
    pub(crate) hold: Histogram,
    /// Untimed short holds not counted on a thread's table (see [`Stats::count_short`]).
    untimed: AtomicU64,
    /// The sum of the sampled short holds under the last short bucket's bound, counted here
    /// (the hold histogram's first [`SHORT_BUCKETS`] buckets count these samples only).
    /// Inline, so that no sampled hold allocates.
    sampled_ns: AtomicU64,
}

/// What most primitives never need, allocated on first use: the wait histogram (the first
/// wait) and what reads drew of the untimed short holds (the first read of one).
#[derive(Default)]
struct Cold {
    wait: WaitHistogram,
    drawn: parking_lot::Mutex<Drawn>,
}

/// A [`Cold`] allocated on first use: one word (a `OnceLock` would take two).
#[derive(Default)]
struct ColdBox(AtomicPtr<Cold>);

impl ColdBox {
    /// The cold part, if allocated.
    #[inline]
    fn get(&self) -> Option<&Cold> {
        // SAFETY: null, or a box published by `get_or_init` and freed only by `drop`.
        unsafe { self.0.load(Acquire).as_ref() }
    }

    /// The cold part, allocated now if it was not.
    fn get_or_init(&self) -> &Cold {
        if let Some(c) = self.get() {
            return c;
        }
        let new = Box::into_raw(Box::default());
        // AcqRel: publishes the new box, or sees the one another thread published.
        match self
            .0
            .compare_exchange(std::ptr::null_mut(), new, AcqRel, Acquire)
        {
            // SAFETY: just published; freed only by `drop`.
            Ok(_) => unsafe { &*new },
            Err(other) => {
                // SAFETY: ours, never published.
                drop(unsafe { Box::from_raw(new) });
                // SAFETY: published by the winner; freed only by `drop`.
                unsafe { &*other }
            }
        }
    }
}

impl Drop for ColdBox {
    fn drop(&mut self) {
        let p = *self.0.get_mut();
        if !p.is_null() {
            // SAFETY: the box `get_or_init` published, freed once.
            drop(unsafe { Box::from_raw(p) });
        }
    }
}

impl Stats {
    /// Records a wait (the slow path: allocates the wait histogram on first use): `Long(ns)`
    /// with its duration; a short one as [`Histogram::observe_short`] counts a short hold, in
    /// the bucket of the latest sampled short wait of this primitive unless it is one.
    pub(crate) fn observe_wait(&self, time: WaitTime, exclusive: bool) {
        let w = &self.cold.get_or_init().wait;
        match time {
            WaitTime::Long(ns) => w.hist.observe(ns, exclusive),
            WaitTime::Short => w.hist.observe_short(&w.last, None, exclusive),
            WaitTime::ShortSample(ns) => w.hist.observe_short(&w.last, Some(ns), exclusive),
        }
    }

    /// A sampled short wait of `ns` counted on a thread's table: remembered here too, so that
    /// [`Stats::has_wait_sample`] says so (one plain store, on a sample only).
    pub(crate) fn note_wait_sample(&self, ns: u64) {
        let w = &self.cold.get_or_init().wait;
        w.last.store(
            (bucket_of(ns) as u64) << 56 | ns.clamp(1, (1 << 56) - 1),
            Relaxed,
        );
    }

    /// Whether a short wait of this primitive was ever timed precisely (the next one is, if
    /// not: an untimed wait is counted like the latest sample, so there must be one).
    #[inline]
    pub(crate) fn has_wait_sample(&self) -> bool {
        self.cold
            .get()
            .is_some_and(|c| c.wait.last.load(Relaxed) != 0)
    }

    /// An untimed short hold (see [`HoldTime::Short`](crate::runtime)): one add, at a fixed
    /// place. A read ([`Stats::read_with`]) gives the untimed holds the buckets and durations
    /// of the sampled ones, apportioned: each counted once, the buckets and the sum right in
    /// expectation, no bucket going down. (A bucket per hold, that of the latest sample, would
    /// cost a dependent load and two more writes just before the unlock: a third of a nested
    /// lock's time.) `exclusive`: the caller is the one writer (a mutex's holder, see
    /// [`PrimKind::is_mutex`](crate::model::prim::PrimKind::is_mutex)); else an atomic add.
    #[inline(always)]
    pub(crate) fn count_short(&self, exclusive: bool) {
        bump(&self.untimed, 1, exclusive);
    }

    /// An acquisition granted after a wait, counted on the primitive (not on a thread's
    /// table). `exclusive` as for [`Stats::count_short`].
    #[inline]
    pub(crate) fn count_contended(&self, exclusive: bool) {
        bump(&self.contended, 1, exclusive);
    }

    /// A sampled short hold of `ns`: in the histogram, and among the samples the untimed ones
    /// are drawn from. `exclusive` as for [`Stats::count_short`].
    pub(crate) fn observe_short_sample(&self, ns: u64, exclusive: bool) {
        self.hold.observe(ns, exclusive);
        if drawable(ns) {
            bump(&self.sampled_ns, ns, exclusive);
        }
    }

    /// Completed holds so far, with `tallied` (the short holds counted on threads' tables),
    /// without the apportioning of [`Stats::read_with`].
    pub(crate) fn released_with(&self, tallied: &Tallied) -> u64 {
        self.hold.read().count() + self.untimed.load(Acquire) + tallied.count()
    }

    /// The hold histogram, with `tallied` and the untimed short holds apportioned (see
    /// [`Stats::count_short`]).
    fn hold_with(&self, tallied: &Tallied) -> HistogramSnapshot {
        let mut hold = self.hold.read();
        hold.merge(&tallied.sampled);
        // Acquire: pairs with `bump`'s Release (a counted hold has left the books).
        let untimed = self.untimed.load(Acquire) + tallied.untimed;
        if untimed == 0 {
            return hold;
        }
        let samples = std::array::from_fn(|i| hold.buckets[i]);
        let samples_ns = self.sampled_ns.load(Relaxed) + tallied.sampled.sum_ns;
        let mut drawn = self.cold.get_or_init().drawn.lock();
        drawn.draw(untimed, samples, samples_ns);
        for (b, d) in hold.buckets.iter_mut().zip(drawn.buckets) {
            *b += d;
        }
        hold.sum_ns += drawn.sum_ns;
        hold
    }

    /// A copy of every counter (see [`Stats::read_with`]).
    pub fn read(&self) -> StatsSnapshot {
        self.read_with(&Tallied::default())
    }

    /// A copy of every counter, with the short holds `tallied` on threads' tables counted in
    /// the hold histogram (their untimed ones apportioned with the primitive's own).
    pub(crate) fn read_with(&self, tallied: &Tallied) -> StatsSnapshot {
        let mut wait = self
            .cold
            .get()
            .map(|c| c.wait.hist.read())
            .unwrap_or_default();
        wait.merge(&tallied.waits);
        StatsSnapshot {
            contended: self.contended.load(Relaxed) + tallied.contended,
            try_failures: self.try_failures.load(Relaxed),
            timeouts: self.timeouts.load(Relaxed),
            cancelled: self.cancelled.load(Relaxed),
            wait,
            hold: self.hold_with(tallied),
        }
    }
}

/// A point-in-time copy of a primitive's [`Stats`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StatsSnapshot {
    /// Acquisitions that had to wait.
    pub contended: u64,
    /// `try_` forms that gave up.
    pub try_failures: u64,
    /// Timed forms that timed out.
    pub timeouts: u64,
    /// Acquire futures dropped while waiting.
    pub cancelled: u64,
    /// Wait durations of granted acquisitions.
    pub wait: HistogramSnapshot,
    /// Hold durations of released guards and permits.
    pub hold: HistogramSnapshot,
}

impl StatsSnapshot {
    /// Adds another snapshot into this one.
    pub fn merge(&mut self, o: &StatsSnapshot) {
        self.contended += o.contended;
        self.try_failures += o.try_failures;
        self.timeouts += o.timeouts;
        self.cancelled += o.cancelled;
        self.wait.merge(&o.wait);
        self.hold.merge(&o.hold);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_are_upper_inclusive() {
        assert_eq!(bucket_of(0), 0);
        assert_eq!(bucket_of(100_000), 0);
        assert_eq!(bucket_of(100_001), 1);
        assert_eq!(bucket_of(60_000_000_000), 12);
        assert_eq!(bucket_of(60_000_000_001), 13);
    }

    /// The untimed short holds of a mutex take the sampled ones' buckets when read: every one
    /// counted once, in proportion, and no bucket ever goes down from one read to the next.
    #[test]
    fn untimed_short_holds_are_drawn_from_the_samples() {
        let mut d = Drawn::default();
        let mut samples = [0u64; SHORT_BUCKETS];
        // Never sampled: under the first bound, with no duration.
        d.draw(10, samples, 0);
        assert_eq!((d.buckets[0], d.sum_ns, d.given), (10, 0, 10));
        // One sample of 50 µs in bucket 0, three of 200 µs in bucket 1.
        samples[0] = 1;
        samples[1] = 3;
        d.draw(1_010, samples, 50_000 + 3 * 200_000);
        assert_eq!(d.buckets[..2], [10 + 250, 750]);
        assert_eq!(d.sum_ns, 1_000 * 650_000 / 4);
        // New samples only in bucket 0: the next untimed ones follow them, and nothing drawn
        // before moves.
        let before = d.buckets;
        samples[0] += 2;
        d.draw(1_110, samples, 650_000 + 2 * 10_000);
        assert_eq!(d.buckets[..2], [260 + 100, 750]);
        assert!(d.buckets.iter().zip(before).all(|(now, was)| *now >= was));
        // No new sample: the whole history is the weight; odd counts go to the largest
        // remainders, all of them given.
        d.draw(1_113, samples, 670_000);
        assert_eq!(d.buckets.iter().sum::<u64>(), 1_113);
        // A read with nothing new changes nothing.
        let before = (d.buckets, d.sum_ns);
        d.draw(1_113, samples, 670_000);
        assert_eq!((d.buckets, d.sum_ns), before);
    }

    /// The mutex's hold histogram as read: the timed holds, and the untimed ones drawn.
    #[test]
    fn a_mutex_read_counts_every_untimed_hold() {
        let st = Stats::default();
        st.observe_short_sample(20_000, true);
        for _ in 0..99 {
            st.count_short(true);
        }
        st.hold.observe(300_000_000, true);
        let hold = st.read().hold;
        assert_eq!(hold.count(), 101);
        assert_eq!(st.released_with(&Tallied::default()), 101);
        assert_eq!(hold.buckets[0], 100);
        assert_eq!(hold.sum_ns, 100 * 20_000 + 300_000_000);
        // Read again: the same.
        assert_eq!(st.read().hold, hold);
    }

    /// A shared primitive's read: the short holds tallied on threads' tables (sampled and
    /// untimed) drawn together with those counted on the primitive (a table's slot was taken).
    #[test]
    fn tallied_untimed_holds_are_drawn_from_every_sample() {
        let st = Stats::default();
        st.observe_short_sample(200_000, false);
        st.count_short(false);
        let mut tallied = Tallied::default();
        tallied.sampled.buckets[0] = 3;
        tallied.sampled.sum_ns = 3 * 50_000;
        tallied.untimed = 395;
        assert_eq!(st.released_with(&tallied), 400);
        let hold = st.read_with(&tallied).hold;
        assert_eq!(hold.count(), 400);
        // One sample in four is in bucket 1 (0.5 ms), three in bucket 0 (0.1 ms): so are the
        // 396 untimed holds.
        assert_eq!(hold.buckets[..2], [3 + 297, 1 + 99]);
        assert_eq!(hold.sum_ns, 350_000 + 396 * 350_000 / 4);
        // A sample above the drawn buckets is counted, but draws nothing.
        let long = Stats::default();
        long.observe_short_sample(150_000_000, false);
        long.count_short(false);
        let hold = long.read().hold;
        assert_eq!((hold.buckets[0], hold.buckets[7]), (1, 1));
        assert_eq!(hold.sum_ns, 150_000_000);
    }

    #[test]
    fn observe_counts_and_sums() {
        let h = Histogram::default();
        h.observe(0, true);
        h.observe(2_000_000, false);
        let s = h.read();
        assert_eq!(s.count(), 2);
        assert_eq!(s.sum_ns, 2_000_000);
        assert_eq!(s.buckets[0], 1);
        assert_eq!(s.buckets[3], 1);
    }
}
