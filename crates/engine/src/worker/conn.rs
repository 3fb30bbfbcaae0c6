//! A connection slot: its state, the requests on it, and its opening, failure and closing,
//! whatever protocol it speaks.

use std::collections::VecDeque;
use std::net::IpAddr;
use std::ops::Range;
use std::os::fd::RawFd;

use crate::h2::{Connection, Limits};
use crate::http::response::ResponseParser;
use crate::io::{new_socket, Reactor};
use crate::mix::Cursor;
use crate::stats::{record_ns, ErrorClass};
use crate::tls::Session;

use super::{ns, Shared, Worker};

/// How long to wait before connecting again after a connect failed: long enough not to spin
/// against a refusing server, short enough not to matter in a run.
const RECONNECT_BACKOFF: u64 = 10_000_000;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum State {
    Closed,
    Connecting,
    /// Connected, in the TLS handshake: no request goes before it ends.
    Handshaking,
    Open,
}

/// A request on the wire, waiting for its response.
#[derive(Debug, Clone, Copy)]
pub(super) struct Pending {
    /// When it was meant to go (open loop) or went (closed loop), in ns since `start`.
    pub(super) due: u64,
    pub(super) sent: u64,
    /// HTTP/2: its stream, and when its response's first byte arrived (0: not yet).
    pub(super) stream: u32,
    /// The URL asked for, by its index in the spec.
    pub(super) url: u32,
    pub(super) first_byte: u64,
    /// Written on a connection that had completed an answer: lost before any byte of its own,
    /// it is retryable (see `ErrorClass::Retryable`).
    pub(super) on_reused: bool,
    /// Sent again after such a loss (`retry_idempotent`): never retried twice.
    pub(super) retried: bool,
}

/// What a connection speaks above TCP (and TLS), the same for every connection of a run.
pub(super) enum Protocol {
    Http1(ResponseParser),
    Http2 {
        /// The connection's HTTP/2 state, from TCP (h2c) or the TLS handshake (h2) to the
        /// close.
        connection: Option<Box<Connection>>,
        /// Frames on their way (to the kernel, or to TLS), swapped with the connection's
        /// queue like `Conn::tls_out`.
        out: Vec<u8>,
    },
}

impl Protocol {
    fn of(shared: &Shared) -> Protocol {
        if shared.http2.is_some() {
            Protocol::Http2 {
                connection: None,
                out: Vec::new(),
            }
        } else {
            Protocol::Http1(ResponseParser::new(shared.head_request))
        }
    }

    /// TCP (h2c) or the TLS handshake (h2) is up: HTTP/2 starts here, its preface going out
    /// with the next send.
    pub(super) fn start(&mut self) {
        if let Protocol::Http2 { connection, .. } = self {
            *connection = Some(Box::new(Connection::new(&Limits::default())));
        }
    }

    fn reset(&mut self) {
        match self {
            Protocol::Http1(parser) => parser.reset(),
            Protocol::Http2 { connection, .. } => *connection = None,
        }
    }

    /// The connection's HTTP/2 state, while it is up.
    pub(super) fn h2(&self) -> Option<&Connection> {
        match self {
            Protocol::Http2 { connection, .. } => connection.as_deref(),
            Protocol::Http1(_) => None,
        }
    }

    pub(super) fn h2_mut(&mut self) -> Option<&mut Connection> {
        self.h2_with_out().map(|(h2, _)| h2)
    }

    /// The connection's HTTP/2 state while it is up, with its frames on their way.
    pub(super) fn h2_with_out(&mut self) -> Option<(&mut Connection, &mut Vec<u8>)> {
        match self {
            Protocol::Http2 {
                connection: Some(h2),
                out,
            } => Some((h2, out)),
            Protocol::Http2 { .. } | Protocol::Http1(_) => None,
        }
    }
}

pub(super) struct Conn {
    pub(super) fd: RawFd,
    pub(super) generation: u32,
    pub(super) state: State,
    /// The unsent rest of the current send, if one is under way: requests in the run's
    /// RequestSet, or bytes in `tls_out` or the HTTP/2 frames' queue.
    pub(super) sending: Option<(*const u8, usize)>,
    /// https://: the TLS connection, from TCP's establishment to the close.
    pub(super) tls: Option<Box<Session>>,
    /// Ciphertext on its way to the kernel, swapped with the session's queue (both keep their
    /// capacity), and never touched while a send from it is under way. A close does not wait
    /// for such a send: the kernel may then read a buffer the next session of the slot reuses,
    /// and send its bytes on the socket being closed, never on another.
    pub(super) tls_out: Vec<u8>,
    /// When the TLS handshake began (TCP established), in ns since `start`.
    pub(super) handshake_started: u64,
    pub(super) pending: VecDeque<Pending>,
    pub(super) protocol: Protocol,
    pub(super) first_byte: u64,
    /// Where the connection is in the run's URL mix.
    pub(super) cursor: Cursor,
    /// A weighted mix's pipelined requests, copied together for one send; left alone while a
    /// send from it is under way, as `tls_out` is (and, as there, a close does not wait for one).
    pub(super) burst: Vec<u8>,
    /// Requests sent on this connection since it was opened.
    pub(super) on_connection: u64,
    /// This connection (not the slot) has completed an answer: a keep-alive connection reused.
    pub(super) reused: bool,
    /// The server said it will close after the last response we are waiting for.
    pub(super) server_closing: bool,
    pub(super) connect_started: u64,
    /// Listed in `Worker::refill`.
    pub(super) refill: bool,
    /// A connection in this slot has answered a request: its part of a warm-up is done.
    pub(super) answered: bool,
    /// HTTP/2 in an open loop: the requests whose streams a GOAWAY refused unprocessed, as they
    /// were first sent. They go first on the next connection, timed from when they were due;
    /// meanwhile they are outstanding, and those sent while measuring count as sent, and in
    /// flight if the run ends.
    pub(super) requeued: VecDeque<Pending>,
    bind: Option<IpAddr>,
}

impl Conn {
    /// Connecting, in its TLS handshake, or waiting for the server's HTTP/2 SETTINGS: its next
    /// request waits on completions that carry no arrival stamp.
    pub(super) fn setting_up(&self) -> bool {
        match self.state {
            State::Connecting | State::Handshaking => true,
            State::Open => self.protocol.h2().is_some_and(|h2| !h2.ready()),
            State::Closed => false,
        }
    }

    /// Connection `global` of the run (its index over all threads), closed, with room for
    /// `in_flight` requests on the wire.
    pub(super) fn new(shared: &Shared, global: usize, in_flight: usize) -> Conn {
        Conn {
            fd: -1,
            generation: 0,
            state: State::Closed,
            sending: None,
            tls: None,
            tls_out: Vec::new(),
            handshake_started: 0,
            pending: VecDeque::with_capacity(in_flight),
            protocol: Protocol::of(shared),
            first_byte: 0,
            cursor: shared.mix.cursor(global),
            burst: Vec::new(),
            on_connection: 0,
            reused: false,
            server_closing: false,
            connect_started: 0,
            refill: false,
            answered: false,
            requeued: VecDeque::new(),
            bind: (!shared.bind.is_empty()).then(|| shared.bind[global % shared.bind.len()]),
        }
    }

    /// `k` requests went.
    pub(super) fn went(&mut self, k: u64) {
        self.on_connection += k;
    }

    /// It has carried all the requests a connection may.
    pub(super) fn spent(&self, requests_per_connection: Option<u64>) -> bool {
        requests_per_connection.is_some_and(|limit| self.on_connection >= limit)
    }
}

impl Worker<'_> {
    pub(super) fn mark_for_refill(&mut self, i: usize) {
        let c = &mut self.conns[i];
        if !c.refill {
            c.refill = true;
            self.refill.push(i as u32);
        }
    }

    pub(super) fn connect<R: Reactor>(&mut self, reactor: &mut R, i: usize) {
        if self.now >= self.end || (self.shared.budget.spent() && self.conns[i].requeued.is_empty())
        {
            return;
        }
        if self.holding(i) {
            // Its warm-up answered, it stays closed: connected ahead of the window, its next
            // request would come without the connect (and handshake) that every request
            // without keep-alive makes. Woken for the start by `restart`, or by this once that
            // is decided.
            if !self.warming() {
                self.alarms.set(i, self.measure_from);
            }
            return;
        }
        let family = self.shared.addr.family();
        // One request in one send needs no TCP_NODELAY; HTTP/2 sends its preface, then its
        // request after the server's SETTINGS, and Nagle would hold the second for an ACK.
        let single_send =
            self.shared.spec.requests_per_connection == Some(1) && self.shared.http2.is_none();
        match new_socket(family, self.conns[i].bind, !single_send) {
            Ok(fd) => {
                let c = &mut self.conns[i];
                c.fd = fd;
                c.generation = c.generation.wrapping_add(1);
                c.connect_started = self.now;
                self.enter_timed(i, State::Connecting);
                let token = self.token(i);
                // SAFETY: the shared address lives, unchanged, for the whole run.
                unsafe { reactor.connect(token, fd, &self.shared.addr) };
            }
            Err(e) => {
                let errno = e.raw_os_error().unwrap_or(libc::EIO);
                self.connect_failed(i, ErrorClass::of_connect(errno));
            }
        }
    }

    /// Connection `i` enters `phase` (`Connecting` or `Handshaking`), which fails if it has
    /// not ended within the connect timeout.
    pub(super) fn enter_timed(&mut self, i: usize, phase: State) {
        let deadline = self.now + ns(self.shared.spec.connect_timeout);
        let c = &mut self.conns[i];
        c.state = phase;
        // An open loop's hold would delay each step of the setup (see OPEN_HOLD).
        if self.schedule.is_open() {
            self.gather = crate::io::Gather::NONE;
        }
        self.connect_deadlines
            .push_back((deadline, i as u32, c.generation, phase));
    }

    /// TCP is up on connection `i`: time it, and start its TLS handshake or its requests. Over
    /// TLS the server is there only once a handshake ends: one that accepts connections and
    /// never finishes a handshake must not keep a run going.
    pub(super) fn connected<R: Reactor>(&mut self, reactor: &mut R, i: usize) {
        let c = &mut self.conns[i];
        c.state = State::Open;
        let started = c.connect_started;
        if self.measuring(started) {
            self.counters.connects += 1;
            record_ns(&mut self.latencies.connect, self.now - started);
        }
        if self.shared.tls.is_some() {
            self.start_handshake(reactor, i);
        } else {
            self.ready(i);
            self.send_more(reactor, i);
        }
    }

    /// Connection `i` may carry requests (TCP is up, or the TLS handshake is over).
    pub(super) fn ready(&mut self, i: usize) {
        // Over HTTP/2 the server is there once a stream is answered: one that accepts
        // connections and refuses every stream must not keep a run going.
        if self.shared.http2.is_none() {
            self.progressed();
        }
        self.conns[i].protocol.start();
    }

    /// A connect or a TLS handshake failed, or took too long: give up its socket.
    pub(super) fn connect_ended<R: Reactor>(
        &mut self,
        reactor: &mut R,
        i: usize,
        class: ErrorClass,
    ) {
        reactor.close(self.token(i), self.conns[i].fd);
        self.conns[i].fd = -1;
        self.conns[i].tls = None;
        self.connect_failed(i, class);
    }

    pub(super) fn connect_failed(&mut self, i: usize, class: ErrorClass) {
        if class == ErrorClass::ConnectRefused {
            self.refused_since.get_or_insert(self.now);
        }
        if self.measuring(self.now) {
            self.counters.error(class, 1);
            if !class.is_connect() {
                self.counters.connection_errors += 1;
            }
            let second = self.second();
            self.series.at(second).errors += 1;
        }
        self.conns[i].state = State::Closed;
        self.alarms.set(i, self.now + RECONNECT_BACKOFF);
    }

    /// A connection's alarm went off: reconnect it, or send what has become due.
    pub(super) fn wake<R: Reactor>(&mut self, reactor: &mut R, i: usize) {
        match self.conns[i].state {
            State::Closed => self.connect(reactor, i),
            State::Open => self.send_more(reactor, i),
            State::Connecting | State::Handshaking => {}
        }
    }

    pub(super) fn close<R: Reactor>(&mut self, reactor: &mut R, i: usize) {
        let token = self.token(i);
        let c = &mut self.conns[i];
        if c.fd >= 0 {
            reactor.close(token, c.fd);
        }
        c.fd = -1;
        c.state = State::Closed;
        c.sending = None;
        c.tls = None;
        c.protocol.reset();
        c.server_closing = false;
        c.on_connection = 0;
        c.reused = false;
        self.outstanding -= c.pending.len();
        c.pending.clear();
    }

    /// Close and, unless the run is over, open again.
    pub(super) fn reconnect<R: Reactor>(&mut self, reactor: &mut R, i: usize) {
        self.close(reactor, i);
        self.connect(reactor, i);
    }

    /// The connection failed: every request still on it fails with `class`.
    pub(super) fn fail<R: Reactor>(&mut self, reactor: &mut R, i: usize, class: ErrorClass) {
        self.count_failed(i, 0..self.conns[i].pending.len(), class);
        self.reconnect(reactor, i);
    }

    /// The requests waiting on connection `i` in `which` (positions, oldest first) failed
    /// with `class`.
    pub(super) fn count_failed(&mut self, i: usize, which: Range<usize>, class: ErrorClass) {
        let timeout = ns(self.shared.spec.request_timeout);
        let mut failed = 0;
        for p in self.conns[i].pending.range(which) {
            if !self.measuring(p.sent) {
                continue;
            }
            if self.draining {
                // Unanswered when the window ended: counted in flight, at the age it reached.
                self.latencies.record_in_flight(self.now - p.due);
                continue;
            }
            failed += 1;
            if class == ErrorClass::Timeout {
                // Counted as a timeout and kept in the latencies at no less than the timeout:
                // dropping it would flatter the tail.
                record_ns(&mut self.latencies.total, (self.now - p.due).max(timeout));
                record_ns(
                    &mut self.latencies.service,
                    (self.now - p.sent).max(timeout),
                );
            }
        }
        if failed > 0 {
            self.counters.error(class, failed);
            let second = self.second();
            self.series.at(second).errors += failed;
        }
    }

    /// Connects and TLS handshakes past their timeout (each has the whole connect timeout)
    /// fail as such; entries of those that ended otherwise are dropped on the way.
    pub(super) fn expire_connects<R: Reactor>(&mut self, reactor: &mut R) {
        while let Some(&(deadline, i, generation, phase)) = self.connect_deadlines.front() {
            let c = &self.conns[i as usize];
            let waiting = c.state == phase && c.generation == generation;
            if waiting && deadline > self.now {
                break;
            }
            self.connect_deadlines.pop_front();
            if waiting {
                let class = if phase == State::Connecting {
                    ErrorClass::of_connect(libc::ETIMEDOUT)
                } else {
                    ErrorClass::TlsHandshake
                };
                self.connect_ended(reactor, i as usize, class);
            }
        }
    }

    pub(super) fn expire_requests<R: Reactor>(&mut self, reactor: &mut R) {
        if self.outstanding == 0 {
            return;
        }
        let timeout = ns(self.shared.spec.request_timeout);
        for i in 0..self.conns.len() {
            // Oldest first: the expired requests are the first ones.
            let c = &self.conns[i];
            let expired = c
                .pending
                .iter()
                .take_while(|p| self.now - p.sent >= timeout)
                .count();
            if expired == 0 {
                continue;
            }
            // HTTP/2 streams are independent: those that expired are cancelled, the connection
            // goes on, unless nothing on it is younger (then it is the connection that hangs).
            if c.protocol.h2().is_some() && expired < c.pending.len() {
                self.cancel_streams(reactor, i, expired);
            } else {
                self.fail(reactor, i, ErrorClass::Timeout);
            }
        }
    }
}
