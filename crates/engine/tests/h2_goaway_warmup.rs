//! An open loop keeps its schedule through a GOAWAY during warm-up: a stream the GOAWAY refused
//! unprocessed goes again on the next connection like one sent while measuring, counted only if
//! it goes once measurement has begun.

mod h2c;

use std::net::TcpStream;
use std::sync::mpsc::{self, Receiver};
use std::time::Duration;

use httpbench_engine::h2::frame::{self, flag, kind};
use httpbench_engine::spec::Stop;
use httpbench_engine::LoadSpec;

/// One connection of an h2c server: the first refuses its first request with a GOAWAY (last
/// stream id 0) sent `goaway_after` it came, the others answer every request with an empty 200.
/// Returns the requests the connection received.
fn serve(mut io: TcpStream, first: bool, goaway_after: Duration) -> usize {
    let mut out = Vec::new();
    frame::write_settings(&mut out, &[]);
    h2c::send(&mut io, &out);
    let mut requests = 0;
    h2c::each_frame(&mut io, |io, header, _| {
        let mut out = Vec::new();
        match header.kind {
            kind::SETTINGS if !header.has(flag::ACK) => frame::write_settings_ack(&mut out),
            kind::HEADERS => {
                requests += 1;
                if first {
                    std::thread::sleep(goaway_after);
                    frame::write_goaway(&mut out, 0, 0);
                } else {
                    // `:status: 200`, no body.
                    frame::write_headers(&mut out, header.stream, &[0x88], true, 16_384);
                }
            }
            _ => {}
        }
        h2c::send(io, &out);
    });
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

/// The requests each connection received, fewest first, and the report's (sent, completed, in
/// flight), with no error.
fn assert_counts(
    r: &httpbench_engine::Report,
    per_connection: &[usize],
    received: [usize; 2],
    counts: (u64, u64, u64),
) {
    assert_eq!(per_connection, received, "requests on each connection");
    let q = &r.requests;
    assert_eq!((q.sent, q.completed, q.in_flight), counts, "{q:?}");
    assert_eq!(r.errors_total, 0, "{:?}", r.errors);
}

#[test]
fn a_warm_up_stream_refused_by_a_goaway_goes_again() {
    // One request due at zero, the next 2 s later, after the run (0.5 s of warm-up, 1 s
    // measured). Refused at once: it goes again in the warm-up, so the server sees it twice
    // and the report nothing.
    let (r, per_connection) = run_refusing_the_first(Duration::ZERO, 0.5, Stop::Duration(1.0));
    assert_counts(&r, &per_connection, [1, 1], (0, 0, 0));

    // Refused once measurement has begun: it goes again then, and is measured.
    let goaway_after = Duration::from_millis(1000);
    let (r, per_connection) = run_refusing_the_first(goaway_after, 0.5, Stop::Duration(1.0));
    assert_counts(&r, &per_connection, [1, 1], (1, 1, 0));
}

#[test]
fn under_n_a_warm_up_stream_refused_by_a_goaway_goes_again_only_with_a_request_left() {
    // Requests due every 0.5 s; `-n 1`. The one due at 0.5 s, measured, takes the only request
    // and goes on the same connection; the GOAWAY at 1 s refuses both. The measured one goes
    // again; the warm-up one finds no request left and is dropped, never sent.
    let goaway_after = Duration::from_millis(1000);
    let (r, per_connection) = run_refusing_the_first(goaway_after, 2.0, Stop::Requests(1));
    assert_counts(&r, &per_connection, [1, 2], (1, 1, 0));
    // The one measured is the one due at 0.5 s (refused once, sent after measurement began), not
    // the warm-up one due at zero: it waited about 0.5 s for the GOAWAY, not 1 s.
    assert_eq!(r.h2.as_ref().unwrap().refused_streams, 1);
    let waited = r.latency.total.max_us;
    assert!((400_000..900_000).contains(&waited), "{waited} us");
}
