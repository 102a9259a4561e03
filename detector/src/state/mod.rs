//! Layer 3, `state`: the live books: per-thread hold tables, waiter queues, the primitive
//! registry. Changing them returns what happened; they call no rule and report nothing.

pub mod actor;
pub(crate) mod console;
pub mod executor;
pub mod held;
pub mod prim;
pub(crate) mod tls;
pub mod wait;
