//! The sans-io HTTP/2 client connection (RFC 9113).
//!
//! Bytes from the server go in through [`Connection::receive`] in whatever split the socket hands
//! over; a frame split across reads is carried until complete, a whole frame is parsed where it
//! lies. Bytes for the server are queued and taken by [`Connection::take_output`]. Streams live
//! in a slab of slots that grows to the most streams ever open at once and is reused, so a
//! request allocates nothing in steady state.

use std::fmt;

use super::frame::{self, code, flag, kind, setting, FrameHeader, HEADER_LEN};
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

fn connection_error(code: u32, why: &'static str) -> H2Error {
    H2Error { code, why }
}

/// What a connection tells the worker about its streams, in order.
pub trait StreamSink {
    /// The first byte of the stream's response (its first HEADERS frame) arrived.
    fn first_byte(&mut self, stream: u32);
    /// The stream ended (END_STREAM) with this final response (`close` is always false).
    fn complete(&mut self, stream: u32, response: &Response);
    /// The server reset the stream (RST_STREAM) with this error code, or the stream failed on
    /// our side (then the code is the one our RST_STREAM carried).
    fn reset(&mut self, stream: u32, code: u32);
    /// The server sent GOAWAY. Streams above `last_stream` were not processed and are forgotten
    /// by the connection: they are the worker's to count and retry on a new connection.
    fn goaway(&mut self, last_stream: u32, code: u32);
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
    send_window: i64,
    recv_window: i64,
    recv_unacked: u32,
    goaway: bool,
    failed: Option<H2Error>,
    frame_bytes: u64,
}

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
            send_window: frame::DEFAULT_WINDOW.into(),
            recv_window: connection_window.into(),
            recv_unacked: 0,
            goaway: false,
            failed: None,
            frame_bytes: 0,
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
    }

    /// The server's SETTINGS arrived: streams may open.
    pub fn ready(&self) -> bool {
        self.ready
    }

    /// The server's SETTINGS_MAX_CONCURRENT_STREAMS (u32::MAX while unset).
    pub fn streams_granted(&self) -> u32 {
        self.peer_max_streams
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

    /// Framing overhead received so far: frame headers, padding, and every frame other than
    /// DATA, HEADERS and CONTINUATION.
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
                    self.check_size(&FrameHeader::parse(&self.carry))?;
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
                let header = FrameHeader::parse(data);
                self.check_size(&header)?;
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

    fn check_size(&self, header: &FrameHeader) -> Result<(), H2Error> {
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
        Ok(())
    }

    fn frame(
        &mut self,
        header: &FrameHeader,
        payload: &[u8],
        sink: &mut impl StreamSink,
    ) -> Result<(), H2Error> {
        if !self.ready && header.kind != kind::SETTINGS {
            return Err(connection_error(
                code::PROTOCOL_ERROR,
                "the server's preface did not start with SETTINGS",
            ));
        }
        if self.block_stream != 0
            && (header.kind != kind::CONTINUATION || header.stream != self.block_stream)
        {
            return Err(connection_error(
                code::PROTOCOL_ERROR,
                "a header block was interrupted by another frame",
            ));
        }
        self.frame_bytes += HEADER_LEN as u64;
        match header.kind {
            kind::DATA => self.data(header, payload, sink),
            kind::HEADERS => self.headers(header, payload, sink),
            kind::CONTINUATION => self.continuation(header, payload, sink),
            other => {
                self.frame_bytes += payload.len() as u64;
                match other {
                    kind::PRIORITY => self.priority(header, payload, sink),
                    kind::RST_STREAM => self.rst_stream(header, payload, sink),
                    kind::SETTINGS => self.settings(header, payload),
                    kind::PUSH_PROMISE => Err(connection_error(
                        code::PROTOCOL_ERROR,
                        "PUSH_PROMISE although we disabled push",
                    )),
                    kind::PING => self.ping(header, payload),
                    kind::GOAWAY => self.goaway(header, payload, sink),
                    kind::WINDOW_UPDATE => self.window_update(header, payload, sink),
                    _ => Ok(()),
                }
            }
        }
    }

    fn slot(&self, id: u32) -> Option<usize> {
        self.streams.iter().position(|s| s.id == id)
    }

    /// A frame on a stream we never opened (or on the server's even ids) is a connection error;
    /// on one already closed, `None`.
    fn stream_of(&self, header: &FrameHeader) -> Result<Option<usize>, H2Error> {
        if header.stream == 0 || header.stream.is_multiple_of(2) || header.stream >= self.next_id {
            return Err(connection_error(
                code::PROTOCOL_ERROR,
                "a frame on a stream the client never opened",
            ));
        }
        Ok(self.slot(header.stream))
    }

    fn close(&mut self, slot: usize) {
        self.streams[slot].id = 0;
        self.open -= 1;
    }

    /// Ends one stream on our side (the connection continues).
    fn stream_error(&mut self, slot: usize, code: u32, sink: &mut impl StreamSink) {
        let id = self.streams[slot].id;
        frame::write_rst_stream(&mut self.out, id, code);
        self.close(slot);
        sink.reset(id, code);
    }

    fn data(
        &mut self,
        header: &FrameHeader,
        payload: &[u8],
        sink: &mut impl StreamSink,
    ) -> Result<(), H2Error> {
        let slot = self.stream_of(header)?;
        let (start, end) = frame::unpad(header, payload).ok_or(connection_error(
            code::PROTOCOL_ERROR,
            "DATA padding longer than the frame",
        ))?;
        self.frame_bytes += (payload.len() - (end - start)) as u64;
        let len = payload.len() as u32;
        self.recv_window -= i64::from(len);
        if self.recv_window < 0 {
            return Err(connection_error(
                code::FLOW_CONTROL_ERROR,
                "DATA beyond the connection window",
            ));
        }
        self.recv_unacked += len;
        if self.recv_unacked >= self.limits.connection_window / 2 {
            frame::write_window_update(&mut self.out, 0, self.recv_unacked);
            self.recv_window += i64::from(self.recv_unacked);
            self.recv_unacked = 0;
        }
        let Some(slot) = slot else {
            frame::write_rst_stream(&mut self.out, header.stream, code::STREAM_CLOSED);
            return Ok(());
        };
        let stream = &mut self.streams[slot];
        stream.recv_window -= i64::from(len);
        if stream.recv_window < 0 {
            self.stream_error(slot, code::FLOW_CONTROL_ERROR, sink);
            return Ok(());
        }
        if !stream.final_headers {
            self.stream_error(slot, code::PROTOCOL_ERROR, sink);
            return Ok(());
        }
        stream.response.body_bytes += (end - start) as u64;
        if header.has(flag::END_STREAM) {
            self.end_stream(slot, sink);
            return Ok(());
        }
        stream.recv_unacked += len;
        if stream.recv_unacked >= self.limits.initial_window / 2 {
            frame::write_window_update(&mut self.out, stream.id, stream.recv_unacked);
            stream.recv_window += i64::from(stream.recv_unacked);
            stream.recv_unacked = 0;
        }
        Ok(())
    }

    fn end_stream(&mut self, slot: usize, sink: &mut impl StreamSink) {
        let stream = &self.streams[slot];
        let (id, response) = (stream.id, stream.response);
        if !stream.request_done {
            // The server answered before the request body was all sent (section 8.1).
            frame::write_rst_stream(&mut self.out, id, code::NO_ERROR);
        }
        self.close(slot);
        sink.complete(id, &response);
    }

    fn headers(
        &mut self,
        header: &FrameHeader,
        payload: &[u8],
        sink: &mut impl StreamSink,
    ) -> Result<(), H2Error> {
        let slot = self.stream_of(header)?;
        let (mut start, end) = frame::unpad(header, payload).ok_or(connection_error(
            code::PROTOCOL_ERROR,
            "HEADERS padding longer than the frame",
        ))?;
        if header.has(flag::PRIORITY) {
            start += 5;
            if start > end {
                return Err(connection_error(
                    code::FRAME_SIZE_ERROR,
                    "HEADERS too short for its priority",
                ));
            }
        }
        self.frame_bytes += (payload.len() - (end - start)) as u64;
        if let Some(slot) = slot {
            let stream = &self.streams[slot];
            if stream.response.head_bytes == 0 && stream.response.interim == 0 {
                sink.first_byte(stream.id);
            }
        }
        self.block.clear();
        self.block.extend_from_slice(&payload[start..end]);
        self.block_end_stream = header.has(flag::END_STREAM);
        if header.has(flag::END_HEADERS) {
            self.header_block(header.stream, sink)
        } else {
            self.block_stream = header.stream;
            Ok(())
        }
    }

    fn continuation(
        &mut self,
        header: &FrameHeader,
        payload: &[u8],
        sink: &mut impl StreamSink,
    ) -> Result<(), H2Error> {
        if self.block_stream == 0 {
            return Err(connection_error(
                code::PROTOCOL_ERROR,
                "CONTINUATION without a header block in progress",
            ));
        }
        self.block.extend_from_slice(payload);
        if header.has(flag::END_HEADERS) {
            self.block_stream = 0;
            self.header_block(header.stream, sink)
        } else {
            Ok(())
        }
    }

    /// A complete header block: decoded even when its stream is gone, to keep HPACK state.
    fn header_block(&mut self, id: u32, sink: &mut impl StreamSink) -> Result<(), H2Error> {
        let mut status: Option<u16> = None;
        let mut bad_status = false;
        let mut list_size: u64 = 0;
        let block = std::mem::take(&mut self.block);
        let decoded = self.decoder.decode(&block, &mut |name, value| {
            list_size += (name.len() + value.len() + 32) as u64;
            if name == b":status" {
                match std::str::from_utf8(value).ok().and_then(|v| v.parse().ok()) {
                    Some(code) if (100..1000).contains(&code) && value.len() == 3 => {
                        status = Some(code)
                    }
                    _ => bad_status = true,
                }
            }
        });
        let block_len = block.len() as u64;
        self.block = block;
        if decoded.is_err() {
            return Err(connection_error(
                code::COMPRESSION_ERROR,
                "a response header block could not be decoded",
            ));
        }
        let Some(slot) = self.slot(id) else {
            return Ok(());
        };
        if list_size > u64::from(self.limits.max_header_list_size) {
            self.stream_error(slot, code::CANCEL, sink);
            return Ok(());
        }
        let end_stream = self.block_end_stream;
        let stream = &mut self.streams[slot];
        stream.response.head_bytes += block_len;
        if stream.final_headers {
            // Trailers: they must end the stream.
            if !end_stream {
                self.stream_error(slot, code::PROTOCOL_ERROR, sink);
                return Ok(());
            }
        } else {
            match status {
                Some(code) if !bad_status && code >= 200 => {
                    stream.response.status = code;
                    stream.final_headers = true;
                }
                Some(101) | None => {
                    self.stream_error(slot, code::PROTOCOL_ERROR, sink);
                    return Ok(());
                }
                Some(_) if end_stream || bad_status => {
                    self.stream_error(slot, code::PROTOCOL_ERROR, sink);
                    return Ok(());
                }
                Some(_) => stream.response.interim += 1,
            }
        }
        if end_stream {
            self.end_stream(slot, sink);
        }
        Ok(())
    }

    fn priority(
        &mut self,
        header: &FrameHeader,
        payload: &[u8],
        sink: &mut impl StreamSink,
    ) -> Result<(), H2Error> {
        if header.stream == 0 {
            return Err(connection_error(
                code::PROTOCOL_ERROR,
                "PRIORITY on stream 0",
            ));
        }
        if payload.len() != 5 {
            if let Some(slot) = self.slot(header.stream) {
                self.stream_error(slot, code::FRAME_SIZE_ERROR, sink);
            }
        }
        Ok(())
    }

    fn rst_stream(
        &mut self,
        header: &FrameHeader,
        payload: &[u8],
        sink: &mut impl StreamSink,
    ) -> Result<(), H2Error> {
        if payload.len() != 4 {
            return Err(connection_error(
                code::FRAME_SIZE_ERROR,
                "RST_STREAM not 4 bytes long",
            ));
        }
        if let Some(slot) = self.stream_of(header)? {
            self.close(slot);
            sink.reset(header.stream, frame::read_u32(payload));
        }
        Ok(())
    }

    fn settings(&mut self, header: &FrameHeader, payload: &[u8]) -> Result<(), H2Error> {
        if header.stream != 0 {
            return Err(connection_error(
                code::PROTOCOL_ERROR,
                "SETTINGS on a stream",
            ));
        }
        if header.has(flag::ACK) {
            if !payload.is_empty() {
                return Err(connection_error(
                    code::FRAME_SIZE_ERROR,
                    "SETTINGS ACK with a payload",
                ));
            }
            return Ok(());
        }
        if !payload.len().is_multiple_of(6) {
            return Err(connection_error(
                code::FRAME_SIZE_ERROR,
                "SETTINGS not a multiple of 6 bytes",
            ));
        }
        for entry in payload.chunks_exact(6) {
            let id = u16::from_be_bytes([entry[0], entry[1]]);
            let value = frame::read_u32(&entry[2..]);
            match id {
                setting::ENABLE_PUSH if value > 0 => {
                    return Err(connection_error(
                        code::PROTOCOL_ERROR,
                        "a server set SETTINGS_ENABLE_PUSH",
                    ))
                }
                setting::MAX_CONCURRENT_STREAMS => self.peer_max_streams = value,
                setting::INITIAL_WINDOW_SIZE => {
                    if value > frame::MAX_WINDOW {
                        return Err(connection_error(
                            code::FLOW_CONTROL_ERROR,
                            "SETTINGS_INITIAL_WINDOW_SIZE above 2^31-1",
                        ));
                    }
                    let delta = i64::from(value) - i64::from(self.peer_initial_window);
                    self.peer_initial_window = value;
                    for stream in self.streams.iter_mut().filter(|s| s.id != 0) {
                        stream.send_window += delta;
                        if stream.send_window > i64::from(frame::MAX_WINDOW) {
                            return Err(connection_error(
                                code::FLOW_CONTROL_ERROR,
                                "SETTINGS_INITIAL_WINDOW_SIZE overflowed a stream window",
                            ));
                        }
                    }
                }
                setting::MAX_FRAME_SIZE => {
                    if !(frame::DEFAULT_MAX_FRAME_SIZE..=frame::MAX_MAX_FRAME_SIZE).contains(&value)
                    {
                        return Err(connection_error(
                            code::PROTOCOL_ERROR,
                            "SETTINGS_MAX_FRAME_SIZE out of range",
                        ));
                    }
                    self.peer_max_frame_size = value;
                }
                // The peer's table size and header list limit do not matter to us: requests
                // are encoded without indexing, once, and are small.
                _ => {}
            }
        }
        self.ready = true;
        frame::write_settings_ack(&mut self.out);
        self.send_bodies();
        Ok(())
    }

    fn ping(&mut self, header: &FrameHeader, payload: &[u8]) -> Result<(), H2Error> {
        if header.stream != 0 {
            return Err(connection_error(code::PROTOCOL_ERROR, "PING on a stream"));
        }
        if payload.len() != 8 {
            return Err(connection_error(
                code::FRAME_SIZE_ERROR,
                "PING not 8 bytes long",
            ));
        }
        if !header.has(flag::ACK) {
            frame::write_ping_ack(&mut self.out, payload);
        }
        Ok(())
    }

    fn goaway(
        &mut self,
        header: &FrameHeader,
        payload: &[u8],
        sink: &mut impl StreamSink,
    ) -> Result<(), H2Error> {
        if header.stream != 0 {
            return Err(connection_error(code::PROTOCOL_ERROR, "GOAWAY on a stream"));
        }
        if payload.len() < 8 {
            return Err(connection_error(
                code::FRAME_SIZE_ERROR,
                "GOAWAY shorter than 8 bytes",
            ));
        }
        let last = frame::read_u31(payload);
        let error = frame::read_u32(&payload[4..]);
        self.goaway = true;
        for slot in 0..self.streams.len() {
            if self.streams[slot].id > last {
                self.close(slot);
            }
        }
        sink.goaway(last, error);
        Ok(())
    }

    fn window_update(
        &mut self,
        header: &FrameHeader,
        payload: &[u8],
        sink: &mut impl StreamSink,
    ) -> Result<(), H2Error> {
        if payload.len() != 4 {
            return Err(connection_error(
                code::FRAME_SIZE_ERROR,
                "WINDOW_UPDATE not 4 bytes long",
            ));
        }
        let increment = i64::from(frame::read_u31(payload));
        if header.stream == 0 {
            if increment == 0 {
                return Err(connection_error(code::PROTOCOL_ERROR, "WINDOW_UPDATE of 0"));
            }
            self.send_window += increment;
            if self.send_window > i64::from(frame::MAX_WINDOW) {
                return Err(connection_error(
                    code::FLOW_CONTROL_ERROR,
                    "connection window above 2^31-1",
                ));
            }
        } else if let Some(slot) = self.stream_of(header)? {
            let stream = &mut self.streams[slot];
            stream.send_window += increment;
            if increment == 0 {
                self.stream_error(slot, code::PROTOCOL_ERROR, sink);
            } else if stream.send_window > i64::from(frame::MAX_WINDOW) {
                self.stream_error(slot, code::FLOW_CONTROL_ERROR, sink);
            }
        }
        self.send_bodies();
        Ok(())
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

#[cfg(test)]
mod tests;
