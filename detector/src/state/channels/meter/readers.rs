//! The receivers of a metered `broadcast` channel, each with its own count of what it took,
//! so that the scrape can find the slowest (see the parent module's "Depth of a broadcast or
//! watch channel").

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};

use super::Line;

/// One receiver's count of the values it took (or skipped), alone on its cache line: the
/// receiver writes it, the scrape reads it.
struct ReaderLine {
    taken: Line<AtomicU64>,
}

/// The live receivers of one channel, as weak references to their counts: a receiver dropped
/// is no longer counted, and its entry is swept later.
///
/// std's lock, not parking_lot's: a channel's handles are `RefUnwindSafe` (as tokio's are),
/// and so must be the record they share, which holds this. Nothing here panics while it is
/// held, so a poisoned lock is taken as it is.
#[derive(Default)]
pub(super) struct Readers(Mutex<Vec<Weak<ReaderLine>>>);

impl Readers {
    fn lock(&self) -> MutexGuard<'_, Vec<Weak<ReaderLine>>> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A new receiver, having taken `taken` values already.
    pub(super) fn add(&self, taken: u64) -> ChannelReader {
        let line = Arc::new(ReaderLine {
            taken: Line(AtomicU64::new(taken)),
        });
        let mut readers = self.lock();
        // Dropped receivers leave dead entries: swept when the list would grow, so that it
        // stays within twice the live receivers.
        if readers.len() == readers.capacity() {
            readers.retain(|r| r.strong_count() > 0);
        }
        readers.push(Arc::downgrade(&line));
        ChannelReader { line: Some(line) }
    }

    /// What the live receiver that took the fewest values took; `None` with none alive.
    pub(super) fn fewest_taken(&self) -> Option<u64> {
        self.lock()
            .iter()
            .filter_map(Weak::upgrade)
            .map(|r| r.taken.0.load(Relaxed))
            .min()
    }
}

/// One receiver of a metered `broadcast` channel, for the channel's depth: what it took, on
/// a cache line only it writes. Made by [`Channel::reader`](crate::runtime::hooks::Channel::reader)
/// when the receiver is (a subscription, a resubscription), dropped with it; does nothing for
/// a channel that is not metered.
///
/// ```
/// # use std::panic::Location;
/// use lockscope_detector::__private::hooks::Channel;
///
/// let chan = Channel::metered_broadcast(Some("doc/ticks"), Location::caller(), 8);
/// let (fast, slow) = (chan.reader(), chan.reader());
/// chan.sent(3);
/// fast.received(3);
/// slow.received(1);
/// let m = lockscope_detector::metrics();
/// let series = m.channels.iter().find(|c| &*c.channel == "doc/ticks").unwrap();
/// assert_eq!((series.depth, series.capacity), (2, Some(8)));
/// ```
#[derive(Default)]
pub struct ChannelReader {
    line: Option<Arc<ReaderLine>>,
}

impl ChannelReader {
    /// The receiver took `n` values (a value received: 1; `Lagged(n)`: the `n` it skipped).
    /// Only its receiver calls this (`recv` takes it by `&mut`): a load and a store on its own
    /// line.
    #[inline]
    pub fn received(&self, n: u64) {
        if let Some(l) = &self.line {
            let t = &l.taken.0;
            t.store(t.load(Relaxed).wrapping_add(n), Relaxed);
        }
    }

    /// Whether it counts anything (a receiver of a metered `broadcast` channel).
    pub fn is_counted(&self) -> bool {
        self.line.is_some()
    }
}

impl std::fmt::Debug for ChannelReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChannelReader")
            .field(
                "taken",
                &self.line.as_ref().map(|l| l.taken.0.load(Relaxed)),
            )
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fewest_taken_is_of_the_live_receivers_and_dead_ones_are_swept() {
        let readers = Readers::default();
        assert_eq!(readers.fewest_taken(), None);
        let (a, b) = (readers.add(2), readers.add(5));
        a.received(4);
        assert_eq!(readers.fewest_taken(), Some(5));
        drop(b);
        assert_eq!(readers.fewest_taken(), Some(6));
        // Receivers come and go: the list keeps about the live ones, not every one made.
        for _ in 0..100 {
            drop(readers.add(0));
        }
        assert!(readers.lock().len() <= 4, "{}", readers.lock().len());
        assert_eq!(readers.fewest_taken(), Some(6));
        drop(a);
        assert_eq!(readers.fewest_taken(), None);
    }
}
