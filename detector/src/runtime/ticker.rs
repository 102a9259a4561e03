//! The `lockscope-clock` thread: with `LOCKSCOPE_CLOCK_TICK_MS` (or
//! [`Config::clock_tick`](crate::Config::clock_tick)) set, it publishes the hold clock every
//! tick instead of the watchdog (see `base::clock`). A thread of lockscope's, so it starts
//! here, in `runtime`, as the watchdog does.

use std::sync::Once;

use crate::base::clock;

/// Starts the `lockscope-clock` thread once, if the configuration asks for it (see the module
/// docs). It reads its period from the configuration on every tick, and stops setting the
/// time (so that [`hold_now`] reads the coarse clock) while the detector is off or the
/// period is unset.
pub(crate) fn start_ticker() {
    static START: Once = Once::new();
    if crate::base::config::current().clock_tick.is_none() {
        return;
    }
    START.call_once(|| {
        clock::publish();
        super::start_thread(
            "clock",
            tick_forever,
            "; holds are timed with the coarse clock",
        );
    });
}

fn tick_forever() {
    loop {
        let cfg = crate::base::config::current();
        match cfg.clock_tick {
            Some(period) if cfg.mode != crate::base::config::Mode::Off => {
                clock::publish();
                std::thread::sleep(period);
            }
            _ => {
                // The watchdog publishes meanwhile.
                std::thread::sleep(clock::PUBLISH_EVERY);
            }
        }
    }
}
