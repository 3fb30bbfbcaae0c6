//! Slow clients: each holds its connection by sending (headers, body) or reading (read) a chunk
//! every interval, for at most `slow.hold`; one the server closes is opened again, as an
//! attacker's would be.

use crate::spec::SlowMode;

use super::conn::{Answers, Role, State};
use super::{h2, Alarm, Thread};

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
        if let (true, Some(slow)) = (self.spec.http2, &self.spec.slow) {
            // HEADERS goes once the server's SETTINGS are acknowledged: slowloris's may be
            // followed by nothing but its CONTINUATION frames (RFC 9113 6.10).
            let window = (slow.mode == SlowMode::Read).then_some(slow.window_bytes);
            let mut out = Vec::new();
            h2::preface(window, &mut out);
            self.set_state(i, State::Opening);
            self.send(i, &out);
            return;
        }
        self.set_state(i, State::Open);
        if self.send(i, &wire.slow_opening) {
            self.set(self.now + self.interval(), i, Alarm::Trickle);
        }
    }

    pub(super) fn slow_received(&mut self, i: usize, data: &[u8]) {
        let Some(mode) = self.spec.slow.as_ref().map(|s| s.mode) else {
            return;
        };
        if self.spec.http2 {
            return self.slow_h2_received(i, data, mode);
        }
        let mut answers = Answers::default();
        // A parse error leaves the parser failed; the connection is held all the same.
        let _ = self.conns[i].parser.feed(data, &mut answers);
        for _ in &answers.0 {
            self.tally.answered();
        }
        if !answers.0.is_empty() && self.request_over(i, mode) {
            self.replace(i);
        }
    }

    /// Whether connection `i`'s request is over once answered: a body sent whole, or an answer
    /// read (slowloris never ends its request).
    fn request_over(&self, i: usize, mode: SlowMode) -> bool {
        match (mode, &self.spec.slow) {
            (SlowMode::Body, Some(s)) => self.conns[i].trickled >= s.content_length,
            (SlowMode::Read, _) => true,
            _ => false,
        }
    }

    /// Its request is over: a new connection takes its place.
    fn replace(&mut self, i: usize) {
        self.close(i);
        self.set(self.now, i, Alarm::Open);
    }

    /// HTTP/2 frames from the server: its SETTINGS open stream 1; then, unless the header block
    /// is still open (slowloris: nothing may be sent), what a client owes is answered and the
    /// stream's end or reset counted as an answer.
    fn slow_h2_received(&mut self, i: usize, data: &[u8], mode: SlowMode) {
        let c = &mut self.conns[i];
        let opening = c.state == State::Opening;
        if !opening && mode == SlowMode::Headers {
            return;
        }
        c.early.extend_from_slice(data);
        let mut out = Vec::new();
        let heard = h2::walk(&mut c.early, 1, mode == SlowMode::Body, &mut out);
        if opening && heard.settings {
            h2::open_slow_stream(mode, &self.wire.slow_opening, &mut out);
            self.set_state(i, State::Open);
            if self.send(i, &out) {
                self.set(self.now + self.interval(), i, Alarm::Trickle);
            }
            return;
        }
        if !out.is_empty() && !self.send(i, &out) {
            return;
        }
        if heard.ended || heard.reset {
            self.tally.answered();
            if heard.reset || self.request_over(i, mode) {
                self.replace(i);
            }
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
            SlowMode::Read if !self.spec.http2 => {
                self.receive(i, slow.chunk_bytes);
                slow.chunk_bytes
            }
            SlowMode::Read => slow.chunk_bytes,
            SlowMode::Body => slow
                .chunk_bytes
                .min(slow.content_length.saturating_sub(trickled) as usize),
            SlowMode::Headers => slow.chunk_bytes,
        };
        if n > 0 && (self.spec.http2 || slow.mode != SlowMode::Read) {
            let mut piece = Vec::with_capacity(n);
            self.wire.trickle(trickled, n, &mut piece);
            self.conns[i].trickled += n as u64;
            if self.spec.http2 {
                let last = self.conns[i].trickled >= slow.content_length;
                let mut frame = Vec::with_capacity(n + 2 * 13);
                h2::trickle(slow.mode, &piece, n as u32, last, &mut frame);
                piece = frame;
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
