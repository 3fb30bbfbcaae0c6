//! `Report::merge` against the engine itself: single-thread runs merged as concurrent parts must
//! keep the invariants a real run of as many threads keeps; runs merged as sequential parts (a
//! level's rounds) add their durations as well as their counts.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener};

mod common;

use httpbench_engine::report::{decode_histogram, Parts::Concurrent, Parts::Sequential};
use httpbench_engine::spec::Stop;
use httpbench_engine::{LoadSpec, Report};

/// A keep-alive server answering every request head with a two-byte body, on a thread per
/// connection; it lives as long as the test process.
fn serve() -> SocketAddr {
    serve_with(|_| b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
}

/// As `serve`, each connection's `n`th response (from 0) `answer(n)`.
fn serve_with(answer: fn(u64) -> &'static [u8]) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            std::thread::spawn(move || {
                let (mut buf, mut pending) = (vec![0u8; 16 * 1024], Vec::new());
                let mut answered = 0;
                while let Ok(n) = stream.read(&mut buf) {
                    if n == 0 {
                        break;
                    }
                    pending.extend_from_slice(&buf[..n]);
                    while let Some(end) = pending.windows(4).position(|w| w == b"\r\n\r\n") {
                        pending.drain(..end + 4);
                        if stream.write_all(answer(answered)).is_err() {
                            return;
                        }
                        answered += 1;
                    }
                }
            });
        }
    });
    addr
}

fn spec(addr: SocketAddr, connections: u32, threads: u32, requests: u64) -> LoadSpec {
    LoadSpec {
        urls: vec![format!("http://{addr}/")],
        connections,
        threads,
        stop: Stop::Requests(requests),
        ..LoadSpec::default()
    }
}

/// What every report, a run's or a merge's, must keep.
fn check_invariants(r: &Report, requests: u64, threads: usize) {
    let q = &r.requests;
    assert_eq!(q.sent, requests);
    assert_eq!(q.sent, q.completed + q.failed + q.in_flight);
    assert_eq!(r.status.s2xx, q.completed);
    assert_eq!(q.succeeded, Some(q.completed));
    assert_eq!(r.errors_total, r.errors.values().sum::<u64>());
    assert_eq!(r.latency.total.count, q.completed);
    assert_eq!(
        decode_histogram(&r.latency.total.hdr).unwrap().len(),
        q.completed
    );
    assert_eq!(
        r.timeseries.iter().map(|p| p.requests).sum::<u64>(),
        q.completed
    );
    assert_eq!(r.client.threads.len(), threads);
    // These pin the formulas of Requests::new and Client::new, which a run and a merge share.
    assert!((q.per_second - q.completed as f64 / r.duration_s).abs() < 1e-6 * q.per_second);
    assert!(
        (r.client.user_s + r.client.sys_s
            - r.client
                .threads
                .iter()
                .map(|t| t.user_s + t.sys_s)
                .sum::<f64>())
        .abs()
            < 1e-9
    );
    let cpu_us = (r.client.user_s + r.client.sys_s) * 1e6 / q.completed as f64;
    assert!((r.client.cpu_us_per_request - cpu_us).abs() < 1e-6 * cpu_us.max(1.0));
}

#[test]
fn merged_single_thread_runs_keep_a_multi_thread_runs_invariants() {
    const THREADS: u32 = 3;
    const PER_THREAD: u64 = 400;
    let addr = serve();
    let parts: Vec<Report> = (0..THREADS)
        .map(|_| httpbench_engine::run(&spec(addr, 2, 1, PER_THREAD)).unwrap())
        .collect();
    let whole = spec(addr, 2 * THREADS, THREADS, PER_THREAD * u64::from(THREADS));
    let merged = Report::merge(&whole, &parts, Concurrent).unwrap();
    let real = httpbench_engine::run(&whole).unwrap();
    for r in [&merged, &real] {
        check_invariants(r, PER_THREAD * u64::from(THREADS), THREADS as usize);
        assert_eq!((r.protocol.as_str(), &r.h2), ("http/1.1", &None));
    }
    // Merging adds: counts, the histogram's, and the parts' per-second requests second by second.
    assert_eq!(
        merged.duration_s,
        parts.iter().map(|r| r.duration_s).fold(0.0, f64::max)
    );
    assert_eq!(
        merged.latency.total.max_us,
        parts.iter().map(|r| r.latency.total.max_us).max().unwrap()
    );
    assert_eq!(
        merged.connections.opened,
        parts.iter().map(|r| r.connections.opened).sum::<u64>()
    );
    assert_eq!(
        merged.bytes.read,
        parts.iter().map(|r| r.bytes.read).sum::<u64>()
    );
    for point in &merged.timeseries {
        let at = |r: &Report| {
            r.timeseries
                .iter()
                .find(|p| p.second == point.second)
                .map_or(0, |p| p.requests)
        };
        assert_eq!(point.requests, parts.iter().map(at).sum::<u64>());
    }
    // One part merged is itself.
    let mut alone = Report::merge(&parts[0].spec, &parts[..1], Concurrent).unwrap();
    // A mean weighted back by its own count may be off by the last bit.
    let delay = parts[0].client.handling_delay_us;
    assert!((alone.client.handling_delay_us - delay).abs() <= 1e-9 * delay);
    alone.client.handling_delay_us = delay;
    assert_eq!(
        serde_json::to_value(&alone).unwrap(),
        serde_json::to_value(&parts[0]).unwrap()
    );
    assert!(Report::merge(&whole, &[], Concurrent).is_err());
}

#[test]
fn an_open_loop_that_falls_short_says_so_once_merged() {
    let addr = serve();
    let mut part = httpbench_engine::run(&LoadSpec {
        rate: Some(200.0),
        stop: Stop::Duration(0.3),
        ..spec(addr, 2, 1, 0)
    })
    .unwrap();
    let target = part.open_loop.as_ref().unwrap().target_rate;
    assert_eq!(target, 200.0);
    // The part meets its target by construction (a real 0.3 s run may fall just short); a part
    // that sent nothing of what was due halves the whole's share sent, and so does a part lost
    // (no report) of a run whose target was twice this part's.
    let due = (target * part.duration_s).ceil() as u64;
    part.requests.sent = due;
    part.open_loop.as_mut().unwrap().behind_schedule = 0;
    let mut idle = part.clone();
    idle.requests.sent = 0;
    idle.open_loop.as_mut().unwrap().behind_schedule = due;
    part.aborted = Some("stopped on request before the end".into());
    let alone = Report::merge(&part.spec, &[part.clone()], Concurrent).unwrap();
    let whole = LoadSpec {
        rate: Some(2.0 * target),
        ..part.spec.clone()
    };
    let merged = Report::merge(&whole, &[part.clone(), idle], Concurrent).unwrap();
    let o = merged.open_loop.unwrap();
    assert_eq!(o.target_rate, 2.0 * target);
    assert!(o.fell_short && !alone.open_loop.unwrap().fell_short);
    assert!((o.sent_share - 0.5).abs() < 1e-9, "{o:?}");
    let lost = Report::merge(&whole, &[part.clone()], Concurrent).unwrap();
    assert!((lost.open_loop.unwrap().sent_share - 0.5).abs() < 1e-9);
    assert_eq!(
        merged.aborted.as_deref(),
        Some("stopped on request before the end")
    );
}

/// Answers every read with `serve`'s response until the client closes the connection.
fn answer_each_read(tls: &mut common::Tls) {
    let mut buf = vec![0u8; 16 * 1024];
    while let Ok(n) = tls.read(&mut buf) {
        if n == 0
            || tls
                .write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
                .is_err()
        {
            return;
        }
    }
}

#[test]
fn tls_handshakes_and_their_latencies_add_up_when_merged() {
    let addr = common::serve_tls(&[], answer_each_read);
    let spec = LoadSpec {
        urls: vec![format!("https://localhost:{}/", addr.port())],
        keep_alive: false,
        validate: false,
        tls: httpbench_engine::spec::TlsSpec {
            cacert: Some(format!("{}ca.pem", common::TESTDATA).into()),
            ..Default::default()
        },
        ..spec(addr, 1, 1, 30)
    };
    let parts: Vec<Report> = (0..3)
        .map(|_| httpbench_engine::run(&spec).unwrap())
        .collect();
    for r in &parts {
        let tls = r.tls.as_ref().unwrap();
        // One connection at a time: the first handshake full, every later one resumed.
        assert_eq!((tls.handshakes_full, tls.handshakes_resumed), (1, 29));
        assert_eq!(r.latency.tls_handshake.count, 30);
        assert_eq!(r.latency.connect.count, 30);
    }
    let merged = Report::merge(&spec, &parts, Concurrent).unwrap();
    let tls = merged.tls.as_ref().unwrap();
    assert_eq!((tls.handshakes_full, tls.handshakes_resumed), (3, 87));
    assert!(tls.verified && tls.version.is_some() && tls.alpn.is_none());
    let mut added = decode_histogram(&parts[0].latency.tls_handshake.hdr).unwrap();
    for r in &parts[1..] {
        added
            .add(decode_histogram(&r.latency.tls_handshake.hdr).unwrap())
            .unwrap();
    }
    assert_eq!(
        decode_histogram(&merged.latency.tls_handshake.hdr).unwrap(),
        added
    );
    // A part of a plain run has no TLS; merged with one that has, the counts are the TLS part's.
    let mut plain = parts[0].clone();
    plain.tls = None;
    let mixed = Report::merge(&spec, &[plain, parts[1].clone()], Concurrent).unwrap();
    assert_eq!(mixed.tls.unwrap().handshakes_resumed, 29);
}

#[test]
fn rounds_merged_one_after_another_add_their_durations_as_well_as_their_counts() {
    let addr = serve();
    let spec = LoadSpec {
        stop: Stop::Duration(0.4),
        ..spec(addr, 2, 1, 0)
    };
    let mut rounds: Vec<Report> = (0..3)
        .map(|_| httpbench_engine::run(&spec).unwrap())
        .collect();
    rounds[1].errors.insert("timeout".into(), 2);
    rounds[1].errors_total += 2;
    let sum = |field: fn(&Report) -> u64| rounds.iter().map(field).sum::<u64>();
    let level = Report::merge(&spec, &rounds, Sequential).unwrap();
    let at_once = Report::merge(&spec, &rounds, Concurrent).unwrap();
    let durations: Vec<f64> = rounds.iter().map(|r| r.duration_s).collect();
    // The only difference between the two: time. Rounds last as long as they do together,
    // hosts as long as the longest.
    assert_eq!(level.duration_s, durations.iter().sum::<f64>());
    assert_eq!(
        at_once.duration_s,
        durations.iter().copied().fold(0.0, f64::max)
    );
    for merged in [&level, &at_once] {
        assert_eq!(merged.requests.completed, sum(|r| r.requests.completed));
        assert_eq!(merged.errors_total, sum(|r| r.errors_total));
        assert_eq!(merged.errors["timeout"], 2);
        assert_eq!(merged.connections.opened, sum(|r| r.connections.opened));
        assert_eq!(merged.latency.total.count, sum(|r| r.latency.total.count));
    }
    let rate = level.requests.completed as f64 / level.duration_s;
    assert!((level.requests.per_second - rate).abs() < 1e-9 * rate);
    // Each round's seconds after the previous rounds': every point kept, percentiles and all.
    let points: usize = rounds.iter().map(|r| r.timeseries.len()).sum();
    assert_eq!(level.timeseries.len(), points);
    assert!(level
        .timeseries
        .iter()
        .enumerate()
        .all(|(i, p)| p.second == i as u64));
    let kept: Vec<_> = rounds
        .iter()
        .flat_map(|r| &r.timeseries)
        .map(|p| p.p99_us)
        .collect();
    assert_eq!(
        level
            .timeseries
            .iter()
            .map(|p| p.p99_us)
            .collect::<Vec<_>>(),
        kept
    );
    assert!(at_once.timeseries.len() < points);
}

#[test]
fn a_round_without_histograms_merges_and_leaves_the_level_none() {
    let addr = serve();
    let engine = httpbench_engine::run(&spec(addr, 2, 1, 50)).unwrap();
    // As the suite stores a client tool's round: what the tool did not measure is null.
    let tool = serde_json::json!({
        "schema": "httpbench-load/1",
        "duration_s": 1.5,
        "requests": {"completed": 30, "per_second": 20.0},
        "status": {"2xx": 30},
        "errors": {"connect": 1},
        "errors_total": 1,
        "latency": {"total": {"p50_us": 900, "hdr": null}},
        "client": {"tool": "wrk"},
    });
    let tool = Report::read_any(&tool.to_string()).unwrap();
    let level = Report::merge(&engine.spec, &[engine.clone(), tool], Sequential).unwrap();
    assert_eq!(level.requests.completed, 80);
    assert_eq!((level.errors_total, level.errors["connect"]), (1, 1));
    assert_eq!(level.duration_s, engine.duration_s + 1.5);
    assert_eq!(
        (level.latency.total.hdr.as_str(), level.latency.total.count),
        ("", 0)
    );
    // Its other latencies neither: the tool timed no connect either.
    assert_eq!(level.latency.connect.hdr, "");
    // The engine's own report reads as serde reads it.
    let json = serde_json::to_string(&engine).unwrap();
    let strict: Report = serde_json::from_str(&json).unwrap();
    assert_eq!(
        serde_json::to_value(Report::read_any(&json).unwrap()).unwrap(),
        serde_json::to_value(strict).unwrap()
    );
}

#[test]
fn rounds_keep_their_succeeded_requests_exact_when_merged() {
    // Every fourth answer of a connection a 503: the first, the validation request's, is a 200.
    let addr = serve_with(|n| {
        if n % 4 == 3 {
            b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 2\r\n\r\nno"
        } else {
            b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
        }
    });
    let spec = spec(addr, 2, 1, 203);
    let rounds: Vec<Report> = (0..3)
        .map(|_| httpbench_engine::run(&spec).unwrap())
        .collect();
    for r in &rounds {
        let q = &r.requests;
        let unexpected = q.unexpected_statuses.get("503").copied().unwrap_or(0);
        assert!(unexpected > 40, "{:?}", q.unexpected_statuses);
        assert_eq!(q.succeeded, Some(q.completed - unexpected));
        assert_eq!(q.succeeded, Some(r.status.s2xx));
        let share = unexpected as f64 / q.completed as f64;
        assert!((r.error_share().unwrap() - share).abs() < 1e-12);
    }
    let sum = |field: fn(&Report) -> u64| rounds.iter().map(field).sum::<u64>();
    let level = Report::merge(&spec, &rounds, Sequential).unwrap();
    let q = &level.requests;
    assert_eq!(q.succeeded, Some(sum(|r| r.requests.succeeded.unwrap())));
    assert_eq!(
        q.unexpected_statuses["503"],
        sum(|r| r.requests.unexpected_statuses["503"])
    );
    let rate = q.succeeded.unwrap() as f64 / level.duration_s;
    assert!((q.succeeded_per_second.unwrap() - rate).abs() < 1e-9 * rate);
    // The share of the level is the share of its attempts, not the rounds' shares averaged.
    let mut with_errors = rounds.clone();
    with_errors[0].errors.insert("timeout".into(), 50);
    with_errors[0].errors_total += 50;
    let level = Report::merge(&spec, &with_errors, Sequential).unwrap();
    let failed = level.requests.completed - level.requests.succeeded.unwrap() + 50;
    let attempts = level.requests.completed + 50;
    assert_eq!(level.error_share(), Some(failed as f64 / attempts as f64));

    // A round stored before the field: its 2xx answers were its succeeded (every report then
    // expected any 2xx), and the level's count stays exact.
    let mut old = serde_json::to_value(&rounds[0]).unwrap();
    let requests = old["requests"].as_object_mut().unwrap();
    for field in ["succeeded", "succeeded_per_second", "unexpected_statuses"] {
        requests.remove(field);
    }
    old["spec"].as_object_mut().unwrap().remove("expect_status");
    let read = Report::read_any(&old.to_string()).unwrap();
    assert_eq!(read.requests.succeeded, rounds[0].requests.succeeded);
    assert_eq!(
        read.requests.succeeded_per_second,
        rounds[0].requests.succeeded_per_second
    );
    let level = Report::merge(&spec, &[read, rounds[1].clone()], Sequential).unwrap();
    assert_eq!(
        level.requests.succeeded,
        Some(rounds[0].requests.succeeded.unwrap() + rounds[1].requests.succeeded.unwrap())
    );
    // One that expected other statuses cannot be read so; nor a tool's that counted no 2xx (wrk):
    // the level does not know its succeeded, nor its share.
    old["spec"]["expect_status"] = serde_json::json!([200, 304]);
    assert_eq!(
        Report::read_any(&old.to_string())
            .unwrap()
            .requests
            .succeeded,
        None
    );
    let wrk = serde_json::json!({
        "duration_s": 1.0,
        "requests": {"completed": 30, "per_second": 30.0, "succeeded": null},
        "status": {"2xx": null, "non_2xx_3xx": 3},
    });
    let wrk = Report::read_any(&wrk.to_string()).unwrap();
    assert_eq!((wrk.requests.succeeded, wrk.error_share()), (None, None));
    let level = Report::merge(&spec, &[rounds[0].clone(), wrk], Sequential).unwrap();
    assert_eq!(level.requests.succeeded_per_second, None);
    assert_eq!(level.error_share(), None);
}

#[test]
fn a_run_that_answered_nothing_succeeded_in_nothing() {
    let addr = serve();
    let mut r = httpbench_engine::run(&spec(addr, 1, 1, 10)).unwrap();
    assert_eq!(r.error_share(), Some(0.0));
    r.requests.completed = 0;
    r.requests.succeeded = Some(0);
    r.errors_total = 0;
    assert_eq!(r.error_share(), Some(1.0));
}
