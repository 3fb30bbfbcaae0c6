//! Slow clients: each holds its connection by sending (headers, body) or reading (read) a chunk
//! every interval, for at most `slow.hold`; one the server closes is opened again, as an
//! attacker's would be.

use crate::spec::SlowMode;

use super::conn::{Answers, Role, State};
use super::wire::{h2_continuation, h2_open_stream, h2_preface, h2_settings_in};
use super::{Alarm, Thread};

/// Before opening a connection again after the server closed it: an attacker comes back at
/// once, but a server that closes every connection at once must not make this thread spin.
const REOPEN_AFTER: u64 = 10_000_000;
/// Before trying again after a connect or handshake failed.
const RETRY_AFTER: u64 = 1_000_000_000;

impl Thread {
    fn interval(&self) -> u64 {
        self.spec
            .slow
            .as_ref()
            .map_or(0, |s| s.interval.as_nanos() as u64)
    }

    /// Up: what goes at once, then the trickle.
    pub(super) fn slow_up(&mut self, i: usize) {
        self.tally.opened(Role::Slow);
        self.settle(i);
        let hold = self
            .spec
            .slow
            .as_ref()
            .map_or(u64::MAX, |s| s.hold.as_nanos() as u64);
        self.set(self.now.saturating_add(hold), i, Alarm::Hold);
        let wire = self.wire.clone();
        if self.spec.http2 {
            // HEADERS may go only after the server's SETTINGS are acknowledged: nothing else may
            // come between HEADERS and its CONTINUATION frames.
            self.set_state(i, State::Opening);
            let mut out = Vec::new();
            h2_preface(&mut out);
            self.send(i, &out);
            return;
        }
        self.set_state(i, State::Open);
        if self.send(i, &wire.slow_opening) {
            self.set(self.now + self.interval(), i, Alarm::Trickle);
        }
    }

    pub(super) fn slow_received(&mut self, i: usize, data: &[u8]) {
        if self.spec.http2 {
            // Only the server's SETTINGS matter; what it says after (its ACK, WINDOW_UPDATE, a
            // GOAWAY before it closes) changes nothing for a header block that never ends.
            if self.conns[i].state != State::Opening {
                return;
            }
            let c = &mut self.conns[i];
            c.early.extend_from_slice(data);
            if !h2_settings_in(&c.early) {
                return;
            }
            c.early = Vec::new();
            self.set_state(i, State::Open);
            let mut out = Vec::new();
            h2_open_stream(&self.wire.slow_opening, &mut out);
            if self.send(i, &out) {
                self.set(self.now + self.interval(), i, Alarm::Trickle);
            }
            return;
        }
        let mut answers = Answers::default();
        // A parse error leaves the parser failed; the connection is held all the same.
        let _ = self.conns[i].parser.feed(data, &mut answers);
        for _ in &answers.0 {
            self.tally.answered();
        }
        let done = self.spec.slow.as_ref().is_some_and(|s| match s.mode {
            SlowMode::Body => self.conns[i].trickled >= s.content_length,
            SlowMode::Read => true,
            SlowMode::Headers => false,
        });
        if !answers.0.is_empty() && done {
            // Its request is over (a whole body sent and answered, an answer read to its end):
            // a new connection takes its place.
            self.close(i);
            self.set(self.now, i, Alarm::Open);
        }
    }

    /// Closed by the server (cut), or a connect or handshake that failed: opened again.
    pub(super) fn slow_closed(&mut self, i: usize, state: State) {
        let again = match state {
            State::Closed => return,
            State::Connecting | State::Handshaking => {
                self.tally.failed(Role::Slow);
                self.settle(i);
                RETRY_AFTER
            }
            State::Opening | State::Open => {
                let open_for = self.now.saturating_sub(self.conns[i].since);
                self.tally.closed_by_server(Role::Slow, open_for);
                REOPEN_AFTER
            }
        };
        self.close(i);
        self.set(self.now + again, i, Alarm::Open);
    }

    /// The next chunk: sent (headers, body) or read (read).
    pub(super) fn trickle(&mut self, i: usize) {
        let Some(slow) = self.spec.slow.clone() else {
            return;
        };
        let generation = self.conns[i].generation;
        let trickled = self.conns[i].trickled;
        let n = match slow.mode {
            SlowMode::Read => {
                self.receive(i, slow.chunk_bytes);
                slow.chunk_bytes
            }
            SlowMode::Body => slow
                .chunk_bytes
                .min(slow.content_length.saturating_sub(trickled) as usize),
            SlowMode::Headers => slow.chunk_bytes,
        };
        if slow.mode != SlowMode::Read && n > 0 {
            let mut piece = Vec::with_capacity(n + 9);
            let mut fragment = Vec::with_capacity(n);
            self.wire.trickle(trickled, n, &mut fragment);
            self.conns[i].trickled += n as u64;
            if self.spec.http2 {
                h2_continuation(&fragment, &mut piece);
            } else {
                piece = fragment;
            }
            self.send(i, &piece);
        }
        if n > 0 && self.still(i, generation) && self.conns[i].state == State::Open {
            self.set(self.now + self.interval(), i, Alarm::Trickle);
        }
    }

    /// Its time is up: the client closes it and opens another.
    pub(super) fn expire(&mut self, i: usize) {
        self.tally.expired();
        self.close(i);
        self.set(self.now, i, Alarm::Open);
    }
}
