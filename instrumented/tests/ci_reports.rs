//! `LOCKSCOPE_REPORT`: a failing armed test writes its findings where CI shows them. Each
//! test here runs this binary again as a child, filtered to deliberately failing (`#[ignore]`d)
//! tests, with `LOCKSCOPE_REPORT` set, and reads what the child wrote: a SARIF log validated
//! against the SARIF 2.1.0 schema (`tests/sarif/`) and located at the acquisitions' lines, JSON
//! lines, GitHub annotations; from parallel tests in one process and from processes at once.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use lockscope::tokio::Mutex;
use serde_json::Value;

#[path = "common/mod.rs"]
mod common;

/// Set in the child's environment only: the failing tests do nothing without it.
const CHILD_ENV: &str = "LOCKSCOPE_TEST_CI_CHILD";

/// This file, to find the lines the reports must point at.
const SOURCE: &str = include_str!("ci_reports.rs");

/// Takes `a` then `b`, then `b` then `a`: a lock-order inversion, which fails the test at its
/// end (no deadlock: one task, one order at a time).
#[lockscope::test]
#[ignore = "deliberately fails; run in a child process by the tests below"]
async fn inversion_one() {
    if std::env::var_os(CHILD_ENV).is_none() {
        return;
    }
    let a = Mutex::named("ci_a", 0);
    let b = Mutex::named("ci_b", 0);
    {
        let _a = a.lock().await; // at:1a
        let _b = b.lock().await; // at:1b
    }
    let _b = b.lock().await; // at:1c
    let _a = a.lock().await; // at:1d
}

/// The same bug on other lines, with other locks: another finding.
#[lockscope::test]
#[ignore = "deliberately fails; run in a child process by the tests below"]
async fn inversion_two() {
    if std::env::var_os(CHILD_ENV).is_none() {
        return;
    }
    let c = Mutex::named("ci_c", 0);
    let d = Mutex::named("ci_d", 0);
    {
        let _c = c.lock().await; // at:2a
        let _d = d.lock().await; // at:2b
    }
    let _d = d.lock().await; // at:2c
    let _c = c.lock().await; // at:2d
}

/// A plain test with the parking_lot wrappers, failed by `assert_clean`.
#[test]
#[ignore = "deliberately fails; run in a child process by the tests below"]
fn inversion_assert_clean() {
    if std::env::var_os(CHILD_ENV).is_none() {
        return;
    }
    let e = lockscope::parking_lot::Mutex::named("ci_e", 0);
    let f = lockscope::parking_lot::Mutex::named("ci_f", 0);
    {
        let _e = e.lock(); // at:3a
        let _f = f.lock(); // at:3b
    }
    let _f = f.lock(); // at:3c
    let _e = e.lock(); // at:3d
    drop((_e, _f));
    lockscope::detector::assert_clean();
}

/// The test's own thread blocked for good: the watchdog ends the process, after writing.
#[lockscope::test]
#[ignore = "deliberately deadlocks; run in a child process by the tests below"]
async fn relock_blocks_the_thread() {
    if std::env::var_os(CHILD_ENV).is_none() {
        return;
    }
    let m = lockscope::parking_lot::Mutex::named("ci_relock", 0);
    let _g = m.lock(); // at:4a
    let _h = m.lock(); // at:4b
    unreachable!("a parking_lot mutex is not reentrant");
}

/// The lines of this file that call `lock` and end with `at:<tag><letter>` (`1`: 1a..1d).
fn marked_lines(tag: &str) -> BTreeSet<u64> {
    let mark = format!("// at:{tag}");
    SOURCE
        .lines()
        .enumerate()
        .filter(|(_, l)| l.contains(".lock()"))
        .filter(|(_, l)| {
            l.trim_end()
                .strip_suffix(|c: char| c.is_ascii_lowercase())
                .is_some_and(|rest| rest.ends_with(&mark))
        })
        .map(|(i, _)| i as u64 + 1)
        .collect()
}

fn tmp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("lockscope-ci-reports-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join(name);
    let _ = std::fs::remove_file(&p);
    p
}

/// Runs the tests matching `filter` in a child with `LOCKSCOPE_REPORT=report`.
fn run(filter: &str, threads: usize, report: &str) -> common::ChildRun {
    let threads = format!("--test-threads={threads}");
    common::run_child_env(
        &[filter, "--ignored", &threads],
        &[(CHILD_ENV, "1"), ("LOCKSCOPE_REPORT", report)],
    )
}

/// The child ran `n` tests and each failed, on its lockscope report.
fn assert_failed(run: &common::ChildRun, n: usize, kind: &str) {
    let (out, err) = (&run.stdout, &run.stderr);
    assert_eq!(run.code, Some(101), "stdout:\n{out}\nstderr:\n{err}");
    assert!(out.contains(&format!("running {n} test")), "stdout:\n{out}");
    assert!(
        out.contains(&format!("0 passed; {n} failed")),
        "stdout:\n{out}"
    );
    assert!(
        out.contains(&format!("lockscope: {kind}")),
        "stdout:\n{out}"
    );
}

/// What the vendored SARIF 2.1.0 schema finds wrong in `log`, formats included.
fn sarif_errors(log: &Value) -> Vec<String> {
    // The schema's two `language` patterns, `^[a-zA-Z]{2}|^[a-zA-Z]{2}-[a-zA-Z]{2}]?$`, have a
    // stray `]`, which ECMA-262 reads as a literal and this crate's `regex` format check
    // refuses, failing the schema's own check against draft-07. It is escaped here, in memory,
    // to the same meaning; the vendored file stays as published.
    let text = include_str!("sarif/sarif-schema-2.1.0.json");
    let stray = r#"[a-zA-Z]{2}]?$"#;
    assert_eq!(
        text.matches(stray).count(),
        2,
        "the schema's two `language` patterns"
    );
    let text = text.replace(stray, r#"[a-zA-Z]{2}\\]?$"#);
    let schema: Value = serde_json::from_str(&text).unwrap();
    let validator = jsonschema::options()
        .should_validate_formats(true)
        .build(&schema)
        .unwrap();
    validator
        .iter_errors(log)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect()
}

/// Asserts that `log` is valid SARIF 2.1.0.
fn assert_valid_sarif(log: &Value) {
    let errors = sarif_errors(log);
    assert!(errors.is_empty(), "{errors:#?}\n{log:#}");
}

fn read_sarif(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap()
}

/// Every location of `result` (primary and related) as (uri, line, column).
fn locations(result: &Value) -> Vec<(String, u64, u64)> {
    let mut all = result["locations"].as_array().cloned().unwrap_or_default();
    all.extend(
        result["relatedLocations"]
            .as_array()
            .cloned()
            .unwrap_or_default(),
    );
    all.iter()
        .map(|l| {
            let p = &l["physicalLocation"];
            (
                p["artifactLocation"]["uri"].as_str().unwrap().to_owned(),
                p["region"]["startLine"].as_u64().unwrap(),
                p["region"]["startColumn"].as_u64().unwrap(),
            )
        })
        .collect()
}

/// `uri` is this file, relative to the workspace root, which holds it.
fn assert_is_this_file(uri: &str) {
    assert!(uri.ends_with("tests/ci_reports.rs"), "{uri}");
    assert!(
        !uri.starts_with('/') && !uri.contains(':'),
        "relative: {uri}"
    );
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .find(|a| a.join(uri).is_file());
    assert!(root.is_some(), "{uri} is under an ancestor of the package");
}

/// The 1-based columns at which line `line` of this file calls `lock`: its receiver's or the
/// method name's (either is the call site).
fn lock_columns(line: u64) -> [u64; 2] {
    let text = SOURCE.lines().nth(line as usize - 1).unwrap();
    let method = text.find("lock()").unwrap() as u64 + 1;
    [method - 2, method]
}

/// The check has teeth: what a careless writer could get wrong is refused.
#[test]
fn the_schema_check_refuses_broken_logs() {
    let good = serde_json::json!({
        "version": "2.1.0",
        "runs": [{ "tool": { "driver": { "name": "lockscope" } }, "results": [{
            "ruleId": "deadlock",
            "message": { "text": "m" },
            "locations": [{ "physicalLocation": {
                "artifactLocation": { "uri": "src/a.rs" },
                "region": { "startLine": 3, "startColumn": 1 },
            } }],
        }] }],
    });
    assert_eq!(sarif_errors(&good), Vec::<String>::new());
    let mut broken = Vec::new();
    let mut v = good.clone();
    v["version"] = "2.0.0".into();
    broken.push(v);
    let mut v = good.clone();
    v["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["region"]["startLine"] =
        0.into();
    broken.push(v);
    let mut v = good.clone();
    v["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] =
        "src/a file.rs".into();
    broken.push(v);
    let mut v = good.clone();
    v["runs"][0]["results"][0]["level"] = "fatal".into();
    broken.push(v);
    for v in broken {
        assert!(!sarif_errors(&v).is_empty(), "accepted: {v:#}");
    }
}

#[test]
fn a_failing_test_writes_sarif_that_validates_and_points_at_the_acquisitions() {
    let path = tmp("one.sarif");
    let run = run("inversion_one", 1, &format!("sarif:{}", path.display()));
    assert_failed(&run, 1, "lock-order-inversion");
    let log = read_sarif(&path);
    assert_valid_sarif(&log);
    let results = log["runs"][0]["results"].as_array().unwrap();
    assert_eq!(results.len(), 1, "{log:#}");
    let r = &results[0];
    assert_eq!(r["ruleId"], "lock-order-inversion");
    assert_eq!(r["level"], "error");
    let rule =
        &log["runs"][0]["tool"]["driver"]["rules"][r["ruleIndex"].as_u64().unwrap() as usize];
    assert_eq!(rule["id"], "lock-order-inversion");
    assert!(rule["shortDescription"]["text"].as_str().unwrap().len() > 10);
    assert!(
        r["message"]["text"]
            .as_str()
            .unwrap()
            .starts_with("lockscope: lock-order-inversion: ")
    );
    assert!(
        r["properties"]["test"]
            .as_str()
            .unwrap()
            .ends_with("inversion_one"),
        "{r:#}"
    );
    let locs = locations(r);
    let lines: BTreeSet<u64> = locs.iter().map(|(_, l, _)| *l).collect();
    assert_eq!(lines, marked_lines("1"), "{r:#}");
    for (uri, line, col) in &locs {
        assert_is_this_file(uri);
        assert!(
            lock_columns(*line).contains(col),
            "line {line} col {col}: {r:#}"
        );
    }
    // The primary location is the first acquisition the report names.
    assert!(r["locations"][0]["message"]["text"].as_str().is_some());
}

#[test]
fn json_lines_and_github_annotations() {
    let path = tmp("one.jsonl");
    let run = run(
        "inversion_one",
        1,
        &format!("json:{};github", path.display()),
    );
    assert_failed(&run, 1, "lock-order-inversion");
    let text = std::fs::read_to_string(&path).unwrap();
    let lines: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 1, "{text}");
    let f = &lines[0];
    assert_eq!(f["kind"], "lock-order-inversion");
    assert!(
        f["report"]
            .as_str()
            .unwrap()
            .starts_with("lockscope: lock-order-inversion: ")
    );
    for key in [
        "summary",
        "primitives",
        "actors",
        "sites",
        "fix",
        "first_seen_unix_ms",
        "active",
    ] {
        assert!(f.get(key).is_some(), "{key} missing: {f:#}");
    }
    let annotations: Vec<&str> = run
        .stderr
        .lines()
        .filter(|l| l.starts_with("::error "))
        .collect();
    assert_eq!(annotations.len(), 1, "stderr:\n{}", run.stderr);
    let a = annotations[0];
    let (props, message) = a["::error ".len()..].split_once("::").unwrap();
    assert!(
        message.starts_with("lockscope: lock-order-inversion: "),
        "{a}"
    );
    let props: Vec<(&str, &str)> = props
        .split(',')
        .map(|p| p.split_once('=').unwrap())
        .collect();
    let get = |k: &str| {
        props
            .iter()
            .find(|(n, _)| *n == k)
            .map(|(_, v)| *v)
            .unwrap()
    };
    assert_is_this_file(get("file"));
    let line: u64 = get("line").parse().unwrap();
    assert!(marked_lines("1").contains(&line), "{a}");
    assert!(
        lock_columns(line).contains(&get("col").parse().unwrap()),
        "{a}"
    );
    assert_eq!(get("title"), "lockscope lock-order-inversion");
}

#[test]
fn parallel_tests_in_two_processes_at_once_share_the_files_soundly() {
    let sarif = tmp("shared.sarif");
    let json = tmp("shared.jsonl");
    let report = format!("sarif:{};json:{}", sarif.display(), json.display());
    // Two processes at once, each running both tests on two threads at once.
    let children: Vec<_> = (0..2)
        .map(|_| {
            let report = report.clone();
            std::thread::spawn(move || run("inversion_", 2, &report))
        })
        .collect();
    for c in children {
        let run = c.join().unwrap();
        assert_failed(&run, 3, "lock-order-inversion");
    }
    let log = read_sarif(&sarif);
    assert_valid_sarif(&log);
    // One result per finding: the two processes found the same three.
    let results = log["runs"][0]["results"].as_array().unwrap();
    let mut by_lines: Vec<BTreeSet<u64>> = results
        .iter()
        .map(|r| locations(r).iter().map(|(_, l, _)| *l).collect())
        .collect();
    by_lines.sort();
    let mut expected = vec![marked_lines("1"), marked_lines("2"), marked_lines("3")];
    expected.sort();
    assert_eq!(by_lines, expected, "{log:#}");
    // JSON lines: each process wrote its three, whole.
    let text = std::fs::read_to_string(&json).unwrap();
    assert_eq!(text.lines().count(), 6, "{text}");
    for line in text.lines() {
        let f: Value = serde_json::from_str(line).unwrap();
        assert_eq!(f["kind"], "lock-order-inversion");
    }
}

#[test]
fn the_watchdog_writes_before_it_ends_the_process() {
    let path = tmp("exit.sarif");
    let run = common::run_child_env(
        &["relock_blocks_the_thread", "--ignored", "--test-threads=1"],
        &[
            (CHILD_ENV, "1"),
            ("LOCKSCOPE_REPORT", &format!("sarif:{}", path.display())),
        ],
    );
    run.assert_ended_by_the_watchdog();
    let log = read_sarif(&path);
    assert_valid_sarif(&log);
    let results = log["runs"][0]["results"].as_array().unwrap();
    assert!(!results.is_empty(), "{log:#}");
    let lines: BTreeSet<u64> = results
        .iter()
        .flat_map(locations)
        .map(|(_, l, _)| l)
        .collect();
    assert!(
        lines.is_subset(&marked_lines("4")) && !lines.is_empty(),
        "{log:#}"
    );
}

#[test]
fn a_bad_value_is_said_once_and_the_tests_fail_as_usual() {
    let run = run("inversion_", 2, "xml:out.xml");
    assert_failed(&run, 3, "lock-order-inversion");
    let said = run
        .stderr
        .matches("LOCKSCOPE_REPORT: cannot read \"xml:out.xml\"")
        .count();
    assert_eq!(said, 1, "stderr:\n{}", run.stderr);
    assert!(!run.stderr.contains("::error"), "stderr:\n{}", run.stderr);
}
