//! What the connections beside the load send, built once for the run from the spec: the idle
//! connections' request, and each slow mode's opening bytes and the endless trickle after them.

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
    // Over HTTP/2 the request's header block, which leaves no state in the server's table.
    let opening = |asked: &LoadSpec| {
        if spec.http2 {
            RequestBlocks::build(asked, std::slice::from_ref(&target))
                .stateless(0)
                .to_vec()
        } else {
            render(asked, &target)
        }
    };
    match slow.mode {
        SlowMode::Headers if spec.http2 => {
            let opening = opening(&asked);
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
            (opening(&asked), b"a".repeat(TRICKLE_FIELDS))
        }
        SlowMode::Read => (opening(&asked), Vec::new()),
    }
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
}
