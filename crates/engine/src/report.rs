//! The result of a run: what the CLI prints as `--json` and the Python suite receives.
//!
//! The schema is versioned by `schema` and documented in docs/json-schema.md; a field is never
//! renamed or given a new meaning within one version.
//!
//! Every type here derives `JsonSchema`: Python's typed view of the report
//! (python/httpbench/load/fields.py) is generated from it by `make generate`, and
//! tests/test_load_report.py fails when that view is stale or a field is missing from the doc.
//! Reports are merged (a run's hosts, a level's rounds) in `merge`, and read whatever measured
//! them in `read`.

mod hostile;
mod merge;
mod read;
pub mod ticks;

use std::collections::BTreeMap;

use base64::Engine as _;
use hdrhistogram::serialization::{Serializer, V2DeflateSerializer};
use hdrhistogram::Histogram;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::h2::frame::ErrorCode;
use crate::host::HostFacts;
use crate::spec::LoadSpec;
use crate::stats::series::SecondPoint;
use crate::stats::{Counters, ErrorClass, H2Counters, Latencies};

pub use hostile::{IdleConnections, Millis, SlowClients, StatePoint};
pub use merge::Parts;
pub use ticks::{TickPoint, Ticks, WindowFigures};

pub const SCHEMA: &str = "httpbench-load/1";

/// An open loop whose achieved rate is below this share of its target fell short.
pub const FELL_SHORT_BELOW: f64 = 0.95;

/// The report's JSON Schema (draft 2020-12), derived from these types: what front ends generate
/// their typed views of the report from, and check its documentation against.
pub fn schema() -> serde_json::Value {
    schemars::schema_for!(Report).to_value()
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct Report {
    pub schema: String,
    pub engine: Engine,
    /// "http/1.1", or "h2" (the spec's `http2`: over TLS by ALPN, or cleartext h2c); reports
    /// from before the field are "http/1.1".
    #[serde(default = "http1")]
    pub protocol: String,
    /// The run's input, as given.
    pub spec: LoadSpec,
    pub validation: Validation,
    /// When the load started (the threads' time zero, after validation; warm-up counts from
    /// here), in seconds since the Unix epoch: what lines up engines on several hosts.
    pub started_at: f64,
    /// Seconds of measurement (after warm-up).
    pub duration_s: f64,
    pub requests: Requests,
    pub open_loop: Option<OpenLoop>,
    pub status: Status,
    /// Every error class, zeros included.
    pub errors: BTreeMap<String, u64>,
    pub errors_total: u64,
    pub bytes: Bytes,
    /// The answers `bytes.body` counts by their `Content-Encoding` ("identity" without one,
    /// "other" for a coding outside identity, gzip, deflate, br, zstd and compress, or several),
    /// the codings seen only (empty in reports from before the field).
    #[serde(default)]
    pub encodings: BTreeMap<String, Encoding>,
    pub connections: Connections,
    /// https:// runs: what TLS negotiated and how many handshakes it took; null otherwise
    /// (and in reports from before the field).
    #[serde(default)]
    pub tls: Option<Tls>,
    /// HTTP/2 runs: the streams asked for and granted, and what the server said on its
    /// connections; null otherwise (and in reports from before the field).
    #[serde(default)]
    pub h2: Option<H2>,
    pub latency: LatencyReport,
    /// The completed answers by the size of their bodies, one entry per class of the spec's
    /// `size_classes` (empty without them, and in reports from before the field).
    #[serde(default)]
    pub classes: Vec<SizeClass>,
    pub timeseries: Vec<SecondPoint>,
    /// The fine series of the spec's `tick_ms`; null without it (and in reports from before the
    /// field).
    #[serde(default)]
    pub ticks: Option<Ticks>,
    pub client: Client,
    /// The slow clients beside the load (the spec's `slow`); null without them (and in reports
    /// from before the field).
    #[serde(default)]
    pub slow_clients: Option<SlowClients>,
    /// The idle connections beside the load (the spec's `idle`); null without them (and in
    /// reports from before the field).
    #[serde(default)]
    pub idle_connections: Option<IdleConnections>,
    /// Why the run ended before its stop condition, if it did.
    pub aborted: Option<String>,
    pub host: HostFacts,
    /// A capacity search's finding (`httpbench-load --capacity`): the report's other figures are
    /// then its probes at the capacity merged as rounds. Null for any other run (and in reports
    /// from before the field).
    #[serde(default)]
    pub capacity: Option<crate::capacity::Capacity>,
}

/// The protocol of a run that does not say.
pub const HTTP1: &str = "http/1.1";
/// The protocol of a run with `http2`.
pub const H2_PROTOCOL: &str = "h2";

fn http1() -> String {
    HTTP1.into()
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct Engine {
    pub version: String,
    /// "io_uring" or "epoll".
    pub io: String,
}

/// The single request made before the load, unless the spec turned it off.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct Validation {
    /// Whether it was made: the server saw one request more than the load's (reports from before
    /// the field always made it).
    #[serde(default = "made_before_the_field")]
    pub sent: bool,
    pub status: u16,
    pub body_bytes: u64,
    pub ok: bool,
    pub problem: Option<String>,
}

fn made_before_the_field() -> bool {
    true
}

impl Validation {
    /// No request before the load: nothing was checked, so nothing is known to be right.
    pub fn skipped() -> Validation {
        Validation {
            sent: false,
            status: 0,
            body_bytes: 0,
            ok: false,
            problem: None,
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct Requests {
    pub sent: u64,
    /// Complete responses of any status.
    pub completed: u64,
    /// Sent, then failed with an error (see `errors`).
    pub failed: u64,
    /// Sent and still unanswered when the run ended: `sent == completed + failed + in_flight`.
    pub in_flight: u64,
    /// How long those had waited by the end, on average and at most (0 when none): a server
    /// that leaves some connections unanswered shows here, not in the latencies.
    pub in_flight_age_mean_us: f64,
    pub in_flight_age_max_us: f64,
    /// Completed responses per second of measurement.
    pub per_second: f64,
    /// Complete responses that arrived during measurement, whenever their requests were sent
    /// (the warm-up's too): what the server carried in the window, which `completed` undercounts
    /// by the requests still on their way at its start (absent from reports from before the
    /// field: 0).
    #[serde(default)]
    pub answered: u64,
    /// Of `completed`, the answers with an expected status (the spec's `expect_status`, any 2xx
    /// when it names none): what the server served. Null when the client cannot tell (wrk counts
    /// 2xx and 3xx together); a report from before the field that counted its 2xx answers and
    /// expected any 2xx reads as its `status.2xx`.
    pub succeeded: Option<u64>,
    /// `succeeded` per second of measurement: the figure runs are ranked on.
    pub succeeded_per_second: Option<f64>,
    /// The other completed answers, by status code (only the codes seen).
    #[serde(default)]
    pub unexpected_statuses: BTreeMap<String, u64>,
    /// Retryable requests (see `errors`) sent once more on a new connection (the spec's
    /// `retry_idempotent`): not in `sent` again; each ends once, as its retry does (0 in
    /// reports from before the field).
    #[serde(default)]
    pub retried: u64,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct OpenLoop {
    pub target_rate: f64,
    /// Requests sent per second of measurement.
    pub achieved_rate: f64,
    /// Requests that were due by the end but never sent.
    pub behind_schedule: u64,
    /// Of the requests due in the window, the share sent: how much of the offered load the
    /// client kept up with. Poisson arrivals come in a random number, so their `achieved_rate`
    /// strays from the target by chance where this does not.
    #[serde(default = "all_sent")]
    pub sent_share: f64,
    /// Under 95% of the requests due were sent: the server or the client could not keep up,
    /// and the latencies say how far behind it fell.
    pub fell_short: bool,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct Status {
    #[serde(rename = "1xx")]
    pub s1xx: u64,
    #[serde(rename = "2xx")]
    pub s2xx: u64,
    #[serde(rename = "3xx")]
    pub s3xx: u64,
    #[serde(rename = "4xx")]
    pub s4xx: u64,
    #[serde(rename = "5xx")]
    pub s5xx: u64,
    pub other: u64,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct Bytes {
    /// Status lines and headers of responses.
    pub head: u64,
    /// Response bodies, after de-chunking.
    pub body: u64,
    /// Everything received, framing included.
    pub read: u64,
    pub written: u64,
}

/// The answers in one content coding.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Encoding {
    pub answers: u64,
    /// Their bodies' bytes as sent (coded, after de-chunking).
    pub bytes: u64,
    /// What those bodies hold decoded: the spec's `decoded_lengths` of their URLs (an identity
    /// answer's own length without them); null when that is not known for every answer.
    #[serde(default)]
    pub decoded_bytes: Option<u64>,
}

impl Encoding {
    /// The codings `tally` counted, by name.
    pub fn of(tally: &crate::http::coding::CodingTally) -> BTreeMap<String, Encoding> {
        tally
            .seen()
            .map(|s| {
                let e = Encoding {
                    answers: s.answers,
                    bytes: s.bytes,
                    decoded_bytes: s.decoded,
                };
                (s.coding.name().to_string(), e)
            })
            .collect()
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct Connections {
    pub opened: u64,
    /// Times the server closed a connection, or said it would, while the run went on.
    pub server_closes: u64,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct Tls {
    /// "1.2" or "1.3"; null when no handshake completed (so too `cipher`, `group`, `alpn`).
    pub version: Option<String>,
    /// The cipher suite's IANA name, e.g. TLS_AES_128_GCM_SHA256.
    pub cipher: Option<String>,
    /// The key-exchange group, e.g. X25519 or secp256r1.
    pub group: Option<String>,
    /// The protocol ALPN chose (null: the server chose none).
    pub alpn: Option<String>,
    /// Whether the server's certificate was verified (false: `insecure`).
    pub verified: bool,
    /// Handshakes completed during measurement: full, and resumed (a session ticket or ID).
    pub handshakes_full: u64,
    pub handshakes_resumed: u64,
}

impl Tls {
    pub fn new(
        negotiated: Option<crate::tls::Negotiated>,
        verified: bool,
        handshakes_full: u64,
        handshakes_resumed: u64,
    ) -> Tls {
        let n = negotiated.unwrap_or_default();
        Tls {
            version: n.version,
            cipher: n.cipher,
            group: n.group,
            alpn: n.alpn,
            verified,
            handshakes_full,
            handshakes_resumed,
        }
    }
}

/// An HTTP/2 run's streams and what its server said during measurement.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct H2 {
    /// Concurrent streams per connection asked for (the spec's `streams`).
    pub streams_requested: u32,
    /// The smallest SETTINGS_MAX_CONCURRENT_STREAMS the server sent; null: no limit seen (it
    /// set none, or no connection heard from it during measurement).
    pub streams_granted: Option<u32>,
    /// GOAWAY frames received.
    pub goaways: u64,
    /// RST_STREAM frames received, by error code name (`REFUSED_STREAM`, `CANCEL`, ...;
    /// `unknown` for codes RFC 9113 does not name): only the codes seen.
    pub resets: BTreeMap<String, u64>,
    /// Streams the server refused unprocessed (REFUSED_STREAM, or above a GOAWAY's last stream
    /// id): their requests were sent again, and are no error, except in an open loop those reset
    /// with REFUSED_STREAM, which failed as `h2_refused_stream` (those above a GOAWAY's last id
    /// went again on the next connection, timed from when they were due).
    pub refused_streams: u64,
    /// GOAWAY frames received, counted in `goaways`, whose last stream id left streams of ours
    /// unprocessed: those streams (RFC 9113 6.8: safe to retry), every one sent again on a new
    /// connection and none an error; they are in `refused_streams` too (0 in reports from before
    /// the field).
    #[serde(default)]
    pub goaway_streams_moved: u64,
    /// Framing received: every frame's 9-byte header, padding and HEADERS priority fields, the
    /// payloads of frames other than DATA, HEADERS and CONTINUATION, and header blocks that
    /// reached no response (their stream cancelled or reset); in `bytes.read`, in neither
    /// `bytes.head` (response header blocks, over HEADERS and CONTINUATION) nor `bytes.body`.
    pub frame_bytes: u64,
}

impl H2 {
    pub fn of(streams_requested: u32, c: &H2Counters) -> H2 {
        let resets = c
            .resets
            .iter()
            .enumerate()
            .filter(|&(_, &n)| n > 0)
            .map(|(code, &n)| {
                let name = ErrorCode(code as u32).name().unwrap_or("unknown");
                (name.to_string(), n)
            })
            .collect();
        H2 {
            streams_requested,
            streams_granted: c.streams_granted,
            goaways: c.goaways,
            resets,
            refused_streams: c.refused_streams,
            goaway_streams_moved: c.goaway_streams_moved,
            frame_bytes: c.frame_bytes,
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct LatencyReport {
    /// To the complete response, from when the request was meant to be sent (open loop:
    /// coordinated omission corrected) or was sent (closed loop).
    pub total: Summary,
    pub first_byte: Summary,
    pub connect: Summary,
    /// From TCP's establishment to the end of the TLS handshake (empty for http://; absent from
    /// reports from before the field).
    #[serde(default = "no_latencies")]
    pub tls_handshake: Summary,
    /// From the actual send: the uncorrected service time (equals `total` in closed loop).
    pub service: Summary,
    /// How long each request still in flight when the run ended had waited (from when it was
    /// meant to be sent in an open loop): a floor under the latency `total` never saw (absent
    /// from reports from before the field).
    #[serde(default = "no_latencies")]
    pub in_flight: Summary,
}

fn no_latencies() -> Summary {
    Summary::of(&crate::stats::histogram())
}

/// A latency distribution in microseconds, with the full histogram for exact merging. The
/// default has no histogram, as a client tool's report.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
pub struct Summary {
    pub count: u64,
    pub min_us: u64,
    pub mean_us: f64,
    pub stdev_us: f64,
    pub max_us: u64,
    pub p50_us: u64,
    pub p75_us: u64,
    pub p90_us: u64,
    pub p99_us: u64,
    pub p99_9_us: u64,
    pub p99_99_us: u64,
    /// The HdrHistogram, V2 compressed encoding in base64 (as in HdrHistogram log files):
    /// decode it with any HdrHistogram implementation and add histograms to merge runs exactly.
    /// Empty: no histogram (a client tool's report, or a merge with one).
    pub hdr: String,
}

impl Summary {
    pub fn of(h: &Histogram<u64>) -> Summary {
        let mut bytes = Vec::new();
        V2DeflateSerializer::new()
            .serialize(h, &mut bytes)
            .expect("serialising to memory cannot fail");
        let q = |x: f64| {
            if h.is_empty() {
                0
            } else {
                h.value_at_quantile(x)
            }
        };
        Summary {
            count: h.len(),
            min_us: if h.is_empty() { 0 } else { h.min() },
            mean_us: h.mean(),
            stdev_us: h.stdev(),
            max_us: h.max(),
            p50_us: q(0.5),
            p75_us: q(0.75),
            p90_us: q(0.9),
            p99_us: q(0.99),
            p99_9_us: q(0.999),
            p99_99_us: q(0.9999),
            hdr: base64::engine::general_purpose::STANDARD.encode(bytes),
        }
    }
}

/// Decode a `Summary::hdr` string back into a histogram.
pub fn decode_histogram(hdr: &str) -> Result<Histogram<u64>, String> {
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(hdr)
        .map_err(|e| e.to_string())?;
    hdrhistogram::serialization::Deserializer::new()
        .deserialize(&mut bytes.as_slice())
        .map_err(|e| format!("{e:?}"))
}

/// Add encoded histograms (rounds or hosts) into one: the exact merge, where averaging
/// their percentiles would not be.
pub fn merge_histograms<'a>(
    hdrs: impl IntoIterator<Item = &'a str>,
) -> Result<Histogram<u64>, String> {
    let mut merged = crate::stats::histogram();
    // Histograms written by another HdrHistogram may reach past 60 s; grow rather than fail.
    merged.auto(true);
    for hdr in hdrs {
        merged
            .add(decode_histogram(hdr)?)
            .map_err(|e| format!("{e:?}"))?;
    }
    Ok(merged)
}

/// The percentile spectrum HdrHistogram's plotter draws: `ticks` points per halving of the
/// distance to 100%, from the median up to the largest value, as (percentile, microseconds).
pub fn percentile_spectrum(h: &Histogram<u64>, ticks: u32) -> Vec<(f64, u64)> {
    h.iter_quantiles(ticks)
        .map(|v| {
            (
                v.quantile_iterated_to() * 100.0,
                h.highest_equivalent(v.value_iterated_to()),
            )
        })
        .filter(|&(percentile, _)| percentile >= 50.0)
        .collect()
}

/// One size class: the completed answers whose bodies had from `bytes_from` to `bytes_to` bytes.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct SizeClass {
    pub bytes_from: u64,
    /// Null: no upper bound (the class above the spec's last bound).
    pub bytes_to: Option<u64>,
    pub requests: u64,
    /// Their bodies' bytes.
    pub bytes: u64,
    /// Their latencies, as `latency.total` times them.
    pub latency: Summary,
}

impl SizeClass {
    /// The classes of `bounds`, with what `counted` counted in each (nothing, if it has none).
    pub fn of(bounds: &[u64], counted: &crate::stats::sizes::SizeClasses) -> Vec<SizeClass> {
        let empty = crate::stats::histogram();
        crate::stats::sizes::ranges(bounds)
            .into_iter()
            .enumerate()
            .map(|(i, (bytes_from, bytes_to))| {
                let c = counted.0.get(i);
                SizeClass {
                    bytes_from,
                    bytes_to,
                    requests: c.map_or(0, |c| c.requests),
                    bytes: c.map_or(0, |c| c.bytes),
                    latency: Summary::of(c.map_or(&empty, |c| &c.latency)),
                }
            })
            .collect()
    }
}

/// The engine's own use of the machine.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct Client {
    pub threads: Vec<ThreadUse>,
    pub user_s: f64,
    pub sys_s: f64,
    /// The busiest thread's share of wall time on a CPU: near 1, the client was the bottleneck.
    pub busy_share: f64,
    /// The largest share of wall time a thread spent ready to run but waiting for its CPU
    /// (taken by other processes): busy plus waiting near 1 is a client-bound run too.
    pub waiting_share: f64,
    /// Client CPU time per completed request, in microseconds.
    pub cpu_us_per_request: f64,
    /// Mean time from a response's arrival in the kernel to the engine handling it, in
    /// microseconds: part of each request's cycle that is not the server's latency.
    pub handling_delay_us: f64,
    /// The one thread of the slow clients and idle connections, apart from `threads` (whose
    /// figures it is in none of), from their opening to the load's end; null without them (and
    /// in reports from before the field).
    #[serde(default)]
    pub hostile_thread: Option<ThreadUse>,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct ThreadUse {
    pub cpu: Option<usize>,
    pub user_s: f64,
    pub sys_s: f64,
    pub wall_s: f64,
    pub busy_share: f64,
    pub waiting_share: f64,
}

/// `total / n`, or 0 when there is nothing to divide by.
fn per(total: f64, n: f64) -> f64 {
    if n > 0.0 {
        total / n
    } else {
        0.0
    }
}

/// What the requests of a run came to, as counted: the figures of `Requests` that are derived
/// are derived from these.
pub struct Tally {
    pub sent: u64,
    pub completed: u64,
    pub failed: u64,
    pub in_flight: u64,
    /// The sum of the in-flight requests' ages, and the oldest's.
    pub age_total_us: f64,
    pub age_max_us: f64,
    pub succeeded: Option<u64>,
    pub unexpected_statuses: BTreeMap<String, u64>,
    /// Answers that arrived during measurement, whenever their requests were sent.
    pub answered: u64,
    pub retried: u64,
}

impl Requests {
    /// The rates and the mean age are derived here.
    pub fn new(t: Tally, duration_s: f64) -> Requests {
        Requests {
            sent: t.sent,
            completed: t.completed,
            failed: t.failed,
            in_flight: t.in_flight,
            in_flight_age_mean_us: per(t.age_total_us, t.in_flight as f64),
            in_flight_age_max_us: t.age_max_us,
            per_second: per(t.completed as f64, duration_s),
            succeeded: t.succeeded,
            succeeded_per_second: t.succeeded.map(|n| per(n as f64, duration_s)),
            unexpected_statuses: t.unexpected_statuses,
            answered: t.answered,
            retried: t.retried,
        }
    }
}

impl Report {
    /// The share of the run's attempts that did not succeed: answers with an unexpected status
    /// plus errors (`errors_total`: requests that failed, timeouts and resets among them, and
    /// connections that failed before carrying one), over those answers plus errors, i.e.
    /// `(completed - succeeded + errors_total) / (completed + errors_total)`. Requests still in
    /// flight at the end count in neither. 1 when nothing was answered and nothing failed (a
    /// server that answered nothing served nothing); None when the client could not tell which
    /// answers succeeded (`succeeded` null). What `--max-errors` and a capacity objective's
    /// `errors=` bound.
    pub fn error_share(&self) -> Option<f64> {
        let succeeded = self.requests.succeeded?;
        let attempts = self.requests.completed + self.errors_total;
        if attempts == 0 {
            return Some(1.0);
        }
        Some((attempts - succeeded.min(self.requests.completed)) as f64 / attempts as f64)
    }
}

/// A report from before `sent_share` was kept: read as having kept up (its `fell_short` says).
fn all_sent() -> f64 {
    1.0
}

impl OpenLoop {
    /// `due`: the requests the schedule had due in the window (sent + behind on one host).
    pub fn new(
        target_rate: f64,
        sent: u64,
        duration_s: f64,
        behind_schedule: u64,
        due: f64,
    ) -> OpenLoop {
        let sent_share = if due > 0.0 {
            (sent as f64 / due).min(1.0)
        } else {
            1.0
        };
        OpenLoop {
            target_rate,
            achieved_rate: per(sent as f64, duration_s),
            behind_schedule,
            sent_share,
            fell_short: sent_share < FELL_SHORT_BELOW,
        }
    }
}

impl ThreadUse {
    pub fn new(
        cpu: Option<usize>,
        user_s: f64,
        sys_s: f64,
        waiting_s: f64,
        wall_s: f64,
    ) -> ThreadUse {
        ThreadUse {
            cpu,
            user_s,
            sys_s,
            wall_s,
            busy_share: per(user_s + sys_s, wall_s),
            waiting_share: per(waiting_s, wall_s),
        }
    }
}

impl Client {
    /// `handling_delay_total_us` is the sum over the completed responses: the mean is derived here.
    pub fn new(threads: Vec<ThreadUse>, completed: u64, handling_delay_total_us: f64) -> Client {
        let (user_s, sys_s) = (
            threads.iter().map(|t| t.user_s).sum::<f64>(),
            threads.iter().map(|t| t.sys_s).sum::<f64>(),
        );
        Client {
            // The busiest thread anywhere: one saturated thread, or host, is enough to distort the run.
            busy_share: threads.iter().map(|t| t.busy_share).fold(0.0, f64::max),
            waiting_share: threads.iter().map(|t| t.waiting_share).fold(0.0, f64::max),
            threads,
            user_s,
            sys_s,
            cpu_us_per_request: per((user_s + sys_s) * 1e6, completed as f64),
            handling_delay_us: per(handling_delay_total_us, completed as f64),
            hostile_thread: None,
        }
    }
}

impl Status {
    pub fn of(c: &Counters) -> Status {
        let s = c.status;
        Status {
            s1xx: s[1],
            s2xx: s[2],
            s3xx: s[3],
            s4xx: s[4],
            s5xx: s[5],
            other: s[0],
        }
    }
}

pub fn errors_of(c: &Counters) -> BTreeMap<String, u64> {
    ErrorClass::ALL
        .iter()
        .map(|&class| (class.name().to_string(), c.errors[class as usize]))
        .collect()
}

impl LatencyReport {
    pub fn of(l: &Latencies) -> LatencyReport {
        LatencyReport {
            total: Summary::of(&l.total),
            first_byte: Summary::of(&l.first_byte),
            connect: Summary::of(&l.connect),
            tls_handshake: Summary::of(&l.tls_handshake),
            service: Summary::of(&l.service),
            in_flight: Summary::of(&l.in_flight),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::histogram;

    #[test]
    fn histograms_round_trip_and_merge_exactly() {
        let (mut a, mut b) = (histogram(), histogram());
        for v in 1..=1000 {
            a.record(v).unwrap();
            b.record(v * 1000).unwrap();
        }
        let (sa, sb) = (Summary::of(&a), Summary::of(&b));
        let merged = merge_histograms([sa.hdr.as_str(), sb.hdr.as_str()]).unwrap();
        let mut direct = a.clone();
        direct.add(&b).unwrap();
        assert_eq!(merged, direct);
        assert_eq!(Summary::of(&merged).p50_us, direct.value_at_quantile(0.5));
        assert!(merge_histograms(["not base64!"]).is_err());
    }

    #[test]
    fn spectrum_runs_from_the_median_to_the_maximum() {
        let mut h = histogram();
        for v in 1..=100_000 {
            h.record(v).unwrap();
        }
        let spectrum = percentile_spectrum(&h, 5);
        assert!(spectrum.first().unwrap().0 >= 50.0);
        assert_eq!(spectrum.last().unwrap().1, h.highest_equivalent(h.max()));
        assert!(spectrum
            .windows(2)
            .all(|w| w[0].0 <= w[1].0 && w[0].1 <= w[1].1));
        assert!(spectrum.iter().any(|&(p, _)| p > 99.99));
    }
}
