//! What to run: the engine's whole input, as the CLI and the Python suite describe it.
//!
//! A `LoadSpec` is plain data (serde, so Python can hand it over as JSON). [`LoadSpec::resolve`]
//! checks it and turns it into a [`Resolved`] run: parsed URLs, a resolved address, and every
//! refusal phrased as one line that says what is wrong and what to do.

use std::net::{IpAddr, SocketAddr, ToSocketAddrs};
use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::{Error, ErrorKind};

mod hostile;
mod mix;

pub use hostile::{IdleSettings, IdleSpec, SlowMode, SlowSettings, SlowSpec};

/// When the run ends.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Stop {
    /// After exactly this many requests have been sent (ab's and weighttp's `-n`).
    Requests(u64),
    /// After this many seconds of measurement (wrk's `-d`); requests still in flight then are
    /// reported as such.
    Duration(f64),
}

/// How an open loop spaces its requests.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Arrivals {
    /// Evenly, as wrk2 and oha do.
    #[default]
    Even,
    /// At exponential gaps of the same mean: independent users arriving at random, in bursts
    /// and lulls an even schedule never makes.
    Poisson,
}

/// In which order the requests ask for the URLs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Order {
    /// Drawn by `weights` (round robin without them).
    #[default]
    Weighted,
    /// The URLs of `sequence` in its order, looping: an access log's requests one after another.
    Replay,
    /// `sequence` at its `offsets` divided by `speed`, looping: an access log's requests at their
    /// own times, an open loop whose pace is the log's.
    Timed,
}

/// A TLS protocol version the client may negotiate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum TlsVersion {
    #[serde(rename = "1.2")]
    Tls12,
    #[serde(rename = "1.3")]
    Tls13,
}

impl TlsVersion {
    pub fn name(self) -> &'static str {
        match self {
            TlsVersion::Tls12 => "1.2",
            TlsVersion::Tls13 => "1.3",
        }
    }
}

/// Whether handshakes after a connection's first resume an earlier session.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Resumption {
    /// Every handshake is full.
    None,
    /// TLS 1.3 PSK tickets, or TLS 1.2 session tickets (RFC 5077) where the server issues them
    /// and session IDs where it does not.
    #[default]
    Tickets,
    /// TLS 1.2 session IDs only (TLS 1.3 resumes with tickets only).
    Ids,
}

/// How an https:// run speaks TLS; every field at its default leaves the choice to rustls and
/// the server. Set on an http:// run, any of them is refused.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct TlsSpec {
    /// The one version to offer; `None`: 1.3 and 1.2, the server choosing.
    pub version: Option<TlsVersion>,
    /// Cipher suites to offer, in order of preference, by IANA or rustls name
    /// (TLS_AES_128_GCM_SHA256, TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256); empty: rustls' list.
    pub ciphers: Vec<String>,
    /// Key-exchange groups to offer, in order (X25519, secp256r1, secp384r1); empty: rustls'.
    pub groups: Vec<String>,
    /// Verify the server's certificate against the CA certificates in this PEM file instead of
    /// the system's.
    pub cacert: Option<std::path::PathBuf>,
    /// Verify no certificate (the handshake's own signature is still checked), as wrk and h2load
    /// do; the report says so.
    pub insecure: bool,
    pub resumption: Resumption,
}

impl TlsSpec {
    /// The fields set away from their defaults, by their names in the spec.
    pub fn fields_set(&self) -> Vec<&'static str> {
        let d = TlsSpec::default();
        [
            ("tls.version", self.version != d.version),
            ("tls.ciphers", self.ciphers != d.ciphers),
            ("tls.groups", self.groups != d.groups),
            ("tls.cacert", self.cacert != d.cacert),
            ("tls.insecure", self.insecure != d.insecure),
            ("tls.resumption", self.resumption != d.resumption),
        ]
        .into_iter()
        .filter_map(|(name, set)| set.then_some(name))
        .collect()
    }
}

/// Which I/O interface the engine threads use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum IoChoice {
    /// io_uring when the kernel allows it, epoll otherwise.
    #[default]
    Auto,
    IoUring,
    Epoll,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct LoadSpec {
    /// Requested round robin, or drawn by `weights`; all must share one scheme, host and port.
    pub urls: Vec<String>,
    /// One weight per URL (not negative, not all 0): each request's URL is drawn with
    /// probability weight / sum, from a generator seeded by `seed`. `None`: round robin.
    pub weights: Option<Vec<f64>>,
    /// How requests choose their URLs: by `weights`, or by `sequence` (in order, or at its times).
    pub order: Order,
    /// Indexes into `urls`, in the order an access log asked for them: what `order` "replay"
    /// and "timed" send, looping.
    pub sequence: Option<Vec<u32>>,
    /// Seconds from the log's first request to each of `sequence`'s, ascending: when "timed"
    /// sends them.
    pub offsets: Option<Vec<f64>>,
    /// How many times faster than the log "timed" sends (2: in half its time).
    pub speed: f64,
    /// Draws the run's random choices, the weighted URLs and Poisson gaps: a run's sequence of
    /// URLs on each connection, and each thread's arrivals, are the same in every run with the
    /// same seed.
    pub seed: u64,
    pub method: String,
    /// Extra or replacing request headers, as `Name: value`.
    pub headers: Vec<String>,
    pub body: Option<String>,
    pub connections: u32,
    pub threads: u32,
    /// Requests outstanding per connection.
    pub pipeline: u32,
    pub stop: Stop,
    /// Open loop: requests per second in total, each latency taken from when the request was
    /// meant to be sent. `None`: closed loop.
    pub rate: Option<f64>,
    /// How the open loop spaces its requests (a closed loop ignores it).
    pub arrivals: Arrivals,
    /// Off: a new TCP connection per request, closed by the client as ab without `-k` does.
    pub keep_alive: bool,
    /// Reconnect after this many requests on one connection.
    pub requests_per_connection: Option<u64>,
    pub http10: bool,
    /// Speak HTTP/2: by ALPN over https:// (only `h2` is offered), by prior knowledge (h2c) over
    /// http://.
    pub http2: bool,
    /// Concurrent streams per HTTP/2 connection (h2load's `-m`); more than 1 needs `http2`.
    pub streams: u32,
    /// Seconds of load before measurement starts, excluded from every figure.
    pub warmup: f64,
    /// After a timed run's end, wait for the answers still on their way (at most the request
    /// timeout) before closing, counting of them only how long they took (`latency.in_flight`):
    /// the server is idle when the run returns, so a queue it built does not spill into the next
    /// run (the capacity search's probes).
    pub drain: bool,
    /// Measurement starts once every connection has answered a request (its connect and TLS
    /// handshake done, and an open loop's connections sending their first request at once), and
    /// `warmup` has passed; at the latest after 2 s, or `warmup` if longer. The same moment for
    /// every thread; duration budgets count from it.
    pub warmup_connections: bool,
    pub connect_timeout: f64,
    pub request_timeout: f64,
    /// CPUs to pin the engine threads to, round robin; empty: no pinning.
    pub cpus: Vec<usize>,
    /// Source addresses to spread connections over (weighttp's `-B`); empty: the kernel's choice.
    pub bind: Vec<IpAddr>,
    pub io: IoChoice,
    /// Send one request before the load and check its answer (status, expected body and
    /// length). Off: the server sees exactly the load's requests, and a wrong URL or answer is
    /// measured instead of refused (under load only `expect_length` is checked).
    pub validate: bool,
    /// A file holding the body the validation request must return, byte for byte.
    pub expect_body_file: Option<std::path::PathBuf>,
    /// Body length the validation request, and every response under load, must have.
    pub expect_length: Option<u64>,
    /// One body length per URL, checked on every answer to that URL as `expect_length` is (which
    /// it replaces).
    pub expect_lengths: Option<Vec<u64>>,
    /// One content coding per URL (`identity`, `gzip`, `br`, ...): every answer to that URL must
    /// come in it (its `Content-Encoding`), else it fails as a length mismatch does; the lengths
    /// above are then the coded bodies' (what the server sends for the `Accept-Encoding` the
    /// headers ask). None: any coding.
    pub expect_encodings: Option<Vec<String>>,
    /// One body length per URL once decoded (its file's), parallel to `urls`: what the report's
    /// `encodings` count as each coding's decoded bytes. None: an identity answer's own length,
    /// a coded answer's unknown.
    pub decoded_lengths: Option<Vec<u64>>,
    /// Each URL without an expected length (`expect_lengths`, `expect_length`) must answer, every
    /// time, the length of its first answer that succeeded (whichever thread had it).
    pub learn_lengths: bool,
    /// Upper bounds in bytes (ascending, at most 7) of the size classes the report counts
    /// completed answers in, by body length: `[1024, 10240]` gives 0-1024, 1025-10240 and
    /// above. Empty: no classes.
    pub size_classes: Vec<u64>,
    /// The statuses an answer must have to count as succeeded (`requests.succeeded`), the
    /// validation request's too; empty: any 2xx.
    pub expect_status: Vec<u16>,
    /// Load even when the validation request fails.
    pub allow_errors: bool,
    /// TLS settings of an https:// run.
    pub tls: TlsSpec,
    /// Keep-alive connections held idle beside the load (none by default).
    pub idle: IdleSpec,
    /// Slow clients beside the load (none by default).
    pub slow: SlowSpec,
    /// Retry once, on a new connection, each request a reused keep-alive connection lost
    /// before any byte of its answer (error class `retryable`), as RFC 9110 9.2.2 lets a client
    /// retry an idempotent request: counted in `requests.retried`, timed from its first attempt.
    pub retry_idempotent: bool,
    /// Never end the run early for a server that stopped answering or refuses connects: count
    /// them (`connect_refused`, `timeout`) until the stop condition, as for a server restarted
    /// on purpose under load.
    pub keep_going: bool,
    /// The fine series (the report's `ticks`): points of this many milliseconds, 10 to 1000;
    /// None: no fine series.
    pub tick_ms: Option<u32>,
    /// Panic there: a bug on demand, for tests that a front end survives one. No front end sets
    /// it, and a report leaves it out.
    #[doc(hidden)]
    #[serde(rename = "_panic", skip_serializing_if = "Option::is_none")]
    #[schemars(skip)]
    pub panic: Option<PanicAt>,
}

impl LoadSpec {
    /// Whether an answer with `status` succeeded: one of `expect_status`, or any 2xx when it
    /// names none.
    #[inline]
    pub fn expects(&self, status: u16) -> bool {
        expects(&self.expect_status, status)
    }
}

/// Whether `status` is one of `expected`, or any 2xx when `expected` is empty.
#[inline]
pub fn expects(expected: &[u16], status: u16) -> bool {
    if expected.is_empty() {
        (200..300).contains(&status)
    } else {
        expected.contains(&status)
    }
}

/// Where a deliberate panic happens: the thread that runs the load, or an engine thread.
#[doc(hidden)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PanicAt {
    Run,
    Worker,
}

/// The seed of a weighted mix when a spec does not say.
pub const DEFAULT_SEED: u64 = 0x6874_7470_6265_6e63;

/// At most this many size classes: bounds, and the class above the last.
pub const MOST_SIZE_CLASSES: usize = 8;

/// Connections when a spec does not say: the CLI's `-c` default too.
pub const DEFAULT_CONNECTIONS: u32 = 10;

impl Default for LoadSpec {
    fn default() -> Self {
        LoadSpec {
            urls: Vec::new(),
            weights: None,
            order: Order::Weighted,
            sequence: None,
            offsets: None,
            speed: 1.0,
            seed: DEFAULT_SEED,
            method: "GET".into(),
            headers: Vec::new(),
            body: None,
            connections: DEFAULT_CONNECTIONS,
            threads: 1,
            pipeline: 1,
            stop: Stop::Duration(10.0),
            rate: None,
            arrivals: Arrivals::Even,
            keep_alive: true,
            requests_per_connection: None,
            http10: false,
            http2: false,
            streams: 1,
            warmup: 0.0,
            drain: false,
            warmup_connections: false,
            connect_timeout: 5.0,
            request_timeout: 10.0,
            cpus: Vec::new(),
            bind: Vec::new(),
            io: IoChoice::Auto,
            validate: true,
            expect_body_file: None,
            expect_length: None,
            expect_lengths: None,
            expect_encodings: None,
            decoded_lengths: None,
            learn_lengths: false,
            size_classes: Vec::new(),
            expect_status: Vec::new(),
            allow_errors: false,
            tls: TlsSpec::default(),
            idle: IdleSpec::default(),
            slow: SlowSpec::default(),
            retry_idempotent: false,
            keep_going: false,
            tick_ms: None,
            panic: None,
        }
    }
}

/// One URL, split into what the engine needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// https://: the connection speaks TLS.
    pub tls: bool,
    /// `host` or `host:port` as the Host header carries it.
    pub authority: String,
    pub host: String,
    pub port: u16,
    /// Path and query, at least `/`.
    pub path: String,
}

impl Target {
    pub fn parse(url: &str) -> Result<Target, Error> {
        let fail = |why: &str| {
            Err(Error::from(ErrorKind::InvalidUrl {
                url: url.to_string(),
                problem: why.to_string(),
            }))
        };
        let Some((scheme, rest)) = url.split_once("://") else {
            return fail("it has no scheme; write it as http://HOST[:PORT]/PATH or https://...");
        };
        let tls = match scheme.to_ascii_lowercase().as_str() {
            "http" => false,
            "https" => true,
            other => {
                return fail(&format!(
                    "scheme {other:?} is not supported; use http:// or https://"
                ))
            }
        };
        let (authority, path) = match rest.find(['/', '?']) {
            Some(i) if rest.as_bytes()[i] == b'/' => (&rest[..i], &rest[i..]),
            Some(i) => (&rest[..i], &rest[i..]),
            None => (rest, "/"),
        };
        let path = if path.starts_with('?') {
            format!("/{path}")
        } else {
            path.to_string()
        };
        if path.contains('#') {
            return fail("a fragment (#...) is never sent to a server; remove it");
        }
        if path.bytes().any(|b| b <= b' ' || b == 0x7f) {
            return fail("the path has spaces or control characters; percent-encode them");
        }
        if authority.contains('@') {
            return fail(
                "user:password@ is not supported; send credentials in an Authorization header",
            );
        }
        let (host, port) = if let Some(v6) = authority.strip_prefix('[') {
            let Some((h, after)) = v6.split_once(']') else {
                return fail("an IPv6 address must be closed with ']'");
            };
            (h.to_string(), after.strip_prefix(':'))
        } else {
            match authority.rsplit_once(':') {
                Some((h, p)) => (h.to_string(), Some(p)),
                None => (authority.to_string(), None),
            }
        };
        if host.is_empty() {
            return fail("it has no host");
        }
        let port = match port {
            None if tls => 443,
            None => 80,
            Some(p) => match p.parse::<u16>() {
                Ok(p) if p > 0 => p,
                _ => return fail(&format!("port {p:?} is not a number from 1 to 65535")),
            },
        };
        Ok(Target {
            tls,
            authority: authority.to_string(),
            host,
            port,
            path,
        })
    }
}

/// A checked spec, ready to run.
#[derive(Debug, Clone)]
pub struct Resolved {
    pub targets: Vec<Target>,
    pub addr: SocketAddr,
    pub connections: u32,
    pub threads: u32,
    pub pipeline: u32,
    pub stop: Stop,
    pub rate: Option<f64>,
    pub arrivals: Arrivals,
    pub seed: u64,
    pub keep_alive: bool,
    pub requests_per_connection: Option<u64>,
    pub http2: bool,
    /// Concurrent streams per connection: 1 unless `http2`.
    pub streams: u32,
    pub warmup: Duration,
    pub drain: bool,
    pub warmup_connections: bool,
    pub connect_timeout: Duration,
    pub request_timeout: Duration,
    /// Idle connections beside the load, if any.
    pub idle: Option<IdleSettings>,
    /// Slow clients beside the load, if any: then the run is never ended early for a server
    /// that stopped answering the load.
    pub slow: Option<SlowSettings>,
    pub retry_idempotent: bool,
    pub keep_going: bool,
    /// The fine series' point, in ns.
    pub tick: Option<u64>,
}

/// The fine series' points may last from this many milliseconds ...
pub const TICK_MS_LEAST: u32 = 10;
/// ... to this many.
pub const TICK_MS_MOST: u32 = 1000;

fn seconds(field: &'static str, v: f64, allow_zero: bool) -> Result<Duration, Error> {
    if !v.is_finite() || v < 0.0 || (!allow_zero && v == 0.0) || v > 1e7 {
        let least = if allow_zero {
            "0 or more"
        } else {
            "more than 0"
        };
        return Err(Error::spec(
            field,
            format!("{field} must be {least} seconds, got {v}"),
        ));
    }
    Ok(Duration::from_secs_f64(v))
}

impl LoadSpec {
    pub fn resolve(&self) -> Result<Resolved, Error> {
        if self.urls.is_empty() {
            return Err(Error::spec(
                "urls",
                "no URL given; name one, e.g. http://127.0.0.1:8080/".into(),
            ));
        }
        let targets = self
            .urls
            .iter()
            .map(|u| Target::parse(u))
            .collect::<Result<Vec<_>, _>>()?;
        let first = &targets[0];
        if let Some(t) = targets
            .iter()
            .find(|t| (&t.host, t.port, t.tls) != (&first.host, first.port, first.tls))
        {
            return Err(Error::spec(
                "urls",
                format!(
                "all URLs must share one scheme, host and port ({}:{} and {}:{}); run one load per host",
                first.host, first.port, t.host, t.port
            ),
            ));
        }
        if !first.tls {
            if let Some(&field) = self.tls.fields_set().first() {
                return Err(ErrorKind::TlsWithoutHttps { field }.into());
            }
        }
        let count = |field: &'static str, v: u32| {
            if v == 0 {
                Err(Error::spec(field, format!("{field} must be at least 1")))
            } else {
                Ok(v)
            }
        };
        let connections = count("connections", self.connections)?;
        let threads = count("threads", self.threads)?;
        let pipeline = count("pipeline", self.pipeline)?;
        let streams = count("streams", self.streams)?;
        if threads > connections {
            return Err(ErrorKind::IdleThreads {
                threads,
                connections,
            }
            .into());
        }
        if pipeline > 1024 {
            return Err(Error::spec(
                "pipeline",
                "pipeline must be 1024 or less".into(),
            ));
        }
        match self.stop {
            Stop::Requests(0) => {
                return Err(Error::spec(
                    "requests",
                    "requests must be at least 1".into(),
                ))
            }
            Stop::Requests(requests) if requests < connections as u64 => {
                return Err(ErrorKind::TooFewRequests {
                    requests,
                    connections,
                }
                .into())
            }
            Stop::Requests(_) => {}
            Stop::Duration(d) => {
                seconds("duration", d, false)?;
            }
        }
        if let Some(r) = self.rate {
            if !r.is_finite() || r <= 0.0 {
                return Err(Error::spec(
                    "rate",
                    format!("rate must be more than 0 requests/s, got {r}"),
                ));
            }
        }
        if self.requests_per_connection == Some(0) {
            return Err(Error::spec(
                "requests_per_connection",
                "requests_per_connection must be at least 1".into(),
            ));
        }
        if let Some(s) = self.expect_status.iter().find(|s| !(100..600).contains(*s)) {
            return Err(Error::spec(
                "expect_status",
                format!("expected status {s} is no HTTP status; give codes from 100 to 599, e.g. 200,304"),
            ));
        }
        if !self.validate && self.expect_body_file.is_some() {
            return Err(ErrorKind::ExpectedBodyUnchecked.into());
        }
        if !self.keep_alive && pipeline > 1 {
            return Err(ErrorKind::PipelineWithoutKeepAlive { pipeline }.into());
        }
        if !self.http2 && streams > 1 {
            return Err(ErrorKind::StreamsWithoutHttp2 { streams }.into());
        }
        if self.http2 && pipeline > 1 {
            return Err(ErrorKind::NotWithHttp2 { field: "pipeline" }.into());
        }
        if self.http2 && self.http10 {
            return Err(ErrorKind::NotWithHttp2 { field: "http10" }.into());
        }
        if !self
            .method
            .bytes()
            .all(|b| b.is_ascii_alphabetic() || b == b'-')
            || self.method.is_empty()
        {
            return Err(Error::spec(
                "method",
                format!("method {:?} is not a valid HTTP method", self.method),
            ));
        }
        for h in &self.headers {
            match h.split_once(':') {
                Some((name, value))
                    if !name.trim().is_empty()
                        && name.bytes().all(|b| b.is_ascii_graphic())
                        && !value.contains(['\r', '\n']) => {}
                _ => {
                    return Err(Error::spec(
                        "headers",
                        format!("header {h:?} is not of the form 'Name: value'"),
                    ))
                }
            }
        }
        if let Some(ms) = self
            .tick_ms
            .filter(|ms| !(TICK_MS_LEAST..=TICK_MS_MOST).contains(ms))
        {
            return Err(Error::spec(
                "tick_ms",
                format!("tick_ms must be from {TICK_MS_LEAST} to {TICK_MS_MOST} ms, got {ms}"),
            ));
        }
        self.check_mix()?;
        let (idle, slow) = self.check_hostile(&first.path)?;
        let addr = resolve_addr(first)?;
        if let Some(b) = self.bind.iter().find(|b| b.is_ipv4() != addr.is_ipv4()) {
            return Err(Error::spec(
                "bind",
                format!("source address {b} is not of the same family as {addr}"),
            ));
        }
        Ok(Resolved {
            targets,
            addr,
            connections,
            threads,
            pipeline,
            stop: self.stop,
            rate: self.rate,
            arrivals: self.arrivals,
            seed: self.seed,
            keep_alive: self.keep_alive,
            requests_per_connection: if self.keep_alive {
                self.requests_per_connection
            } else {
                Some(1)
            },
            http2: self.http2,
            streams,
            warmup: seconds("warmup", self.warmup, true)?,
            drain: self.drain,
            warmup_connections: self.warmup_connections,
            connect_timeout: seconds("connect_timeout", self.connect_timeout, false)?,
            request_timeout: seconds("request_timeout", self.request_timeout, false)?,
            idle,
            slow,
            retry_idempotent: self.retry_idempotent,
            keep_going: self.keep_going,
            tick: self.tick_ms.map(|ms| u64::from(ms) * 1_000_000),
        })
    }
}

fn resolve_addr(t: &Target) -> Result<SocketAddr, Error> {
    let unresolved = |problem: String| {
        Error::from(ErrorKind::Unresolved {
            host: t.host.clone(),
            problem,
        })
    };
    let mut addrs = (t.host.as_str(), t.port)
        .to_socket_addrs()
        .map_err(|e| unresolved(e.to_string()))?;
    addrs.next().ok_or_else(|| unresolved("no address".into()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_urls() {
        let t = Target::parse("http://127.0.0.1:8080/a/b?c=d").unwrap();
        assert_eq!(
            (t.host.as_str(), t.port, t.path.as_str()),
            ("127.0.0.1", 8080, "/a/b?c=d")
        );
        assert_eq!(t.authority, "127.0.0.1:8080");
        let t = Target::parse("http://[::1]/").unwrap();
        assert_eq!((t.host.as_str(), t.port), ("::1", 80));
        assert_eq!(Target::parse("http://localhost?x=1").unwrap().path, "/?x=1");
        let t = Target::parse("HTTPS://localhost/").unwrap();
        assert!(t.tls && t.port == 443);
        for bad in [
            "127.0.0.1:80/",
            "ftp://x/",
            "http://:80/",
            "http://x:0/",
            "http://x:99999/",
            "http://x/ a",
            "http://[::1/",
        ] {
            assert!(Target::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn refuses_bad_counts() {
        let spec = |f: &dyn Fn(&mut LoadSpec)| {
            let mut s = LoadSpec {
                urls: vec!["http://127.0.0.1:1/".into()],
                ..Default::default()
            };
            f(&mut s);
            s.resolve().map(|_| ()).map_err(|e| e.to_string())
        };
        assert!(spec(&|_| {}).is_ok());
        assert!(spec(&|s| s.connections = 0)
            .unwrap_err()
            .contains("connections"));
        assert!(spec(&|s| s.stop = Stop::Requests(5))
            .unwrap_err()
            .contains("fewer than the 10 connections"));
        assert!(spec(&|s| s.stop = Stop::Duration(-1.0))
            .unwrap_err()
            .contains("duration"));
        assert!(spec(&|s| s.rate = Some(0.0)).unwrap_err().contains("rate"));
        assert!(spec(&|s| s.threads = 11).unwrap_err().contains("threads"));
        assert!(spec(&|s| s.headers = vec!["nocolon".into()])
            .unwrap_err()
            .contains("Name: value"));
        assert!(spec(&|s| {
            s.validate = false;
            s.expect_body_file = Some("body".into());
        })
        .unwrap_err()
        .contains("validation request"));
    }

    #[test]
    fn refuses_what_http2_cannot_do() {
        let spec = |f: &dyn Fn(&mut LoadSpec)| {
            let mut s = LoadSpec {
                urls: vec!["http://127.0.0.1:1/".into()],
                http2: true,
                ..Default::default()
            };
            f(&mut s);
            s.resolve()
                .map(|r| (r.http2, r.streams))
                .map_err(|e| e.kind)
        };
        assert_eq!(spec(&|s| s.streams = 100), Ok((true, 100)));
        assert_eq!(
            spec(&|s| s.streams = 0),
            Err(ErrorKind::InvalidSpec {
                field: "streams",
                problem: "streams must be at least 1".into()
            })
        );
        assert_eq!(
            spec(&|s| {
                s.http2 = false;
                s.streams = 8;
            }),
            Err(ErrorKind::StreamsWithoutHttp2 { streams: 8 })
        );
        assert_eq!(
            spec(&|s| s.pipeline = 2),
            Err(ErrorKind::NotWithHttp2 { field: "pipeline" })
        );
        assert_eq!(
            spec(&|s| s.http10 = true),
            Err(ErrorKind::NotWithHttp2 { field: "http10" })
        );
        // Each refusal names the spec's fields, never a front end's flags.
        for kind in [
            ErrorKind::StreamsWithoutHttp2 { streams: 8 },
            ErrorKind::NotWithHttp2 { field: "pipeline" },
            ErrorKind::NotWithHttp2 { field: "http10" },
        ] {
            let said = kind.to_string();
            assert!(said.contains("http2") && !said.contains("--"), "{said}");
        }
    }
}
