//! tokio-console resources for lockscope primitives (the `console` feature).
//!
//! console-subscriber recognises a resource by a span named `runtime.resource` (fields
//! `concrete_type`, `kind`, `loc.file`, `loc.line`, `loc.col`) and its state by events on target
//! `runtime::resource::state_update` emitted inside that span, each a field plus a `<field>.op`
//! of `add`, `sub` or `override`. tokio emits them only under `tokio_unstable`; lockscope emits
//! them for its own primitives, so tokio-console's Resources view lists every one of them by
//! name (`Mutex(db)`) with `locked`, `permits`, `write_locked`, `current_readers` and
//! `waiters`. Without the feature, [`Resource`] is empty and every call here compiles to
//! nothing: this module is the feature's only boundary.

use std::panic::Location;

use crate::state::held::Mode;
use crate::state::prim::PrimKind;

/// A primitive's console resource (empty without the `console` feature).
#[derive(Debug)]
pub(crate) struct Resource {
    #[cfg(feature = "console")]
    span: tracing::Span,
}

#[cfg(feature = "console")]
macro_rules! update {
    ($span:expr, $($field:tt)+) => {
        $span.in_scope(|| {
            tracing::trace!(target: "runtime::resource::state_update", $($field)+);
        })
    };
}

impl Resource {
    /// The resource span of a new primitive, with its initial state.
    #[cfg_attr(not(feature = "console"), allow(unused_variables))]
    pub(crate) fn new(kind: PrimKind, name: &str, site: &Location<'_>, capacity: u64) -> Resource {
        #[cfg(feature = "console")]
        {
            let concrete_type = format!("{}({name})", type_name(kind));
            let span = tracing::trace_span!(
                target: "runtime::resource",
                parent: None,
                "runtime.resource",
                concrete_type = concrete_type.as_str(),
                kind = "Sync",
                loc.file = site.file(),
                loc.line = site.line(),
                loc.col = site.column(),
            );
            match kind {
                PrimKind::Semaphore => update!(span, permits = capacity, permits.op = "override"),
                PrimKind::RwLock | PrimKind::BlockingRwLock => {
                    update!(span, write_locked = false, write_locked.op = "override");
                    update!(
                        span,
                        current_readers = 0u64,
                        current_readers.op = "override"
                    );
                    if kind == PrimKind::RwLock {
                        update!(span, max_readers = capacity, max_readers.op = "override");
                    }
                }
                _ => update!(span, locked = false, locked.op = "override"),
            }
            Resource { span }
        }
        #[cfg(not(feature = "console"))]
        Resource {}
    }

    /// `permits` were granted in `mode`.
    #[inline]
    #[cfg_attr(not(feature = "console"), allow(unused_variables))]
    pub(crate) fn acquired(&self, kind: PrimKind, mode: Mode, permits: u32) {
        #[cfg(feature = "console")]
        if !self.span.is_disabled() {
            self.state(kind, mode, permits, true);
        }
    }

    /// `permits` held in `mode` were released.
    #[inline]
    #[cfg_attr(not(feature = "console"), allow(unused_variables, dead_code))]
    pub(crate) fn released(&self, kind: PrimKind, mode: Mode, permits: u32) {
        #[cfg(feature = "console")]
        if !self.span.is_disabled() {
            self.state(kind, mode, permits, false);
        }
    }

    /// Whether a console subscriber follows this resource (its waiter count is kept only in
    /// the primitive's queue, so every wait goes there then).
    #[inline]
    pub(crate) fn followed(&self) -> bool {
        #[cfg(feature = "console")]
        return !self.span.is_disabled();
        #[cfg(not(feature = "console"))]
        false
    }

    /// The number of waiters changed.
    #[inline]
    #[cfg_attr(not(feature = "console"), allow(unused_variables))]
    pub(crate) fn waiters(&self, n: usize) {
        #[cfg(feature = "console")]
        if !self.span.is_disabled() {
            update!(self.span, waiters = n as u64, waiters.op = "override");
        }
    }

    #[cfg(feature = "console")]
    #[cold]
    fn state(&self, kind: PrimKind, mode: Mode, permits: u32, on: bool) {
        let op = if on { "sub" } else { "add" };
        match (kind, mode) {
            (PrimKind::Semaphore, _) => {
                update!(self.span, permits = u64::from(permits), permits.op = op)
            }
            (PrimKind::RwLock | PrimKind::BlockingRwLock, Mode::Exclusive) => {
                update!(self.span, write_locked = on, write_locked.op = "override")
            }
            (PrimKind::RwLock | PrimKind::BlockingRwLock, _) => {
                let op = if on { "add" } else { "sub" };
                update!(self.span, current_readers = 1u64, current_readers.op = op)
            }
            _ => update!(self.span, locked = on, locked.op = "override"),
        }
    }
}

#[cfg(feature = "console")]
fn type_name(kind: PrimKind) -> &'static str {
    match kind {
        PrimKind::Mutex => "Mutex",
        PrimKind::RwLock => "RwLock",
        PrimKind::Semaphore => "Semaphore",
        PrimKind::BlockingMutex => "parking_lot::Mutex",
        PrimKind::BlockingReentrantMutex => "parking_lot::ReentrantMutex",
        PrimKind::BlockingRwLock => "parking_lot::RwLock",
        PrimKind::OnceCell => "OnceCell",
    }
}
