//! The books of waits that are not a primitive's (joins, channel operations, `Notify`s,
//! `Barrier`s): a record per wait in progress, by a number that is never reused, in a
//! sharded table that a wait enters when it begins and leaves when it ends (on whichever
//! thread that is: a task may move between workers while it waits).
//!
//! A number comes from a block of numbers the thread reserved (one shared add per block, not
//! per wait), a block's numbers share a shard, and the tables hash a number with one
//! multiplication: a join or a channel wait is on the path of a spawn and join, or of a send
//! into a full channel.

use std::cell::Cell;
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::Mutex;

const SHARDS: usize = 16;

/// Numbers a thread reserves at a time.
const BLOCK: u64 = 1024;

/// The next block's first number (0 means "nothing recorded" to the wait handles).
static NEXT: AtomicU64 = AtomicU64::new(1);

thread_local! {
    /// This thread's reserved numbers: the next one and the end of its block.
    static RESERVED: Cell<(u64, u64)> = const { Cell::new((0, 0)) };
}

/// A new wait's number: unique across every table and thread, never 0.
fn next_seq() -> u64 {
    RESERVED
        .try_with(|r| {
            let (next, end) = r.get();
            if next < end {
                r.set((next + 1, end));
                next
            } else {
                let start = NEXT.fetch_add(BLOCK, Ordering::Relaxed);
                r.set((start + 1, start + BLOCK));
                start
            }
        })
        // A thread being torn down (its thread-locals gone): one number of its own.
        .unwrap_or_else(|_| NEXT.fetch_add(1, Ordering::Relaxed))
}

/// Hashes a wait's number with one multiplication (Fibonacci hashing): the numbers are
/// unique, and the high bits the table probes with come out spread.
#[derive(Default)]
pub(crate) struct SeqHasher(u64);

impl Hasher for SeqHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 ^ u64::from(b)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = n.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

/// A table of waits, as a wait's handle (`hooks::Recorded`) ends one of its waits: the
/// books the handle's type names.
pub trait Book {
    /// The wait numbered `seq` ended (returned, completed, or its future was dropped).
    fn end(seq: u64);
}

type Shard<R> = Mutex<HashMap<u64, R, BuildHasherDefault<SeqHasher>>>;

/// Waits in progress of one kind, by number.
pub(crate) struct WaitTable<R> {
    shards: [Shard<R>; SHARDS],
}

impl<R: Clone> WaitTable<R> {
    /// An empty table (for a `static`).
    pub(crate) const fn new() -> WaitTable<R> {
        WaitTable {
            shards: [const { Mutex::new(HashMap::with_hasher(BuildHasherDefault::new())) }; SHARDS],
        }
    }

    /// A number's shard: that of its block, so that a thread's waits stay on one shard (its
    /// lock and table warm in that thread's cache) while threads' blocks spread over all.
    fn shard(&self, seq: u64) -> &Shard<R> {
        &self.shards[(seq / BLOCK) as usize % SHARDS]
    }

    /// Records a wait; returns its number, for [`remove`](Self::remove).
    pub(crate) fn insert(&self, rec: R) -> u64 {
        let seq = next_seq();
        self.shard(seq).lock().insert(seq, rec);
        seq
    }

    /// The wait numbered `seq` ended: its record, if it was still there.
    pub(crate) fn remove(&self, seq: u64) -> Option<R> {
        self.shard(seq).lock().remove(&seq)
    }

    /// A copy of every record, by number (each shard locked in turn, only to copy it).
    pub(crate) fn snapshot(&self) -> Vec<(u64, R)> {
        let mut out = Vec::new();
        for shard in &self.shards {
            out.extend(shard.lock().iter().map(|(s, r)| (*s, r.clone())));
        }
        out.sort_by_key(|(s, _)| *s);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_unique_across_threads_and_records_leave_when_removed() {
        static TABLE: WaitTable<u32> = WaitTable::new();
        let mine: Vec<u64> = (0..3 * BLOCK as u32).map(|i| TABLE.insert(i)).collect();
        let theirs = std::thread::spawn(|| (0..10).map(|i| TABLE.insert(i)).collect::<Vec<_>>())
            .join()
            .unwrap();
        let mut all: Vec<u64> = mine.iter().chain(&theirs).copied().collect();
        all.sort_unstable();
        all.dedup();
        assert_eq!(all.len(), mine.len() + theirs.len());
        assert!(!all.contains(&0));
        let snap = TABLE.snapshot();
        assert_eq!(snap.len(), all.len());
        assert!(snap.windows(2).all(|w| w[0].0 < w[1].0), "sorted by number");
        assert_eq!(TABLE.remove(mine[5]), Some(5));
        assert_eq!(TABLE.remove(mine[5]), None);
        assert_eq!(TABLE.snapshot().len(), all.len() - 1);
    }
}
