//! The HTTP/2 path of a connection: its streams kept full, the frames it sends, and what the
//! server's frames end.
//!
//! A stream is a request: it is counted when it opens (HEADERS sent) and timed to its
//! END_STREAM, with the kernel's arrival stamps as over HTTP/1.1. A refused stream (REFUSED_STREAM,
//! or above a GOAWAY's last stream id) was not processed. In a closed loop its request goes back
//! to the budget and is sent again, on this connection while it can open streams, else on the
//! next. In an open loop a stream above a GOAWAY's last id is the same request still: the server
//! ended the connection, as servers do after so many requests, and any client sends such a
//! request again on a new one. It goes first on the next connection, timed from when it was due,
//! so the wait shows in its latency. So does one sent in the warm-up, which is the schedule's
//! load too: uncounted, it is counted as sent if it goes again once measurement has begun, as
//! any request of the schedule sent then is. A stream the server reset with REFUSED_STREAM was
//! turned away under load, at its moment in the schedule: sending it later would be another
//! request, so it fails as `h2_refused_stream`.

use std::collections::VecDeque;

use crate::h2::connection::HTTP1_ANSWER;
use crate::h2::frame::code;
use crate::h2::request::RequestBlocks;
use crate::h2::{Connection, StreamSink};
use crate::http::response::{Response, ResponseSink};
use crate::io::{send_before_close, Reactor};
use crate::stats::ErrorClass;

use super::conn::{Pending, State};
use super::sink::Sink;
use super::Worker;

/// What an HTTP/2 run shares between its threads.
pub struct Http2 {
    pub requests: RequestBlocks,
    /// Streams each connection keeps open (the server's limit permitting).
    pub streams: u32,
}

/// The connection's stream events, accounted for through the response sink.
struct Streams<'a, 's> {
    sink: &'a mut Sink<'s>,
    /// Requests to send again (the measured ones were counted as sent).
    refused: u64,
    /// An open loop: a stream the server reset with REFUSED_STREAM fails instead of going again,
    /// and one a GOAWAY refused is requeued here (the connection's `requeued`), warm-up or not.
    open_loop: bool,
    requeued: &'a mut VecDeque<Pending>,
    /// A GOAWAY with an error code arrived: a connection error, which fails the streams at or
    /// below its last id.
    goaway_error: bool,
}

impl Streams<'_, '_> {
    fn take(&mut self, stream: u32) -> Option<Pending> {
        let at = self.sink.pending.iter().position(|p| p.stream == stream)?;
        self.sink.done += 1;
        self.sink.pending.remove(at)
    }

    fn refuse(&mut self, p: Pending) {
        // Not progress: a server that refuses every stream must not keep a run going.
        self.sink.given_back += 1;
        if p.sent < self.sink.measure_from {
            return;
        }
        self.sink.counters.h2.refused_streams += 1;
        if self.open_loop {
            self.sink.counters.error(ErrorClass::H2RefusedStream, 1);
            self.sink.series.errors += 1;
        } else {
            self.refused += 1;
        }
    }

    fn fail_stream(&mut self, stream: u32, class: ErrorClass) {
        let Some(p) = self.take(stream) else { return };
        if p.sent >= self.sink.measure_from {
            self.sink.counters.error(class, 1);
            self.sink.series.errors += 1;
        }
    }

    fn measuring(&self) -> bool {
        self.sink.now >= self.sink.measure_from
    }
}

impl StreamSink for Streams<'_, '_> {
    fn first_byte(&mut self, stream: u32) {
        let at = self.sink.at;
        if let Some(p) = self.sink.pending.iter_mut().find(|p| p.stream == stream) {
            p.first_byte = at;
        }
    }

    fn complete(&mut self, stream: u32, response: &Response) {
        let Some(at) = self.sink.pending.iter().position(|p| p.stream == stream) else {
            return;
        };
        // The response sink answers the request at the front, as HTTP/1.1 answers in order.
        let p = self.sink.pending.remove(at).expect("found above");
        *self.sink.first_byte = p.first_byte;
        self.sink.pending.push_front(p);
        ResponseSink::complete(self.sink, response);
    }

    fn reset(&mut self, stream: u32, error: u32) {
        if self.measuring() {
            self.sink.counters.h2.reset(error);
        }
        if error == code::REFUSED_STREAM {
            if let Some(p) = self.take(stream) {
                self.refuse(p);
            }
        } else {
            self.fail_stream(stream, ErrorClass::H2StreamReset);
        }
    }

    /// We reset the stream: the server broke HTTP/2 on it (a header list over our limit, a bad
    /// status, a stream window overrun), so it fails as `h2_protocol`, not as a server's reset,
    /// and is not in the report's resets.
    fn stream_error(&mut self, stream: u32, _error: u32) {
        self.fail_stream(stream, ErrorClass::H2Protocol);
    }

    fn goaway(&mut self, last_stream: u32, error: u32) {
        if self.measuring() {
            self.sink.counters.h2.goaways += 1;
        }
        // Streams above the last id were never processed, whatever the code (RFC 9113 6.8):
        // they move to a new connection. Apache's graceful restart sends such a GOAWAY with an
        // undefined code (nghttp2's -902) when a request crosses its shutdown notice.
        self.goaway_error = error != code::NO_ERROR;
        while let Some(at) = self
            .sink
            .pending
            .iter()
            .position(|p| p.stream > last_stream)
        {
            let p = self.sink.pending[at];
            if p.sent >= self.sink.measure_from {
                self.sink.counters.h2.goaway_streams_moved += 1;
            }
            if self.open_loop {
                // Still outstanding (not `take`n): neither progress nor given back.
                self.sink.pending.remove(at);
                if p.sent >= self.sink.measure_from {
                    self.sink.counters.h2.refused_streams += 1;
                }
                self.requeued.push_back(p);
            } else {
                self.take(p.stream);
                self.refuse(p);
            }
        }
    }
}

impl Worker<'_> {
    /// Send what HTTP/2 has queued on connection `i`, in one send, unless a send is under way:
    /// its completion calls this again.
    pub(super) fn flush_h2<R: Reactor>(&mut self, reactor: &mut R, i: usize) {
        let token = self.token(i);
        let c = &mut self.conns[i];
        let Some((h2, out)) = c.protocol.h2_with_out() else {
            return;
        };
        if !h2.wants_write() {
            return;
        }
        if let Some(tls) = c.tls.as_mut() {
            h2.take_output(out);
            match tls.write(out) {
                Ok(()) => self.flush_tls(reactor, i),
                Err(_) => self.fail(reactor, i, ErrorClass::TlsProtocol),
            }
            return;
        }
        if c.sending.is_some() {
            return;
        }
        h2.take_output(out);
        c.sending = Some((out.as_ptr(), out.len()));
        // SAFETY: `out` is left alone until this send completes or the socket closes, as
        // `tls_out` is.
        unsafe { reactor.send(token, c.fd, out.as_ptr(), out.len()) };
    }

    /// Open as many streams on connection `i` as its share of streams, the server's limit, the
    /// schedule and the budget allow, requests a GOAWAY refused first, and send them at once.
    /// Streams are independent, so each is replaced as soon as it ends, in both loops.
    pub(super) fn send_streams<R: Reactor>(&mut self, reactor: &mut R, i: usize) {
        let Some(http2) = self.shared.http2.as_ref() else {
            return;
        };
        let c = &self.conns[i];
        let Some(h2) = c.protocol.h2() else { return };
        if c.state != State::Open || self.now >= self.end || !h2.can_open() {
            return self.flush_h2(reactor, i);
        }
        let room =
            (http2.streams.min(h2.streams_granted()) as u64).saturating_sub(c.pending.len() as u64);
        let left = self
            .shared
            .spec
            .requests_per_connection
            .map_or(u64::MAX, |limit| limit - c.on_connection);
        // Outstanding already, and counted as sent unless sent in the warm-up (`take_requeued`).
        let mut again = (c.requeued.len() as u64).min(room).min(left);
        let k = self.claim_due(i, (room - again).min(left - again));
        let mut opened = 0;
        while opened < again + k {
            if !self.conns[i]
                .protocol
                .h2()
                .is_some_and(Connection::can_open)
            {
                break;
            }
            // A requeued request is the same request: its URL, not the mix's next.
            let (due, url) = if opened < again {
                let Some(requeued) = self.take_requeued(i) else {
                    again = opened;
                    continue;
                };
                requeued
            } else {
                (self.next_due(i), self.next_url(i))
            };
            let c = &mut self.conns[i];
            let h2 = c.protocol.h2_mut().expect("can open, above");
            let block = http2.requests.block(url, h2);
            let stream = h2.open(block, http2.requests.body());
            c.went(1);
            c.pending.push_back(Pending {
                due,
                sent: self.now,
                stream,
                url: url as u32,
                first_byte: 0,
                on_reused: false,
                retried: false,
            });
            opened += 1;
        }
        let fresh = opened.saturating_sub(again);
        self.outstanding += fresh as usize;
        // Stream ids ran out midway: the rest go on the next connection.
        self.give_back(k - fresh);
        self.flush_h2(reactor, i);
    }

    /// When connection `i`'s next request a GOAWAY refused was due, to send it again now. One
    /// first sent in the warm-up was not counted: going once measurement has begun, it is
    /// counted as sent then, as any request of the schedule is, unless the budget is spent,
    /// and then it is dropped (None when none is left). Returns when it was due and its URL.
    fn take_requeued(&mut self, i: usize) -> Option<(u64, usize)> {
        while let Some(p) = self.conns[i].requeued.pop_front() {
            if self.measuring(p.sent) || !self.measuring(self.now) {
                return Some((p.due, p.url as usize));
            }
            if self.shared.budget.claim(1) == 1 {
                self.counters.sent += 1;
                return Some((p.due, p.url as usize));
            }
            self.outstanding -= 1;
        }
        None
    }

    /// The first `n` streams waiting on connection `i` timed out: they are counted so, and
    /// cancelled (RST_STREAM), and others take their place.
    pub(super) fn cancel_streams<R: Reactor>(&mut self, reactor: &mut R, i: usize, n: usize) {
        self.count_failed(i, 0..n, ErrorClass::Timeout);
        let c = &mut self.conns[i];
        for p in c.pending.drain(..n) {
            if let Some(h2) = c.protocol.h2_mut() {
                h2.cancel(p.stream);
            }
        }
        self.outstanding -= n;
        self.mark_for_refill(i);
        self.flush_h2(reactor, i);
    }

    /// A connection error queued a GOAWAY saying which (RFC 9113 5.4.1): hand it to the socket
    /// before the close, best effort: at once if the socket takes it, never waiting, and not at
    /// all behind a send still under way, whose rest would go after it and cut a frame.
    fn send_goaway(&mut self, i: usize) {
        let c = &mut self.conns[i];
        let Some((h2, out)) = c.protocol.h2_with_out() else {
            return;
        };
        if c.sending.is_some() || !h2.wants_write() {
            return;
        }
        h2.take_output(out);
        let bytes = match c.tls.as_mut() {
            Some(tls) => {
                if tls.write(out).is_err() {
                    return;
                }
                // Free: no send is under way.
                tls.take_queued(&mut c.tls_out);
                &c.tls_out
            }
            None => &*out,
        };
        let sent = send_before_close(c.fd, bytes);
        if self.measuring(self.now) {
            self.counters.bytes_written += sent as u64;
        }
    }

    /// HTTP/2 bytes `data` arrived on connection `i` at `at` (ns since `start`).
    pub(super) fn h2_received<R: Reactor>(
        &mut self,
        reactor: &mut R,
        i: usize,
        data: &[u8],
        at: u64,
    ) {
        let open_loop = self.schedule.is_open();
        let had_goaway = self.goaway_received(i);
        let mut requeued = std::mem::take(&mut self.conns[i].requeued);
        let ((result, refused, goaway_error), _) = self.parse(i, at, |protocol, sink| {
            let mut streams = Streams {
                sink,
                refused: 0,
                open_loop,
                requeued: &mut requeued,
                goaway_error: false,
            };
            let result = protocol.h2_mut().map(|h2| {
                let framing = h2.frame_bytes();
                let result = h2.receive(data, &mut streams);
                if streams.measuring() {
                    let counters = &mut streams.sink.counters.h2;
                    counters.frame_bytes += h2.frame_bytes() - framing;
                    if h2.ready() {
                        counters.granted(h2.streams_granted());
                    }
                }
                result
            });
            (result, streams.refused, streams.goaway_error)
        });
        self.conns[i].requeued = requeued;
        // A server may send two GOAWAYs (RFC 9113 6.8's graceful shutdown): one connection ends.
        if !had_goaway && self.goaway_received(i) && self.measuring(self.now) {
            self.counters.closed_by_server += 1;
        }
        self.give_back(refused);
        if let Some(Err(e)) = result {
            self.last_h2_error = Some(e);
            if e.why == HTTP1_ANSWER {
                // No connection will go better: the run ends now, saying why.
                self.shared.abort(HTTP1_ANSWER.into());
            }
            self.send_goaway(i);
        }
        let broken = matches!(result, Some(Err(_)));
        if broken || (goaway_error && !self.conns[i].pending.is_empty()) {
            if self.conns[i].pending.is_empty() {
                // Failed with no request on it (a server that does not speak HTTP/2, or whose
                // first frames are bad): counted once, as a failed connect is, and retried after
                // the same pause rather than in a tight loop.
                self.close(reactor, i);
                return self.connect_failed(i, ErrorClass::H2Protocol);
            }
            return self.fail(reactor, i, ErrorClass::H2Protocol);
        }
        self.flush_h2(reactor, i);
        let c = &self.conns[i];
        let Some(h2) = c.protocol.h2() else { return };
        // Not at the server's limit, even of 0 streams: a SETTINGS may raise it.
        let done = c.spent(self.shared.spec.requests_per_connection)
            || (h2.exhausted() && h2.open_streams() == 0);
        if c.pending.is_empty() && done {
            self.reconnect(reactor, i);
        } else {
            self.mark_for_refill(i);
        }
    }
}
