//! The two calls that change the process-wide configuration from outside: they store it
//! (in `base::config`) and start the watchdog, which configuration itself never does.

use crate::base::config::{Config, Mode, current};

impl Config {
    /// Makes this the process-wide configuration.
    pub fn install(self) {
        self.store();
        crate::runtime::watchdog::ensure_started();
    }
}

/// Switches recording on or off at run time, keeping the thresholds.
pub fn set_enabled(on: bool) {
    let mut cfg = (*current()).clone();
    cfg.mode = match (on, cfg.mode) {
        (false, _) => Mode::Off,
        (true, Mode::Off) => Mode::Production,
        (true, m) => m,
    };
    cfg.install();
}
