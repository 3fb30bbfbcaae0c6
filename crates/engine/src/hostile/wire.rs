//! What the connections beside the load send, built once for the run from the spec: the idle
//! connections' request, and each slow mode's opening bytes and the endless trickle after them.

use crate::h2::frame;
use crate::h2::hpack::encode_request;
use crate::h2::request::RequestBlocks;
use crate::http::request::render;
use crate::spec::{LoadSpec, Resolved, SlowMode, SlowSettings, Target};

/// Fields (or lines) in the unit the slowloris trickle repeats: distinct names, so that no
/// server folds them into one.
const TRICKLE_FIELDS: usize = 64;

pub(super) struct Wire {
    /// The idle connections' request, the first and each ping: the run's first URL as the load
    /// asks it (over HTTP/2 its header block, which leaves no state in the server's table).
    pub idle_request: Vec<u8>,
    /// What a slow connection sends at once: a whole request head (body, read), the head without
    /// the blank line that would end it (headers over HTTP/1.1), or the HEADERS frame's block
    /// (headers over HTTP/2, which waits for the server's SETTINGS).
    pub slow_opening: Vec<u8>,
    /// The trickle, repeated for as long as the connection lasts: header lines (HTTP/1.1), HPACK
    /// fields (HTTP/2), or the body's bytes. Empty for read, which sends nothing more.
    pub unit: Vec<u8>,
}

impl Wire {
    pub(super) fn build(spec: &LoadSpec, resolved: &Resolved) -> Wire {
        let first = &resolved.targets[0];
        let kept_alive = LoadSpec {
            keep_alive: true,
            ..spec.clone()
        };
        let idle_request = if spec.http2 {
            RequestBlocks::build(&kept_alive, std::slice::from_ref(first))
                .stateless(0)
                .to_vec()
        } else {
            render(&kept_alive, first)
        };
        let (slow_opening, unit) = match &resolved.slow {
            Some(slow) => slow_bytes(spec, first, slow),
            None => (Vec::new(), Vec::new()),
        };
        Wire {
            idle_request,
            slow_opening,
            unit,
        }
    }

    /// `n` bytes of the trickle from `offset` on, appended to `out`.
    pub(super) fn trickle(&self, offset: u64, n: usize, out: &mut Vec<u8>) {
        if self.unit.is_empty() {
            return;
        }
        let len = self.unit.len() as u64;
        out.extend((0..n as u64).map(|j| self.unit[((offset + j) % len) as usize]));
    }
}

fn slow_bytes(spec: &LoadSpec, first: &Target, slow: &SlowSettings) -> (Vec<u8>, Vec<u8>) {
    let target = Target {
        path: slow.path.clone(),
        ..first.clone()
    };
    // The spec's own headers go too (a cookie or a host name a server wants), its method and
    // body do not: the mode says what is asked.
    let mut asked = LoadSpec {
        method: "GET".into(),
        body: None,
        keep_alive: true,
        http10: false,
        ..spec.clone()
    };
    match slow.mode {
        SlowMode::Headers if spec.http2 => {
            let opening = RequestBlocks::build(&asked, std::slice::from_ref(&target))
                .stateless(0)
                .to_vec();
            let names: Vec<(String, String)> = (0..TRICKLE_FIELDS)
                .map(|k| (format!("x-slow-{k:02}"), k.to_string()))
                .collect();
            let fields: Vec<(&[u8], &[u8])> = names
                .iter()
                .map(|(n, v)| (n.as_bytes(), v.as_bytes()))
                .collect();
            let mut unit = Vec::new();
            encode_request(&fields, &mut unit);
            (opening, unit)
        }
        SlowMode::Headers => {
            let mut opening = render(&asked, &target);
            // The blank line that would end the head never goes.
            opening.truncate(opening.len() - 2);
            let unit = (0..TRICKLE_FIELDS)
                .flat_map(|k| format!("X-Slow-{k:02}: {k}\r\n").into_bytes())
                .collect();
            (opening, unit)
        }
        SlowMode::Body => {
            asked.method = "POST".into();
            asked.headers.extend([
                format!("Content-Length: {}", slow.content_length),
                "Content-Type: application/x-www-form-urlencoded".into(),
            ]);
            (render(&asked, &target), b"a".repeat(TRICKLE_FIELDS))
        }
        SlowMode::Read => (render(&asked, &target), Vec::new()),
    }
}

/// HTTP/2's opening: the preface and an empty SETTINGS frame.
pub(super) fn h2_preface(out: &mut Vec<u8>) {
    out.extend_from_slice(frame::PREFACE);
    frame::write_settings(out, &[]);
}

/// After the server's SETTINGS: their ACK, then the HEADERS frame that opens stream 1 and never
/// ends its header block (no END_HEADERS; END_STREAM, as a GET's).
pub(super) fn h2_open_stream(block: &[u8], out: &mut Vec<u8>) {
    frame::write_settings_ack(out);
    frame::write_header(
        out,
        block.len(),
        frame::kind::HEADERS,
        frame::flag::END_STREAM,
        1,
    );
    out.extend_from_slice(block);
}

/// A whole request without a body on `stream`: HEADERS with END_HEADERS and END_STREAM.
pub(super) fn h2_request(stream: u32, block: &[u8], out: &mut Vec<u8>) {
    frame::write_headers(
        out,
        stream,
        block,
        true,
        frame::DEFAULT_MAX_FRAME_SIZE as usize,
    );
}

/// One more piece of stream 1's header block: a CONTINUATION frame without END_HEADERS.
pub(super) fn h2_continuation(fragment: &[u8], out: &mut Vec<u8>) {
    frame::write_header(out, fragment.len(), frame::kind::CONTINUATION, 0, 1);
    out.extend_from_slice(fragment);
}

/// Whether `received` (the server's first bytes) hold its SETTINGS frame whole: the first frame
/// a server sends (RFC 9113 3.4).
pub(super) fn h2_settings_in(received: &[u8]) -> bool {
    if received.len() < frame::HEADER_LEN {
        return false;
    }
    let header = frame::FrameHeader::parse(received);
    header.kind == frame::kind::SETTINGS
        && received.len() >= frame::HEADER_LEN + header.len as usize
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::SlowSpec;

    fn wire(mode: SlowMode, http2: bool) -> Wire {
        let spec = LoadSpec {
            urls: vec!["http://127.0.0.1:1/a".into()],
            http2,
            slow: SlowSpec {
                clients: 1,
                mode,
                path: Some("/big".into()),
                ..SlowSpec::default()
            },
            ..LoadSpec::default()
        };
        Wire::build(&spec, &spec.resolve().unwrap())
    }

    #[test]
    fn slowloris_never_ends_its_head() {
        let w = wire(SlowMode::Headers, false);
        let head = String::from_utf8(w.slow_opening.clone()).unwrap();
        assert!(head.starts_with("GET /big HTTP/1.1\r\n") && head.ends_with("\r\n"));
        assert!(!head.contains("\r\n\r\n"));
        let mut out = Vec::new();
        w.trickle(0, 10_000, &mut out);
        assert!(!out.windows(4).any(|x| x == b"\r\n\r\n"));
        assert!(out.starts_with(b"X-Slow-00: 0\r\nX-Slow-01: 1\r\n"));
        let idle = String::from_utf8(w.idle_request).unwrap();
        assert!(idle.starts_with("GET /a HTTP/1.1\r\n") && idle.ends_with("\r\n\r\n"));
    }

    #[test]
    fn rudy_announces_its_length_and_trickles_the_body() {
        let w = wire(SlowMode::Body, false);
        let head = String::from_utf8(w.slow_opening.clone()).unwrap();
        assert!(head.starts_with("POST /big HTTP/1.1\r\n"), "{head}");
        assert!(head.contains("Content-Length: 4096\r\n") && head.ends_with("\r\n\r\n"));
        let mut out = Vec::new();
        w.trickle(60, 16, &mut out);
        assert_eq!(out, b"a".repeat(16));
    }

    #[test]
    fn h2_headers_open_a_stream_that_continues_forever() {
        let w = wire(SlowMode::Headers, true);
        let mut out = Vec::new();
        h2_open_stream(&w.slow_opening, &mut out);
        // SETTINGS ACK, then HEADERS on stream 1 without END_HEADERS.
        let headers = frame::FrameHeader::parse(&out[frame::HEADER_LEN..]);
        assert_eq!((headers.kind, headers.stream), (frame::kind::HEADERS, 1));
        assert!(!headers.has(frame::flag::END_HEADERS));
        let mut piece = Vec::new();
        w.trickle(0, 24, &mut piece);
        let mut cont = Vec::new();
        h2_continuation(&piece, &mut cont);
        let c = frame::FrameHeader::parse(&cont);
        assert_eq!((c.kind, c.len as usize), (frame::kind::CONTINUATION, 24));
        assert!(!c.has(frame::flag::END_HEADERS));
        let mut settings = Vec::new();
        frame::write_settings(
            &mut settings,
            &[(frame::setting::MAX_CONCURRENT_STREAMS, 9)],
        );
        assert!(h2_settings_in(&settings) && !h2_settings_in(&settings[..10]));
    }
}
