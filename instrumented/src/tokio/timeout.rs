//! The error of the timed forms (`lock_timeout`, `acquire_timeout`, ...).

use std::fmt;
use std::time::Duration;

use lockscope_detector::__private::prim::Prim;

/// A timed acquisition gave up: its deadline passed, or (semaphores) the semaphore was
/// closed. `Display` names the primitive, how long it waited and who held it.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// use std::time::Duration;
/// use lockscope::tokio::Mutex;
///
/// let m = Mutex::named("db", 0);
/// let _held = m.lock().await;
/// let err = m.lock_timeout(Duration::from_millis(10)).await.unwrap_err();
/// assert!(err.to_string().starts_with("timed out after"));
/// assert!(err.to_string().contains("\"db\""));
/// assert_eq!(err.lock(), "db");
/// # }
/// ```
#[derive(Clone, Debug)]
pub struct TimeoutError {
    lock: String,
    kind: &'static str,
    waited: Duration,
    closed: bool,
    holders: Vec<(String, String, Duration)>,
}

impl TimeoutError {
    pub(crate) fn elapsed(prim: &Prim, waited: Duration) -> TimeoutError {
        TimeoutError {
            lock: prim.name().to_owned(),
            kind: prim.kind().as_str(),
            waited,
            closed: false,
            holders: crate::probe::holders_of(prim),
        }
    }

    pub(crate) fn closed(prim: &Prim) -> TimeoutError {
        TimeoutError {
            lock: prim.name().to_owned(),
            kind: prim.kind().as_str(),
            waited: Duration::ZERO,
            closed: true,
            holders: Vec::new(),
        }
    }

    /// The primitive's name.
    pub fn lock(&self) -> &str {
        &self.lock
    }

    /// How long it waited before giving up.
    pub fn waited(&self) -> Duration {
        self.waited
    }

    /// Whether it failed because the semaphore was closed (not because of the deadline).
    pub fn is_closed(&self) -> bool {
        self.closed
    }

    /// Who held the primitive when it gave up: `(task or thread, acquisition site, held for)`.
    pub fn holders(&self) -> &[(String, String, Duration)] {
        &self.holders
    }
}

impl fmt::Display for TimeoutError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.closed {
            return write!(f, "{} {:?} was closed while waiting", self.kind, self.lock);
        }
        write!(
            f,
            "timed out after {:?} waiting for {} {:?}",
            self.waited, self.kind, self.lock
        )?;
        if self.holders.is_empty() {
            return f.write_str(
                "; no holder is recorded (held by an uninstrumented path or just released)",
            );
        }
        f.write_str("; held by ")?;
        for (i, (who, site, for_)) in self.holders.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            write!(f, "{who} (acquired at {site}) for {for_:?}")?;
        }
        Ok(())
    }
}

impl std::error::Error for TimeoutError {}
