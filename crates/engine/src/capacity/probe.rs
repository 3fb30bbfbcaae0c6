//! A probe's run: the caller's spec at one rate, with the connections that rate needs, its own
//! warm-up and a drain after it; and what the objective judges of the probe's report. The search
//! decides which rates; this decides how each is run, for every driver alike.

use std::sync::atomic::AtomicBool;
use std::time::Instant;

use crate::report::{merge_histograms, Parts, Report, Summary};
use crate::spec::{Arrivals, LoadSpec, Stop};
use crate::{Error, ErrorKind};

use super::objective::Figures;
use super::search::{Capacity, Next, Probe, Search};

/// The busiest engine thread's share of wall time busy or waiting for its CPU at which the client,
/// not the server, set the pace (the suite's honesty flag uses the same line).
pub const CLIENT_BOUND_SHARE: f64 = 0.9;

/// Connections per request in flight at the objective's latency (see `connections_needed`).
const POOL_HEADROOM: f64 = 2.0;
/// Poisson arrivals bunch: the requests in flight stray from their mean m by about √m, and this
/// many √m more connections keep a burst from finding none free at small rates, where 2 m alone
/// is a handful (4 connections for 25 req/s at 75 ms: 5 or more in flight 1% of the time).
const POOL_BURSTS: f64 = 4.0;

/// The most connections a probe opens unless the user fixes the pool: a loose objective at a high
/// rate would otherwise ask for more than a client core can connect in a warm-up, or a server is
/// configured to take; a probe held to it says so (`connections_short`).
pub const POOL_MOST: u32 = 10_000;

/// The connections a search's probes may have.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Pool {
    /// The user's `-c`: every probe has exactly these.
    pub fixed: Option<u32>,
    /// The most the open-file limit allows.
    pub cap: u32,
}

impl Pool {
    /// `fixed` connections, or as many as each probe needs up to `POOL_MOST` and what the
    /// open-file limit allows `threads` engine threads.
    pub fn new(fixed: Option<u32>, threads: u32) -> Pool {
        let most = crate::run::most_connections(threads);
        Pool {
            fixed,
            cap: most.min(u64::from(POOL_MOST)) as u32,
        }
    }
}

impl Search {
    /// Connections a probe at `rate` needs so that none waits for one while the server answers
    /// within the objective: twice the rate times the largest latency bound (Little's law), spread
    /// over HTTP/2 streams, at least one per thread. Twice, because each connection keeps its own
    /// pace: with exactly rate x bound, one answer near the bound would hold the next request on
    /// its connection past its due time, and the client's queue would read as the server's.
    /// Poisson arrivals take any free connection, but bunch (`POOL_BURSTS`).
    pub fn connections_needed(&self, base: &LoadSpec, rate: f64) -> u32 {
        let bound_s = self.objective().longest_bound_us() as f64 / 1e6;
        let per_connection = if base.http2 { base.streams.max(1) } else { 1 };
        let in_flight = rate * bound_s;
        let bursts = match base.arrivals {
            Arrivals::Even => 0.0,
            Arrivals::Poisson => POOL_BURSTS * in_flight.sqrt(),
        };
        let needed = ((POOL_HEADROOM * in_flight + bursts) / f64::from(per_connection)).ceil();
        (needed.min(f64::from(u32::MAX)) as u32).max(base.threads.max(1))
    }

    /// The spec of a probe at `rate`: the caller's, open loop at that rate for the probe's
    /// length after the search's warm-up (and after every connection has answered once, so that
    /// no connect or handshake is in the window), draining after its end, with the connections it
    /// needs (or the pool's fixed ones), no more than the cap.
    pub fn probe_spec(&self, base: &LoadSpec, rate: f64, pool: Pool) -> LoadSpec {
        let connections = pool
            .fixed
            .unwrap_or_else(|| self.connections_needed(base, rate).min(pool.cap))
            .max(base.threads.max(1));
        LoadSpec {
            rate: Some(rate),
            stop: Stop::Duration(self.probe_length(rate).as_secs_f64()),
            warmup: self.settings().warmup.as_secs_f64(),
            // Without keep-alive every request connects: its setup is the measurement, unless
            // the caller warms up for what it means to measure (a first wave's TLS tickets).
            warmup_connections: base.keep_alive || base.warmup_connections,
            drain: true,
            connections,
            ..base.clone()
        }
    }

    /// What the objective judges of a probe's report.
    pub fn figures(&self, report: &Report) -> Figures {
        // Errors as `Report::error_share` counts them: answers with an unexpected status, and
        // every error, over both.
        let completed = report.requests.completed;
        let attempts = completed + report.errors_total;
        let succeeded = report
            .requests
            .succeeded
            .unwrap_or(report.status.s2xx)
            .min(completed);
        let l = &judged_latency(report);
        let offered = report.spec.rate.unwrap_or(0.0);
        let counted = l.count > 0;
        let at = |us: u64| counted.then_some(us);
        Figures {
            offered,
            // The offered rate the client kept up with: Poisson arrivals' own count strays.
            achieved: report
                .open_loop
                .as_ref()
                .map_or(0.0, |o| offered * o.sent_share),
            throughput: if report.duration_s > 0.0 {
                report.requests.answered as f64 / report.duration_s
            } else {
                0.0
            },
            requests: attempts,
            errors: attempts - succeeded,
            latency_us: [at(l.p50_us), at(l.p90_us), at(l.p99_us), at(l.p99_9_us)],
            connections: report.spec.connections,
            connections_short: report.spec.connections
                < self.connections_needed(&report.spec, offered),
            client_bound: client_bound(report),
        }
    }
}

/// The latencies a probe is judged by: its answers' and, at the age they had reached, its
/// requests still unanswered at its end (by their answer in the drain after it, their failure,
/// or the drain's end). Left out, those would flatter the tail of an overloaded
/// probe (the slowest are the likeliest to be still on their way); at their age they count no
/// more than the probe saw.
fn judged_latency(report: &Report) -> Summary {
    let (total, in_flight) = (&report.latency.total, &report.latency.in_flight);
    if in_flight.count == 0 || total.hdr.is_empty() || in_flight.hdr.is_empty() {
        return total.clone();
    }
    merge_histograms([total.hdr.as_str(), in_flight.hdr.as_str()])
        .map_or_else(|_| total.clone(), |h| Summary::of(&h))
}

/// The busiest engine thread was at least 90% busy or kept waiting for its CPU.
pub fn client_bound(report: &Report) -> bool {
    report
        .client
        .threads
        .iter()
        .any(|t| t.busy_share + t.waiting_share >= CLIENT_BOUND_SHARE)
}

/// Runs `search` to its end against `base` (until `stop` is set: then what was found so far),
/// each probe told to `on_probe` as it ends. The report is the probes at the capacity merged as
/// rounds (none met: those at the lowest rate probed), with the search's `capacity`. A probe that
/// cannot run is the error when it is the first (bad input); after that, the report of what was
/// found, ended early with the reason.
pub fn run_until(
    base: &LoadSpec,
    search: &mut Search,
    pool: Pool,
    stop: &AtomicBool,
    mut on_probe: impl FnMut(&Probe),
) -> Result<Report, Error> {
    let began = Instant::now();
    let mut reports: Vec<Report> = Vec::new();
    let mut aborted = None;
    while let Next::Probe(rate) = search.next() {
        let spec = search.probe_spec(base, rate, pool);
        let report = match crate::run_until(&spec, stop) {
            Ok(report) => report,
            Err(e) if reports.is_empty() || matches!(e.kind, ErrorKind::Panicked { .. }) => {
                return Err(e)
            }
            Err(e) => {
                aborted = Some(format!("a probe at {rate:.0} req/s could not run: {e}"));
                break;
            }
        };
        if let Some(why) = &report.aborted {
            // Stopped or ended early: this probe judges nothing.
            aborted = Some(why.clone());
            reports.push(report);
            break;
        }
        search.record(&search.figures(&report), began.elapsed());
        if let Some(probe) = search.outcome().probes.last() {
            on_probe(probe);
        }
        reports.push(report);
    }
    let capacity = search.outcome();
    let mut report = at_capacity(&capacity, &reports);
    report.aborted = aborted;
    report.capacity = Some(capacity);
    Ok(report)
}

/// The probes at the capacity (none: at the lowest rate probed) merged as rounds; `reports` holds
/// at least one, since a search always asks for a first probe.
fn at_capacity(capacity: &Capacity, reports: &[Report]) -> Report {
    let rate = capacity
        .rate
        .or_else(|| reports.iter().filter_map(|r| r.spec.rate).reduce(f64::min));
    let mut there: Vec<Report> = reports
        .iter()
        .filter(|r| r.spec.rate == rate)
        .cloned()
        .collect();
    if there.is_empty() {
        there.extend(reports.last().cloned());
    }
    Report::merge(&there[0].spec, &there, Parts::Sequential)
        .expect("a capacity search merges the probes it ran")
}

#[cfg(test)]
mod tests {
    use super::super::objective::Objective;
    use super::super::search::Settings;
    use super::*;
    use crate::report::LatencyReport;
    use crate::stats::{record_ns, Latencies};

    #[test]
    fn requests_in_flight_at_the_end_count_at_their_age() {
        // 990 answers in 2 ms, and 10 requests still unanswered after 50 ms: 1% of the probe.
        let mut l = Latencies::default();
        for _ in 0..990 {
            record_ns(&mut l.total, 2_000_000);
        }
        let mut report = Report::read_any(r#"{"schema": "httpbench-load/1"}"#).unwrap();
        report.spec.rate = Some(1000.0);
        report.requests.completed = 990;
        report.latency = LatencyReport::of(&l);
        let search =
            Search::new(Objective::parse("p99=10ms").unwrap(), Settings::default()).unwrap();
        assert_eq!(search.figures(&report).latency_us[2], Some(2_000));
        for _ in 0..11 {
            record_ns(&mut l.in_flight, 50_000_000);
        }
        report.latency = LatencyReport::of(&l);
        let p99 = search.figures(&report).latency_us[2].unwrap();
        assert!((49_000..51_000).contains(&p99), "{p99}");
    }
}
