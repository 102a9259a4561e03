//! The demo: a small bank service on axum whose every lock is a lockscope primitive, under a
//! built-in load, with the exporter on http://127.0.0.1:9464. It starts healthy, then injects
//! one pathology at a time; the detector reports each in the log, on `/debug/findings` and
//! in `lockscope_findings_total` on `/metrics`.
//!
//! ```text
//! cargo run --example demo                                  # the tour, until Ctrl-C
//! cargo run --example demo -- --pathology deadlock          # one pathology
//! cargo run --example demo -- --addr 127.0.0.1:0 --duration 30
//! cargo run --example demo -- --help
//! ```
//!
//! The service lives in `examples/src/demo/`.
fn main() -> std::process::ExitCode {
    lockscope_examples::demo::main()
}
