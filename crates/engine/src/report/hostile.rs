//! What the clients beside the load saw: the slow clients' connections and the idle ones, with
//! their per-second states, merged as the rest of a report is (threads, hosts, rounds).

use std::collections::BTreeMap;

use hdrhistogram::Histogram;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{merge_histograms, Parts};

/// Durations in milliseconds, with their histogram for exact merging.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Millis {
    pub count: u64,
    /// 0 when there are none (so too `max`).
    pub p50: u64,
    pub max: u64,
    /// The HdrHistogram of the milliseconds, V2 compressed encoding in base64, as `Summary::hdr`.
    pub hdr: String,
}

impl Millis {
    pub fn of(h: &Histogram<u64>) -> Millis {
        let s = super::Summary::of(h);
        Millis {
            count: s.count,
            p50: s.p50_us,
            max: s.max_us,
            hdr: s.hdr,
        }
    }

    fn merge<'a>(parts: impl Iterator<Item = &'a Millis>) -> Result<Millis, String> {
        merge_histograms(parts.map(|m| m.hdr.as_str())).map(|h| Millis::of(&h))
    }
}

/// The connections of one kind in one second: as slowhttptest draws them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct StatePoint {
    /// Seconds from the start of the measured window (negative before it: these connections
    /// open before the load's warm-up).
    pub second: i64,
    /// Connecting: TCP (SYN sent, no SYN-ACK yet: a connection waiting in the server's listen
    /// queue is connected from the client's side) or the TLS handshake; idle connections also
    /// while their first request is unanswered, slow ones over h2 until the server's SETTINGS.
    pub pending: u64,
    /// Open and held.
    pub connected: u64,
    /// Closed by the server so far (a running total).
    pub closed: u64,
}

/// The slow clients beside the load (the spec's `slow`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SlowClients {
    /// "headers", "body" or "read".
    pub mode: String,
    /// Connections asked for (the spec's `slow.clients`).
    pub connections: u64,
    /// Connections opened over the run (TCP, and the TLS handshake over https), reopenings
    /// included.
    pub opened: u64,
    /// Connects (or TLS handshakes) that failed.
    pub failed: u64,
    /// Open when the load ended.
    pub held: u64,
    /// Connections the server closed (FIN or reset) while the client still trickled.
    pub cut_by_server: u64,
    /// How long each of those had been open when the server closed it.
    pub cut_after_ms: Millis,
    /// Answers the server sent on them (an error such as 408 or 400, or, slow read, the whole
    /// answer): it gave up on the request, or had it whole.
    pub answered: u64,
    /// Connections the client closed at the spec's `slow.hold`, and opened again.
    pub expired: u64,
    /// The connections' states each second, from their opening to the load's end.
    pub series: Vec<StatePoint>,
}

/// The idle connections beside the load (the spec's `idle`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct IdleConnections {
    /// Connections asked for (the spec's `idle.connections`).
    pub asked: u64,
    /// Those that were opened and had their first request answered (before the load).
    pub opened: u64,
    /// Still open when the load ended.
    pub held: u64,
    /// Closed by the server (FIN or reset).
    pub closed_by_server: u64,
    /// How long each of those had been idle (since its last answer) when the server closed it.
    pub closed_after_ms: Millis,
    /// Requests sent to keep them alive (the spec's `idle.ping`), counted apart from the load's.
    pub pings: u64,
    /// Of those, the ones not answered with a status of the spec's `expect_status` (any 2xx
    /// without it), the connection closed while one was unanswered included.
    pub pings_failed: u64,
    /// Their states each second, from their opening to the load's end.
    pub series: Vec<StatePoint>,
}

/// The parts' per-second states: added second by second (concurrent parts), or each part's after
/// the previous parts' (sequential).
fn merge_series<'a>(parts: impl Iterator<Item = &'a [StatePoint]>, how: Parts) -> Vec<StatePoint> {
    match how {
        Parts::Concurrent => {
            let mut seconds: BTreeMap<i64, StatePoint> = BTreeMap::new();
            for p in parts.flatten() {
                let sum = seconds.entry(p.second).or_insert(StatePoint {
                    second: p.second,
                    pending: 0,
                    connected: 0,
                    closed: 0,
                });
                sum.pending += p.pending;
                sum.connected += p.connected;
                sum.closed += p.closed;
            }
            seconds.into_values().collect()
        }
        Parts::Sequential => {
            let mut series: Vec<StatePoint> = Vec::new();
            for part in parts {
                let (Some(first), Some(last)) = (part.first(), series.last()) else {
                    series.extend_from_slice(part);
                    continue;
                };
                let offset = last.second + 1 - first.second;
                series.extend(part.iter().map(|p| StatePoint {
                    second: p.second + offset,
                    ..p.clone()
                }));
            }
            series
        }
    }
}

/// Connections asked for (or opened) beside the load, merged: hosts share them out, so theirs
/// add; each round opens its own, so the level asked what a round asked, not their sum.
fn asked<T>(parts: &[&T], how: Parts, field: fn(&T) -> u64) -> u64 {
    let each = parts.iter().map(|p| field(p));
    match how {
        Parts::Concurrent => each.sum(),
        Parts::Sequential => each.max().unwrap_or(0),
    }
}

/// Connections held beside the load, merged: hosts' add; each round holds its own, so the level
/// held what its worst round held.
fn held<T>(parts: &[&T], how: Parts, field: fn(&T) -> u64) -> u64 {
    let each = parts.iter().map(|p| field(p));
    match how {
        Parts::Concurrent => each.sum(),
        Parts::Sequential => each.min().unwrap_or(0),
    }
}

impl SlowClients {
    /// The parts' slow clients as one (None if no part had any).
    pub fn merge(
        parts: &[Option<&SlowClients>],
        how: Parts,
    ) -> Result<Option<SlowClients>, String> {
        let slow: Vec<&SlowClients> = parts.iter().flatten().copied().collect();
        let Some(first) = slow.first() else {
            return Ok(None);
        };
        let sum = |field: fn(&SlowClients) -> u64| slow.iter().map(|s| field(s)).sum::<u64>();
        Ok(Some(SlowClients {
            mode: first.mode.clone(),
            connections: asked(&slow, how, |s| s.connections),
            opened: sum(|s| s.opened),
            failed: sum(|s| s.failed),
            held: held(&slow, how, |s| s.held),
            cut_by_server: sum(|s| s.cut_by_server),
            cut_after_ms: Millis::merge(slow.iter().map(|s| &s.cut_after_ms))?,
            answered: sum(|s| s.answered),
            expired: sum(|s| s.expired),
            series: merge_series(slow.iter().map(|s| s.series.as_slice()), how),
        }))
    }
}

impl IdleConnections {
    /// The parts' idle connections as one (None if no part had any).
    pub fn merge(
        parts: &[Option<&IdleConnections>],
        how: Parts,
    ) -> Result<Option<IdleConnections>, String> {
        let idle: Vec<&IdleConnections> = parts.iter().flatten().copied().collect();
        if idle.is_empty() {
            return Ok(None);
        }
        let sum = |field: fn(&IdleConnections) -> u64| idle.iter().map(|s| field(s)).sum::<u64>();
        Ok(Some(IdleConnections {
            asked: asked(&idle, how, |s| s.asked),
            opened: asked(&idle, how, |s| s.opened),
            held: held(&idle, how, |s| s.held),
            closed_by_server: sum(|s| s.closed_by_server),
            closed_after_ms: Millis::merge(idle.iter().map(|s| &s.closed_after_ms))?,
            pings: sum(|s| s.pings),
            pings_failed: sum(|s| s.pings_failed),
            series: merge_series(idle.iter().map(|s| s.series.as_slice()), how),
        }))
    }
}

/// The parts' threads of clients beside the load as one: CPU added, wall time as the parts ran.
pub fn merge_thread(parts: &[Option<&super::ThreadUse>], how: Parts) -> Option<super::ThreadUse> {
    let threads: Vec<&super::ThreadUse> = parts.iter().flatten().copied().collect();
    if threads.is_empty() {
        return None;
    }
    let sum = |field: fn(&super::ThreadUse) -> f64| threads.iter().map(|t| field(t)).sum::<f64>();
    let wall_s = match how {
        Parts::Concurrent => threads.iter().map(|t| t.wall_s).fold(0.0, f64::max),
        Parts::Sequential => sum(|t| t.wall_s),
    };
    Some(super::ThreadUse::new(
        None,
        sum(|t| t.user_s),
        sum(|t| t.sys_s),
        sum(|t| t.waiting_share * t.wall_s),
        wall_s,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::Report;
    use crate::spec::LoadSpec;

    fn slow(cut_ms: &[u64], held: u64, series: &[(i64, u64)]) -> SlowClients {
        let mut h = crate::stats::histogram();
        for &ms in cut_ms {
            h.record(ms).unwrap();
        }
        SlowClients {
            mode: "headers".into(),
            connections: 10,
            opened: 10 + cut_ms.len() as u64,
            failed: 1,
            held,
            cut_by_server: cut_ms.len() as u64,
            cut_after_ms: Millis::of(&h),
            answered: 0,
            expired: 0,
            series: series
                .iter()
                .map(|&(second, connected)| StatePoint {
                    second,
                    pending: 0,
                    connected,
                    closed: 0,
                })
                .collect(),
        }
    }

    /// Reports of two parts, the first with slow clients and idle connections, the second
    /// with slow clients only.
    fn parts() -> Vec<Report> {
        let part = |s: SlowClients, idle: bool| {
            let mut r = Report::read_any(r#"{"schema": "httpbench-load/1"}"#).unwrap();
            r.slow_clients = Some(s);
            r.idle_connections = idle.then(|| IdleConnections {
                asked: 5,
                opened: 5,
                held: 4,
                closed_by_server: 1,
                closed_after_ms: Millis::of(&crate::stats::histogram()),
                pings: 2,
                pings_failed: 0,
                series: Vec::new(),
            });
            r
        };
        vec![
            part(slow(&[100, 300], 8, &[(-1, 5), (0, 8)]), true),
            part(slow(&[200], 9, &[(-1, 2), (0, 9), (1, 9)]), false),
        ]
    }

    #[test]
    fn hosts_add_up_second_by_second_with_exact_percentiles() {
        let merged = Report::merge(&LoadSpec::default(), &parts(), Parts::Concurrent).unwrap();
        let s = merged.slow_clients.unwrap();
        assert_eq!(
            (s.connections, s.held, s.cut_by_server, s.failed),
            (20, 17, 3, 2)
        );
        assert_eq!(
            (s.cut_after_ms.count, s.cut_after_ms.p50, s.cut_after_ms.max),
            (3, 200, 300)
        );
        let connected: Vec<(i64, u64)> = s.series.iter().map(|p| (p.second, p.connected)).collect();
        assert_eq!(connected, [(-1, 7), (0, 17), (1, 9)]);
        let idle = merged.idle_connections.unwrap();
        assert_eq!((idle.asked, idle.held, idle.pings), (5, 4, 2));
    }

    #[test]
    fn rounds_follow_one_another() {
        let merged = Report::merge(&LoadSpec::default(), &parts(), Parts::Sequential).unwrap();
        let s = merged.slow_clients.unwrap();
        // Each round asked for the spec's, and held what it held: the level, its worst round's.
        assert_eq!((s.connections, s.held, s.cut_by_server), (10, 8, 3));
        let seconds: Vec<i64> = s.series.iter().map(|p| p.second).collect();
        assert_eq!(seconds, [-1, 0, 1, 2, 3]);
        // A part without slow clients leaves them out of neither kind of merge.
        let none = Report::read_any(r#"{"schema": "httpbench-load/1"}"#).unwrap();
        let merged = Report::merge(&LoadSpec::default(), &[none], Parts::Sequential).unwrap();
        assert!(merged.slow_clients.is_none() && merged.idle_connections.is_none());
    }
}
