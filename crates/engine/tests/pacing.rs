//! When requests go. A warm-up of the connections is one request per connection, not a load:
//! connections that have answered wait for the slowest before measurement starts, so a server
//! asked for N requests over C connections sees N + C, as its access log will say; and every
//! connection is woken when it starts; without keep-alive, one that answered stays closed until
//! then. Poisson arrivals end with their budget whatever room the
//! connections have.

mod plain;

use std::time::Duration;

use httpbench_engine::spec::{Arrivals, Stop};
use httpbench_engine::LoadSpec;

/// `spec` run against a server whose first connection answers its first request `delay` late,
/// bounded: a run that does not end in 20 s fails. The report and the requests the server read.
fn run(delay: Duration, spec: LoadSpec) -> (httpbench_engine::Report, usize) {
    let (base, log) = plain::serve(delay);
    let r = plain::run(LoadSpec {
        urls: vec![format!("{base}/")],
        ..spec
    });
    // The connections are closed when the run returns; the server has counted what it read.
    let served = log.lock().unwrap().len();
    (r, served)
}

fn warmed(rate: Option<f64>, stop: Stop) -> (httpbench_engine::Report, usize) {
    run(
        Duration::from_millis(300),
        LoadSpec {
            connections: 4,
            rate,
            warmup_connections: true,
            stop,
            ..LoadSpec::default()
        },
    )
}

#[test]
fn a_closed_loop_sends_its_budget_and_one_warm_up_request_per_connection() {
    let (r, served) = warmed(None, Stop::Requests(200));
    assert_eq!(r.requests.completed, 200);
    assert_eq!(served, 200 + 4);
}

#[test]
fn an_open_loop_sends_nothing_while_it_waits_for_the_slowest_connection() {
    // At 1,000 req/s the 300 ms wait would hold about 300 requests of the schedule.
    let (r, served) = warmed(Some(1000.0), Stop::Requests(200));
    assert_eq!(r.requests.completed, 200);
    assert_eq!(served, 200 + 4);
}

#[test]
fn without_keep_alive_a_warmed_connection_stays_closed_until_measurement_starts() {
    // Each request its own connection: a connection that answered its warm-up reconnected at
    // once, so the first request of each came inside the window with its connect (and, over
    // TLS, its handshake) outside it: 17% of a TLS probe's requests here.
    let (even, poisson) = (Arrivals::Even, Arrivals::Poisson);
    for (rate, arrivals) in [(None, even), (Some(1000.0), even), (Some(1000.0), poisson)] {
        let (r, served) = run(
            Duration::ZERO,
            LoadSpec {
                connections: 4,
                rate,
                arrivals,
                keep_alive: false,
                warmup_connections: true,
                stop: Stop::Requests(40),
                ..LoadSpec::default()
            },
        );
        assert_eq!(
            (r.requests.completed, served),
            (40, 44),
            "{rate:?} {arrivals:?}"
        );
        // At the end, connections may connect for a budget others spent: up to 3 more.
        let connects = r.latency.connect.count;
        assert!(
            (40..44).contains(&connects),
            "{rate:?} {arrivals:?}: {connects} connects for 40 requests"
        );
    }
}

#[test]
fn every_connection_of_an_open_loop_is_woken_when_measurement_starts() {
    // 50 connections at 1,000 req/s: each one's alarm for its old place in the schedule is due
    // within a tick of the warm-up's end; one that rang before measurement started held, and
    // was lost for the run (600 req/s sent of 1,000) until it was woken for the start.
    let (r, _) = run(
        Duration::ZERO,
        LoadSpec {
            connections: 50,
            rate: Some(1000.0),
            warmup_connections: true,
            stop: Stop::Duration(1.0),
            ..LoadSpec::default()
        },
    );
    let o = r.open_loop.unwrap();
    assert!(o.sent_share > 0.97 && !o.fell_short, "{o:?}");
}

#[test]
fn poisson_arrivals_with_room_for_several_end_with_their_budget() {
    // Pipelines of 4: once the budget was spent with answers still out, a connection with room
    // was handed the next arrival, took nothing, and was handed it again, for ever.
    for pipeline in [1, 4] {
        let (r, served) = run(
            Duration::ZERO,
            LoadSpec {
                connections: 4,
                pipeline,
                rate: Some(400.0),
                arrivals: Arrivals::Poisson,
                stop: Stop::Requests(100),
                ..LoadSpec::default()
            },
        );
        assert_eq!(
            (r.requests.completed, served),
            (100, 100),
            "pipeline {pipeline}"
        );
    }
}

#[test]
fn a_drained_run_ends_once_its_answers_are_in() {
    // An answer that came in the wake-up straddling the end was dropped unread, and the drain
    // waited out the request timeout for it: 10 s after most capacity probes.
    for _ in 0..3 {
        let began = std::time::Instant::now();
        let (r, _) = run(
            Duration::ZERO,
            LoadSpec {
                connections: 200,
                rate: Some(16000.0),
                stop: Stop::Duration(0.5),
                warmup: 0.2,
                warmup_connections: true,
                drain: true,
                request_timeout: 8.0,
                ..LoadSpec::default()
            },
        );
        assert!(r.requests.completed > 2000, "{:?}", r.requests);
        assert!(
            began.elapsed() < Duration::from_secs(4),
            "{:?}",
            began.elapsed()
        );
    }
}

#[test]
fn arrivals_without_keep_alive_use_the_connections_their_warm_up_closed() {
    // Without keep-alive a connection that answered its warm-up stays closed until measurement
    // starts: arrivals must still reach it, though it was never seen to come free.
    for arrivals in [Arrivals::Even, Arrivals::Poisson] {
        let (r, _) = run(
            Duration::ZERO,
            LoadSpec {
                connections: 4,
                rate: Some(1000.0),
                arrivals,
                keep_alive: false,
                warmup_connections: true,
                stop: Stop::Duration(1.0),
                ..LoadSpec::default()
            },
        );
        let o = r.open_loop.unwrap();
        assert!(o.sent_share > 0.97 && !o.fell_short, "{arrivals:?}: {o:?}");
        // None failed (Poisson's count over 1 s varies by about 3%, and a burst at the end may
        // still be waiting for a connection).
        assert_eq!(r.requests.failed, 0, "{arrivals:?}: {:?}", r.requests);
    }
}

#[test]
fn a_drained_run_ages_its_unanswered_requests_to_their_answer() {
    // The first request is answered 1.5 s after it went, past the window's 0.5 s end: drained,
    // it is in flight at the age it reached, not at the window's end, as answers in the window
    // count at their whole latency.
    let (r, _) = run(
        Duration::from_millis(1500),
        LoadSpec {
            connections: 1,
            stop: Stop::Duration(0.5),
            drain: true,
            request_timeout: 5.0,
            ..LoadSpec::default()
        },
    );
    assert_eq!(r.requests.in_flight, 1, "{:?}", r.requests);
    assert!(
        r.requests.in_flight_age_max_us >= 1_500_000.0,
        "{:?}",
        r.requests
    );
    assert_eq!(r.latency.in_flight.count, 1);
}
