//! The flags, close to wrk's, ab's and weighttp's where they overlap.

use std::net::IpAddr;
use std::path::PathBuf;

use std::time::Duration;

use clap::Parser;
use httpbench_engine::capacity::{Objective, Pool, Search, Settings};
use httpbench_engine::spec::{
    Arrivals, IdleSpec, IoChoice, LoadSpec, Resumption, SlowMode, SlowSpec, Stop, TlsSpec,
    TlsVersion,
};

#[derive(Parser, Debug)]
#[command(
    name = "httpbench-load",
    version,
    about = "HTTP/1.x and HTTP/2 load generator: closed loop (like wrk, ab, weighttp, h2load) or open loop at a fixed rate (like wrk2), with exact accounting",
    after_help = "Closed loop by default: each connection sends its next request when the previous answer is in. -R switches to an open loop, with latencies corrected for coordinated omission.\nExamples:\n  httpbench-load -c 100 -d 10s http://127.0.0.1:8080/\n  httpbench-load -c 50 -n 100000 --no-keepalive http://127.0.0.1:8080/index.html\n  httpbench-load -c 100 -R 20000 -d 30s --json http://127.0.0.1:8080/"
)]
pub struct Cli {
    /// URLs to request, round robin (all on one host and port)
    #[arg(value_name = "URL")]
    urls: Vec<String>,
    /// Read more URLs from this file, one per line as 'URL-OR-PATH [WEIGHT]' (# comments): with a weight on any line, each request's URL is drawn by weight (1 where none is given); a path (/a.css) takes the scheme, host and port of the URL given, which is then not requested itself
    #[arg(long, alias = "urls-file", value_name = "FILE")]
    urls_from_file: Option<PathBuf>,
    /// Take the URL mix from this access log (Common or Combined format): GET requests answered 200 or 304, weighted by their counts; paths take the scheme, host and port of the URL given (httpbench load only, as are --docroot, --order and --speed)
    #[arg(long, value_name = "FILE")]
    access_log: Option<PathBuf>,
    /// Check each answer's length against its file's under DIR (with --urls-from-file, or --access-log, whose paths missing there are dropped); without it, each URL's first answer sets its length
    #[arg(long, value_name = "DIR")]
    docroot: Option<PathBuf>,
    /// With --access-log: draw each URL by the log's counts (weighted), send the log's requests in its order, looping (replay), or in its order at its own times, looping (timed; no -R)
    #[arg(long, value_name = "HOW", value_parser = ["weighted", "replay", "timed"])]
    order: Option<String>,
    /// With --order timed: send this many times faster than the log (e.g. 10)
    #[arg(long, value_name = "X")]
    speed: Option<f64>,
    /// An access log's mix as `httpbench load` read it (JSON: paths and the spec's order fields)
    #[arg(long, value_name = "FILE", hide = true)]
    log_mix: Option<PathBuf>,
    /// Seed of the weighted draw of URLs: the same seed, the same sequence on each connection
    #[arg(long, value_name = "N")]
    seed: Option<u64>,
    /// Upper bounds in bytes of the size classes the report counts answers in, e.g. 1024,10240,102400 (at most 7; the class above the last is added)
    #[arg(long, value_name = "LIST", value_delimiter = ',')]
    size_classes: Vec<u64>,
    /// Connections to keep open (default 10; with --capacity, as many as each probe's rate needs)
    #[arg(short = 'c', long)]
    connections: Option<u32>,
    /// Engine threads (connections are spread over them)
    #[arg(short = 't', long, default_value_t = 1)]
    threads: u32,
    /// Stop after exactly this many requests; the server sees one more, the validation request, unless --no-validate
    #[arg(short = 'n', long, conflicts_with = "duration")]
    requests: Option<u64>,
    /// Stop after this long (e.g. 10s, 500ms, 2m); the default is 10s unless -n is given
    #[arg(short = 'd', long, value_parser = parse_duration)]
    duration: Option<f64>,
    /// Open loop: send this many requests per second in total, evenly spread
    #[arg(short = 'R', long)]
    rate: Option<f64>,
    /// Open loop (-R, --capacity): requests evenly spaced per connection (as wrk2 and oha), or Poisson arrivals, each taken by a free connection
    #[arg(long, value_name = "HOW", default_value = "even", value_parser = ["even", "poisson"])]
    arrivals: String,
    /// Requests outstanding per connection; a closed loop sends them together and the next ones once all are answered (as wrk)
    #[arg(long, default_value_t = 1)]
    pipeline: u32,
    /// A new connection for every request, closed by the client (like ab without -k)
    #[arg(long)]
    no_keepalive: bool,
    /// Reconnect after this many requests on one connection
    #[arg(long, value_name = "K")]
    requests_per_connection: Option<u64>,
    /// Send HTTP/1.0 requests (like ab)
    #[arg(long = "http1.0")]
    http10: bool,
    /// Speak HTTP/2: over https:// by ALPN (offering only h2, which the server must select), over http:// by prior knowledge (h2c)
    #[arg(long)]
    http2: bool,
    /// Concurrent streams per HTTP/2 connection (like h2load's -m; default 1); needs --http2
    #[arg(long, value_name = "N")]
    streams: Option<u32>,
    /// Request method
    #[arg(short = 'm', long, default_value = "GET")]
    method: String,
    /// Add or replace a request header, e.g. -H 'Accept-Encoding: gzip' (repeatable)
    #[arg(short = 'H', long = "header", value_name = "HEADER")]
    headers: Vec<String>,
    /// Request body
    #[arg(long, conflicts_with = "body_file")]
    body: Option<String>,
    /// Request body from a file (UTF-8 text)
    #[arg(long, value_name = "FILE")]
    body_file: Option<PathBuf>,
    /// Load for this long before measuring (excluded from every figure)
    #[arg(long, value_parser = parse_duration, default_value = "0s")]
    warmup: f64,
    /// Measure only once every connection has answered a request (connects and TLS handshakes
    /// before the measured window), and --warmup has passed; at most 2 s, or --warmup if longer
    #[arg(long)]
    warmup_connections: bool,
    /// Give up connecting after this long
    #[arg(long, value_parser = parse_duration, default_value = "5s")]
    connect_timeout: f64,
    /// Count a request as timed out after this long
    #[arg(long, value_parser = parse_duration, default_value = "10s")]
    timeout: f64,
    /// Pin the engine threads to these CPUs, e.g. 2,3 or 2-5
    #[arg(long, value_parser = parse_cpus)]
    cpus: Option<CpuList>,
    /// Spread connections over these source addresses, e.g. 127.0.0.2,127.0.0.3
    #[arg(long, value_delimiter = ',')]
    bind: Vec<IpAddr>,
    /// I/O interface: auto (io_uring if the kernel allows it), io-uring or epoll
    #[arg(long, default_value = "auto", value_parser = ["auto", "io-uring", "io_uring", "epoll"])]
    io: String,
    /// The first response's body must equal this file
    #[arg(long, value_name = "FILE")]
    expect_body: Option<PathBuf>,
    /// Every response body must have this many bytes (others count as length mismatches)
    #[arg(long, value_name = "N")]
    expect_length: Option<u64>,
    /// Statuses that count as success (requests.succeeded, and the first request's check), e.g. 200,304; default: any 2xx
    #[arg(long, value_name = "LIST", value_parser = parse_statuses)]
    expect_status: Option<Statuses>,
    /// Exit 3 when more than this share of requests did not succeed (other statuses, failed requests), e.g. 0.1%; 100% never
    #[arg(long, value_name = "PCT", value_parser = parse_share, default_value = "1%")]
    pub max_errors: f64,
    /// Load even when the first request fails its checks
    #[arg(long)]
    allow_errors: bool,
    /// Send no validation request before the load, so the server sees exactly the load's requests; nothing is checked first (a wrong URL is measured, not refused), and --expect-body cannot be used
    #[arg(long)]
    no_validate: bool,
    /// https: offer only this TLS version, 1.2 or 1.3 (default: both, the server chooses)
    #[arg(long, value_name = "VERSION", value_parser = ["1.2", "1.3"])]
    tls_version: Option<String>,
    /// https: offer these cipher suites, in order, by IANA name, e.g. TLS_AES_128_GCM_SHA256,TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256
    #[arg(long, value_name = "LIST", value_delimiter = ',')]
    tls_ciphers: Vec<String>,
    /// https: offer these key-exchange groups, in order, e.g. X25519,secp256r1
    #[arg(long, value_name = "LIST", value_delimiter = ',')]
    tls_groups: Vec<String>,
    /// https: verify the server's certificate against the CA certificates in this PEM file instead of the system's
    #[arg(long, value_name = "FILE")]
    cacert: Option<PathBuf>,
    /// https: verify no certificate, as wrk and h2load do (the summary says so)
    #[arg(long)]
    insecure: bool,
    /// https: handshakes after a connection's first resume with tickets (TLS 1.3 PSK, TLS 1.2 tickets or IDs), session IDs only (TLS 1.2), or none (every handshake full)
    #[arg(long, value_name = "HOW", default_value = "tickets", value_parser = ["none", "tickets", "ids"])]
    tls_resumption: String,
    /// Hold N keep-alive connections idle beside the load, each opened with one request answered before the load starts (report: idle_connections)
    #[arg(long, value_name = "N")]
    idle: Option<u32>,
    /// --idle: ask each idle connection again this often (e.g. 5s), counted apart from the load; default never, so that a server closing idle connections is seen doing it
    #[arg(long, value_name = "TIME", value_parser = parse_duration)]
    idle_ping: Option<f64>,
    /// Run N slow clients beside the load, each on its own connection, opened before the warm-up and again whenever the server closes it (report: slow_clients); the run is then never ended early when the server stops answering the load
    #[arg(long, value_name = "N")]
    slow_clients: Option<u32>,
    /// --slow-clients: headers (slowloris: a header fragment every interval, never the end of the head; over --http2 CONTINUATION frames), body (R.U.D.Y.: a POST's body trickled; over --http2 DATA frames) or read (a large answer read a chunk every interval through a small receive window; over --http2 a small stream window opened a chunk at a time); default headers
    #[arg(long, value_name = "MODE")]
    slow: Option<String>,
    /// --slow-clients: time between chunks (default 10s for headers and body, 1s for read)
    #[arg(long, value_name = "TIME", value_parser = parse_duration)]
    slow_interval: Option<f64>,
    /// --slow-clients: bytes per chunk (default 24 for headers, 16 for body, 32 for read)
    #[arg(long, value_name = "BYTES")]
    slow_chunk: Option<u32>,
    /// --slow read: the receive buffer set before connecting (over --http2 the stream window), in bytes (default 4096)
    #[arg(long, value_name = "BYTES")]
    slow_window: Option<u32>,
    /// --slow body: the Content-Length the POST announces (default 4096)
    #[arg(long, value_name = "BYTES")]
    slow_content_length: Option<u64>,
    /// --slow-clients: how long a slow connection is held at most before another takes its place (default 10m)
    #[arg(long, value_name = "TIME", value_parser = parse_duration)]
    slow_hold: Option<f64>,
    /// --slow-clients: the path they ask for (default the first URL's); --slow read needs a large answer (some MB)
    #[arg(long, value_name = "PATH")]
    slow_path: Option<String>,
    /// Search the most requests per second the server carries within this latency objective, by
    /// open-loop probes at one rate each: p99=10ms, or p50=2ms,p99=10ms,errors=0.1% (p50, p90,
    /// p99, p99.9; errors default 0.1%)
    #[arg(long, value_name = "OBJECTIVE")]
    capacity: Option<String>,
    /// --capacity: bisect until the bracket is this narrow
    #[arg(long, value_name = "PCT")]
    precision: Option<String>,
    /// --capacity: how long each probe measures, after its warm-up (longer when its highest
    /// percentile needs more requests)
    #[arg(long, value_name = "TIME", value_parser = parse_duration)]
    probe: Option<f64>,
    /// --capacity: the first rate probed, in requests per second
    #[arg(long, value_name = "RATE")]
    start: Option<f64>,
    /// --capacity: the smallest rate probed
    #[arg(long, value_name = "RATE")]
    min_rate: Option<f64>,
    /// --capacity: the largest rate probed
    #[arg(long, value_name = "RATE")]
    max_rate: Option<f64>,
    /// --capacity: probes at the rate found that must all meet the objective
    #[arg(long, value_name = "N")]
    rounds: Option<u32>,
    /// Retry once, on a new connection, each request a reused keep-alive connection lost before any byte of its answer (error class retryable; RFC 9110 9.2.2), counted in requests.retried and timed from its first attempt
    #[arg(long)]
    retry_idempotent: bool,
    /// Never end the run early when the server stops answering or refuses connects (a server restarted on purpose): count them until the run's end
    #[arg(long)]
    keep_going: bool,
    /// Add a fine series to the report (ticks) with points of this length, 10ms to 1000ms, e.g. 100ms
    #[arg(long, value_name = "TIME", value_parser = parse_tick)]
    tick: Option<u32>,
    /// Print the result as JSON (schema httpbench-load/1, see docs/json-schema.md)
    #[arg(long)]
    pub json: bool,
}

fn parse_duration(s: &str) -> Result<f64, String> {
    let s = s.trim();
    let split = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(s.len());
    let (number, unit) = s.split_at(split);
    let value: f64 = number
        .parse()
        .map_err(|_| format!("{s:?} is not a duration such as 10s, 500ms or 2m"))?;
    let scale = match unit {
        "" | "s" => 1.0,
        "ms" => 1e-3,
        "us" => 1e-6,
        "m" => 60.0,
        "h" => 3600.0,
        _ => return Err(format!("unit {unit:?} in {s:?} is not one of ms, s, m, h")),
    };
    Ok(value * scale)
}

/// `--tick`: a whole number of milliseconds from 10 to 1000.
fn parse_tick(s: &str) -> Result<u32, String> {
    use httpbench_engine::spec::{TICK_MS_LEAST, TICK_MS_MOST};
    let ms = parse_duration(s)? * 1e3;
    if ms.fract() != 0.0 || !(f64::from(TICK_MS_LEAST)..=f64::from(TICK_MS_MOST)).contains(&ms) {
        return Err(format!(
            "{s:?} is no tick: give whole milliseconds from {TICK_MS_LEAST}ms to {TICK_MS_MOST}ms, e.g. 100ms"
        ));
    }
    Ok(ms as u32)
}

/// One `--cpus` value as a whole: clap reads a bare `Vec` as a flag given several times, and then
/// panics on a parser that returns the whole list.
#[derive(Clone, Debug, PartialEq)]
struct CpuList(Vec<usize>);

fn parse_cpus(s: &str) -> Result<CpuList, String> {
    let bad = || format!("{s:?} is not a CPU list such as 1 or 2,3 or 0-3");
    let mut cpus = Vec::new();
    for part in s.split(',') {
        match part.split_once('-') {
            Some((a, b)) => {
                let (a, b): (usize, usize) =
                    (a.parse().map_err(|_| bad())?, b.parse().map_err(|_| bad())?);
                if a > b {
                    return Err(bad());
                }
                cpus.extend(a..=b);
            }
            None => cpus.push(part.parse().map_err(|_| bad())?),
        }
    }
    Ok(CpuList(cpus))
}

/// One `--expect-status` value as a whole (see `CpuList`).
#[derive(Clone, Debug, PartialEq)]
struct Statuses(Vec<u16>);

fn parse_statuses(s: &str) -> Result<Statuses, String> {
    s.split(',')
        .map(|code| match code.trim().parse::<u16>() {
            Ok(code) if (100..600).contains(&code) => Ok(code),
            _ => Err(format!(
                "{code:?} is no HTTP status; give codes from 100 to 599, e.g. 200,304"
            )),
        })
        .collect::<Result<_, _>>()
        .map(Statuses)
}

/// A share given as a percentage, "1%" or "0.5" (percent too), as a fraction.
fn parse_share(s: &str) -> Result<f64, String> {
    let bad = || format!("{s:?} is not a percentage from 0% to 100%, e.g. 1% or 0.1%");
    let percent: f64 = s.trim().trim_end_matches('%').parse().map_err(|_| bad())?;
    if !(0.0..=100.0).contains(&percent) {
        return Err(bad());
    }
    Ok(percent / 100.0)
}

impl Cli {
    pub fn to_spec(&self) -> Result<LoadSpec, String> {
        if self.access_log.is_some() || self.order.is_some() || self.speed.is_some() {
            return Err("--access-log, --order and --speed are read by `httpbench load`: run the load through httpbench".into());
        }
        if self.docroot.is_some() && self.urls_from_file.is_none() {
            return Err("--docroot gives the lengths of --urls-from-file's (or, through `httpbench load`, --access-log's) files: give one, or drop --docroot".into());
        }
        let log = match &self.log_mix {
            Some(path) => Some(crate::urls::read_log_mix(path, &self.urls)?),
            None => None,
        };
        let mix = match (&self.urls_from_file, &log) {
            (Some(_), Some(_)) => {
                return Err(
                    "--urls-from-file and --access-log each give the URL mix: give one".into(),
                )
            }
            (Some(path), None) => crate::urls::read(path, &self.urls)?,
            _ => crate::urls::UrlMix {
                urls: self.urls.clone(),
                weights: None,
            },
        };
        let body = match &self.body_file {
            Some(path) => Some(
                std::fs::read_to_string(path)
                    .map_err(|e| format!("cannot read --body-file {}: {e}", path.display()))?,
            ),
            None => self.body.clone(),
        };
        // Refused whatever its value: the engine's spec cannot tell a given 1 from the default.
        if let (Some(streams), false) = (self.streams, self.http2) {
            let kind = httpbench_engine::ErrorKind::StreamsWithoutHttp2 { streams };
            return Err(crate::in_flags(&kind));
        }
        let arrivals = match self.arrivals.as_str() {
            "poisson" if self.rate.is_none() && self.capacity.is_none() => {
                return Err("--arrivals poisson paces an open loop: give -R RATE or --capacity OBJECTIVE too, or drop it".into());
            }
            "poisson" => Arrivals::Poisson,
            _ => Arrivals::Even,
        };
        let stop = match (self.requests, self.duration) {
            (Some(n), _) => Stop::Requests(n),
            (None, Some(d)) => Stop::Duration(d),
            (None, None) => Stop::Duration(10.0),
        };
        let mut spec = LoadSpec {
            urls: mix.urls,
            weights: mix.weights,
            seed: self.seed.unwrap_or(httpbench_engine::spec::DEFAULT_SEED),
            size_classes: self.size_classes.clone(),
            method: self.method.clone(),
            headers: self.headers.clone(),
            body,
            connections: self
                .connections
                .unwrap_or(httpbench_engine::spec::DEFAULT_CONNECTIONS),
            threads: self.threads,
            pipeline: self.pipeline,
            stop,
            rate: self.rate,
            arrivals,
            keep_alive: !self.no_keepalive,
            requests_per_connection: self.requests_per_connection,
            http10: self.http10,
            http2: self.http2,
            streams: self.streams.unwrap_or(1),
            warmup: self.warmup,
            warmup_connections: self.warmup_connections,
            connect_timeout: self.connect_timeout,
            request_timeout: self.timeout,
            cpus: self.cpus.clone().map(|c| c.0).unwrap_or_default(),
            bind: self.bind.clone(),
            io: match self.io.as_str() {
                "epoll" => IoChoice::Epoll,
                "auto" => IoChoice::Auto,
                _ => IoChoice::IoUring,
            },
            expect_body_file: self.expect_body.clone(),
            expect_length: self.expect_length,
            expect_status: self.expect_status.clone().map(|s| s.0).unwrap_or_default(),
            allow_errors: self.allow_errors,
            validate: !self.no_validate,
            retry_idempotent: self.retry_idempotent,
            keep_going: self.keep_going,
            tick_ms: self.tick,
            tls: TlsSpec {
                version: self.tls_version.as_deref().map(|v| match v {
                    "1.2" => TlsVersion::Tls12,
                    _ => TlsVersion::Tls13,
                }),
                ciphers: self.tls_ciphers.clone(),
                groups: self.tls_groups.clone(),
                cacert: self.cacert.clone(),
                insecure: self.insecure,
                resumption: match self.tls_resumption.as_str() {
                    "none" => Resumption::None,
                    "ids" => Resumption::Ids,
                    _ => Resumption::Tickets,
                },
            },
            ..LoadSpec::default()
        };
        // Each URL of a file checked against its own length: its file's under --docroot, else
        // its first answer's.
        match (&self.docroot, &self.urls_from_file) {
            (Some(root), _) => {
                spec.expect_lengths = Some(crate::urls::lengths_under(root, &spec.urls)?)
            }
            (None, Some(_)) => spec.learn_lengths = true,
            (None, None) => {}
        }
        if let Some(log) = log {
            log.onto(&mut spec);
        }
        self.beside_load(&mut spec)?;
        Ok(spec)
    }
}

impl Cli {
    /// The idle connections and slow clients the flags ask for, onto `spec`; one line for what
    /// cannot be.
    fn beside_load(&self, spec: &mut LoadSpec) -> Result<(), String> {
        if self.idle_ping.is_some() && self.idle.is_none() {
            return Err("--idle-ping keeps idle connections alive, which --idle N opens: add --idle N, or drop --idle-ping".into());
        }
        if let Some(n) = self.idle {
            if self.no_keepalive {
                return Err(format!("--idle {n} holds keep-alive connections, which --no-keepalive turns off: drop one of the two"));
            }
            spec.idle = IdleSpec {
                connections: n,
                ping: self.idle_ping,
            };
        }
        let slow_flags = [
            ("--slow", self.slow.is_some()),
            ("--slow-interval", self.slow_interval.is_some()),
            ("--slow-chunk", self.slow_chunk.is_some()),
            ("--slow-window", self.slow_window.is_some()),
            ("--slow-content-length", self.slow_content_length.is_some()),
            ("--slow-hold", self.slow_hold.is_some()),
            ("--slow-path", self.slow_path.is_some()),
        ];
        let Some(clients) = self.slow_clients else {
            return match slow_flags.iter().find(|(_, given)| *given) {
                Some((flag, _)) => Err(format!(
                    "{flag} sets the slow clients, which --slow-clients N starts: add --slow-clients N, or drop {flag}"
                )),
                None => Ok(()),
            };
        };
        let mode = match self.slow.as_deref() {
            None | Some("headers") => SlowMode::Headers,
            Some("body") => SlowMode::Body,
            Some("read") => SlowMode::Read,
            Some(other) => {
                return Err(format!(
                    "--slow {other:?} is no slow mode: give headers (slowloris), body (R.U.D.Y.) or read (slow read)"
                ))
            }
        };
        let only = |flag: &str, given: bool, needs: SlowMode| {
            if given && mode != needs {
                Err(format!(
                    "{flag} is for --slow {}, and the mode is {}: drop {flag}, or use --slow {}",
                    needs.name(),
                    mode.name(),
                    needs.name()
                ))
            } else {
                Ok(())
            }
        };
        only("--slow-window", self.slow_window.is_some(), SlowMode::Read)?;
        only(
            "--slow-content-length",
            self.slow_content_length.is_some(),
            SlowMode::Body,
        )?;
        spec.slow = SlowSpec {
            clients,
            mode,
            interval: self.slow_interval,
            chunk_bytes: self.slow_chunk,
            window_bytes: self.slow_window,
            content_length: self.slow_content_length,
            hold: self.slow_hold,
            path: self.slow_path.clone(),
        };
        Ok(())
    }
}

/// A time in seconds as a `Duration`, refused in one line where it has none (too large).
fn seconds(flag: &str, s: f64) -> Result<Duration, String> {
    Duration::try_from_secs_f64(s)
        .map_err(|_| format!("{flag} {s} s is no time a probe can last; give one such as 3s"))
}

/// A share given as a percentage, as `2%` (or a bare `2`).
fn parse_percent(flag: &str, s: &str) -> Result<f64, String> {
    s.trim()
        .trim_end_matches('%')
        .trim()
        .parse::<f64>()
        .ok()
        .filter(|v| v.is_finite())
        .map(|v| v / 100.0)
        .ok_or_else(|| format!("{flag} {s:?} is no percentage; write one as 2%"))
}

impl Cli {
    /// The capacity search the flags ask for, if they ask for one: `None` without `--capacity`,
    /// and one line saying what cannot work with it.
    pub fn capacity(&self) -> Result<Option<(Search, Pool)>, String> {
        let search_flags = [
            ("--precision", self.precision.is_some()),
            ("--probe", self.probe.is_some()),
            ("--start", self.start.is_some()),
            ("--min-rate", self.min_rate.is_some()),
            ("--max-rate", self.max_rate.is_some()),
            ("--rounds", self.rounds.is_some()),
        ];
        let Some(objective) = &self.capacity else {
            return match search_flags.iter().find(|(_, given)| *given) {
                Some((flag, _)) => Err(format!(
                    "{flag} sets the capacity search, which runs with --capacity OBJECTIVE only: add --capacity p99=10ms, or drop {flag}"
                )),
                None => Ok(None),
            };
        };
        let conflicting = [
            (
                "-R",
                self.rate.is_some(),
                "the search chooses each probe's rate",
            ),
            ("-n", self.requests.is_some(), "each probe runs for --probe"),
            ("-d", self.duration.is_some(), "each probe runs for --probe"),
            (
                "--pipeline",
                self.pipeline != 1,
                "an open loop sends each request when it is due",
            ),
        ];
        if let Some((flag, _, why)) = conflicting.iter().find(|(_, given, _)| *given) {
            return Err(format!("--capacity with {flag}: {why}; drop {flag}"));
        }
        let objective = Objective::parse(objective).map_err(|e| format!("--capacity: {e}"))?;
        let defaults = Settings::default();
        let settings = Settings {
            start: self.start.unwrap_or(defaults.start),
            precision: match &self.precision {
                Some(p) => parse_percent("--precision", p)?,
                None => defaults.precision,
            },
            rounds: self.rounds.unwrap_or(defaults.rounds),
            min_rate: self.min_rate.unwrap_or(defaults.min_rate),
            max_rate: self.max_rate.unwrap_or(defaults.max_rate),
            probe: match self.probe {
                Some(s) => seconds("--probe", s)?,
                None => defaults.probe,
            },
            warmup: if self.warmup > 0.0 {
                seconds("--warmup", self.warmup)?
            } else {
                defaults.warmup
            },
            ..defaults
        };
        if settings.probe.is_zero() {
            return Err("--probe 0s measures nothing; give each probe a time, as 3s".into());
        }
        let search = Search::new(objective, settings).map_err(|e| format!("--capacity: {e}"))?;
        Ok(Some((search, Pool::new(self.connections, self.threads))))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_and_cpu_lists() {
        assert_eq!(parse_duration("10s"), Ok(10.0));
        assert_eq!(parse_duration("500ms"), Ok(0.5));
        assert_eq!(parse_duration("2m"), Ok(120.0));
        assert_eq!(parse_duration("3"), Ok(3.0));
        assert!(parse_duration("ten").is_err() && parse_duration("5x").is_err());
        assert_eq!(parse_cpus("0-2,5"), Ok(CpuList(vec![0, 1, 2, 5])));
        assert!(parse_cpus("3-1").is_err() && parse_cpus("a").is_err());
        assert_eq!(parse_statuses("200,304"), Ok(Statuses(vec![200, 304])));
        assert!(parse_statuses("99").is_err() && parse_statuses("abc").is_err());
        assert_eq!(parse_share("1%"), Ok(0.01));
        assert_eq!(parse_share("100%"), Ok(1.0));
        assert!(parse_share("150%").is_err() && parse_share("-1%").is_err());
        assert!(parse_share("abc").is_err() && parse_share("NaN").is_err());
    }
}
