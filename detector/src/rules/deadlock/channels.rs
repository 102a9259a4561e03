//! Channels in the deadlock rule: a send waiting for capacity in a bounded channel waits for
//! the receiver's owner (the actor that last used the receiver), a precise edge the model
//! draws as a stand-in like a join's (see [`waitfor::join_prim`]): the owner "holds" it, the
//! senders wait for it, and they are granted once the owner can run. A receive is an open
//! edge: never in the model.

use std::collections::BTreeMap;

use crate::analysis::graph::waitfor::{self, MPrim};
use crate::analysis::snapshot::State;
use crate::base::names;
use crate::model::finding::{Access, PrimRef};
use crate::state::actor::ActorId;
use crate::state::channels::{ChanOp, ChanWaitView};
use crate::state::prim;

use super::joins::{latest_activity, moved_on};

/// Ids of the model's channel stand-ins count down from here: far from primitives' ids (which
/// count up from 1) and from joins' (which count down from `u64::MAX`).
const FIRST_ID: u64 = u64::MAX - (1 << 40);

/// The sends of `state` that wait for exactly one known actor, with whether their waiter may
/// leave them (see `joins::live`). A send is left out, as one that may end by itself, when
/// its channel is unbounded (it never waits), when the receiver is closed or dropped (the
/// send fails at once), when permits reserved by others are out (their holders may give
/// capacity back), when nobody has used the receiver yet (its owner is not known), and when
/// the last user of the receiver is the sender itself (the receiver may have been handed to
/// a task that has not used it yet): a miss, never a false deadlock.
pub(super) fn live(state: &State) -> Vec<(&ChanWaitView, ActorId, bool)> {
    // Most analyses see no channel wait: skip the walk over every hold and waiter.
    if state.chan_waits.is_empty() {
        return Vec::new();
    }
    let latest = latest_activity(state);
    state
        .chan_waits
        .iter()
        .filter(|c| {
            c.op == ChanOp::Send
                && c.chan.capacity().is_some()
                && !c.receiver_gone
                && c.permits_out == 0
        })
        .filter_map(|c| {
            let owner = c.owner.filter(|o| *o != c.waiter)?;
            Some((c, owner, moved_on(&latest, c.waiter, c.since_ns)))
        })
        .collect()
}

/// The model's stand-ins for the sends of `state`: one per receiver owner, held by it,
/// waited for by the senders blocked on its channels.
pub(super) fn model(state: &State) -> Vec<MPrim> {
    let mut by_owner: BTreeMap<u64, Vec<(u64, Option<u64>, bool)>> = BTreeMap::new();
    for (c, owner, moved_on) in live(state) {
        by_owner.entry(owner.as_u64()).or_default().push((
            c.waiter.as_u64(),
            c.blocking.then_some(c.thread),
            moved_on,
        ));
    }
    by_owner
        .into_iter()
        .enumerate()
        .map(|(i, (owner, senders))| {
            let pinned = ActorId::from_u64(owner).and_then(ActorId::thread_seq);
            let mut p = waitfor::join_prim(
                FIRST_ID - i as u64,
                owner,
                pinned,
                senders.iter().map(|(w, b, _)| (*w, *b)),
            );
            for (w, (_, _, moved_on)) in p.waiters.iter_mut().zip(&senders) {
                w.timed = *moved_on;
            }
            p
        })
        .collect()
}

/// The fix of a deadlock through a channel.
pub(super) const FIX: &str = "do not hold a lock across `send().await` into a bounded channel whose consumer needs it: send after releasing it, or use `try_send`/`reserve` first";

/// The summary of a deadlock through channels: `who` (`n` actors) wait for the primitives
/// `locks` (nouns) and the channels `chans` (nouns).
pub(super) fn summary(who: &str, n: usize, locks: &[String], chans: &[String]) -> String {
    let chans = chans.join(", ");
    match (n, locks.is_empty()) {
        (1, _) => format!(
            "{who} waits to send to {chans}, full, whose receiver only it drains, and can never proceed"
        ),
        (_, true) => format!(
            "{who} can never proceed: each waits to send to {chans}, full, whose receiver another of them owns"
        ),
        (_, false) => format!(
            "{who} can never proceed: each waits for {} held by another of them, or to send to {chans}, full, whose receiver another of them owns",
            locks.join(", ")
        ),
    }
}

/// A send as a report's wait: kind `channel`, named after its channel, at the send's site.
pub(super) fn access(c: &ChanWaitView, for_ns: u64) -> Access {
    Access {
        primitive: PrimRef {
            id: 0,
            name: c.chan.name().to_owned(),
            kind: names::KIND_CHANNEL,
            created_at: prim::site_string(c.chan.created_at()),
            instance: 0,
        },
        mode: "send",
        permits: 1,
        site: prim::site_string(c.site),
        for_ms: for_ns / 1_000_000,
    }
}

#[cfg(test)]
mod tests {
    use crate::rules::Rule;
    use crate::rules::deadlock::Deadlock;
    use crate::rules::testkit::{
        MS, Scope, at, behind_a_lock_cycle, deadlocks_confirmed, hold, send, state, task, wait,
    };
    use crate::state::channels::ChanOp;
    use crate::state::held::Mode;
    use crate::state::prim::PrimKind;

    /// Task 1 holds `m` and waits to send to a full channel whose receiver task 2 last used;
    /// task 2 waits for `m`: a deadlock naming the channel, with the channel's fix.
    #[test]
    fn a_lock_held_across_a_send_into_a_full_channel_its_consumer_needs_is_a_deadlock() {
        let scope = Scope::arm(10_000, 10_000, None);
        let m = scope.prim("dlc/m", PrimKind::Mutex, 1);
        let books = |hold_since: u64| {
            state(
                vec![at(
                    &m,
                    vec![hold(&m, task(1), Mode::Exclusive, 1, hold_since)],
                    vec![wait(task(2), 1, Mode::Exclusive, 1, 30 * MS)],
                )],
                &scope,
                1_000 * MS,
            )
        };
        let mut s = books(10 * MS);
        s.chan_waits = vec![send(5, task(1), Some(task(2)), 20 * MS)];
        let f = deadlocks_confirmed(&s);
        assert_eq!(f.len(), 1, "{f:#?}");
        let chan = s.chan_waits[0].chan.noun();
        assert_eq!(
            f[0].summary,
            format!(
                "2 tasks can never proceed: each waits for mutex \"dlc/m\" held by another of them, or to send to {chan}, full, whose receiver another of them owns"
            )
        );
        assert!(f[0].key().ends_with(",c5"), "{}", f[0].key());
        assert_eq!(f[0].fix, super::FIX);
        let text = f[0].to_string();
        assert!(text.contains("waits for channel \"jobs\""), "{text}");

        // Precision: the receiver closed, permits out, its owner unknown or the sender
        // itself, the sender active since (a `select!`), a receive beside the send, or a
        // consumer that waits for nothing: no deadlock.
        let mut variants: Vec<crate::analysis::snapshot::State> = Vec::new();
        let mut gone = books(10 * MS);
        gone.chan_waits = vec![send(6, task(1), Some(task(2)), 20 * MS)];
        gone.chan_waits[0].receiver_gone = true;
        variants.push(gone);
        let mut permits = books(10 * MS);
        permits.chan_waits = vec![send(7, task(1), Some(task(2)), 20 * MS)];
        permits.chan_waits[0].permits_out = 1;
        variants.push(permits);
        for owner in [None, Some(task(1))] {
            let mut s = books(10 * MS);
            s.chan_waits = vec![send(8, task(1), owner, 20 * MS)];
            variants.push(s);
        }
        let mut later = books(40 * MS);
        later.chan_waits = vec![send(9, task(1), Some(task(2)), 20 * MS)];
        variants.push(later);
        let mut recv = books(10 * MS);
        recv.chan_waits = vec![send(10, task(1), Some(task(2)), 20 * MS)];
        let mut r = send(11, task(1), None, 25 * MS);
        r.op = ChanOp::Recv;
        recv.chan_waits.push(r);
        variants.push(recv);
        for s in &variants {
            assert!(deadlocks_confirmed(s).is_empty(), "{:?}", s.chan_waits);
        }
        let mut free = state(
            vec![at(
                &m,
                vec![hold(&m, task(1), Mode::Exclusive, 1, 10 * MS)],
                vec![],
            )],
            &scope,
            1_000 * MS,
        );
        free.chan_waits = vec![send(12, task(1), Some(task(2)), 20 * MS)];
        assert!(Deadlock::default().check(&free).is_empty());
    }

    /// A task sending into a full channel whose receiver one of a lock cycle's tasks owns is
    /// stuck behind the cycle, but no part of it: counted, the send told as its own wait
    /// (not the knot's), and the channel not named among what the knot waits for (nor is the
    /// fix the channel's). A sender that ran since its send began (it took a hold since: a
    /// `select!`) may leave the send: it is not even behind.
    #[test]
    fn a_send_behind_a_lock_cycle_is_counted_not_named() {
        let f = behind_a_lock_cycle("dlc", 'c', |s, seq| {
            s.chan_waits = vec![send(seq, task(3), Some(task(1)), 20 * MS)];
        });
        let kinds = |r: &crate::model::finding::ActorReport| -> Vec<&str> {
            r.waits.iter().map(|w| w.primitive.kind).collect()
        };
        assert_eq!(kinds(&f.behind[0]), ["channel"]);
        assert_eq!(f.behind[0].waits[0].for_ms, 980);
        for knot in &f.actors {
            assert_eq!(kinds(knot), ["mutex"], "{}", knot.name);
        }
    }

    /// The model's stand-ins for joins (one per joined task) and for sends (one per receiver
    /// owner) count down from far above the primitives' ids, clear of each other.
    #[test]
    fn the_stand_ins_of_joins_and_sends_are_numbered_apart() {
        use crate::rules::testkit::join;
        let scope = Scope::arm(10_000, 10_000, None);
        let m = scope.prim("dlc/ids", PrimKind::Mutex, 1);
        let mut s = state(
            vec![at(
                &m,
                vec![hold(&m, task(1), Mode::Exclusive, 1, 10 * MS)],
                vec![],
            )],
            &scope,
            1_000 * MS,
        );
        s.joins = vec![join(1, task(1), vec![task(2), task(5)], 20 * MS)];
        s.chan_waits = vec![
            send(2, task(1), Some(task(3)), 20 * MS),
            send(3, task(1), Some(task(4)), 20 * MS),
        ];
        let ids: Vec<u64> = crate::rules::deadlock::model(&s)
            .iter()
            .map(|p| p.id)
            .collect();
        assert_eq!(ids.len(), 5, "{ids:?}");
        let (joins, chans) = (&ids[1..3], &ids[3..]);
        assert_eq!(ids[0], m.id().0);
        assert_eq!(joins, [u64::MAX, u64::MAX - 1]);
        assert!(chans[0] > chans[1] && chans[1] > u64::MAX / 2, "{ids:?}");
        assert!(!chans.iter().any(|c| joins.contains(c)), "{ids:?}");
    }
}
