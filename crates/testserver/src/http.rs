//! Just enough HTTP/1.x request parsing for a test server: request heads are
//! read up to CRLFCRLF, `Content-Length` bodies are skipped so pipelined
//! requests stay framed, and several requests may share one read (or one
//! request may span several reads).

use std::io::{self, Read};
use std::net::{Shutdown, TcpStream};
use std::time::{Duration, Instant};

/// Heads larger than this get a 431; keeps a confused client from growing the
/// buffer without bound.
const MAX_HEAD: usize = 64 * 1024;
const READ_CHUNK: usize = 16 * 1024;
/// How long a closing connection waits for the client's FIN (see `close_gracefully`).
const LINGER: Duration = Duration::from_secs(2);

pub struct Request {
    /// HEAD requests get the headers of the response but no body.
    pub is_head: bool,
    pub http10: bool,
    /// What the client asked for: HTTP/1.1 unless `Connection: close`,
    /// HTTP/1.0 only with `Connection: keep-alive`.
    pub keep_alive: bool,
}

pub enum ReadError {
    /// Peer closed or the socket failed; nothing useful can be written back.
    Gone,
    /// Malformed or unsupported request: answer with this status and close.
    Bad(u16),
}

impl From<io::Error> for ReadError {
    fn from(_: io::Error) -> Self {
        ReadError::Gone
    }
}

pub struct Conn {
    pub stream: TcpStream,
    buf: Vec<u8>,
    /// Unconsumed bytes are `buf[pos..len]`.
    pos: usize,
    len: usize,
}

impl Conn {
    pub fn new(stream: TcpStream) -> Self {
        Conn {
            stream,
            buf: vec![0; READ_CHUNK],
            pos: 0,
            len: 0,
        }
    }

    /// The next request, with its body already consumed. `Ok(None)` is a
    /// clean close between requests.
    pub fn next_request(&mut self) -> Result<Option<Request>, ReadError> {
        loop {
            if let Some(head_len) = find_head_end(&self.buf[self.pos..self.len]) {
                let head = &self.buf[self.pos..self.pos + head_len];
                let (req, body_len) = parse_head(head)?;
                self.pos += head_len;
                self.skip(body_len)?;
                return Ok(Some(req));
            }
            if self.len - self.pos >= MAX_HEAD {
                return Err(ReadError::Bad(431));
            }
            if self.fill()? == 0 {
                return if self.pos == self.len {
                    Ok(None)
                } else {
                    Err(ReadError::Gone)
                };
            }
        }
    }

    /// True if the next request is already buffered in full (head and body),
    /// i.e. the client pipelined and we can answer it without blocking on a
    /// read. Used to batch the responses to pipelined requests into one write
    /// without ever holding a response back while waiting for input.
    pub fn has_buffered_request(&self) -> bool {
        let buffered = &self.buf[self.pos..self.len];
        let Some(head_len) = find_head_end(buffered) else {
            return false;
        };
        match parse_head(&buffered[..head_len]) {
            Ok((_, body_len)) => (buffered.len() - head_len) as u64 >= body_len,
            // A bad head is refused without reading further.
            Err(_) => true,
        }
    }

    /// Reads and discards until EOF or error (for modes that stop answering).
    pub fn drain(&mut self) {
        while matches!(self.stream.read(&mut self.buf), Ok(n) if n > 0) {}
    }

    fn skip(&mut self, mut remaining: u64) -> Result<(), ReadError> {
        loop {
            let take = remaining.min((self.len - self.pos) as u64);
            self.pos += take as usize;
            remaining -= take;
            if remaining == 0 {
                return Ok(());
            }
            if self.fill()? == 0 {
                return Err(ReadError::Gone);
            }
        }
    }

    /// One read appended to the buffer, compacting or growing it first.
    fn fill(&mut self) -> io::Result<usize> {
        if self.pos == self.len {
            self.pos = 0;
            self.len = 0;
        } else if self.len == self.buf.len() {
            if self.pos > 0 {
                self.buf.copy_within(self.pos..self.len, 0);
                self.len -= self.pos;
                self.pos = 0;
            } else {
                self.buf.resize(self.buf.len() + READ_CHUNK, 0);
            }
        }
        let n = loop {
            match self.stream.read(&mut self.buf[self.len..]) {
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                r => break r?,
            }
        };
        self.len += n;
        Ok(n)
    }
}

/// Length of the head including its terminating CRLFCRLF, if complete.
fn find_head_end(bytes: &[u8]) -> Option<usize> {
    bytes
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .map(|i| i + 4)
}

/// Parses a request head; returns the request and its body length.
fn parse_head(head: &[u8]) -> Result<(Request, u64), ReadError> {
    let mut lines = head[..head.len() - 4]
        .split(|&b| b == b'\n')
        .map(|l| l.strip_suffix(b"\r").unwrap_or(l));
    let request_line = lines.next().unwrap_or_default();
    let mut parts = request_line.split(|&b| b == b' ');
    let (Some(method), Some(_target), Some(version), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(ReadError::Bad(400));
    };
    let http10 = match version {
        b"HTTP/1.1" => false,
        b"HTTP/1.0" => true,
        _ => return Err(ReadError::Bad(505)),
    };
    let (mut close, mut keep_alive, mut content_length) = (false, false, None);
    for line in lines {
        let colon = line
            .iter()
            .position(|&b| b == b':')
            .ok_or(ReadError::Bad(400))?;
        let name = &line[..colon];
        let value = line[colon + 1..].trim_ascii();
        if name.eq_ignore_ascii_case(b"connection") {
            for token in value.split(|&b| b == b',').map(<[u8]>::trim_ascii) {
                close |= token.eq_ignore_ascii_case(b"close");
                keep_alive |= token.eq_ignore_ascii_case(b"keep-alive");
            }
        } else if name.eq_ignore_ascii_case(b"content-length") {
            let n = parse_decimal(value).ok_or(ReadError::Bad(400))?;
            // Conflicting lengths are a framing ambiguity (request smuggling);
            // refuse rather than guess.
            if content_length.is_some_and(|old| old != n) {
                return Err(ReadError::Bad(400));
            }
            content_length = Some(n);
        } else if name.eq_ignore_ascii_case(b"transfer-encoding") {
            // Chunked request bodies are not needed by any test; say so
            // instead of losing the framing of the rest of the connection.
            return Err(ReadError::Bad(501));
        }
    }
    let keep_alive = if http10 { keep_alive && !close } else { !close };
    let req = Request {
        is_head: method == b"HEAD",
        http10,
        keep_alive,
    };
    Ok((req, content_length.unwrap_or(0)))
}

fn parse_decimal(s: &[u8]) -> Option<u64> {
    if s.is_empty() || !s.iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(s).ok()?.parse().ok()
}

pub fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        201 => "Created",
        204 => "No Content",
        301 => "Moved Permanently",
        302 => "Found",
        304 => "Not Modified",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        429 => "Too Many Requests",
        431 => "Request Header Fields Too Large",
        500 => "Internal Server Error",
        501 => "Not Implemented",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        505 => "HTTP Version Not Supported",
        _ => "Status",
    }
}

/// Close with a FIN the client will actually see. Closing a socket that still
/// has unread input (e.g. pipelined requests) makes the kernel send RST
/// instead, which can even discard the response we just wrote; so send our
/// FIN first, then read until the client closes too (bounded by `LINGER`).
pub fn close_gracefully(mut stream: &TcpStream) {
    let _ = stream.shutdown(Shutdown::Write);
    let _ = stream.set_read_timeout(Some(LINGER));
    let deadline = Instant::now() + LINGER;
    let mut sink = [0u8; 4096];
    while Instant::now() < deadline {
        match stream.read(&mut sink) {
            Ok(0) => break,
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => break,
        }
    }
}
