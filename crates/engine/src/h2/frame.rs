//! RFC 9113 sections 4 to 7: the frame header, frame types and flags, error codes with their
//! names, padding, and writers for the frames a client sends.

use std::fmt;

/// Bytes of every frame header.
pub const HEADER_LEN: usize = 9;
/// The client connection preface (RFC 9113 section 3.4).
pub const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
/// The initial flow-control window of the connection and of every stream (section 6.9.2).
pub const DEFAULT_WINDOW: u32 = 65_535;
/// The initial and smallest SETTINGS_MAX_FRAME_SIZE (section 6.5.2).
pub const DEFAULT_MAX_FRAME_SIZE: u32 = 1 << 14;
/// The largest SETTINGS_MAX_FRAME_SIZE allowed.
pub const MAX_MAX_FRAME_SIZE: u32 = (1 << 24) - 1;
/// The largest flow-control window (section 6.9.1).
pub const MAX_WINDOW: u32 = (1 << 31) - 1;

/// Frame types (section 6). Other values are extension frames, ignored.
pub mod kind {
    pub const DATA: u8 = 0x0;
    pub const HEADERS: u8 = 0x1;
    pub const PRIORITY: u8 = 0x2;
    pub const RST_STREAM: u8 = 0x3;
    pub const SETTINGS: u8 = 0x4;
    pub const PUSH_PROMISE: u8 = 0x5;
    pub const PING: u8 = 0x6;
    pub const GOAWAY: u8 = 0x7;
    pub const WINDOW_UPDATE: u8 = 0x8;
    pub const CONTINUATION: u8 = 0x9;
}

/// Frame flags; their meaning depends on the frame type.
pub mod flag {
    pub const END_STREAM: u8 = 0x1;
    pub const ACK: u8 = 0x1;
    pub const END_HEADERS: u8 = 0x4;
    pub const PADDED: u8 = 0x8;
    pub const PRIORITY: u8 = 0x20;
}

/// SETTINGS identifiers (section 6.5.2).
pub mod setting {
    pub const HEADER_TABLE_SIZE: u16 = 0x1;
    pub const ENABLE_PUSH: u16 = 0x2;
    pub const MAX_CONCURRENT_STREAMS: u16 = 0x3;
    pub const INITIAL_WINDOW_SIZE: u16 = 0x4;
    pub const MAX_FRAME_SIZE: u16 = 0x5;
    pub const MAX_HEADER_LIST_SIZE: u16 = 0x6;
}

/// Error codes (section 7).
pub mod code {
    pub const NO_ERROR: u32 = 0x0;
    pub const PROTOCOL_ERROR: u32 = 0x1;
    pub const INTERNAL_ERROR: u32 = 0x2;
    pub const FLOW_CONTROL_ERROR: u32 = 0x3;
    pub const SETTINGS_TIMEOUT: u32 = 0x4;
    pub const STREAM_CLOSED: u32 = 0x5;
    pub const FRAME_SIZE_ERROR: u32 = 0x6;
    pub const REFUSED_STREAM: u32 = 0x7;
    pub const CANCEL: u32 = 0x8;
    pub const COMPRESSION_ERROR: u32 = 0x9;
    pub const CONNECT_ERROR: u32 = 0xa;
    pub const ENHANCE_YOUR_CALM: u32 = 0xb;
    pub const INADEQUATE_SECURITY: u32 = 0xc;
    pub const HTTP_1_1_REQUIRED: u32 = 0xd;
}

const CODE_NAMES: [&str; 14] = [
    "NO_ERROR",
    "PROTOCOL_ERROR",
    "INTERNAL_ERROR",
    "FLOW_CONTROL_ERROR",
    "SETTINGS_TIMEOUT",
    "STREAM_CLOSED",
    "FRAME_SIZE_ERROR",
    "REFUSED_STREAM",
    "CANCEL",
    "COMPRESSION_ERROR",
    "CONNECT_ERROR",
    "ENHANCE_YOUR_CALM",
    "INADEQUATE_SECURITY",
    "HTTP_1_1_REQUIRED",
];

/// An error code as the report names it: the RFC's name, or `0x..` for a code it does not define.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ErrorCode(pub u32);

impl ErrorCode {
    /// The RFC's name of this code, if it has one.
    pub fn name(self) -> Option<&'static str> {
        CODE_NAMES.get(self.0 as usize).copied()
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.name() {
            Some(name) => f.write_str(name),
            None => write!(f, "{:#x}", self.0),
        }
    }
}

/// A frame header (section 4.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FrameHeader {
    pub len: u32,
    pub kind: u8,
    pub flags: u8,
    /// The stream identifier, reserved bit cleared.
    pub stream: u32,
}

impl FrameHeader {
    /// Parses the first 9 bytes of `bytes` (which must hold at least that many).
    pub fn parse(bytes: &[u8]) -> FrameHeader {
        FrameHeader {
            len: u32::from_be_bytes([0, bytes[0], bytes[1], bytes[2]]),
            kind: bytes[3],
            flags: bytes[4],
            stream: read_u31(&bytes[5..9]),
        }
    }

    pub fn has(&self, flag: u8) -> bool {
        self.flags & flag != 0
    }
}

/// A 31-bit big-endian value, its reserved high bit ignored.
pub fn read_u31(bytes: &[u8]) -> u32 {
    u32::from_be_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]) & MAX_WINDOW
}

pub fn read_u32(bytes: &[u8]) -> u32 {
    u32::from_be_bytes([bytes[0], bytes[1], bytes[2], bytes[3]])
}

/// The payload of a PADDED frame without its Pad Length byte and padding, or `None` when the
/// padding is longer than the payload (a PROTOCOL_ERROR, section 6.1).
pub fn unpad(header: &FrameHeader, payload: &[u8]) -> Option<(usize, usize)> {
    if !header.has(flag::PADDED) {
        return Some((0, payload.len()));
    }
    let (&pad, rest) = payload.split_first()?;
    let end = rest.len().checked_sub(pad as usize)?;
    Some((1, 1 + end))
}

/// Appends a frame header.
pub fn write_header(out: &mut Vec<u8>, len: usize, kind: u8, flags: u8, stream: u32) {
    let len = (len as u32).to_be_bytes();
    out.extend_from_slice(&len[1..]);
    out.push(kind);
    out.push(flags);
    out.extend_from_slice(&stream.to_be_bytes());
}

pub fn write_settings(out: &mut Vec<u8>, settings: &[(u16, u32)]) {
    write_header(out, settings.len() * 6, kind::SETTINGS, 0, 0);
    for &(id, value) in settings {
        out.extend_from_slice(&id.to_be_bytes());
        out.extend_from_slice(&value.to_be_bytes());
    }
}

pub fn write_settings_ack(out: &mut Vec<u8>) {
    write_header(out, 0, kind::SETTINGS, flag::ACK, 0);
}

pub fn write_window_update(out: &mut Vec<u8>, stream: u32, increment: u32) {
    write_header(out, 4, kind::WINDOW_UPDATE, 0, stream);
    out.extend_from_slice(&increment.to_be_bytes());
}

pub fn write_ping_ack(out: &mut Vec<u8>, opaque: &[u8]) {
    write_header(out, 8, kind::PING, flag::ACK, 0);
    out.extend_from_slice(opaque);
}

pub fn write_rst_stream(out: &mut Vec<u8>, stream: u32, code: u32) {
    write_header(out, 4, kind::RST_STREAM, 0, stream);
    out.extend_from_slice(&code.to_be_bytes());
}

pub fn write_goaway(out: &mut Vec<u8>, last_stream: u32, code: u32) {
    write_header(out, 8, kind::GOAWAY, 0, 0);
    out.extend_from_slice(&last_stream.to_be_bytes());
    out.extend_from_slice(&code.to_be_bytes());
}

/// HEADERS, then CONTINUATION frames for whatever does not fit in `max_frame_size`.
pub fn write_headers(
    out: &mut Vec<u8>,
    stream: u32,
    block: &[u8],
    end_stream: bool,
    max_frame_size: usize,
) {
    let mut chunks = block.chunks(max_frame_size.max(1));
    let count = chunks.len().max(1);
    let first = chunks.next().unwrap_or(&[]);
    let mut flags = if end_stream { flag::END_STREAM } else { 0 };
    if count == 1 {
        flags |= flag::END_HEADERS;
    }
    write_header(out, first.len(), kind::HEADERS, flags, stream);
    out.extend_from_slice(first);
    for (i, chunk) in chunks.enumerate() {
        let flags = if i + 2 == count { flag::END_HEADERS } else { 0 };
        write_header(out, chunk.len(), kind::CONTINUATION, flags, stream);
        out.extend_from_slice(chunk);
    }
}

pub fn write_data(out: &mut Vec<u8>, stream: u32, data: &[u8], end_stream: bool) {
    let flags = if end_stream { flag::END_STREAM } else { 0 };
    write_header(out, data.len(), kind::DATA, flags, stream);
    out.extend_from_slice(data);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_round_trips_and_clears_the_reserved_bit() {
        let mut out = Vec::new();
        write_header(
            &mut out,
            0x12345,
            kind::HEADERS,
            flag::END_HEADERS,
            0x8000_0003,
        );
        let header = FrameHeader::parse(&out);
        assert_eq!(header.len, 0x12345);
        assert_eq!(header.kind, kind::HEADERS);
        assert!(header.has(flag::END_HEADERS));
        assert_eq!(header.stream, 3);
    }

    #[test]
    fn error_codes_are_named_and_unknown_ones_shown_in_hex() {
        assert_eq!(
            ErrorCode(code::REFUSED_STREAM).to_string(),
            "REFUSED_STREAM"
        );
        assert_eq!(
            ErrorCode(code::HTTP_1_1_REQUIRED).to_string(),
            "HTTP_1_1_REQUIRED"
        );
        assert_eq!(ErrorCode(0x42).to_string(), "0x42");
    }

    #[test]
    fn padding_is_stripped_and_overlong_padding_refused() {
        let header = FrameHeader {
            len: 6,
            kind: kind::DATA,
            flags: flag::PADDED,
            stream: 1,
        };
        assert_eq!(unpad(&header, &[2, b'a', b'b', b'c', 0, 0]), Some((1, 4)));
        assert_eq!(unpad(&header, &[6, b'a']), None);
        assert_eq!(unpad(&header, &[]), None);
    }

    #[test]
    fn a_large_block_is_split_into_continuations() {
        let mut out = Vec::new();
        write_headers(&mut out, 1, &[7; 10], true, 4);
        let first = FrameHeader::parse(&out);
        assert_eq!(
            (first.len, first.kind, first.flags),
            (4, kind::HEADERS, flag::END_STREAM)
        );
        let second = FrameHeader::parse(&out[13..]);
        assert_eq!(
            (second.len, second.kind, second.flags),
            (4, kind::CONTINUATION, 0)
        );
        let third = FrameHeader::parse(&out[26..]);
        assert_eq!((third.len, third.flags), (2, flag::END_HEADERS));
        assert_eq!(out.len(), 3 * HEADER_LEN + 10);
    }
}
