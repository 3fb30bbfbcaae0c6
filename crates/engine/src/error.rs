//! Why a run could not start or could not go on, as kinds with fields.
//!
//! The engine words each kind without naming any front end's options: `httpbench-load` says
//! "-n", a plan says `budget.requests`, and each front end words the remedy from the kind's
//! fields, after [`ErrorKind::fact`] (what is wrong) where it need not restate that in its own
//! terms. The `Display` (what a library caller shows as is) names the spec's own fields.

use std::net::IpAddr;
use std::path::PathBuf;

use serde::Serialize;

#[derive(Debug, Clone, PartialEq)]
pub struct Error {
    pub kind: ErrorKind,
}

/// Serialised as `{"kind": "too_few_requests", "requests": 5, "connections": 10}`, which is how
/// the Python module hands a kind and its fields over.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ErrorKind {
    /// A field of the spec out of its range; `field` is its name in the spec, `problem` the
    /// whole sentence (which names the field too).
    InvalidSpec {
        field: &'static str,
        problem: String,
    },
    InvalidUrl {
        url: String,
        problem: String,
    },
    /// A count budget smaller than the connections: some would send nothing.
    TooFewRequests {
        requests: u64,
        connections: u32,
    },
    /// More threads than connections: some would have nothing to do.
    IdleThreads {
        threads: u32,
        connections: u32,
    },
    /// Pipelining on connections that close after each request.
    PipelineWithoutKeepAlive {
        pipeline: u32,
    },
    /// Concurrent streams on connections that do not speak HTTP/2.
    StreamsWithoutHttp2 {
        streams: u32,
    },
    /// A setting HTTP/2 has no room for (`field`: `pipeline` above 1, or `http10`) beside `http2`.
    NotWithHttp2 {
        field: &'static str,
    },
    /// The open-file limit allows fewer connections than asked.
    OpenFiles(OpenFiles),
    Unresolved {
        host: String,
        problem: String,
    },
    /// The validation request found no server to connect to: nothing to measure, whatever
    /// `allow_errors` says.
    Unreachable {
        addr: String,
        problem: String,
    },
    /// The validation request's answer was wrong (`status` 0: there was no complete answer), and
    /// the spec does not allow errors.
    ValidationFailed {
        status: u16,
        problem: String,
    },
    /// io_uring was asked for but the kernel (or a seccomp policy) refuses it.
    IoUringUnavailable {
        problem: String,
    },
    /// A CPU to pin to that this process may not run on; `allowed` are those it may.
    CpuNotAllowed {
        cpu: usize,
        allowed: Vec<usize>,
    },
    /// A source address this host does not have.
    SourceAddress {
        address: IpAddr,
        problem: String,
    },
    ExpectedBody {
        path: PathBuf,
        problem: String,
    },
    /// An expected body without the validation request, the only response it is compared with.
    ExpectedBodyUnchecked,
    /// A TLS setting (`field`, e.g. `tls.cacert`) for a run whose URLs are http://.
    TlsWithoutHttps {
        field: &'static str,
    },
    /// The CA file cannot be read, or holds no PEM certificate.
    CaCert {
        path: PathBuf,
        problem: String,
    },
    /// A cipher suite or key-exchange group (`field`: `tls.ciphers`, `tls.groups`) this client
    /// does not know; `known` are those it does.
    UnknownTlsName {
        field: &'static str,
        name: String,
        known: Vec<String>,
    },
    /// A TLS setting that cannot be: `field` is the one to change.
    TlsSettings {
        field: &'static str,
        problem: String,
    },
    /// The validation request's TLS handshake failed on the server's certificate; `reason` is
    /// short ("unknown CA", "name mismatch", "expired"), `problem` the whole story.
    TlsCertificate {
        reason: String,
        host: String,
        problem: String,
    },
    /// The validation request's TLS handshake failed otherwise: nothing to measure. `refused`:
    /// the server answered with an alert (it speaks TLS, but not what was offered).
    TlsHandshake {
        addr: String,
        refused: bool,
        problem: String,
    },
    /// HTTP/2 was asked for over TLS and the server did not select `h2` by ALPN: it selected
    /// `selected`, or nothing (it ignored ALPN, or refused every protocol offered).
    Http2NotSelected {
        selected: Option<String>,
    },
    /// An engine thread panicked: a bug, reported instead of taking its caller down where
    /// panics unwind (the Python module).
    Panicked {
        problem: String,
    },
}

/// `connections` need about `need` descriptors; this process may have `limit` (its soft limit,
/// already raised to the hard one), which leaves room for `most` connections.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct OpenFiles {
    pub connections: u32,
    pub need: u64,
    pub limit: u64,
    pub hard_limit: u64,
    pub most: u64,
}

impl Error {
    /// A caught panic's `payload` as an error (where panics unwind; elsewhere the process ends).
    pub fn panicked(payload: &(dyn std::any::Any + Send)) -> Error {
        let what = payload
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "no message".into());
        ErrorKind::Panicked {
            problem: format!(
                "the engine panicked ({what}); this is a bug in httpbench, please report it"
            ),
        }
        .into()
    }

    /// The spec's `field` is out of its range, as `problem` says.
    pub(crate) fn spec(field: &'static str, problem: String) -> Error {
        ErrorKind::InvalidSpec { field, problem }.into()
    }
}

impl From<ErrorKind> for Error {
    fn from(kind: ErrorKind) -> Error {
        Error { kind }
    }
}

impl From<OpenFiles> for Error {
    fn from(o: OpenFiles) -> Error {
        ErrorKind::OpenFiles(o).into()
    }
}

/// `0-3,6` for [0, 1, 2, 3, 6].
pub fn cpu_list(cpus: &[usize]) -> String {
    let mut runs: Vec<(usize, usize)> = Vec::new();
    for &cpu in cpus {
        match runs.last_mut() {
            Some((_, last)) if *last + 1 == cpu => *last = cpu,
            _ => runs.push((cpu, cpu)),
        }
    }
    let shown: Vec<String> = runs
        .iter()
        .map(|&(a, b)| {
            if a == b {
                a.to_string()
            } else {
                format!("{a}-{b}")
            }
        })
        .collect();
    shown.join(",")
}

impl ErrorKind {
    /// What is wrong, without what to do about it: `Display` adds the remedy in the spec's
    /// fields, and each front end its own, in its flags or keys.
    pub fn fact(&self) -> String {
        match self {
            ErrorKind::InvalidSpec { problem, .. }
            | ErrorKind::ValidationFailed { problem, .. }
            | ErrorKind::Panicked { problem } => problem.clone(),
            ErrorKind::InvalidUrl { url, problem } => format!("invalid URL {url:?}: {problem}"),
            ErrorKind::TooFewRequests { requests, connections } => format!(
                "{requests} requests are fewer than the {connections} connections: some connections would send nothing"
            ),
            ErrorKind::IdleThreads { threads, connections } => {
                format!("{threads} threads for {connections} connections leaves threads idle")
            }
            ErrorKind::PipelineWithoutKeepAlive { pipeline } => {
                format!("a pipeline of {pipeline} needs keep-alive")
            }
            ErrorKind::StreamsWithoutHttp2 { streams } => {
                format!("{streams} concurrent streams per connection need HTTP/2 (http2)")
            }
            ErrorKind::NotWithHttp2 { field: "pipeline" } => {
                "HTTP/2 (http2) multiplexes streams instead of pipelining requests".into()
            }
            ErrorKind::NotWithHttp2 { field: "http10" } => {
                "HTTP/1.0 requests (http10) cannot go over HTTP/2 (http2)".into()
            }
            ErrorKind::NotWithHttp2 { field } => format!("{field} cannot go with HTTP/2 (http2)"),
            ErrorKind::OpenFiles(o) => format!(
                "{} connections need about {} open files but this process may have {} (hard limit {}, which ulimit -Hn or LimitNOFILE= raise)",
                o.connections, o.need, o.limit, o.hard_limit
            ),
            ErrorKind::Unresolved { host, problem } => format!("cannot resolve host {host:?}: {problem}"),
            ErrorKind::Unreachable { addr, problem } => format!("cannot connect to {addr} ({problem})"),
            ErrorKind::IoUringUnavailable { problem } => format!("io_uring is not usable here ({problem})"),
            ErrorKind::CpuNotAllowed { cpu, .. } => format!("CPU {cpu} is not one this process may run on"),
            ErrorKind::SourceAddress { address, problem } => {
                format!("cannot use {address} as a source address ({problem})")
            }
            ErrorKind::ExpectedBody { path, problem } => {
                format!("cannot read the expected body {}: {problem}", path.display())
            }
            ErrorKind::ExpectedBodyUnchecked => {
                "an expected body is compared with the validation request's answer only, and validate is off".into()
            }
            ErrorKind::TlsWithoutHttps { field } => format!("{field} is set but the URLs are http://, which speaks no TLS"),
            ErrorKind::CaCert { path, problem } => format!("cannot use {} as CA certificates: {problem}", path.display()),
            ErrorKind::UnknownTlsName { field, name, known } => {
                format!("{field}: {name:?} is not one this client offers (it knows {})", known.join(", "))
            }
            ErrorKind::TlsSettings { problem, .. } | ErrorKind::TlsHandshake { problem, .. } => problem.clone(),
            ErrorKind::TlsCertificate { reason, host, .. } => {
                format!("the server's certificate is not trusted for {host} ({reason})")
            }
            ErrorKind::Http2NotSelected { selected } => format!(
                "the server did not agree to HTTP/2 over ALPN (it selected {})",
                selected.as_deref().unwrap_or("no protocol")
            ),
        }
    }
}

impl std::fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let remedy = match self {
            ErrorKind::InvalidSpec { .. }
            | ErrorKind::Panicked { .. }
            | ErrorKind::InvalidUrl { .. }
            | ErrorKind::ExpectedBody { .. } => return f.write_str(&self.fact()),
            ErrorKind::TooFewRequests { connections, .. } => {
                format!("ask for at least {connections} requests or fewer connections")
            }
            ErrorKind::IdleThreads { connections, .. } => format!("use {connections} threads or fewer"),
            ErrorKind::PipelineWithoutKeepAlive { .. } => {
                "pipeline 1 request, or keep connections alive".into()
            }
            ErrorKind::StreamsWithoutHttp2 { .. } => "set http2, or streams 1".into(),
            ErrorKind::NotWithHttp2 { field: "pipeline" } => {
                "set pipeline 1 and streams to the requests each connection should carry at once".into()
            }
            ErrorKind::NotWithHttp2 { field } => format!("drop {field} or http2"),
            ErrorKind::OpenFiles(o) => format!("use at most {} connections or raise the hard limit", o.most),
            ErrorKind::Unresolved { .. } => "check the URL".into(),
            ErrorKind::Unreachable { .. } => "is the server running and listening there?".into(),
            ErrorKind::ValidationFailed { .. } => "allow errors to load it anyway".into(),
            ErrorKind::IoUringUnavailable { .. } => "use epoll, or auto to fall back to it".into(),
            ErrorKind::CpuNotAllowed { allowed, .. } => {
                format!("pin the engine to CPUs among {}", cpu_list(allowed))
            }
            ErrorKind::SourceAddress { .. } => "give addresses this host has (ip address lists them; a server on loopback accepts all of 127.0.0.0/8)".into(),
            ErrorKind::ExpectedBodyUnchecked => "validate, or drop the expected body".into(),
            ErrorKind::TlsWithoutHttps { .. } => "use an https:// URL, or drop the TLS settings".into(),
            ErrorKind::CaCert { .. } => "give a readable PEM file of the CA that signed the server's certificate".into(),
            ErrorKind::UnknownTlsName { .. } => "choose among those".into(),
            ErrorKind::TlsSettings { field, .. } => format!("change {field}"),
            ErrorKind::TlsCertificate { .. } => {
                "set tls.cacert to the CA that signed it, or tls.insecure".into()
            }
            ErrorKind::TlsHandshake { refused: true, .. } => {
                "offer the server other TLS versions, ciphers or groups".into()
            }
            ErrorKind::TlsHandshake { .. } => "does the server speak TLS there?".into(),
            ErrorKind::Http2NotSelected { .. } => "drop http2, or enable h2 on the server".into(),
        };
        write!(f, "{}; {remedy}", self.fact())
    }
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.kind.fmt(f)
    }
}

impl std::error::Error for Error {}
