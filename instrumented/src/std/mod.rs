//! Drop-in replacements for the standard library's locks ([`sync`]) and threads
//! ([`thread`]: `join()` is a wait the detector sees).

pub mod sync;
pub mod thread;
