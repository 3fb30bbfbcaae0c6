//! The validation request of an HTTP/2 run: one request over a fresh HTTP/2 connection on a
//! blocking stream, which checks the server before the load goes over the same protocol.

use std::io::{Read, Write};

use crate::h2::connection::HTTP1_ANSWER;
use crate::h2::frame::{self, ErrorCode};
use crate::h2::{Connection, Limits, StreamSink};
use crate::http::response::Response;

/// The one stream's outcome, and its body.
#[derive(Default)]
struct One {
    response: Option<Response>,
    ended: Option<String>,
    body: Vec<u8>,
}

impl StreamSink for One {
    fn first_byte(&mut self, _stream: u32) {}
    fn complete(&mut self, _stream: u32, response: &Response) {
        self.response = Some(*response);
    }
    fn reset(&mut self, _stream: u32, code: u32) {
        self.ended = Some(format!("reset the stream ({})", ErrorCode(code)));
    }
    fn goaway(&mut self, last_stream: u32, code: u32) {
        // A graceful shutdown (NO_ERROR) that covers our stream 1 still answers it.
        if code == frame::code::NO_ERROR && last_stream >= 1 {
            return;
        }
        self.ended.get_or_insert(format!(
            "closed the connection (GOAWAY {})",
            ErrorCode(code)
        ));
    }
    fn data(&mut self, _stream: u32, bytes: &[u8]) {
        self.body.extend_from_slice(bytes);
    }
}

/// Sends the request (`block`, `body`) and returns its response and body. `read` reads what the
/// server sent, `Ok(0)` at its close, or says in words why it could not (a timeout included).
pub fn exchange<S: Read + Write + ?Sized>(
    stream: &mut S,
    block: &[u8],
    body: Option<&[u8]>,
    mut read: impl FnMut(&mut S, &mut [u8]) -> Result<usize, String>,
) -> Result<(Response, Vec<u8>), String> {
    let mut connection = Connection::new(&Limits::default());
    let mut one = One::default();
    let mut out = Vec::new();
    let mut buf = vec![0u8; 64 * 1024];
    let mut opened = false;
    loop {
        if !opened && connection.ready() {
            if !connection.can_open() {
                return Err("the server allows no HTTP/2 stream".into());
            }
            connection.open(block, body);
            opened = true;
        }
        if connection.wants_write() {
            connection.take_output(&mut out);
            stream
                .write_all(&out)
                .and_then(|()| stream.flush())
                .map_err(|e| format!("sending the first request failed: {e}"))?;
        }
        if let Some(response) = one.response {
            return Ok((response, one.body));
        }
        if let Some(ended) = one.ended.take() {
            return Err(format!("the server {ended} instead of answering"));
        }
        let n = read(stream, &mut buf)?;
        if n == 0 {
            return Err("the server closed the connection without a complete response".into());
        }
        if let Err(e) = connection.receive(&buf[..n], &mut one) {
            if e.why == HTTP1_ANSWER {
                return Err(HTTP1_ANSWER.into());
            }
            return Err(format!("the server broke HTTP/2 ({e})"));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::h2::frame::{self, code, flag, kind};

    /// The server's side, one read per chunk; what we write is dropped.
    struct Scripted(std::vec::IntoIter<Vec<u8>>);

    impl Read for Scripted {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            let chunk = self.0.next().unwrap_or_default();
            buf[..chunk.len()].copy_from_slice(&chunk);
            Ok(chunk.len())
        }
    }

    impl Write for Scripted {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    fn run(server: Vec<Vec<u8>>) -> Result<(Response, Vec<u8>), String> {
        let mut stream = Scripted(server.into_iter());
        exchange(&mut stream, &[0x82], None, |s, buf| {
            s.read(buf).map_err(|e| e.to_string())
        })
    }

    /// SETTINGS, then (once our stream 1 is open) a GOAWAY, then stream 1's answer.
    fn goaway_then_answer(last_stream: u32, error: u32) -> Vec<Vec<u8>> {
        let mut settings = Vec::new();
        frame::write_settings(&mut settings, &[]);
        let mut goaway = Vec::new();
        frame::write_goaway(&mut goaway, last_stream, error);
        let mut answer = Vec::new();
        // `:status: 200` (static index 8), ending the stream.
        frame::write_header(
            &mut answer,
            1,
            kind::HEADERS,
            flag::END_HEADERS | flag::END_STREAM,
            1,
        );
        answer.push(0x88);
        vec![settings, goaway, answer]
    }

    #[test]
    fn a_graceful_goaway_still_answers_the_stream_it_covers() {
        let (response, _) = run(goaway_then_answer(1, code::NO_ERROR)).unwrap();
        assert_eq!(response.status, 200);
    }

    #[test]
    fn a_goaway_that_leaves_the_stream_out_or_has_an_error_ends_the_exchange() {
        for (last, error) in [(0, code::NO_ERROR), (1, code::PROTOCOL_ERROR)] {
            let why = run(goaway_then_answer(last, error)).unwrap_err();
            assert!(why.contains("GOAWAY"), "{why}");
        }
    }

    #[test]
    fn an_http1_answer_says_so() {
        let why = run(vec![b"HTTP/1.1 400 Bad Request\r\n\r\n".to_vec()]).unwrap_err();
        assert_eq!(why, HTTP1_ANSWER);
    }
}
