//! Tracing set-up in one call.

use tracing_subscriber::EnvFilter;
use tracing_subscriber::Layer as _;
use tracing_subscriber::layer::SubscriberExt as _;
use tracing_subscriber::util::SubscriberInitExt as _;

use crate::error::{TracingInitError, TracingInitErrorKind};

/// The filter [`init_tracing`] uses when `RUST_LOG` is unset or empty: `INFO` and above
/// everywhere (so none of lockscope's per-acquisition `TRACE` spans), and from the detector
/// (target `lockscope::detector`) its findings only: `WARN`, `ERROR` for deadlocks.
pub const DEFAULT_FILTER: &str = "info,lockscope::detector=warn";

/// Installs a global tracing subscriber: a registry with a `fmt` layer (to stderr) filtered by
/// `RUST_LOG` ([`DEFAULT_FILTER`] when unset or empty) and, with the `console` feature,
/// console-subscriber's layer for tokio-console (configured by its `TOKIO_CONSOLE_*`
/// variables; it sees the runtime's spans whatever `RUST_LOG` says).
///
/// Call it once, early in `main`. Set `RUST_LOG=lockscope=trace` to see every acquisition.
///
/// # Errors
///
/// Nothing is installed, and a [`TracingInitError`] says why, when a global subscriber is
/// already installed ([`AlreadyInstalled`](TracingInitErrorKind::AlreadyInstalled)) or
/// `RUST_LOG` does not parse ([`InvalidFilter`](TracingInitErrorKind::InvalidFilter)).
///
/// # Panics
///
/// Never by itself. With the `console` feature, console-subscriber panics on a malformed
/// `TOKIO_CONSOLE_*` duration, and its server thread panics if it cannot bind its port.
///
/// ```
/// use lockscope_exporter::TracingInitErrorKind;
///
/// lockscope_exporter::init_tracing()?;
/// // A second call (or any other global subscriber) is an error, not a panic.
/// let again = lockscope_exporter::init_tracing().unwrap_err();
/// assert_eq!(again.kind(), TracingInitErrorKind::AlreadyInstalled);
/// # Ok::<(), lockscope_exporter::TracingInitError>(())
/// ```
pub fn init_tracing() -> Result<(), TracingInitError> {
    if tracing::dispatcher::has_been_set() {
        // Checked first so that the console layer's server thread is not started in vain;
        // `try_init` below stays the authority if another thread wins the race.
        return Err(already_installed());
    }
    let filter = filter_from(std::env::var("RUST_LOG").ok().as_deref())?;
    // Colours only for a terminal: not in files or CI logs.
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let fmt = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .with_ansi(ansi)
        .with_filter(filter);
    let registry = tracing_subscriber::registry().with(fmt);
    #[cfg(feature = "console")]
    let registry = registry.with(
        console_subscriber::ConsoleLayer::builder()
            .with_default_env()
            .spawn(),
    );
    registry.try_init().map_err(|_| already_installed())
}

fn already_installed() -> TracingInitError {
    TracingInitError::new(TracingInitErrorKind::AlreadyInstalled, String::new())
}

/// The fmt layer's filter for a `RUST_LOG` value.
fn filter_from(rust_log: Option<&str>) -> Result<EnvFilter, TracingInitError> {
    match rust_log.map(str::trim) {
        None | Some("") => Ok(EnvFilter::new(DEFAULT_FILTER)),
        Some(v) => EnvFilter::builder().parse(v).map_err(|e| {
            TracingInitError::new(TracingInitErrorKind::InvalidFilter, format!("{v:?}: {e}"))
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_and_explicit_filters_parse() {
        assert_eq!(
            filter_from(None).unwrap().to_string(),
            EnvFilter::new(DEFAULT_FILTER).to_string()
        );
        assert_eq!(
            filter_from(Some("  ")).unwrap().to_string(),
            EnvFilter::new(DEFAULT_FILTER).to_string()
        );
        assert!(filter_from(Some("debug,lockscope=trace")).is_ok());
    }

    #[test]
    fn a_bad_filter_is_an_error() {
        let e = filter_from(Some("lockscope=loud")).unwrap_err();
        assert_eq!(e.kind(), TracingInitErrorKind::InvalidFilter);
        assert!(
            e.to_string()
                .starts_with("invalid RUST_LOG filter: \"lockscope=loud\": "),
            "{e}"
        );
    }
}
