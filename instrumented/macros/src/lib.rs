//! The `#[lockscope::test]` attribute (filled in by the instrumented crate).
