//! The result of a run: what the CLI prints as `--json` and the Python suite receives.
//!
//! The schema is versioned by `schema` and documented in docs/json-schema.md; a field is never
//! renamed or given a new meaning within one version.

use std::collections::BTreeMap;

use base64::Engine as _;
use hdrhistogram::serialization::{Serializer, V2DeflateSerializer};
use hdrhistogram::Histogram;
use serde::Serialize;

use crate::host::HostFacts;
use crate::spec::LoadSpec;
use crate::stats::series::SecondPoint;
use crate::stats::{Counters, ErrorClass, Latencies};

pub const SCHEMA: &str = "httpbench-load/1";

#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub schema: &'static str,
    pub engine: Engine,
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
    pub errors: BTreeMap<&'static str, u64>,
    pub errors_total: u64,
    pub bytes: Bytes,
    pub connections: Connections,
    pub latency: LatencyReport,
    pub timeseries: Vec<SecondPoint>,
    pub client: Client,
    /// Why the run ended before its stop condition, if it did.
    pub aborted: Option<String>,
    pub host: HostFacts,
}

#[derive(Debug, Clone, Serialize)]
pub struct Engine {
    pub version: &'static str,
    /// "io_uring" or "epoll".
    pub io: &'static str,
}

/// The single request made before the load.
#[derive(Debug, Clone, Serialize)]
pub struct Validation {
    pub status: u16,
    pub body_bytes: u64,
    pub ok: bool,
    pub problem: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
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
}

#[derive(Debug, Clone, Serialize)]
pub struct OpenLoop {
    pub target_rate: f64,
    /// Requests sent per second of measurement.
    pub achieved_rate: f64,
    /// Requests that were due by the end but never sent.
    pub behind_schedule: u64,
    /// The achieved rate is more than 5% below the target: the server or the client could not
    /// keep up, and the latencies say how far behind it fell.
    pub fell_short: bool,
}

#[derive(Debug, Clone, Serialize)]
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

#[derive(Debug, Clone, Serialize)]
pub struct Bytes {
    /// Status lines and headers of responses.
    pub head: u64,
    /// Response bodies, after de-chunking.
    pub body: u64,
    /// Everything received, framing included.
    pub read: u64,
    pub written: u64,
}

#[derive(Debug, Clone, Serialize)]
pub struct Connections {
    pub opened: u64,
    /// Times the server closed a connection, or said it would, while the run went on.
    pub server_closes: u64,
}

#[derive(Debug, Clone, Serialize)]
pub struct LatencyReport {
    /// To the complete response, from when the request was meant to be sent (open loop:
    /// coordinated omission corrected) or was sent (closed loop).
    pub total: Summary,
    pub first_byte: Summary,
    pub connect: Summary,
    /// From the actual send: the uncorrected service time (equals `total` in closed loop).
    pub service: Summary,
}

/// A latency distribution in microseconds, with the full histogram for exact merging.
#[derive(Debug, Clone, Serialize)]
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
    pub hdr: String,
}

impl Summary {
    pub fn of(h: &Histogram<u64>) -> Summary {
        let mut bytes = Vec::new();
        V2DeflateSerializer::new().serialize(h, &mut bytes).expect("serialising to memory cannot fail");
        let q = |x: f64| if h.is_empty() { 0 } else { h.value_at_quantile(x) };
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
    let bytes = base64::engine::general_purpose::STANDARD.decode(hdr).map_err(|e| e.to_string())?;
    hdrhistogram::serialization::Deserializer::new()
        .deserialize(&mut bytes.as_slice())
        .map_err(|e| format!("{e:?}"))
}

/// Add encoded histograms (rounds, threads or hosts) into one: the exact merge, where averaging
/// their percentiles would not be.
pub fn merge_histograms<'a>(hdrs: impl IntoIterator<Item = &'a str>) -> Result<Histogram<u64>, String> {
    let mut merged = crate::stats::histogram();
    // Histograms written by another HdrHistogram may reach past 60 s; grow rather than fail.
    merged.auto(true);
    for hdr in hdrs {
        merged.add(decode_histogram(hdr)?).map_err(|e| format!("{e:?}"))?;
    }
    Ok(merged)
}

/// The percentile spectrum HdrHistogram's plotter draws: `ticks` points per halving of the
/// distance to 100%, from the median up to the largest value, as (percentile, microseconds).
pub fn percentile_spectrum(h: &Histogram<u64>, ticks: u32) -> Vec<(f64, u64)> {
    h.iter_quantiles(ticks)
        .map(|v| (v.quantile_iterated_to() * 100.0, h.highest_equivalent(v.value_iterated_to())))
        .filter(|&(percentile, _)| percentile >= 50.0)
        .collect()
}

/// The engine's own use of the machine.
#[derive(Debug, Clone, Serialize)]
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
}

#[derive(Debug, Clone, Serialize)]
pub struct ThreadUse {
    pub cpu: Option<usize>,
    pub user_s: f64,
    pub sys_s: f64,
    pub wall_s: f64,
    pub busy_share: f64,
    pub waiting_share: f64,
}

impl Status {
    pub fn of(c: &Counters) -> Status {
        let s = c.status;
        Status { s1xx: s[1], s2xx: s[2], s3xx: s[3], s4xx: s[4], s5xx: s[5], other: s[0] }
    }
}

pub fn errors_of(c: &Counters) -> BTreeMap<&'static str, u64> {
    ErrorClass::ALL.iter().map(|&class| (class.name(), c.errors[class as usize])).collect()
}

impl LatencyReport {
    pub fn of(l: &Latencies) -> LatencyReport {
        LatencyReport {
            total: Summary::of(&l.total),
            first_byte: Summary::of(&l.first_byte),
            connect: Summary::of(&l.connect),
            service: Summary::of(&l.service),
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
        assert!(spectrum.windows(2).all(|w| w[0].0 <= w[1].0 && w[0].1 <= w[1].1));
        assert!(spectrum.iter().any(|&(p, _)| p > 99.99));
    }
}
