//! The sans-io HTTP/2 client connection (RFC 9113).
//!
//! Bytes from the server go in through [`Connection::receive`] in whatever split the socket hands
//! over; a frame split across reads is carried until complete, a whole frame is parsed where it
//! lies. Bytes for the server are queued and taken by [`Connection::take_output`]. Streams live
//! in a slab of slots that grows to the most streams ever open at once and is reused, so a
//! request allocates nothing in steady state.

use std::fmt;

use super::frame::{self, code, setting, FrameHeader, HEADER_LEN};
use super::hpack::Decoder;
use crate::http::response::Response;

/// Our side's SETTINGS and receive windows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// SETTINGS_INITIAL_WINDOW_SIZE: each stream's receive window.
    pub initial_window: u32,
    /// The connection's receive window (raised from 65535 by a WINDOW_UPDATE on stream 0).
    pub connection_window: u32,
    /// SETTINGS_MAX_FRAME_SIZE: the largest frame payload we accept.
    pub max_frame_size: u32,
    /// SETTINGS_HEADER_TABLE_SIZE: the HPACK dynamic table the server may use toward us.
    pub header_table_size: u32,
    /// SETTINGS_MAX_HEADER_LIST_SIZE: a response header list larger than this fails its stream.
    pub max_header_list_size: u32,
}

impl Default for Limits {
    /// As large as h2load's: the load generator must never be the one that throttles.
    fn default() -> Self {
        Limits {
            initial_window: (1 << 30) - 1,
            connection_window: (1 << 30) - 1,
            max_frame_size: frame::DEFAULT_MAX_FRAME_SIZE,
            header_table_size: 4096,
            max_header_list_size: 1 << 16,
        }
    }
}

/// A connection error: the connection cannot continue (a GOAWAY is queued).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct H2Error {
    /// The RFC 9113 error code sent in our GOAWAY, or received in the server's.
    pub code: u32,
    /// What was wrong, for the error message.
    pub why: &'static str,
}

impl fmt::Display for H2Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "HTTP/2 {}: {}", frame::ErrorCode(self.code), self.why)
    }
}

impl std::error::Error for H2Error {}

/// Why a connection failed whose server answered our preface in HTTP/1.1.
pub const HTTP1_ANSWER: &str = "the server answered in HTTP/1.1: it does not speak h2c by prior knowledge; enable h2c on it, or measure it over HTTP/1.1";

fn connection_error(code: u32, why: &'static str) -> H2Error {
    H2Error { code, why }
}

/// What a connection tells the worker about its streams, in order.
pub trait StreamSink {
    /// The first byte of the stream's response (its first HEADERS frame) arrived.
    fn first_byte(&mut self, stream: u32);
    /// The stream ended (END_STREAM) with this final response (`close` is always false).
    fn complete(&mut self, stream: u32, response: &Response);
    /// The server reset the stream (RST_STREAM) with this error code.
    fn reset(&mut self, stream: u32, code: u32);
    /// The stream failed on our side (a fault of the server's confined to it): we reset it with
    /// this code. Unless told otherwise, as if the server had.
    fn stream_error(&mut self, stream: u32, code: u32) {
        self.reset(stream, code);
    }
    /// The server sent GOAWAY. Streams above `last_stream` were not processed and are forgotten
    /// by the connection: they are the worker's to count and retry on a new connection.
    fn goaway(&mut self, last_stream: u32, code: u32);
    /// Body bytes of the stream's response (padding excluded), for a client that looks at them;
    /// the load does not.
    fn data(&mut self, _stream: u32, _bytes: &[u8]) {}
}

/// One open stream. `id == 0` marks a free slot.
#[derive(Default)]
struct Stream {
    id: u32,
    /// What the server may still send us before our next WINDOW_UPDATE.
    recv_window: i64,
    /// Bytes consumed since our last stream WINDOW_UPDATE.
    recv_unacked: u32,
    /// What we may still send.
    send_window: i64,
    /// The request body still to send (kept, with its capacity, for the slot's next stream).
    body: Vec<u8>,
    body_sent: usize,
    /// The request's END_STREAM was queued.
    request_done: bool,
    response: Response,
    /// The final (non-1xx) HEADERS arrived.
    final_headers: bool,
}

/// The client side of one HTTP/2 connection.
pub struct Connection {
    limits: Limits,
    out: Vec<u8>,
    /// A frame split across reads, carried until complete.
    carry: Vec<u8>,
    /// A header block awaiting its CONTINUATION frames.
    block: Vec<u8>,
    /// The stream whose header block is in `block`; 0 when none is.
    block_stream: u32,
    block_end_stream: bool,
    decoder: Decoder,
    streams: Vec<Stream>,
    open: u32,
    next_id: u32,
    ready: bool,
    peer_max_streams: u32,
    peer_initial_window: u32,
    peer_max_frame_size: u32,
    peer_table_size: u32,
    /// A request has added the run's repeated fields to the server's dynamic table (see
    /// `request::RequestBlocks`).
    table_primed: bool,
    send_window: i64,
    recv_window: i64,
    recv_unacked: u32,
    goaway: bool,
    failed: Option<H2Error>,
    frame_bytes: u64,
    /// PING ACKs in `out` since it was last taken.
    ping_acks_queued: u32,
}

/// HPACK's dynamic table size until a SETTINGS_HEADER_TABLE_SIZE says otherwise (RFC 9113 §6.5.2).
pub const DEFAULT_TABLE_SIZE: u32 = 4096;

/// Stream ids are 31 bits; a connection stops opening streams before they run out.
const LAST_CLIENT_STREAM: u32 = (1 << 31) - 1;

impl Connection {
    /// Queues the preface, our SETTINGS (push disabled) and the connection WINDOW_UPDATE.
    pub fn new(limits: &Limits) -> Connection {
        let mut out = Vec::with_capacity(128);
        out.extend_from_slice(frame::PREFACE);
        frame::write_settings(
            &mut out,
            &[
                (setting::ENABLE_PUSH, 0),
                (setting::HEADER_TABLE_SIZE, limits.header_table_size),
                (setting::INITIAL_WINDOW_SIZE, limits.initial_window),
                (setting::MAX_FRAME_SIZE, limits.max_frame_size),
                (setting::MAX_HEADER_LIST_SIZE, limits.max_header_list_size),
            ],
        );
        let connection_window = limits.connection_window.max(frame::DEFAULT_WINDOW);
        if connection_window > frame::DEFAULT_WINDOW {
            frame::write_window_update(&mut out, 0, connection_window - frame::DEFAULT_WINDOW);
        }
        Connection {
            limits: *limits,
            out,
            carry: Vec::new(),
            block: Vec::new(),
            block_stream: 0,
            block_end_stream: false,
            decoder: Decoder::new(limits.header_table_size as usize),
            streams: Vec::new(),
            open: 0,
            next_id: 1,
            ready: false,
            peer_max_streams: u32::MAX,
            peer_initial_window: frame::DEFAULT_WINDOW,
            peer_max_frame_size: frame::DEFAULT_MAX_FRAME_SIZE,
            peer_table_size: DEFAULT_TABLE_SIZE,
            table_primed: false,
            send_window: frame::DEFAULT_WINDOW.into(),
            recv_window: connection_window.into(),
            recv_unacked: 0,
            goaway: false,
            failed: None,
            frame_bytes: 0,
            ping_acks_queued: 0,
        }
    }

    /// Bytes are queued for the peer.
    pub fn wants_write(&self) -> bool {
        !self.out.is_empty()
    }

    /// Swaps the queued bytes into `into` (cleared first); both buffers keep their capacity.
    pub fn take_output(&mut self, into: &mut Vec<u8>) {
        into.clear();
        std::mem::swap(&mut self.out, into);
        self.ping_acks_queued = 0;
    }

    /// The server's SETTINGS arrived: streams may open.
    pub fn ready(&self) -> bool {
        self.ready
    }

    /// The server's SETTINGS_MAX_CONCURRENT_STREAMS (u32::MAX while unset).
    pub fn streams_granted(&self) -> u32 {
        self.peer_max_streams
    }

    /// The server's SETTINGS_HEADER_TABLE_SIZE: the dynamic table our requests may fill.
    pub fn peer_table_size(&self) -> u32 {
        self.peer_table_size
    }

    /// Whether a request has primed the server's dynamic table already; the next request opened
    /// is taken to do so if not.
    pub fn prime_table(&mut self) -> bool {
        std::mem::replace(&mut self.table_primed, true)
    }

    /// Streams opened and not yet ended.
    pub fn open_streams(&self) -> u32 {
        self.open
    }

    /// A stream may open now: ready, no GOAWAY or error, ids left, under the server's limit.
    pub fn can_open(&self) -> bool {
        self.ready
            && !self.goaway
            && self.failed.is_none()
            && self.next_id < LAST_CLIENT_STREAM
            && self.open < self.peer_max_streams
    }

    /// No stream will ever open here again (a GOAWAY, a connection error, or stream ids run out),
    /// unlike a connection at the server's limit, which a SETTINGS may raise.
    pub fn exhausted(&self) -> bool {
        self.goaway || self.failed.is_some() || self.next_id >= LAST_CLIENT_STREAM
    }

    /// The server sent a GOAWAY.
    pub fn goaway_received(&self) -> bool {
        self.goaway
    }

    /// Opens a stream with this encoded request header block and optional body; returns its id.
    /// The body is sent as the peer's windows allow. Call only when [`Connection::can_open`].
    pub fn open(&mut self, request_block: &[u8], body: Option<&[u8]>) -> u32 {
        debug_assert!(self.can_open());
        let id = self.next_id;
        self.next_id += 2;
        let body = body.filter(|body| !body.is_empty());
        frame::write_headers(
            &mut self.out,
            id,
            request_block,
            body.is_none(),
            self.peer_max_frame_size as usize,
        );
        let slot = match self.streams.iter().position(|s| s.id == 0) {
            Some(slot) => slot,
            None => {
                self.streams.push(Stream::default());
                self.streams.len() - 1
            }
        };
        let stream = &mut self.streams[slot];
        stream.id = id;
        // Until the server acknowledges our SETTINGS it may still send the default window.
        stream.recv_window = self.limits.initial_window.max(frame::DEFAULT_WINDOW).into();
        stream.recv_unacked = 0;
        stream.send_window = self.peer_initial_window.into();
        stream.body.clear();
        stream.body.extend_from_slice(body.unwrap_or(&[]));
        stream.body_sent = 0;
        stream.request_done = body.is_none();
        stream.response = Response::default();
        stream.final_headers = false;
        self.open += 1;
        if body.is_some() {
            self.send_bodies();
        }
        id
    }

    fn slot(&self, id: u32) -> Option<usize> {
        self.streams.iter().position(|s| s.id == id)
    }

    fn close(&mut self, slot: usize) {
        self.streams[slot].id = 0;
        self.open -= 1;
    }

    /// Gives up on a stream (RST_STREAM with CANCEL): its response is no longer awaited.
    pub fn cancel(&mut self, stream: u32) {
        if let Some(slot) = self.slot(stream) {
            frame::write_rst_stream(&mut self.out, stream, code::CANCEL);
            self.close(slot);
        }
    }

    /// Framing overhead received so far: every frame's 9-byte header, padding and HEADERS
    /// priority fields, the payloads of frames other than DATA, HEADERS and CONTINUATION, and
    /// header blocks that reached no response (their stream no longer open, or its header list
    /// over our limit). Header blocks of responses are their head bytes; DATA, their body.
    pub fn frame_bytes(&self) -> u64 {
        self.frame_bytes
    }

    /// Feeds bytes received from the server, in any split. A connection error queues a GOAWAY
    /// and is returned, now and on every later call.
    pub fn receive(&mut self, mut data: &[u8], sink: &mut impl StreamSink) -> Result<(), H2Error> {
        if let Some(error) = self.failed {
            return Err(error);
        }
        let result = (|| {
            while !self.carry.is_empty() && !data.is_empty() {
                let need = if self.carry.len() < HEADER_LEN {
                    HEADER_LEN - self.carry.len()
                } else {
                    HEADER_LEN + FrameHeader::parse(&self.carry).len as usize - self.carry.len()
                };
                let take = need.min(data.len());
                self.carry.extend_from_slice(&data[..take]);
                data = &data[take..];
                if self.carry.len() == HEADER_LEN {
                    self.check_size(&self.carry)?;
                }
                if self.carry.len() >= HEADER_LEN && take == need {
                    let header = FrameHeader::parse(&self.carry);
                    if self.carry.len() == HEADER_LEN + header.len as usize {
                        let carry = std::mem::take(&mut self.carry);
                        let result = self.frame(&header, &carry[HEADER_LEN..], sink);
                        self.carry = carry;
                        self.carry.clear();
                        result?;
                    }
                }
            }
            while data.len() >= HEADER_LEN {
                let header = self.check_size(data)?;
                let end = HEADER_LEN + header.len as usize;
                if data.len() < end {
                    break;
                }
                self.frame(&header, &data[HEADER_LEN..end], sink)?;
                data = &data[end..];
            }
            self.carry.extend_from_slice(data);
            Ok(())
        })();
        if let Err(error) = result {
            self.fail(error);
        }
        result
    }

    fn fail(&mut self, error: H2Error) {
        self.failed = Some(error);
        // We accept no server-initiated streams, so the last one we processed is always 0.
        frame::write_goaway(&mut self.out, 0, error.code);
    }

    /// The frame header at the start of `raw`, unless its frame is larger than we accept.
    fn check_size(&self, raw: &[u8]) -> Result<FrameHeader, H2Error> {
        // An HTTP/1.1 server's answer to our preface reads as a frame of some 4.7 MB: say what
        // it is rather than what it looks like.
        if !self.ready && raw.starts_with(b"HTTP/1.") {
            return Err(connection_error(code::PROTOCOL_ERROR, HTTP1_ANSWER));
        }
        let header = FrameHeader::parse(raw);
        if header.len
            > self
                .limits
                .max_frame_size
                .max(frame::DEFAULT_MAX_FRAME_SIZE)
        {
            return Err(connection_error(
                code::FRAME_SIZE_ERROR,
                "frame larger than our SETTINGS_MAX_FRAME_SIZE",
            ));
        }
        Ok(header)
    }

    /// Sends what request bodies the windows allow.
    fn send_bodies(&mut self) {
        if !self.ready {
            return;
        }
        for stream in self.streams.iter_mut() {
            if stream.id == 0 || stream.request_done {
                continue;
            }
            loop {
                let left = stream.body.len() - stream.body_sent;
                let n = (left as i64)
                    .min(stream.send_window)
                    .min(self.send_window)
                    .min(self.peer_max_frame_size.into());
                if n <= 0 && left > 0 {
                    break;
                }
                let n = n.max(0) as usize;
                let chunk = &stream.body[stream.body_sent..stream.body_sent + n];
                let last = n == left;
                frame::write_data(&mut self.out, stream.id, chunk, last);
                stream.body_sent += n;
                stream.send_window -= n as i64;
                self.send_window -= n as i64;
                if last {
                    stream.request_done = true;
                    break;
                }
            }
        }
    }
}

mod inbound;
#[cfg(test)]
mod tests;
