//! The sans-io HTTP/2 client connection (RFC 9113).

use std::fmt;

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
            max_frame_size: 1 << 14,
            header_table_size: 4096,
            max_header_list_size: 1 << 16,
        }
    }
}

/// A connection error: the connection cannot continue (a GOAWAY is queued).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct H2Error {
    /// The RFC 9113 error code sent in our GOAWAY.
    pub code: u32,
    /// What was wrong, for the error message.
    pub why: &'static str,
}

impl fmt::Display for H2Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "HTTP/2 connection error: {}", self.why)
    }
}

impl std::error::Error for H2Error {}

/// What a connection tells the worker about its streams, in order.
pub trait StreamSink {
    /// The first byte of the stream's response (its first HEADERS frame) arrived.
    fn first_byte(&mut self, stream: u32);
    /// The stream ended (END_STREAM) with this final response.
    fn complete(&mut self, stream: u32, response: &Response);
    /// The server reset the stream (RST_STREAM) with this error code, or the stream failed on
    /// our side (then the code is what we sent).
    fn reset(&mut self, stream: u32, code: u32);
    /// The server sent GOAWAY: streams above `last_stream` were not processed (retry them).
    fn goaway(&mut self, last_stream: u32, code: u32);
}

/// The client side of one HTTP/2 connection.
pub struct Connection {}

impl Connection {
    /// Queues the preface, our SETTINGS and the connection WINDOW_UPDATE.
    pub fn new(_limits: &Limits) -> Connection {
        todo!()
    }

    /// Bytes are queued for the peer.
    pub fn wants_write(&self) -> bool {
        todo!()
    }

    /// Swaps the queued bytes into `into` (cleared first); both buffers keep their capacity.
    pub fn take_output(&mut self, _into: &mut Vec<u8>) {
        todo!()
    }

    /// The server's SETTINGS arrived: streams may open.
    pub fn ready(&self) -> bool {
        todo!()
    }

    /// The server's SETTINGS_MAX_CONCURRENT_STREAMS (u32::MAX while unset).
    pub fn streams_granted(&self) -> u32 {
        todo!()
    }

    /// Streams opened and not yet ended.
    pub fn open_streams(&self) -> u32 {
        todo!()
    }

    /// A stream may open now (ready, no GOAWAY, ids left, under the server's limit).
    pub fn can_open(&self) -> bool {
        todo!()
    }

    /// Opens a stream with this encoded request header block and optional body; returns its id.
    pub fn open(&mut self, _request_block: &[u8], _body: Option<&[u8]>) -> u32 {
        todo!()
    }

    /// Feeds bytes received from the server, in any split.
    pub fn receive(&mut self, _data: &[u8], _sink: &mut impl StreamSink) -> Result<(), H2Error> {
        todo!()
    }

    /// Framing overhead received so far (frame headers, padding, frames other than DATA and
    /// HEADERS/CONTINUATION).
    pub fn frame_bytes(&self) -> u64 {
        todo!()
    }
}
