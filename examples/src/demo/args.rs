//! The demo's command line: four options, a usage text, and errors that say what was wrong.

use std::fmt;
use std::time::Duration;

use super::pathology::Pathology;

/// The usage text (`--help` prints it on stdout; a bad argument prints it on stderr).
pub const USAGE: &str = "\
usage: cargo run --example demo -- [OPTIONS]

A bank service on lockscope's locks, with a load generator. It starts healthy, then injects
one pathology at a time; the detector reports each in the log, on /debug/findings and in
lockscope_findings_total on /metrics.

options:
  --addr HOST:PORT      where the exporter serves /metrics and /debug/* (default 127.0.0.1:9464;
                        port 0 picks a free port, printed at start)
  --api-addr HOST:PORT  where the bank API listens (default 127.0.0.1:0: a free port, printed)
  --duration SECS       exit by itself after SECS seconds (default: run until Ctrl-C)
  --pathology NAME      what to inject after the healthy start (default: tour)
                          tour      every pathology below, one at a time
                          none      nothing: a healthy service only
                          nested-acquire, lock-order-inversion, deadlock, blocking-in-async,
                          stuck-queue, starvation, leaked-permit
  -h, --help            print this text

While it runs, POST http://API/pathology/NAME injects one more.";

/// What to inject after the healthy start.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Plan {
    /// Every pathology, one at a time, in [`Pathology::ALL`] order.
    Tour,
    /// Nothing: a healthy service.
    Healthy,
    /// One pathology.
    One(Pathology),
}

/// The parsed command line.
#[derive(Clone, Debug, PartialEq)]
pub struct Args {
    /// Exporter address (`--addr`).
    pub addr: String,
    /// Bank API address (`--api-addr`).
    pub api_addr: String,
    /// Run time before exiting by itself (`--duration`), if any.
    pub duration: Option<Duration>,
    /// What to inject (`--pathology`).
    pub plan: Plan,
}

/// What [`parse`] concluded instead of [`Args`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ParseError {
    /// `-h` / `--help`: print [`USAGE`] and exit 0.
    Help,
    /// A bad command line: print the message and [`USAGE`], exit 2.
    Usage(String),
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ParseError::Help => f.write_str("help requested"),
            ParseError::Usage(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for ParseError {}

fn usage(msg: String) -> ParseError {
    ParseError::Usage(msg)
}

/// `HOST:PORT` where PORT is a number and HOST is an IP literal (v6 in brackets) or a name.
fn check_addr(flag: &str, v: &str) -> Result<String, ParseError> {
    if v.parse::<std::net::SocketAddr>().is_ok() {
        return Ok(v.to_owned());
    }
    let ok = v.rsplit_once(':').is_some_and(|(host, port)| {
        !host.is_empty()
            && host
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'.')
            && port.parse::<u16>().is_ok()
    });
    if ok {
        Ok(v.to_owned())
    } else {
        Err(usage(format!(
            "invalid value {v:?} for {flag}: expected HOST:PORT, such as 127.0.0.1:9464"
        )))
    }
}

fn check_duration(v: &str) -> Result<Duration, ParseError> {
    match v.parse::<f64>() {
        Ok(s) if s.is_finite() && s > 0.0 && s <= 365.0 * 86_400.0 => {
            Ok(Duration::from_secs_f64(s))
        }
        _ => Err(usage(format!(
            "invalid value {v:?} for --duration: expected a positive number of seconds"
        ))),
    }
}

fn check_plan(v: &str) -> Result<Plan, ParseError> {
    match v {
        "tour" => Ok(Plan::Tour),
        "none" => Ok(Plan::Healthy),
        _ => Pathology::from_name(v).map(Plan::One).ok_or_else(|| {
            let names: Vec<&str> = Pathology::ALL.iter().map(|p| p.name()).collect();
            usage(format!(
                "unknown pathology {v:?}: expected tour, none, or one of {}",
                names.join(", ")
            ))
        }),
    }
}

/// Parses the arguments after the program name.
///
/// # Errors
///
/// [`ParseError::Help`] for `-h`/`--help`; [`ParseError::Usage`] naming the problem for an
/// unknown option, a missing or invalid value, or an option given twice.
///
/// ```
/// use lockscope_examples::demo::args::{parse, Plan};
///
/// let a = parse(["--addr", "127.0.0.1:0", "--duration", "5"].map(String::from)).unwrap();
/// assert_eq!(a.addr, "127.0.0.1:0");
/// assert_eq!(a.plan, Plan::Tour);
/// assert!(parse(["--duration", "soon"].map(String::from)).is_err());
/// ```
pub fn parse(args: impl IntoIterator<Item = String>) -> Result<Args, ParseError> {
    let mut addr = None;
    let mut api_addr = None;
    let mut duration = None;
    let mut plan = None;
    let mut it = args.into_iter();
    while let Some(arg) = it.next() {
        // `--flag=value` and `--flag value` both work.
        let (flag, inline) = match arg.split_once('=') {
            Some((f, v)) if f.starts_with("--") => (f.to_owned(), Some(v.to_owned())),
            _ => (arg.clone(), None),
        };
        if flag == "-h" || flag == "--help" {
            return Err(ParseError::Help);
        }
        if !matches!(
            flag.as_str(),
            "--addr" | "--api-addr" | "--duration" | "--pathology"
        ) {
            return Err(usage(format!("unknown argument {arg:?}")));
        }
        let value = match inline.or_else(|| it.next()) {
            Some(v) if !v.is_empty() => v,
            _ => return Err(usage(format!("{flag} needs a value"))),
        };
        let twice = || usage(format!("{flag} given twice"));
        match flag.as_str() {
            "--addr" if addr.is_some() => return Err(twice()),
            "--addr" => addr = Some(check_addr("--addr", &value)?),
            "--api-addr" if api_addr.is_some() => return Err(twice()),
            "--api-addr" => api_addr = Some(check_addr("--api-addr", &value)?),
            "--duration" if duration.is_some() => return Err(twice()),
            "--duration" => duration = Some(check_duration(&value)?),
            "--pathology" if plan.is_some() => return Err(twice()),
            _ => plan = Some(check_plan(&value)?),
        }
    }
    Ok(Args {
        addr: addr.unwrap_or_else(|| lockscope::exporter::DEFAULT_ADDR.to_owned()),
        api_addr: api_addr.unwrap_or_else(|| "127.0.0.1:0".to_owned()),
        duration,
        plan: plan.unwrap_or(Plan::Tour),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(args: &[&str]) -> Result<Args, ParseError> {
        parse(args.iter().map(|s| s.to_string()))
    }

    #[test]
    fn defaults_and_every_option() {
        let a = p(&[]).unwrap();
        assert_eq!(a.addr, "127.0.0.1:9464");
        assert_eq!(a.api_addr, "127.0.0.1:0");
        assert_eq!(a.duration, None);
        assert_eq!(a.plan, Plan::Tour);
        let a = p(&[
            "--addr=localhost:1",
            "--api-addr",
            "[::1]:0",
            "--duration",
            "2.5",
            "--pathology",
            "deadlock",
        ])
        .unwrap();
        assert_eq!(a.addr, "localhost:1");
        assert_eq!(a.api_addr, "[::1]:0");
        assert_eq!(a.duration, Some(Duration::from_millis(2500)));
        assert_eq!(a.plan, Plan::One(Pathology::Deadlock));
        assert_eq!(p(&["--pathology", "none"]).unwrap().plan, Plan::Healthy);
    }

    #[test]
    fn bad_arguments_say_what_is_wrong() {
        let msg = |args: &[&str]| match p(args) {
            Err(ParseError::Usage(m)) => m,
            other => panic!("{args:?}: {other:?}"),
        };
        assert_eq!(msg(&["--port", "1"]), "unknown argument \"--port\"");
        assert_eq!(msg(&["--addr"]), "--addr needs a value");
        assert!(msg(&["--addr", "9464"]).contains("expected HOST:PORT"));
        assert!(msg(&["--duration", "0"]).contains("positive number of seconds"));
        assert!(msg(&["--duration", "NaN"]).contains("positive number of seconds"));
        assert!(msg(&["--pathology", "gremlins"]).contains("unknown pathology \"gremlins\""));
        assert_eq!(
            msg(&["--duration", "1", "--duration", "2"]),
            "--duration given twice"
        );
        assert_eq!(p(&["-h"]), Err(ParseError::Help));
    }
}
