//! Modes and thresholds as values: one [`Config`], its defaults, a builder, the environment,
//! and the per-test-scope thresholds rules read. Storing a configuration starts nothing.
//! (The public module docs are on `crate::config`, in `lib.rs`.)

use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, LazyLock};
use std::time::Duration;

use parking_lot::RwLock;

/// What the detector does.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
#[non_exhaustive]
pub enum Mode {
    /// Wrappers only forward to the real primitive: one relaxed load and a branch per call.
    Off,
    /// Record, analyse, log and count findings; never panic; bounded memory.
    Production,
    /// As production, with test thresholds; findings fail armed tests and `assert_clean`.
    Test,
}

impl Mode {
    fn as_u8(self) -> u8 {
        match self {
            Mode::Off => 0,
            Mode::Production => 1,
            Mode::Test => 2,
        }
    }
}

/// Detector configuration. Build one with [`Config::builder`], [`Config::production`],
/// [`Config::test`] or [`Config::from_env`], then [`install`](Config::install) it.
///
/// ```
/// use std::time::Duration;
/// use lockscope_detector::Config;
///
/// let cfg = Config::builder()
///     .stuck(Duration::from_secs(5))
///     .starvation(Duration::from_secs(5))
///     .build()
///     .unwrap();
/// assert_eq!(cfg.stuck, Duration::from_secs(5));
/// ```
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct Config {
    /// What the detector does.
    pub mode: Mode,
    /// `stuck-queue` threshold.
    pub stuck: Duration,
    /// `starvation` threshold (waiters bypassed; holders of a contended primitive).
    pub starvation: Duration,
    /// `leaked-permit` threshold; `None` checks leaks at the end of each test only.
    pub leak: Option<Duration>,
    /// `blocking-in-async` threshold: how long a blocking wait may stall an async runtime's
    /// worker thread. Tokio asks for well under a millisecond between `.await`s; the
    /// production default leaves room for a loaded machine preempting the holder.
    pub worker_stall: Duration,
    /// Distinct series before new ones fold into `other`: `lock` label values (primitives
    /// fold into `lock="other"`) and `channel` label values (channels fold into
    /// `channel="other"`) count against this one cap together.
    pub max_series: usize,
    /// Findings kept in memory (oldest dropped first, counted).
    pub max_findings: usize,
    /// Lock-order edges kept (new ones dropped beyond it, counted).
    pub max_edges: usize,
    /// How often the watchdog thread analyses the live state.
    pub tick: Duration,
    /// Period of the clock thread that times holds (`docs/performance.md`, "Clocks"); `None`
    /// (the default): no clock thread, holds read the time the watchdog publishes (every
    /// <= 100 ms).
    pub clock_tick: Option<Duration>,
    /// Test timeout: an armed test (`#[lockscope::test]`) still running with nothing moving
    /// in it for this long fails with a dump of its live state. `None`: no timeout (the
    /// production default; `LOCKSCOPE_TEST_TIMEOUT_MS=0`). Only armed tests use it.
    pub test_timeout: Option<Duration>,
}

impl Default for Config {
    fn default() -> Config {
        Config::production()
    }
}

impl Config {
    /// Production defaults: 10 s stuck and starvation, 60 s leak.
    pub fn production() -> Config {
        Config {
            mode: Mode::Production,
            stuck: Duration::from_secs(10),
            starvation: Duration::from_secs(10),
            leak: Some(Duration::from_secs(60)),
            worker_stall: Duration::from_millis(50),
            max_series: 1000,
            max_findings: 1000,
            max_edges: 100_000,
            tick: Duration::from_millis(100),
            clock_tick: None,
            test_timeout: None,
        }
    }

    /// Test defaults: 1 s stuck and starvation, leaks checked at the end of the test, 10 ms
    /// worker stall, 60 s test timeout.
    pub fn test() -> Config {
        Config {
            mode: Mode::Test,
            stuck: Duration::from_secs(1),
            starvation: Duration::from_secs(1),
            leak: None,
            worker_stall: Duration::from_millis(10),
            test_timeout: Some(Duration::from_secs(60)),
            ..Config::production()
        }
    }

    /// A builder starting from the production defaults.
    pub fn builder() -> Builder {
        Builder {
            cfg: Config::production(),
            error: None,
        }
    }

    /// The defaults of `LOCKSCOPE_MODE` (production unless set) overridden by the
    /// `LOCKSCOPE_*` variables.
    ///
    /// # Errors
    ///
    /// [`ConfigError`] naming the variable and the value when one does not parse or is 0.
    pub fn from_env() -> Result<Config, ConfigError> {
        Self::from_lookup(|k| std::env::var(k).ok())
    }

    fn from_lookup(get: impl Fn(&str) -> Option<String>) -> Result<Config, ConfigError> {
        let mut cfg = match get("LOCKSCOPE_MODE").as_deref().map(str::trim) {
            None | Some("") | Some("production") => Config::production(),
            Some("test") => Config::test(),
            Some("off") => Config {
                mode: Mode::Off,
                ..Config::production()
            },
            Some(other) => {
                return Err(ConfigError::new(
                    "LOCKSCOPE_MODE",
                    other,
                    "expected off, production or test",
                ));
            }
        };
        let ms = |key: &'static str| -> Result<Option<Duration>, ConfigError> {
            match get(key) {
                None => Ok(None),
                Some(v) => parse_ms(key, &v).map(Some),
            }
        };
        if let Some(d) = ms("LOCKSCOPE_STUCK_MS")? {
            cfg.stuck = d;
        }
        if let Some(d) = ms("LOCKSCOPE_STARVATION_MS")? {
            cfg.starvation = d;
        }
        if let Some(d) = ms("LOCKSCOPE_LEAK_MS")? {
            cfg.leak = Some(d);
        }
        if let Some(d) = ms("LOCKSCOPE_WORKER_STALL_MS")? {
            cfg.worker_stall = d;
        }
        if let Some(v) = get("LOCKSCOPE_CLOCK_TICK_MS") {
            cfg.clock_tick = match v.trim() {
                "0" => None,
                _ => Some(parse_ms("LOCKSCOPE_CLOCK_TICK_MS", &v)?),
            };
        }
        if let Some(v) = get(TEST_TIMEOUT_VAR) {
            cfg.test_timeout = parse_timeout_ms(TEST_TIMEOUT_VAR, &v)?;
        }
        Ok(cfg)
    }

    /// Makes this the process-wide configuration, and nothing more (the public
    /// [`Config::install`], in the runtime layer, also starts the watchdog).
    pub(crate) fn store(self) {
        MODE.store(self.mode.as_u8(), Ordering::Relaxed);
        *CONFIG.write() = Arc::new(self);
    }
}

/// Parses a threshold in milliseconds: a positive integer.
///
/// # Errors
///
/// When `value` is not a positive integer.
pub fn parse_ms(key: &'static str, value: &str) -> Result<Duration, ConfigError> {
    match value.trim().parse::<u64>() {
        Ok(0) => Err(ConfigError::new(key, value, "must be at least 1")),
        Ok(n) => Ok(Duration::from_millis(n)),
        Err(_) => Err(ConfigError::new(
            key,
            value,
            "expected a whole number of milliseconds",
        )),
    }
}

/// The variable that sets the test timeout ([`Config::test_timeout`]).
pub const TEST_TIMEOUT_VAR: &str = "LOCKSCOPE_TEST_TIMEOUT_MS";

/// Parses a timeout in milliseconds where `0` means none: a whole number.
///
/// # Errors
///
/// When `value` is not a whole number of milliseconds.
pub fn parse_timeout_ms(key: &'static str, value: &str) -> Result<Option<Duration>, ConfigError> {
    match value.trim().parse::<u64>() {
        Ok(0) => Ok(None),
        Ok(n) => Ok(Some(Duration::from_millis(n))),
        Err(_) => Err(ConfigError::new(
            key,
            value,
            "expected a whole number of milliseconds (0: no timeout)",
        )),
    }
}

/// Builds a [`Config`]; errors are kept until [`build`](Builder::build).
#[derive(Clone, Debug)]
pub struct Builder {
    cfg: Config,
    error: Option<ConfigError>,
}

impl Builder {
    /// Sets the mode.
    pub fn mode(mut self, mode: Mode) -> Builder {
        self.cfg.mode = mode;
        self
    }
    /// Sets the `stuck-queue` threshold (must be non-zero).
    pub fn stuck(mut self, d: Duration) -> Builder {
        self.check("stuck", d);
        self.cfg.stuck = d;
        self
    }
    /// Sets the `starvation` threshold (must be non-zero).
    pub fn starvation(mut self, d: Duration) -> Builder {
        self.check("starvation", d);
        self.cfg.starvation = d;
        self
    }
    /// Sets the `leaked-permit` threshold; `None` checks at the end of tests only.
    pub fn leak(mut self, d: Option<Duration>) -> Builder {
        if let Some(d) = d {
            self.check("leak", d);
        }
        self.cfg.leak = d;
        self
    }
    /// Sets the worker-stall threshold of `blocking-in-async` (at least 1 ms).
    pub fn worker_stall(mut self, d: Duration) -> Builder {
        self.check("worker_stall", d);
        self.cfg.worker_stall = d;
        self
    }
    /// Sets the label cap: how many series (a name with a kind: a `"db"` mutex and a `"db"`
    /// semaphore are two; locks and channels alike) before new ones are counted under
    /// `lock="other"` (or `channel="other"`).
    pub fn max_series(mut self, n: usize) -> Builder {
        self.cfg.max_series = n;
        self
    }
    /// Sets how many findings are kept.
    pub fn max_findings(mut self, n: usize) -> Builder {
        if n == 0 {
            self.error
                .get_or_insert(ConfigError::new("max_findings", "0", "must be at least 1"));
        }
        self.cfg.max_findings = n.max(1);
        self
    }
    /// Sets how many lock-order edges are kept.
    pub fn max_edges(mut self, n: usize) -> Builder {
        self.cfg.max_edges = n;
        self
    }
    /// Sets the watchdog period (10 ms to 1 s: the 1-second deadlock promise needs it short).
    pub fn tick(mut self, d: Duration) -> Builder {
        if d < Duration::from_millis(10) || d > Duration::from_secs(1) {
            self.error.get_or_insert(ConfigError::new(
                "tick",
                &format!("{d:?}"),
                "must be between 10ms and 1s",
            ));
        }
        self.cfg.tick = d;
        self
    }
    /// Sets the period of the clock thread that times holds (100 us to 100 ms); `None` runs
    /// no clock thread: holds read the time the watchdog publishes.
    pub fn clock_tick(mut self, d: Option<Duration>) -> Builder {
        if let Some(d) = d
            && (d < Duration::from_micros(100) || d > Duration::from_millis(100))
        {
            self.error.get_or_insert(ConfigError::new(
                "clock_tick",
                &format!("{d:?}"),
                "must be between 100us and 100ms",
            ));
        }
        self.cfg.clock_tick = d;
        self
    }
    /// Sets the test timeout of armed tests; `None` (or a zero duration) disables it.
    pub fn test_timeout(mut self, d: Option<Duration>) -> Builder {
        self.cfg.test_timeout = d.filter(|d| !d.is_zero());
        self
    }
    fn check(&mut self, key: &'static str, d: Duration) {
        if d.is_zero() {
            self.error
                .get_or_insert(ConfigError::new(key, "0", "must be at least 1ms"));
        }
    }
    /// The configuration.
    ///
    /// # Errors
    ///
    /// The first invalid setting.
    pub fn build(self) -> Result<Config, ConfigError> {
        match self.error {
            Some(e) => Err(e),
            None => Ok(self.cfg),
        }
    }
}

/// An invalid configuration value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfigError {
    key: &'static str,
    value: String,
    reason: &'static str,
}

impl ConfigError {
    fn new(key: &'static str, value: &str, reason: &'static str) -> ConfigError {
        ConfigError {
            key,
            value: value.to_owned(),
            reason,
        }
    }
    /// The setting or variable at fault.
    pub fn key(&self) -> &str {
        self.key
    }
}

impl std::fmt::Display for ConfigError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "invalid {} value {:?}: {}",
            self.key, self.value, self.reason
        )
    }
}

impl std::error::Error for ConfigError {}

const MODE_UNSET: u8 = u8::MAX;
static MODE: AtomicU8 = AtomicU8::new(MODE_UNSET);
static CONFIG: LazyLock<RwLock<Arc<Config>>> = LazyLock::new(|| {
    let cfg = Config::from_env().unwrap_or_else(|e| {
        eprintln!("lockscope: {e}; using the default");
        tracing::error!(target: "lockscope::detector", "{e}; using the default");
        Config::production()
    });
    MODE.store(cfg.mode.as_u8(), Ordering::Relaxed);
    RwLock::new(Arc::new(cfg))
});

/// The configuration in force.
pub fn current() -> Arc<Config> {
    CONFIG.read().clone()
}

/// The mode in force.
pub fn mode() -> Mode {
    match mode_u8() {
        0 => Mode::Off,
        2 => Mode::Test,
        _ => Mode::Production,
    }
}

#[inline]
fn mode_u8() -> u8 {
    let m = MODE.load(Ordering::Relaxed);
    if m != MODE_UNSET { m } else { init_mode() }
}

#[cold]
fn init_mode() -> u8 {
    LazyLock::force(&CONFIG);
    MODE.load(Ordering::Relaxed)
}

/// Whether the detector records anything (mode is not `Off`). One relaxed load.
#[inline]
pub fn enabled() -> bool {
    mode_u8() != 0
}

/// The configuration's locks (the process-wide one and the test scopes'), held: for
/// `testing::hold_global_locks`.
pub(crate) fn config_lock() -> impl Sized + 'static {
    (CONFIG.read(), SCOPES.read())
}

/// The thresholds of each armed test scope (set by `TestScope::arm`), for [`for_scopes`].
static SCOPES: RwLock<Vec<(u32, Config)>> = RwLock::new(Vec::new());

/// Test scope `id` applies `config` to what it creates and does, until [`disarm_scope`].
pub(crate) fn arm_scope(id: u32, config: Config) {
    SCOPES.write().push((id, config));
}

/// Test scope `id` has ended.
pub(crate) fn disarm_scope(id: u32) {
    SCOPES.write().retain(|(s, _)| *s != id);
}

/// Thresholds for something created or done in `scopes` (the strictest armed one applies;
/// the process-wide configuration when none is armed).
pub(crate) fn for_scopes(scopes: &[u32]) -> Arc<Config> {
    let armed = SCOPES.read();
    let mut best: Option<Config> = None;
    for (_, cfg) in armed.iter().filter(|(id, _)| scopes.contains(id)) {
        best = Some(match best {
            None => cfg.clone(),
            Some(b) => Config {
                stuck: b.stuck.min(cfg.stuck),
                starvation: b.starvation.min(cfg.starvation),
                worker_stall: b.worker_stall.min(cfg.worker_stall),
                leak: match (b.leak, cfg.leak) {
                    (Some(x), Some(y)) => Some(x.min(y)),
                    (x, y) => x.or(y),
                },
                ..b
            },
        });
    }
    match best {
        Some(c) => Arc::new(c),
        None => current(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let v: Vec<(String, String)> = pairs
            .iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect();
        move |k| v.iter().find(|(a, _)| a == k).map(|(_, b)| b.clone())
    }

    #[test]
    fn env_overrides_and_errors() {
        let c = Config::from_lookup(env(&[("LOCKSCOPE_STUCK_MS", "250")])).unwrap();
        assert_eq!(c.stuck, Duration::from_millis(250));
        assert_eq!(c.mode, Mode::Production);
        let c = Config::from_lookup(env(&[("LOCKSCOPE_MODE", "test")])).unwrap();
        assert_eq!(c.leak, None);
        let e = Config::from_lookup(env(&[("LOCKSCOPE_LEAK_MS", "soon")])).unwrap_err();
        assert_eq!(
            e.to_string(),
            "invalid LOCKSCOPE_LEAK_MS value \"soon\": expected a whole number of milliseconds"
        );
        let e = Config::from_lookup(env(&[("LOCKSCOPE_STUCK_MS", "0")])).unwrap_err();
        assert_eq!(e.key(), "LOCKSCOPE_STUCK_MS");
        assert!(Config::from_lookup(env(&[("LOCKSCOPE_MODE", "loud")])).is_err());
        let c = Config::from_lookup(env(&[("LOCKSCOPE_CLOCK_TICK_MS", "2")])).unwrap();
        assert_eq!(c.clock_tick, Some(Duration::from_millis(2)));
        let c = Config::from_lookup(env(&[("LOCKSCOPE_CLOCK_TICK_MS", "0")])).unwrap();
        assert_eq!(c.clock_tick, None);
        assert_eq!(Config::production().clock_tick, None, "off by default");
        assert!(Config::from_lookup(env(&[("LOCKSCOPE_CLOCK_TICK_MS", "often")])).is_err());
    }

    #[test]
    fn test_timeout_from_env() {
        assert_eq!(
            Config::production().test_timeout,
            None,
            "none in production"
        );
        assert_eq!(Config::test().test_timeout, Some(Duration::from_secs(60)));
        let c = Config::from_lookup(env(&[("LOCKSCOPE_TEST_TIMEOUT_MS", "1500")])).unwrap();
        assert_eq!(c.test_timeout, Some(Duration::from_millis(1500)));
        let c = Config::from_lookup(env(&[
            ("LOCKSCOPE_MODE", "test"),
            ("LOCKSCOPE_TEST_TIMEOUT_MS", " 0 "),
        ]))
        .unwrap();
        assert_eq!(c.test_timeout, None, "0 disables it");
        for bad in ["soon", "-1", "1.5", "", "99999999999999999999999"] {
            let e = Config::from_lookup(env(&[("LOCKSCOPE_TEST_TIMEOUT_MS", bad)])).unwrap_err();
            assert_eq!(e.key(), "LOCKSCOPE_TEST_TIMEOUT_MS");
            assert_eq!(
                e.to_string(),
                format!(
                    "invalid LOCKSCOPE_TEST_TIMEOUT_MS value {bad:?}: expected a whole number of milliseconds (0: no timeout)"
                )
            );
        }
        let b = Config::builder().test_timeout(Some(Duration::ZERO)).build();
        assert_eq!(b.unwrap().test_timeout, None);
    }

    #[test]
    fn builder_rejects_zero() {
        assert!(Config::builder().stuck(Duration::ZERO).build().is_err());
        assert!(
            Config::builder()
                .tick(Duration::from_secs(5))
                .build()
                .is_err()
        );
    }
}
