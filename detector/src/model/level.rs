//! Declared lock levels: the order a user promises to take primitives in.

use std::fmt;

/// A declared lock level (a lock *rank*): a primitive given one must be acquired only while
/// every primitive its task or thread holds that also has a level has a strictly lower one
/// (lower levels first). Acquiring it out of that order is a `lock-order-inversion` at that
/// acquisition, on the first run: no second task has to race it.
///
/// A level is its `rank`; the optional name only makes reports read better (an enum's
/// variant name, say: see [`LockLevel`]). Two levels with one rank and different names are
/// still one level for the rule.
///
/// ```
/// use lockscope_detector::Level;
///
/// let accounts = Level::named(2, "accounts");
/// assert_eq!((accounts.rank(), accounts.name()), (2, Some("accounts")));
/// assert_eq!(accounts.to_string(), "level 2 (accounts)");
/// assert_eq!(Level::new(1).to_string(), "level 1");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Level {
    rank: u32,
    name: Option<&'static str>,
}

impl Level {
    /// The level `rank`: lower ranks are taken first.
    pub const fn new(rank: u32) -> Level {
        Level { rank, name: None }
    }

    /// The level `rank`, shown as `name` in reports.
    pub const fn named(rank: u32, name: &'static str) -> Level {
        Level {
            rank,
            name: Some(name),
        }
    }

    /// Its rank: what the rule compares.
    pub const fn rank(&self) -> u32 {
        self.rank
    }

    /// Its name, if it was given one.
    pub const fn name(&self) -> Option<&'static str> {
        self.name
    }
}

impl fmt::Display for Level {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "level {}", self.rank)?;
        if let Some(name) = self.name {
            // Escaped as names are wherever lockscope shows them.
            write!(f, " ({})", name.escape_debug())?;
        }
        Ok(())
    }
}

/// What can be a primitive's declared level: a [`Level`] itself, a plain rank (`u32`), or a
/// user's own type, usually an enum of the program's lock classes (Guava's
/// `newInstanceWithExplicitOrdering(MyEnum)`, wgpu-core's `LockRank`).
///
/// ```
/// use lockscope_detector::{Level, LockLevel};
///
/// /// The program's lock classes, in the order they are taken.
/// #[derive(Clone, Copy, Debug)]
/// enum Rank {
///     Accounts = 1,
///     Ledger = 2,
/// }
///
/// impl LockLevel for Rank {
///     fn level(&self) -> Level {
///         let name = match self {
///             Rank::Accounts => "Accounts",
///             Rank::Ledger => "Ledger",
///         };
///         Level::named(*self as u32, name)
///     }
/// }
///
/// assert!(Rank::Accounts.level().rank() < Rank::Ledger.level().rank());
/// assert_eq!(Rank::Ledger.level().to_string(), "level 2 (Ledger)");
/// ```
pub trait LockLevel {
    /// The level it stands for.
    fn level(&self) -> Level;
}

impl LockLevel for Level {
    fn level(&self) -> Level {
        *self
    }
}

impl LockLevel for u32 {
    fn level(&self) -> Level {
        Level::new(*self)
    }
}

impl<L: LockLevel + ?Sized> LockLevel for &L {
    fn level(&self) -> Level {
        (**self).level()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A level's name is escaped where it is shown, as primitives' names are.
    #[test]
    fn a_hostile_level_name_is_escaped() {
        let l = Level::named(3, "x\")\n\u{1b}[31m");
        assert_eq!(l.to_string(), "level 3 (x\\\")\\n\\u{1b}[31m)");
        assert_eq!(Rank.level(), Level::new(7));
        assert_eq!(7u32.level(), Level::new(7));
    }

    struct Rank;

    impl LockLevel for Rank {
        fn level(&self) -> Level {
            Level::new(7)
        }
    }
}
