//! A connection whose writes fail once they have made no progress for a while.
//!
//! hyper bounds the time to read a request head (which also bounds idle keep-alive), but not
//! a client that stops reading its response: the write would wait forever and the connection
//! slot with it. [`WriteStall`] turns such a stall into an `io::ErrorKind::TimedOut` error, so
//! hyper closes the connection.
//!
//! | write poll returns | timer |
//! |---|---|
//! | `Ready` (bytes written, flushed or shut down) | stopped |
//! | `Pending`, timer stopped | started: deadline = now + limit |
//! | `Pending`, timer running, deadline not passed | left running |
//! | `Pending`, deadline passed | `Err(TimedOut)` |

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll, ready};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::time::{Instant, Sleep};

/// An `AsyncRead + AsyncWrite` whose writes time out after `limit` without progress.
pub(crate) struct WriteStall<T> {
    inner: T,
    limit: Duration,
    /// Boxed so that `WriteStall` stays `Unpin` without pin projection.
    timer: Pin<Box<Sleep>>,
    running: bool,
}

impl<T> WriteStall<T> {
    pub(crate) fn new(inner: T, limit: Duration) -> WriteStall<T> {
        WriteStall {
            inner,
            limit,
            timer: Box::pin(tokio::time::sleep(limit)),
            running: false,
        }
    }

    /// Maps one write-side poll through the table in the module docs.
    fn check<R>(&mut self, cx: &mut Context<'_>, poll: Poll<io::Result<R>>) -> Poll<io::Result<R>> {
        match poll {
            Poll::Ready(r) => {
                self.running = false;
                Poll::Ready(r)
            }
            Poll::Pending => {
                if !self.running {
                    self.running = true;
                    let deadline = Instant::now() + self.limit;
                    self.timer.as_mut().reset(deadline);
                }
                ready!(self.timer.as_mut().poll(cx));
                Poll::Ready(Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    "client stopped reading the response",
                )))
            }
        }
    }
}

impl<T: AsyncRead + Unpin> AsyncRead for WriteStall<T> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_read(cx, buf)
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for WriteStall<T> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let poll = Pin::new(&mut this.inner).poll_write(cx, buf);
        this.check(cx, poll)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let poll = Pin::new(&mut this.inner).poll_write_vectored(cx, bufs);
        this.check(cx, poll)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let poll = Pin::new(&mut this.inner).poll_flush(cx);
        this.check(cx, poll)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let poll = Pin::new(&mut this.inner).poll_shutdown(cx);
        this.check(cx, poll)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    #[tokio::test(start_paused = true)]
    async fn a_stalled_write_times_out() {
        let (a, mut b) = tokio::io::duplex(16);
        let mut w = WriteStall::new(a, Duration::from_secs(5));
        let start = Instant::now();
        let err = w.write_all(&[0u8; 64]).await.unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::TimedOut);
        assert_eq!(start.elapsed(), Duration::from_secs(5));
        // What fitted in the pipe was written before the stall.
        let mut got = [0u8; 16];
        b.read_exact(&mut got).await.unwrap();
    }

    #[tokio::test(start_paused = true)]
    async fn a_slow_reader_that_keeps_reading_is_not_cut() {
        let (a, mut b) = tokio::io::duplex(16);
        let mut w = WriteStall::new(a, Duration::from_secs(5));
        let reader = tokio::spawn(async move {
            let mut total = 0;
            let mut buf = [0u8; 8];
            // 4 s between reads: each under the limit, 40 s in all, far over it.
            while total < 128 {
                tokio::time::sleep(Duration::from_secs(4)).await;
                total += b.read(&mut buf).await.unwrap();
            }
            total
        });
        w.write_all(&[1u8; 128]).await.unwrap();
        w.flush().await.unwrap();
        assert_eq!(reader.await.unwrap(), 128);
    }
}
