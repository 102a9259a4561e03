//! Permits of [`Semaphore`]: borrowed and owned.

use std::fmt;
use std::sync::Arc;

use lockscope_detector::__private::hooks::Mode;

use super::Semaphore;
use super::guard::{Permits, SemOwner};
use crate::probe::Token;
use crate::shell::{Guard, Owner};

/// A permit count as the detector's hold tables keep it (`u32`, saturating): only permits
/// merged past `u32::MAX` (tokio counts in `usize`) lose precision there, never here.
fn book(permits: usize) -> u32 {
    u32::try_from(permits).unwrap_or(u32::MAX)
}

/// Wrapper for [`tokio::sync::SemaphorePermit`]: permits returned to the semaphore on drop.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let s = lockscope::tokio::Semaphore::new(3);
/// let mut p = s.acquire_many(2).await.unwrap();
/// let q = p.split(1).unwrap();
/// assert_eq!((p.num_permits(), q.num_permits()), (1, 1));
/// p.merge(q);
/// assert_eq!(p.num_permits(), 2);
/// # }
/// ```
#[clippy::has_significant_drop]
#[must_use]
pub struct SemaphorePermit<'a> {
    shell: Guard<&'a Semaphore, Permits>,
}

/// Wrapper for [`tokio::sync::OwnedSemaphorePermit`]: keeps an `Arc` of the semaphore, so it
/// can move into a spawned task (the holder lockscope reports stays the acquiring task, marked
/// as an owned permit that may have moved).
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// use std::sync::Arc;
/// let s = Arc::new(lockscope::tokio::Semaphore::new(1));
/// let p = s.clone().acquire_owned().await.unwrap();
/// assert!(Arc::ptr_eq(p.semaphore(), &s));
/// # }
/// ```
#[clippy::has_significant_drop]
#[must_use]
pub struct OwnedSemaphorePermit {
    shell: Guard<Arc<Semaphore>, Permits>,
}

/// The permits are forgotten: they leave the books as held, counted as forgotten, and never
/// go back to the semaphore.
fn forget<O: SemOwner + Owner<Permits>>(shell: Guard<O, Permits>) {
    let (owner, mut token, Permits(n)) = shell.into_parts();
    token.forget(SemOwner::prim(&owner), n as u64);
}

/// `other`'s permits join `shell`'s: one hold in the books, `other`'s released.
#[track_caller]
fn merge<O: SemOwner + Owner<Permits>>(shell: &mut Guard<O, Permits>, other: Guard<O, Permits>) {
    assert!(
        std::ptr::eq(shell.owner().sem(), other.owner().sem()),
        "merging permits from different semaphore instances"
    );
    let (owner, permits, token) = shell.parts_mut();
    let prim = SemOwner::prim(owner);
    let (_, mut other_token, Permits(n)) = other.into_parts();
    permits.0 += n;
    token.update(prim, book(permits.0), Mode::Permits);
    other_token.release(prim);
}

/// `n` of `shell`'s permits, split off into a hold of their own.
fn split<O>(shell: &mut Guard<O, Permits>, n: usize) -> Option<Guard<O, Permits>>
where
    O: SemOwner + Owner<Permits> + Clone,
{
    let (owner, permits, token) = shell.parts_mut();
    if n > permits.0 {
        return None;
    }
    permits.0 -= n;
    let prim = SemOwner::prim(owner);
    token.update(prim, book(permits.0), Mode::Permits);
    let split = token.split(prim, book(n));
    Some(Guard::new(owner.clone(), Permits(n), split))
}

/// The methods of a permit type, over the helpers above: `forget`, `merge`, `split`,
/// `semaphore` and `num_permits`, each after its docs, in that order.
macro_rules! permit {
    (
        $name:ident $(<$lt:lifetime>)?, $owner:ty, $sem:ty;
        $(#[$forget:meta])* fn forget;
        $(#[$merge:meta])* fn merge;
        $(#[$split:meta])* fn split;
        $(#[$semaphore:meta])* fn semaphore;
        $(#[$num:meta])* fn num_permits;
    ) => {
        impl$(<$lt>)? $name$(<$lt>)? {
            pub(crate) fn new(sem: $owner, permits: u32, token: Token) -> Self {
                $name {
                    shell: Guard::new(sem, Permits(permits as usize), token),
                }
            }

            $(#[$forget])*
            pub fn forget(self) {
                forget(self.shell);
            }

            $(#[$merge])*
            #[track_caller]
            pub fn merge(&mut self, other: Self) {
                merge(&mut self.shell, other.shell);
            }

            $(#[$split])*
            pub fn split(&mut self, n: usize) -> Option<Self> {
                split(&mut self.shell, n).map(|shell| $name { shell })
            }

            $(#[$semaphore])*
            pub fn semaphore(&self) -> $sem {
                self.shell.owner()
            }

            $(#[$num])*
            pub fn num_permits(&self) -> usize {
                self.shell.0
            }
        }

        impl$(<$lt>)? fmt::Debug for $name$(<$lt>)? {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.debug_struct(stringify!($name))
                    .field("sem", self.shell.owner())
                    .field("permits", &self.shell.0)
                    .finish()
            }
        }
    };
}

permit! {
    SemaphorePermit<'a>, &'a Semaphore, &Semaphore;
    /// Wrapper for [`tokio::sync::SemaphorePermit::forget`]: the permits never come back.
    /// lockscope counts them as forgotten; a later `add_permits` pays them back, otherwise
    /// the end of a test (or the leak threshold) reports `leaked-permit`.
    ///
    /// ```
    /// let s = lockscope::tokio::Semaphore::new(2);
    /// s.try_acquire().unwrap().forget();
    /// assert_eq!(s.available_permits(), 1);
    /// s.add_permits(1); // paid back
    /// ```
    fn forget;

    /// Wrapper for [`tokio::sync::SemaphorePermit::merge`].
    ///
    /// # Panics
    ///
    /// If the permits come from different semaphores, as tokio's.
    ///
    /// ```
    /// let s = lockscope::tokio::Semaphore::new(2);
    /// let mut a = s.try_acquire().unwrap();
    /// a.merge(s.try_acquire().unwrap());
    /// assert_eq!(a.num_permits(), 2);
    /// ```
    fn merge;

    /// Wrapper for [`tokio::sync::SemaphorePermit::split`].
    ///
    /// ```
    /// let s = lockscope::tokio::Semaphore::new(3);
    /// let mut a = s.try_acquire_many(3).unwrap();
    /// assert!(a.split(4).is_none());
    /// assert_eq!(a.split(2).unwrap().num_permits(), 2);
    /// ```
    fn split;

    /// Wrapper for [`tokio::sync::SemaphorePermit::semaphore`].
    ///
    /// ```
    /// let s = lockscope::tokio::Semaphore::new(1);
    /// let p = s.try_acquire().unwrap();
    /// assert!(std::ptr::eq(p.semaphore(), &s));
    /// ```
    fn semaphore;

    /// Wrapper for [`tokio::sync::SemaphorePermit::num_permits`].
    ///
    /// ```
    /// let s = lockscope::tokio::Semaphore::new(2);
    /// assert_eq!(s.try_acquire_many(2).unwrap().num_permits(), 2);
    /// ```
    fn num_permits;
}

permit! {
    OwnedSemaphorePermit, Arc<Semaphore>, &Arc<Semaphore>;
    /// Wrapper for [`tokio::sync::OwnedSemaphorePermit::forget`] (see
    /// [`SemaphorePermit::forget`] for what lockscope records).
    ///
    /// ```
    /// use std::sync::Arc;
    /// let s = Arc::new(lockscope::tokio::Semaphore::new(1));
    /// s.clone().try_acquire_owned().unwrap().forget();
    /// assert_eq!(s.available_permits(), 0);
    /// s.add_permits(1);
    /// ```
    fn forget;

    /// Wrapper for [`tokio::sync::OwnedSemaphorePermit::merge`].
    ///
    /// # Panics
    ///
    /// If the permits come from different semaphores, as tokio's.
    ///
    /// ```
    /// use std::sync::Arc;
    /// let s = Arc::new(lockscope::tokio::Semaphore::new(2));
    /// let mut a = s.clone().try_acquire_owned().unwrap();
    /// a.merge(s.clone().try_acquire_owned().unwrap());
    /// assert_eq!(a.num_permits(), 2);
    /// ```
    fn merge;

    /// Wrapper for [`tokio::sync::OwnedSemaphorePermit::split`].
    ///
    /// ```
    /// use std::sync::Arc;
    /// let s = Arc::new(lockscope::tokio::Semaphore::new(2));
    /// let mut a = s.try_acquire_many_owned(2).unwrap();
    /// assert_eq!(a.split(1).unwrap().num_permits(), 1);
    /// ```
    fn split;

    /// Wrapper for [`tokio::sync::OwnedSemaphorePermit::semaphore`].
    ///
    /// ```
    /// use std::sync::Arc;
    /// let s = Arc::new(lockscope::tokio::Semaphore::new(1));
    /// let p = s.clone().try_acquire_owned().unwrap();
    /// assert!(Arc::ptr_eq(p.semaphore(), &s));
    /// ```
    fn semaphore;

    /// Wrapper for [`tokio::sync::OwnedSemaphorePermit::num_permits`].
    ///
    /// ```
    /// use std::sync::Arc;
    /// let s = Arc::new(lockscope::tokio::Semaphore::new(1));
    /// assert_eq!(s.try_acquire_owned().unwrap().num_permits(), 1);
    /// ```
    fn num_permits;
}
