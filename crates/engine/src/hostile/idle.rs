//! Idle connections: each opened with one request answered, then held without a word, or asked
//! again every `idle.ping` (counted apart from the load). One the server closes stays closed:
//! when the server closes them is what they show. Over HTTP/2 each request is a stream of its
//! own, and the connection answers what a server asks of any client (SETTINGS and PING
//! acknowledged, the connection's window given back), so that only the server's own idle timeout
//! closes it.

use crate::spec::expects;

use super::conn::{Answers, Role, State};
use super::{h2, Alarm, Thread};

impl Thread {
    /// Up: its first request (over HTTP/2 once the server's SETTINGS are in).
    pub(super) fn idle_up(&mut self, i: usize) {
        self.set_state(i, State::Opening);
        self.conns[i].asking = true;
        let mut out = Vec::new();
        if self.spec.http2 {
            h2::preface(None, &mut out);
        } else {
            out.extend_from_slice(&self.wire.idle_request);
        }
        self.send(i, &out);
    }

    pub(super) fn idle_received(&mut self, i: usize, data: &[u8]) {
        if self.spec.http2 {
            return self.idle_h2_received(i, data);
        }
        let mut answers = Answers::default();
        if self.conns[i].parser.feed(data, &mut answers).is_err() {
            // No HTTP: not a connection the server holds for a next request.
            return self.idle_closed(i, self.conns[i].state);
        }
        for answer in answers.0 {
            self.idle_answered(i, expects(&self.expect_status, answer.status));
        }
    }

    /// Its request was answered, with an expected status if `ok`.
    fn idle_answered(&mut self, i: usize, ok: bool) {
        let c = &mut self.conns[i];
        c.asking = false;
        c.since = self.now;
        if c.state == State::Opening {
            self.tally.opened(Role::Idle);
            self.settle(i);
            self.set_state(i, State::Open);
        } else if !ok {
            self.tally.ping_failed();
        }
        if let Some(ping) = self.spec.idle.as_ref().and_then(|idle| idle.ping) {
            self.set(self.now + ping.as_nanos() as u64, i, Alarm::Ping);
        }
    }

    /// HTTP/2 frames from the server: its request's answer ends at END_STREAM (its status is not
    /// decoded: any answer keeps the connection alive); a reset of its stream fails it.
    fn idle_h2_received(&mut self, i: usize, data: &[u8]) {
        let c = &mut self.conns[i];
        c.early.extend_from_slice(data);
        let mut out = Vec::new();
        let heard = h2::walk(&mut c.early, c.stream, true, &mut out);
        if heard.settings && c.stream == 0 {
            c.stream = 1;
            h2::request(1, &self.wire.idle_request, &mut out);
        }
        if !out.is_empty() && !self.send(i, &out) {
            return;
        }
        if heard.reset && self.conns[i].state == State::Opening {
            return self.idle_closed(i, State::Opening);
        }
        if heard.ended || heard.reset {
            self.idle_answered(i, !heard.reset);
        }
    }

    /// Closed, by the server or by a failure: an idle connection is not opened again.
    pub(super) fn idle_closed(&mut self, i: usize, state: State) {
        match state {
            State::Open => {
                let idle_for = self.now.saturating_sub(self.conns[i].since);
                self.tally.closed_by_server(Role::Idle, idle_for);
                if self.conns[i].asking {
                    self.tally.ping_failed();
                }
            }
            State::Closed => return,
            State::Connecting | State::Handshaking | State::Opening => {
                self.tally.failed(Role::Idle);
                self.settle(i);
            }
        }
        self.close(i);
    }

    /// Time to keep it alive: the same request again (over HTTP/2 on the next stream), unless
    /// one is still out.
    pub(super) fn ping(&mut self, i: usize) {
        let c = &mut self.conns[i];
        if c.asking {
            return;
        }
        c.asking = true;
        let mut out = Vec::new();
        if self.spec.http2 {
            c.stream += 2;
            h2::request(c.stream, &self.wire.idle_request, &mut out);
        } else {
            out.extend_from_slice(&self.wire.idle_request);
        }
        self.tally.ping();
        self.send(i, &out);
    }
}
