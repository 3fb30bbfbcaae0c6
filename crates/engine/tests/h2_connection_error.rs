//! A connection error of ours ends the connection with a GOAWAY that says which (RFC 9113
//! 5.4.1): the server reads it before the close, with the error's code.

use std::io::{Read, Write};
use std::net::TcpListener;
use std::sync::mpsc;
use std::time::Duration;

use httpbench_engine::spec::{IoChoice, Stop};
use httpbench_engine::LoadSpec;

const PREFACE_LEN: usize = 24;
const HEADERS: u8 = 0x1;
const GOAWAY: u8 = 0x7;
const FRAME_SIZE_ERROR: u32 = 0x6;

/// An h2c server for one connection: its SETTINGS, then, at the first request, the header of a
/// frame one byte over the client's 16 KiB limit (FRAME_SIZE_ERROR, RFC 9113 4.2). Sends what
/// the client's GOAWAY said, (last stream id, error code), or None if none came before the close.
fn serve_oversized_frame() -> (u16, mpsc::Receiver<Option<(u32, u32)>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let (said, heard) = mpsc::channel();
    std::thread::spawn(move || {
        let (mut socket, _) = listener.accept().unwrap();
        socket
            .set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        socket.write_all(&[0, 0, 0, 4, 0, 0, 0, 0, 0]).unwrap();
        let (mut seen, mut at, mut goaway) = (Vec::new(), PREFACE_LEN, None);
        let mut buf = [0u8; 4096];
        while let Ok(n @ 1..) = socket.read(&mut buf) {
            seen.extend_from_slice(&buf[..n]);
            while seen.len() >= at + 9 {
                let len = u32::from_be_bytes([0, seen[at], seen[at + 1], seen[at + 2]]) as usize;
                let Some(payload) = seen.get(at + 9..at + 9 + len) else {
                    break;
                };
                match seen[at + 3] {
                    HEADERS => {
                        let _ = socket.write_all(&[0, 0x40, 0x01, 0, 0, 0, 0, 0, 1]);
                    }
                    GOAWAY => {
                        let word =
                            |i: usize| u32::from_be_bytes(payload[i..i + 4].try_into().unwrap());
                        goaway = Some((word(0) & 0x7fff_ffff, word(4)));
                    }
                    _ => {}
                }
                at += 9 + len;
            }
        }
        let _ = said.send(goaway);
    });
    (port, heard)
}

#[test]
fn a_connection_error_sends_a_goaway_with_its_code_before_the_close() {
    for io in [IoChoice::Auto, IoChoice::Epoll] {
        let (port, heard) = serve_oversized_frame();
        let r = httpbench_engine::run(&LoadSpec {
            urls: vec![format!("http://127.0.0.1:{port}/")],
            http2: true,
            connections: 1,
            stop: Stop::Requests(1),
            validate: false,
            request_timeout: 5.0,
            io,
            ..LoadSpec::default()
        })
        .unwrap();
        assert_eq!(r.errors["h2_protocol"], 1, "{io:?}: {:?}", r.errors);
        let goaway = heard.recv_timeout(Duration::from_secs(20)).unwrap();
        // No stream of the server's was processed: we accept none.
        assert_eq!(goaway, Some((0, FRAME_SIZE_ERROR)), "{io:?}");
    }
}
