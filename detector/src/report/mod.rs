//! Layer 6, `report`: the finding store, rendering, and the sinks a finding reaches (tracing,
//! stderr, armed test scopes, metrics, CI report files). It reads findings; it judges nothing.

pub mod ci;
pub(crate) mod dump;
pub mod finding;
pub mod metrics;
pub(crate) mod pending;
pub mod scopes;
pub(crate) mod traces;
