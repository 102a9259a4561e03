//! Layer 2, `model`: what an acquisition, a mode, a kind and a finding are: the plain values
//! every layer below passes around and the views rules read. Imports only `base`.

pub mod acq;
pub mod finding;
pub mod level;
pub mod mode;
pub mod prim;
