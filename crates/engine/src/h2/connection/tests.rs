//! The client connection driven by hand-built server frames.

use super::*;
use crate::h2::frame::{flag, kind};

/// `:status: 200` from the static table (RFC 7541 appendix A, index 8).
const STATUS_200: &[u8] = &[0x88];
/// `:status: 404` (index 13).
const STATUS_404: &[u8] = &[0x8d];
/// `:status: 103` as a literal without indexing, name from index 8.
const STATUS_103: &[u8] = &[0x08, 3, b'1', b'0', b'3'];

/// Builds server frames.
fn frame(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    frame::write_header(&mut out, payload.len(), kind, flags, stream);
    out.extend_from_slice(payload);
    out
}

fn settings(entries: &[(u16, u32)]) -> Vec<u8> {
    let mut out = Vec::new();
    frame::write_settings(&mut out, entries);
    out
}

fn headers(stream: u32, block: &[u8], end_stream: bool) -> Vec<u8> {
    let flags = flag::END_HEADERS | if end_stream { flag::END_STREAM } else { 0 };
    frame(kind::HEADERS, flags, stream, block)
}

fn data(stream: u32, body: &[u8], end_stream: bool) -> Vec<u8> {
    frame(
        kind::DATA,
        if end_stream { flag::END_STREAM } else { 0 },
        stream,
        body,
    )
}

fn u32s(a: u32, b: u32) -> Vec<u8> {
    [a.to_be_bytes(), b.to_be_bytes()].concat()
}

#[derive(Default, Debug, PartialEq)]
struct Events {
    first_bytes: Vec<u32>,
    complete: Vec<(u32, Response)>,
    resets: Vec<(u32, u32)>,
    goaways: Vec<(u32, u32)>,
}

impl StreamSink for Events {
    fn first_byte(&mut self, stream: u32) {
        self.first_bytes.push(stream);
    }
    fn complete(&mut self, stream: u32, response: &Response) {
        self.complete.push((stream, *response));
    }
    fn reset(&mut self, stream: u32, code: u32) {
        self.resets.push((stream, code));
    }
    fn goaway(&mut self, last_stream: u32, code: u32) {
        self.goaways.push((last_stream, code));
    }
}

/// A connection that has seen the server's SETTINGS, its own output drained.
fn ready_connection(server_settings: &[(u16, u32)]) -> Connection {
    let mut connection = Connection::new(&Limits::default());
    connection
        .receive(&settings(server_settings), &mut Events::default())
        .unwrap();
    assert!(connection.ready());
    connection.take_output(&mut Vec::new());
    connection
}

/// The frames in `bytes`, as (header, payload).
fn frames(mut bytes: &[u8]) -> Vec<(FrameHeader, Vec<u8>)> {
    let mut frames = Vec::new();
    while !bytes.is_empty() {
        let header = FrameHeader::parse(bytes);
        let end = HEADER_LEN + header.len as usize;
        frames.push((header, bytes[HEADER_LEN..end].to_vec()));
        bytes = &bytes[end..];
    }
    frames
}

fn output(connection: &mut Connection) -> Vec<(FrameHeader, Vec<u8>)> {
    let mut out = Vec::new();
    connection.take_output(&mut out);
    frames(&out)
}

#[test]
fn new_queues_preface_settings_without_push_and_the_connection_window() {
    let mut connection = Connection::new(&Limits::default());
    assert!(connection.wants_write() && !connection.ready() && !connection.can_open());
    let mut out = Vec::new();
    connection.take_output(&mut out);
    assert!(out.starts_with(frame::PREFACE));
    let sent = frames(&out[frame::PREFACE.len()..]);
    assert_eq!(sent[0].0.kind, kind::SETTINGS);
    assert!(sent[0].1.chunks(6).any(|e| e == [0, 2, 0, 0, 0, 0]));
    assert_eq!(sent[1].0.kind, kind::WINDOW_UPDATE);
    assert_eq!(frame::read_u31(&sent[1].1), (1 << 30) - 1 - 65_535);
    assert!(!connection.wants_write());
}

#[test]
fn server_settings_are_acknowledged_and_open_streams() {
    let mut connection = Connection::new(&Limits::default());
    connection.take_output(&mut Vec::new());
    connection
        .receive(
            &settings(&[(setting::MAX_CONCURRENT_STREAMS, 2)]),
            &mut Events::default(),
        )
        .unwrap();
    assert_eq!(connection.streams_granted(), 2);
    let sent = output(&mut connection);
    assert_eq!(
        (sent[0].0.kind, sent[0].0.flags),
        (kind::SETTINGS, flag::ACK)
    );
    assert_eq!(connection.open(STATUS_200, None), 1);
    assert_eq!(connection.open(STATUS_200, None), 3);
    assert!(!connection.can_open(), "at the server's limit");
    assert_eq!(connection.open_streams(), 2);
}

#[test]
fn the_preface_must_start_with_settings() {
    let mut connection = Connection::new(&Limits::default());
    let ping = frame(kind::PING, 0, 0, &[0; 8]);
    let error = connection
        .receive(&ping, &mut Events::default())
        .unwrap_err();
    assert_eq!(error.code, code::PROTOCOL_ERROR);
}

/// A response in several frames, fed whole and then in every split into two reads and byte by
/// byte, gives the same events.
#[test]
fn a_response_is_the_same_in_every_split() {
    let mut server = headers(1, STATUS_103, false);
    server.extend(frame(kind::HEADERS, flag::PADDED, 1, &[2, 0x88, 0, 0]));
    server.extend(frame(kind::CONTINUATION, flag::END_HEADERS, 1, &[]));
    server.extend(frame(kind::PING, 0, 0, b"12345678"));
    server.extend(frame(
        kind::DATA,
        flag::PADDED,
        1,
        &[3, b'h', b'i', 0, 0, 0],
    ));
    server.extend(frame(0xfa, 0, 0, b"unknown frames are ignored"));
    server.extend(frame(kind::PRIORITY, 0, 1, &[0, 0, 0, 0, 16]));
    server.extend(data(1, b"!", true));
    let run = |splits: &mut dyn Iterator<Item = &[u8]>| {
        let mut connection = ready_connection(&[]);
        connection.open(STATUS_200, None);
        let mut events = Events::default();
        for piece in splits {
            connection.receive(piece, &mut events).unwrap();
        }
        let pongs: Vec<_> = output(&mut connection)
            .into_iter()
            .filter(|(h, _)| h.kind == kind::PING && h.has(flag::ACK))
            .map(|(_, p)| p)
            .collect();
        assert_eq!(pongs, [b"12345678".to_vec()]);
        assert_eq!(connection.open_streams(), 0);
        (events, connection.frame_bytes())
    };
    let (whole, frame_bytes) = run(&mut std::iter::once(&server[..]));
    let expected = Response {
        status: 200,
        head_bytes: 6,
        body_bytes: 3,
        interim: 1,
        close: false,
        coding: Default::default(),
    };
    assert_eq!(whole.complete, [(1, expected)]);
    assert_eq!(whole.first_bytes, [1]);
    assert!(whole.resets.is_empty());
    // The server's SETTINGS and eight frames; padding; PING, the unknown frame and PRIORITY.
    assert_eq!(frame_bytes, 9 + 8 * 9 + 3 + 4 + 8 + 26 + 5);
    for at in 0..server.len() {
        let (a, b) = server.split_at(at);
        assert_eq!(run(&mut [a, b].into_iter()).0, whole, "split at {at}");
    }
    assert_eq!(run(&mut server.chunks(1)).0, whole);
}

#[test]
fn an_answers_coding_is_its_content_encoding() {
    use crate::http::coding::Coding;
    let mut connection = ready_connection(&[]);
    let ids: Vec<u32> = (0..2).map(|_| connection.open(STATUS_200, None)).collect();
    // `content-encoding: br`, a literal without indexing, name from static index 26.
    let br = [STATUS_200, &[0x0f, 26 - 15, 2, b'b', b'r']].concat();
    let mut server = headers(ids[0], &br, false);
    server.extend(data(ids[0], b"abc", true));
    server.extend(headers(ids[1], STATUS_200, true));
    let mut events = Events::default();
    connection.receive(&server, &mut events).unwrap();
    let codings: Vec<(Coding, u64)> = (events.complete.iter())
        .map(|(_, r)| (r.coding, r.body_bytes))
        .collect();
    assert_eq!(codings, [(Coding::Br, 3), (Coding::Identity, 0)]);
}

#[test]
fn many_streams_complete_independently_in_any_order() {
    let mut connection = ready_connection(&[]);
    let ids: Vec<u32> = (0..3).map(|_| connection.open(STATUS_200, None)).collect();
    assert_eq!(ids, [1, 3, 5]);
    let mut events = Events::default();
    let mut server = headers(5, STATUS_404, true);
    server.extend(headers(1, STATUS_200, false));
    server.extend(headers(3, STATUS_200, false));
    server.extend(data(3, b"abc", true));
    server.extend(data(1, b"", true));
    connection.receive(&server, &mut events).unwrap();
    let done: Vec<(u32, u16)> = events
        .complete
        .iter()
        .map(|(id, r)| (*id, r.status))
        .collect();
    assert_eq!(done, [(5, 404), (3, 200), (1, 200)]);
    assert_eq!(
        connection.open(STATUS_200, None),
        7,
        "slots are reused, ids are not"
    );
    assert_eq!(connection.streams.len(), 3);
}

#[test]
fn small_bodies_cost_no_window_update_and_half_a_window_does() {
    let limits = Limits {
        initial_window: 100,
        connection_window: 1000,
        ..Limits::default()
    };
    let mut connection = Connection::new(&limits);
    connection
        .receive(&settings(&[]), &mut Events::default())
        .unwrap();
    connection.take_output(&mut Vec::new());
    connection.open(STATUS_200, None);
    connection.take_output(&mut Vec::new());
    let mut events = Events::default();
    let mut server = headers(1, STATUS_200, false);
    server.extend(data(1, &[0; 7], false));
    connection.receive(&server, &mut events).unwrap();
    assert!(output(&mut connection).is_empty());
    connection
        .receive(&data(1, &[0; 50], false), &mut events)
        .unwrap();
    let sent = output(&mut connection);
    assert_eq!(sent.len(), 1);
    assert_eq!((sent[0].0.kind, sent[0].0.stream), (kind::WINDOW_UPDATE, 1));
    assert_eq!(frame::read_u31(&sent[0].1), 57);
}

#[test]
fn data_beyond_the_connection_window_is_a_flow_control_error() {
    let limits = Limits {
        connection_window: 65_535,
        max_frame_size: 1 << 20,
        ..Limits::default()
    };
    let mut connection = Connection::new(&limits);
    connection
        .receive(&settings(&[]), &mut Events::default())
        .unwrap();
    connection.open(STATUS_200, None);
    let mut server = headers(1, STATUS_200, false);
    server.extend(data(1, &[0; 65_536], false));
    let error = connection
        .receive(&server, &mut Events::default())
        .unwrap_err();
    assert_eq!(error.code, code::FLOW_CONTROL_ERROR);
}

#[test]
fn request_bodies_wait_for_the_peers_window() {
    let mut connection = ready_connection(&[(setting::INITIAL_WINDOW_SIZE, 4)]);
    let id = connection.open(STATUS_200, Some(b"0123456789"));
    let sent = output(&mut connection);
    assert_eq!(
        sent[0].0.flags,
        flag::END_HEADERS,
        "HEADERS without END_STREAM"
    );
    assert_eq!((sent[1].0.kind, &sent[1].1[..]), (kind::DATA, &b"0123"[..]));
    assert_eq!(sent.len(), 2);
    let mut events = Events::default();
    let update = frame(kind::WINDOW_UPDATE, 0, id, &3u32.to_be_bytes());
    connection.receive(&update, &mut events).unwrap();
    assert_eq!(output(&mut connection)[0].1, b"456");
    // A larger initial window applies to open streams.
    connection
        .receive(
            &settings(&[(setting::INITIAL_WINDOW_SIZE, 100)]),
            &mut events,
        )
        .unwrap();
    let sent = output(&mut connection);
    let last = sent.iter().find(|(h, _)| h.kind == kind::DATA).unwrap();
    assert_eq!((&last.1[..], last.0.flags), (&b"789"[..], flag::END_STREAM));
}

#[test]
fn large_request_blocks_go_out_in_continuations() {
    let mut connection = ready_connection(&[]);
    let block = vec![0x88; 40_000];
    connection.open(&block, None);
    let sent = output(&mut connection);
    let kinds: Vec<u8> = sent.iter().map(|(h, _)| h.kind).collect();
    assert_eq!(
        kinds,
        [kind::HEADERS, kind::CONTINUATION, kind::CONTINUATION]
    );
    assert!(sent[2].0.has(flag::END_HEADERS) && sent[0].0.has(flag::END_STREAM));
}

#[test]
fn an_interleaved_continuation_is_a_protocol_error_and_queues_goaway() {
    let mut connection = ready_connection(&[]);
    connection.open(STATUS_200, None);
    connection.open(STATUS_200, None);
    connection.take_output(&mut Vec::new());
    let mut server = frame(kind::HEADERS, 0, 1, STATUS_200);
    server.extend(headers(3, STATUS_200, true));
    let error = connection
        .receive(&server, &mut Events::default())
        .unwrap_err();
    assert_eq!(error.code, code::PROTOCOL_ERROR);
    let sent = output(&mut connection);
    assert_eq!(sent[0].0.kind, kind::GOAWAY);
    assert_eq!(frame::read_u32(&sent[0].1[4..]), code::PROTOCOL_ERROR);
    assert!(!connection.can_open());
    assert!(
        connection.receive(&[], &mut Events::default()).is_err(),
        "the error sticks"
    );
}

/// Faults a server may commit, each the connection error the RFC prescribes.
#[test]
fn connection_errors() {
    let cases: Vec<(Vec<u8>, u32)> = vec![
        (
            frame(
                kind::PUSH_PROMISE,
                flag::END_HEADERS,
                1,
                &[0, 0, 0, 2, 0x88],
            ),
            code::PROTOCOL_ERROR,
        ),
        (
            frame(kind::CONTINUATION, flag::END_HEADERS, 1, STATUS_200),
            code::PROTOCOL_ERROR,
        ),
        (headers(9, STATUS_200, true), code::PROTOCOL_ERROR),
        (headers(2, STATUS_200, true), code::PROTOCOL_ERROR),
        (data(0, b"x", false), code::PROTOCOL_ERROR),
        (
            frame(kind::DATA, flag::PADDED, 1, &[9, 0]),
            code::PROTOCOL_ERROR,
        ),
        (frame(kind::PING, 0, 0, &[0; 7]), code::FRAME_SIZE_ERROR),
        (frame(kind::PING, 0, 1, &[0; 8]), code::PROTOCOL_ERROR),
        (frame(kind::SETTINGS, 0, 0, &[0; 5]), code::FRAME_SIZE_ERROR),
        (
            frame(kind::SETTINGS, flag::ACK, 0, &[0; 6]),
            code::FRAME_SIZE_ERROR,
        ),
        (settings(&[(setting::ENABLE_PUSH, 1)]), code::PROTOCOL_ERROR),
        (
            settings(&[(setting::MAX_FRAME_SIZE, 100)]),
            code::PROTOCOL_ERROR,
        ),
        (
            settings(&[(setting::INITIAL_WINDOW_SIZE, 1 << 31)]),
            code::FLOW_CONTROL_ERROR,
        ),
        (
            frame(kind::WINDOW_UPDATE, 0, 0, &[0; 4]),
            code::PROTOCOL_ERROR,
        ),
        (
            frame(kind::WINDOW_UPDATE, 0, 0, &[0x7f, 0xff, 0xff, 0xff]),
            code::FLOW_CONTROL_ERROR,
        ),
        (
            frame(kind::RST_STREAM, 0, 1, &[0; 3]),
            code::FRAME_SIZE_ERROR,
        ),
        (frame(kind::RST_STREAM, 0, 0, &[0; 4]), code::PROTOCOL_ERROR),
        (frame(kind::GOAWAY, 0, 0, &[0; 7]), code::FRAME_SIZE_ERROR),
        (frame(kind::PRIORITY, 0, 0, &[0; 5]), code::PROTOCOL_ERROR),
        (data(1, &vec![0; 16_385], false), code::FRAME_SIZE_ERROR),
        (
            headers(1, &[0xff, 0xff, 0xff, 0xff, 0xff, 0xff], true),
            code::COMPRESSION_ERROR,
        ),
    ];
    for (server, expected) in cases {
        let mut connection = ready_connection(&[]);
        connection.open(STATUS_200, None);
        let error = connection.receive(&server, &mut Events::default());
        assert_eq!(
            error.map_err(|e| e.code),
            Err(expected),
            "{:?}",
            FrameHeader::parse(&server)
        );
    }
}

/// Faults confined to one stream end that stream, reported to the sink, and the connection
/// goes on.
#[test]
fn stream_errors() {
    let no_status: &[u8] = &[0x00, 4, b'n', b'a', b'm', b'e', 1, b'v'];
    let cases: Vec<(Vec<u8>, u32, u32)> = vec![
        (
            data(1, b"before headers", true),
            code::PROTOCOL_ERROR,
            1 << 16,
        ),
        (headers(1, STATUS_103, true), code::PROTOCOL_ERROR, 1 << 16),
        (headers(1, no_status, true), code::PROTOCOL_ERROR, 1 << 16),
        (
            frame(kind::WINDOW_UPDATE, 0, 1, &[0; 4]),
            code::PROTOCOL_ERROR,
            1 << 16,
        ),
        (
            frame(kind::PRIORITY, 0, 1, &[0; 4]),
            code::FRAME_SIZE_ERROR,
            1 << 16,
        ),
        // `:status: 200` counts 7 + 3 + 32 bytes (RFC 9113 section 6.5.2).
        (headers(1, STATUS_200, true), code::CANCEL, 41),
    ];
    for (server, expected, max_header_list_size) in cases {
        let limits = Limits {
            max_header_list_size,
            ..Limits::default()
        };
        let mut connection = Connection::new(&limits);
        connection
            .receive(&settings(&[]), &mut Events::default())
            .unwrap();
        connection.take_output(&mut Vec::new());
        connection.open(STATUS_200, None);
        connection.take_output(&mut Vec::new());
        let mut events = Events::default();
        connection.receive(&server, &mut events).unwrap();
        assert_eq!(
            events.resets,
            [(1, expected)],
            "{:?}",
            FrameHeader::parse(&server)
        );
        let sent = output(&mut connection);
        assert_eq!(
            (sent[0].0.kind, frame::read_u32(&sent[0].1)),
            (kind::RST_STREAM, expected)
        );
        assert!(connection.can_open());
        assert_eq!(connection.open_streams(), 0);
    }
}

#[test]
fn rst_stream_from_the_server_reaches_the_sink() {
    let mut connection = ready_connection(&[]);
    connection.open(STATUS_200, None);
    let mut events = Events::default();
    let reset = frame(kind::RST_STREAM, 0, 1, &code::REFUSED_STREAM.to_be_bytes());
    connection.receive(&reset, &mut events).unwrap();
    assert_eq!(events.resets, [(1, code::REFUSED_STREAM)]);
    assert_eq!(connection.open_streams(), 0);
    // Frames still in flight for a stream already closed are no error.
    connection
        .receive(&data(1, b"late", true), &mut events)
        .unwrap();
    assert!(events.complete.is_empty());
}

#[test]
fn goaway_hands_streams_above_its_last_id_back_and_stops_new_ones() {
    let mut connection = ready_connection(&[]);
    for _ in 0..3 {
        connection.open(STATUS_200, None);
    }
    let mut events = Events::default();
    let mut server = frame(kind::GOAWAY, 0, 0, &u32s(3, code::NO_ERROR));
    server.extend(headers(3, STATUS_200, true));
    connection.receive(&server, &mut events).unwrap();
    assert_eq!(events.goaways, [(3, code::NO_ERROR)]);
    assert_eq!(events.complete.len(), 1);
    assert_eq!(
        connection.open_streams(),
        1,
        "stream 1 still awaited, 5 handed back"
    );
    assert!(!connection.can_open());
    assert!(connection.exhausted());
}

#[test]
fn stream_ids_run_out_before_2_pow_31() {
    let mut connection = ready_connection(&[]);
    connection.next_id = LAST_CLIENT_STREAM - 2;
    assert!(connection.can_open());
    assert_eq!(connection.open(STATUS_200, None), LAST_CLIENT_STREAM - 2);
    assert!(!connection.can_open());
    assert!(connection.exhausted());
}

#[test]
fn a_zero_stream_limit_opens_nothing() {
    let connection = ready_connection(&[(setting::MAX_CONCURRENT_STREAMS, 0)]);
    assert!(!connection.can_open());
    assert!(
        !connection.exhausted(),
        "a later SETTINGS may grant streams"
    );
}

#[test]
fn a_cancelled_stream_is_reset_and_its_late_frames_ignored() {
    let mut connection = ready_connection(&[]);
    let id = connection.open(STATUS_200, None);
    connection.take_output(&mut Vec::new());
    connection.cancel(id);
    let sent = output(&mut connection);
    assert_eq!(
        (sent[0].0.kind, frame::read_u32(&sent[0].1)),
        (kind::RST_STREAM, code::CANCEL)
    );
    assert_eq!(connection.open_streams(), 0);
    let mut events = Events::default();
    let mut server = headers(id, STATUS_200, false);
    server.extend(data(id, b"late", true));
    connection.receive(&server, &mut events).unwrap();
    assert_eq!(events, Events::default());
}

#[test]
fn a_continuation_flood_fails_the_connection_before_it_grows_without_bound() {
    let mut connection = ready_connection(&[]);
    let id = connection.open(STATUS_200, None);
    let mut server = frame(kind::HEADERS, 0, id, STATUS_200);
    let chunk = vec![0u8; frame::DEFAULT_MAX_FRAME_SIZE as usize];
    for _ in 0..16 {
        server.extend(frame(kind::CONTINUATION, 0, id, &chunk));
    }
    let error = connection
        .receive(&server, &mut Events::default())
        .unwrap_err();
    assert_eq!(error.code, code::ENHANCE_YOUR_CALM);
}

#[test]
fn data_on_a_stream_we_reset_is_not_answered_but_still_opens_the_window() {
    let mut connection = Connection::new(&Limits {
        connection_window: 1 << 17,
        ..Limits::default()
    });
    connection
        .receive(&settings(&[]), &mut Events::default())
        .unwrap();
    let id = connection.open(STATUS_200, None);
    connection.cancel(id);
    connection.take_output(&mut Vec::new());
    let late = vec![0u8; frame::DEFAULT_MAX_FRAME_SIZE as usize];
    let mut server = Vec::new();
    // Past half the connection window: a WINDOW_UPDATE must still go.
    for _ in 0..5 {
        server.extend(data(id, &late, false));
    }
    connection.receive(&server, &mut Events::default()).unwrap();
    let kinds: Vec<u8> = output(&mut connection).iter().map(|f| f.0.kind).collect();
    assert_eq!(kinds, [kind::WINDOW_UPDATE]);
}

#[test]
fn a_ping_flood_queues_few_acks() {
    let mut connection = ready_connection(&[]);
    let mut server = Vec::new();
    for n in 0..1000u32 {
        server.extend(frame(kind::PING, 0, 0, &u32s(0, n)));
    }
    connection.receive(&server, &mut Events::default()).unwrap();
    let acks = output(&mut connection);
    assert!(!acks.is_empty() && acks.len() <= 4, "{} ACKs", acks.len());
    // The next PING, once the queue went out, is answered again.
    connection
        .receive(
            &frame(kind::PING, 0, 0, &u32s(1, 1)),
            &mut Events::default(),
        )
        .unwrap();
    assert_eq!(output(&mut connection).len(), 1);
}

#[test]
fn a_header_block_of_a_stream_no_longer_open_is_framing() {
    let mut connection = ready_connection(&[]);
    let id = connection.open(STATUS_200, None);
    connection.cancel(id);
    let before = connection.frame_bytes();
    connection
        .receive(&headers(id, STATUS_200, false), &mut Events::default())
        .unwrap();
    assert_eq!(
        connection.frame_bytes() - before,
        9 + STATUS_200.len() as u64
    );
}
