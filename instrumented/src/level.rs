//! Declared lock levels on every lockscope lock (lockscope addition): `with_level` and
//! `level`, written once here for every wrapper (see `docs/lock-tools.md`).
//!
//! The level lives in the primitive's detector record, set once when the lock is built; the
//! acquisition paths never read it. The detector checks it where it already looks at what the
//! acquiring task or thread holds: the first time a primitive is acquired under a given set
//! of holds, as for the learned lock order.

/// `with_level` and `level` as inherent methods of a wrapper, from its detector record
/// (`prim`, an expression over `self`). `$path` names the type in the doc example, which must
/// hold for every wrapper: `new(1)` builds one.
macro_rules! declared_levels {
    (
        impl [$($gen:tt)*] $ty:ty as $path:literal;
        prim: |$sp:ident| $prim:expr;
    ) => {
        impl<$($gen)*> $ty {
            /// Declares its lock level (lockscope addition): from now on, acquiring it while
            /// the task or thread holds a lock of an equal or higher level is a
            /// `lock-order-inversion`, reported at that acquisition on the first run; lower
            /// levels are taken first. Give the level as the lock is built: a lock keeps the
            /// first level it is given, and one declared after the lock was nested may go
            /// unchecked for the sets of locks seen before.
            ///
            /// `level` is a [`Level`](crate::Level), a rank (`u32`) or a type of the
            /// program's implementing [`LockLevel`](crate::LockLevel), such as an enum of its
            /// lock classes. See `docs/lock-tools.md`.
            #[doc = concat!(
                "```\nuse lockscope::Level;\n\nlet p = ", $path,
                "::new(1).with_level(Level::new(2));\nassert_eq!(p.level(), Some(Level::new(2)));\n```"
            )]
            pub fn with_level(self, level: impl $crate::LockLevel) -> Self
            where
                Self: Sized,
            {
                {
                    let $sp = &self;
                    $prim.set_level(level.level());
                }
                self
            }

            /// Its declared lock level, if it was given one (lockscope addition: see
            /// [`with_level`](Self::with_level)).
            #[doc = concat!("```\nlet p = ", $path, "::new(1);\nassert_eq!(p.level(), None);\n```")]
            pub fn level(&self) -> Option<$crate::Level> {
                let $sp = self;
                $prim.level()
            }
        }
    };
}
pub(crate) use declared_levels;
