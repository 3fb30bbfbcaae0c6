//! An access log's order: "replay" sends the log's URLs in its sequence, "timed" at its times
//! sped up. A server that writes down each request's path, as an access log would, shows both.

use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use httpbench_engine::spec::{Order, Stop};
use httpbench_engine::LoadSpec;

type Log = Arc<Mutex<Vec<String>>>;

/// Answers every request on `io` with a 7-byte 200, its path written down first.
fn answer(io: TcpStream, log: &Log) {
    let mut reader = BufReader::new(io.try_clone().unwrap());
    let mut writer = io;
    let mut line = String::new();
    loop {
        line.clear();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        let path = line.split(' ').nth(1).unwrap_or("").to_string();
        while line != "\r\n" {
            line.clear();
            if reader.read_line(&mut line).unwrap_or(0) == 0 {
                return;
            }
        }
        log.lock().unwrap().push(path);
        let ok = b"HTTP/1.1 200 OK\r\nContent-Length: 7\r\n\r\nhello!\n";
        if writer.write_all(ok).is_err() {
            return;
        }
    }
}

/// `spec` run against /a, /b and /c of a server that logs paths, bounded to 20 s: the report
/// and the paths in the order the server read them.
fn run(spec: LoadSpec) -> (httpbench_engine::Report, Vec<String>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let log: Log = Arc::default();
    let written = log.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(stream) = stream else { continue };
            let written = written.clone();
            std::thread::spawn(move || answer(stream, &written));
        }
    });
    let spec = LoadSpec {
        urls: ["a", "b", "c"].map(|p| format!("{base}/{p}")).to_vec(),
        validate: false,
        ..spec
    };
    let (done, report) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = done.send(httpbench_engine::run(&spec).unwrap());
    });
    let r = report
        .recv_timeout(Duration::from_secs(20))
        .expect("the run ended");
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

#[test]
fn order_refusals_are_one_line() {
    let spec = |f: &dyn Fn(&mut LoadSpec)| {
        let mut s = LoadSpec {
            urls: vec!["http://127.0.0.1:1/a".into(), "http://127.0.0.1:1/b".into()],
            ..Default::default()
        };
        f(&mut s);
        s.resolve().map(|_| ()).map_err(|e| e.to_string())
    };
    let timed = |s: &mut LoadSpec| {
        s.order = Order::Timed;
        s.sequence = Some(vec![0, 1]);
        s.offsets = Some(vec![0.0, 1.0]);
    };
    assert!(spec(&timed).is_ok());
    for (bad, says) in [
        (
            &(|s: &mut LoadSpec| s.sequence = Some(vec![0])) as &dyn Fn(&mut LoadSpec),
            "sequence is sent only with order",
        ),
        (&|s| s.order = Order::Replay, "needs sequence"),
        (
            &|s| {
                s.order = Order::Replay;
                s.sequence = Some(vec![0, 2]);
            },
            "names URL 2, but there are 2 URLs",
        ),
        (
            &|s| {
                timed(s);
                s.rate = Some(10.0);
            },
            "leave rate out",
        ),
        (
            &|s| {
                timed(s);
                s.offsets = Some(vec![1.0, 0.5]);
            },
            "must not go back",
        ),
        (
            &|s| {
                timed(s);
                s.offsets = None;
            },
            "needs offsets",
        ),
        (
            &|s| {
                timed(s);
                s.speed = 0.0;
            },
            "speed must be more than 0",
        ),
    ] {
        let said = spec(bad).unwrap_err();
        assert!(said.contains(says) && !said.contains('\n'), "{said}");
    }
}
