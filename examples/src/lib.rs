//! Shared code of the lockscope examples.
