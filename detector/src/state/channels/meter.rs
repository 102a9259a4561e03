//! Channels for `/metrics`: what each metered channel counts, the registry that lists the
//! live ones, and the series their label values share.
//!
//! # Where depth comes from
//!
//! `lockscope_channel_depth` is the messages a channel's senders have delivered minus those
//! its receiver has taken, both counted by the wrappers as messages pass: a relaxed add by
//! the sender, a relaxed load and store by the receiver (its one writer), each count on a
//! cache line of its own (senders never write the receiver's line, nor the receiver theirs). Reading tokio's own state at scrape time would cost nothing per
//! message, but no handle the registry may keep reaches it:
//!
//! - `Receiver::len()` needs the receiver, which the user's task owns (and `recv` borrows
//!   mutably): the registry cannot share it.
//! - `Sender::max_capacity() - capacity()` needs a strong sender. Keeping one would keep the
//!   channel open, so the registry could keep only a `WeakSender` and upgrade it at each
//!   scrape. While that upgraded sender lives, the user's last `Sender` dropping does not close
//!   the channel, the user's own `WeakSender::upgrade` succeeds where it would have failed (an
//!   actor that keeps a sender to itself when the upgrade succeeds would then never shut
//!   down), and `strong_count` reads one more: behaviour a wrapper must not change, even for
//!   the microseconds of a scrape. Unbounded senders have no `capacity()` at all.
//!
//! The two counts are read one after the other at scrape time, without a lock: a message in
//! flight between them may be missed or counted once too early for one scrape, never lost.
//! Once the receiver is dropped (tokio drops the messages it held) the depth reads 0.
//!
//! # What is registered
//!
//! `mpsc` channels (tokio's, bounded and unbounded, and std's), `broadcast` and `watch`
//! channels: a record and a registry entry per channel, made when the channel is, whether or
//! not anything scrapes. `oneshot` channels are not: their depth is 0 or 1, most are made per
//! request (a registry entry each, for a gauge that says nothing a trace would not), and their
//! sender is tokio's own, so a send is never seen.
//!
//! # Depth of a broadcast or watch channel
//!
//! A `broadcast` channel has many receivers, each at its own place: its depth is the values
//! the slowest live receiver has not taken yet (tokio's `Sender::len`), counted as an `mpsc`
//! depth is but with one received count per receiver ([`ChannelReader`], its own cache line,
//! written by that receiver alone) and the minimum taken at scrape time. A receiver's count
//! starts at the channel's sent count when it subscribes, and moves by what each receive
//! returns (a value: one; `Lagged(n)`: the `n` values it skipped). The sent count is added
//! before tokio's send (and taken back if it fails), so a send racing a subscription can only
//! make that receiver's count too high, never too low: such a race can make the depth read low
//! while that receiver lives, never high (a send in progress during a scrape may be counted
//! one scrape early, as for `mpsc`). tokio keeps up to the capacity rounded up to a power of
//! two, and so may the depth; the capacity gauge is the capacity given.
//!
//! A `watch` channel holds one value, replaced by each send: nothing queues, no send waits, so
//! its depth is always 0 and its capacity 1; what it shows is its receive waits (`changed`,
//! `wait_for`). Sends of either kind never wait: their send-wait histograms stay empty.
//!
//! # Series and the label cap
//!
//! Channels sharing a `(channel, kind)` label pair share a [`ChanSeries`]: their depths and
//! capacities are summed, and their waits go to one pair of histograms. Unnamed channels are
//! named after their creation site, so a channel made per request is one series, not one per
//! request. A new series takes one slot of the label cap it shares with the primitives (see
//! `state::prim::claim_series`): past the cap a channel is counted in `channel="other"` and
//! in `lockscope_dropped_series_total`. A series outlives its channels (its histograms are
//! counters, which must never go backwards): with no channel alive its gauges read 0.
//!
//! # Waits
//!
//! A send or receive that had to wait (recorded in `state::channels`) is counted when its
//! record ends, whether it completed or its future was dropped (a `select!` branch that lost,
//! a timeout): the time it waited for capacity, or for a message, is what the histogram
//! shows, whatever came of it. A `send_timeout` is not recorded as a wait, so not counted
//! either.

use std::collections::HashMap;
use std::panic::Location;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, LazyLock};

use parking_lot::Mutex;

use super::{ChanOp, Channel};
use crate::base::stats::{Histogram, HistogramSnapshot};
use crate::base::{clock, config, names};
use crate::state::prim;

/// A value alone on its cache line (two lines: x86 prefetches lines in adjacent pairs), so
/// that writers of neighbouring values never invalidate it.
#[repr(align(128))]
#[derive(Default)]
struct Line<T>(T);

mod readers;
pub use readers::ChannelReader;
use readers::Readers;

/// How a channel's depth is read from its counts.
enum DepthOf {
    /// One receiver (`mpsc`): delivered minus taken, at most the capacity.
    Queue,
    /// Many receivers, each with its own count (`broadcast`): delivered minus what the slowest
    /// live one took, at most `held` (what tokio keeps: the capacity rounded up to a power of
    /// two).
    Slowest { readers: Readers, held: u64 },
    /// Nothing queues (`watch`): always 0.
    Nothing,
}

/// What `/metrics` keeps of one channel: its series, its capacity, and the messages counted
/// through it. Shared by the channel's record and the registry, which drops its entry when
/// the record is dropped.
pub struct Meter {
    /// Its key in the registry.
    id: u64,
    series: Arc<ChanSeries>,
    capacity: Option<usize>,
    depth_of: DepthOf,
    /// The receiver was dropped: whatever was queued is gone.
    receiver_dropped: AtomicBool,
    /// Messages delivered by senders (any of them: an atomic add).
    sent: Line<AtomicU64>,
    /// Messages taken by the receiver (one writer at a time: a load and a store).
    received: Line<AtomicU64>,
}

impl Meter {
    /// Messages queued now, as far as the two counts tell (see the module docs), at most the
    /// capacity of a bounded channel.
    fn depth(&self) -> u64 {
        match &self.depth_of {
            DepthOf::Queue => {
                if self.receiver_dropped.load(Relaxed) {
                    return 0;
                }
                let received = self.received.0.load(Relaxed);
                let queued = self.sent.0.load(Relaxed).saturating_sub(received);
                self.capacity.map_or(queued, |c| queued.min(c as u64))
            }
            DepthOf::Slowest { readers, held } => {
                let sent = self.sent.0.load(Relaxed);
                // No live receiver: tokio keeps nothing for anyone.
                readers
                    .fewest_taken()
                    .map_or(0, |taken| sent.saturating_sub(taken).min(*held))
            }
            DepthOf::Nothing => 0,
        }
    }
}

impl std::fmt::Debug for Meter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Meter")
            .field("series", &self.series.name)
            .field("depth", &self.depth())
            .finish_non_exhaustive()
    }
}

/// The channels sharing one `(channel, kind)` label pair: their wait histograms.
pub struct ChanSeries {
    /// Its place in the list of series, for the scrape.
    index: usize,
    name: Arc<str>,
    kind: &'static str,
    /// A bounded channel was counted here: the series has a capacity gauge.
    bounded: AtomicBool,
    send_wait: Histogram,
    recv_wait: Histogram,
}

impl ChanSeries {
    /// The `channel` label value: a channel's name, or `other` past the label cap.
    pub fn name(&self) -> &Arc<str> {
        &self.name
    }

    /// The `kind` label value: `mpsc`, ...
    pub fn kind(&self) -> &'static str {
        self.kind
    }

    /// Whether a bounded channel was ever counted in it.
    pub fn bounded(&self) -> bool {
        self.bounded.load(Relaxed)
    }

    /// Its send-wait histogram now.
    pub fn send_wait(&self) -> HistogramSnapshot {
        self.send_wait.read()
    }

    /// Its receive-wait histogram now.
    pub fn recv_wait(&self) -> HistogramSnapshot {
        self.recv_wait.read()
    }
}

impl Channel {
    /// [`Channel::new`], counted in `/metrics` (depth, capacity, send and receive waits) until
    /// it is dropped. Registered only while the detector is on: a channel made while it is off
    /// counts nothing, ever, so turning it on later never shows a depth half counted.
    ///
    /// ```
    /// # use std::panic::Location;
    /// use lockscope_detector::__private::hooks::Channel;
    ///
    /// let chan = Channel::metered("mpsc", Some("doc/jobs"), Location::caller(), Some(4));
    /// chan.sent(3);
    /// chan.received(1);
    /// let m = lockscope_detector::metrics();
    /// let series = m.channels.iter().find(|c| &*c.channel == "doc/jobs").unwrap();
    /// assert_eq!((series.depth, series.capacity), (2, Some(4)));
    /// ```
    pub fn metered(
        kind: &'static str,
        name: Option<&str>,
        created_at: &'static Location<'static>,
        capacity: Option<usize>,
    ) -> Arc<Channel> {
        let chan = Channel::new(kind, name, created_at, capacity);
        Channel::metering(chan, capacity, DepthOf::Queue)
    }

    /// A `broadcast` channel of `capacity`, counted in `/metrics` as [`Channel::metered`]
    /// counts one: its depth is what its slowest live receiver has not taken (each receiver
    /// keeps a [`ChannelReader`]), its capacity the one given. Its record has no capacity (a
    /// broadcast send never waits for room) and keeps no receiver owner (its receivers are
    /// many: see [`Channel::note_receiver`]).
    ///
    /// ```
    /// # use std::panic::Location;
    /// use lockscope_detector::__private::hooks::Channel;
    ///
    /// let chan = Channel::metered_broadcast(Some("doc/events"), Location::caller(), 4);
    /// assert_eq!((chan.kind(), chan.capacity()), ("broadcast", None));
    /// ```
    pub fn metered_broadcast(
        name: Option<&str>,
        created_at: &'static Location<'static>,
        capacity: usize,
    ) -> Arc<Channel> {
        let mut chan = Channel::new("broadcast", name, created_at, None);
        chan.many_receivers = true;
        let readers = Readers::default();
        let held = capacity.checked_next_power_of_two().unwrap_or(capacity) as u64;
        Channel::metering(chan, Some(capacity), DepthOf::Slowest { readers, held })
    }

    /// A `watch` channel, counted in `/metrics` with a depth of 0 and a capacity of 1 (it
    /// holds one value, replaced by each send) and its receive waits. Its record keeps no
    /// receiver owner (its receivers are many: see [`Channel::note_receiver`]).
    ///
    /// ```
    /// # use std::panic::Location;
    /// use lockscope_detector::__private::hooks::Channel;
    ///
    /// let chan = Channel::metered_watch(Some("doc/config"), Location::caller());
    /// assert_eq!(chan.kind(), "watch");
    /// ```
    pub fn metered_watch(
        name: Option<&str>,
        created_at: &'static Location<'static>,
    ) -> Arc<Channel> {
        let mut chan = Channel::new("watch", name, created_at, None);
        chan.many_receivers = true;
        Channel::metering(chan, Some(1), DepthOf::Nothing)
    }

    /// `chan`, with a meter of `capacity` whose depth is read as `depth_of` if the detector
    /// is on.
    fn metering(mut chan: Channel, capacity: Option<usize>, depth_of: DepthOf) -> Arc<Channel> {
        if config::enabled() {
            chan.meter = Some(register(&chan.name, chan.kind, capacity, depth_of));
        }
        Arc::new(chan)
    }

    /// A new receiver of this channel, for a `broadcast` channel's depth: it starts having
    /// taken everything sent so far (a new receiver sees only what is sent after it). Nothing
    /// (no allocation) for any other channel, or one not metered.
    pub fn reader(&self) -> ChannelReader {
        let Some(m) = &self.meter else {
            return ChannelReader::default();
        };
        let DepthOf::Slowest { readers, .. } = &m.depth_of else {
            return ChannelReader::default();
        };
        readers.add(m.sent.0.load(Relaxed))
    }

    /// `n` messages were delivered into the channel (a send, `try_send`, a permit used):
    /// one relaxed add on the senders' line, nothing if it is not metered.
    #[inline]
    pub fn sent(&self, n: usize) {
        if let Some(m) = &self.meter {
            m.sent.0.fetch_add(n as u64, Relaxed);
        }
    }

    /// A send counted with [`sent`](Channel::sent) before it was tried failed: taken back.
    #[inline]
    pub fn unsent(&self, n: usize) {
        if let Some(m) = &self.meter {
            m.sent.0.fetch_sub(n as u64, Relaxed);
        }
    }

    /// The receiver took `n` messages. Only the receiver calls this, and an `mpsc` channel has
    /// one at a time (`recv` takes it by `&mut`), so a load and a store count it.
    #[inline]
    pub fn received(&self, n: usize) {
        if let Some(m) = &self.meter {
            let r = &m.received.0;
            r.store(r.load(Relaxed).wrapping_add(n as u64), Relaxed);
        }
    }

    /// The receiver was dropped, and what it had queued with it: the depth reads 0 from now.
    /// (Closing it is not this: a closed receiver still takes what was queued.)
    pub fn receiver_dropped(&self) {
        if let Some(m) = &self.meter {
            m.receiver_dropped.store(true, Relaxed);
        }
    }
}

impl Drop for Channel {
    fn drop(&mut self) {
        if let Some(m) = &self.meter {
            METERS[m.id as usize % SHARDS].lock().remove(&m.id);
        }
    }
}

/// A wait on `chan` (`op`) that began at `since_ns` ended now: counted in its series'
/// histogram if the channel is metered. Not allocating: atomic adds on the series.
pub(super) fn observe_wait(chan: &Channel, op: ChanOp, since_ns: u64) {
    let Some(m) = &chan.meter else {
        return;
    };
    let ns = clock::precise_now().saturating_sub(since_ns);
    if op == ChanOp::Send {
        m.series.send_wait.observe(ns, false);
    } else if op == ChanOp::Recv {
        m.series.recv_wait.observe(ns, false);
    }
}

const SHARDS: usize = 16;

/// Sharded tables: one lock of `SHARDS` per operation.
type Shards<K, V> = LazyLock<[Mutex<HashMap<K, V>>; SHARDS]>;

/// The live metered channels, by meter id: each creation and drop locks one shard.
static METERS: Shards<u64, Arc<Meter>> =
    LazyLock::new(|| std::array::from_fn(|_| Mutex::new(HashMap::new())));
static NEXT_METER: AtomicU64 = AtomicU64::new(1);

/// The series by name, sharded by the name's hash (a creation locks one shard); each name
/// lists its series, one per kind.
static SERIES: Shards<Arc<str>, Vec<Arc<ChanSeries>>> =
    LazyLock::new(|| std::array::from_fn(|_| Mutex::new(HashMap::new())));
/// Every series, in creation order (its `index`): appended under a name shard's lock (so
/// after it in lock order), read at scrape time.
static ALL_SERIES: LazyLock<Mutex<Vec<Arc<ChanSeries>>>> = LazyLock::new(Mutex::default);

fn shard_of(name: &str) -> usize {
    use std::hash::{BuildHasher, BuildHasherDefault, DefaultHasher};
    BuildHasherDefault::<DefaultHasher>::default().hash_one(name) as usize % SHARDS
}

/// The series of label value `label` and `kind`, made if new. `claim`: a new one takes a
/// slot of the label cap, or, past it, is not made (`None`: fold into `other`).
fn series(label: &str, kind: &'static str, claim: bool) -> Option<Arc<ChanSeries>> {
    let mut shard = SERIES[shard_of(label)].lock();
    if let Some(s) = shard
        .get(label)
        .and_then(|v| v.iter().find(|s| s.kind == kind))
    {
        return Some(s.clone());
    }
    // Under the shard's lock, so that two channels of one new name claim one slot.
    if claim && !prim::claim_series() {
        return None;
    }
    let mut all = ALL_SERIES.lock();
    let name: Arc<str> = Arc::from(label);
    let s = Arc::new(ChanSeries {
        index: all.len(),
        name: name.clone(),
        kind,
        bounded: AtomicBool::new(false),
        send_wait: Histogram::default(),
        recv_wait: Histogram::default(),
    });
    all.push(s.clone());
    shard.entry(name).or_default().push(s.clone());
    Some(s)
}

/// Registers a channel named `name` (already cleaned) of `kind`.
fn register(
    name: &str,
    kind: &'static str,
    capacity: Option<usize>,
    depth_of: DepthOf,
) -> Arc<Meter> {
    let series = series(name, kind, true)
        .or_else(|| series(names::OTHER_SERIES, kind, false))
        // UNWRAP: `claim` false always makes the series.
        .expect("the other series");
    if capacity.is_some() {
        series.bounded.store(true, Relaxed);
    }
    let id = NEXT_METER.fetch_add(1, Relaxed);
    let meter = Arc::new(Meter {
        id,
        series,
        capacity,
        depth_of,
        receiver_dropped: AtomicBool::new(false),
        sent: Line::default(),
        received: Line::default(),
    });
    METERS[id as usize % SHARDS]
        .lock()
        .insert(id, meter.clone());
    meter
}

/// One series as the scrape reads it: its labels, the depth and capacity of its live
/// channels summed, and its histograms.
#[derive(Clone, Debug)]
pub struct ChanSeriesNow {
    /// The series.
    pub series: Arc<ChanSeries>,
    /// Messages queued now in its live channels.
    pub depth: u64,
    /// Capacity of its live bounded channels, if it ever had one (0 with none alive).
    pub capacity: Option<u64>,
}

impl std::fmt::Debug for ChanSeries {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChanSeries")
            .field("name", &self.name)
            .field("kind", &self.kind)
            .finish_non_exhaustive()
    }
}

/// Every channel series now, in creation order: one pass over the series, one over the live
/// meters (shard by shard, each lock held only to read its meters' counts).
pub fn series_now() -> Vec<ChanSeriesNow> {
    let mut out: Vec<ChanSeriesNow> = ALL_SERIES
        .lock()
        .iter()
        .map(|s| ChanSeriesNow {
            series: s.clone(),
            depth: 0,
            capacity: s.bounded().then_some(0),
        })
        .collect();
    for shard in METERS.iter() {
        for m in shard.lock().values() {
            // A series made after the list was read has no line this time.
            let Some(now) = out.get_mut(m.series.index) else {
                continue;
            };
            now.depth = now.depth.saturating_add(m.depth());
            if let Some(c) = m.capacity {
                let total = now.capacity.get_or_insert(0);
                *total = total.saturating_add(c as u64);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn now(name: &str) -> Option<ChanSeriesNow> {
        series_now().into_iter().find(|s| &*s.series.name == name)
    }

    #[test]
    fn depth_is_sent_minus_received_at_most_the_capacity_and_0_once_the_receiver_is_gone() {
        let chan = Channel::metered("mpsc", Some("meter/depth"), Location::caller(), Some(3));
        chan.sent(2);
        assert_eq!(
            now("meter/depth").map(|s| (s.depth, s.capacity)),
            Some((2, Some(3)))
        );
        chan.received(2);
        chan.sent(5);
        // More than the capacity only while counts race: never shown.
        assert_eq!(now("meter/depth").map(|s| s.depth), Some(3));
        chan.receiver_dropped();
        assert_eq!(now("meter/depth").map(|s| s.depth), Some(0));
        // Dropped: the series stays (its histograms are counters), its gauges at 0.
        drop(chan);
        assert_eq!(
            now("meter/depth").map(|s| (s.depth, s.capacity)),
            Some((0, Some(0)))
        );
    }

    #[test]
    fn channels_of_one_name_share_a_series_and_unmetered_ones_count_nothing() {
        let a = Channel::metered("mpsc", Some("meter/shared"), Location::caller(), Some(2));
        let b = Channel::metered("mpsc", Some("meter/shared"), Location::caller(), None);
        a.sent(1);
        b.sent(4);
        let s = now("meter/shared").expect("listed");
        assert_eq!((s.depth, s.capacity), (5, Some(2)));
        assert_eq!(
            series_now()
                .iter()
                .filter(|s| &*s.series.name == "meter/shared")
                .count(),
            1
        );
        let plain = Channel::new("mpsc", Some("meter/plain"), Location::caller(), Some(1));
        plain.sent(1);
        assert!(now("meter/plain").is_none());
    }

    #[test]
    fn a_broadcast_depth_follows_its_slowest_live_reader_and_dead_readers_are_swept() {
        let chan = Channel::metered_broadcast(Some("meter/broadcast"), Location::caller(), 3);
        assert_eq!(
            now("meter/broadcast").map(|s| (s.depth, s.capacity)),
            Some((0, Some(3)))
        );
        let a = chan.reader();
        chan.sent(5);
        let b = chan.reader();
        // `b` came after the five: `a` is the slowest, held to the rounded capacity.
        assert_eq!(now("meter/broadcast").map(|s| s.depth), Some(4));
        a.received(4);
        chan.sent(1);
        assert_eq!(now("meter/broadcast").map(|s| s.depth), Some(2));
        chan.unsent(1);
        assert_eq!(now("meter/broadcast").map(|s| s.depth), Some(1));
        drop(a);
        assert_eq!(now("meter/broadcast").map(|s| s.depth), Some(0));
        drop(b);
        // A watch channel: capacity 1, nothing queues; other channels' readers count nothing.
        let watch = Channel::metered_watch(Some("meter/watch"), Location::caller());
        watch.sent(3);
        watch.reader().received(1);
        assert_eq!(
            now("meter/watch").map(|s| (s.depth, s.capacity)),
            Some((0, Some(1)))
        );
        assert!(!watch.reader().is_counted());
    }

    #[test]
    fn channels_of_many_receivers_keep_no_owner() {
        for chan in [
            Channel::metered_broadcast(None, Location::caller(), 1),
            Channel::metered_watch(None, Location::caller()),
        ] {
            chan.note_receiver();
            assert_eq!(chan.owner.load(Relaxed), 0, "{}", chan.kind());
        }
        let mpsc = Channel::new("mpsc", None, Location::caller(), Some(1));
        mpsc.note_receiver();
        assert_ne!(mpsc.owner.load(Relaxed), 0);
    }

    #[test]
    fn an_ended_wait_is_counted_in_its_histogram_completed_or_not() {
        let chan = Channel::metered("mpsc", Some("meter/waits"), Location::caller(), Some(1));
        for op in [ChanOp::Send, ChanOp::Send, ChanOp::Recv] {
            let seq = super::super::begin(chan.clone(), op, Location::caller(), false, 1);
            <super::super::ChanWaits as crate::state::wait_table::Book>::end(seq);
        }
        let s = now("meter/waits").expect("listed");
        assert_eq!(s.series.send_wait().count(), 2);
        assert_eq!(s.series.recv_wait().count(), 1);
        // A wait of a channel that is not metered is counted nowhere.
        let plain = Arc::new(Channel::new("mpsc", None, Location::caller(), Some(1)));
        <super::super::ChanWaits as crate::state::wait_table::Book>::end(super::super::begin(
            plain,
            ChanOp::Send,
            Location::caller(),
            false,
            1,
        ));
    }
}
