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
