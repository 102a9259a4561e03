//! Layer 7, `runtime`: the entry points the wrappers call (`hooks`), the watchdog and test
//! scopes: the only layer that starts threads, runs rules and hands findings to `report`.

pub mod cell;
pub mod configure;
pub mod hooks;
pub mod scope;
pub mod stress;
pub(crate) mod test_timeout;
pub mod testing;
mod ticker;
pub(crate) mod watchdog;

/// Starts lockscope's thread `lockscope-{name}` running `f`; whether it started. When the
/// system refuses, it says so on stderr, with `otherwise` (what the program gets instead), and
/// goes on: instrumentation never stops a program.
fn start_thread(name: &str, f: fn(), otherwise: &str) -> bool {
    let spawned = std::thread::Builder::new()
        .name(format!("lockscope-{name}"))
        .spawn(f);
    if let Err(e) = &spawned {
        eprintln!("lockscope: cannot start the {name} thread ({e}){otherwise}");
    }
    spawned.is_ok()
}
