//! Waits that are not for a primitive, in words: joins (precise: only the joined task or
//! thread can end them) and channel sends and receives (a send into a full bounded channel
//! waits for the receiver's owner; a receive is open: any holder of a sender could end it),
//! and waits on a `Notify` or a `Barrier` (open: who will notify or arrive is not known).
//! The test-timeout dump lists them, and a `stuck-queue` report says what its holders wait
//! for this way (who could release it).

use crate::analysis::snapshot::State;
use crate::state::actor::ActorId;
use crate::state::channels::{ChanOp, ChanWaitView};
use crate::state::joins::JoinView;
use crate::state::prim::site_string;

/// `waits for the join of task 5 (spawned at ...) for 12 ms, at ... (only its end can end
/// the wait)`.
pub(crate) fn join_line(state: &State, j: &JoinView) -> String {
    let age = state.now_precise.saturating_sub(j.since_ns) / 1_000_000;
    let what = match (j.set, j.targets.first()) {
        (Some(set), _) => format!("a join of any of {} task(s) of a {set}", j.targets.len()),
        (None, Some((t, spawned))) => {
            format!(
                "the join of {} (spawned at {})",
                t.describe(),
                site_string(spawned)
            )
        }
        (None, None) => "the join of a thread not started yet".to_owned(),
    };
    format!(
        "waits for {what} for {age} ms, at {} (only its end can end the wait)",
        site_string(j.site)
    )
}

/// `waits to receive from oneshot channel "reply" (created at ...) for 12 ms, at ... (open:
/// any holder of a sender can end it)`, and for a send, who can end it.
pub(crate) fn chan_line(state: &State, c: &ChanWaitView) -> String {
    let age = state.now_precise.saturating_sub(c.since_ns) / 1_000_000;
    let who = match (c.op, c.owner) {
        (ChanOp::Send, _) if c.receiver_gone => "the receiver is gone".to_owned(),
        (ChanOp::Send, Some(o)) => format!("the receiver's owner, {}, can end it", o.describe()),
        (ChanOp::Send, None) => "the receiver has not been used yet".to_owned(),
        (ChanOp::Recv, _) => "open: any holder of a sender can end it".to_owned(),
        (ChanOp::Notified, _) => {
            "open: any task calling notify_one or notify_waiters can end it".to_owned()
        }
        (ChanOp::Barrier, _) => "open: the parties yet to arrive end it".to_owned(),
    };
    // A `Notify` or a `Barrier` is not a channel: it is named by what it is.
    let named = |what: &str| {
        format!(
            "{what} {:?} (created at {})",
            c.chan.name(),
            site_string(c.chan.created_at())
        )
    };
    let noun = match c.op {
        ChanOp::Notified => named("Notify"),
        ChanOp::Barrier => named("Barrier"),
        ChanOp::Send | ChanOp::Recv => c.chan.noun(),
    };
    format!(
        "waits to {} {noun} for {age} ms, at {} ({who})",
        c.verb(),
        site_string(c.site)
    )
}

/// Every such wait of `actor`, in words.
pub(crate) fn of_actor(state: &State, actor: ActorId) -> Vec<String> {
    let joins = state.joins.iter().filter(|j| j.waiter == actor);
    let chans = state.chan_waits.iter().filter(|c| c.waiter == actor);
    joins
        .map(|j| join_line(state, j))
        .chain(chans.map(|c| chan_line(state, c)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::testkit::{MS, Scope, join, send, state, task};

    /// Each wait that is not for a primitive, in its words, with its age; only the actor's own.
    #[test]
    fn joins_and_channel_waits_are_told_in_words() {
        let scope = Scope::arm(10_000, 10_000, None);
        let mut s = state(vec![], &scope, 1_000 * MS);
        let mut set = join(2, task(1), vec![task(3), task(4)], 40 * MS);
        set.set = Some("JoinSet");
        let unknown = join(3, task(1), vec![], 0);
        s.joins = vec![join(1, task(1), vec![task(2)], 10 * MS), set, unknown];
        let j = &s.joins[0];
        let at = site_string(j.site);
        assert_eq!(
            join_line(&s, j),
            format!(
                "waits for the join of task 2 (spawned at {at}) for 990 ms, at {at} (only its end can end the wait)"
            )
        );
        assert!(
            join_line(&s, &s.joins[1])
                .starts_with("waits for a join of any of 2 task(s) of a JoinSet for 960 ms")
        );
        assert!(
            join_line(&s, &s.joins[2])
                .starts_with("waits for the join of a thread not started yet for 1000 ms")
        );

        let sent = send(4, task(1), Some(task(5)), 20 * MS);
        let noun = sent.chan.noun();
        let at = site_string(sent.site);
        assert_eq!(
            chan_line(&s, &sent),
            format!(
                "waits to send to {noun} for 980 ms, at {at} (the receiver's owner, task 5, can end it)"
            )
        );
        let who = |c: &ChanWaitView| {
            let line = chan_line(&s, c);
            line[line.rfind(" (").unwrap() + 2..line.len() - 1].to_owned()
        };
        let mut gone = sent.clone();
        gone.receiver_gone = true;
        assert_eq!(who(&gone), "the receiver is gone");
        let mut unused = sent.clone();
        unused.owner = None;
        assert_eq!(who(&unused), "the receiver has not been used yet");
        let mut recv = gone.clone();
        recv.op = ChanOp::Recv;
        assert_eq!(who(&recv), "open: any holder of a sender can end it");
        assert!(chan_line(&s, &recv).starts_with(&format!("waits to receive from {noun}")));
        let mut notified = sent.clone();
        notified.op = ChanOp::Notified;
        assert!(chan_line(&s, &notified).starts_with("waits to be notified by Notify \"jobs\""));
        assert_eq!(
            who(&notified),
            "open: any task calling notify_one or notify_waiters can end it"
        );
        let mut barrier = sent.clone();
        barrier.op = ChanOp::Barrier;
        assert!(chan_line(&s, &barrier).starts_with("waits to pass Barrier \"jobs\""));
        assert_eq!(who(&barrier), "open: the parties yet to arrive end it");

        s.chan_waits = vec![sent, send(5, task(6), None, 0)];
        let lines = of_actor(&s, task(1));
        assert_eq!(lines.len(), 4, "{lines:#?}");
        assert!(lines[3].starts_with("waits to send to"));
        assert_eq!(of_actor(&s, task(6)).len(), 1);
    }
}
