//! One report from the reports of a run's parts: its hosts' engines, run at once, or a level's
//! rounds, run one after another. Both add the same counters and histograms; they differ only in
//! how the parts' time adds up.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::{
    merge_histograms, Bytes, Client, Connections, Encoding, IdleConnections, LatencyReport,
    OpenLoop, Report, Requests, SizeClass, SlowClients, Status, Summary, Tally, Ticks, Tls, H2,
};
use crate::spec::LoadSpec;
use crate::stats::series::SecondPoint;

/// How the parts of a merge ran.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Parts {
    /// At once, as a run's hosts: the whole lasted as long as the longest part, and its
    /// per-second points are the parts' added second by second.
    Concurrent,
    /// One after another, as a level's rounds: the whole lasted as long as the parts together,
    /// and its per-second points are each part's after the previous parts' seconds.
    Sequential,
}

impl Report {
    /// One report of the run `spec` from the reports of its `parts`: counts added, histograms
    /// added (exact percentiles), the duration as `how` adds it up, every figure derived from
    /// those (rates, means, `fell_short`) computed again. Succeeded requests are added when every
    /// part counted them, else unknown (a wrk round's). A part without a histogram (a client
    /// tool's report, `hdr` empty) leaves the merge none either (`Summary::default`): the parts'
    /// percentiles do not add up. The spec, and so an open loop's target rate, is the whole
    /// run's, not the parts' shares added (which floating point may round off). Per-second points
    /// of concurrent parts are added by second; their percentiles survive only where one part had
    /// that second. What the parts share is taken from the first: its validation, engine and
    /// host (a caller merging hosts puts the hosts' own facts in their place); the client's
    /// threads are every part's, so a level's list each round's, and its busiest share is the
    /// busiest round's. A run adds up its threads with the same constructors, from what they
    /// measured in memory.
    pub fn merge(spec: &LoadSpec, parts: &[Report], how: Parts) -> Result<Report, String> {
        let first = parts.first().ok_or("no reports to merge")?;
        let sum = |field: fn(&Report) -> u64| parts.iter().map(field).sum::<u64>();
        let durations = parts.iter().map(|r| r.duration_s);
        let duration_s = match how {
            Parts::Concurrent => durations.fold(0.0, f64::max),
            Parts::Sequential => durations.sum(),
        };
        let requests = Requests::new(
            Tally {
                sent: sum(|r| r.requests.sent),
                completed: sum(|r| r.requests.completed),
                failed: sum(|r| r.requests.failed),
                in_flight: sum(|r| r.requests.in_flight),
                age_total_us: parts
                    .iter()
                    .map(|r| r.requests.in_flight_age_mean_us * r.requests.in_flight as f64)
                    .sum(),
                age_max_us: parts
                    .iter()
                    .map(|r| r.requests.in_flight_age_max_us)
                    .fold(0.0, f64::max),
                answered: sum(|r| r.requests.answered),
                retried: sum(|r| r.requests.retried),
                // Known only if every part knew its own.
                succeeded: parts.iter().map(|r| r.requests.succeeded).sum(),
                unexpected_statuses: added(parts.iter().map(|r| &r.requests.unexpected_statuses)),
            },
            duration_s,
        );
        let open_loop = spec.rate.map(|target| {
            let loops: Vec<&OpenLoop> = parts.iter().filter_map(|r| r.open_loop.as_ref()).collect();
            let behind = loops.iter().map(|o| o.behind_schedule).sum();
            let mut due = (requests.sent + behind) as f64;
            // Hosts that sent nothing back (lost) had their share of the target due too.
            let shares: f64 = loops.iter().map(|o| o.target_rate).sum();
            if how == Parts::Concurrent && shares > 0.0 {
                due *= (target / shares).max(1.0);
            }
            OpenLoop::new(target, requests.sent, duration_s, behind, due)
        });
        let errors = added(parts.iter().map(|r| &r.errors));
        let latency = |kind: fn(&LatencyReport) -> &Summary| {
            let hdrs: Vec<&str> = parts
                .iter()
                .map(|r| kind(&r.latency).hdr.as_str())
                .collect();
            if hdrs.contains(&"") {
                return Ok(Summary::default());
            }
            merge_histograms(hdrs).map(|h| Summary::of(&h))
        };
        let mut client = Client::new(
            parts
                .iter()
                .flat_map(|r| r.client.threads.iter().cloned())
                .collect(),
            requests.completed,
            parts
                .iter()
                .map(|r| r.client.handling_delay_us * r.requests.completed as f64)
                .sum(),
        );
        client.hostile_thread = super::hostile::merge_thread(
            &parts
                .iter()
                .map(|r| r.client.hostile_thread.as_ref())
                .collect::<Vec<_>>(),
            how,
        );
        let mut reasons: Vec<&str> = Vec::new();
        for reason in parts.iter().filter_map(|r| r.aborted.as_deref()) {
            if !reasons.contains(&reason) {
                reasons.push(reason);
            }
        }
        Ok(Report {
            schema: first.schema.clone(),
            engine: first.engine.clone(),
            protocol: first.protocol.clone(),
            spec: spec.clone(),
            validation: first.validation.clone(),
            started_at: parts
                .iter()
                .map(|r| r.started_at)
                .fold(f64::INFINITY, f64::min),
            duration_s,
            requests,
            open_loop,
            status: Status {
                s1xx: sum(|r| r.status.s1xx),
                s2xx: sum(|r| r.status.s2xx),
                s3xx: sum(|r| r.status.s3xx),
                s4xx: sum(|r| r.status.s4xx),
                s5xx: sum(|r| r.status.s5xx),
                other: sum(|r| r.status.other),
            },
            errors,
            errors_total: sum(|r| r.errors_total),
            bytes: Bytes {
                head: sum(|r| r.bytes.head),
                body: sum(|r| r.bytes.body),
                read: sum(|r| r.bytes.read),
                written: sum(|r| r.bytes.written),
            },
            encodings: merge_encodings(parts),
            connections: Connections {
                opened: sum(|r| r.connections.opened),
                server_closes: sum(|r| r.connections.server_closes),
            },
            tls: merge_tls(parts),
            h2: merge_h2(
                spec,
                &parts
                    .iter()
                    .filter_map(|r| r.h2.as_ref())
                    .collect::<Vec<_>>(),
            ),
            latency: LatencyReport {
                total: latency(|l| &l.total)?,
                first_byte: latency(|l| &l.first_byte)?,
                connect: latency(|l| &l.connect)?,
                tls_handshake: latency(|l| &l.tls_handshake)?,
                service: latency(|l| &l.service)?,
                in_flight: latency(|l| &l.in_flight)?,
            },
            classes: merge_classes(parts)?,
            timeseries: match how {
                Parts::Concurrent => add_series(parts),
                Parts::Sequential => follow_series(parts),
            },
            // A part without a fine series (a client tool's) leaves the whole none: added up
            // without it, the points would undercount.
            ticks: if parts.iter().all(|r| r.ticks.is_some()) {
                Ticks::merge(parts.iter().filter_map(|r| r.ticks.as_ref()))?
            } else {
                None
            },
            client,
            slow_clients: SlowClients::merge(
                &parts
                    .iter()
                    .map(|r| r.slow_clients.as_ref())
                    .collect::<Vec<_>>(),
                how,
            )?,
            idle_connections: IdleConnections::merge(
                &parts
                    .iter()
                    .map(|r| r.idle_connections.as_ref())
                    .collect::<Vec<_>>(),
                how,
            )?,
            aborted: (!reasons.is_empty()).then(|| reasons.join("; ")),
            host: first.host.clone(),
            // Parts are probes or hosts of one; the search that ran them adds its finding.
            capacity: None,
        })
    }
}

/// Counts by name, added name by name.
fn added<'a>(counts: impl Iterator<Item = &'a BTreeMap<String, u64>>) -> BTreeMap<String, u64> {
    let mut sum = BTreeMap::new();
    for (name, n) in counts.flatten() {
        *sum.entry(name.clone()).or_insert(0) += n;
    }
    sum
}

/// The parts' encodings added coding by coding.
fn merge_encodings(parts: &[Report]) -> BTreeMap<String, Encoding> {
    let mut sum: BTreeMap<String, Encoding> = BTreeMap::new();
    for (name, e) in parts.iter().flat_map(|r| &r.encodings) {
        let s = sum.entry(name.clone()).or_insert(Encoding {
            decoded_bytes: Some(0),
            ..Encoding::default()
        });
        s.answers += e.answers;
        s.bytes += e.bytes;
        s.decoded_bytes = s.decoded_bytes.zip(e.decoded_bytes).map(|(a, b)| a + b);
    }
    sum
}

/// The parts' TLS: what the first that negotiated something negotiated (hosts of one run offer
/// the same), handshakes added; verified only if every part verified.
fn merge_tls(parts: &[Report]) -> Option<Tls> {
    let tls: Vec<&Tls> = parts.iter().filter_map(|r| r.tls.as_ref()).collect();
    let first = tls.iter().find(|t| t.version.is_some()).or(tls.first())?;
    Some(Tls {
        verified: tls.iter().all(|t| t.verified),
        handshakes_full: tls.iter().map(|t| t.handshakes_full).sum(),
        handshakes_resumed: tls.iter().map(|t| t.handshakes_resumed).sum(),
        ..(*first).clone()
    })
}

/// The parts' HTTP/2 figures: the whole spec's streams, the smallest grant, the rest added.
fn merge_h2(spec: &LoadSpec, h2: &[&H2]) -> Option<H2> {
    if h2.is_empty() {
        return None;
    }
    let resets = added(h2.iter().map(|h| &h.resets));
    Some(H2 {
        streams_requested: spec.streams,
        streams_granted: h2.iter().filter_map(|h| h.streams_granted).min(),
        goaways: h2.iter().map(|h| h.goaways).sum(),
        resets,
        refused_streams: h2.iter().map(|h| h.refused_streams).sum(),
        goaway_streams_moved: h2.iter().map(|h| h.goaway_streams_moved).sum(),
        frame_bytes: h2.iter().map(|h| h.frame_bytes).sum(),
    })
}

/// The parts' size classes added class by class (the parts of one spec have the same classes),
/// their histograms exactly; a class that a part has no histogram of (a client tool's part, with
/// no classes) has none.
fn merge_classes(parts: &[Report]) -> Result<Vec<SizeClass>, String> {
    let classes = parts.iter().map(|r| r.classes.len()).max().unwrap_or(0);
    (0..classes)
        .map(|i| {
            let class: Vec<&SizeClass> = parts.iter().filter_map(|r| r.classes.get(i)).collect();
            let hdrs: Vec<&str> = class.iter().map(|c| c.latency.hdr.as_str()).collect();
            let latency = if class.len() < parts.len() || hdrs.contains(&"") {
                Summary::default()
            } else {
                Summary::of(&merge_histograms(hdrs)?)
            };
            Ok(SizeClass {
                requests: class.iter().map(|c| c.requests).sum(),
                bytes: class.iter().map(|c| c.bytes).sum(),
                latency,
                ..class[0].clone()
            })
        })
        .collect()
}

/// Points added by second; a second that several parts had keeps no percentiles.
fn add_series(parts: &[Report]) -> Vec<SecondPoint> {
    let mut seconds: BTreeMap<u64, (SecondPoint, usize)> = BTreeMap::new();
    for p in parts.iter().flat_map(|r| &r.timeseries) {
        seconds
            .entry(p.second)
            .and_modify(|(sum, parts)| {
                sum.requests += p.requests;
                sum.errors += p.errors;
                *parts += 1;
            })
            .or_insert_with(|| (p.clone(), 1));
    }
    seconds
        .into_values()
        .map(|(p, parts)| {
            if parts == 1 {
                p
            } else {
                SecondPoint {
                    p50_us: None,
                    p99_us: None,
                    ..p
                }
            }
        })
        .collect()
}

/// Each part's points after the seconds of the parts before it, percentiles and all: no second
/// is shared.
fn follow_series(parts: &[Report]) -> Vec<SecondPoint> {
    let mut series: Vec<SecondPoint> = Vec::new();
    for r in parts {
        let offset = series.last().map_or(0, |p| p.second + 1);
        series.extend(r.timeseries.iter().map(|p| SecondPoint {
            second: offset + p.second,
            ..p.clone()
        }));
    }
    series
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::H2Counters;

    #[test]
    fn size_classes_add_up_class_by_class_with_exact_percentiles() {
        use crate::stats::sizes::SizeClasses;
        let bounds = [100];
        let counted = |latencies_ms: std::ops::Range<u64>| {
            let mut c = SizeClasses::default();
            for ms in latencies_ms {
                c.record(&bounds, 50, ms * 1_000_000);
            }
            c.record(&bounds, 500, 7_000_000);
            c
        };
        let (a, b) = (counted(1..11), counted(100..300));
        let part = |c: &SizeClasses| {
            let mut r = Report::read_any(r#"{"schema": "httpbench-load/1"}"#).unwrap();
            r.classes = SizeClass::of(&bounds, c);
            r
        };
        let spec = LoadSpec {
            size_classes: bounds.to_vec(),
            ..LoadSpec::default()
        };
        let merged = Report::merge(&spec, &[part(&a), part(&b)], Parts::Concurrent).unwrap();
        let mut threads = a.clone();
        threads.add(&b);
        // Hosts add up as threads do: the same classes, counts and percentiles.
        let direct = SizeClass::of(&bounds, &threads);
        let figures = |c: &[SizeClass]| -> Vec<(u64, Option<u64>, u64, u64, u64, u64)> {
            c.iter()
                .map(|c| {
                    let l = &c.latency;
                    (
                        c.bytes_from,
                        c.bytes_to,
                        c.requests,
                        c.bytes,
                        l.p50_us,
                        l.p99_us,
                    )
                })
                .collect()
        };
        assert_eq!(figures(&merged.classes), figures(&direct));
        let (small, large) = (&merged.classes[0], &merged.classes[1]);
        assert_eq!(
            (small.requests, small.bytes, small.bytes_to),
            (210, 10_500, Some(100))
        );
        assert_eq!(
            (large.requests, large.bytes, large.bytes_to),
            (2, 1_000, None)
        );
        assert!(small.latency.p50_us > 100_000 && (7_000..7_010).contains(&large.latency.p50_us));
        // A part without classes (a client tool's) leaves counts but no percentiles.
        let tool = Report::read_any(r#"{"schema": "httpbench-load/1"}"#).unwrap();
        let merged = Report::merge(&spec, &[tool, part(&a)], Parts::Sequential).unwrap();
        assert_eq!(merged.classes[0].requests, 10);
        assert!(merged.classes[0].latency.hdr.is_empty());
    }

    #[test]
    fn a_part_that_completed_nothing_keeps_the_classes_percentiles() {
        use crate::stats::sizes::SizeClasses;
        let bounds = [100];
        let part = |c: &SizeClasses| {
            let mut r = Report::read_any(r#"{"schema": "httpbench-load/1"}"#).unwrap();
            r.classes = SizeClass::of(&bounds, c);
            r
        };
        let mut answered = SizeClasses::default();
        for ms in 1..=10 {
            answered.record(&bounds, 50, ms * 1_000_000);
        }
        answered.record(&bounds, 500, 7_000_000);
        let spec = LoadSpec {
            size_classes: bounds.to_vec(),
            ..LoadSpec::default()
        };
        // A host or round with more threads than requests: one part answered nothing.
        let parts = [part(&SizeClasses::default()), part(&answered)];
        for how in [Parts::Concurrent, Parts::Sequential] {
            let merged = Report::merge(&spec, &parts, how).unwrap();
            assert_eq!(merged.classes.len(), 2);
            let (small, large) = (&merged.classes[0], &merged.classes[1]);
            assert_eq!((small.requests, large.requests), (10, 1));
            assert_eq!((small.latency.count, large.latency.count), (10, 1));
            assert!((5_000..6_100).contains(&small.latency.p50_us), "{small:?}");
            assert!(
                (10_000..10_100).contains(&small.latency.p99_us),
                "{small:?}"
            );
            assert!(!large.latency.hdr.is_empty() && large.latency.p99_us >= 7_000);
        }
    }

    #[test]
    fn h2_figures_name_reset_codes_and_merge_exactly() {
        let mut a = H2Counters::default();
        a.granted(u32::MAX);
        assert_eq!(a.streams_granted, None);
        a.granted(100);
        a.reset(0x8);
        a.reset(0x8);
        a.reset(0x7f);
        a.goaways = 2;
        a.refused_streams = 4;
        a.goaway_streams_moved = 2;
        a.frame_bytes = 90;
        let mut b = H2Counters::default();
        b.granted(128);
        b.granted(64);
        b.reset(0x8);
        b.reset(0x1);
        b.goaways = 1;
        b.refused_streams = 3;
        b.frame_bytes = 10;
        // A part that heard no limit: it lowers no grant.
        let c = H2Counters {
            frame_bytes: 5,
            ..H2Counters::default()
        };
        // Parts that asked for other streams than the spec's (4 and 16 against 8): the merge
        // says the spec's, not the first's nor the largest.
        let (ha, hb, hc) = (H2::of(4, &a), H2::of(16, &b), H2::of(8, &c));
        assert_eq!(ha.streams_granted, Some(100));
        assert_eq!(
            ha.resets,
            BTreeMap::from([("CANCEL".into(), 2), ("unknown".into(), 1)])
        );
        // The spec's streams (not the parts' added nor any part's), the smallest grant (not the
        // first's nor the largest), every counter added, resets code by code: sums, where a max
        // would give 2 GOAWAYs, 4 refused and 2 CANCELs.
        let merged = H2 {
            streams_requested: 8,
            streams_granted: Some(64),
            goaways: 3,
            resets: BTreeMap::from([
                ("CANCEL".into(), 3),
                ("PROTOCOL_ERROR".into(), 1),
                ("unknown".into(), 1),
            ]),
            refused_streams: 7,
            goaway_streams_moved: 2,
            frame_bytes: 105,
        };
        let spec = LoadSpec {
            http2: true,
            streams: 8,
            ..LoadSpec::default()
        };
        assert_eq!(merge_h2(&spec, &[&ha, &hb, &hc]), Some(merged.clone()));
        assert_eq!(merge_h2(&spec, &[&hc, &hb, &ha]), Some(merged.clone()));
        assert_eq!(merge_h2(&spec, &[&hc]).unwrap().streams_granted, None);
        assert_eq!(merge_h2(&spec, &[]), None);
        // Threads add up as hosts do.
        let mut threads = a.clone();
        threads.add(&b);
        threads.add(&c);
        assert_eq!(H2::of(8, &threads), merged);
    }

    #[test]
    fn encodings_add_up_coding_by_coding_as_threads_do() {
        use crate::http::coding::{Coding, CodingTally};
        let mut a = CodingTally::default();
        a.record(Coding::Br, 300, Some(900));
        a.record(Coding::Identity, 1_000, None);
        a.record(Coding::Gzip, 100, None);
        let mut b = CodingTally::default();
        b.record(Coding::Br, 200, Some(700));
        b.record(Coding::Gzip, 400, Some(1_000));
        let part = |t: &CodingTally| {
            let mut r = Report::read_any(r#"{"schema": "httpbench-load/1"}"#).unwrap();
            r.encodings = Encoding::of(t);
            r
        };
        let spec = LoadSpec::default();
        let merged = Report::merge(&spec, &[part(&a), part(&b)], Parts::Sequential).unwrap();
        let mut threads = a;
        threads.add(&b);
        assert_eq!(merged.encodings, Encoding::of(&threads));
        assert_eq!(
            merged.encodings["br"],
            Encoding {
                answers: 2,
                bytes: 500,
                decoded_bytes: Some(1_600)
            }
        );
        // A part that did not know a gzip answer's decoded length: the sum does not either.
        assert_eq!(merged.encodings["gzip"].decoded_bytes, None);
        assert_eq!(merged.encodings.len(), 3);
    }
}
