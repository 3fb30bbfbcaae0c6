//! How a TLS connection's end is classed: a close without close_notify after a whole response
//! is how servers close (no error); inside a body it may be an attacker's truncation
//! (tls_protocol); a record that does not decrypt is tls_protocol too.

mod common;

use std::io::{Read, Write};

use httpbench_engine::spec::{Stop, TlsSpec};
use httpbench_engine::{LoadSpec, Report};

/// How the test server answers each connection.
type Answer = fn(&mut common::Tls);

/// Read one request head (a single read: the engine sends it in one record).
fn read_request(tls: &mut common::Tls) -> bool {
    let mut buf = [0u8; 4096];
    matches!(tls.read(&mut buf), Ok(n) if n > 0)
}

/// A whole response, then TCP's close without close_notify.
fn whole_then_close(tls: &mut common::Tls) {
    if read_request(tls) {
        let _ = tls.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok");
        let _ = tls.flush();
    }
}

/// Half the declared body, then TCP's close without close_notify.
fn truncated_body(tls: &mut common::Tls) {
    if read_request(tls) {
        let _ = tls.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nokok");
        let _ = tls.flush();
    }
}

/// Half the declared body, then close_notify: a clean TLS close inside an HTTP body.
fn truncated_body_with_close_notify(tls: &mut common::Tls) {
    if read_request(tls) {
        let _ = tls.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nokok");
        tls.conn.send_close_notify();
        let _ = tls.flush();
    }
}

/// A record of application data whose ciphertext was tampered with.
fn bad_record(tls: &mut common::Tls) {
    if read_request(tls) {
        let _ = tls.sock.write_all(&[23, 3, 3, 0, 32]);
        let _ = tls.sock.write_all(&[0x55; 32]);
    }
}

fn run(answer: Answer, requests: u64) -> Report {
    let addr = common::serve_tls(&[], answer);
    httpbench_engine::run(&LoadSpec {
        urls: vec![format!("https://localhost:{}/", addr.port())],
        connections: 1,
        stop: Stop::Requests(requests),
        validate: false,
        request_timeout: 5.0,
        tls: TlsSpec {
            cacert: Some(format!("{}ca.pem", common::TESTDATA).into()),
            ..TlsSpec::default()
        },
        ..LoadSpec::default()
    })
    .unwrap()
}

fn accounted(r: &Report) {
    let q = &r.requests;
    assert_eq!(q.sent, q.completed + q.failed + q.in_flight);
}

#[test]
fn a_close_without_close_notify_after_a_whole_response_is_no_error() {
    let r = run(whole_then_close, 5);
    assert_eq!(r.requests.completed, 5);
    assert_eq!(r.errors_total, 0, "{:?}", r.errors);
    assert_eq!(r.connections.server_closes, 5);
}

#[test]
fn each_broken_answer_fails_its_requests_in_its_class() {
    let cases: [(Answer, &str); 3] = [
        // Perhaps an attacker's truncation.
        (truncated_body, "tls_protocol"),
        // TLS ended cleanly; HTTP did not.
        (truncated_body_with_close_notify, "length_mismatch"),
        (bad_record, "tls_protocol"),
    ];
    for (answer, class) in cases {
        let r = run(answer, 3);
        assert_eq!(r.errors[class], 3, "{class}: {:?}", r.errors);
        assert_eq!(r.errors_total, 3, "{class}: {:?}", r.errors);
        assert_eq!(r.requests.completed, 0);
        accounted(&r);
    }
}
