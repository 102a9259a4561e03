//! Hooks for lockscope's own tests. Not a public API.

use std::any::Any;

/// Every global lock of the detector, held (see [`hold_global_locks`]).
pub struct GlobalLocks {
    _guards: Vec<Box<dyn Any>>,
}

/// Takes every global lock of the detector, in the detector's own nesting order, and keeps
/// them until the returned value drops. A test holds them on one thread while it runs the
/// hot path on another: a hot path that touched any of them would block.
pub fn hold_global_locks() -> GlobalLocks {
    use crate::analysis::graph::lockorder::graph_lock;
    use crate::base::config::config_lock;
    use crate::report::{finding::store_lock, metrics::last_lock, scopes::armed_lock};
    use crate::runtime::watchdog::rules_lock;
    use crate::state::{actor::names_lock, held::threads_lock, prim};
    // The guards borrow statics, so they are 'static and can be boxed as `Any`; the order is
    // the detector's nesting order (the registry's shards between the series and the threads).
    let first: [Box<dyn Any>; 2] = [Box::new(rules_lock()), Box::new(prim::series_lock())];
    let registry = prim::registry_locks()
        .into_iter()
        .map(|g| Box::new(g) as Box<dyn Any>);
    let rest: [Box<dyn Any>; 7] = [
        Box::new(threads_lock()),
        Box::new(graph_lock()),
        Box::new(store_lock()),
        Box::new(armed_lock()),
        Box::new(last_lock()),
        Box::new(names_lock()),
        Box::new(config_lock()),
    ];
    let mut guards: Vec<Box<dyn Any>> = first.into_iter().collect();
    guards.extend(registry);
    guards.extend(rest);
    GlobalLocks { _guards: guards }
}
