//! What every tokio guard and permit is made of, written once.
//!
//! A tokio wrapper is a raw `tokio::sync::Semaphore` (plus an `UnsafeCell` for the locks), so
//! a guard's hold is a number of permits and unlocking is `add_permits`. Each public guard is
//! a newtype over a [`shell::Guard`](crate::shell::Guard) whose owner gives the permits back
//! (the shell's `Drop` keeps the order: books, `add_permits`, statistics), plus, for a guard
//! that can be mapped, a pointer to its part of the data. The methods that only differ in the
//! guard's name (`map`, `try_map`, `downgrade`, ..., Deref, Debug, Display) come from the
//! macros here.

use std::sync::Arc;

use lockscope_detector::__private::hooks::{Mode, PrimCell};
use lockscope_detector::__private::prim::Prim;

use super::{Mutex, RwLock, Semaphore};
use crate::shell::{Guard, Owner};

/// A hold of permits: how many the guard gives back.
pub(crate) trait Hold {
    /// The number of permits.
    fn count(&self) -> usize;
}

/// One permit: a mutex's or a reader's. Zero-sized, so that a mutex guard stays two words.
#[derive(Clone, Copy)]
pub(crate) struct One;

impl Hold for One {
    #[inline]
    fn count(&self) -> usize {
        1
    }
}

/// Any other count: a writer's (`max_readers`) or a semaphore permit's (in `usize`, as
/// tokio's: merged permits may exceed `u32::MAX`).
pub(crate) struct Permits(pub(crate) usize);

impl Hold for Permits {
    #[inline]
    fn count(&self) -> usize {
        self.0
    }
}

/// An owner of tokio permits: the semaphore they return to, and the primitive in the books.
pub(crate) trait SemOwner {
    /// The raw semaphore the permits go back to.
    fn sem(&self) -> &tokio::sync::Semaphore;
    /// The primitive whose books hold the guard's token.
    fn prim(&self) -> &Prim;
}

/// The owner of a borrowed guard that no longer names its wrapper (every borrowed `RwLock`
/// guard, and a mapped `MutexGuard`): the semaphore and the primitive's cell, which is looked
/// up only when the books are (so with the detector off, a lock registered on first use is
/// not registered by its guards).
#[derive(Clone, Copy)]
pub(crate) struct SemRef<'a> {
    pub(crate) sem: &'a tokio::sync::Semaphore,
    pub(crate) cell: &'a PrimCell,
}

impl<'a, T: ?Sized> From<&'a Mutex<T>> for SemRef<'a> {
    #[inline]
    fn from(m: &'a Mutex<T>) -> Self {
        SemRef {
            sem: &m.sem,
            cell: &m.cell,
        }
    }
}

/// `SemOwner` and `Owner` (any [`Hold`]: `unlock` returns its permits) for one owner type;
/// `$class` is its [`Owner::Class`] (whether its primitive is a mutex, when the type says).
macro_rules! sem_owner {
    ([$($gen:tt)*] $ty:ty, |$s:ident| $sem:expr, $prim:expr, $class:ident) => {
        impl<$($gen)*> SemOwner for $ty {
            #[inline]
            fn sem(&self) -> &tokio::sync::Semaphore {
                let $s = self;
                $sem
            }
            #[inline]
            fn prim(&self) -> &Prim {
                let $s = self;
                $prim
            }
        }

        impl<$($gen)* H: Hold> Owner<H> for $ty {
            type Class = ::lockscope_detector::__private::hooks::$class;
            // A tokio guard or permit is `Send`.
            type Marker = ::lockscope_detector::__private::hooks::GuardSend;
            const OUT_OF_LINE: bool = true;

            #[inline]
            fn prim(&self) -> &Prim {
                SemOwner::prim(self)
            }
            #[inline]
            fn unlock(&self, inner: H) {
                self.sem().add_permits(inner.count());
            }
        }
    };
}

sem_owner!([] SemRef<'_>, |s| s.sem, s.cell.get(), AnyPrim);
sem_owner!([T: ?Sized,] &Mutex<T>, |s| &s.sem, s.cell.get(), IsMutex);
sem_owner!([T: ?Sized,] Arc<Mutex<T>>, |s| &s.sem, s.cell.get(), IsMutex);
sem_owner!([T: ?Sized,] Arc<RwLock<T>>, |s| &s.sem, s.cell.get(), AnyPrim);
sem_owner!([] & Semaphore, |s| &s.ll, s.cell.get(), NotMutex);
sem_owner!([] Arc<Semaphore>, |s| &s.ll, s.cell.get(), NotMutex);

/// The same hold under another owner (a `MutexGuard` mapped: its owner becomes a [`SemRef`]).
#[inline]
pub(crate) fn rehome<O: Owner<H>, P: Owner<H>, H>(
    shell: Guard<O, H>,
    to: impl FnOnce(O) -> P,
) -> Guard<P, H> {
    let (owner, token, hold) = shell.into_parts();
    Guard::new(to(owner), hold, token)
}

/// A write hold turned into a one-permit read hold without letting a writer in: the books
/// first, then all but one of the permits go back.
#[inline]
pub(crate) fn downgrade<O>(shell: Guard<O, Permits>) -> Guard<O, One>
where
    O: SemOwner + Owner<Permits> + Owner<One>,
{
    let (owner, mut token, Permits(n)) = shell.into_parts();
    token.update(SemOwner::prim(&owner), 1, Mode::Shared);
    owner.sem().add_permits(n - 1);
    Guard::new(owner, One, token)
}

/// `Deref` (and, with `mut`, `DerefMut`), `Debug` and `Display` of a guard whose data is at
/// the pointer `$ptr` (an expression of `$s`, the guard).
macro_rules! deref {
    ([$($gen:tt)*] $ty:ty => $target:ty, |$s:ident| $ptr:expr) => {
        impl<$($gen)*> ::std::ops::Deref for $ty {
            type Target = $target;
            #[inline]
            fn deref(&self) -> &$target {
                let $s = self;
                // SAFETY: the guard holds the permits that give it this access (every permit
                // for a writer, one for a reader), and `$ptr` points into the locked value.
                unsafe { &*$ptr }
            }
        }

        impl<$($gen)*> ::std::fmt::Debug for $ty
        where
            $target: ::std::fmt::Debug,
        {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                ::std::fmt::Debug::fmt(&**self, f)
            }
        }

        impl<$($gen)*> ::std::fmt::Display for $ty
        where
            $target: ::std::fmt::Display,
        {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                ::std::fmt::Display::fmt(&**self, f)
            }
        }
    };
    ([$($gen:tt)*] $ty:ty => $target:ty, |$s:ident| $ptr:expr, mut) => {
        deref!([$($gen)*] $ty => $target, |$s| $ptr);

        impl<$($gen)*> ::std::ops::DerefMut for $ty {
            #[inline]
            fn deref_mut(&mut self) -> &mut $target {
                let $s = self;
                // SAFETY: as `deref`; a guard with `DerefMut` is the only access.
                unsafe { &mut *$ptr }
            }
        }
    };
}
pub(crate) use deref;

/// `map` and `try_map` of a guard (or, named otherwise, `downgrade_map` and
/// `try_downgrade_map`): `f` picks a part of the data (`mut`: through `&mut`, as
/// for writers; `ref`: through `&`, as for readers), and `$build` makes the mapped guard
/// from the shell and the part's pointer. `f` runs while the guard still unlocks on
/// unwinding. `[$($gen),+]` is the order of the methods' generic parameters (tokio's own).
/// The two methods follow, each after its docs: `fn map; fn try_map;` (or the other names).
macro_rules! maps {
    (
        $kind:tt $from:ty => $to:ident [$($gen:ident),+] -> $out:ty,
        |$shell:ident, $data:ident| $build:expr;
        $(#[$map:meta])* fn $map_fn:ident;
        $(#[$try_map:meta])* fn $try_fn:ident;
    ) => {
        $(#[$map])*
        #[inline]
        pub fn $map_fn<$($gen),+>(this: Self, f: F) -> $out
        where
            $to: ?Sized,
            F: FnOnce(maps!(@ref $kind $from)) -> maps!(@ref $kind $to),
        {
            #[allow(unused_mut)]
            let mut this = this;
            let $data = maps!(@ptr $kind $to, f(maps!(@borrow $kind this)));
            let $shell = this.shell;
            $build
        }

        $(#[$try_map])*
        #[inline]
        pub fn $try_fn<$($gen),+>(this: Self, f: F) -> Result<$out, Self>
        where
            $to: ?Sized,
            F: FnOnce(maps!(@ref $kind $from)) -> Option<maps!(@ref $kind $to)>,
        {
            #[allow(unused_mut)]
            let mut this = this;
            let $data = match f(maps!(@borrow $kind this)) {
                Some(data) => maps!(@ptr $kind $to, data),
                None => return Err(this),
            };
            let $shell = this.shell;
            Ok($build)
        }
    };
    (@ref mut $t:ty) => { &mut $t };
    (@ref ref $t:ty) => { &$t };
    (@borrow mut $e:ident) => { &mut *$e };
    (@borrow ref $e:ident) => { &*$e };
    (@ptr mut $t:ty, $e:expr) => { $e as *mut $t };
    (@ptr ref $t:ty, $e:expr) => { $e as *const $t };
}
pub(crate) use maps;

/// The methods of a write guard (borrowed or owned), each after its docs, in this order:
/// `map`, `try_map` (to its mapped form), `downgrade_map`, `try_downgrade_map` (to a read
/// guard, see [`downgrade`]), `into_mapped`, `downgrade`. `$mapped` and `$read` build the
/// mapped and the read guard from a shell and a data pointer.
macro_rules! write_guard {
    (
        T -> $mapped_u:ty, $mapped_t:ty, $read_u:ty, $read_t:ty,
        |$shell:ident, $data:ident| $mapped:expr, $read:expr;
        $(#[$map:meta])* fn map;
        $(#[$try_map:meta])* fn try_map;
        $(#[$dmap:meta])* fn downgrade_map;
        $(#[$try_dmap:meta])* fn try_downgrade_map;
        $(#[$into_mapped:meta])* fn into_mapped;
        $(#[$downgrade:meta])* fn downgrade;
    ) => {
        maps! {
            mut T => U [F, U] -> $mapped_u,
            |$shell, $data| $mapped;
            $(#[$map])* fn map;
            $(#[$try_map])* fn try_map;
        }

        maps! {
            ref T => U [F, U] -> $read_u,
            |$shell, $data| { let $shell = downgrade($shell); $read };
            $(#[$dmap])* fn downgrade_map;
            $(#[$try_dmap])* fn try_downgrade_map;
        }

        $(#[$into_mapped])*
        #[inline]
        pub fn into_mapped(this: Self) -> $mapped_t {
            Self::map(this, |me| me)
        }

        $(#[$downgrade])*
        pub fn downgrade(self) -> $read_t {
            let $data = self.data.cast_const();
            let $shell = downgrade(self.shell);
            $read
        }
    };
}
pub(crate) use write_guard;
