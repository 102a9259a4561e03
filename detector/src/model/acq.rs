//! One acquisition as a wrapper describes it to the detector.

use std::panic::Location;

use crate::model::mode::{Meta, Mode};

/// One acquisition as the wrapper describes it: its site, and its permits, mode and flags
/// packed in one word (as the hold tables keep them).
///
/// Two words, so that it travels in registers: a wider struct is passed through memory, and
/// reading it back whole right after it was written field by field stalls on store
/// forwarding (measured in docs/performance.md, "Store forwarding").
#[derive(Clone, Copy)]
pub struct Acq {
    site: &'static Location<'static>,
    /// Its permits, mode and flags.
    pub(crate) meta: Meta,
}

impl Acq {
    /// An acquisition of `permits` in `mode` at `site`.
    #[inline]
    pub fn new(site: &'static Location<'static>, permits: u32, mode: Mode) -> Acq {
        Acq {
            site,
            meta: Meta::new(permits, mode, 0),
        }
    }

    /// With extra flag bits (`TRY`, `MOVABLE`, `REENTRY`).
    #[inline]
    pub fn with_flags(mut self, flags: u8) -> Acq {
        self.meta = self.meta.with(flags);
        self
    }

    /// The caller's location.
    #[inline]
    pub fn site(&self) -> &'static Location<'static> {
        self.site
    }

    /// Permits requested (1 for locks; `max_readers` for a tokio write).
    #[inline]
    pub fn permits(&self) -> u32 {
        self.meta.permits()
    }

    /// Access requested.
    #[inline]
    pub fn mode(&self) -> Mode {
        self.meta.mode()
    }

    /// The flag bits.
    #[inline]
    pub fn flags(&self) -> u8 {
        self.meta.flags()
    }
}

impl std::fmt::Debug for Acq {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Acq")
            .field("site", &self.site)
            .field("permits", &self.permits())
            .field("mode", &self.mode())
            .field("flags", &self.flags())
            .finish()
    }
}
