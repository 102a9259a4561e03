//! The handle of a wait kept in a side table (a join, a channel operation): it holds the
//! wait's number, and ends the wait in its table when dropped, so that a future dropped while
//! it waits leaves no ghost wait behind.

use std::fmt;
use std::marker::PhantomData;
use std::sync::atomic::{AtomicU64, Ordering};

pub use crate::state::wait_table::Book;

/// A wait in progress in the books of `B`; dropping it (or [`end`](Recorded::end)) ends it.
/// [`ChanWait`](super::ChanWait) and [`JoinWait`](super::JoinWait) are the two kinds.
#[must_use = "the wait ends in the books when this is dropped"]
pub struct Recorded<B: Book> {
    /// Its number in `B`; 0: nothing recorded (the detector is off, or it ended).
    seq: AtomicU64,
    book: PhantomData<fn() -> B>,
}

impl<B: Book> Recorded<B> {
    /// A wait that recorded nothing.
    pub const fn none() -> Self {
        Recorded {
            seq: AtomicU64::new(0),
            book: PhantomData,
        }
    }

    /// The wait `begin` enters in the books and numbers, or nothing when the detector is
    /// off (`begin` is not called then).
    #[inline]
    pub(crate) fn begin(begin: impl FnOnce() -> u64) -> Self {
        if !super::enabled() {
            return Self::none();
        }
        Recorded {
            seq: AtomicU64::new(begin()),
            book: PhantomData,
        }
    }

    /// Whether a wait is recorded now.
    #[inline]
    pub fn is_recorded(&self) -> bool {
        self.seq.load(Ordering::Relaxed) != 0
    }

    /// Ends the wait in the books now (from a shared reference too: an abort through a join
    /// handle).
    #[inline]
    pub fn end(&self) {
        // A load first: most waits end with nothing recorded (they never had to wait, or the
        // detector is off), and a swap is a locked instruction.
        if self.is_recorded() {
            let seq = self.seq.swap(0, Ordering::Relaxed);
            if seq != 0 {
                B::end(seq);
            }
        }
    }
}

impl<B: Book> Drop for Recorded<B> {
    // Inline: every send, receive or join that completes drops one (across crates, a
    // function not marked so is a call), and most have nothing recorded.
    #[inline]
    fn drop(&mut self) {
        self.end();
    }
}

impl<B: Book> fmt::Debug for Recorded<B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Recorded")
            .field("seq", &self.seq.load(Ordering::Relaxed))
            .finish()
    }
}
