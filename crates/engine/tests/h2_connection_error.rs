//! A connection error of ours ends the connection with a GOAWAY that says which (RFC 9113
//! 5.4.1): the server reads it before the close, with the error's code, over h2c and over TLS.

mod common;
mod h2c;

use std::io::{Read, Write};
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::Mutex;
use std::time::Duration;

use httpbench_engine::h2::frame::{self, code, kind};
use httpbench_engine::spec::{IoChoice, Stop, TlsSpec};
use httpbench_engine::LoadSpec;

/// What the client's GOAWAY said, (last stream id, error code), or None if none came before the
/// close.
type Heard = Option<(u32, u32)>;

/// An h2 server's side of one connection: its SETTINGS, then, at the first request, the header of
/// a frame one byte over the client's 16 KiB limit (FRAME_SIZE_ERROR, RFC 9113 4.2); then it
/// reads to the close.
fn oversized_frame(io: &mut (impl Read + Write)) -> Heard {
    let mut out = Vec::new();
    frame::write_settings(&mut out, &[]);
    h2c::send(io, &out);
    let mut goaway = None;
    h2c::each_frame(io, |io, header, payload| match header.kind {
        kind::HEADERS => {
            let mut out = Vec::new();
            frame::write_header(&mut out, (1 << 14) + 1, kind::DATA, 0, header.stream);
            h2c::send(io, &out);
        }
        kind::GOAWAY => goaway = Some((frame::read_u31(payload), frame::read_u32(&payload[4..]))),
        _ => {}
    });
    goaway
}

fn serve_h2c() -> (String, Receiver<Heard>) {
    let (said, heard) = mpsc::channel();
    let url = h2c::serve(1, move |mut socket, _| {
        let _ = said.send(oversized_frame(&mut socket));
    });
    (url, heard)
}

/// Where the TLS server's connection tells what it heard (`serve_tls` takes a plain fn).
static TLS_HEARD: Mutex<Option<Sender<Heard>>> = Mutex::new(None);

fn serve_h2() -> (String, Receiver<Heard>) {
    let (said, heard) = mpsc::channel();
    *TLS_HEARD.lock().unwrap() = Some(said);
    let addr = common::serve_tls(&[b"h2"], |tls| {
        let _ = tls.sock.set_read_timeout(Some(Duration::from_secs(10)));
        let goaway = oversized_frame(tls);
        if let Some(said) = TLS_HEARD.lock().unwrap().as_ref() {
            let _ = said.send(goaway);
        }
    });
    (format!("https://localhost:{}/", addr.port()), heard)
}

#[test]
fn a_connection_error_sends_a_goaway_with_its_code_before_the_close() {
    for (tls, io) in [
        (false, IoChoice::Auto),
        (false, IoChoice::Epoll),
        (true, IoChoice::Auto),
    ] {
        let (url, heard) = if tls { serve_h2() } else { serve_h2c() };
        let r = httpbench_engine::run(&LoadSpec {
            urls: vec![url],
            http2: true,
            connections: 1,
            stop: Stop::Requests(1),
            validate: false,
            request_timeout: 5.0,
            io,
            tls: TlsSpec {
                cacert: tls.then(|| format!("{}ca.pem", common::TESTDATA).into()),
                ..TlsSpec::default()
            },
            ..LoadSpec::default()
        })
        .unwrap();
        assert_eq!(r.errors["h2_protocol"], 1, "{io:?}: {:?}", r.errors);
        let goaway = heard.recv_timeout(Duration::from_secs(20)).unwrap();
        // No stream of the server's was processed: we accept none.
        assert_eq!(
            goaway,
            Some((0, code::FRAME_SIZE_ERROR)),
            "tls {tls}, {io:?}"
        );
    }
}
