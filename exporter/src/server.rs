//! The HTTP server: bind, accept with bounds, serve [`router`](crate::router), shut down
//! gracefully.

use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore, watch};
use tokio::task::{JoinHandle, JoinSet};

use crate::error::{ServeError, ServeErrorKind};
use crate::routes;

/// The default listening address, `127.0.0.1:9464` (loopback only: expose it on purpose).
pub const DEFAULT_ADDR: &str = "127.0.0.1:9464";

/// Starts the exporter on `addr` (`host:port`; port `0` picks a free port) on the current
/// tokio runtime, with the default [`ServeOptions`].
///
/// The socket is bound before this returns, so the server accepts connections as soon as you
/// have the [`Server`]; [`Server::local_addr`] tells the port it got.
///
/// # Errors
///
/// A [`ServeError`] whose [`kind`](ServeError::kind) says why: the address does not parse or
/// resolve ([`InvalidAddress`](ServeErrorKind::InvalidAddress)), another socket listens there
/// ([`AddressInUse`](ServeErrorKind::AddressInUse)), no tokio runtime is running
/// ([`NoRuntime`](ServeErrorKind::NoRuntime)), or binding failed otherwise
/// ([`Io`](ServeErrorKind::Io), such as a privileged port).
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let server = lockscope_exporter::serve("127.0.0.1:0").await?;
/// println!("scrape http://{}/metrics", server.local_addr());
/// server.shutdown().await;
/// # Ok(())
/// # }
/// ```
pub async fn serve(addr: &str) -> Result<Server, ServeError> {
    ServeOptions::new().serve(addr).await
}

/// Limits and timeouts of the server started by [`ServeOptions::serve`]; the defaults are
/// what [`serve`] uses.
///
/// | option | default | what it bounds |
/// |---|---|---|
/// | [`max_connections`](Self::max_connections) | 512 | open connections; more wait in the kernel's accept queue |
/// | [`header_read_timeout`](Self::header_read_timeout) | 10 s | time to send a request head, and idle time of a kept-alive connection |
/// | [`max_header_bytes`](Self::max_header_bytes) | 16 KiB | request line and headers; larger get `431` (so do more than 100 headers, hyper's own limit) |
/// | [`request_timeout`](Self::request_timeout) | 10 s | time from request head to response (`503` past it) |
/// | [`write_timeout`](Self::write_timeout) | 10 s | a response write making no progress (a client that stopped reading) |
/// | [`shutdown_grace`](Self::shutdown_grace) | 5 s | in-flight requests at [`Server::shutdown`] |
///
/// Request bodies are never read, and responses are built whole before they are sent, so
/// the memory of the server is bounded by these numbers and the size of one response.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use std::time::Duration;
/// use lockscope_exporter::ServeOptions;
///
/// let server = ServeOptions::new()
///     .max_connections(64)
///     .header_read_timeout(Duration::from_secs(5))
///     .serve("127.0.0.1:0")
///     .await?;
/// server.shutdown().await;
/// # Ok(())
/// # }
/// ```
#[derive(Clone, Debug)]
pub struct ServeOptions {
    max_connections: usize,
    header_read_timeout: Duration,
    max_header_bytes: usize,
    request_timeout: Duration,
    write_timeout: Duration,
    shutdown_grace: Duration,
}

impl Default for ServeOptions {
    fn default() -> ServeOptions {
        ServeOptions::new()
    }
}

/// hyper's smallest allowed read buffer.
const MIN_BUF: usize = 8192;

impl ServeOptions {
    /// The defaults (see the table above).
    pub fn new() -> ServeOptions {
        ServeOptions {
            max_connections: 512,
            header_read_timeout: Duration::from_secs(10),
            max_header_bytes: 16 * 1024,
            request_timeout: routes::DEFAULT_REQUEST_TIMEOUT,
            write_timeout: Duration::from_secs(10),
            shutdown_grace: Duration::from_secs(5),
        }
    }

    /// Open connections at most (at least 1).
    pub fn max_connections(mut self, n: usize) -> ServeOptions {
        self.max_connections = n.max(1);
        self
    }

    /// Time a client has to send a request head; also how long a kept-alive connection may
    /// stay idle.
    pub fn header_read_timeout(mut self, d: Duration) -> ServeOptions {
        self.header_read_timeout = d;
        self
    }

    /// Largest request line plus headers, in bytes (at least 1 KiB).
    pub fn max_header_bytes(mut self, n: usize) -> ServeOptions {
        self.max_header_bytes = n.max(1024);
        self
    }

    /// Time from a request's head to its response.
    pub fn request_timeout(mut self, d: Duration) -> ServeOptions {
        self.request_timeout = d;
        self
    }

    /// Time a response write may make no progress before the connection is closed.
    pub fn write_timeout(mut self, d: Duration) -> ServeOptions {
        self.write_timeout = d;
        self
    }

    /// Time [`Server::shutdown`] lets in-flight requests finish before closing them.
    pub fn shutdown_grace(mut self, d: Duration) -> ServeOptions {
        self.shutdown_grace = d;
        self
    }

    /// Starts the exporter on `addr` with these options; see [`serve`].
    ///
    /// # Errors
    ///
    /// As [`serve`].
    pub async fn serve(self, addr: &str) -> Result<Server, ServeError> {
        if tokio::runtime::Handle::try_current().is_err() {
            return Err(ServeError::new(ServeErrorKind::NoRuntime, addr, None));
        }
        let listener = bind(addr).await?;
        let local_addr = listener
            .local_addr()
            .map_err(|e| ServeError::new(ServeErrorKind::Io, addr, Some(e)))?;
        let (tx, rx) = watch::channel(false);
        let task = tokio::spawn(accept_loop(listener, self, rx));
        tracing::info!(target: "lockscope::exporter", "serving /metrics and /debug on http://{local_addr}");
        Ok(Server {
            local_addr,
            shutdown: tx,
            task,
        })
    }
}

async fn bind(addr: &str) -> Result<TcpListener, ServeError> {
    let invalid = |e: Option<io::Error>| ServeError::new(ServeErrorKind::InvalidAddress, addr, e);
    let candidates: Vec<SocketAddr> = match addr.parse::<SocketAddr>() {
        Ok(a) => vec![a],
        // Not an IP literal: `host:port` with a name (resolved off the runtime's workers).
        Err(_) if valid_host_port(addr) => tokio::net::lookup_host(addr)
            .await
            .map_err(|e| invalid(Some(e)))?
            .collect(),
        Err(_) => return Err(invalid(None)),
    };
    let mut last = None;
    for a in candidates {
        match TcpListener::bind(a).await {
            Ok(l) => return Ok(l),
            Err(e) => last = Some(e),
        }
    }
    Err(match last {
        Some(e) if e.kind() == io::ErrorKind::AddrInUse => {
            ServeError::new(ServeErrorKind::AddressInUse, addr, Some(e))
        }
        Some(e) => ServeError::new(ServeErrorKind::Io, addr, Some(e)),
        None => invalid(None),
    })
}

/// `name:port` with a non-empty name of hostname characters and a numeric port.
fn valid_host_port(addr: &str) -> bool {
    let Some((host, port)) = addr.rsplit_once(':') else {
        return false;
    };
    !host.is_empty()
        && host
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'.')
        && port.parse::<u16>().is_ok()
}

/// A running exporter, returned by [`serve`].
///
/// Dropping it leaves the server running until the runtime shuts down; call
/// [`shutdown`](Server::shutdown) to stop it earlier.
#[derive(Debug)]
pub struct Server {
    local_addr: SocketAddr,
    shutdown: watch::Sender<bool>,
    task: JoinHandle<()>,
}

impl Server {
    /// The address the server listens on (with the port picked when `0` was asked).
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// Stops accepting connections at once (the port is free when this returns), lets
    /// in-flight requests finish within the shutdown grace (5 s by default), then closes
    /// every connection and returns.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let server = lockscope_exporter::serve("127.0.0.1:0").await?;
    /// let addr = server.local_addr();
    /// server.shutdown().await;
    /// assert!(tokio::net::TcpStream::connect(addr).await.is_err());
    /// # Ok(())
    /// # }
    /// ```
    pub async fn shutdown(self) {
        let _ = self.shutdown.send(true);
        if let Err(e) = self.task.await
            && e.is_panic()
        {
            tracing::error!(target: "lockscope::exporter", "exporter accept loop panicked: {e}");
        }
    }
}

/// Resolves when shutdown is asked; never if the [`Server`] was dropped without asking.
async fn shutdown_asked(rx: &mut watch::Receiver<bool>) {
    if rx.wait_for(|stop| *stop).await.is_err() {
        std::future::pending::<()>().await;
    }
}

async fn accept_loop(listener: TcpListener, opts: ServeOptions, mut stop: watch::Receiver<bool>) {
    let slots = Arc::new(Semaphore::new(opts.max_connections));
    let service = TowerToHyperService::new(routes::router_with_timeout(opts.request_timeout));
    let mut http = http1::Builder::new();
    http.timer(TokioTimer::new())
        .header_read_timeout(opts.header_read_timeout)
        .max_header_size(opts.max_header_bytes)
        .max_buf_size(opts.max_header_bytes.max(MIN_BUF))
        .keep_alive(true);
    let mut conns = JoinSet::new();
    let mut slot: Option<OwnedSemaphorePermit> = None;
    loop {
        let Some(permit) = slot.take() else {
            tokio::select! {
                biased;
                () = shutdown_asked(&mut stop) => break,
                Some(done) = conns.join_next() => log_conn_end(done),
                // The semaphore is never closed, so this branch always matches.
                Ok(p) = slots.clone().acquire_owned() => slot = Some(p),
            }
            continue;
        };
        tokio::select! {
            biased;
            () = shutdown_asked(&mut stop) => break,
            Some(done) = conns.join_next() => {
                log_conn_end(done);
                slot = Some(permit);
            }
            accepted = listener.accept() => match accepted {
                Ok((stream, _peer)) => {
                    conns.spawn(serve_conn(stream, permit, http.clone(), service.clone(), opts.write_timeout, stop.clone()));
                }
                Err(e) => {
                    slot = Some(permit);
                    if !is_per_connection(&e) {
                        // Out of file descriptors or similar: back off instead of spinning.
                        tracing::warn!(target: "lockscope::exporter", "accept failed: {e}; retrying in 100 ms");
                        tokio::select! {
                            () = shutdown_asked(&mut stop) => break,
                            () = tokio::time::sleep(Duration::from_millis(100)) => {}
                        }
                    }
                }
            },
        }
    }
    drop(listener);
    // Connections saw the same signal and are finishing their in-flight requests.
    let drain = async {
        while let Some(done) = conns.join_next().await {
            log_conn_end(done);
        }
    };
    if tokio::time::timeout(opts.shutdown_grace, drain)
        .await
        .is_err()
    {
        conns.shutdown().await;
    }
}

fn is_per_connection(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::ConnectionAborted
            | io::ErrorKind::ConnectionReset
            | io::ErrorKind::ConnectionRefused
            | io::ErrorKind::Interrupted
            | io::ErrorKind::WouldBlock
    )
}

fn log_conn_end(done: Result<(), tokio::task::JoinError>) {
    if let Err(e) = done
        && e.is_panic()
    {
        tracing::error!(target: "lockscope::exporter", "exporter connection task panicked: {e}");
    }
}

type Service = TowerToHyperService<axum::Router>;

async fn serve_conn(
    stream: TcpStream,
    permit: OwnedSemaphorePermit,
    http: http1::Builder,
    service: Service,
    write_timeout: Duration,
    mut stop: watch::Receiver<bool>,
) {
    let _ = stream.set_nodelay(true);
    let io = TokioIo::new(crate::stall::WriteStall::new(stream, write_timeout));
    let conn = http.serve_connection(io, service);
    let mut conn = std::pin::pin!(conn);
    let result = tokio::select! {
        r = conn.as_mut() => r,
        () = shutdown_asked(&mut stop) => {
            conn.as_mut().graceful_shutdown();
            conn.await
        }
    };
    if let Err(e) = result {
        // Timeouts, oversized heads, garbage and resets are the client's business.
        tracing::debug!(target: "lockscope::exporter", "connection ended: {e}");
    }
    drop(permit);
}
