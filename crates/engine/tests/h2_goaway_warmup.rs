//! An open loop keeps its schedule through a GOAWAY during warm-up: a stream the GOAWAY refused
//! unprocessed goes again on the next connection like one sent while measuring, counted only if
//! it goes once measurement has begun.

mod h2c;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::mpsc::{self, Receiver};
use std::time::Duration;

use httpbench_engine::spec::Stop;
use httpbench_engine::LoadSpec;

const PREFACE_LEN: usize = 24;
const HEADERS: u8 = 0x1;
const SETTINGS: u8 = 0x4;
const GOAWAY: u8 = 0x7;
const ACK: u8 = 0x1;
const END_STREAM_HEADERS: u8 = 0x5;

fn frame(io: &mut TcpStream, kind: u8, flags: u8, stream: u32, payload: &[u8]) {
    let len = (payload.len() as u32).to_be_bytes();
    let mut bytes = vec![len[1], len[2], len[3], kind, flags];
    bytes.extend_from_slice(&stream.to_be_bytes());
    bytes.extend_from_slice(payload);
    let _ = io.write_all(&bytes);
}

/// One connection of an h2c server: the first refuses its first request with a GOAWAY (last
/// stream id 0) sent `goaway_after` it came, the others answer every request with an empty 200.
/// Returns the requests the connection received.
fn serve(mut io: TcpStream, first: bool, goaway_after: Duration) -> usize {
    frame(&mut io, SETTINGS, 0, 0, &[]);
    let (mut seen, mut at, mut requests) = (Vec::new(), PREFACE_LEN, 0);
    let mut buf = [0u8; 4096];
    while let Ok(n @ 1..) = io.read(&mut buf) {
        seen.extend_from_slice(&buf[..n]);
        while seen.len() >= at + 9 {
            let len = u32::from_be_bytes([0, seen[at], seen[at + 1], seen[at + 2]]) as usize;
            if seen.len() < at + 9 + len {
                break;
            }
            let stream = u32::from_be_bytes(seen[at + 5..at + 9].try_into().unwrap());
            match (seen[at + 3], seen[at + 4]) {
                (SETTINGS, 0) => frame(&mut io, SETTINGS, ACK, 0, &[]),
                (HEADERS, _) => {
                    requests += 1;
                    if first {
                        std::thread::sleep(goaway_after);
                        frame(&mut io, GOAWAY, 0, 0, &[0; 8]);
                    } else {
                        // `:status: 200`, no body.
                        frame(&mut io, HEADERS, END_STREAM_HEADERS, stream, &[0x88]);
                    }
                }
                _ => {}
            }
            at += 9 + len;
        }
    }
    requests
}

/// A server whose connections each report the requests they received when the client closes
/// them.
fn server(goaway_after: Duration) -> (String, Receiver<usize>) {
    let (said, heard) = mpsc::channel();
    let url = h2c::serve(4, move |socket, i| {
        let _ = said.send(serve(socket, i == 0, goaway_after));
    });
    (url, heard)
}

/// One connection of two streams, an open loop at `rate` with a 0.5 s warm-up and `stop`: the
/// first request, due at time zero in the warm-up, is refused by a GOAWAY `goaway_after` it
/// came. Returns the report and the requests each connection received, fewest first.
fn run_refusing_the_first(
    goaway_after: Duration,
    rate: f64,
    stop: Stop,
) -> (httpbench_engine::Report, Vec<usize>) {
    let (url, heard) = server(goaway_after);
    let r = httpbench_engine::run(&LoadSpec {
        urls: vec![url],
        http2: true,
        connections: 1,
        streams: 2,
        rate: Some(rate),
        warmup: 0.5,
        stop,
        validate: false,
        request_timeout: 5.0,
        ..LoadSpec::default()
    })
    .unwrap();
    let mut per_connection: Vec<usize> = (0..2)
        .map(|_| heard.recv_timeout(Duration::from_secs(20)).unwrap())
        .collect();
    per_connection.sort();
    (r, per_connection)
}

#[test]
fn a_warm_up_stream_refused_by_a_goaway_goes_again() {
    // One request due at zero, the next 2 s later, after the run (0.5 s of warm-up, 1 s
    // measured). Refused at once: it goes again in the warm-up, so the server sees it twice
    // and the report nothing.
    let (r, per_connection) = run_refusing_the_first(Duration::ZERO, 0.5, Stop::Duration(1.0));
    assert_eq!(per_connection, [1, 1], "requests on each connection");
    let q = &r.requests;
    assert_eq!((q.sent, q.completed, q.in_flight), (0, 0, 0), "{q:?}");
    assert_eq!(r.errors_total, 0, "{:?}", r.errors);

    // Refused once measurement has begun: it goes again then, and is measured.
    let goaway_after = Duration::from_millis(1000);
    let (r, per_connection) = run_refusing_the_first(goaway_after, 0.5, Stop::Duration(1.0));
    assert_eq!(per_connection, [1, 1], "requests on each connection");
    let q = &r.requests;
    assert_eq!((q.sent, q.completed, q.in_flight), (1, 1, 0), "{q:?}");
    assert_eq!(r.errors_total, 0, "{:?}", r.errors);
}

#[test]
fn under_n_a_warm_up_stream_refused_by_a_goaway_goes_again_only_with_a_request_left() {
    // Requests due every 0.5 s; `-n 1`. The one due at 0.5 s, measured, takes the only request
    // and goes on the same connection; the GOAWAY at 1 s refuses both. The measured one goes
    // again; the warm-up one finds no request left and is dropped, never sent.
    let goaway_after = Duration::from_millis(1000);
    let (r, per_connection) = run_refusing_the_first(goaway_after, 2.0, Stop::Requests(1));
    assert_eq!(per_connection, [1, 2], "requests on each connection");
    let q = &r.requests;
    assert_eq!((q.sent, q.completed, q.in_flight), (1, 1, 0), "{q:?}");
    assert_eq!(r.errors_total, 0, "{:?}", r.errors);
    // The one measured is the one due at 0.5 s (refused once, sent after measurement began), not
    // the warm-up one due at zero: it waited about 0.5 s for the GOAWAY, not 1 s.
    assert_eq!(r.h2.as_ref().unwrap().refused_streams, 1);
    let waited = r.latency.total.max_us;
    assert!((400_000..900_000).contains(&waited), "{waited} us");
}
