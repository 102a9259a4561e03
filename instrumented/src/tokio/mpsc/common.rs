//! What both channels share: the same methods on [`Receiver`](super::Receiver)
//! and [`UnboundedReceiver`](super::UnboundedReceiver), on both senders and both weak senders,
//! as tokio's have, written once.

/// Messages a receive returned: for the channel's metered counts.
#[inline]
pub(super) fn received<T>(out: &Option<T>) -> usize {
    usize::from(out.is_some())
}

/// Implements the methods tokio's `Receiver` and `UnboundedReceiver` share, `Drop` (the
/// receiver is gone: no send waits for it any more) and `Debug`, for the wrapper `$ty` of
/// tokio's `$raw` (a path below `tokio::sync::mpsc`, for the docs' links).
macro_rules! receiver_common {
    ($ty:ident, $raw:literal) => {
        impl<T> $ty<T> {
            #[doc = concat!("Wrapper for [`tokio::sync::mpsc::", $raw, "::recv`]. Cancel safe, as tokio's.")]
            #[track_caller]
            pub fn recv(&mut self) -> impl Future<Output = Option<T>> + '_ {
                let site = Location::caller();
                Waiting::counting(
                    self.inner.recv(),
                    &self.chan,
                    ChanOp::Recv,
                    site,
                    super::common::received,
                )
            }

            #[doc = concat!("Wrapper for [`tokio::sync::mpsc::", $raw, "::recv_many`]. Cancel safe, as tokio's.")]
            #[track_caller]
            pub fn recv_many<'a>(
                &'a mut self,
                buffer: &'a mut Vec<T>,
                limit: usize,
            ) -> impl Future<Output = usize> + 'a {
                let site = Location::caller();
                Waiting::counting(
                    self.inner.recv_many(buffer, limit),
                    &self.chan,
                    ChanOp::Recv,
                    site,
                    |n: &usize| *n,
                )
            }

            #[doc = concat!("Wrapper for [`tokio::sync::mpsc::", $raw, "::try_recv`].")]
            #[inline]
            pub fn try_recv(&mut self) -> Result<T, TryRecvError> {
                self.chan.note_receiver();
                let out = self.inner.try_recv();
                if out.is_ok() {
                    self.chan.received(1);
                }
                out
            }

            #[doc = concat!("Wrapper for [`tokio::sync::mpsc::", $raw, "::blocking_recv`]: a wait that blocks the thread, seen as such.")]
            ///
            /// # Panics
            ///
            /// As tokio's: inside an asynchronous execution context.
            #[track_caller]
            pub fn blocking_recv(&mut self) -> Option<T> {
                crate::tokio::assert_blocking_allowed();
                let site = Location::caller();
                let out = chan_wait::block_on(self.inner.recv(), &self.chan, ChanOp::Recv, site);
                self.chan.received(super::common::received(&out));
                out
            }

            #[doc = concat!("Wrapper for [`tokio::sync::mpsc::", $raw, "::blocking_recv_many`].")]
            ///
            /// # Panics
            ///
            /// As tokio's: inside an asynchronous execution context.
            #[track_caller]
            pub fn blocking_recv_many(&mut self, buffer: &mut Vec<T>, limit: usize) -> usize {
                crate::tokio::assert_blocking_allowed();
                let site = Location::caller();
                let n = chan_wait::block_on(
                    self.inner.recv_many(buffer, limit),
                    &self.chan,
                    ChanOp::Recv,
                    site,
                );
                self.chan.received(n);
                n
            }

            #[doc = concat!("Wrapper for [`tokio::sync::mpsc::", $raw, "::close`]: from now on, no send waits for this receiver.")]
            pub fn close(&mut self) {
                self.chan.receiver_gone();
                self.inner.close();
            }

            #[doc = concat!("Wrapper for [`tokio::sync::mpsc::", $raw, "::is_closed`].")]
            #[inline]
            pub fn is_closed(&self) -> bool {
                self.inner.is_closed()
            }

            #[doc = concat!("Wrapper for [`tokio::sync::mpsc::", $raw, "::is_empty`].")]
            #[inline]
            pub fn is_empty(&self) -> bool {
                self.inner.is_empty()
            }

            #[doc = concat!("Wrapper for [`tokio::sync::mpsc::", $raw, "::len`].")]
            #[inline]
            pub fn len(&self) -> usize {
                self.inner.len()
            }

            #[doc = concat!("Wrapper for [`tokio::sync::mpsc::", $raw, "::poll_recv`]. The caller becomes the receiver's owner; a pending poll is not recorded as a wait (nothing would end it if the poller moved on).")]
            #[inline]
            pub fn poll_recv(&mut self, cx: &mut Context<'_>) -> Poll<Option<T>> {
                self.chan.note_receiver();
                let out = self.inner.poll_recv(cx);
                if let Poll::Ready(Some(_)) = &out {
                    self.chan.received(1);
                }
                out
            }

            #[doc = concat!("Wrapper for [`tokio::sync::mpsc::", $raw, "::poll_recv_many`] (see [`Self::poll_recv`]).")]
            #[inline]
            pub fn poll_recv_many(
                &mut self,
                cx: &mut Context<'_>,
                buffer: &mut Vec<T>,
                limit: usize,
            ) -> Poll<usize> {
                self.chan.note_receiver();
                let out = self.inner.poll_recv_many(cx, buffer, limit);
                if let Poll::Ready(n) = out {
                    self.chan.received(n);
                }
                out
            }

            #[doc = concat!("Wrapper for [`tokio::sync::mpsc::", $raw, "::sender_strong_count`].")]
            #[inline]
            pub fn sender_strong_count(&self) -> usize {
                self.inner.sender_strong_count()
            }

            #[doc = concat!("Wrapper for [`tokio::sync::mpsc::", $raw, "::sender_weak_count`].")]
            #[inline]
            pub fn sender_weak_count(&self) -> usize {
                self.inner.sender_weak_count()
            }

            /// The channel's name in reports (lockscope's): the one given when it was made, or
            /// the creation site's `file:line`.
            pub fn name(&self) -> &str {
                self.chan.name()
            }
        }

        impl<T> Drop for $ty<T> {
            fn drop(&mut self) {
                self.chan.receiver_gone();
                // tokio drops what was queued with its receiver (the field, dropped next).
                self.chan.receiver_dropped();
            }
        }

        $crate::chan_handle::handle_impls!(Debug for $ty);
    };
}

/// Implements the methods tokio's `Sender` and `UnboundedSender` share, with `Clone` and
/// `Debug`, for the wrapper `$ty` of tokio's `$raw`, and the whole of its weak form `$weak`
/// (of tokio's `$raw_weak`).
macro_rules! sender_common {
    ($ty:ident, $raw:literal, $weak:ident, $raw_weak:literal) => {
        impl<T> $ty<T> {
            #[doc = concat!("Wrapper for [`tokio::sync::mpsc::", $raw, "::closed`].")]
            pub async fn closed(&self) {
                self.inner.closed().await
            }

            #[doc = concat!("Wrapper for [`tokio::sync::mpsc::", $raw, "::is_closed`].")]
            #[inline]
            pub fn is_closed(&self) -> bool {
                self.inner.is_closed()
            }

            #[doc = concat!("Wrapper for [`tokio::sync::mpsc::", $raw, "::same_channel`].")]
            #[inline]
            pub fn same_channel(&self, other: &Self) -> bool {
                self.inner.same_channel(&other.inner)
            }

            #[doc = concat!("Wrapper for [`tokio::sync::mpsc::", $raw, "::downgrade`].")]
            pub fn downgrade(&self) -> $weak<T> {
                $weak {
                    inner: self.inner.downgrade(),
                    chan: self.chan.clone(),
                }
            }

            #[doc = concat!("Wrapper for [`tokio::sync::mpsc::", $raw, "::strong_count`].")]
            #[inline]
            pub fn strong_count(&self) -> usize {
                self.inner.strong_count()
            }

            #[doc = concat!("Wrapper for [`tokio::sync::mpsc::", $raw, "::weak_count`].")]
            #[inline]
            pub fn weak_count(&self) -> usize {
                self.inner.weak_count()
            }

            /// The channel's name in reports (lockscope's): the one given when it was made, or
            /// the creation site's `file:line`.
            pub fn name(&self) -> &str {
                self.chan.name()
            }
        }

        impl<T> $weak<T> {
            #[doc = concat!("Wrapper for [`tokio::sync::mpsc::", $raw_weak, "::upgrade`].")]
            pub fn upgrade(&self) -> Option<$ty<T>> {
                self.inner.upgrade().map(|inner| $ty {
                    inner,
                    chan: self.chan.clone(),
                })
            }

            #[doc = concat!("Wrapper for [`tokio::sync::mpsc::", $raw_weak, "::strong_count`].")]
            pub fn strong_count(&self) -> usize {
                self.inner.strong_count()
            }

            #[doc = concat!("Wrapper for [`tokio::sync::mpsc::", $raw_weak, "::weak_count`].")]
            pub fn weak_count(&self) -> usize {
                self.inner.weak_count()
            }
        }

        $crate::chan_handle::handle_impls!(Clone, Debug for $ty, $weak);
    };
}
