//! Fuzzes the HTTP/2 client connection with arbitrary server bytes after the server's preface.
//!
//! Input layout: byte 0 is the number of streams to open (mod 8) before the bytes arrive, byte 1
//! a cut point (the first read's length, mod the rest's length + 1); the rest is what the
//! "server" sends after an empty SETTINGS. Whole and cut, the connection must not panic, must
//! agree with itself, and must keep its stream count within what it opened.
#![no_main]

use httpbench_engine::h2::{Connection, Limits, StreamSink};
use httpbench_engine::http::response::Response;
use libfuzzer_sys::fuzz_target;

#[derive(Debug, Default, PartialEq)]
struct Events(Vec<(u8, u32, u64)>);

impl StreamSink for Events {
    fn first_byte(&mut self, stream: u32) {
        self.0.push((0, stream, 0));
    }
    fn complete(&mut self, stream: u32, response: &Response) {
        self.0.push((1, stream, response.body_bytes));
    }
    fn reset(&mut self, stream: u32, code: u32) {
        self.0.push((2, stream, code.into()));
    }
    fn goaway(&mut self, last_stream: u32, code: u32) {
        self.0.push((3, last_stream, code.into()));
    }
}

/// An empty server SETTINGS frame.
const SERVER_PREFACE: [u8; 9] = [0, 0, 0, 4, 0, 0, 0, 0, 0];
/// `:status: 200`, the request block (its content does not matter to the client).
const BLOCK: &[u8] = &[0x88];

fn run(streams: u8, pieces: &[&[u8]]) -> (Events, Result<(), u32>, u32) {
    let mut connection = Connection::new(&Limits::default());
    let mut events = Events::default();
    connection.receive(&SERVER_PREFACE, &mut events).unwrap();
    for i in 0..streams {
        let body: &[u8] = if i % 2 == 0 { b"body" } else { b"" };
        connection.open(BLOCK, Some(body));
    }
    let mut result = Ok(());
    for piece in pieces {
        result = connection.receive(piece, &mut events).map_err(|e| e.code);
        if result.is_err() {
            break;
        }
    }
    let mut out = Vec::new();
    connection.take_output(&mut out);
    assert!(connection.open_streams() <= u32::from(streams));
    (events, result, connection.open_streams())
}

fuzz_target!(|input: &[u8]| {
    let [streams, cut, rest @ ..] = input else {
        return;
    };
    let streams = streams % 8;
    let cut = usize::from(*cut) % (rest.len() + 1);
    let whole = run(streams, &[rest]);
    let (a, b) = rest.split_at(cut);
    assert_eq!(run(streams, &[a, b]), whole);
});
