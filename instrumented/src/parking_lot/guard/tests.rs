use std::mem::size_of;

use crate::parking_lot::{
    MutexGuard, ReentrantMutexGuard, RwLockReadGuard, RwLockUpgradableReadGuard, RwLockWriteGuard,
};

/// A guard is two words (the lock and the token), which the Rust ABI keeps in registers:
/// a third one sent every move of a guard through memory (see `Held`).
#[test]
fn a_guard_is_two_words() {
    const TWO: usize = 2 * size_of::<usize>();
    assert_eq!(size_of::<MutexGuard<'_, u64>>(), TWO);
    assert_eq!(size_of::<ReentrantMutexGuard<'_, u64>>(), TWO);
    assert_eq!(size_of::<RwLockReadGuard<'_, u64>>(), TWO);
    assert_eq!(size_of::<RwLockWriteGuard<'_, u64>>(), TWO);
    assert_eq!(size_of::<RwLockUpgradableReadGuard<'_, u64>>(), TWO);
    // An `Option` of one costs nothing more (the lock's reference is never null).
    assert_eq!(size_of::<Option<MutexGuard<'_, u64>>>(), TWO);
}
