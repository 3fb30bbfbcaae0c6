//! An open loop's stream a GOAWAY refused goes again for the URL it was sent for: its request is the same
//! request, so a replayed log keeps its order and each answer is checked against its own URL's
//! length, not the next URL the mix would have picked.

mod h2c;

use std::net::TcpStream;
use std::sync::{Arc, Mutex};

use httpbench_engine::h2::frame::{self, flag, kind};
use httpbench_engine::h2::hpack::Decoder;
use httpbench_engine::spec::{Order, Stop};
use httpbench_engine::LoadSpec;

const PATHS: [&str; 3] = ["/a", "/b", "/c"];
const LENGTHS: [u64; 3] = [10, 200, 3000];

/// One connection: the first answers its first request with a GOAWAY (last stream id 0,
/// refusing every stream sent so far), the others answer each request with `LENGTHS` of its
/// path, writing the path down in `log`.
fn serve(mut io: TcpStream, first: bool, log: &Mutex<Vec<String>>) {
    let mut out = Vec::new();
    frame::write_settings(&mut out, &[]);
    h2c::send(&mut io, &out);
    let mut decoder = Decoder::new(4096);
    h2c::each_frame(&mut io, |io, header, payload| {
        let mut out = Vec::new();
        match header.kind {
            kind::SETTINGS if !header.has(flag::ACK) => frame::write_settings_ack(&mut out),
            kind::HEADERS if first => frame::write_goaway(&mut out, 0, 0),
            kind::HEADERS => {
                let mut path = String::new();
                decoder
                    .decode(payload, &mut |name, value| {
                        if name == b":path" {
                            path = String::from_utf8_lossy(value).into_owned();
                        }
                    })
                    .unwrap();
                let url = PATHS.iter().position(|p| *p == path).unwrap();
                log.lock().unwrap().push(path);
                // `:status: 200`, then the body.
                frame::write_headers(&mut out, header.stream, &[0x88], false, 16_384);
                let body = vec![b'x'; LENGTHS[url] as usize];
                frame::write_data(&mut out, header.stream, &body, true);
            }
            _ => {}
        }
        h2c::send(io, &out);
    });
}

#[test]
fn a_refused_stream_goes_again_for_its_own_url() {
    let log = Arc::new(Mutex::new(Vec::new()));
    let served = log.clone();
    let base = h2c::serve(4, move |socket, i| serve(socket, i == 0, &served));
    let sequence = vec![0, 1, 2, 1, 0];
    let r = httpbench_engine::run(&LoadSpec {
        urls: PATHS
            .map(|p| format!("{}{}", base.trim_end_matches('/'), p))
            .to_vec(),
        http2: true,
        connections: 1,
        streams: 3,
        // An open loop: its refused streams go again (a closed loop's are given back).
        rate: Some(500.0),
        order: Order::Replay,
        sequence: Some(sequence.clone()),
        expect_lengths: Some(LENGTHS.to_vec()),
        stop: Stop::Requests(12),
        validate: false,
        request_timeout: 5.0,
        ..LoadSpec::default()
    })
    .unwrap();
    assert!(r.h2.as_ref().unwrap().refused_streams >= 1, "{:?}", r.h2);
    assert_eq!(r.requests.completed, 12, "{:?}", r.requests);
    assert_eq!(r.errors_total, 0, "{:?}", r.errors);
    // The refused streams went again first, for the log's first entries: the log's order from
    // its start, as if nothing had been refused.
    let want: Vec<String> = (0..12)
        .map(|k| PATHS[sequence[k % sequence.len()] as usize].to_string())
        .collect();
    assert_eq!(*log.lock().unwrap(), want);
}
