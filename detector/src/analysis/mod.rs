//! Layer 4, `analysis`: snapshots of the state and the two graphs built from them (wait-for,
//! lock-order). Adding an edge returns the cycle it closes; nothing here reports.

pub mod graph;
pub(crate) mod graph_snapshot;
pub mod snapshot;
pub mod status;
