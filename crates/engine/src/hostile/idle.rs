//! Idle connections: each opened with one request answered, then held without a word, or asked
//! again every `idle.ping` (counted apart from the load). One the server closes stays closed:
//! when the server closes them is what they show.

use crate::spec::expects;

use super::conn::{Answers, Role, State};
use super::{Alarm, Thread};

impl Thread {
    /// Up: its first request.
    pub(super) fn idle_up(&mut self, i: usize) {
        self.set_state(i, State::Opening);
        self.conns[i].asking = true;
        let wire = self.wire.clone();
        self.send(i, &wire.idle_request);
    }

    pub(super) fn idle_received(&mut self, i: usize, data: &[u8]) {
        let mut answers = Answers::default();
        if self.conns[i].parser.feed(data, &mut answers).is_err() {
            // No HTTP: not a connection the server holds for a next request.
            return self.idle_closed(i, self.conns[i].state);
        }
        for answer in answers.0 {
            let c = &mut self.conns[i];
            c.asking = false;
            c.since = self.now;
            if c.state == State::Opening {
                self.tally.opened(Role::Idle);
                self.settle(i);
                self.set_state(i, State::Open);
            } else if !expects(&self.expect_status, answer.status) {
                self.tally.ping_failed();
            }
            if let Some(ping) = self.spec.idle.as_ref().and_then(|idle| idle.ping) {
                self.set(self.now + ping.as_nanos() as u64, i, Alarm::Ping);
            }
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

    /// Time to keep it alive: the same request again, unless one is still out.
    pub(super) fn ping(&mut self, i: usize) {
        if self.conns[i].asking {
            return;
        }
        self.conns[i].asking = true;
        self.tally.ping();
        let wire = self.wire.clone();
        self.send(i, &wire.idle_request);
    }
}
