//! The little HTTP/2 the connections beside the load speak: the frames they send, and a walk
//! over the frames a server sends that answers what any client must (SETTINGS and PING
//! acknowledged, DATA's window given back unless the connection reads slowly) and says what
//! happened to their stream.

use crate::h2::frame::{self, flag, kind, setting, FrameHeader, HEADER_LEN};
use crate::spec::SlowMode;

/// The preface and our SETTINGS: a slow reader's stream window is `window` bytes.
pub(super) fn preface(window: Option<u32>, out: &mut Vec<u8>) {
    out.extend_from_slice(frame::PREFACE);
    match window {
        Some(w) => frame::write_settings(out, &[(setting::INITIAL_WINDOW_SIZE, w)]),
        None => frame::write_settings(out, &[]),
    }
}

/// A whole request without a body on `stream`: HEADERS with END_HEADERS and END_STREAM.
pub(super) fn request(stream: u32, block: &[u8], out: &mut Vec<u8>) {
    frame::write_headers(
        out,
        stream,
        block,
        true,
        frame::DEFAULT_MAX_FRAME_SIZE as usize,
    );
}

/// A slow client's stream 1 opened as its mode does: slowloris's HEADERS never ends its header
/// block (no END_HEADERS: CONTINUATION frames follow), R.U.D.Y.'s has a body to come (no
/// END_STREAM), slow read's is a whole GET.
pub(super) fn open_slow_stream(mode: SlowMode, block: &[u8], out: &mut Vec<u8>) {
    let flags = match mode {
        SlowMode::Headers => flag::END_STREAM,
        SlowMode::Body => flag::END_HEADERS,
        SlowMode::Read => flag::END_HEADERS | flag::END_STREAM,
    };
    frame::write_header(out, block.len(), kind::HEADERS, flags, 1);
    out.extend_from_slice(block);
}

/// A slow client's next chunk on stream 1: a piece of the header block (headers), of the body
/// (body; the last with END_STREAM), or `n` more bytes of window for the answer (read).
pub(super) fn trickle(mode: SlowMode, piece: &[u8], n: u32, last: bool, out: &mut Vec<u8>) {
    match mode {
        SlowMode::Headers => {
            frame::write_header(out, piece.len(), kind::CONTINUATION, 0, 1);
            out.extend_from_slice(piece);
        }
        SlowMode::Body => frame::write_data(out, 1, piece, last),
        SlowMode::Read => {
            frame::write_window_update(out, 1, n);
            frame::write_window_update(out, 0, n);
        }
    }
}

/// What a walk over the server's frames found.
#[derive(Debug, Default, PartialEq)]
pub(super) struct Heard {
    /// Its SETTINGS (not an ACK).
    pub(super) settings: bool,
    /// END_STREAM on `stream`: its answer is whole.
    pub(super) ended: bool,
    /// RST_STREAM on `stream`.
    pub(super) reset: bool,
}

/// Walk the whole frames at the start of `carry`, dropping them (a frame cut off stays), with
/// the answers any client owes appended to `out`; the window DATA took is given back to the
/// connection if `give_back`.
pub(super) fn walk(carry: &mut Vec<u8>, stream: u32, give_back: bool, out: &mut Vec<u8>) -> Heard {
    let (mut heard, mut used) = (Heard::default(), 0);
    while carry.len() - used >= HEADER_LEN {
        let h = FrameHeader::parse(&carry[used..]);
        let end = used + HEADER_LEN + h.len as usize;
        if carry.len() < end {
            break;
        }
        let ours = h.stream != 0 && h.stream == stream;
        match h.kind {
            kind::SETTINGS if !h.has(flag::ACK) => {
                heard.settings = true;
                frame::write_settings_ack(out);
            }
            kind::PING if !h.has(flag::ACK) => {
                frame::write_ping_ack(out, &carry[used + HEADER_LEN..end]);
            }
            kind::DATA if give_back && h.len > 0 => frame::write_window_update(out, 0, h.len),
            kind::RST_STREAM if ours => heard.reset = true,
            _ => {}
        }
        if ours && matches!(h.kind, kind::HEADERS | kind::DATA) && h.has(flag::END_STREAM) {
            heard.ended = true;
        }
        used = end;
    }
    carry.drain(..used);
    heard
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_walk_acknowledges_what_a_client_must_and_finds_its_streams_end() {
        let mut server = Vec::new();
        frame::write_settings(&mut server, &[(setting::MAX_CONCURRENT_STREAMS, 9)]);
        frame::write_header(&mut server, 8, kind::PING, 0, 0);
        server.extend_from_slice(b"12345678");
        frame::write_data(&mut server, 3, b"abc", true);
        frame::write_data(&mut server, 1, b"abcd", false);
        let cut = server.len();
        frame::write_data(&mut server, 1, b"ef", true);
        let mut carry = server[..cut + 4].to_vec();
        let mut out = Vec::new();
        let heard = walk(&mut carry, 1, true, &mut out);
        assert!(heard.settings && !heard.ended && !heard.reset);
        assert_eq!(carry.len(), 4, "the frame cut off waits for its rest");
        let mut expected = Vec::new();
        frame::write_settings_ack(&mut expected);
        frame::write_ping_ack(&mut expected, b"12345678");
        frame::write_window_update(&mut expected, 0, 3);
        frame::write_window_update(&mut expected, 0, 4);
        assert_eq!(out, expected);
        carry.extend_from_slice(&server[cut + 4..]);
        let mut out = Vec::new();
        // A slow reader gives no window back: what it reads is what it trickled.
        let heard = walk(&mut carry, 1, false, &mut out);
        assert!(heard.ended && carry.is_empty() && out.is_empty());
    }

    #[test]
    fn slow_streams_open_as_their_modes_do() {
        let flags = |mode| {
            let mut out = Vec::new();
            open_slow_stream(mode, &[0x82], &mut out);
            FrameHeader::parse(&out).flags
        };
        assert_eq!(flags(SlowMode::Headers), flag::END_STREAM);
        assert_eq!(flags(SlowMode::Body), flag::END_HEADERS);
        assert_eq!(flags(SlowMode::Read), flag::END_HEADERS | flag::END_STREAM);
        let mut out = Vec::new();
        trickle(SlowMode::Read, &[], 32, false, &mut out);
        let first = FrameHeader::parse(&out);
        assert_eq!((first.kind, first.stream), (kind::WINDOW_UPDATE, 1));
        assert_eq!(frame::read_u31(&out[HEADER_LEN..]), 32);
    }
}
