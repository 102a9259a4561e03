//! Layer 3, `state`: the live books: who is acting (actors, thread locals), per-thread hold
//! tables, waiter queues, the primitive and executor registries. Changing them returns what
//! happened; they call no rule and report nothing.

pub mod actor;
pub mod channels;
pub(crate) mod console;
pub(crate) mod elsewhere;
pub(crate) mod ended;
pub mod executor;
pub mod held;
pub mod joins;
pub mod prim;
pub(crate) mod tls;
pub mod wait;
pub(crate) mod wait_table;
pub(crate) mod worker;
