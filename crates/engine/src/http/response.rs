//! Incremental HTTP/1.x response parser, one per connection.
//!
//! Responses arrive in whatever pieces the kernel hands over: one read may hold several pipelined
//! responses, or stop in the middle of a status line, a header, a chunk-size line or a body. The
//! parser keeps its place between reads instead of collecting whole responses, because a load
//! generator that buffered responses would spend its time copying bytes it never looks at, and
//! its memory would grow with response sizes rather than with the number of connections.
//!
//! Connections are many and mostly waiting, so a parser between responses owns no heap memory.
//! When a whole head is in one read (the common case), httparse parses it straight from the read
//! buffer with its header array on the stack, and Content-Length bodies are skipped by
//! arithmetic, so a response costs no allocation and no copy. Only a head split across reads is
//! copied into the carry buffer, which is allocated the first time that happens on a connection
//! and then kept for reuse.

use std::fmt;

use super::coding::Coding;

/// What the parser tells the connection, in order. Generic sink so the hot path has no dynamic
/// dispatch.
pub trait ResponseSink {
    /// The first byte of a new response arrived (for time-to-first-byte). Called once per final
    /// response, at the first byte of the response (an interim 1xx response counts as the start
    /// if it comes first).
    fn first_byte(&mut self);
    /// A complete final (non-1xx) response.
    fn complete(&mut self, response: &Response);
}

/// One complete final response, as the parser saw it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Response {
    pub status: u16,
    /// Bytes of status lines and headers, including any interim 1xx responses before it.
    pub head_bytes: u64,
    /// Body bytes after de-chunking (chunk framing, extensions and trailers not counted).
    pub body_bytes: u64,
    /// Number of interim 1xx responses that preceded it.
    pub interim: u32,
    /// Its `Content-Encoding` (identity without one).
    pub coding: Coding,
    /// The server will close the connection after this response (Connection: close, or HTTP/1.0
    /// without keep-alive, or an EOF-delimited body).
    pub close: bool,
}

/// Why the bytes received cannot be a valid response stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ParseError {
    /// Not HTTP: bad status line, bad header, bad chunk size, 101 Switching Protocols,
    /// conflicting Content-Length, etc.
    Protocol(&'static str),
    /// Response head larger than MAX_HEAD_BYTES (64 KiB) or more than 100 headers.
    HeadTooLarge,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ParseError::Protocol(why) => write!(f, "invalid HTTP response: {why}"),
            ParseError::HeadTooLarge => write!(
                f,
                "response head larger than {} bytes or with more than {MAX_HEADERS} headers",
                ResponseParser::MAX_HEAD_BYTES
            ),
        }
    }
}

impl std::error::Error for ParseError {}

/// Where the stream stood when the peer closed the connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EofOutcome {
    /// No response was in progress: a clean close between responses.
    Idle,
    /// An EOF-delimited body ended here; the response was passed to `complete`.
    Completed,
    /// The connection closed before the response head was complete (including after some head
    /// bytes).
    MidHead,
    /// The connection closed inside a body shorter than its Content-Length or before the last
    /// chunk.
    MidBody,
}

/// Header slots tried first. Enough for nearly every real response, and small enough that
/// clearing the array on each parse costs little next to the parse itself.
const STACK_HEADERS: usize = 32;
/// Header slots of the rare second attempt; more headers than this is `HeadTooLarge`.
const MAX_HEADERS: usize = 100;
/// While the carried part of a head is shorter than this, every read re-runs httparse on it, so
/// that garbage or a bad status line is reported at once wherever the reads were split. Past it,
/// httparse re-runs only when the new bytes hold a possible end of head or the carry grows past
/// a power of two, which keeps a slow trickle linear instead of quadratic while still catching a
/// bad header in a head that never ends.
const PROBE_BYTES: usize = 256;
/// Longest chunk-size line (size, whitespace and extensions) accepted. Bounded so that a server
/// streaming an endless extension is reported rather than followed forever.
const MAX_CHUNK_LINE: u32 = 4096;

/// The framing position of the response in progress.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Waiting for (the rest of) a status line and headers; `carry` may hold the start.
    Head,
    /// Inside a Content-Length body with this many bytes left.
    Length(u64),
    Chunked(Chunk),
    /// Inside a body that ends when the connection does.
    UntilEof,
    /// An error was reported; the stream cannot be resynchronised.
    Failed {
        error: ParseError,
        in_body: bool,
    },
}

/// Position inside a chunked body. Size lines and trailers are walked byte by byte (they are a
/// few bytes each); chunk data is skipped by arithmetic.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Chunk {
    /// Reading hex digits; `len` is the size-line length so far (0: no digit yet).
    Size {
        size: u64,
        len: u32,
    },
    /// Whitespace after the digits, before `;` or the line end.
    AfterSize {
        size: u64,
        len: u32,
    },
    /// Inside chunk extensions, which are not interpreted.
    Ext {
        size: u64,
        len: u32,
    },
    /// The size line's CR was seen; its LF must follow.
    SizeLf {
        size: u64,
    },
    /// Chunk data with this many bytes left (never 0).
    Data(u64),
    /// Chunk data ended; its CRLF must follow.
    DataCr,
    DataLf,
    /// After the last chunk: trailer lines until an empty one. `line` counts the current
    /// line's bytes, `total` all trailer bytes (bounded like a head).
    Trailer {
        line: u32,
        total: u32,
    },
    /// A trailer line's CR was seen; `empty` when it ends the trailer section.
    TrailerLf {
        empty: bool,
        total: u32,
    },
    /// The body is complete (never stored).
    Done,
}

/// What a complete head says, copied out of httparse's borrowed view.
struct Head {
    len: usize,
    status: u16,
    close: bool,
    chunked: bool,
    length: Option<u64>,
    coding: Coding,
}

/// Body capture for the validation request; boxed so that parsers on the load path pay one
/// pointer for it.
#[derive(Debug, Default)]
struct Capture {
    current: Vec<u8>,
    last: Vec<u8>,
}

/// Incremental parser of the responses on one connection. See the module documentation.
#[derive(Debug)]
pub struct ResponseParser {
    state: State,
    /// The response in progress: fields are filled in as its parts arrive.
    cur: Response,
    /// `first_byte` was already called for the response in progress.
    started: bool,
    head_request: bool,
    /// The start of a head that did not fit in one read. Empty (and unallocated until first
    /// needed) otherwise.
    carry: Vec<u8>,
    capture: Option<Box<Capture>>,
}

impl ResponseParser {
    pub const MAX_HEAD_BYTES: usize = 64 * 1024;

    /// `head_request`: responses carry no body whatever their headers say (the request method
    /// is HEAD).
    pub fn new(head_request: bool) -> Self {
        ResponseParser {
            state: State::Head,
            cur: Response::default(),
            started: false,
            head_request,
            carry: Vec::new(),
            capture: None,
        }
    }

    /// Keep the body bytes of responses (only used for the one validation request, never on
    /// the load path).
    pub fn capture_bodies(&mut self) {
        if self.capture.is_none() {
            self.capture = Some(Box::default());
        }
    }

    /// Body of the last completed response when capturing, else empty.
    pub fn captured_body(&self) -> &[u8] {
        match &self.capture {
            Some(c) => &c.last,
            None => &[],
        }
    }

    /// Parse bytes as they arrive; may complete zero, one or many responses (pipelining). Data
    /// after an error is ignored by the caller, who closes the connection.
    ///
    /// After an error the parser stays failed: `feed` returns the same error again and
    /// `feed_eof` reports `MidHead` or `MidBody`, until `reset`.
    #[inline]
    pub fn feed<S: ResponseSink>(&mut self, data: &[u8], sink: &mut S) -> Result<(), ParseError> {
        let mut pos = 0;
        while pos < data.len() {
            let rest = &data[pos..];
            let step = match self.state {
                State::Head => self.head(rest, sink),
                State::Length(left) => Ok(self.length_body(rest, left, sink)),
                State::Chunked(chunk) => self.chunked(rest, chunk, sink),
                State::UntilEof => {
                    self.body(rest);
                    Ok(rest.len())
                }
                State::Failed { error, .. } => Err(error),
            };
            match step {
                Ok(used) => pos += used,
                Err(error) => {
                    if !matches!(self.state, State::Failed { .. }) {
                        let in_body = !matches!(self.state, State::Head);
                        self.state = State::Failed { error, in_body };
                    }
                    return Err(error);
                }
            }
        }
        Ok(())
    }

    /// The peer closed the connection.
    pub fn feed_eof<S: ResponseSink>(&mut self, sink: &mut S) -> EofOutcome {
        let outcome = match self.state {
            State::Head if self.started => EofOutcome::MidHead,
            State::Head => EofOutcome::Idle,
            State::UntilEof => {
                self.complete(sink);
                EofOutcome::Completed
            }
            State::Length(_) | State::Chunked(_) => EofOutcome::MidBody,
            State::Failed { in_body: true, .. } => EofOutcome::MidBody,
            State::Failed { in_body: false, .. } => EofOutcome::MidHead,
        };
        self.reset();
        outcome
    }

    /// True when no response is partially received.
    #[inline]
    pub fn is_idle(&self) -> bool {
        self.state == State::Head && !self.started
    }

    /// Forget any partial state (the connection is being reused after a reconnect). Keeps
    /// capacity.
    pub fn reset(&mut self) {
        self.state = State::Head;
        self.cur = Response::default();
        self.started = false;
        self.carry.clear();
        if let Some(c) = &mut self.capture {
            c.current.clear();
        }
    }

    /// Consumes the start of `rest` as (part of) a head. Returns the bytes used, at least one.
    #[inline]
    fn head<S: ResponseSink>(&mut self, rest: &[u8], sink: &mut S) -> Result<usize, ParseError> {
        if !self.carry.is_empty() {
            return self.head_carried(rest, sink);
        }
        // Some servers send a stray CRLF after a body. It belongs to no response: skipping it
        // keeps it out of head_bytes and keeps it from starting a response that never comes.
        let skip = match rest.iter().position(|&b| b != b'\r' && b != b'\n') {
            Some(skip) => skip,
            None => return Ok(rest.len()),
        };
        let buf = &rest[skip..];
        if !self.started {
            self.started = true;
            sink.first_byte();
        }
        // Parsing at most MAX_HEAD_BYTES gives the same verdict as the carried path, which
        // never holds more, whatever the read sizes.
        let probe = &buf[..buf.len().min(Self::MAX_HEAD_BYTES)];
        match parse_head(probe)? {
            Some(head) => {
                self.on_head(&head, sink);
                Ok(skip + head.len)
            }
            None if buf.len() > Self::MAX_HEAD_BYTES => Err(ParseError::HeadTooLarge),
            None => {
                self.carry.extend_from_slice(buf);
                Ok(rest.len())
            }
        }
    }

    /// A head whose start is in `carry`. Copies only up to the end of the head, so the bytes
    /// after it (a body, the next response) are still parsed in place.
    #[inline(never)]
    fn head_carried<S: ResponseSink>(
        &mut self,
        rest: &[u8],
        sink: &mut S,
    ) -> Result<usize, ParseError> {
        let old = self.carry.len();
        let end = find_head_end(&self.carry, rest);
        let take = end.unwrap_or(rest.len());
        if old + take > Self::MAX_HEAD_BYTES {
            // Parse exactly the bytes the single-read path would have, so that a bad header
            // early in an oversized head gets the same error however the head was split.
            self.carry
                .extend_from_slice(&rest[..Self::MAX_HEAD_BYTES - old]);
            return Err(match parse_head(&self.carry) {
                Err(e) => e,
                Ok(_) => ParseError::HeadTooLarge,
            });
        }
        self.carry.extend_from_slice(&rest[..take]);
        let doubled = self.carry.len().ilog2() > old.ilog2();
        if end.is_none() && old >= PROBE_BYTES && !doubled {
            return Ok(take);
        }
        match parse_head(&self.carry)? {
            None => Ok(take),
            Some(head) => {
                // `carry` held no end of head before this read (else it would have been
                // parsed then), so the head ends inside `rest`.
                let used = match head.len.checked_sub(old) {
                    Some(used) if used > 0 => used,
                    _ => return Err(ParseError::Protocol("malformed response head")),
                };
                self.carry.clear();
                self.on_head(&head, sink);
                Ok(used)
            }
        }
    }

    #[inline]
    fn on_head<S: ResponseSink>(&mut self, head: &Head, sink: &mut S) {
        self.cur.head_bytes += head.len as u64;
        if head.status < 200 {
            // 100 Continue, 103 Early Hints...: the final response follows on the same stream.
            self.cur.interim += 1;
            return;
        }
        self.cur.status = head.status;
        self.cur.close = head.close;
        self.cur.coding = head.coding;
        if self.head_request || head.status == 204 || head.status == 304 {
            self.complete(sink);
        } else if head.chunked {
            self.state = State::Chunked(Chunk::Size { size: 0, len: 0 });
        } else if let Some(length) = head.length {
            if length == 0 {
                self.complete(sink);
            } else {
                self.state = State::Length(length);
            }
        } else {
            self.cur.close = true;
            self.state = State::UntilEof;
        }
    }

    #[inline]
    fn length_body<S: ResponseSink>(&mut self, rest: &[u8], left: u64, sink: &mut S) -> usize {
        let n = left.min(rest.len() as u64) as usize;
        self.body(&rest[..n]);
        if n as u64 == left {
            self.complete(sink);
        } else {
            self.state = State::Length(left - n as u64);
        }
        n
    }

    fn chunked<S: ResponseSink>(
        &mut self,
        rest: &[u8],
        mut chunk: Chunk,
        sink: &mut S,
    ) -> Result<usize, ParseError> {
        use Chunk::*;
        const BAD_SIZE: ParseError = ParseError::Protocol("bad chunk size line");
        const LONG_LINE: ParseError = ParseError::Protocol("chunk size line too long");
        let line_end = |size: u64| {
            if size == 0 {
                Trailer { line: 0, total: 0 }
            } else {
                Data(size)
            }
        };
        let mut i = 0;
        while i < rest.len() {
            if let Data(left) = chunk {
                let n = left.min((rest.len() - i) as u64) as usize;
                self.body(&rest[i..i + n]);
                i += n;
                chunk = if n as u64 == left {
                    DataCr
                } else {
                    Data(left - n as u64)
                };
                continue;
            }
            let b = rest[i];
            i += 1;
            chunk = match chunk {
                Size { size, len } => match b {
                    b'0'..=b'9' | b'a'..=b'f' | b'A'..=b'F' => {
                        if size >> 60 != 0 {
                            return Err(ParseError::Protocol("chunk size overflows"));
                        }
                        if len >= MAX_CHUNK_LINE {
                            return Err(LONG_LINE);
                        }
                        let digit = (b as char).to_digit(16).unwrap_or(0) as u64;
                        Size {
                            size: size << 4 | digit,
                            len: len + 1,
                        }
                    }
                    _ if len == 0 => return Err(BAD_SIZE),
                    b' ' | b'\t' => AfterSize { size, len: len + 1 },
                    b';' => Ext { size, len: len + 1 },
                    b'\r' => SizeLf { size },
                    b'\n' => line_end(size),
                    _ => return Err(BAD_SIZE),
                },
                AfterSize { len, .. } | Ext { len, .. } if len >= MAX_CHUNK_LINE => {
                    return Err(LONG_LINE)
                }
                AfterSize { size, len } => match b {
                    b' ' | b'\t' => AfterSize { size, len: len + 1 },
                    b';' => Ext { size, len: len + 1 },
                    b'\r' => SizeLf { size },
                    b'\n' => line_end(size),
                    _ => return Err(BAD_SIZE),
                },
                Ext { size, len } => match b {
                    b'\r' => SizeLf { size },
                    b'\n' => line_end(size),
                    _ => Ext { size, len: len + 1 },
                },
                SizeLf { size } => match b {
                    b'\n' => line_end(size),
                    _ => return Err(BAD_SIZE),
                },
                DataCr => match b {
                    b'\r' => DataLf,
                    b'\n' => Size { size: 0, len: 0 },
                    _ => return Err(ParseError::Protocol("chunk data longer than its size")),
                },
                DataLf => match b {
                    b'\n' => Size { size: 0, len: 0 },
                    _ => return Err(ParseError::Protocol("chunk data longer than its size")),
                },
                Trailer { line, total } => match b {
                    b'\r' => TrailerLf {
                        empty: line == 0,
                        total,
                    },
                    b'\n' if line == 0 => Done,
                    b'\n' => Trailer { line: 0, total },
                    _ if total as usize >= Self::MAX_HEAD_BYTES => {
                        return Err(ParseError::HeadTooLarge)
                    }
                    _ => Trailer {
                        line: line + 1,
                        total: total + 1,
                    },
                },
                TrailerLf { empty, total } => match b {
                    b'\n' if empty => Done,
                    b'\n' => Trailer { line: 0, total },
                    _ => return Err(ParseError::Protocol("bad trailer line end")),
                },
                Data(_) | Done => unreachable!("handled above or never stored"),
            };
            if chunk == Done {
                self.complete(sink);
                return Ok(i);
            }
        }
        self.state = State::Chunked(chunk);
        Ok(i)
    }

    #[inline]
    fn body(&mut self, bytes: &[u8]) {
        self.cur.body_bytes += bytes.len() as u64;
        if let Some(c) = &mut self.capture {
            c.current.extend_from_slice(bytes);
        }
    }

    #[inline]
    fn complete<S: ResponseSink>(&mut self, sink: &mut S) {
        sink.complete(&self.cur);
        if let Some(c) = &mut self.capture {
            std::mem::swap(&mut c.last, &mut c.current);
            c.current.clear();
        }
        self.cur = Response::default();
        self.started = false;
        self.state = State::Head;
    }
}

/// Index in `rest` just past the first end of head (an empty line: LF, optional CR, LF) in
/// `carry` followed by `rest`, looking back into `carry` only for a terminator that straddles
/// the two. `carry` is known to hold no end of head itself.
fn find_head_end(carry: &[u8], rest: &[u8]) -> Option<usize> {
    let before = |i: usize, back: usize| -> u8 {
        if i >= back {
            rest[i - back]
        } else {
            let j = carry.len() + i;
            if j >= back {
                carry[j - back]
            } else {
                0
            }
        }
    };
    let mut from = 0;
    while let Some(off) = rest[from..].iter().position(|&b| b == b'\n') {
        let i = from + off;
        let p1 = before(i, 1);
        if p1 == b'\n' || (p1 == b'\r' && before(i, 2) == b'\n') {
            return Some(i + 1);
        }
        from = i + 1;
    }
    None
}

/// httparse on `buf`: `Ok(None)` when the head is not complete yet.
#[inline]
fn parse_head(buf: &[u8]) -> Result<Option<Head>, ParseError> {
    let mut headers = [httparse::EMPTY_HEADER; STACK_HEADERS];
    let mut response = httparse::Response::new(&mut headers);
    match response.parse(buf) {
        Ok(httparse::Status::Complete(len)) => head_from(&response, len).map(Some),
        Ok(httparse::Status::Partial) => Ok(None),
        Err(httparse::Error::TooManyHeaders) => parse_head_many(buf),
        Err(e) => Err(httparse_error(e)),
    }
}

/// The second attempt for heads with more headers than the stack array of the first; kept out
/// of line so the common path's stack frame stays small.
#[cold]
#[inline(never)]
fn parse_head_many(buf: &[u8]) -> Result<Option<Head>, ParseError> {
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut response = httparse::Response::new(&mut headers);
    match response.parse(buf) {
        Ok(httparse::Status::Complete(len)) => head_from(&response, len).map(Some),
        Ok(httparse::Status::Partial) => Ok(None),
        Err(httparse::Error::TooManyHeaders) => Err(ParseError::HeadTooLarge),
        Err(e) => Err(httparse_error(e)),
    }
}

fn httparse_error(e: httparse::Error) -> ParseError {
    ParseError::Protocol(match e {
        httparse::Error::Version => "bad HTTP version",
        httparse::Error::Status => "bad status line",
        httparse::Error::HeaderName => "bad header name",
        httparse::Error::HeaderValue => "bad header value",
        httparse::Error::NewLine => "bad line end",
        httparse::Error::Token => "bad token",
        httparse::Error::TooManyHeaders => "too many headers",
    })
}

fn head_from(response: &httparse::Response<'_, '_>, len: usize) -> Result<Head, ParseError> {
    // A complete parse always sets both.
    let status = response.code.unwrap_or(0);
    let version = response.version.unwrap_or(1);
    if status < 100 {
        return Err(ParseError::Protocol("status code below 100"));
    }
    if status == 101 {
        return Err(ParseError::Protocol(
            "101 Switching Protocols (upgrades are not supported)",
        ));
    }
    let mut head = Head {
        len,
        status,
        close: false,
        chunked: false,
        length: None,
        coding: Coding::Identity,
    };
    if status < 200 {
        // Interim responses have no body, and their headers do not describe the final one.
        return Ok(head);
    }
    let mut keep_alive = false;
    let mut transfer_encoded = false;
    for header in response.headers.iter() {
        let (name, value) = (header.name.as_bytes(), header.value);
        // Dispatch on length first: most headers are none of these four and are passed over
        // with one comparison. httparse has already trimmed whitespace around values, so the
        // usual single-token values are compared whole before falling back to list parsing.
        match name.len() {
            14 if token_is(name, b"content-length") => {
                head.length = Some(content_length(value, head.length)?);
            }
            17 if token_is(name, b"transfer-encoding") => {
                transfer_encoded = true;
                // Chunked only if it is the last coding applied; any other last coding means
                // the body runs to EOF (RFC 9112, section 6.3).
                let mut codings = value.rsplit(|&b| b == b',').map(trim);
                if let Some(last) = codings.find(|t| !t.is_empty()) {
                    head.chunked = last.eq_ignore_ascii_case(b"chunked");
                }
            }
            16 if token_is(name, b"content-encoding") => {
                head.coding = Coding::of_header(value);
            }
            10 if token_is(name, b"connection") => {
                if value.eq_ignore_ascii_case(b"keep-alive") {
                    keep_alive = true;
                } else if value.eq_ignore_ascii_case(b"close") {
                    head.close = true;
                } else {
                    for token in value.split(|&b| b == b',').map(trim) {
                        head.close |= token.eq_ignore_ascii_case(b"close");
                        keep_alive |= token.eq_ignore_ascii_case(b"keep-alive");
                    }
                }
            }
            _ => {}
        }
    }
    if transfer_encoded {
        // Transfer-Encoding overrides Content-Length (RFC 9112, section 6.3).
        head.length = None;
    }
    if version == 0 && !keep_alive {
        head.close = true;
    }
    Ok(head)
}

/// A Content-Length value: one or more equal decimal numbers separated by commas (a list can
/// come from a proxy merging duplicate headers), and equal to `previous` from an earlier header.
fn content_length(value: &[u8], previous: Option<u64>) -> Result<u64, ParseError> {
    // Up to 19 digits cannot overflow a u64: the usual plain number needs no checks per digit.
    if !value.is_empty() && value.len() <= 19 && value.iter().all(u8::is_ascii_digit) {
        let n = value.iter().fold(0u64, |n, &d| n * 10 + (d - b'0') as u64);
        return match previous {
            Some(l) if l != n => Err(ParseError::Protocol("conflicting Content-Length")),
            _ => Ok(n),
        };
    }
    let mut length = previous;
    for part in value.split(|&b| b == b',').map(trim) {
        if part.is_empty() || !part.iter().all(u8::is_ascii_digit) {
            return Err(ParseError::Protocol("bad Content-Length"));
        }
        let mut n: u64 = 0;
        for &d in part {
            n = n
                .checked_mul(10)
                .and_then(|n| n.checked_add((d - b'0') as u64))
                .ok_or(ParseError::Protocol("Content-Length overflows"))?;
        }
        match length {
            Some(l) if l != n => return Err(ParseError::Protocol("conflicting Content-Length")),
            _ => length = Some(n),
        }
    }
    length.ok_or(ParseError::Protocol("bad Content-Length"))
}

/// Case-insensitive equality of a header name with a lower-case constant of at least 8 bytes,
/// compared a word at a time: the generic byte loop was most of the cost of reading the headers.
/// Folding with `| 0x20` is exact here because httparse only lets token characters into a name,
/// and none of them but the upper-case letters folds onto a lower-case letter or `-`.
#[inline(always)]
fn token_is(name: &[u8], lower: &[u8]) -> bool {
    const FOLD: u64 = 0x2020_2020_2020_2020;
    let word = |s: &[u8], at: usize| u64::from_le_bytes(s[at..at + 8].try_into().unwrap());
    if name.len() != lower.len() || lower.len() < 8 {
        return false;
    }
    let mut at = 0;
    while at + 8 < lower.len() {
        if word(name, at) | FOLD != word(lower, at) {
            return false;
        }
        at += 8;
    }
    let last = lower.len() - 8;
    word(name, last) | FOLD == word(lower, last)
}

pub(super) fn trim(s: &[u8]) -> &[u8] {
    let is_ws = |b: &u8| *b == b' ' || *b == b'\t';
    let start = s.iter().position(|b| !is_ws(b)).unwrap_or(s.len());
    let end = s.iter().rposition(|b| !is_ws(b)).map_or(start, |e| e + 1);
    &s[start..end]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    enum Ev {
        First,
        Done(Response),
    }

    #[derive(Debug, Default)]
    struct Rec(Vec<Ev>);

    impl ResponseSink for Rec {
        fn first_byte(&mut self) {
            self.0.push(Ev::First);
        }
        fn complete(&mut self, response: &Response) {
            self.0.push(Ev::Done(*response));
        }
    }

    impl Rec {
        fn done(&self) -> Vec<Response> {
            self.0
                .iter()
                .filter_map(|e| match e {
                    Ev::Done(r) => Some(*r),
                    Ev::First => None,
                })
                .collect()
        }
    }

    fn resp(
        status: u16,
        head_bytes: usize,
        body_bytes: u64,
        interim: u32,
        close: bool,
    ) -> Response {
        Response {
            status,
            head_bytes: head_bytes as u64,
            body_bytes,
            interim,
            close,
            ..Default::default()
        }
    }

    /// Everything observable about one run over a stream cut into `parts`, ending with EOF
    /// unless a feed failed.
    #[derive(Debug, PartialEq, Eq)]
    struct Run {
        events: Vec<Ev>,
        error: Option<ParseError>,
        eof: Option<EofOutcome>,
        captured: Vec<u8>,
    }

    fn run_parts(parts: &[&[u8]], head_request: bool) -> Run {
        let mut p = ResponseParser::new(head_request);
        p.capture_bodies();
        let mut rec = Rec::default();
        let mut error = None;
        for part in parts {
            if let Err(e) = p.feed(part, &mut rec) {
                error = Some(e);
                break;
            }
        }
        let eof = if error.is_none() {
            Some(p.feed_eof(&mut rec))
        } else {
            None
        };
        Run {
            events: rec.0,
            error,
            eof,
            captured: p.captured_body().to_vec(),
        }
    }

    fn run_whole(data: &[u8]) -> Run {
        run_parts(&[data], false)
    }

    /// Feeds `data` in one read and returns the completed responses, failing on any error.
    fn parse_ok(data: &[u8]) -> Vec<Response> {
        let mut p = ResponseParser::new(false);
        let mut rec = Rec::default();
        p.feed(data, &mut rec).expect("valid stream");
        rec.done()
    }

    fn parse_err(data: &[u8]) -> ParseError {
        let mut p = ResponseParser::new(false);
        p.feed(data, &mut Rec::default())
            .expect_err("invalid stream")
    }

    const CL_HEAD: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n";
    const CHUNKED_HEAD: &[u8] = b"HTTP/1.1 201 Created\r\nTransfer-Encoding: chunked\r\n\r\n";
    const CHUNKED_BODY: &[u8] =
        b"4;a=b\r\nWiki\r\n5 ; n=\"v;x\"\r\npedia\r\nE\r\n in\r\n\r\nchunks.\r\n0;end\r\nExpires: x\r\nX-T: y\r\n\r\n";
    const CHUNKED_DECODED: &[u8] = b"Wikipedia in\r\n\r\nchunks.";

    fn cat(parts: &[&[u8]]) -> Vec<u8> {
        parts.concat()
    }

    #[test]
    fn single_content_length_response() {
        let data = cat(&[CL_HEAD, b"hello"]);
        let mut p = ResponseParser::new(false);
        let mut rec = Rec::default();
        p.feed(&data, &mut rec).unwrap();
        assert_eq!(
            rec.0,
            vec![Ev::First, Ev::Done(resp(200, CL_HEAD.len(), 5, 0, false))]
        );
        assert!(p.is_idle());
        assert_eq!(p.carry.capacity(), 0, "a whole response must not allocate");
        assert_eq!(p.feed_eof(&mut rec), EofOutcome::Idle);
    }

    #[test]
    fn pipelined_responses_in_one_read() {
        let no_content = b"HTTP/1.1 204 No Content\r\nContent-Length: 3\r\n\r\n";
        let data = cat(&[
            CL_HEAD,
            b"hello",
            CHUNKED_HEAD,
            CHUNKED_BODY,
            no_content,
            CL_HEAD,
            b"world",
        ]);
        let mut p = ResponseParser::new(false);
        let mut rec = Rec::default();
        p.feed(&data, &mut rec).unwrap();
        let cl = resp(200, CL_HEAD.len(), 5, 0, false);
        let chunked = resp(
            201,
            CHUNKED_HEAD.len(),
            CHUNKED_DECODED.len() as u64,
            0,
            false,
        );
        let none = resp(204, no_content.len(), 0, 0, false);
        assert_eq!(
            rec.0,
            vec![
                Ev::First,
                Ev::Done(cl),
                Ev::First,
                Ev::Done(chunked),
                Ev::First,
                Ev::Done(none),
                Ev::First,
                Ev::Done(cl)
            ]
        );
        assert!(p.is_idle());
        assert_eq!(p.carry.capacity(), 0);
    }

    /// Streams whose every split must parse exactly like the whole.
    fn split_streams() -> Vec<Vec<u8>> {
        vec![
            // Content-Length then chunked with extensions and trailers.
            cat(&[CL_HEAD, b"hello", CHUNKED_HEAD, CHUNKED_BODY]),
            // Interim responses, LF-only lines, a stray CRLF, then an EOF-delimited body.
            cat(&[
                b"HTTP/1.1 100 Continue\r\n\r\n",
                b"HTTP/1.1 200 OK\nContent-Length: 2\n\nok\r\n",
                b"HTTP/1.0 200 OK\r\nServer: x\r\n\r\nuntil the end",
            ]),
            // Chunked then a head-only status, then a response cut in its body.
            cat(&[
                b"HTTP/1.1 200 OK\r\ntransfer-encoding: gzip, CHUNKED\r\nConnection: close\r\n\r\n",
                b"A\r\n0123456789\r\n0\r\n\r\n",
                b"HTTP/1.1 304 Not Modified\r\nContent-Length: 9\r\n\r\n",
                CL_HEAD,
                b"hel",
            ]),
            // A valid response, then one whose header is broken.
            cat(&[CL_HEAD, b"hello", b"HTTP/1.1 200 OK\r\nBad Header\r\n\r\n"]),
            // A valid response, then a bad chunk.
            cat(&[
                CHUNKED_HEAD,
                b"2\r\nab\r\n0\r\n\r\n",
                CHUNKED_HEAD,
                b"3\r\nabcd\r\n0\r\n\r\n",
            ]),
        ]
    }

    #[test]
    fn split_reads_at_every_offset() {
        for data in split_streams() {
            let whole = run_whole(&data);
            for i in 0..=data.len() {
                let (a, b) = data.split_at(i);
                assert_eq!(
                    run_parts(&[a, b], false),
                    whole,
                    "split at {i} of {:?}",
                    String::from_utf8_lossy(&data)
                );
            }
        }
    }

    #[test]
    fn split_reads_at_every_pair_of_offsets() {
        let data = cat(&[CL_HEAD, b"hello", CHUNKED_HEAD, CHUNKED_BODY]);
        let whole = run_whole(&data);
        for i in 0..=data.len() {
            for j in i..=data.len() {
                let parts = [&data[..i], &data[i..j], &data[j..]];
                assert_eq!(run_parts(&parts, false), whole, "split at {i} and {j}");
            }
        }
    }

    #[test]
    fn byte_at_a_time() {
        for data in split_streams() {
            let parts: Vec<&[u8]> = data.chunks(1).collect();
            assert_eq!(run_parts(&parts, false), run_whole(&data));
        }
    }

    #[test]
    fn whole_reference_runs_are_what_they_should_be() {
        let streams = split_streams();
        let r = run_whole(&streams[0]);
        assert_eq!(r.error, None);
        assert_eq!(r.eof, Some(EofOutcome::Idle));
        assert_eq!(r.events.len(), 4);
        assert_eq!(r.captured, CHUNKED_DECODED);

        let r = run_whole(&streams[1]);
        assert_eq!(r.eof, Some(EofOutcome::Completed));
        let head1 = b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\nContent-Length: 2\n\n".len();
        let head2 = b"HTTP/1.0 200 OK\r\nServer: x\r\n\r\n".len();
        assert_eq!(
            r.events,
            vec![
                Ev::First,
                Ev::Done(resp(200, head1, 2, 1, false)),
                Ev::First,
                Ev::Done(resp(200, head2, 13, 0, true))
            ]
        );
        assert_eq!(r.captured, b"until the end");

        let r = run_whole(&streams[2]);
        assert_eq!(r.eof, Some(EofOutcome::MidBody));
        let done: Vec<u16> = r
            .events
            .iter()
            .filter_map(|e| match e {
                Ev::Done(r) => Some(r.status),
                Ev::First => None,
            })
            .collect();
        assert_eq!(done, vec![200, 304]);
        assert_eq!(r.events.last(), Some(&Ev::First));

        let r = run_whole(&streams[3]);
        assert_eq!(r.error, Some(ParseError::Protocol("bad header name")));
        assert_eq!(
            r.events,
            vec![
                Ev::First,
                Ev::Done(resp(200, CL_HEAD.len(), 5, 0, false)),
                Ev::First
            ]
        );

        let r = run_whole(&streams[4]);
        assert_eq!(
            r.error,
            Some(ParseError::Protocol("chunk data longer than its size"))
        );
        assert_eq!(r.captured, b"ab");
    }

    #[test]
    fn chunked_with_extensions_and_trailers() {
        let data = cat(&[CHUNKED_HEAD, CHUNKED_BODY]);
        let r = run_whole(&data);
        assert_eq!(r.error, None);
        assert_eq!(
            r.events,
            vec![
                Ev::First,
                Ev::Done(resp(
                    201,
                    CHUNKED_HEAD.len(),
                    CHUNKED_DECODED.len() as u64,
                    0,
                    false
                ))
            ]
        );
        assert_eq!(r.captured, CHUNKED_DECODED);

        // Upper-case hex, whitespace before the line end, no trailers, codings in any case.
        let data = b"HTTP/1.1 200 OK\r\nTRANSFER-ENCODING: gzip,Chunked\r\n\r\n1A \r\nabcdefghijklmnopqrstuvwxyz\r\n0\r\n\r\n";
        assert_eq!(parse_ok(data)[0].body_bytes, 26);

        // Leading zeros do not count against the size.
        let data = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0000000000000000000000003\r\nabc\r\n000\r\n\r\n";
        assert_eq!(parse_ok(data)[0].body_bytes, 3);

        // A chunk-size line split at every byte, with the chunk data arriving later.
        let line = b"1f;name=value;other=\"quoted;still\"\r\n";
        for i in 0..=line.len() {
            let mut p = ResponseParser::new(false);
            let mut rec = Rec::default();
            p.feed(CHUNKED_HEAD, &mut rec).unwrap();
            p.feed(&line[..i], &mut rec).unwrap();
            p.feed(&line[i..], &mut rec).unwrap();
            p.feed(&[b'x'; 31], &mut rec).unwrap();
            assert!(rec.done().is_empty());
            p.feed(b"\r\n0\r\n\r\n", &mut rec).unwrap();
            assert_eq!(rec.done()[0].body_bytes, 31, "split at {i}");
        }
    }

    #[test]
    fn bad_chunks() {
        let bad = |body: &[u8]| parse_err(&cat(&[CHUNKED_HEAD, body]));
        assert_eq!(bad(b"zz\r\n"), ParseError::Protocol("bad chunk size line"));
        assert_eq!(bad(b"\r\n"), ParseError::Protocol("bad chunk size line"));
        assert_eq!(
            bad(b";ext\r\n"),
            ParseError::Protocol("bad chunk size line")
        );
        assert_eq!(bad(b"-1\r\n"), ParseError::Protocol("bad chunk size line"));
        assert_eq!(bad(b"5 5\r\n"), ParseError::Protocol("bad chunk size line"));
        assert_eq!(bad(b"5\rx"), ParseError::Protocol("bad chunk size line"));
        assert_eq!(
            bad(b"10000000000000000\r\n"),
            ParseError::Protocol("chunk size overflows")
        );
        assert_eq!(
            bad(b"3\r\nabcd\r\n"),
            ParseError::Protocol("chunk data longer than its size")
        );
        assert_eq!(
            bad(b"3\r\nabc\rX"),
            ParseError::Protocol("chunk data longer than its size")
        );
        assert_eq!(
            bad(b"0\r\nX: y\rX"),
            ParseError::Protocol("bad trailer line end")
        );
        let mut long = b"5;".to_vec();
        long.resize(10_000, b'x');
        assert_eq!(bad(&long), ParseError::Protocol("chunk size line too long"));
        let mut trailers = b"0\r\n".to_vec();
        for _ in 0..1000 {
            trailers.extend_from_slice(b"X-Trailer: 0123456789012345678901234567890123456789012345678901234567890123456789\r\n");
        }
        assert_eq!(bad(&trailers), ParseError::HeadTooLarge);
        // The largest size that fits is fine (and leaves the body in progress).
        let mut p = ResponseParser::new(false);
        p.feed(
            &cat(&[CHUNKED_HEAD, b"ffffffffffffffff\r\nabc"]),
            &mut Rec::default(),
        )
        .unwrap();
        assert_eq!(p.feed_eof(&mut Rec::default()), EofOutcome::MidBody);
        // LF-only framing is accepted.
        assert_eq!(
            parse_ok(&cat(&[CHUNKED_HEAD, b"3\nabc\n0\n\n"]))[0].body_bytes,
            3
        );
    }

    #[test]
    fn eof_delimited_bodies() {
        let head = b"HTTP/1.1 200 OK\r\nServer: x\r\n\r\n";
        let mut p = ResponseParser::new(false);
        p.capture_bodies();
        let mut rec = Rec::default();
        p.feed(&cat(&[head, b"abc"]), &mut rec).unwrap();
        p.feed(b"HTTP/1.1 200 OK\r\n\r\n", &mut rec).unwrap();
        assert_eq!(rec.0, vec![Ev::First]);
        assert!(!p.is_idle());
        assert_eq!(p.feed_eof(&mut rec), EofOutcome::Completed);
        assert_eq!(
            rec.0,
            vec![Ev::First, Ev::Done(resp(200, head.len(), 22, 0, true))]
        );
        assert_eq!(p.captured_body(), b"abcHTTP/1.1 200 OK\r\n\r\n");
        assert!(p.is_idle());

        // An empty EOF-delimited body, HTTP/1.0 without Content-Length, and a
        // Transfer-Encoding that is not chunked all end at EOF.
        for head in [
            &b"HTTP/1.1 200 OK\r\n\r\n"[..],
            b"HTTP/1.0 200 OK\r\nConnection: keep-alive\r\n\r\n",
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked, gzip\r\nContent-Length: 3\r\n\r\n",
        ] {
            let r = run_whole(head);
            assert_eq!(r.eof, Some(EofOutcome::Completed));
            assert_eq!(
                r.events,
                vec![Ev::First, Ev::Done(resp(200, head.len(), 0, 0, true))]
            );
        }
    }

    #[test]
    fn head_responses_have_no_body() {
        let heads: [&[u8]; 3] = [
            b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n",
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n",
            b"HTTP/1.1 404 Not Found\r\n\r\n",
        ];
        let data = heads.concat();
        for parts in [vec![&data[..]], data.chunks(7).collect()] {
            let r = run_parts(&parts, true);
            assert_eq!(r.error, None);
            assert_eq!(r.eof, Some(EofOutcome::Idle));
            let expected: Vec<Ev> = heads
                .iter()
                .zip([200, 200, 404])
                .flat_map(|(h, s)| [Ev::First, Ev::Done(resp(s, h.len(), 0, 0, false))])
                .collect();
            assert_eq!(r.events, expected);
        }
    }

    #[test]
    fn no_body_statuses() {
        let no_content = b"HTTP/1.1 204 No Content\r\nContent-Length: 10\r\n\r\n";
        let not_modified = b"HTTP/1.1 304 Not Modified\r\nTransfer-Encoding: chunked\r\n\r\n";
        let data = cat(&[no_content, not_modified, CL_HEAD, b"hello"]);
        assert_eq!(
            parse_ok(&data),
            vec![
                resp(204, no_content.len(), 0, 0, false),
                resp(304, not_modified.len(), 0, 0, false),
                resp(200, CL_HEAD.len(), 5, 0, false)
            ]
        );
        // No body and no length: not EOF-delimited either.
        let r = run_whole(b"HTTP/1.1 204 No Content\r\n\r\n");
        assert_eq!(r.eof, Some(EofOutcome::Idle));
        assert!(!r.events.iter().any(|e| matches!(e, Ev::Done(r) if r.close)));
    }

    #[test]
    fn interim_then_final() {
        let interim = b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a.css>; rel=preload\r\n\r\n";
        let data = cat(&[interim, CL_HEAD, b"hello"]);
        let expected = vec![
            Ev::First,
            Ev::Done(resp(200, interim.len() + CL_HEAD.len(), 5, 2, false)),
        ];
        assert_eq!(run_whole(&data).events, expected);
        let parts: Vec<&[u8]> = data.chunks(3).collect();
        assert_eq!(run_parts(&parts, false).events, expected);

        // The interim response starts the response for time-to-first-byte, once.
        let mut p = ResponseParser::new(false);
        let mut rec = Rec::default();
        p.feed(b"HTTP/1.1 100 Continue\r\n\r\n", &mut rec).unwrap();
        assert_eq!(rec.0, vec![Ev::First]);
        assert!(!p.is_idle());
        p.feed(CL_HEAD, &mut rec).unwrap();
        assert_eq!(rec.0, vec![Ev::First]);
        p.feed(b"hello", &mut rec).unwrap();
        assert_eq!(rec.0.len(), 2);
        assert!(p.is_idle());

        // Interim headers do not describe the final response.
        let data = b"HTTP/1.1 100 Continue\r\nContent-Length: 5\r\nConnection: close\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n";
        let done = parse_ok(data);
        assert_eq!(done.len(), 1);
        assert_eq!(
            (done[0].body_bytes, done[0].close, done[0].interim),
            (0, false, 1)
        );
    }

    #[test]
    fn switching_protocols_is_an_error() {
        let data = b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n";
        assert!(matches!(parse_err(data), ParseError::Protocol(m) if m.contains("101")));
    }

    #[test]
    fn bad_status_lines() {
        let cases: [&[u8]; 13] = [
            b"HTTP/2 200 OK\r\n\r\n",
            b"HTTP/1.2 200 OK\r\n\r\n",
            b"http/1.1 200 OK\r\n\r\n",
            b"HTTP/1.1 20 OK\r\n\r\n",
            b"HTTP/1.1 2000 OK\r\n\r\n",
            b"HTTP/1.1 abc OK\r\n\r\n",
            b"HTTP/1.1  200 OK\r\n\r\n",
            b"HTTP/1.1 099 Low\r\n\r\n",
            b"HTTP/1.1 000 Zero\r\n\r\n",
            b"ICY 200 OK\r\n\r\n",
            b"HTTP/1.1 200 OK\x00\r\n\r\n",
            b"HTTP/1.1 200 OK\r\nNo Colon Here\r\n\r\n",
            b"HTTP/1.1 200 OK\r\n Folded: x\r\n\r\n",
        ];
        for data in cases {
            let e = parse_err(data);
            assert!(
                matches!(e, ParseError::Protocol(_)),
                "{:?}",
                String::from_utf8_lossy(data)
            );
            // Found whichever way the bytes arrive.
            let parts: Vec<&[u8]> = data.chunks(1).collect();
            assert_eq!(
                run_parts(&parts, false).error,
                Some(e),
                "{:?}",
                String::from_utf8_lossy(data)
            );
        }
    }

    #[test]
    fn garbage_is_reported_at_once() {
        for garbage in [
            &b"G"[..],
            b"<html>",
            b"\x00\x01\x02",
            b"\xff\xfe",
            b"SSH-2.0-OpenSSH\r\n",
            b"HTTP/1.1 2x",
        ] {
            let mut p = ResponseParser::new(false);
            let mut rec = Rec::default();
            let e = p.feed(garbage, &mut rec).unwrap_err();
            assert!(matches!(e, ParseError::Protocol(_)));
            // The error sticks: the stream cannot be resynchronised.
            assert_eq!(p.feed(CL_HEAD, &mut rec), Err(e));
            assert!(!p.is_idle());
            assert_eq!(p.feed_eof(&mut rec), EofOutcome::MidHead);
        }
        // Even after a partial head was carried over from an earlier read.
        let mut p = ResponseParser::new(false);
        p.feed(b"HTTP/1.1 200 OK\r\nServer: x", &mut Rec::default())
            .unwrap();
        assert!(p.feed(b"\x01y\r\n", &mut Rec::default()).is_err());
        // And in a long head that never ends, once the carried bytes have doubled.
        let mut p = ResponseParser::new(false);
        let mut rec = Rec::default();
        p.feed(&head_of_len(600)[..590], &mut rec).unwrap();
        p.feed(b"\x01bad\r\n", &mut rec).unwrap();
        let filler = [b'x'; 100];
        let e = (0..10).find_map(|_| p.feed(&filler, &mut rec).err());
        assert_eq!(e, Some(ParseError::Protocol("bad header value")));
    }

    /// A head of exactly `len` bytes with a zero Content-Length.
    fn head_of_len(len: usize) -> Vec<u8> {
        let mut head = b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n".to_vec();
        while head.len() + 1000 < len {
            head.extend_from_slice(b"X-Pad: ");
            head.resize(head.len() + 991, b'p');
            head.extend_from_slice(b"\r\n");
        }
        let pad = len - head.len() - 2 - b"X-Last: \r\n".len();
        head.extend_from_slice(b"X-Last: ");
        head.resize(head.len() + pad, b'p');
        head.extend_from_slice(b"\r\n\r\n");
        assert_eq!(head.len(), len);
        head
    }

    #[test]
    fn oversize_heads() {
        let max = ResponseParser::MAX_HEAD_BYTES;
        let fits = head_of_len(max);
        let too_big = head_of_len(max + 1);
        for piece in [usize::MAX, 1000, 1] {
            let parts: Vec<&[u8]> = fits.chunks(piece.min(fits.len())).collect();
            let r = run_parts(&parts, false);
            assert_eq!(r.error, None, "pieces of {piece}");
            assert_eq!(
                r.events,
                vec![Ev::First, Ev::Done(resp(200, max, 0, 0, false))]
            );

            let parts: Vec<&[u8]> = too_big.chunks(piece.min(too_big.len())).collect();
            assert_eq!(
                run_parts(&parts, false).error,
                Some(ParseError::HeadTooLarge),
                "pieces of {piece}"
            );
        }
        // A head that never ends is cut off at the limit.
        let mut endless = b"HTTP/1.1 200 OK\r\nX-Endless: ".to_vec();
        endless.resize(200_000, b'e');
        assert_eq!(parse_err(&endless), ParseError::HeadTooLarge);
        let parts: Vec<&[u8]> = endless.chunks(4096).collect();
        assert_eq!(
            run_parts(&parts, false).error,
            Some(ParseError::HeadTooLarge)
        );
    }

    fn head_with_headers(n: usize) -> Vec<u8> {
        let mut head = b"HTTP/1.1 200 OK\r\n".to_vec();
        for i in 0..n {
            head.extend_from_slice(format!("X-Header-{i}: {i}\r\n").as_bytes());
        }
        head.extend_from_slice(b"Content-Length: 2\r\n\r\nok");
        head
    }

    #[test]
    fn too_many_headers() {
        // One more than the stack array, and exactly the maximum, still parse (Content-Length
        // is the last header, so it must have been seen).
        for n in [STACK_HEADERS, MAX_HEADERS - 1] {
            let data = head_with_headers(n);
            assert_eq!(parse_ok(&data)[0].body_bytes, 2, "{n} headers");
            let parts: Vec<&[u8]> = data.chunks(50).collect();
            assert_eq!(run_parts(&parts, false).error, None);
        }
        let data = head_with_headers(MAX_HEADERS);
        assert_eq!(parse_err(&data), ParseError::HeadTooLarge);
        let parts: Vec<&[u8]> = data.chunks(50).collect();
        assert_eq!(
            run_parts(&parts, false).error,
            Some(ParseError::HeadTooLarge)
        );
    }

    #[test]
    fn connection_close_and_http10() {
        let cases: [(&[u8], bool); 10] = [
            (b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", false),
            (b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 0\r\n\r\n", true),
            (b"HTTP/1.1 200 OK\r\nconnection: Keep-Alive, CLOSE\r\nContent-Length: 0\r\n\r\n", true),
            (b"HTTP/1.1 200 OK\r\nConnection: keep-alive\r\nConnection: close\r\nContent-Length: 0\r\n\r\n", true),
            (b"HTTP/1.1 200 OK\r\nConnection: keep-alive\r\nContent-Length: 0\r\n\r\n", false),
            (b"HTTP/1.1 200 OK\r\nConnection: closed, upgrade\r\nContent-Length: 0\r\n\r\n", false),
            (b"HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n", true),
            (b"HTTP/1.0 200 OK\r\nConnection: Keep-Alive\r\nContent-Length: 0\r\n\r\n", false),
            (b"HTTP/1.0 200 OK\r\nConnection: te ,  keep-alive \r\nContent-Length: 0\r\n\r\n", false),
            (b"HTTP/1.0 200 OK\r\nConnection: keep-alive, close\r\nContent-Length: 0\r\n\r\n", true),
        ];
        for (data, close) in cases {
            assert_eq!(
                parse_ok(data)[0].close,
                close,
                "{:?}",
                String::from_utf8_lossy(data)
            );
        }
    }

    #[test]
    fn content_length_values() {
        let head = |v: &str| format!("HTTP/1.1 200 OK\r\nContent-Length: {v}\r\n\r\n").into_bytes();
        for bad in [
            "-1",
            "18446744073709551616",
            "99999999999999999999999",
            "5, 6",
            "",
            "+5",
            "0x10",
            "5 5",
            "1_0",
            "5,",
        ] {
            assert!(
                matches!(parse_err(&head(bad)), ParseError::Protocol(_)),
                "Content-Length: {bad:?}"
            );
        }
        assert_eq!(
            parse_err(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\ncontent-length: 6\r\n\r\n"),
            ParseError::Protocol("conflicting Content-Length")
        );
        assert_eq!(
            parse_err(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 5, 7\r\n\r\n"),
            ParseError::Protocol("conflicting Content-Length")
        );
        for good in ["5, 5", "5,5", "  5  ", "005"] {
            let data = [head(good), b"hello".to_vec()].concat();
            assert_eq!(parse_ok(&data)[0].body_bytes, 5, "Content-Length: {good:?}");
        }
        let data = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 5\r\n\r\nhello";
        assert_eq!(parse_ok(data)[0].body_bytes, 5);
        // The largest value is accepted and leaves a body in progress.
        let mut p = ResponseParser::new(false);
        p.feed(&head("18446744073709551615"), &mut Rec::default())
            .unwrap();
        assert_eq!(p.feed_eof(&mut Rec::default()), EofOutcome::MidBody);
    }

    #[test]
    fn content_encoding_is_the_answers_coding_and_its_body_is_de_chunked() {
        let data = b"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
        let answers = parse_ok(data);
        assert_eq!(
            (answers[0].coding, answers[0].body_bytes),
            (Coding::Gzip, 5)
        );
        assert_eq!(answers[1].coding, Coding::Identity);
        // An interim response's headers say nothing of the final one's coding.
        let data = b"HTTP/1.1 103 Early Hints\r\nContent-Encoding: br\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n";
        assert_eq!(parse_ok(data)[0].coding, Coding::Identity);
    }

    /// A coded answer (its body opaque bytes to the engine: every byte value, and what looks
    /// like framing) chunked unevenly, sizes in either case with extensions and a trailer; and
    /// its coded body.
    fn coded_chunked_answer() -> (Vec<u8>, Vec<u8>) {
        let mut coded: Vec<u8> = (0..=255u8).collect();
        coded.extend_from_slice(b"\r\n0\r\n\r\nHTTP/1.1 200 OK\r\n\n\r");
        let mut data =
            b"HTTP/1.1 200 OK\r\nContent-Encoding: br\r\nTransfer-Encoding: chunked\r\n\r\n"
                .to_vec();
        let (mut at, mut size) = (0, 1);
        while at < coded.len() {
            let n = size.min(coded.len() - at);
            let line = if n % 2 == 0 {
                format!("{n:X};x=y\r\n")
            } else {
                format!("{n:x} \r\n")
            };
            data.extend_from_slice(line.as_bytes());
            data.extend_from_slice(&coded[at..at + n]);
            data.extend_from_slice(b"\r\n");
            (at, size) = (at + n, size * 3 + 1);
        }
        data.extend_from_slice(b"0\r\nX-Checksum: 1\r\n\r\n");
        (data, coded)
    }

    #[test]
    fn a_coded_chunked_answer_split_anywhere_is_its_exact_bytes() {
        let (answer, coded) = coded_chunked_answer();
        let next =
            b"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: 3\r\n\r\n\x1f\x8b\x08";
        let check = |parts: &[&[u8]], what: &str| {
            let mut p = ResponseParser::new(false);
            p.capture_bodies();
            let mut rec = Rec::default();
            for part in parts {
                p.feed(part, &mut rec)
                    .unwrap_or_else(|e| panic!("{what}: {e}"));
            }
            let done = rec.done();
            assert_eq!(done.len(), 1, "{what}");
            let got = (done[0].coding, done[0].body_bytes);
            assert_eq!(got, (Coding::Br, coded.len() as u64), "{what}");
            assert_eq!(p.captured_body(), coded, "{what}");
            assert!(p.is_idle(), "{what}");
            // The next answer on the connection starts clean.
            p.feed(next, &mut rec).unwrap();
            let got = (rec.done()[1].coding, rec.done()[1].body_bytes);
            assert_eq!(got, (Coding::Gzip, 3), "{what}");
            assert_eq!(p.captured_body(), b"\x1f\x8b\x08", "{what}");
        };
        for i in 0..=answer.len() {
            let (a, b) = answer.split_at(i);
            check(&[a, b], &format!("split at {i}"));
        }
        check(&answer.chunks(1).collect::<Vec<_>>(), "1-byte reads");
        // Both in one stream, split anywhere: two answers of the same sizes.
        let both = cat(&[&answer, next]);
        for i in 0..=both.len() {
            let (a, b) = both.split_at(i);
            let sizes: Vec<u64> = run_parts(&[a, b], false)
                .events
                .iter()
                .filter_map(|e| match e {
                    Ev::Done(r) => Some(r.body_bytes),
                    Ev::First => None,
                })
                .collect();
            assert_eq!(sizes, [coded.len() as u64, 3], "split at {i}");
        }
    }

    #[test]
    fn transfer_encoding_overrides_content_length() {
        let data = b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n";
        assert_eq!(parse_ok(data)[0].body_bytes, 2);
        let data = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 100\r\n\r\n2\r\nok\r\n0\r\n\r\n";
        assert_eq!(parse_ok(data)[0].body_bytes, 2);
    }

    #[test]
    fn eof_outcomes() {
        let eof_after = |parts: &[&[u8]]| {
            let mut p = ResponseParser::new(false);
            let mut rec = Rec::default();
            for part in parts {
                p.feed(part, &mut rec).unwrap();
            }
            let outcome = p.feed_eof(&mut rec);
            assert!(p.is_idle());
            outcome
        };
        assert_eq!(eof_after(&[]), EofOutcome::Idle);
        assert_eq!(eof_after(&[CL_HEAD, b"hello"]), EofOutcome::Idle);
        assert_eq!(eof_after(&[CL_HEAD, b"hello\r\n"]), EofOutcome::Idle);
        assert_eq!(eof_after(&[b"H"]), EofOutcome::MidHead);
        assert_eq!(
            eof_after(&[b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r"]),
            EofOutcome::MidHead
        );
        assert_eq!(
            eof_after(&[b"HTTP/1.1 100 Continue\r\n\r\n"]),
            EofOutcome::MidHead
        );
        assert_eq!(eof_after(&[CL_HEAD]), EofOutcome::MidBody);
        assert_eq!(eof_after(&[CL_HEAD, b"hell"]), EofOutcome::MidBody);
        assert_eq!(eof_after(&[CHUNKED_HEAD, b"5\r\nhel"]), EofOutcome::MidBody);
        assert_eq!(
            eof_after(&[CHUNKED_HEAD, b"5\r\nhello\r\n"]),
            EofOutcome::MidBody
        );
        assert_eq!(
            eof_after(&[CHUNKED_HEAD, b"0\r\nX: y\r\n"]),
            EofOutcome::MidBody
        );
        assert_eq!(
            eof_after(&[b"HTTP/1.1 200 OK\r\n\r\npartial"]),
            EofOutcome::Completed
        );
        // A chunked error was inside a body, a head error was not.
        let mut p = ResponseParser::new(false);
        assert!(p
            .feed(&cat(&[CHUNKED_HEAD, b"x"]), &mut Rec::default())
            .is_err());
        assert_eq!(p.feed_eof(&mut Rec::default()), EofOutcome::MidBody);
    }

    #[test]
    fn capture_bodies_content_length_and_chunked() {
        let mut p = ResponseParser::new(false);
        let mut rec = Rec::default();
        p.feed(&cat(&[CL_HEAD, b"hello"]), &mut rec).unwrap();
        assert_eq!(p.captured_body(), b"", "not capturing");

        p.capture_bodies();
        p.feed(&cat(&[CL_HEAD, b"he"]), &mut rec).unwrap();
        assert_eq!(p.captured_body(), b"", "only completed responses");
        p.feed(b"llo", &mut rec).unwrap();
        assert_eq!(p.captured_body(), b"hello");
        p.feed(&cat(&[CHUNKED_HEAD, &CHUNKED_BODY[..20]]), &mut rec)
            .unwrap();
        assert_eq!(p.captured_body(), b"hello");
        p.feed(&CHUNKED_BODY[20..], &mut rec).unwrap();
        assert_eq!(p.captured_body(), CHUNKED_DECODED);
        p.feed(b"HTTP/1.1 204 No Content\r\n\r\n", &mut rec)
            .unwrap();
        assert_eq!(p.captured_body(), b"");
        p.feed(&cat(&[CL_HEAD, b"hel"]), &mut rec).unwrap();
        p.reset();
        p.feed(&cat(&[CL_HEAD, b"world"]), &mut rec).unwrap();
        assert_eq!(p.captured_body(), b"world");
    }

    #[test]
    fn reset_forgets_partial_state_and_keeps_capacity() {
        let mut p = ResponseParser::new(false);
        let mut rec = Rec::default();
        p.feed(b"HTTP/1.1 200 OK\r\nContent-Le", &mut rec).unwrap();
        assert!(!p.is_idle());
        let capacity = p.carry.capacity();
        assert!(capacity > 0);
        p.reset();
        assert!(p.is_idle());
        assert_eq!(p.carry.capacity(), capacity);
        p.feed(&cat(&[CL_HEAD, b"hello"]), &mut rec).unwrap();
        assert_eq!(rec.done(), vec![resp(200, CL_HEAD.len(), 5, 0, false)]);

        // Also resets a failed parser.
        assert!(p.feed(b"nonsense", &mut rec).is_err());
        p.reset();
        p.feed(&cat(&[CL_HEAD, b"hello"]), &mut rec).unwrap();
        assert_eq!(rec.done().len(), 2);
    }

    #[test]
    fn stray_line_ends_between_responses_are_ignored() {
        let data = cat(&[b"\r\n", CL_HEAD, b"hello\r\n\r\n\n", CL_HEAD, b"hello"]);
        assert_eq!(
            parse_ok(&data),
            vec![resp(200, CL_HEAD.len(), 5, 0, false); 2]
        );
        let mut p = ResponseParser::new(false);
        let mut rec = Rec::default();
        p.feed(b"\r\n", &mut rec).unwrap();
        assert!(p.is_idle());
        assert!(rec.0.is_empty());
    }

    #[test]
    fn large_bodies_are_skipped_not_walked() {
        let total: u64 = 10 * 1024 * 1024 * 1024;
        let mut p = ResponseParser::new(false);
        let mut rec = Rec::default();
        p.feed(
            format!("HTTP/1.1 200 OK\r\nContent-Length: {total}\r\n\r\n").as_bytes(),
            &mut rec,
        )
        .unwrap();
        let block = vec![0u8; 1 << 20];
        for _ in 0..(total >> 20) {
            p.feed(&block, &mut rec).unwrap();
        }
        assert_eq!(rec.done()[0].body_bytes, total);
        assert!(p.is_idle());
    }

    #[test]
    fn slow_trickle_of_a_large_head() {
        // Byte by byte: quadratic re-parsing would take minutes here.
        let head = head_of_len(ResponseParser::MAX_HEAD_BYTES);
        let mut p = ResponseParser::new(false);
        let mut rec = Rec::default();
        for b in head.chunks(1) {
            p.feed(b, &mut rec).unwrap();
        }
        assert_eq!(rec.done().len(), 1);
        // A head with many short lines (many possible ends of head to check) too.
        let data = head_with_headers(MAX_HEADERS - 1);
        let parts: Vec<&[u8]> = data.chunks(1).collect();
        assert_eq!(run_parts(&parts, false).error, None);
    }

    #[test]
    fn header_names_match_in_any_case_and_only_exactly() {
        assert!(token_is(b"Content-Length", b"content-length"));
        assert!(token_is(b"CONTENT-LENGTH", b"content-length"));
        assert!(token_is(b"Transfer-Encoding", b"transfer-encoding"));
        assert!(token_is(b"cOnNeCtIoN", b"connection"));
        assert!(!token_is(b"Content_Length", b"content-length"));
        assert!(!token_is(b"Content-Lengtx", b"content-length"));
        assert!(!token_is(b"Xontent-Length", b"content-length"));
        assert!(!token_is(b"Transfer-Encodinx", b"transfer-encoding"));
        assert!(!token_is(b"Transfer-Xncoding", b"transfer-encoding"));
        assert!(!token_is(b"Content-Length2", b"content-length"));
        assert!(!token_is(b"Connectio", b"connection"));
        // Token characters that differ from a letter only in bit 0x20 do not alias it.
        assert!(!token_is(b"connecti~n", b"connection"));
        assert!(!token_is(b"connecti^n", b"connection"));
    }

    #[test]
    fn find_head_end_straddles_reads() {
        assert_eq!(find_head_end(b"HTTP/1.1 200 OK\r\n", b"\r\nbody"), Some(2));
        assert_eq!(find_head_end(b"HTTP/1.1 200 OK\r\n\r", b"\nbody"), Some(1));
        assert_eq!(find_head_end(b"HTTP/1.1 200 OK\n", b"\nbody"), Some(1));
        assert_eq!(
            find_head_end(b"HTTP/1.1 200 OK", b"\r\nX: y\r\n\r\nbody"),
            Some(10)
        );
        assert_eq!(find_head_end(b"HTTP/1.1 200 OK", b"\r\nX: y\r\n"), None);
        assert_eq!(find_head_end(b"H", b"\n"), None);
        assert_eq!(find_head_end(b"", b"\n\n"), Some(2));
    }
}
