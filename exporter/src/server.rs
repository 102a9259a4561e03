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
use tokio::sync::watch;
use tokio::task::{JoinHandle, JoinSet};

use crate::error::{ServeError, ServeErrorKind};
use crate::routes;

mod conns;
use conns::{Conn, Conns, Evict};

/// How long a connection is left to send its request head before it may be closed to make
/// room for a newer one: without it, a flood of reconnecting clients could close a scraper's
/// connection before its request arrived.
const EVICTION_GRACE: Duration = Duration::from_millis(100);

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
/// | [`max_connections`](Self::max_connections) | 4096 | open connections; past it the one idle the longest is closed |
/// | [`first_byte_timeout`](Self::first_byte_timeout) | 2 s | time a new connection may stay silent |
/// | [`header_read_timeout`](Self::header_read_timeout) | 10 s | time to send a request head, and idle time of a kept-alive connection |
/// | [`max_header_bytes`](Self::max_header_bytes) | 16 KiB | request line and headers; larger get `431` (so do more than 100 headers, hyper's own limit) |
/// | [`request_timeout`](Self::request_timeout) | 10 s | time from request head to response (`503` past it) |
/// | [`write_timeout`](Self::write_timeout) | 10 s | a response write making no progress (a client that stopped reading) |
/// | [`shutdown_grace`](Self::shutdown_grace) | 5 s | in-flight requests at [`Server::shutdown`] |
///
/// Request bodies are never read, and responses are built whole before they are sent, so
/// the memory of the server is bounded by these numbers and the size of one response.
///
/// Idle connections cannot crowd out a scrape: a connection is *busy* only while one of its
/// requests is answered (at most two renders run at once, the rest wait holding no thread),
/// and when `max_connections` are open a new one is accepted anyway and the connection idle
/// the longest (silent, trickling its head, or kept alive between requests) is closed, once
/// it has been idle for 100 ms. Only when every open connection is busy do new ones wait in
/// the kernel's queue. Running out of
/// file descriptors closes the idlest connection too. A silent connection costs a file
/// descriptor and a parked task, no buffer.
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
    first_byte_timeout: Duration,
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
            max_connections: 4096,
            first_byte_timeout: Duration::from_secs(2),
            header_read_timeout: Duration::from_secs(10),
            max_header_bytes: 16 * 1024,
            request_timeout: routes::DEFAULT_REQUEST_TIMEOUT,
            write_timeout: Duration::from_secs(10),
            shutdown_grace: Duration::from_secs(5),
        }
    }

    /// Open connections at most (at least 1); a new one past it closes the connection idle
    /// the longest, if any (else it waits for a request to finish).
    pub fn max_connections(mut self, n: usize) -> ServeOptions {
        self.max_connections = n.max(1);
        self
    }

    /// Time a new connection has to send the first byte of its request (capped by the
    /// [`header_read_timeout`](Self::header_read_timeout)); a silent one is closed past it.
    pub fn first_byte_timeout(mut self, d: Duration) -> ServeOptions {
        self.first_byte_timeout = d;
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
    let table = Arc::new(Conns::default());
    let service = TowerToHyperService::new(routes::router_with_timeout(opts.request_timeout));
    let mut http = http1::Builder::new();
    http.timer(TokioTimer::new())
        .header_read_timeout(opts.header_read_timeout)
        .max_header_size(opts.max_header_bytes)
        .max_buf_size(opts.max_header_bytes.max(MIN_BUF))
        .keep_alive(true);
    let limits = ConnLimits {
        first_byte: opts.first_byte_timeout.min(opts.header_read_timeout),
        write: opts.write_timeout,
    };
    let mut conns = JoinSet::new();
    loop {
        if table.len() >= opts.max_connections {
            // Full: close the connection idle the longest to take the next client. If every
            // connection answers a request, or the idlest only just arrived, new clients wait
            // in the kernel's queue until that changes.
            let ripe = match table.evict_idlest(EVICTION_GRACE) {
                Evict::Evicted => continue,
                Evict::NotBefore(t) => t,
                Evict::NoneIdle => tokio::time::Instant::now() + opts.request_timeout,
            };
            tokio::select! {
                biased;
                () = shutdown_asked(&mut stop) => break,
                Some(done) = conns.join_next() => log_conn_end(done),
                () = table.room_maybe() => {}
                () = tokio::time::sleep_until(ripe) => {}
            }
            continue;
        }
        tokio::select! {
            biased;
            () = shutdown_asked(&mut stop) => break,
            Some(done) = conns.join_next() => log_conn_end(done),
            accepted = listener.accept() => match accepted {
                Ok((stream, _peer)) => {
                    let conn = table.open();
                    conns.spawn(serve_conn(stream, conn, http.clone(), service.clone(), limits, stop.clone()));
                }
                Err(e) if is_per_connection(&e) => {}
                Err(e) => {
                    // Out of file descriptors or similar: free one by closing the idlest
                    // connection, else back off instead of spinning.
                    let pause = if table.evict_idlest(Duration::ZERO) == Evict::Evicted {
                        tracing::debug!(target: "lockscope::exporter", "accept failed: {e}; closed the idlest connection");
                        Duration::from_millis(5)
                    } else {
                        tracing::warn!(target: "lockscope::exporter", "accept failed: {e}; retrying in 100 ms");
                        Duration::from_millis(100)
                    };
                    tokio::select! {
                        () = shutdown_asked(&mut stop) => break,
                        () = tokio::time::sleep(pause) => {}
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

/// Per-connection deadlines, copied into each connection task.
#[derive(Clone, Copy)]
struct ConnLimits {
    first_byte: Duration,
    write: Duration,
}

/// The router, marking its connection busy while it answers a request.
struct Tracked {
    inner: Service,
    conn: Arc<Conn>,
}

impl hyper::service::Service<hyper::Request<hyper::body::Incoming>> for Tracked {
    type Response =
        <Service as hyper::service::Service<hyper::Request<hyper::body::Incoming>>>::Response;
    type Error = <Service as hyper::service::Service<hyper::Request<hyper::body::Incoming>>>::Error;
    type Future = std::pin::Pin<
        Box<dyn std::future::Future<Output = Result<Self::Response, Self::Error>> + Send>,
    >;

    fn call(&self, req: hyper::Request<hyper::body::Incoming>) -> Self::Future {
        let busy = self.conn.busy();
        let answer = self.inner.call(req);
        Box::pin(async move {
            let r = answer.await;
            drop(busy);
            r
        })
    }
}

async fn serve_conn(
    stream: TcpStream,
    conn: Conn,
    http: http1::Builder,
    service: Service,
    limits: ConnLimits,
    mut stop: watch::Receiver<bool>,
) {
    // Wait for the first byte without hyper, so that a silent connection holds no buffer.
    // `peek` waits for a byte without consuming it (readiness alone can be spurious); an end
    // of stream or an error ends the connection here too.
    let mut first = [0u8; 1];
    let spoke = tokio::select! {
        r = tokio::time::timeout(limits.first_byte, stream.peek(&mut first)) => matches!(r, Ok(Ok(1))),
        () = conn.evicted() => false,
        () = shutdown_asked(&mut stop) => false,
    };
    if !spoke {
        // Reset rather than close: a connection that never spoke loses nothing, and the
        // server keeps no TIME_WAIT entry for it (a reconnecting flood would otherwise fill
        // the port space with them). A zero linger never blocks the drop.
        #[allow(deprecated)]
        let _ = stream.set_linger(Some(Duration::ZERO));
        return;
    }
    let _ = stream.set_nodelay(true);
    let conn = Arc::new(conn);
    let io = TokioIo::new(crate::stall::WriteStall::new(stream, limits.write));
    let served = http.serve_connection(
        io,
        Tracked {
            inner: service,
            conn: conn.clone(),
        },
    );
    let mut served = std::pin::pin!(served);
    let result = tokio::select! {
        r = served.as_mut() => r,
        () = async {
            tokio::select! {
                () = shutdown_asked(&mut stop) => {}
                () = conn.evicted() => {}
            }
        } => {
            // Idle: closes now; answering a request: closes once the response is written.
            served.as_mut().graceful_shutdown();
            served.await
        }
    };
    if let Err(e) = result {
        // Timeouts, oversized heads, garbage and resets are the client's business.
        tracing::debug!(target: "lockscope::exporter", "connection ended: {e}");
    }
}
