//! The SARIF 2.1.0 log of `LOCKSCOPE_REPORT=sarif:<path>`: one run, one result per finding at
//! its call sites, merged with what other writers left in the file (see the parent module).

use std::fs::{self, OpenOptions};
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use super::{FileLock, ROOT, Site, VAR, parse_site, percent_encode, say_once, uri};
use crate::model::finding::{Finding, FindingKind};

/// What happened at each site of `f`, for SARIF's related locations.
fn site_roles(f: &Finding) -> Vec<(String, String)> {
    let mut roles: Vec<(String, String)> = Vec::new();
    let mut add = |site: &str, what: String| {
        if !roles.iter().any(|(s, _)| s == site) {
            roles.push((site.to_owned(), what));
        }
    };
    for a in &f.actors {
        for h in &a.holds {
            add(
                &h.site,
                format!(
                    "{} acquired {} {:?} here",
                    a.name,
                    h.primitive.kind,
                    h.primitive.label()
                ),
            );
        }
        for w in &a.waits {
            add(
                &w.site,
                format!(
                    "{} waits for {} {:?} here",
                    a.name,
                    w.primitive.kind,
                    w.primitive.label()
                ),
            );
        }
    }
    for o in &f.orders {
        add(
            &o.from_site,
            format!(
                "{:?} acquired here, before {:?}",
                o.from.label(),
                o.to.label()
            ),
        );
        add(
            &o.to_site,
            format!(
                "{:?} acquired here while {:?} was held",
                o.to.label(),
                o.from.label()
            ),
        );
    }
    roles
}

/// The base id of relative URIs: the workspace root.
const SRCROOT: &str = "%SRCROOT%";

/// The rule of each kind (ids are the kind strings), in [`FindingKind::ALL`]'s order.
pub(super) fn rules() -> Value {
    let rules: Vec<Value> = FindingKind::ALL
        .iter()
        .map(|k| {
            let (name, short, full) = describe(*k);
            json!({
                "id": k.as_str(),
                "name": name,
                "shortDescription": { "text": short },
                "fullDescription": { "text": full },
                "defaultConfiguration": { "level": "error" },
            })
        })
        .collect();
    Value::Array(rules)
}

fn describe(k: FindingKind) -> (&'static str, &'static str, &'static str) {
    match k {
        FindingKind::Deadlock => (
            "Deadlock",
            "Tasks or threads that can never proceed",
            "A cycle in the wait-for graph, or for semaphores and rwlocks a knot: every holder that could free what is waited for is itself stuck.",
        ),
        FindingKind::NestedAcquire => (
            "NestedAcquire",
            "A primitive acquired, or waited for, by its own holder",
            "A task or thread acquires, or waits for, a primitive it already holds: a certain self-deadlock on a mutex, a latent one on a semaphore or a write-preferring rwlock.",
        ),
        FindingKind::LockOrderInversion => (
            "LockOrderInversion",
            "Primitives taken in inconsistent orders",
            "Primitives taken in inconsistent orders (A then B here, B then A there): a potential deadlock, flagged even when no run deadlocked.",
        ),
        FindingKind::LeakedPermit => (
            "LeakedPermit",
            "Permits that are not coming back",
            "Permits forgotten without being added back, or held past the leak threshold by a guard outliving the task that took it.",
        ),
        FindingKind::StuckQueue => (
            "StuckQueue",
            "Waiters queued while nothing was granted",
            "Waiters queued past the stuck threshold while the primitive made no progress.",
        ),
        FindingKind::Starvation => (
            "Starvation",
            "A waiter bypassed, or a contended primitive held, too long",
            "A waiter waiting past the starvation threshold while others keep acquiring, or a holder keeping a contended primitive past the hold threshold.",
        ),
        FindingKind::BlockingInAsync => (
            "BlockingInAsync",
            "A blocking lock on an async worker",
            "A blocking (parking_lot or std::sync) lock waited for on an async runtime's worker past the worker-stall threshold, or a blocking guard held across an .await.",
        ),
    }
}

/// The fingerprint that tells results apart across processes: the kind and the sites (ids
/// and timings differ from run to run; the code does not).
fn fingerprint(f: &Finding) -> String {
    format!("{}|{}", f.kind, f.sites.join("|"))
}

/// One SARIF result for `f`, failed by `test`.
pub(super) fn sarif_result(f: &Finding, test: &str, root: Option<&Path>) -> Value {
    let roles = site_roles(f);
    let role = |site: &str| {
        roles
            .iter()
            .find(|(s, _)| s == site)
            .map_or_else(|| "call site".to_owned(), |(_, r)| r.clone())
    };
    let sites: Vec<(Site, String)> = f
        .sites
        .iter()
        .filter_map(|s| parse_site(s, root).map(|p| (p, role(s))))
        .collect();
    let location = |site: &Site, message: &str| {
        let mut artifact = json!({ "uri": uri(site) });
        if site.relative && root.is_some_and(Path::is_absolute) {
            artifact["uriBaseId"] = json!(SRCROOT);
        }
        json!({
            "physicalLocation": {
                "artifactLocation": artifact,
                "region": { "startLine": site.line, "startColumn": site.col },
            },
            "message": { "text": message },
        })
    };
    // The primary location: the first site in the workspace (code scanning shows it there).
    let primary = sites.iter().position(|(s, _)| s.relative).unwrap_or(0);
    let mut result = json!({
        "ruleId": f.kind.as_str(),
        "ruleIndex": f.kind.index(),
        "level": "error",
        "message": { "text": f.to_string() },
        "partialFingerprints": { "lockscopeSites/v1": fingerprint(f) },
        "properties": { "test": test },
    });
    if let Some((site, role)) = sites.get(primary) {
        result["locations"] = json!([location(site, role)]);
        let related: Vec<Value> = sites
            .iter()
            .enumerate()
            .filter(|(i, _)| *i != primary)
            .enumerate()
            .map(|(id, (_, (site, role)))| {
                let mut l = location(site, role);
                l["id"] = json!(id);
                l
            })
            .collect();
        if !related.is_empty() {
            result["relatedLocations"] = Value::Array(related);
        }
    }
    result
}

/// A whole SARIF log with `results`.
pub(super) fn sarif_log(results: Vec<Value>, root: Option<&Path>) -> Value {
    let mut run = json!({
        "tool": { "driver": {
            "name": "lockscope",
            "version": env!("CARGO_PKG_VERSION"),
            "semanticVersion": env!("CARGO_PKG_VERSION"),
            "informationUri": "https://github.com/lockscope/lockscope",
            "rules": rules(),
        } },
        "results": results,
    });
    if let Some(r) = root.filter(|r| r.is_absolute()) {
        let mut base = percent_encode(&r.to_string_lossy().replace('\\', "/"));
        if !base.ends_with('/') {
            base.push('/');
        }
        let base = if base.starts_with('/') {
            format!("file://{base}")
        } else {
            format!("file:///{base}")
        };
        run["originalUriBaseIds"] = json!({ SRCROOT: { "uri": base } });
    }
    json!({
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [run],
    })
}

/// The results of an existing lockscope SARIF log; `None` when `text` is not one.
pub(super) fn existing_results(text: &str) -> Option<Vec<Value>> {
    let log: Value = serde_json::from_str(text).ok()?;
    let run = log.get("runs")?.get(0)?;
    if run.pointer("/tool/driver/name")?.as_str()? != "lockscope" {
        return None;
    }
    run.get("results")?.as_array().cloned()
}

pub(super) fn write(path: &Path, test: &str, findings: &[&Finding]) -> std::io::Result<()> {
    let root = ROOT.as_deref();
    let lock_path = with_suffix(path, ".lock");
    let lock_file = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&lock_path)?;
    let _lock = FileLock::take(&lock_file)?;
    let mut results = match fs::read_to_string(path) {
        Ok(text) => existing_results(&text).unwrap_or_else(|| {
            say_once(format!(
                "lockscope: {VAR}: {} is not a SARIF log of lockscope's; it is replaced",
                path.display()
            ));
            Vec::new()
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
        Err(e) => return Err(e),
    };
    for f in findings {
        let print = fingerprint(f);
        let known = results.iter().any(|r| {
            r.pointer("/partialFingerprints/lockscopeSites~1v1")
                .and_then(Value::as_str)
                == Some(print.as_str())
        });
        if !known {
            results.push(sarif_result(f, test, root));
        }
    }
    let text =
        serde_json::to_string_pretty(&sarif_log(results, root)).map_err(std::io::Error::other)?;
    let tmp = with_suffix(path, &format!(".tmp.{}", std::process::id()));
    fs::write(&tmp, text)?;
    fs::rename(&tmp, path).inspect_err(|_| {
        let _ = fs::remove_file(&tmp);
    })
}

fn with_suffix(path: &Path, suffix: &str) -> PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push(suffix);
    PathBuf::from(s)
}
