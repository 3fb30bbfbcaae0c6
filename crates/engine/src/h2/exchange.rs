//! One request over a fresh HTTP/2 connection on a blocking stream: the validation request of
//! an HTTP/2 run, which checks the server before the load goes over the same protocol.

use std::io::{Read, Write};

use super::connection::HTTP1_ANSWER;
use super::{Connection, Limits, StreamSink};
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
        self.ended = Some(format!(
            "reset the stream ({})",
            super::frame::ErrorCode(code)
        ));
    }
    fn goaway(&mut self, _last_stream: u32, code: u32) {
        self.ended.get_or_insert(format!(
            "closed the connection (GOAWAY {})",
            super::frame::ErrorCode(code)
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
