//! The frames a server sends, each handled as RFC 9113 section 6 says: stream-level faults end
//! their stream (RST_STREAM, reported to the sink), connection-level ones end the connection.

use super::frame::{self, code, flag, kind, setting, FrameHeader, HEADER_LEN};
use super::{connection_error, Connection, H2Error, StreamSink};
use crate::http::coding::Coding;

/// PING ACKs queued at most until the output is next taken.
const MAX_PING_ACKS_QUEUED: u32 = 4;

impl Connection {
    pub(super) fn frame(
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

    /// Ends one stream on our side (the connection continues).
    fn stream_error(&mut self, slot: usize, code: u32, sink: &mut impl StreamSink) {
        let id = self.streams[slot].id;
        frame::write_rst_stream(&mut self.out, id, code);
        self.close(slot);
        sink.stream_error(id, code);
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
        // A stream closed here is most often one we reset (a timeout, a stream error), whose
        // late frames RFC 9113 5.1 says to ignore; answering each with RST_STREAM would let a
        // server grow our output without bound. Its DATA still counted against the window above.
        let Some(slot) = slot else {
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
        sink.data(header.stream, &payload[start..end]);
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
        self.grow_block(&payload[start..end])?;
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
        self.grow_block(payload)?;
        if header.has(flag::END_HEADERS) {
            self.block_stream = 0;
            self.header_block(header.stream, sink)
        } else {
            Ok(())
        }
    }

    /// Adds a fragment to the header block in progress, up to a bound: a server may send
    /// CONTINUATION frames without end. An encoded header list is never longer than the list
    /// it encodes (each field counts 32 bytes more in the list), so twice our
    /// SETTINGS_MAX_HEADER_LIST_SIZE leaves room for table size updates and fails only a flood.
    fn grow_block(&mut self, fragment: &[u8]) -> Result<(), H2Error> {
        let bound = 2 * self.limits.max_header_list_size as usize;
        if self.block.len() + fragment.len() > bound {
            return Err(connection_error(
                code::ENHANCE_YOUR_CALM,
                "a header block over twice our SETTINGS_MAX_HEADER_LIST_SIZE",
            ));
        }
        self.block.extend_from_slice(fragment);
        Ok(())
    }

    /// A complete header block: decoded even when its stream is gone, to keep HPACK state.
    fn header_block(&mut self, id: u32, sink: &mut impl StreamSink) -> Result<(), H2Error> {
        let mut status: Option<u16> = None;
        let mut bad_status = false;
        let mut coding = Coding::Identity;
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
            } else if name == b"content-encoding" {
                coding = Coding::of_header(value);
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
        // A block that answers no open stream (one we cancelled or reset) is in no response's
        // head: it counts as framing, so that every byte received is somewhere.
        let Some(slot) = self.slot(id) else {
            self.frame_bytes += block_len;
            return Ok(());
        };
        if list_size > u64::from(self.limits.max_header_list_size) {
            self.frame_bytes += block_len;
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
                    stream.response.coding = coding;
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
                setting::HEADER_TABLE_SIZE => self.peer_table_size = value,
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
        // While our output waits (a send under way), a PING flood would queue an ACK each: a
        // few answer a server that measures round trips, the rest are dropped.
        if !header.has(flag::ACK) && self.ping_acks_queued < MAX_PING_ACKS_QUEUED {
            frame::write_ping_ack(&mut self.out, payload);
            self.ping_acks_queued += 1;
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
}
