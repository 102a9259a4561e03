//! [`MutexGuard`], [`RwLockReadGuard`] and [`RwLockWriteGuard`]: std's guards inside
//! lockscope's [`Shell`], which releases the books before std unlocks.

use std::fmt;
use std::ops::{Deref, DerefMut};

use lockscope_detector::__private::prim::Prim;

use crate::blocking_shell::Shell;
use crate::probe::Token;

/// Wrapper for [`std::sync::MutexGuard`]: the mutex is held until it drops.
///
/// Dropping it records the release in lockscope's books, then drops std's guard, which
/// poisons the mutex if the thread is panicking and unlocks it. Like std's, it is `!Send`
/// and is `Sync` when `T` is.
///
/// ```
/// use lockscope::std::sync::{Mutex, MutexGuard};
/// let m = Mutex::new(vec![1]);
/// let mut g: MutexGuard<'_, Vec<i32>> = m.lock().unwrap();
/// g.push(2);
/// assert_eq!(*g, [1, 2]);
/// ```
#[clippy::has_significant_drop]
#[must_use = "if unused the Mutex will immediately unlock"]
pub struct MutexGuard<'a, T: ?Sized + 'a> {
    pub(crate) shell: Shell<'a, std::sync::MutexGuard<'a, T>>,
}

/// Wrapper for [`std::sync::RwLockReadGuard`]: shared read access until it drops.
///
/// ```
/// use lockscope::std::sync::{RwLock, RwLockReadGuard};
/// let r = RwLock::new(1);
/// let g: RwLockReadGuard<'_, i32> = r.read().unwrap();
/// assert_eq!(*g, 1);
/// ```
#[clippy::has_significant_drop]
#[must_use = "if unused the RwLock will immediately unlock"]
pub struct RwLockReadGuard<'a, T: ?Sized + 'a> {
    pub(crate) shell: Shell<'a, std::sync::RwLockReadGuard<'a, T>>,
}

/// Wrapper for [`std::sync::RwLockWriteGuard`]: exclusive write access until it drops (a
/// panic meanwhile poisons the lock, as std's).
///
/// ```
/// use lockscope::std::sync::{RwLock, RwLockWriteGuard};
/// let r = RwLock::new(1);
/// let mut g: RwLockWriteGuard<'_, i32> = r.write().unwrap();
/// *g += 1;
/// assert_eq!(*g, 2);
/// ```
#[clippy::has_significant_drop]
#[must_use = "if unused the RwLock will immediately unlock"]
pub struct RwLockWriteGuard<'a, T: ?Sized + 'a> {
    pub(crate) shell: Shell<'a, std::sync::RwLockWriteGuard<'a, T>>,
}

/// The constructor and the shared trait impls, identical but for the names.
macro_rules! guard_impls {
    ($guard:ident, $std:ident) => {
        impl<'a, T: ?Sized> $guard<'a, T> {
            /// A guard over std's, recorded in `token` as a hold of `prim`.
            #[inline]
            pub(super) fn new(prim: &'a Prim, inner: std::sync::$std<'a, T>, token: Token) -> Self {
                $guard {
                    shell: Shell::new(prim, inner, token),
                }
            }
        }

        impl<T: ?Sized> Deref for $guard<'_, T> {
            type Target = T;
            #[inline]
            fn deref(&self) -> &T {
                &self.shell
            }
        }

        impl<T: ?Sized + fmt::Debug> fmt::Debug for $guard<'_, T> {
            /// As std's: the guarded value's `Debug`.
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                fmt::Debug::fmt(&**self, f)
            }
        }

        impl<T: ?Sized + fmt::Display> fmt::Display for $guard<'_, T> {
            /// As std's: the guarded value's `Display`.
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                fmt::Display::fmt(&**self, f)
            }
        }
    };
}

guard_impls!(MutexGuard, MutexGuard);
guard_impls!(RwLockReadGuard, RwLockReadGuard);
guard_impls!(RwLockWriteGuard, RwLockWriteGuard);

impl<T: ?Sized> DerefMut for MutexGuard<'_, T> {
    #[inline]
    fn deref_mut(&mut self) -> &mut T {
        &mut self.shell
    }
}

impl<T: ?Sized> DerefMut for RwLockWriteGuard<'_, T> {
    #[inline]
    fn deref_mut(&mut self) -> &mut T {
        &mut self.shell
    }
}
