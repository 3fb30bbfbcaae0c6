//! Requests a reused keep-alive connection lost before any byte of their answer: the server
//! closed a connection it held idle just as the client reused it (a reload, an idle timeout),
//! which RFC 9110 9.2.2 lets a client retry, and browsers do. They are counted apart, as
//! `retryable`, and with `retry_idempotent` sent once more, on a new connection, timed from
//! their first attempt. A close seen before a request is written costs nothing: the request
//! goes on the next connection (`after_responses`, `eof` with nothing pending).

use crate::io::Reactor;
use crate::stats::ErrorClass;

use super::conn::{Pending, Protocol};
use super::Worker;

impl Worker<'_> {
    /// A send or receive on connection `i` failed with `class`: a reset is the server's close.
    pub(super) fn transfer_failed<R: Reactor>(
        &mut self,
        reactor: &mut R,
        i: usize,
        class: ErrorClass,
    ) {
        if class != ErrorClass::Reset {
            return self.fail(reactor, i, class);
        }
        self.count_closed_by_server(i);
        match &self.conns[i].protocol {
            Protocol::Http1(parser) => {
                let answering = !parser.is_idle();
                self.lost(reactor, i, class, answering)
            }
            // A stream's answer is its own; a reset connection fails them all, as before.
            Protocol::Http2 { .. } => self.fail(reactor, i, class),
        }
    }

    /// The server ended connection `i` (an EOF or a reset): one close for the fine series,
    /// unless a GOAWAY announced it and was counted.
    pub(super) fn count_closed_by_server(&mut self, i: usize) {
        if self.measuring(self.now) && !self.goaway_received(i) {
            self.counters.closed_by_server += 1;
        }
    }

    /// Connection `i` speaks HTTP/2 and its server sent a GOAWAY.
    pub(super) fn goaway_received(&self, i: usize) -> bool {
        self.conns[i]
            .protocol
            .h2()
            .is_some_and(|h2| h2.goaway_received())
    }

    /// The server ended HTTP/1.x connection `i` (EOF or reset) with requests on it. The first
    /// fails with `class` if `answering` (a byte of its answer came); each other written after
    /// the connection had completed an answer is retryable: retried, if the spec says so and it
    /// was not a retry already, else counted as such. The rest fail with `class`.
    pub(super) fn lost<R: Reactor>(
        &mut self,
        reactor: &mut R,
        i: usize,
        class: ErrorClass,
        answering: bool,
    ) {
        let first = usize::from(answering);
        let retry = self.shared.spec.retry_idempotent && !self.draining && self.now < self.end;
        let measure_from = self.measure_from;
        let c = &mut self.conns[i];
        let (on_reused, other): (Vec<Pending>, Vec<Pending>) =
            c.pending.drain(first..).partition(|p| p.on_reused);
        c.pending.extend(other);
        let ends = c.pending.len();
        // Moved to `requeued` they stay outstanding (the close drops only `pending`); the
        // warm-up's are not retried, as they are not counted.
        for p in on_reused {
            if retry && !p.retried && p.sent >= measure_from {
                c.requeued.push_back(Pending { retried: true, ..p });
            } else {
                c.pending.push_back(p);
            }
        }
        let all = c.pending.len();
        self.count_failed(i, 0..ends, class);
        self.count_failed(i, ends..all, ErrorClass::Retryable);
        self.reconnect(reactor, i);
    }

    /// Put as many of connection `i`'s retries as `room` and its requests per connection allow
    /// on the wire: its first requests, each counted as retried, and as gone on the connection
    /// before the new ones are claimed. Returns how many.
    pub(super) fn resend_retries(&mut self, i: usize, room: u64) -> u64 {
        let limit = self.shared.spec.requests_per_connection;
        let c = &mut self.conns[i];
        let room = room.min(limit.map_or(u64::MAX, |l| l - c.on_connection));
        let mut again = 0;
        while again < room {
            let Some(p) = c.requeued.pop_front() else {
                break;
            };
            c.pending.push_back(Pending {
                on_reused: c.reused,
                ..p
            });
            again += 1;
        }
        c.went(again);
        self.counters.retried += again;
        again
    }
}
