//! `init_tracing` installs a global subscriber once, and says so instead of panicking after.
//!
//! Its own test binary: the global subscriber is process-wide.

use lockscope_exporter::TracingInitErrorKind;

#[test]
fn installs_once_then_reports_that_one_is_installed() {
    assert!(!tracing::dispatcher::has_been_set());
    lockscope_exporter::init_tracing().expect("the first call installs the subscriber");
    assert!(tracing::dispatcher::has_been_set());
    if std::env::var_os("RUST_LOG").is_none() {
        // The default filter is in force: INFO passes, lockscope's TRACE spans do not, and
        // the detector's findings (WARN) do.
        assert!(tracing::enabled!(target: "my_app", tracing::Level::INFO));
        assert!(!tracing::enabled!(target: "lockscope", tracing::Level::TRACE));
        assert!(tracing::enabled!(target: "lockscope::detector", tracing::Level::WARN));
        assert!(!tracing::enabled!(target: "lockscope::detector", tracing::Level::INFO));
    }

    let err = lockscope_exporter::init_tracing().unwrap_err();
    assert_eq!(err.kind(), TracingInitErrorKind::AlreadyInstalled);
    assert_eq!(
        err.to_string(),
        "a global tracing subscriber is already installed"
    );
}
