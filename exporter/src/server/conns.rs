//! The open connections, idle or busy, so that the accept loop can close the idlest one to
//! make room instead of leaving a new client in the kernel's queue.
//!
//! A connection is *busy* while a request of it is being answered (from its parsed head to
//! its response), *idle* otherwise: before its first byte, while a head trickles in, and
//! between kept-alive requests. Idle connections cost the server nothing but a file
//! descriptor and a parked task, so the bound that matters is on busy ones; idle ones are
//! evicted, the longest idle first, whenever the table is full.
//!
//! | event | entry | `idle` count |
//! |---|---|---|
//! | [`Conns::open`] | inserted idle, idle since now | +1 |
//! | [`Conn::busy`] | idle since → none | −1 |
//! | the [`Busy`] guard drops | none → idle since now | +1 |
//! | [`Conns::evict_idlest`] picks it (idle the longest, for long enough) | removed, its task told to close | −1 |
//! | [`Conn`] drops (its task ends) | removed if still there | −1 if it was idle |

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use tokio::sync::Notify;
use tokio::time::Instant;

/// One connection's row.
struct Entry {
    /// `None` while a request is being answered.
    idle_since: Option<Instant>,
    /// Told once when the connection is evicted.
    evict: Arc<Notify>,
}

#[derive(Default)]
struct Table {
    next_id: u64,
    open: HashMap<u64, Entry>,
    /// Entries whose `idle_since` is `Some`.
    idle: usize,
}

/// The table of open connections, shared by the accept loop and the connection tasks.
///
/// A plain `std` mutex (the exporter must not observe itself: its own locks would show in every scrape and could
/// deadlock with the books it reads), held for a few
/// hash-map operations at a time, never across an `await`.
#[derive(Default)]
pub(super) struct Conns {
    table: Mutex<Table>,
    /// Told whenever a connection goes idle or closes: room may have appeared.
    room: Notify,
}

impl Conns {
    fn lock(&self) -> MutexGuard<'_, Table> {
        // A panic while holding this lock leaves the table consistent (every operation is a
        // few infallible map updates), so a poisoned lock is used as is.
        self.table
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Connections open (evicted ones not counted, even while they finish closing).
    pub(super) fn len(&self) -> usize {
        self.lock().open.len()
    }

    /// Registers a new, idle connection.
    pub(super) fn open(self: &Arc<Self>) -> Conn {
        let evict = Arc::new(Notify::new());
        let mut t = self.lock();
        let id = t.next_id;
        t.next_id += 1;
        t.open.insert(
            id,
            Entry {
                idle_since: Some(Instant::now()),
                evict: evict.clone(),
            },
        );
        t.idle += 1;
        drop(t);
        Conn {
            id,
            conns: self.clone(),
            evict,
        }
    }

    /// Removes the connection idle the longest, if it has been idle for `at_least`, and tells
    /// it to close.
    pub(super) fn evict_idlest(&self, at_least: Duration) -> Evict {
        let mut t = self.lock();
        let victim = t
            .open
            .iter()
            .filter_map(|(id, e)| e.idle_since.map(|since| (since, *id)))
            .min();
        let Some((since, id)) = victim else {
            return Evict::NoneIdle;
        };
        let ripe = since + at_least;
        if ripe > Instant::now() {
            return Evict::NotBefore(ripe);
        }
        // UNWRAP: `id` was just found in the map under the same lock.
        let entry = t.open.remove(&id).expect("the victim is in the table");
        t.idle -= 1;
        drop(t);
        entry.evict.notify_one();
        Evict::Evicted
    }

    /// Resolves after a connection went idle or closed since the last call (or at once if that
    /// happened before and nobody waited).
    pub(super) async fn room_maybe(&self) {
        self.room.notified().await;
    }
}

/// What [`Conns::evict_idlest`] did.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Evict {
    /// One connection was removed and told to close.
    Evicted,
    /// The idlest connection has not been idle long enough; it will be at this instant.
    NotBefore(Instant),
    /// Every connection is answering a request.
    NoneIdle,
}

/// A connection's registration; dropping it removes the row.
pub(super) struct Conn {
    id: u64,
    conns: Arc<Conns>,
    evict: Arc<Notify>,
}

impl Conn {
    /// Resolves once the accept loop evicted this connection.
    pub(super) async fn evicted(&self) {
        self.evict.notified().await;
    }

    /// Marks the connection busy until the returned guard drops.
    pub(super) fn busy(&self) -> Busy {
        let mut t = self.conns.lock();
        let Table { open, idle, .. } = &mut *t;
        if let Some(e) = open.get_mut(&self.id)
            && e.idle_since.take().is_some()
        {
            *idle -= 1;
        }
        Busy {
            id: self.id,
            conns: self.conns.clone(),
        }
    }
}

impl Drop for Conn {
    fn drop(&mut self) {
        let mut t = self.conns.lock();
        if let Some(e) = t.open.remove(&self.id)
            && e.idle_since.is_some()
        {
            t.idle -= 1;
        }
        drop(t);
        self.conns.room.notify_one();
    }
}

/// A request being answered; dropping it marks its connection idle again.
pub(super) struct Busy {
    id: u64,
    conns: Arc<Conns>,
}

impl Drop for Busy {
    fn drop(&mut self) {
        let mut t = self.conns.lock();
        let Table { open, idle, .. } = &mut *t;
        if let Some(e) = open.get_mut(&self.id)
            && e.idle_since.is_none()
        {
            e.idle_since = Some(Instant::now());
            *idle += 1;
        }
        drop(t);
        self.conns.room.notify_one();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SEC: Duration = Duration::from_secs(1);

    #[tokio::test(start_paused = true)]
    async fn the_idlest_connection_is_evicted_first_and_busy_ones_never() {
        let conns = Arc::new(Conns::default());
        let a = conns.open();
        tokio::time::advance(SEC).await;
        let b = conns.open();
        tokio::time::advance(SEC).await;
        let c = conns.open();
        assert_eq!(conns.len(), 3);
        // `a` is the oldest idle, but busy: `b` goes first.
        let busy_a = a.busy();
        assert_eq!(conns.evict_idlest(Duration::ZERO), Evict::Evicted);
        assert_eq!(conns.len(), 2);
        tokio::time::timeout(Duration::from_millis(1), b.evicted())
            .await
            .expect("b was told to close");
        // `a` idle again, now since later than `c`: `c` goes next, once idle for 2 s.
        tokio::time::advance(SEC).await;
        drop(busy_a);
        let c_ripe = Instant::now() + SEC;
        assert_eq!(conns.evict_idlest(2 * SEC), Evict::NotBefore(c_ripe));
        tokio::time::advance(SEC).await;
        assert_eq!(conns.evict_idlest(2 * SEC), Evict::Evicted);
        tokio::time::timeout(Duration::from_millis(1), c.evicted())
            .await
            .expect("c was told to close");
        let busy_a = a.busy();
        assert_eq!(
            conns.evict_idlest(Duration::ZERO),
            Evict::NoneIdle,
            "a busy connection is never evicted"
        );
        drop(busy_a);
        drop((b, c));
        assert_eq!(conns.len(), 1);
        drop(a);
        assert_eq!(conns.len(), 0);
        assert_eq!(conns.evict_idlest(Duration::ZERO), Evict::NoneIdle);
    }
}
