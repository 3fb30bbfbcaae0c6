//! Fuzzes the incremental response parser with arbitrary bytes cut at arbitrary points.
//!
//! Input layout: byte 0 holds flags (bit 0: HEAD request, bit 1: capture bodies), byte 1 the
//! number of cuts (mod 16), then one byte per cut (the distance to the next cut, minus one); the
//! rest is the stream the "server" sends. Each stream is parsed in one read, cut at those points,
//! and (when short) one byte at a time, and the runs must agree.
#![no_main]

use httpbench_engine::http::response::{
    EofOutcome, ParseError, Response, ResponseParser, ResponseSink,
};
use libfuzzer_sys::fuzz_target;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ev {
    First,
    Done(Response),
}

#[derive(Default)]
struct Rec(Vec<Ev>);

impl ResponseSink for Rec {
    fn first_byte(&mut self) {
        self.0.push(Ev::First);
    }
    fn complete(&mut self, response: &Response) {
        self.0.push(Ev::Done(*response));
    }
}

#[derive(Debug, PartialEq, Eq)]
struct Run {
    events: Vec<Ev>,
    error: Option<ParseError>,
    eof: Option<EofOutcome>,
    captured: Vec<u8>,
}

fn run<'a>(
    stream: &[u8],
    parts: impl Iterator<Item = &'a [u8]>,
    head_request: bool,
    capture: bool,
) -> Run {
    let mut parser = ResponseParser::new(head_request);
    if capture {
        parser.capture_bodies();
    }
    let mut rec = Rec::default();
    let mut error = None;
    for part in parts {
        if let Err(e) = parser.feed(part, &mut rec) {
            error = Some(e);
            break;
        }
    }
    let eof = match error {
        Some(e) => {
            // Errors stick: the stream cannot be resynchronised.
            assert_eq!(parser.feed(b"HTTP/1.1 200 OK\r\n\r\n", &mut rec), Err(e));
            assert!(!parser.is_idle());
            None
        }
        None => {
            let outcome = parser.feed_eof(&mut rec);
            assert!(parser.is_idle());
            Some(outcome)
        }
    };
    let r = Run {
        events: rec.0,
        error,
        eof,
        captured: parser.captured_body().to_vec(),
    };
    check(&r, stream.len(), head_request, capture);
    r
}

fn check(r: &Run, input_len: usize, head_request: bool, capture: bool) {
    let mut expect_first = true;
    let (mut heads, mut bodies) = (0u64, 0u64);
    let mut last = None;
    for ev in &r.events {
        match ev {
            Ev::First => {
                assert!(expect_first, "first_byte twice for one response: {r:?}");
                expect_first = false;
            }
            Ev::Done(resp) => {
                assert!(!expect_first, "complete without first_byte: {r:?}");
                expect_first = true;
                assert!((200..=999).contains(&resp.status), "{resp:?}");
                assert!(resp.head_bytes > 0);
                if head_request || resp.status == 204 || resp.status == 304 {
                    assert_eq!(resp.body_bytes, 0, "{resp:?}");
                }
                heads += resp.head_bytes;
                bodies += resp.body_bytes;
                last = Some(*resp);
            }
        }
    }
    assert!(
        bodies <= input_len as u64,
        "body bytes {bodies} > input {input_len}"
    );
    assert!(
        heads + bodies <= input_len as u64,
        "{heads} + {bodies} > input {input_len}"
    );
    match (capture, last) {
        (true, Some(resp)) => assert_eq!(r.captured.len() as u64, resp.body_bytes),
        _ => assert!(r.captured.is_empty()),
    }
}

/// A split run must see what the single read saw, except that a head error found in one read
/// may go unnoticed when the head is split and never finishes (past its first 256 bytes the
/// parser re-parses a carried head only at a possible end of head or when it has doubled, to
/// stay linear): then the split run ends in MidHead.
fn same(whole: &Run, split: &Run) {
    assert_eq!(
        whole.events, split.events,
        "events differ\nwhole: {whole:?}\nsplit: {split:?}"
    );
    if whole.error == split.error {
        assert_eq!(whole, split);
    } else {
        assert!(
            whole.error.is_some()
                && split.error.is_none()
                && split.eof == Some(EofOutcome::MidHead),
            "outcomes differ\nwhole: {whole:?}\nsplit: {split:?}"
        );
    }
}

fuzz_target!(|data: &[u8]| {
    if data.len() < 2 {
        return;
    }
    let head_request = data[0] & 1 != 0;
    let capture = data[0] & 2 != 0;
    let ncuts = (data[1] % 16) as usize;
    let Some(steps) = data.get(2..2 + ncuts) else {
        return;
    };
    let stream = &data[2 + ncuts..];

    let mut cuts = vec![0];
    for &step in steps {
        let next = cuts[cuts.len() - 1] + step as usize + 1;
        if next >= stream.len() {
            break;
        }
        cuts.push(next);
    }
    cuts.push(stream.len());

    let whole = run(stream, std::iter::once(stream), head_request, capture);
    let split = run(
        stream,
        cuts.windows(2).map(|w| &stream[w[0]..w[1]]),
        head_request,
        capture,
    );
    same(&whole, &split);
    if stream.len() <= 4096 {
        let bytes = run(stream, stream.chunks(1), head_request, capture);
        same(&whole, &bytes);
    }
});
