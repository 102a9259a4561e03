//! lockscope
