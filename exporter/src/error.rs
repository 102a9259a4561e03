//! The exporter's errors: small, opaque, with a kind to match on.

use std::fmt;
use std::io;

/// Why [`serve`](crate::serve) could not start the server.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// use lockscope_exporter::ServeErrorKind;
///
/// let err = lockscope_exporter::serve("not an address").await.unwrap_err();
/// assert_eq!(err.kind(), ServeErrorKind::InvalidAddress);
/// assert_eq!(
///     err.to_string(),
///     "invalid address \"not an address\": expected host:port, such as 127.0.0.1:9464"
/// );
/// # }
/// ```
#[derive(Debug)]
pub struct ServeError {
    kind: ServeErrorKind,
    addr: String,
    source: Option<io::Error>,
}

/// What kind of [`ServeError`] this is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ServeErrorKind {
    /// The address is not `host:port` (an IP literal or a name that resolves).
    InvalidAddress,
    /// Another socket is already listening on the address.
    AddressInUse,
    /// `serve` was not called from within a tokio runtime.
    NoRuntime,
    /// Binding the socket failed for another reason (see the error's `source`).
    Io,
}

impl ServeError {
    pub(crate) fn new(kind: ServeErrorKind, addr: &str, source: Option<io::Error>) -> ServeError {
        ServeError {
            kind,
            addr: addr.to_owned(),
            source,
        }
    }

    /// What went wrong.
    pub fn kind(&self) -> ServeErrorKind {
        self.kind
    }

    /// The address as it was given.
    pub fn address(&self) -> &str {
        &self.addr
    }
}

impl fmt::Display for ServeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let addr = &self.addr;
        match self.kind {
            ServeErrorKind::InvalidAddress => match &self.source {
                // Well formed, but the name did not resolve: say why.
                Some(e) => write!(f, "invalid address {addr:?}: cannot resolve it: {e}"),
                None => write!(
                    f,
                    "invalid address {addr:?}: expected host:port, such as 127.0.0.1:9464"
                ),
            },
            ServeErrorKind::AddressInUse => write!(f, "address {addr} is already in use"),
            ServeErrorKind::NoRuntime => {
                f.write_str("lockscope exporter must be started from within a tokio runtime")
            }
            ServeErrorKind::Io => match &self.source {
                Some(e) => write!(f, "cannot listen on {addr}: {e}"),
                None => write!(f, "cannot listen on {addr}"),
            },
        }
    }
}

impl std::error::Error for ServeError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.source
            .as_ref()
            .map(|e| e as &(dyn std::error::Error + 'static))
    }
}

/// Why [`init_tracing`](crate::init_tracing) installed nothing.
#[derive(Debug)]
pub struct TracingInitError {
    kind: TracingInitErrorKind,
    detail: String,
}

/// What kind of [`TracingInitError`] this is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum TracingInitErrorKind {
    /// A global tracing subscriber was already installed (by this or by other code).
    AlreadyInstalled,
    /// `RUST_LOG` holds a filter that does not parse.
    InvalidFilter,
}

impl TracingInitError {
    pub(crate) fn new(kind: TracingInitErrorKind, detail: String) -> TracingInitError {
        TracingInitError { kind, detail }
    }

    /// What went wrong.
    pub fn kind(&self) -> TracingInitErrorKind {
        self.kind
    }
}

impl fmt::Display for TracingInitError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.kind {
            TracingInitErrorKind::AlreadyInstalled => {
                f.write_str("a global tracing subscriber is already installed")
            }
            TracingInitErrorKind::InvalidFilter => {
                write!(f, "invalid RUST_LOG filter: {}", self.detail)
            }
        }
    }
}

impl std::error::Error for TracingInitError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_name_that_does_not_resolve_says_why() {
        let cause = io::Error::other("Name or service not known");
        let err = ServeError::new(
            ServeErrorKind::InvalidAddress,
            "nonexistent.invalid:80",
            Some(cause),
        );
        assert_eq!(
            err.to_string(),
            "invalid address \"nonexistent.invalid:80\": cannot resolve it: Name or service not known"
        );
        let malformed = ServeError::new(ServeErrorKind::InvalidAddress, "nonsense", None);
        assert_eq!(
            malformed.to_string(),
            "invalid address \"nonsense\": expected host:port, such as 127.0.0.1:9464"
        );
    }
}
