//! The core of both `GlobalLock`s ([`crate::parking_lot::GlobalLock`],
//! [`crate::tokio::GlobalLock`]): where the lock file lives, the OS file lock taken on it
//! (through `fs4`: `flock` on Unix, `LockFileEx` on Windows), what the holder writes into it
//! and what a waiter reads back, and the guard both forms return.
//!
//! Each acquisition opens the lock file anew: an OS file lock belongs to an open file (its
//! open file description on Unix, its handle on Windows), so two acquisitions in one process
//! exclude each other exactly as two processes do, and a holder that dies (killed, crashed)
//! has its file closed by the OS, which releases the lock at once.

use std::fmt;
use std::fs::{File, OpenOptions};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::panic::Location;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::Duration;

use lockscope_detector::__private::hooks::{self, PrimCell, PrimKind};
use lockscope_detector::__private::prim::Prim;
use lockscope_detector::HolderSnapshot;

use crate::probe::Token;

/// The directory of the lock files of [`named`](crate::parking_lot::GlobalLock::named) global
/// locks: `lockscope-global` in the system's temporary directory
/// ([`std::env::temp_dir`], `/tmp/lockscope-global` on most Unix systems), shared by every
/// process of the machine that uses the same temporary directory.
///
/// ```
/// let dir = lockscope::parking_lot::global_lock_dir();
/// assert!(dir.ends_with("lockscope-global"));
/// ```
pub fn global_lock_dir() -> PathBuf {
    std::env::temp_dir().join("lockscope-global")
}

/// The lock file's name for a lock named `name`: the name's ASCII letters, digits, `-`, `_`
/// and `.` kept (at most 64 of them), any other character replaced by `_`, a leading `.` too
/// (no hidden file, no `..`), then, when that changed the name, a hash of the whole name (so
/// that `a/b` and `a_b` stay two locks), and `.lock`. Never a path: no separator survives.
fn file_name(name: &str) -> String {
    let mut s: String = name
        .chars()
        .take(64)
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
                c
            } else {
                '_'
            }
        })
        .collect();
    if s.is_empty() || s.starts_with('.') {
        s.replace_range(..s.chars().next().map_or(0, char::len_utf8), "_");
    }
    if s != name {
        // FNV-1a: stable across processes, builds and Rust versions, as a lock file's name
        // must be (std's hashers promise none of that).
        let hash = name.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
            (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
        });
        s.push_str(&format!("-{hash:016x}"));
    }
    s.push_str(".lock");
    s
}

/// Creates the default directory when missing, open to every user (sticky, as `/tmp` is),
/// and refuses one that is not a directory (a symlink planted there).
fn ensure_dir(dir: &Path) -> io::Result<()> {
    match std::fs::create_dir(dir) {
        Ok(()) => {
            #[cfg(unix)]
            {
                use std::os::unix::fs::PermissionsExt;
                // Best effort: without it, only this user can create lock files there.
                let _ = std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o1777));
            }
        }
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(e),
    }
    if std::fs::symlink_metadata(dir)?.is_dir() {
        Ok(())
    } else {
        Err(io::Error::other(format!(
            "lockscope GlobalLock: {} is not a directory",
            dir.display()
        )))
    }
}

/// This process's command line, as the holder writes it: `/proc/self/cmdline` on Linux (the
/// arguments as the OS has them, even those not valid UTF-8), [`std::env::args_os`]
/// elsewhere; arguments joined by spaces.
fn command_line() -> &'static str {
    static CMD: OnceLock<String> = OnceLock::new();
    CMD.get_or_init(|| {
        #[cfg(target_os = "linux")]
        if let Ok(raw) = std::fs::read("/proc/self/cmdline") {
            let args: Vec<_> = raw
                .split(|&b| b == 0)
                .filter(|a| !a.is_empty())
                .map(String::from_utf8_lossy)
                .collect();
            return args.join(" ");
        }
        std::env::args_os()
            .map(|a| a.to_string_lossy().into_owned())
            .collect::<Vec<_>>()
            .join(" ")
    })
}

/// Longest command line shown in a report, in characters.
const SHOWN_CMD: usize = 120;

/// How a waiter describes the holder from the lock file's `contents` (written by another
/// process, so trusted for nothing): ``process 4121 (`cargo test`)``, the command line's
/// control characters escaped, backticks replaced, and cut to [`SHOWN_CMD`] characters.
/// `None` when the file says nothing usable (the holder has not written it yet, or wrote
/// something else).
fn describe(contents: &str) -> Option<String> {
    let mut lines = contents.lines();
    let pid: u32 = lines.next()?.trim().parse().ok()?;
    let raw = lines.next().unwrap_or("");
    let mut cmd = String::new();
    for (i, c) in raw.chars().enumerate() {
        if i == SHOWN_CMD {
            cmd.push('…');
            break;
        }
        match c {
            '`' => cmd.push('\''),
            c if c.is_control() => cmd.extend(c.escape_default()),
            c => cmd.push(c),
        }
    }
    let own = if pid == std::process::id() {
        ", this process: another GlobalLock on the same file"
    } else {
        ""
    };
    Some(format!("process {pid} (`{cmd}`{own})"))
}

/// The first poll interval of a timed or async wait: short, so that a lock held briefly is
/// taken soon after its release.
const FIRST_POLL: Duration = Duration::from_millis(1);

/// The longest poll interval: a long wait costs a wake-up per interval, and its waiter takes
/// the lock at most this late after its release.
const LAST_POLL: Duration = Duration::from_millis(32);

/// Poll intervals of a timed or async wait: [`FIRST_POLL`], doubling up to [`LAST_POLL`].
pub(crate) struct Backoff(Duration);

impl Backoff {
    pub(crate) fn new() -> Self {
        Backoff(FIRST_POLL)
    }

    /// The next interval, at most `left`.
    pub(crate) fn next(&mut self, left: Option<Duration>) -> Duration {
        let d = self.0;
        self.0 = (self.0 * 2).min(LAST_POLL);
        left.map_or(d, |left| d.min(left))
    }
}

/// What both `GlobalLock`s are: the detector's primitive and the lock file's path.
pub(crate) struct Core {
    cell: PrimCell,
    path: PathBuf,
}

impl Core {
    /// A lock named `name` in [`global_lock_dir`].
    pub(crate) fn named(
        name: &str,
        kind: PrimKind,
        site: &'static Location<'static>,
    ) -> io::Result<Core> {
        let dir = global_lock_dir();
        ensure_dir(&dir)?;
        Ok(Core::at(name, dir.join(file_name(name)), kind, site))
    }

    /// A lock named `name` on the file `path`.
    pub(crate) fn at(
        name: &str,
        path: PathBuf,
        kind: PrimKind,
        site: &'static Location<'static>,
    ) -> Core {
        Core {
            cell: PrimCell::new(Some(name.into()), kind, site, 1),
            path,
        }
    }

    pub(crate) fn prim(&self) -> &Prim {
        self.cell.get()
    }

    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// Opens the lock file for one acquisition, creating it if missing; read-only when this
    /// user may not write it (another user's file: the lock works, the holder's line is not
    /// written). Never follows a symlink in the last component on Unix.
    pub(crate) fn open(&self) -> io::Result<File> {
        let mut o = OpenOptions::new();
        o.read(true).write(true).create(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            o.mode(0o666).custom_flags(libc::O_NOFOLLOW);
        }
        match o.open(&self.path) {
            Err(e) if e.kind() == io::ErrorKind::PermissionDenied => {
                let mut o = OpenOptions::new();
                o.read(true);
                #[cfg(unix)]
                {
                    use std::os::unix::fs::OpenOptionsExt;
                    o.custom_flags(libc::O_NOFOLLOW);
                }
                o.open(&self.path)
            }
            r => r,
        }
    }

    /// Takes the OS lock on `file` if it is free: `Ok(false)` when another open file holds
    /// it.
    pub(crate) fn try_file(&self, file: &File) -> io::Result<bool> {
        match fs4::FileExt::try_lock(file) {
            Ok(()) => Ok(true),
            Err(fs4::TryLockError::WouldBlock) => Ok(false),
            Err(fs4::TryLockError::Error(e)) => Err(e),
        }
    }

    /// Waits for the OS lock on `file`, blocking the thread.
    pub(crate) fn lock_file(&self, file: &File) -> io::Result<()> {
        fs4::FileExt::lock(file)
    }

    /// A waiter's look at the lock file: tells the detector who holds it (for reports and
    /// `/debug/locks`). Best effort: a file it cannot read (Windows keeps a locked file's
    /// bytes from other handles) says nothing.
    pub(crate) fn describe_holder(&self, mut file: &File) {
        if !hooks::enabled() {
            return;
        }
        let mut contents = String::new();
        let read = file
            .seek(SeekFrom::Start(0))
            .and_then(|_| file.take(4096).read_to_string(&mut contents));
        let who = read
            .ok()
            .and_then(|_| describe(&contents))
            .unwrap_or_else(|| "another process (it has not written who it is)".into());
        hooks::held_elsewhere(self.prim(), Some(&who));
    }

    /// A wait here ended without the lock (timed out, cancelled, failed): with nobody else
    /// here waiting, nobody's report needs the holder's description any more.
    pub(crate) fn wait_ended(&self) {
        let prim = self.prim();
        if hooks::enabled() && prim.waiting() == 0 {
            hooks::held_elsewhere(prim, None);
        }
    }

    /// The lock on `file` was taken (recorded by `token`): the holder writes its pid and
    /// command line into the file, and no other process holds it now.
    pub(crate) fn guard(&self, file: File, token: Token) -> GlobalLockGuard<'_> {
        if hooks::enabled() {
            hooks::held_elsewhere(self.prim(), None);
        }
        let mut f = &file;
        // Best effort: the lock holds whether or not its holder could say who it is.
        let _ = f.set_len(0).and_then(|()| {
            f.seek(SeekFrom::Start(0))?;
            f.write_all(format!("{}\n{}\n", std::process::id(), command_line()).as_bytes())
        });
        GlobalLockGuard {
            core: self,
            file,
            token,
        }
    }

    /// The holders in this process, by lockscope's books.
    pub(crate) fn holders(&self) -> Vec<HolderSnapshot> {
        crate::status::holders(self.prim())
    }

    /// Whether a `try_lock` would get it now: the OS lock is taken on a file of its own and
    /// released at once (closing the file). A file that cannot be opened counts as "no".
    pub(crate) fn can_lock(&self) -> bool {
        self.open()
            .and_then(|file| self.try_file(&file))
            .unwrap_or(false)
    }

    /// Whether the current task or thread holds it, by lockscope's books.
    pub(crate) fn held_by_current(&self) -> bool {
        crate::status::held_by_current(self.prim())
    }
}

impl fmt::Debug for Core {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GlobalLock")
            .field("name", &self.prim().name())
            .field("path", &self.path)
            .finish()
    }
}

impl Drop for Core {
    fn drop(&mut self) {
        if let Some(p) = self.cell.try_get() {
            hooks::held_elsewhere(p, None);
        }
    }
}

/// A hold of a global lock (either form's): while it lives, no other process of the machine,
/// nor another acquisition in this one, holds the lock. Dropped, it clears the holder's line
/// from the lock file and releases the OS lock.
#[must_use = "if unused the GlobalLock will immediately unlock"]
pub struct GlobalLockGuard<'a> {
    core: &'a Core,
    // Released in `Drop`, in this order: the line cleared, the books, then the OS lock.
    file: File,
    token: Token,
}

impl GlobalLockGuard<'_> {
    /// The lock file this guard holds the lock of.
    pub fn path(&self) -> &Path {
        self.core.path()
    }
}

impl Drop for GlobalLockGuard<'_> {
    fn drop(&mut self) {
        // A later holder writes its own line; clearing ours keeps a waiter from naming a
        // process that no longer holds the lock (best effort).
        let _ = self.file.set_len(0);
        // Released in the books before the OS lock, so the detector never sees two holders.
        self.token.release(self.core.prim());
        // Closing the file (dropping the guard's field) would release it too; unlocking first
        // makes the release not wait for the field's drop.
        let _ = fs4::FileExt::unlock(&self.file);
    }
}

impl fmt::Debug for GlobalLockGuard<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GlobalLockGuard")
            .field("name", &self.core.prim().name())
            .field("path", &self.core.path)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::{describe, file_name};

    #[test]
    fn names_become_file_names_without_paths() {
        assert_eq!(file_name("emulator"), "emulator.lock");
        for hostile in [
            "../etc/passwd",
            "..",
            ".",
            "",
            "a/b",
            "a\\b",
            "C:x",
            "é",
            "a\0b",
        ] {
            let f = file_name(hostile);
            assert!(!f.contains(['/', '\\', ':', '\0']), "{hostile:?} -> {f}");
            assert!(!f.starts_with('.'), "{hostile:?} -> {f}");
            assert!(
                f.ends_with(".lock") && f.len() > ".lock".len(),
                "{hostile:?} -> {f}"
            );
        }
        assert_ne!(file_name("a/b"), file_name("a_b"));
        assert!(file_name(&"x".repeat(1000)).len() < 100);
    }

    #[test]
    fn a_holder_line_is_escaped_and_cut() {
        assert_eq!(
            describe("4121\ncargo test\n").as_deref(),
            Some("process 4121 (`cargo test`)")
        );
        assert_eq!(
            describe("7\nrm `x`\u{1b}[31m\n").as_deref(),
            Some("process 7 (`rm 'x'\\u{1b}[31m`)")
        );
        let long = describe(&format!("1\n{}", "y".repeat(500))).unwrap();
        assert!(long.chars().count() < 150, "{long}");
        assert_eq!(describe(""), None);
        assert_eq!(describe("not a pid\n"), None);
    }
}
