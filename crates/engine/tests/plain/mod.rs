//! A plain HTTP/1.1 server for the engine's tests, and a bounded run against it: a thread per
//! connection answering every request with a 7-byte 200, each request's path written down as it
//! is read (an access log's view), the first connection's first answer `delay` late. It lives as
//! long as the test process.

use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use httpbench_engine::{LoadSpec, Report};

/// The paths the server read, in its order.
pub type Log = Arc<Mutex<Vec<String>>>;

fn answer(io: TcpStream, delay: Duration, log: &Log) {
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
        let path = line.split(' ').nth(1).unwrap_or("").to_string();
        while line != "\r\n" {
            line.clear();
            if reader.read_line(&mut line).unwrap_or(0) == 0 {
                return;
            }
        }
        log.lock().unwrap().push(path);
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

/// A server whose first connection answers its first request `delay` late: its base URL
/// ("http://127.0.0.1:PORT", no path) and what it read.
pub fn serve(delay: Duration) -> (String, Log) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let log: Log = Arc::default();
    let written = log.clone();
    std::thread::spawn(move || {
        for (i, stream) in listener.incoming().enumerate() {
            let Ok(stream) = stream else { continue };
            let written = written.clone();
            let delay = if i == 0 { delay } else { Duration::ZERO };
            std::thread::spawn(move || answer(stream, delay, &written));
        }
    });
    (base, log)
}

/// `spec` run without validation, bounded: a run that does not end in 20 s fails.
pub fn run(spec: LoadSpec) -> Report {
    let spec = LoadSpec {
        validate: false,
        ..spec
    };
    let (done, report) = mpsc::channel();
    std::thread::spawn(move || {
        // The receiver gave up on a run that did not end: nobody to tell.
        let _ = done.send(httpbench_engine::run(&spec).unwrap());
    });
    report
        .recv_timeout(Duration::from_secs(20))
        .expect("the run ended")
}
