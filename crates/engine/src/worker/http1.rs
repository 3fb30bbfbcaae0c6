//! The HTTP/1.x path of a connection: requests sent a pipeline at a time, responses parsed as
//! they come, and what a close means; and where each connection event goes to the path of its
//! protocol.

use crate::http::response::EofOutcome;
use crate::io::Reactor;
use crate::stats::ErrorClass;

use super::conn::{Pending, Protocol, State};
use super::Worker;

impl Worker<'_> {
    /// Put as many requests on the wire as the pipeline, the schedule and the budget allow, in
    /// one send.
    pub(super) fn send_more<R: Reactor>(&mut self, reactor: &mut R, i: usize) {
        if let Protocol::Http2 { .. } = self.conns[i].protocol {
            return self.send_streams(reactor, i);
        }
        let spec = &self.shared.spec;
        let c = &self.conns[i];
        if c.state != State::Open || c.sending.is_some() || c.server_closing || self.now >= self.end
        {
            return;
        }
        // A closed loop refills a pipeline once all of it is answered, as wrk's pipelining does:
        // each send is a packet whose kernel cost dwarfs the request's, and servers answer
        // pipelined requests in separate segments, so topping it up per response would double
        // the packets. An open loop sends what is due whenever the pipeline has room.
        if !self.schedule.is_open() && !c.pending.is_empty() {
            return;
        }
        let room = spec.pipeline as u64 - c.pending.len() as u64;
        // Retries first, outstanding already and counted as sent.
        let again = self.resend_retries(i, room);
        let k = self.claim_due(i, room - again);
        if again + k == 0 {
            return;
        }
        let shared = self.shared;
        let on_reused = self.conns[i].reused;
        for _ in 0..k {
            let due = self.next_due(i);
            let url = self.next_url(i) as u32;
            let c = &mut self.conns[i];
            c.pending.push_back(Pending {
                due,
                sent: self.now,
                stream: 0,
                url,
                first_byte: 0,
                on_reused,
                retried: false,
            });
        }
        self.outstanding += k as usize;
        let token = self.token(i);
        let c = &mut self.conns[i];
        c.went(k);
        let urls = c
            .pending
            .iter()
            .skip(c.pending.len() - (again + k) as usize);
        let data = shared.requests.burst(
            urls.map(|p| p.url as usize),
            shared.mix.is_round_robin(),
            &mut c.burst,
        );
        if let Some(tls) = c.tls.as_mut() {
            match tls.write(data) {
                Ok(()) => self.flush_tls(reactor, i),
                Err(_) => self.fail(reactor, i, ErrorClass::TlsProtocol),
            }
            return;
        }
        c.sending = Some((data.as_ptr(), data.len()));
        let fd = c.fd;
        // SAFETY: `data` lives in the run's RequestSet, which outlives every worker, or in the
        // connection's `burst`, left alone until this send completes (no send starts while one
        // is under way).
        unsafe { reactor.send(token, fd, data.as_ptr(), data.len()) };
    }

    /// Response bytes `data` arrived at `at` (ns since `start`).
    pub(super) fn received<R: Reactor>(&mut self, reactor: &mut R, i: usize, data: &[u8], at: u64) {
        if let Protocol::Http2 { .. } = self.conns[i].protocol {
            return self.h2_received(reactor, i, data, at);
        }
        let parsed = self.parse(i, at, |protocol, sink| match protocol {
            Protocol::Http1(parser) => parser.feed(data, sink),
            Protocol::Http2 { .. } => unreachable!("HTTP/2 bytes went to h2_received"),
        });
        match parsed {
            (Err(_), _) | (Ok(()), true) => self.fail(reactor, i, ErrorClass::Protocol),
            (Ok(()), false) => self.after_responses(reactor, i),
        }
    }

    /// Decide what a connection does once responses have arrived.
    fn after_responses<R: Reactor>(&mut self, reactor: &mut R, i: usize) {
        let c = &self.conns[i];
        if !c.pending.is_empty() {
            if !c.server_closing {
                self.mark_for_refill(i);
            }
            return;
        }
        if c.server_closing {
            if self.measuring(self.now) {
                self.counters.server_closes += 1;
                self.counters.closed_by_server += 1;
            }
            self.reconnect(reactor, i);
        } else if c.spent(self.shared.spec.requests_per_connection) {
            self.reconnect(reactor, i);
        } else {
            self.mark_for_refill(i);
        }
    }

    /// The server closed connection `i`.
    pub(super) fn eof<R: Reactor>(&mut self, reactor: &mut R, i: usize) {
        let c = &self.conns[i];
        if c.state == State::Handshaking {
            self.connect_ended(reactor, i, ErrorClass::TlsHandshake);
            return;
        }
        // Without close_notify, a close may be an attacker's truncation: inside a body it is a
        // TLS failure; between responses, as most servers close, none.
        let truncated = c.tls.as_ref().is_some_and(|tls| !tls.peer_closed());
        // An HTTP/2 close ends no response of its own: its streams fail with the connection.
        let (outcome, _) = self.parse(i, self.now, |protocol, sink| match protocol {
            Protocol::Http1(parser) => parser.feed_eof(sink),
            Protocol::Http2 { .. } => EofOutcome::Idle,
        });
        let class = match outcome {
            EofOutcome::MidBody if truncated => ErrorClass::TlsProtocol,
            EofOutcome::MidBody => ErrorClass::LengthMismatch,
            _ => ErrorClass::Eof,
        };
        self.count_closed_by_server(i);
        if self.conns[i].pending.is_empty() {
            if self.measuring(self.now) {
                self.counters.server_closes += 1;
            }
            self.reconnect(reactor, i);
        } else {
            let answering = matches!(outcome, EofOutcome::MidHead | EofOutcome::MidBody);
            self.lost(reactor, i, class, answering);
        }
    }
}
