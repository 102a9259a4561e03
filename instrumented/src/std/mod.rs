//! Drop-in replacements for the standard library's locks: see [`sync`].

pub mod sync;
