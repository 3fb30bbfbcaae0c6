//! The HTTP/2 faults (RFC 9113): a server that answers over h2c by prior knowledge, or over TLS
//! with ALPN h2, and misbehaves in one way per mode. Its own frame writer and a trivial HPACK
//! encoder (every field a literal without indexing, no Huffman: RFC 7541 6.2.2) are all it needs;
//! a request's header block is never decoded (HEADERS and CONTINUATION are only followed to their
//! END_HEADERS, a request ends at END_STREAM), so every request gets the same answer.
//!
//! Blocking I/O on the connection's thread: the frames of one read are handled, the answers they
//! make written in one go, then the next read. Flow control toward the client is kept only where
//! a mode needs it (the response bodies are small); the client's DATA is given back at once.

use std::collections::{HashMap, HashSet};
use std::io::{Read, Write};
use std::sync::atomic::Ordering;

use crate::config::{Config, Mode, ANSWERED};

const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
const FRAME_HEADER: usize = 9;
/// The largest frame we accept: RFC 9113's initial SETTINGS_MAX_FRAME_SIZE, which we never raise.
const OUR_MAX_FRAME: usize = 16_384;

const DATA: u8 = 0x0;
const HEADERS: u8 = 0x1;
const RST_STREAM: u8 = 0x3;
const SETTINGS: u8 = 0x4;
const PING: u8 = 0x6;
const GOAWAY: u8 = 0x7;
const WINDOW_UPDATE: u8 = 0x8;
const CONTINUATION: u8 = 0x9;
/// No frame type RFC 9113 or its extensions define: a client must ignore it (RFC 9113 4.1).
const UNKNOWN: u8 = 0xfa;

const END_STREAM: u8 = 0x1;
const ACK: u8 = 0x1;
const END_HEADERS: u8 = 0x4;
const PADDED: u8 = 0x8;

const SETTINGS_HEADER_TABLE_SIZE: u16 = 0x1;
const SETTINGS_MAX_CONCURRENT_STREAMS: u16 = 0x3;
const SETTINGS_INITIAL_WINDOW_SIZE: u16 = 0x4;
const SETTINGS_MAX_FRAME_SIZE: u16 = 0x5;
const SETTINGS_MAX_HEADER_LIST_SIZE: u16 = 0x6;

const NO_ERROR: u32 = 0x0;
const PROTOCOL_ERROR: u32 = 0x1;
const INTERNAL_ERROR: u32 = 0x2;
/// What apache2's mod_http2 puts in a GOAWAY's error code when nghttp2 fails a callback:
/// NGHTTP2_ERR_CALLBACK_FAILURE (-902) as a u32, a code RFC 9113 does not define.
const NGHTTP2_ERR_CALLBACK_FAILURE: u32 = -902i32 as u32;
const REFUSED_STREAM: u32 = 0x7;

/// What the client told us in its SETTINGS and WINDOW_UPDATEs (RFC 9113 6.5.2 initial values).
struct Peer {
    max_frame: usize,
    /// SETTINGS_MAX_HEADER_LIST_SIZE; unbounded when unset (64 KiB taken then).
    max_header_list: usize,
    initial_window: i64,
    connection_window: i64,
    /// Window increments for streams, beyond `initial_window`.
    stream_windows: HashMap<u32, i64>,
}

/// One connection's state.
struct H2<'c> {
    cfg: &'c Config,
    peer: Peer,
    out: Vec<u8>,
    /// The stream whose header block goes on in CONTINUATION frames, and whether that block
    /// ends the request.
    continuing: Option<(u32, bool)>,
    /// Requests whose HEADERS came and whose END_STREAM has not.
    receiving: HashSet<u32>,
    /// Requests seen on this connection, the one being answered included.
    requests: u64,
    /// Streams waiting for the client's answer to our PING (`h2-ping`), by the PING's payload.
    pinged: HashMap<u64, u32>,
    /// After our GOAWAY (`h2-goaway`): the last stream we answer; we close once it is done.
    goaway_last: Option<u32>,
    /// Streams answered since the last write, for `h2-one-stream`'s check.
    unwritten: u32,
}

/// Serves one connection (plaintext or TLS) until the client closes or the mode ends it; the
/// caller closes the transport.
pub fn serve(io: &mut (impl Read + Write), cfg: &Config) {
    let mut buf = vec![0u8; 64 * 1024];
    let mut have = 0;
    // The client preface, then our SETTINGS first: a client opens streams only once it has them.
    while have < PREFACE.len() {
        match io.read(&mut buf[have..]) {
            Ok(0) | Err(_) => return,
            Ok(n) => have += n,
        }
    }
    if &buf[..PREFACE.len()] != PREFACE {
        return;
    }
    buf.copy_within(PREFACE.len()..have, 0);
    have -= PREFACE.len();
    let mut h2 = H2 {
        cfg,
        peer: Peer {
            max_frame: OUR_MAX_FRAME,
            max_header_list: 64 * 1024,
            initial_window: 65_535,
            connection_window: 65_535,
            stream_windows: HashMap::new(),
        },
        out: Vec::with_capacity(4096),
        continuing: None,
        receiving: HashSet::new(),
        requests: 0,
        pinged: HashMap::new(),
        goaway_last: None,
        unwritten: 0,
    };
    h2.settings();
    loop {
        let mut at = 0;
        while let Some(len) = frame_len(&buf[at..have]) {
            if len > FRAME_HEADER + OUR_MAX_FRAME {
                return; // a frame we never allowed: FRAME_SIZE_ERROR, said by closing
            }
            let frame = &buf[at..at + len];
            let keep_on = h2.frame(frame[3], frame[4], stream_id(&frame[5..9]), &frame[9..]);
            at += len;
            if !keep_on {
                let _ = io.write_all(&h2.out);
                return;
            }
        }
        buf.copy_within(at..have, 0);
        have -= at;
        if !h2.out.is_empty() {
            if io.write_all(&h2.out).and_then(|_| io.flush()).is_err() {
                return;
            }
            h2.out.clear();
            ANSWERED.fetch_add(u64::from(h2.unwritten), Ordering::Relaxed);
            h2.unwritten = 0;
        }
        if h2.goaway_last.is_some() && h2.receiving.is_empty() && h2.pinged.is_empty() {
            return; // every stream up to our GOAWAY's last one is answered
        }
        match io.read(&mut buf[have..]) {
            Ok(0) | Err(_) => return,
            Ok(n) => have += n,
        }
    }
}

/// The length of the whole frame at the start of `bytes`, if it is all there.
fn frame_len(bytes: &[u8]) -> Option<usize> {
    if bytes.len() < FRAME_HEADER {
        return None;
    }
    let len = FRAME_HEADER
        + (usize::from(bytes[0]) << 16 | usize::from(bytes[1]) << 8)
        + usize::from(bytes[2]);
    // Too large a frame is reported whole-length so the caller refuses it before buffering it.
    (bytes.len() >= len || len > FRAME_HEADER + OUR_MAX_FRAME).then_some(len)
}

fn stream_id(b: &[u8]) -> u32 {
    u32::from_be_bytes([b[0], b[1], b[2], b[3]]) & 0x7fff_ffff
}

impl H2<'_> {
    /// Handles one frame from the client; false when the connection is to end.
    fn frame(&mut self, kind: u8, flags: u8, stream: u32, payload: &[u8]) -> bool {
        if let Some((open, ends)) = self.continuing {
            // RFC 9113 6.10: nothing but this stream's CONTINUATION until END_HEADERS.
            if kind != CONTINUATION || stream != open {
                return false;
            }
            if flags & END_HEADERS != 0 {
                self.continuing = None;
                if ends {
                    self.request_done(stream);
                }
            }
            return true;
        }
        match kind {
            HEADERS => {
                let ends = flags & END_STREAM != 0;
                if self.cfg.mode == Mode::H2OneStream
                    && self.receiving.len() + self.unwritten as usize >= 1
                {
                    // Over our SETTINGS_MAX_CONCURRENT_STREAMS (RFC 9113 5.1.2).
                    self.rst(stream, REFUSED_STREAM);
                    return true;
                }
                self.receiving.insert(stream);
                if flags & END_HEADERS == 0 {
                    self.continuing = Some((stream, ends));
                } else if ends {
                    self.request_done(stream);
                }
            }
            DATA => {
                if !payload.is_empty() && self.cfg.mode != Mode::H2ZeroWindow {
                    let n = payload.len() as u32;
                    self.window_update(0, n);
                    if flags & END_STREAM == 0 {
                        self.window_update(stream, n);
                    }
                }
                if flags & END_STREAM != 0 {
                    self.request_done(stream);
                }
            }
            SETTINGS if flags & ACK == 0 => {
                for s in payload.chunks_exact(6) {
                    let value = u32::from_be_bytes([s[2], s[3], s[4], s[5]]);
                    match u16::from_be_bytes([s[0], s[1]]) {
                        SETTINGS_INITIAL_WINDOW_SIZE => self.peer.initial_window = value.into(),
                        SETTINGS_MAX_FRAME_SIZE => self.peer.max_frame = value as usize,
                        SETTINGS_MAX_HEADER_LIST_SIZE => self.peer.max_header_list = value as usize,
                        _ => {}
                    }
                }
                self.frame_header(0, SETTINGS, ACK, 0);
            }
            PING if payload.len() == 8 => {
                let opaque = u64::from_be_bytes(payload.try_into().unwrap_or_default());
                if flags & ACK == 0 {
                    self.frame_header(8, PING, ACK, 0);
                    self.out.extend_from_slice(payload);
                } else if let Some(stream) = self.pinged.remove(&opaque) {
                    self.answer(stream);
                }
            }
            WINDOW_UPDATE if payload.len() == 4 => {
                let n = i64::from(stream_id(payload));
                if stream == 0 {
                    self.peer.connection_window += n;
                } else {
                    *self.peer.stream_windows.entry(stream).or_default() += n;
                }
            }
            RST_STREAM => {
                self.receiving.remove(&stream);
            }
            GOAWAY => return false,
            // PRIORITY and anything unknown.
            _ => {}
        }
        true
    }

    /// Our SETTINGS, as the mode wants them.
    fn settings(&mut self) {
        let mut settings: Vec<(u16, u32)> = vec![(SETTINGS_HEADER_TABLE_SIZE, 0)];
        settings.push(match self.cfg.mode {
            Mode::H2OneStream => (SETTINGS_MAX_CONCURRENT_STREAMS, 1),
            _ => (SETTINGS_MAX_CONCURRENT_STREAMS, 100),
        });
        if self.cfg.mode == Mode::H2ZeroWindow {
            settings.push((SETTINGS_INITIAL_WINDOW_SIZE, 0));
        }
        self.frame_header(6 * settings.len(), SETTINGS, 0, 0);
        for (id, value) in settings {
            self.out.extend_from_slice(&id.to_be_bytes());
            self.out.extend_from_slice(&value.to_be_bytes());
        }
    }

    /// The request on `stream` is whole: the mode decides what it gets.
    fn request_done(&mut self, stream: u32) {
        self.receiving.remove(&stream);
        if self.goaway_last.is_some_and(|last| stream > last) {
            return; // after our GOAWAY: never processed, the client retries it elsewhere
        }
        self.requests += 1;
        let nth = self.requests;
        let every = self.cfg.h2_every;
        match self.cfg.mode {
            Mode::H2RstStream if nth.is_multiple_of(every) => self.rst(stream, INTERNAL_ERROR),
            Mode::H2RefuseStream if nth.is_multiple_of(every) => self.rst(stream, REFUSED_STREAM),
            Mode::H2GoawayError => self.goaway(stream, PROTOCOL_ERROR),
            Mode::H2GoawayUnprocessed if nth > self.cfg.h2_goaway_after => {
                // The stream crossed the shutdown notice: never processed (its id is above the
                // second GOAWAY's last), and the connection ends.
                self.goaway(0x7fff_ffff, NO_ERROR);
                self.goaway(stream - 2, NGHTTP2_ERR_CALLBACK_FAILURE);
            }
            Mode::H2Ping => {
                let opaque = u64::from(stream) << 8 | 0x5a;
                self.pinged.insert(opaque, stream);
                self.frame_header(8, PING, 0, 0);
                self.out.extend_from_slice(&opaque.to_be_bytes());
            }
            Mode::H2NoData => self.headers(stream, false),
            Mode::H2DataOverWindow => self.data_over_window(stream),
            Mode::H2WindowOverflow => {
                // The client's send window on the connection past 2^31-1: FLOW_CONTROL_ERROR
                // (RFC 9113 6.9.1). Then the answer, which it must not take.
                self.window_update(0, 0x7fff_ffff);
                self.answer(stream);
            }
            Mode::H2Slots => {
                if let Some(slots) = &self.cfg.slots {
                    slots.hold();
                }
                self.answer(stream);
            }
            Mode::H2Goaway => {
                self.answer(stream);
                if nth == self.cfg.h2_goaway_after && self.goaway_last.is_none() {
                    self.goaway_last = Some(stream);
                    self.goaway(stream, NO_ERROR);
                }
            }
            _ => self.answer(stream),
        }
    }

    /// A whole answer: status 200 and `--body-bytes`, shaped by the mode.
    fn answer(&mut self, stream: u32) {
        self.unwritten += 1;
        if self.cfg.mode == Mode::H2UnknownFrame {
            self.unknown_frame(stream);
        }
        self.headers(stream, self.cfg.body.is_empty());
        if self.cfg.mode == Mode::H2UnknownFrame {
            self.unknown_frame(0);
        }
        if self.cfg.body.is_empty() {
            return;
        }
        let body = &self.cfg.body;
        match self.cfg.mode {
            Mode::H2Padded => {
                let pad = 20;
                self.frame_header(1 + body.len() + pad, DATA, END_STREAM | PADDED, stream);
                self.out.push(pad as u8);
                self.out.extend_from_slice(body);
                self.out.resize(self.out.len() + pad, 0);
            }
            Mode::H2BigFrame => {
                // One byte over what the client accepts: FRAME_SIZE_ERROR (RFC 9113 4.2).
                let len = self.peer.max_frame + 1;
                self.frame_header(len, DATA, END_STREAM, stream);
                self.out.resize(self.out.len() + len, b'x');
            }
            _ => {
                let out = &mut self.out;
                for (i, chunk) in body.chunks(self.peer.max_frame).enumerate() {
                    let last = (i + 1) * self.peer.max_frame >= body.len();
                    write_frame_header(
                        out,
                        chunk.len(),
                        DATA,
                        if last { END_STREAM } else { 0 },
                        stream,
                    );
                    out.extend_from_slice(chunk);
                }
            }
        }
    }

    /// The response's HEADERS (and CONTINUATIONs), as the mode shapes them.
    fn headers(&mut self, stream: u32, end_stream: bool) {
        let mut block = Vec::with_capacity(64);
        literal(&mut block, b":status", b"200");
        if self.cfg.mode != Mode::H2DataOverWindow {
            // There, the DATA's length is the fault, not a mismatch with this.
            literal(
                &mut block,
                b"content-length",
                self.cfg.body.len().to_string().as_bytes(),
            );
        }
        let mut fragment = self.peer.max_frame;
        match self.cfg.mode {
            Mode::H2Continuation => {
                literal(&mut block, b"server", b"httpbench-testserver");
                literal(&mut block, b"x-continued", b"over several frames");
                fragment = block.len().div_ceil(3);
            }
            Mode::H2BigHeaders => {
                // RFC 9113 6.5.2: a field's size is its name's and value's lengths plus 32.
                let mut size = 0;
                let value = vec![b'v'; 1000];
                while size <= self.peer.max_header_list {
                    literal(&mut block, b"x-big", &value);
                    size += 5 + value.len() + 32;
                }
            }
            _ => {}
        }
        let end = if end_stream { END_STREAM } else { 0 };
        if self.cfg.mode == Mode::H2Padded {
            let pad = 10;
            self.frame_header(
                1 + block.len() + pad,
                HEADERS,
                end | END_HEADERS | PADDED,
                stream,
            );
            self.out.push(pad as u8);
            self.out.extend_from_slice(&block);
            self.out.resize(self.out.len() + pad, 0);
            return;
        }
        let pieces = block.chunks(fragment.max(1)).count();
        for (i, piece) in block.chunks(fragment.max(1)).enumerate() {
            let (kind, flags) = if i == 0 {
                (HEADERS, end)
            } else {
                (CONTINUATION, 0)
            };
            let flags = if i + 1 == pieces {
                flags | END_HEADERS
            } else {
                flags
            };
            self.frame_header(piece.len(), kind, flags, stream);
            self.out.extend_from_slice(piece);
        }
    }

    /// HEADERS, then one byte of DATA more than the client's windows allow as we know them.
    fn data_over_window(&mut self, stream: u32) {
        self.headers(stream, false);
        let granted =
            self.peer.initial_window + self.peer.stream_windows.get(&stream).copied().unwrap_or(0);
        let mut left = granted.min(self.peer.connection_window).max(0) as usize + 1;
        while left > 0 {
            let n = left.min(self.peer.max_frame);
            self.frame_header(n, DATA, 0, stream);
            self.out.resize(self.out.len() + n, b'x');
            left -= n;
        }
        self.peer.connection_window = 0;
    }

    fn unknown_frame(&mut self, stream: u32) {
        self.frame_header(4, UNKNOWN, 0xff, stream);
        self.out.extend_from_slice(b"junk");
    }

    fn rst(&mut self, stream: u32, code: u32) {
        self.frame_header(4, RST_STREAM, 0, stream);
        self.out.extend_from_slice(&code.to_be_bytes());
    }

    fn goaway(&mut self, last: u32, code: u32) {
        self.frame_header(8, GOAWAY, 0, 0);
        self.out.extend_from_slice(&last.to_be_bytes());
        self.out.extend_from_slice(&code.to_be_bytes());
        if code != NO_ERROR {
            self.goaway_last = Some(last);
        }
    }

    fn window_update(&mut self, stream: u32, n: u32) {
        self.frame_header(4, WINDOW_UPDATE, 0, stream);
        self.out.extend_from_slice(&n.to_be_bytes());
    }

    fn frame_header(&mut self, len: usize, kind: u8, flags: u8, stream: u32) {
        write_frame_header(&mut self.out, len, kind, flags, stream);
    }
}

fn write_frame_header(out: &mut Vec<u8>, len: usize, kind: u8, flags: u8, stream: u32) {
    out.extend_from_slice(&(len as u32).to_be_bytes()[1..]);
    out.extend_from_slice(&[kind, flags]);
    out.extend_from_slice(&stream.to_be_bytes());
}

/// A field as a literal without indexing with a new name, neither string Huffman-coded
/// (RFC 7541 6.2.2).
fn literal(out: &mut Vec<u8>, name: &[u8], value: &[u8]) {
    out.push(0);
    for s in [name, value] {
        integer(out, 0, 7, s.len());
        out.extend_from_slice(s);
    }
}

/// An integer with an N-bit prefix (RFC 7541 5.1), `first` holding the bits above the prefix.
fn integer(out: &mut Vec<u8>, first: u8, prefix: u32, mut n: usize) {
    let max = (1usize << prefix) - 1;
    if n < max {
        out.push(first | n as u8);
        return;
    }
    out.push(first | max as u8);
    n -= max;
    while n >= 128 {
        out.push((n % 128) as u8 | 0x80);
        n /= 128;
    }
    out.push(n as u8);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers_follow_rfc_7541_c_1() {
        let mut out = Vec::new();
        integer(&mut out, 0, 5, 10);
        integer(&mut out, 0, 5, 1337);
        integer(&mut out, 0, 8, 42);
        assert_eq!(out, [10, 31, 154, 10, 42]);
    }
}
