//! An access log's order: "replay" sends the log's URLs in its sequence, "timed" at its times
//! sped up. A server that writes down each request's path, as an access log would, shows both.

mod plain;

use std::time::Duration;

use httpbench_engine::spec::{Order, Stop};
use httpbench_engine::LoadSpec;

/// `spec` run against /a, /b and /c of a server that logs paths, bounded to 20 s: the report
/// and the paths in the order the server read them.
fn run(spec: LoadSpec) -> (httpbench_engine::Report, Vec<String>) {
    let (base, log) = plain::serve(Duration::ZERO);
    let r = plain::run(LoadSpec {
        urls: ["a", "b", "c"].map(|p| format!("{base}/{p}")).to_vec(),
        ..spec
    });
    let paths = log.lock().unwrap().clone();
    (r, paths)
}

fn paths(sequence: &[u32], n: usize) -> Vec<String> {
    let name = ["/a", "/b", "/c"];
    (0..n)
        .map(|k| name[sequence[k % sequence.len()] as usize].to_string())
        .collect()
}

#[test]
fn replay_sends_the_sequence_in_order_looping() {
    let sequence = vec![2, 0, 1, 1, 0, 2, 2];
    let (r, got) = run(LoadSpec {
        connections: 1,
        order: Order::Replay,
        sequence: Some(sequence.clone()),
        stop: Stop::Requests(17),
        ..LoadSpec::default()
    });
    assert_eq!(r.requests.completed, 17);
    assert_eq!(got, paths(&sequence, 17));
}

#[test]
fn replay_over_connections_sends_each_entry_once_a_loop() {
    // 2 threads take the even and the odd entries, each sending the log's mix every loop: 160
    // requests are 20 loops of 8, give or take a loop where the threads got out of step.
    let sequence = vec![0, 0, 0, 0, 1, 1, 2, 2];
    let (_, got) = run(LoadSpec {
        connections: 4,
        threads: 2,
        order: Order::Replay,
        sequence: Some(sequence),
        stop: Stop::Requests(160),
        ..LoadSpec::default()
    });
    let count = |p: &str| got.iter().filter(|g| *g == p).count();
    assert_eq!(got.len(), 160);
    assert!(count("/a").abs_diff(80) <= 8, "{got:?}");
    assert!(count("/b").abs_diff(40) <= 8 && count("/c").abs_diff(40) <= 8);
}

#[test]
fn timed_sends_the_log_at_its_times_sped_up() {
    // A log of 3 requests 0.5 s apart at speed 10: one every 50 ms, looping every 150 ms (the
    // last and one mean gap). 0.6 s sends 12, give or take the edges of the window.
    let sequence = vec![1, 2, 0];
    let (r, got) = run(LoadSpec {
        connections: 2,
        order: Order::Timed,
        sequence: Some(sequence.clone()),
        offsets: Some(vec![0.0, 0.5, 1.0]),
        speed: 10.0,
        stop: Stop::Duration(0.6),
        ..LoadSpec::default()
    });
    assert!((9..=14).contains(&got.len()), "{got:?}");
    // 50 ms apart, the entries reach the server in the log's order.
    assert_eq!(got, paths(&sequence, got.len()));
    assert!(r.requests.completed >= 9);
}

#[test]
fn timed_over_threads_sends_each_entry_once() {
    // 2 threads take the even and the odd entries: together every entry, once a loop.
    let (_, got) = run(LoadSpec {
        connections: 2,
        threads: 2,
        order: Order::Timed,
        sequence: Some(vec![0, 1, 2]),
        offsets: Some(vec![0.0, 0.5, 1.0]),
        speed: 10.0,
        stop: Stop::Duration(0.6),
        ..LoadSpec::default()
    });
    assert!((9..=14).contains(&got.len()), "{got:?}");
    for p in ["/a", "/b", "/c"] {
        let n = got.iter().filter(|g| *g == p).count();
        assert!(n.abs_diff(got.len() / 3) <= 1, "{got:?}");
    }
}
