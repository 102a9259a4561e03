//! Reports for CI (`LOCKSCOPE_REPORT`): the findings of a failing test written where CI shows
//! them, besides the usual panic message.
//!
//! - `sarif:<path>`: SARIF 2.1.0, one result per finding, located at its call sites (GitHub
//!   code scanning shows it inline on a pull request).
//! - `json:<path>`: one finding per line, the schema of `/debug/findings`.
//! - `github`: a GitHub Actions `::error` annotation per finding, on stderr.
//!
//! Several may be given, separated by `;`. A relative path is taken from the workspace root
//! (the outermost directory above the test's package whose `Cargo.toml` has `[workspace]`),
//! which is also what SARIF's and the annotations' file names are relative to.
//!
//! Tests run in parallel, in one process and in many (each test binary of `cargo test` is a
//! process, and nextest runs each test in its own), so every write is whole and locked:
//! - json: the new lines in one `write` on a file opened for appending, under an exclusive
//!   `flock` of the file;
//! - sarif: under an exclusive `flock` of `<path>.lock`, the file is read, this failure's
//!   results are added to the ones already there (a result already present, by fingerprint, is
//!   not added twice), and the whole file is written to a temporary file renamed over it, so a
//!   reader never sees half a file.
//!
//! Both files accumulate over the processes that write them: remove them before a run.
//! Nothing here panics or stops a test: a bad value or a failed write is said once on stderr.

use std::collections::HashSet;
use std::fs::{self, File, OpenOptions};
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::LazyLock;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use serde::Serialize;

use crate::model::finding::Finding;
use crate::report::finding::to_stderr;
use crate::report::scopes;

/// The environment variable.
pub const VAR: &str = "LOCKSCOPE_REPORT";

/// Where findings go.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Sink {
    /// A SARIF 2.1.0 log at this path.
    Sarif(PathBuf),
    /// JSON lines at this path.
    Json(PathBuf),
    /// GitHub Actions annotations on stderr.
    Github,
}

/// The sinks of `LOCKSCOPE_REPORT`, read once.
static SINKS: LazyLock<Vec<Sink>> = LazyLock::new(|| {
    let Some(raw) = std::env::var_os(VAR) else {
        return Vec::new();
    };
    let Some(value) = raw.to_str() else {
        to_stderr(&format!(
            "lockscope: {VAR} is not valid UTF-8; no CI report is written"
        ));
        return Vec::new();
    };
    let (sinks, errors) = parse(value);
    for e in errors {
        to_stderr(&format!("lockscope: {e}"));
    }
    let root = workspace_root();
    sinks
        .into_iter()
        .map(|s| match s {
            Sink::Sarif(p) => Sink::Sarif(resolve(&root, p)),
            Sink::Json(p) => Sink::Json(resolve(&root, p)),
            Sink::Github => Sink::Github,
        })
        .collect()
});

/// The workspace root, for relative paths (see the module docs).
static ROOT: LazyLock<Option<PathBuf>> = LazyLock::new(workspace_root);

/// Keys of the findings already written by this process, per sink (index in [`SINKS`]).
static WRITTEN: LazyLock<Mutex<HashSet<(usize, String)>>> = LazyLock::new(Mutex::default);

/// Problems already said on stderr, so that each is said once.
static SAID: LazyLock<Mutex<HashSet<String>>> = LazyLock::new(Mutex::default);

/// Parses a `LOCKSCOPE_REPORT` value: the sinks it names, and one error per item it cannot
/// read (the others still count).
pub(crate) fn parse(value: &str) -> (Vec<Sink>, Vec<String>) {
    let mut sinks = Vec::new();
    let mut errors = Vec::new();
    for item in value.split(';').map(str::trim).filter(|i| !i.is_empty()) {
        let sink = match item.split_once(':') {
            None if item == "github" => Some(Sink::Github),
            Some(("sarif", p)) if !p.trim().is_empty() => Some(Sink::Sarif(p.trim().into())),
            Some(("json", p)) if !p.trim().is_empty() => Some(Sink::Json(p.trim().into())),
            _ => None,
        };
        match sink {
            Some(s) if !sinks.contains(&s) => sinks.push(s),
            Some(_) => {}
            None => errors.push(format!(
                "{VAR}: cannot read {item:?}: expected `sarif:<path>`, `json:<path>` or \
                 `github` (several separated by `;`); no report is written for it"
            )),
        }
    }
    (sinks, errors)
}

/// Writes the findings of the failing test `test` to every sink of `LOCKSCOPE_REPORT` (none
/// when it is unset). Each finding is written once per process and sink, however many tests
/// it fails.
pub fn test_failed(test: &str, findings: &[Finding]) {
    if SINKS.is_empty() || findings.is_empty() {
        return;
    }
    for (i, sink) in SINKS.iter().enumerate() {
        let new: Vec<&Finding> = {
            let mut written = WRITTEN.lock();
            findings
                .iter()
                .filter(|f| written.insert((i, f.key().to_owned())))
                .collect()
        };
        if new.is_empty() {
            continue;
        }
        let done = match sink {
            Sink::Sarif(path) => sarif::write(path, test, &new),
            Sink::Json(path) => write_json(path, &new),
            Sink::Github => {
                let mut text = String::new();
                for f in &new {
                    text.push_str(&github_annotation(f, ROOT.as_deref()));
                    text.push('\n');
                }
                to_stderr(text.trim_end());
                Ok(())
            }
        };
        if let Err(e) = done {
            say_once(format!(
                "lockscope: {VAR}: {e}; the findings are in the test's report"
            ));
        }
    }
}

/// [`test_failed`] for `assert_clean`, named after the calling thread (the test harness
/// names each test's thread after the test).
pub fn assert_clean_failed(findings: &[Finding]) {
    let thread = std::thread::current();
    test_failed(thread.name().unwrap_or("assert_clean"), findings);
}

/// The watchdog is about to end the process (a test that can never notice its deadlock):
/// the findings of every armed test, or every finding when no test is armed.
pub fn before_exit() {
    if SINKS.is_empty() {
        return;
    }
    let armed = scopes::armed_findings();
    if armed.is_empty() {
        test_failed("(no test)", &crate::report::finding::findings());
    }
    for (test, findings) in armed {
        test_failed(&test, &findings);
    }
}

fn say_once(text: String) {
    if SAID.lock().insert(text.clone()) {
        to_stderr(&text);
    }
}

// ---------------------------------------------------------------------------------------------
// Paths and sites
// ---------------------------------------------------------------------------------------------

/// The outermost directory from the test's package up whose `Cargo.toml` declares a
/// `[workspace]`, else the package's own directory.
fn workspace_root() -> Option<PathBuf> {
    let start = std::env::var_os("CARGO_MANIFEST_DIR")
        .map(PathBuf::from)
        .or_else(|| std::env::current_dir().ok())?;
    let mut found = None;
    for dir in start.ancestors() {
        if let Ok(text) = fs::read_to_string(dir.join("Cargo.toml"))
            && (found.is_none() || text.lines().any(|l| l.trim() == "[workspace]"))
        {
            found = Some(dir.to_path_buf());
        }
    }
    found
}

fn resolve(root: &Option<PathBuf>, p: PathBuf) -> PathBuf {
    match root {
        Some(r) if p.is_relative() => r.join(p),
        _ => p,
    }
}

/// A call site, `file:line:col` as reports give it.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Site {
    /// The file, `/`-separated, relative to the workspace root when it is inside it.
    pub(crate) file: String,
    /// Whether `file` is relative (in the workspace).
    pub(crate) relative: bool,
    pub(crate) line: u64,
    pub(crate) col: u64,
}

/// Reads a site; `None` for anything that is not `file:line:col` with positive numbers.
pub(crate) fn parse_site(site: &str, root: Option<&Path>) -> Option<Site> {
    let mut it = site.rsplitn(3, ':');
    let col: u64 = it.next()?.parse().ok()?;
    let line: u64 = it.next()?.parse().ok()?;
    let file = it.next()?;
    if file.is_empty() || line == 0 || col == 0 {
        return None;
    }
    let path = Path::new(file);
    let (file, relative) = match root.and_then(|r| path.strip_prefix(r).ok()) {
        Some(rel) => (rel.to_string_lossy().into_owned(), true),
        None => (file.to_owned(), path.is_relative()),
    };
    Some(Site {
        file: file.replace('\\', "/"),
        relative,
        line,
        col,
    })
}

/// A URI reference for `site`'s file: relative as is, absolute as `file://`.
fn uri(site: &Site) -> String {
    let encoded = percent_encode(&site.file);
    if site.relative {
        encoded
    } else if encoded.starts_with('/') {
        format!("file://{encoded}")
    } else {
        format!("file:///{encoded}")
    }
}

/// Percent-encodes everything but unreserved characters and `/` (RFC 3986).
pub(crate) fn percent_encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~/".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

// ---------------------------------------------------------------------------------------------
// GitHub annotations
// ---------------------------------------------------------------------------------------------

/// A workflow command's data: `%`, CR and LF escaped.
pub(crate) fn escape_data(s: &str) -> String {
    s.replace('%', "%25")
        .replace('\r', "%0D")
        .replace('\n', "%0A")
}

/// A workflow command's property value: as data, plus `:` and `,`.
pub(crate) fn escape_property(s: &str) -> String {
    escape_data(s).replace(':', "%3A").replace(',', "%2C")
}

/// `::error file=..,line=..,col=..,title=lockscope <kind>::<first line>` at the finding's
/// first site in the workspace (or its first site).
pub(crate) fn github_annotation(f: &Finding, root: Option<&Path>) -> String {
    let text = f.to_string();
    let first = text.lines().next().unwrap_or_default();
    let title = escape_property(&format!("lockscope {}", f.kind));
    let sites: Vec<Site> = f.sites.iter().filter_map(|s| parse_site(s, root)).collect();
    match sites.iter().find(|s| s.relative).or(sites.first()) {
        Some(s) => format!(
            "::error file={},line={},col={},title={title}::{}",
            escape_property(&s.file),
            s.line,
            s.col,
            escape_data(first)
        ),
        None => format!("::error title={title}::{}", escape_data(first)),
    }
}

// ---------------------------------------------------------------------------------------------
// JSON lines
// ---------------------------------------------------------------------------------------------

/// One finding as `/debug/findings` gives it: its fields and its report text.
#[derive(Serialize)]
struct FindingLine<'a> {
    #[serde(flatten)]
    finding: &'a Finding,
    report: String,
}

pub(crate) fn json_lines(findings: &[&Finding]) -> String {
    let mut out = String::new();
    for f in findings {
        let line = FindingLine {
            finding: f,
            report: f.to_string(),
        };
        if let Ok(text) = serde_json::to_string(&line) {
            out.push_str(&text);
            out.push('\n');
        }
    }
    out
}

fn write_json(path: &Path, findings: &[&Finding]) -> std::io::Result<()> {
    let text = json_lines(findings);
    let file = OpenOptions::new().create(true).append(true).open(path)?;
    let _lock = FileLock::take(&file)?;
    // One write of whole lines on an append-only file: never interleaved with another's.
    (&file).write_all(text.as_bytes())
}

// ---------------------------------------------------------------------------------------------
// File locks
// ---------------------------------------------------------------------------------------------

/// An exclusive lock of a file against other processes (`flock`) and of this process's
/// writes against each other, released on drop. Taken with bounded patience: what cannot get
/// it in 5 s writes nothing rather than hang a test (or the watchdog's exit).
struct FileLock<'a> {
    #[cfg_attr(not(unix), allow(dead_code))]
    file: &'a File,
    _in_process: parking_lot::MutexGuard<'static, ()>,
}

/// This process's writers, in turn (`flock` alone would do on Unix, where each open file is
/// locked apart; elsewhere this is the only lock).
static IN_PROCESS: Mutex<()> = Mutex::new(());

impl<'a> FileLock<'a> {
    fn take(file: &'a File) -> std::io::Result<FileLock<'a>> {
        let deadline = Instant::now() + Duration::from_secs(5);
        let Some(in_process) = IN_PROCESS.try_lock_for(Duration::from_secs(5)) else {
            return Err(std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                "another thread kept the report file for 5 s",
            ));
        };
        #[cfg(unix)]
        {
            use std::os::fd::AsRawFd as _;
            loop {
                // SAFETY: a plain syscall on a descriptor that `file` keeps open.
                let r = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
                if r == 0 {
                    break;
                }
                let e = std::io::Error::last_os_error();
                if e.kind() != std::io::ErrorKind::WouldBlock || Instant::now() >= deadline {
                    return Err(e);
                }
                std::thread::sleep(Duration::from_millis(5));
            }
        }
        #[cfg(not(unix))]
        let _ = deadline;
        Ok(FileLock {
            file,
            _in_process: in_process,
        })
    }
}

impl Drop for FileLock<'_> {
    fn drop(&mut self) {
        #[cfg(unix)]
        {
            use std::os::fd::AsRawFd as _;
            // SAFETY: as in `take`.
            unsafe { libc::flock(self.file.as_raw_fd(), libc::LOCK_UN) };
        }
    }
}

mod sarif;

#[cfg(test)]
mod tests;
