use std::path::Path;

use serde_json::Value;

use super::sarif::{existing_results, rules, sarif_log, sarif_result};
use super::*;
use crate::model::finding::{Finding, FindingKind, OrderEdge, PrimRef};

fn prim(id: u64, name: &str) -> PrimRef {
    PrimRef {
        id,
        name: name.to_owned(),
        kind: "mutex",
        created_at: "src/lib.rs:1:1".to_owned(),
        instance: 0,
    }
}

/// An inversion between `a` and `b` at the four given sites.
fn inversion(key: &str, summary: &str, sites: [&str; 4]) -> Finding {
    let mut f = Finding::new(
        FindingKind::LockOrderInversion,
        key.to_owned(),
        summary.to_owned(),
    );
    f.orders.push(OrderEdge {
        from: prim(1, "a"),
        to: prim(2, "b"),
        from_site: sites[0].to_owned(),
        to_site: sites[1].to_owned(),
        actor: "task 1".to_owned(),
    });
    f.orders.push(OrderEdge {
        from: prim(2, "b"),
        to: prim(1, "a"),
        from_site: sites[2].to_owned(),
        to_site: sites[3].to_owned(),
        actor: "task 2".to_owned(),
    });
    f.collect_sites();
    f
}

fn tmp(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("lockscope-ci-unit-{}", std::process::id()));
    fs::create_dir_all(&dir).unwrap();
    let p = dir.join(name);
    let _ = fs::remove_file(&p);
    p
}

#[test]
fn values_are_read_item_by_item_and_a_bad_one_is_named() {
    assert_eq!(parse("github"), (vec![Sink::Github], vec![]));
    assert_eq!(parse(""), (vec![], vec![]));
    let (sinks, errors) = parse(" sarif:target/l.sarif ; json:out.jsonl;github;github");
    assert_eq!(
        sinks,
        vec![
            Sink::Sarif("target/l.sarif".into()),
            Sink::Json("out.jsonl".into()),
            Sink::Github
        ]
    );
    assert!(errors.is_empty());
    for bad in ["xml:out.xml", "sarif:", "json: ", "GitHub", "sarif"] {
        let (sinks, errors) = parse(&format!("github;{bad}"));
        assert_eq!(
            sinks,
            vec![Sink::Github],
            "{bad}: the good item still counts"
        );
        assert_eq!(errors.len(), 1, "{bad}: {errors:?}");
        assert!(
            errors[0].contains(&format!("{:?}", bad.trim())),
            "{}",
            errors[0]
        );
        assert!(
            errors[0].contains("`sarif:<path>`, `json:<path>` or `github`"),
            "{}",
            errors[0]
        );
    }
}

#[test]
fn workflow_command_escaping() {
    assert_eq!(escape_data("50%\r\nx: a, b"), "50%25%0D%0Ax: a, b");
    assert_eq!(escape_property("50%\r\nx: a, b"), "50%25%0D%0Ax%3A a%2C b");
    // `%` first: an escape already in the text is not taken for one.
    assert_eq!(escape_property("%3A"), "%253A");
}

#[test]
fn sites_are_read_and_made_relative_to_the_root() {
    let root = Path::new("/ws");
    assert_eq!(
        parse_site("src/a.rs:12:5", Some(root)),
        Some(Site {
            file: "src/a.rs".into(),
            relative: true,
            line: 12,
            col: 5
        })
    );
    assert_eq!(
        parse_site("/ws/tests/b.rs:3:1", Some(root)),
        Some(Site {
            file: "tests/b.rs".into(),
            relative: true,
            line: 3,
            col: 1
        })
    );
    let outside = parse_site("/home/u/.cargo/registry/x.rs:7:2", Some(root)).unwrap();
    assert!(!outside.relative);
    assert_eq!(uri(&outside), "file:///home/u/.cargo/registry/x.rs");
    let odd = parse_site("src/a b,c:d.rs:1:2", Some(root)).unwrap();
    assert_eq!(odd.file, "src/a b,c:d.rs");
    assert_eq!(uri(&odd), "src/a%20b%2Cc%3Ad.rs");
    for bad in [
        "nowhere", "a.rs:x:1", "a.rs:0:1", "a.rs:1:0", ":1:1", "a.rs:1",
    ] {
        assert_eq!(parse_site(bad, Some(root)), None, "{bad}");
    }
}

#[test]
fn an_annotation_per_finding_at_its_first_site_in_the_workspace() {
    let f = inversion(
        "k",
        "mutex \"a,b\" 100% then\nsecond line",
        [
            "/elsewhere/dep.rs:1:1",
            "src/we,ird:f.rs:3:9",
            "src/c.rs:4:1",
            "src/d.rs:5:1",
        ],
    );
    let line = github_annotation(&f, Some(Path::new("/ws")));
    assert_eq!(
        line,
        "::error file=src/we%2Cird%3Af.rs,line=3,col=9,title=lockscope lock-order-inversion::\
         lockscope: lock-order-inversion: mutex \"a,b\" 100%25 then"
    );
    let mut none = f.clone();
    none.sites = vec!["?".into()];
    assert!(
        github_annotation(&none, None)
            .starts_with("::error title=lockscope lock-order-inversion::")
    );
}

#[test]
fn json_lines_carry_the_debug_findings_fields() {
    let f = inversion(
        "k",
        "s",
        [
            "src/a.rs:1:1",
            "src/a.rs:2:1",
            "src/a.rs:3:1",
            "src/a.rs:4:1",
        ],
    );
    let g = inversion(
        "k2",
        "t",
        [
            "src/b.rs:1:1",
            "src/b.rs:2:1",
            "src/b.rs:3:1",
            "src/b.rs:4:1",
        ],
    );
    let text = json_lines(&[&f, &g]);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 2);
    let v: Value = serde_json::from_str(lines[0]).unwrap();
    let mut fields = serde_json::to_value(&f).unwrap();
    fields["report"] = Value::String(f.to_string());
    assert_eq!(v, fields);
}

#[test]
fn a_result_at_its_sites_with_the_others_related() {
    let f = inversion(
        "k",
        "s",
        [
            "/elsewhere/dep.rs:1:1",
            "src/a.rs:2:3",
            "src/a.rs:9:1",
            "src/b.rs:4:5",
        ],
    );
    let r = sarif_result(&f, "my_test", Some(Path::new("/ws")));
    assert_eq!(r["ruleId"], "lock-order-inversion");
    let rules = rules();
    assert_eq!(
        rules[r["ruleIndex"].as_u64().unwrap() as usize]["id"],
        "lock-order-inversion"
    );
    let loc = &r["locations"][0]["physicalLocation"];
    assert_eq!(loc["artifactLocation"]["uri"], "src/a.rs");
    assert_eq!(loc["artifactLocation"]["uriBaseId"], "%SRCROOT%");
    assert_eq!(loc["region"]["startLine"], 2);
    assert_eq!(loc["region"]["startColumn"], 3);
    let related: Vec<(String, u64)> = r["relatedLocations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| {
            let p = &l["physicalLocation"];
            (
                p["artifactLocation"]["uri"].as_str().unwrap().to_owned(),
                p["region"]["startLine"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        related,
        vec![
            ("file:///elsewhere/dep.rs".to_owned(), 1),
            ("src/a.rs".to_owned(), 9),
            ("src/b.rs".to_owned(), 4)
        ]
    );
    assert_eq!(r["properties"]["test"], "my_test");
}

#[test]
fn only_a_lockscope_log_is_merged() {
    assert_eq!(existing_results("not json"), None);
    assert_eq!(
        existing_results(
            r#"{"version":"2.1.0","runs":[{"tool":{"driver":{"name":"other"}},"results":[]}]}"#
        ),
        None
    );
    let log = sarif_log(vec![serde_json::json!({"ruleId": "deadlock"})], None);
    assert_eq!(existing_results(&log.to_string()).unwrap().len(), 1);
}

#[test]
fn parallel_writers_of_one_sarif_file_lose_nothing() {
    let path = tmp("parallel.sarif");
    let threads: Vec<_> = (0..8)
        .map(|t| {
            let path = path.clone();
            std::thread::spawn(move || {
                for i in 0..5 {
                    let site = format!("src/t{t}.rs:{}:1", i + 1);
                    let f = inversion(&format!("{t}-{i}"), "s", [&site, &site, &site, &site]);
                    sarif::write(&path, &format!("t{t}"), &[&f]).unwrap();
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let log: Value = serde_json::from_str(&fs::read_to_string(&path).unwrap()).unwrap();
    assert_eq!(log["runs"][0]["results"].as_array().unwrap().len(), 40);
    // The same finding written again (another test it failed) is not a second result.
    let site = "src/t0.rs:1:1";
    let again = inversion("0-0", "s", [site, site, site, site]);
    sarif::write(&path, "other", &[&again]).unwrap();
    let log: Value = serde_json::from_str(&fs::read_to_string(&path).unwrap()).unwrap();
    assert_eq!(log["runs"][0]["results"].as_array().unwrap().len(), 40);
}

#[test]
fn parallel_writers_of_one_json_file_write_whole_lines() {
    let path = tmp("parallel.jsonl");
    let threads: Vec<_> = (0..8)
        .map(|t| {
            let path = path.clone();
            std::thread::spawn(move || {
                for i in 0..25 {
                    let long = format!("{t}-{i}-{}", "x".repeat(5000));
                    let f = inversion(
                        &long,
                        &long,
                        ["a.rs:1:1", "a.rs:2:1", "a.rs:3:1", "a.rs:4:1"],
                    );
                    write_json(&path, &[&f]).unwrap();
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let text = fs::read_to_string(&path).unwrap();
    assert_eq!(text.lines().count(), 200);
    for line in text.lines() {
        let v: Value = serde_json::from_str(line).unwrap();
        assert_eq!(v["kind"], "lock-order-inversion");
    }
}
