//! The validation request of an HTTP/1.x run.

use std::io::{Read, Write};

use crate::http::response::{Response, ResponseParser, ResponseSink};

/// Takes the one response of the validation request.
#[derive(Default)]
struct One {
    response: Option<Response>,
}

impl ResponseSink for One {
    fn first_byte(&mut self) {}
    fn complete(&mut self, r: &Response) {
        self.response.get_or_insert(*r);
    }
}

/// Sends `request` and returns its response and body (`head`: the request was a HEAD, whose
/// response has no body). `read` reads what the server sent, `Ok(0)` at its close, or says in
/// words why it could not (a timeout included).
pub fn exchange<S: Read + Write + ?Sized>(
    stream: &mut S,
    request: &[u8],
    head: bool,
    url: &str,
    mut read: impl FnMut(&mut S, &mut [u8]) -> Result<usize, String>,
) -> Result<(Response, Vec<u8>), String> {
    stream
        .write_all(request)
        .and_then(|()| stream.flush())
        .map_err(|e| format!("sending the first request to {url} failed: {e}"))?;
    let mut parser = ResponseParser::new(head);
    parser.capture_bodies();
    let mut sink = One::default();
    let mut buf = vec![0u8; 64 * 1024];
    let response = loop {
        if let Some(response) = sink.response {
            break response;
        }
        let n = read(stream, &mut buf)?;
        if n == 0 {
            parser.feed_eof(&mut sink);
            if sink.response.is_none() {
                return Err(format!(
                    "{url} closed the connection without a complete response"
                ));
            }
        } else if let Err(e) = parser.feed(&buf[..n], &mut sink) {
            return Err(format!("{url} did not answer with valid HTTP ({e:?})"));
        }
    };
    Ok((response, parser.captured_body().to_vec()))
}
