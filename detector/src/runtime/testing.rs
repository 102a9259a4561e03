//! Hooks for lockscope's own tests. Not a public API.

use parking_lot::MutexGuard;

/// Every global lock of the detector, held (see [`hold_global_locks`]).
pub struct GlobalLocks {
    _guards: Vec<Box<dyn std::any::Any>>,
}

/// Takes every global lock of the detector, in the detector's own nesting order, and keeps
/// them until the returned value drops. A test holds them on one thread while it runs the
/// hot path on another: a hot path that touched any of them would block.
pub fn hold_global_locks() -> GlobalLocks {
    fn boxed<T: 'static>(g: T) -> Box<dyn std::any::Any> {
        Box::new(g)
    }
    // The guards borrow statics, so they are 'static and can be boxed as `Any`.
    let mut guards: Vec<Box<dyn std::any::Any>> = Vec::new();
    guards.push(boxed::<MutexGuard<'static, _>>(
        crate::runtime::watchdog::rules_lock(),
    ));
    guards.push(boxed::<MutexGuard<'static, _>>(
        crate::state::prim::series_lock(),
    ));
    for g in crate::state::prim::registry_locks() {
        guards.push(boxed::<MutexGuard<'static, _>>(g));
    }
    guards.push(boxed::<MutexGuard<'static, _>>(
        crate::state::held::threads_lock(),
    ));
    guards.push(boxed::<MutexGuard<'static, _>>(
        crate::analysis::graph::lockorder::graph_lock(),
    ));
    guards.push(boxed::<MutexGuard<'static, _>>(
        crate::report::finding::store_lock(),
    ));
    guards.push(boxed::<MutexGuard<'static, _>>(
        crate::report::scopes::armed_lock(),
    ));
    guards.push(boxed::<MutexGuard<'static, _>>(
        crate::report::metrics::last_lock(),
    ));
    guards.push(boxed::<MutexGuard<'static, _>>(
        crate::state::actor::names_lock(),
    ));
    guards.push(boxed(crate::base::config::config_lock()));
    GlobalLocks { _guards: guards }
}
