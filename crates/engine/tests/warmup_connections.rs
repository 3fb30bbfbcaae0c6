//! A warm-up of the connections is one request per connection, not a load: connections that
//! have answered wait for the slowest before measurement starts, so a server asked for N
//! requests over C connections sees N + C, as its access log will say.

use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use httpbench_engine::spec::Stop;
use httpbench_engine::LoadSpec;

/// Answers every request on `io` with a 7-byte 200, the first of them `delay` late.
fn answer(io: TcpStream, delay: Duration, served: &AtomicUsize) {
    let mut reader = BufReader::new(io.try_clone().unwrap());
    let mut writer = io;
    let mut first = true;
    let mut line = String::new();
    loop {
        // A request: its lines up to the empty one.
        line.clear();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        while line != "\r\n" {
            line.clear();
            if reader.read_line(&mut line).unwrap_or(0) == 0 {
                return;
            }
        }
        served.fetch_add(1, Ordering::Relaxed);
        if first {
            std::thread::sleep(delay);
            first = false;
        }
        let ok = b"HTTP/1.1 200 OK\r\nContent-Length: 7\r\n\r\nhello!\n";
        if writer.write_all(ok).is_err() {
            return;
        }
    }
}

/// A server whose first connection answers its first request `delay` late; the requests it
/// received, counted as they come.
fn server(delay: Duration) -> (String, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/", listener.local_addr().unwrap());
    let served = Arc::new(AtomicUsize::new(0));
    let counted = served.clone();
    std::thread::spawn(move || {
        for (i, stream) in listener.incoming().enumerate() {
            let Ok(stream) = stream else { continue };
            let counted = counted.clone();
            let delay = if i == 0 { delay } else { Duration::ZERO };
            std::thread::spawn(move || answer(stream, delay, &counted));
        }
    });
    (url, served)
}

fn warmed(rate: Option<f64>, stop: Stop) -> (httpbench_engine::Report, usize) {
    let (url, served) = server(Duration::from_millis(300));
    let r = httpbench_engine::run(&LoadSpec {
        urls: vec![url],
        connections: 4,
        rate,
        warmup_connections: true,
        stop,
        validate: false,
        ..LoadSpec::default()
    })
    .unwrap();
    // The connections are closed when the run returns; the server has counted what it read.
    (r, served.load(Ordering::Relaxed))
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
