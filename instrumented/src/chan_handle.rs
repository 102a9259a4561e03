//! The traits every channel handle wrapper implements the same way. A handle is tokio's (or
//! std's) own, `inner`, beside the channel's shared record, `chan: Arc<Channel>`: a clone
//! clones both (tokio's clone, one more reference to the record), and `Debug` is the wrapped
//! handle's, so that a swapped import prints what it printed before.

/// `Clone` and/or `Debug` for channel handle wrappers of the shape `{ inner, chan }`:
///
/// - `handle_impls!(Clone, Debug for Sender, WeakSender)`: both traits;
/// - `handle_impls!(Debug for Receiver)`: `Debug` only (a receiver that is not `Clone`; it
///   may have fields beyond the two, `Debug` reads `inner` alone);
/// - `Debug(T: Debug)` in place of `Debug` where the wrapped handle's `Debug` asks for it
///   (tokio's `watch`).
macro_rules! handle_impls {
    (Clone, Debug for $($ty:ident),+) => {
        $crate::chan_handle::handle_impls!(Clone for $($ty),+);
        $crate::chan_handle::handle_impls!(Debug for $($ty),+);
    };
    (Clone, Debug(T: Debug) for $($ty:ident),+) => {
        $crate::chan_handle::handle_impls!(Clone for $($ty),+);
        $crate::chan_handle::handle_impls!(Debug(T: Debug) for $($ty),+);
    };
    (Clone for $($ty:ident),+) => {
        $(
            impl<T> Clone for $ty<T> {
                fn clone(&self) -> Self {
                    $ty {
                        inner: self.inner.clone(),
                        chan: self.chan.clone(),
                    }
                }
            }
        )+
    };
    (Debug for $($ty:ident),+) => {
        $(
            impl<T> ::std::fmt::Debug for $ty<T> {
                fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                    ::std::fmt::Debug::fmt(&self.inner, f)
                }
            }
        )+
    };
    (Debug(T: Debug) for $($ty:ident),+) => {
        $(
            impl<T: ::std::fmt::Debug> ::std::fmt::Debug for $ty<T> {
                fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                    ::std::fmt::Debug::fmt(&self.inner, f)
                }
            }
        )+
    };
}

pub(crate) use handle_impls;
