//! The demo service (work in progress).
