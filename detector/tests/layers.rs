//! The detector's layers import in one direction only: a file under `src/<layer>/` may name
//! `crate::<layer>` paths of its own layer or of the layers above it in [`LAYERS`], never of
//! one below, and never a crate-root re-export (those exist for other crates). `lib.rs`, the
//! map, is the one file outside the layers.
//!
//! The check reads the source text: every `crate::` path outside comments and string
//! literals, including grouped imports (`use crate::{base::clock, state::held}`) and paths
//! written inline in code.
//!
//! Layers hold for responsibilities too: a rule is pure (state in, findings out), so no file
//! under `src/rules/` declares a `static` or a `thread_local!` (what a rule keeps between
//! ticks lives in its own struct, which the watchdog owns); and only `runtime` starts
//! threads, so no file under `src/base/` spawns one. Unit-test code is exempt.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// Top to bottom: a layer may import from itself and from the ones before it.
const LAYERS: [&str; 7] = [
    "base", "model", "state", "analysis", "rules", "report", "runtime",
];

/// One `crate::` path found in a source file.
#[derive(Debug)]
struct Import {
    line: usize,
    /// The path after `crate::`, as written (`state::held::Mode`).
    path: String,
}

fn rank(layer: &str) -> Option<usize> {
    LAYERS.iter().position(|l| *l == layer)
}

/// The source with comments and string/char literals blanked out (newlines kept, so that
/// byte offsets still give the right line numbers).
fn code_only(src: &str) -> String {
    let b = src.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    let blank = |out: &mut Vec<u8>, c: u8| out.push(if c == b'\n' { b'\n' } else { b' ' });
    while i < b.len() {
        if b[i..].starts_with(b"//") {
            while i < b.len() && b[i] != b'\n' {
                out.push(b' ');
                i += 1;
            }
        } else if b[i..].starts_with(b"/*") {
            let mut depth = 0;
            while i < b.len() {
                if b[i..].starts_with(b"/*") {
                    depth += 1;
                    out.extend_from_slice(b"  ");
                    i += 2;
                } else if b[i..].starts_with(b"*/") {
                    depth -= 1;
                    out.extend_from_slice(b"  ");
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    blank(&mut out, b[i]);
                    i += 1;
                }
            }
        } else if b[i] == b'r' && (b[i + 1..].starts_with(b"\"") || b[i + 1..].starts_with(b"#")) {
            // A raw string r"..." / r#"..."#, or an identifier starting with `r`.
            let hashes = b[i + 1..].iter().take_while(|c| **c == b'#').count();
            if b.get(i + 1 + hashes) != Some(&b'"') || (i > 0 && is_ident(b[i - 1])) {
                out.push(b[i]);
                i += 1;
                continue;
            }
            let close: Vec<u8> = std::iter::once(b'"')
                .chain(std::iter::repeat_n(b'#', hashes))
                .collect();
            i += 2 + hashes;
            out.extend(std::iter::repeat_n(b' ', 2 + hashes));
            while i < b.len() && !b[i..].starts_with(&close) {
                blank(&mut out, b[i]);
                i += 1;
            }
            out.extend(std::iter::repeat_n(b' ', close.len()));
            i += close.len();
        } else if b[i] == b'"' {
            out.push(b' ');
            i += 1;
            while i < b.len() && b[i] != b'"' {
                if b[i] == b'\\' {
                    out.push(b' ');
                    i += 1;
                }
                blank(&mut out, b[i]);
                i += 1;
            }
            out.push(b' ');
            i += 1;
        } else if b[i] == b'\'' && b.get(i + 2) == Some(&b'\'') {
            // A one-character literal such as '"' or '{'.
            out.extend_from_slice(b"   ");
            i += 3;
        } else if b[i..].starts_with(b"'\\") {
            let end = b[i + 2..]
                .iter()
                .position(|c| *c == b'\'')
                .map_or(b.len(), |p| i + 3 + p);
            out.extend(std::iter::repeat_n(b' ', end - i));
            i = end;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8(out).expect("blanking keeps UTF-8 (only ASCII is replaced)")
}

fn is_ident(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_'
}

/// Every `crate::` path in `code` (already stripped by [`code_only`]), groups expanded.
fn imports(code: &str) -> Vec<Import> {
    let b = code.as_bytes();
    let line_of = |at: usize| code[..at].matches('\n').count() + 1;
    let mut out = Vec::new();
    let mut at = 0;
    while let Some(p) = code[at..].find("crate::") {
        let start = at + p;
        at = start + "crate::".len();
        if start > 0 && (is_ident(b[start - 1]) || b[start - 1] == b'$') {
            continue; // `$crate::` in a macro, or a longer identifier.
        }
        paths_at(code, at, String::new(), &mut |off, path| {
            out.push(Import {
                line: line_of(off),
                path,
            });
        });
    }
    out
}

/// Reads the path (or `{..}` group) starting at `at`, prefixed by `prefix`, calling `emit`
/// with the offset and text of each full path.
fn paths_at(code: &str, mut at: usize, prefix: String, emit: &mut dyn FnMut(usize, String)) {
    let b = code.as_bytes();
    while at < b.len() && b[at].is_ascii_whitespace() {
        at += 1;
    }
    if b.get(at) == Some(&b'{') {
        // Split the group at its top-level commas.
        let mut depth = 0;
        let mut item = at + 1;
        let mut i = at;
        while i < b.len() {
            match b[i] {
                b'{' => depth += 1,
                b'}' | b',' if depth == 1 => {
                    if !code[item..i].trim().is_empty() {
                        paths_at(code, item, prefix.clone(), emit);
                    }
                    if b[i] == b'}' {
                        return;
                    }
                    item = i + 1;
                }
                b'}' => depth -= 1,
                _ => {}
            }
            i += 1;
        }
        return;
    }
    let start = at;
    let mut end = at;
    while end < b.len() && (is_ident(b[end]) || code[end..].starts_with("::")) {
        end += if b[end] == b':' { 2 } else { 1 };
    }
    let text = &code[start..end];
    if text.ends_with("::") {
        let mut next = end;
        while next < b.len() && b[next].is_ascii_whitespace() {
            next += 1;
        }
        if b.get(next) == Some(&b'{') {
            paths_at(code, next, format!("{prefix}{text}"), emit);
            return;
        }
    }
    emit(start, format!("{prefix}{}", text.trim_end_matches("::")));
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("read src dir") {
        let path = entry.expect("dir entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// Every import in `src` that runs up the list or around the layers, as `file:line` lines.
fn violations(src: &Path) -> Vec<String> {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    files.sort();
    let mut bad = Vec::new();
    for file in files {
        let rel = file.strip_prefix(src).expect("under src");
        let mut parts = rel.components();
        let first = parts
            .next()
            .expect("non-empty")
            .as_os_str()
            .to_string_lossy();
        if parts.next().is_none() {
            continue; // lib.rs: the map and the old paths, outside the layers.
        }
        let mine = rank(&first).unwrap_or_else(|| {
            panic!("src/{first}/ is not a layer; add it to LAYERS in tests/layers.rs")
        });
        let text = std::fs::read_to_string(&file).expect("read source");
        for imp in imports(&code_only(&text)) {
            let target = imp.path.split("::").next().unwrap_or("");
            let why = match rank(target) {
                Some(r) if r <= mine => continue,
                Some(_) => format!("imports from `{target}`, a layer below `{first}`"),
                None => "names a crate-root path, not a layer: use the layer's own path".to_owned(),
            };
            bad.push(format!(
                "src/{}:{}: `crate::{}` {why}",
                rel.display(),
                imp.line,
                imp.path
            ));
        }
    }
    bad
}

/// The code of `text` outside its unit tests: a trailing `#[cfg(test)]` module is cut off.
fn outside_tests(code: &str) -> &str {
    match code.find("#[cfg(test)]") {
        Some(at) if code[at..].contains("mod tests") => &code[..at],
        _ => code,
    }
}

/// Whether a file holds unit tests only (beside the module it tests).
fn is_test_file(rel: &Path) -> bool {
    let name = rel
        .file_name()
        .map(|n| n.to_string_lossy())
        .unwrap_or_default();
    name == "tests.rs"
        || name == "testkit.rs"
        || name.ends_with("_tests.rs")
        || name == "loom_models.rs"
        || rel.components().any(|c| c.as_os_str() == "tests")
}

/// Whether `code` (stripped by [`code_only`]) declares a `static` item (not a `'static`
/// lifetime), with the line of the first.
fn declares_static(code: &str) -> Option<usize> {
    let b = code.as_bytes();
    let mut at = 0;
    while let Some(p) = code[at..].find("static") {
        let start = at + p;
        at = start + "static".len();
        let before = if start == 0 { b' ' } else { b[start - 1] };
        let after = b.get(at).copied().unwrap_or(b' ');
        if !is_ident(before) && before != b'\'' && after.is_ascii_whitespace() {
            return Some(code[..start].matches('\n').count() + 1);
        }
    }
    code.find("thread_local!")
        .map(|start| code[..start].matches('\n').count() + 1)
}

/// Every file under `src` that takes on a responsibility outside its layer's (see the module
/// docs), as `file:line` lines.
fn misplaced(src: &Path) -> Vec<String> {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    files.sort();
    let mut bad = Vec::new();
    for file in files {
        let rel = file.strip_prefix(src).expect("under src");
        let layer = rel
            .components()
            .next()
            .map(|c| c.as_os_str().to_string_lossy().into_owned());
        if is_test_file(rel) {
            continue;
        }
        let text = std::fs::read_to_string(&file).expect("read source");
        let stripped = code_only(&text);
        let code = outside_tests(&stripped);
        match layer.as_deref() {
            Some("rules") => {
                if let Some(line) = declares_static(code) {
                    bad.push(format!(
                        "src/{}:{line}: a rule keeps state in a static: state belongs in `state`, or in the rule's struct",
                        rel.display()
                    ));
                }
            }
            Some("base") => {
                for pat in ["thread::spawn", "spawn_scoped", ".spawn("] {
                    if let Some(start) = code.find(pat) {
                        let line = code[..start].matches('\n').count() + 1;
                        bad.push(format!(
                            "src/{}:{line}: `base` starts a thread: threads start in `runtime`",
                            rel.display()
                        ));
                        break;
                    }
                }
            }
            _ => {}
        }
    }
    bad
}

#[test]
fn rules_keep_no_static_state_and_base_starts_no_thread() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let bad = misplaced(&src);
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

#[test]
fn a_rule_with_a_static_and_a_base_thread_are_named() {
    let dir = std::env::temp_dir().join(format!("lockscope-resp-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("rules")).unwrap();
    std::fs::create_dir_all(dir.join("base")).unwrap();
    std::fs::write(
        dir.join("rules/pure.rs"),
        "fn f(s: &'static str) -> &'static str { s }\nconst N: usize = 1;\n\n#[cfg(test)]\nmod tests {\n    static T: u8 = 0;\n}\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("rules/keeps.rs"),
        "use std::sync::Mutex;\n\n/// static in a comment\npub(crate) static SEEN: Mutex<u8> = Mutex::new(0);\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("rules/local.rs"),
        "thread_local! {\n    static X: u8 = 0;\n}\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("base/clock.rs"),
        "fn start() {\n    let s = \"thread::spawn\";\n    std::thread::Builder::new().spawn(|| ());\n}\n",
    )
    .unwrap();
    let bad = misplaced(&dir);
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(bad.len(), 3, "{bad:#?}");
    assert!(
        bad[0].starts_with("src/base/clock.rs:3: `base` starts a thread"),
        "{}",
        bad[0]
    );
    assert!(
        bad[1].starts_with("src/rules/keeps.rs:4: a rule keeps state"),
        "{}",
        bad[1]
    );
    assert!(
        bad[2].starts_with("src/rules/local.rs:2: a rule keeps state"),
        "{}",
        bad[2]
    );
}

#[test]
fn every_import_runs_down_the_layers() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let bad = violations(&src);
    let mut msg = String::new();
    for b in &bad {
        let _ = writeln!(msg, "  {b}");
    }
    assert!(
        bad.is_empty(),
        "{} import(s) against the layer order {LAYERS:?}:\n{msg}",
        bad.len()
    );
}

#[test]
fn the_reader_finds_grouped_inline_and_nested_paths() {
    let code = code_only(
        "use crate::base::clock;\n\
         use crate::{model::Acq, state::{held::Mode, wait}};\n\
         // use crate::runtime::hooks;  (a comment)\n\
         let s = \"crate::runtime::x\"; let c = '\"'; let r = r#\"crate::y\"#;\n\
         let n = crate::report::finding::count(); let m = $crate::z;\n",
    );
    let got: Vec<(usize, String)> = imports(&code)
        .into_iter()
        .map(|i| (i.line, i.path))
        .collect();
    assert_eq!(
        got,
        [
            (1, "base::clock".to_owned()),
            (2, "model::Acq".to_owned()),
            (2, "state::held::Mode".to_owned()),
            (2, "state::wait".to_owned()),
            (5, "report::finding::count".to_owned()),
        ]
    );
}

#[test]
fn an_import_up_the_list_is_named_with_its_file_and_line() {
    let dir = std::env::temp_dir().join(format!("lockscope-layers-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("state")).unwrap();
    std::fs::create_dir_all(dir.join("runtime")).unwrap();
    std::fs::write(dir.join("lib.rs"), "pub use crate::runtime::hooks;\n").unwrap();
    std::fs::write(
        dir.join("state/prim.rs"),
        "use crate::base::clock;\n\nfn f() { crate::runtime::hooks::go(); crate::Config::x(); }\n",
    )
    .unwrap();
    std::fs::write(dir.join("runtime/hooks.rs"), "use crate::state::prim;\n").unwrap();
    let bad = violations(&dir);
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(bad.len(), 2, "{bad:#?}");
    assert!(
        bad[0].starts_with("src/state/prim.rs:3: `crate::runtime::hooks::go`"),
        "{}",
        bad[0]
    );
    assert!(bad[1].contains("crate::Config::x"), "{}", bad[1]);
}
