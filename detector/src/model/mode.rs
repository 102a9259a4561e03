//! How a primitive is held or requested ([`Mode`]), the flag bits of a hold, and the one
//! word a hold table keeps them in ([`Meta`]).

/// How a primitive is held or requested.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, serde::Serialize)]
#[serde(rename_all = "snake_case")]
#[repr(u8)]
pub enum Mode {
    /// A mutex, an rwlock write, a parking_lot exclusive lock.
    Exclusive = 0,
    /// An rwlock read.
    Shared = 1,
    /// Semaphore permits.
    Permits = 2,
    /// A parking_lot upgradable read.
    Upgradable = 3,
    /// A parking_lot `read_recursive`.
    SharedRecursive = 4,
}

impl Mode {
    pub(crate) fn from_u8(v: u8) -> Mode {
        match v {
            0 => Mode::Exclusive,
            1 => Mode::Shared,
            2 => Mode::Permits,
            3 => Mode::Upgradable,
            _ => Mode::SharedRecursive,
        }
    }

    /// Whether this access excludes every other holder.
    pub fn is_exclusive(self) -> bool {
        matches!(self, Mode::Exclusive)
    }

    /// A word for reports on a primitive of kind `kind` (a kind string): an exclusive hold is a
    /// `write` on an rwlock, an `init` on a once-cell (its initialiser runs; a waiter waits
    /// for it) and a `lock` elsewhere.
    pub fn verb_in(self, kind: &str) -> &'static str {
        match self {
            Mode::Exclusive if kind.ends_with("rwlock") => "write",
            Mode::Exclusive if kind == crate::base::names::KIND_ONCE_CELL => "init",
            m => m.verb(),
        }
    }

    /// A word for reports: `lock`, `read`, `acquire`, ...
    pub fn verb(self) -> &'static str {
        match self {
            Mode::Exclusive => "lock",
            Mode::Shared => "read",
            Mode::Permits => "acquire",
            Mode::Upgradable => "upgradable_read",
            Mode::SharedRecursive => "read_recursive",
        }
    }
}

/// Flag: an owned guard or permit (`lock_owned`, `acquire_owned`, ...) that may have moved to
/// another task; its holder is not trusted for nested-acquire, lock-order or deadlock proofs.
pub const FLAG_MOVABLE: u8 = 1;
/// Flag: taken with a `try_` form (adds no lock-order edge).
pub const FLAG_TRY: u8 = 2;
/// Flag: a blocking (parking_lot) primitive held inside a tokio task.
pub const FLAG_BLOCKING_IN_TASK: u8 = 4;
/// Flag: a re-entry of a `ReentrantMutex` already held by this thread.
pub const FLAG_REENTRY: u8 = 8;
/// Flag: acquired by a task of a current-thread runtime, which can only resume on this thread.
pub const FLAG_PINNED_THREAD: u8 = 16;
/// Flag: split off another hold (`SemaphorePermit::split`): not an acquisition of its own.
pub const FLAG_SPLIT: u8 = 32;
/// Flag: the hold's start is a precise reading (one acquisition in `SAMPLE_EVERY`), so its
/// release times it precisely for the hold histogram.
pub const FLAG_SAMPLED: u8 = 64;
/// Flag: recorded by the quick grant of a thread (`hooks::acquired`): the thread's own hold,
/// in an inline entry of its table, untimed, in no task index, so that its release on that
/// thread needs no other check.
pub const FLAG_QUICK: u8 = 128;

/// The descriptive half of a hold or a wait in one word, as the hold tables keep it: the
/// permits (low 32 bits), the [`Mode`] (8 bits) and the flag bits (`FLAG_*`, 8 bits above).
/// (The test scope has a word of its own, whole: no scope id is ever truncated.)
#[derive(Clone, Copy, PartialEq, Eq, Default)]
#[repr(transparent)]
pub struct Meta(u64);

impl Meta {
    /// `permits` in `mode`, with `flags`.
    #[inline(always)]
    pub const fn new(permits: u32, mode: Mode, flags: u8) -> Meta {
        Meta(permits as u64 | ((mode as u64) << 32) | ((flags as u64) << 40))
    }

    /// The word as a table stores it in an atomic.
    #[inline(always)]
    pub const fn bits(self) -> u64 {
        self.0
    }

    /// A word a table stored ([`Meta::bits`]).
    #[inline(always)]
    pub const fn from_bits(bits: u64) -> Meta {
        Meta(bits)
    }

    /// The permits.
    #[inline(always)]
    pub const fn permits(self) -> u32 {
        self.0 as u32
    }

    /// The mode.
    #[inline(always)]
    pub fn mode(self) -> Mode {
        Mode::from_u8((self.0 >> 32) as u8)
    }

    /// The flag bits.
    #[inline(always)]
    pub const fn flags(self) -> u8 {
        (self.0 >> 40) as u8
    }

    /// Whether any of `flags` is set.
    #[inline(always)]
    pub const fn any(self, flags: u8) -> bool {
        self.flags() & flags != 0
    }

    /// With `flags` set too.
    #[inline(always)]
    pub const fn with(self, flags: u8) -> Meta {
        Meta(self.0 | ((flags as u64) << 40))
    }

    /// With `permits` in `mode`, its flags kept (a downgrade, an upgrade, a split).
    #[inline(always)]
    pub const fn remade(self, permits: u32, mode: Mode) -> Meta {
        Meta::new(permits, mode, self.flags())
    }
}

impl std::fmt::Debug for Meta {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Meta")
            .field("permits", &self.permits())
            .field("mode", &self.mode())
            .field("flags", &self.flags())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_field_comes_back_as_packed() {
        for mode in [
            Mode::Exclusive,
            Mode::Shared,
            Mode::Permits,
            Mode::Upgradable,
            Mode::SharedRecursive,
        ] {
            let m = Meta::new(u32::MAX, mode, FLAG_TRY | FLAG_QUICK);
            assert_eq!(
                (m.permits(), m.mode(), m.flags()),
                (u32::MAX, mode, FLAG_TRY | FLAG_QUICK)
            );
            assert_eq!(Meta::from_bits(m.bits()), m);
            assert!(m.any(FLAG_QUICK) && !m.any(FLAG_SPLIT));
            assert_eq!(
                m.with(FLAG_SPLIT).flags(),
                FLAG_TRY | FLAG_QUICK | FLAG_SPLIT
            );
            assert_eq!(
                m.remade(3, Mode::Shared),
                Meta::new(3, Mode::Shared, FLAG_TRY | FLAG_QUICK)
            );
        }
    }
}
