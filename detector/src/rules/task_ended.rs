//! `leaked-permit` for permits and guards that outlive the task that took them.
//!
//! Where tokio tells lockscope that a task has ended (`on_task_terminate`, in runtimes built
//! with `--cfg tokio_unstable` and instrumented by `#[lockscope::test]` or
//! `lockscope::runtime::instrument`), a permit or guard its task took and that is still held
//! afterwards has been moved somewhere that outlives the work (a response object, a
//! collection): the linkerd concurrency-limit pattern. It is reported once it has outlived
//! its task by the leak threshold, or in tests (where the leak threshold is the end of the
//! test) by the stuck threshold, so that a permit handed on for a moment is not a leak.

use std::collections::{HashMap, HashSet};

use crate::analysis::snapshot::State;
use crate::model::finding::{Finding, FindingKind};
use crate::rules::{Rule, Verdict, holder, noun, prim_ref};
use crate::state::held::HoldView;
use crate::state::prim::site_string;

/// The rule, with the keys of the findings that still hold.
#[derive(Default)]
pub(crate) struct TaskEnded {
    pub(crate) active: HashSet<String>,
}

impl Rule for TaskEnded {
    fn kind(&self) -> FindingKind {
        FindingKind::LeakedPermit
    }

    fn check(&mut self, state: &State) -> Vec<Verdict> {
        self.active.clear();
        if !crate::state::ended::any() {
            return Vec::new();
        }
        // A task that ended can take nothing more: those that hold nothing now are forgotten.
        let holding: HashSet<u64> = state
            .prims
            .iter()
            .flat_map(|p| p.holds.iter().map(|h| h.actor.as_u64()))
            .collect();
        let ended: HashMap<u64, u64> = crate::state::ended::holding(&holding);
        let mut out = Vec::new();
        for p in &state.prims {
            // An initialiser's hold ends with its future, which its task's end drops.
            if p.prim.kind().is_once_cell() {
                continue;
            }
            let mut outlived: Vec<(&HoldView, u64)> = Vec::new();
            for h in &p.holds {
                let Some(&end) = ended.get(&h.actor.as_u64()) else {
                    continue;
                };
                let cfg = crate::base::config::for_scopes(&[h.scope, p.prim.scope()]);
                let grace = cfg.leak.unwrap_or(cfg.stuck).as_nanos() as u64;
                let since_end = state.now_coarse.saturating_sub(end);
                if since_end >= grace {
                    outlived.push((h, since_end));
                }
            }
            let Some(&(first, since_end)) = outlived.first() else {
                continue;
            };
            let r = prim_ref(&p.prim);
            let key = format!("task-ended|{}|{}", r.id, site_string(first.site));
            let permits: u32 = outlived.iter().map(|(h, _)| h.permits).sum();
            let what = if p.prim.kind() == crate::state::prim::PrimKind::Semaphore {
                format!("{permits} permit{}", if permits == 1 { "" } else { "s" })
            } else {
                "a guard".to_owned()
            };
            let mut f = Finding::new(
                FindingKind::LeakedPermit,
                key.clone(),
                format!(
                    "{what} of {} acquired at {} by {} outlived that task by {} ms: the task has ended, the permit is still held",
                    noun(&r),
                    site_string(first.site),
                    first.actor.describe(),
                    since_end / 1_000_000
                ),
            );
            for (h, _) in &outlived {
                f.actors
                    .push(holder(&r, h, state.now_coarse.saturating_sub(h.since)));
                f.add_scope(h.scope);
            }
            f.details.push(
                "it was moved out of its task (an owned guard/permit): look for a struct, a response or a collection that keeps it".into(),
            );
            f.add_scope(p.prim.scope());
            f.add_prim(r);
            f.fix = "release the permit when the work it limits is done: keep it in the task doing the work, or drop it explicitly before handing the result on".into();
            self.active
                .insert(format!("{}:{key}", FindingKind::LeakedPermit));
            out.push(Verdict::Found(Box::new(f)));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::TaskEnded;
    use crate::model::finding::FindingKind;
    use crate::rules::Rule;
    use crate::rules::testkit::{MS, Scope, at, found, hold, state, task};
    use crate::state::ended::ended;
    use crate::state::held::Mode;
    use crate::state::prim::{PrimKind, site_string};

    /// Permits and guards still held after their task ended are reported once they outlived
    /// it by the stuck threshold (tests) or the leak threshold; the living task's are not.
    /// (The only test of the process-wide list of ended tasks.)
    #[test]
    fn a_hold_outliving_its_task_is_a_leaked_permit() {
        let scope = Scope::arm(100, 10_000, None);
        let sem = scope.prim("ended/sem", PrimKind::Semaphore, 5);
        let m = scope.prim("ended/mutex", PrimKind::Mutex, 1);
        ended(task(700_001), 100 * MS);
        ended(task(700_002), 100 * MS);
        let h = hold(&sem, task(700_001), Mode::Permits, 2, 50 * MS);
        let site = site_string(h.site);
        let prims = || {
            vec![
                at(
                    &sem,
                    vec![h, hold(&sem, task(700_003), Mode::Permits, 1, 0)],
                    vec![],
                ),
                at(
                    &m,
                    vec![hold(&m, task(700_002), Mode::Exclusive, 1, 60 * MS)],
                    vec![],
                ),
            ]
        };
        let mut rule = TaskEnded::default();
        assert_eq!(rule.kind(), FindingKind::LeakedPermit);
        assert!(rule.check(&state(prims(), &scope, 199 * MS)).is_empty());
        let f = found(rule.check(&state(prims(), &scope, 250 * MS)));
        assert_eq!(f.len(), 2);
        assert_eq!(
            f[0].summary,
            format!(
                "2 permits of semaphore \"ended/sem\" acquired at {site} by task 700001 outlived that task by 150 ms: the task has ended, the permit is still held"
            )
        );
        assert_eq!(f[0].actors.len(), 1);
        assert_eq!(f[0].actors[0].holds[0].for_ms, 200);
        assert!(
            f[1].summary.starts_with("a guard of mutex \"ended/mutex\""),
            "{}",
            f[1].summary
        );
        assert_eq!(
            f[0].details,
            [
                "it was moved out of its task (an owned guard/permit): look for a struct, a response or a collection that keeps it"
            ]
        );
        assert!(
            f[0].fix
                .starts_with("release the permit when the work it limits is done")
        );
        assert_eq!(rule.active.len(), 2);
        // Released: forgotten (nothing held by them any more).
        let s = state(
            vec![at(&sem, vec![], vec![]), at(&m, vec![], vec![])],
            &scope,
            300 * MS,
        );
        assert!(rule.check(&s).is_empty());
        assert!(rule.check(&state(prims(), &scope, 400 * MS)).is_empty());
        // With a leak threshold, that is the grace instead; one permit is "1 permit".
        let leak = Scope::arm(100, 10_000, Some(500));
        let one = leak.prim("ended/leak", PrimKind::Semaphore, 5);
        ended(task(700_004), 0);
        let prims = || {
            vec![at(
                &one,
                vec![hold(&one, task(700_004), Mode::Permits, 1, 0)],
                vec![],
            )]
        };
        assert!(rule.check(&state(prims(), &leak, 499 * MS)).is_empty());
        let f = found(rule.check(&state(prims(), &leak, 500 * MS)));
        assert!(
            f[0].summary
                .starts_with("1 permit of semaphore \"ended/leak\""),
            "{}",
            f[0].summary
        );
    }
}
