//! How a primitive is held or requested ([`Mode`]), the flag bits of a hold, and the one
//! word a hold table keeps them in ([`pack_meta`]).

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

/// Packs the descriptive half of an entry into one word: `permits | mode << 32 | flags << 40`.
/// (The test scope has a word of its own, whole: no scope id is ever truncated.)
#[inline]
pub fn pack_meta(permits: u32, mode: Mode, flags: u8) -> u64 {
    u64::from(permits) | (u64::from(mode as u8) << 32) | (u64::from(flags) << 40)
}

/// The permits of a word of [`pack_meta`].
#[inline(always)]
pub fn meta_permits(meta: u64) -> u32 {
    meta as u32
}

/// The mode of a word of [`pack_meta`].
#[inline(always)]
pub fn meta_mode(meta: u64) -> Mode {
    Mode::from_u8((meta >> 32) as u8)
}

/// The flags of a word of [`pack_meta`].
#[inline(always)]
pub fn meta_flags(meta: u64) -> u8 {
    (meta >> 40) as u8
}
