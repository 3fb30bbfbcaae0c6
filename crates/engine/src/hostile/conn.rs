//! A connection beside the load: its non-blocking socket, registered with the thread's epoll
//! (edge triggered), what waits to be sent on it, and its TLS (`tls::Session`, the load's own
//! record layer on the run's client configuration).

use std::os::fd::RawFd;

use mio::event::Event;
use mio::unix::SourceFd;
use mio::{Interest, Token};

use crate::http::response::{Response, ResponseParser, ResponseSink};
use crate::io::{new_socket, socket_error};
use crate::spec::SlowMode;
use crate::tls::Session;

use super::Thread;

/// Bytes read at once from a socket.
const READ_BYTES: usize = 16 * 1024;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Role {
    Idle,
    Slow,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum State {
    Closed,
    /// TCP: SYN sent, no SYN-ACK yet.
    Connecting,
    Handshaking,
    /// Up, not yet holding what it came for: an idle connection's first answer, an HTTP/2 slow
    /// connection's SETTINGS from the server.
    Opening,
    Open,
}

impl State {
    /// Counted as pending in the per-second states (else as connected, once open).
    pub(super) fn pending(self) -> bool {
        matches!(
            self,
            State::Connecting | State::Handshaking | State::Opening
        )
    }
}

pub(super) struct Conn {
    pub(super) role: Role,
    pub(super) fd: RawFd,
    /// Changes at every opening, so that timers and events of an earlier socket do nothing.
    pub(super) generation: u32,
    pub(super) state: State,
    pub(super) tls: Option<Box<Session>>,
    /// Bytes the socket has not taken yet (ciphertext over TLS).
    pub(super) out: Vec<u8>,
    /// When it came up (slow), or got its last answer (idle), in ns since the thread's origin.
    pub(super) since: u64,
    pub(super) parser: ResponseParser,
    /// Slow: bytes of the trickle sent so far on this connection.
    pub(super) trickled: u64,
    /// Idle: a request is out, unanswered.
    pub(super) asking: bool,
    /// HTTP/2: what the server sent that is not a whole frame yet (a slow connection keeps only
    /// its first bytes, until its SETTINGS frame is whole).
    pub(super) early: Vec<u8>,
    /// HTTP/2, idle: the stream of its last request (0: none yet).
    pub(super) stream: u32,
    /// It has come up, or failed, once: what `BesideLoad::start` waits for.
    pub(super) settled: bool,
    /// When each kind of alarm (`Alarm as usize`) is due (u64::MAX: not set), and the earliest
    /// entry of that kind in the thread's heap (u64::MAX: none).
    pub(super) wants: [u64; ALARMS],
    pub(super) queued: [u64; ALARMS],
}

/// Kinds of `Alarm`.
const ALARMS: usize = 4;

impl Conn {
    pub(super) fn new(role: Role) -> Conn {
        Conn {
            role,
            fd: -1,
            generation: 0,
            state: State::Closed,
            tls: None,
            out: Vec::new(),
            since: 0,
            parser: ResponseParser::new(false),
            trickled: 0,
            asking: false,
            early: Vec::new(),
            stream: 0,
            settled: false,
            wants: [u64::MAX; ALARMS],
            queued: [u64::MAX; ALARMS],
        }
    }
}

/// The thread's buffers, shared by every connection.
#[derive(Default)]
pub(super) struct Buffers {
    read: Vec<u8>,
    scratch: Vec<u8>,
    plaintext: Vec<u8>,
    queued: Vec<u8>,
}

/// The answers a feed of the parser completed.
#[derive(Default)]
pub(super) struct Answers(pub(super) Vec<Response>);

impl ResponseSink for Answers {
    fn first_byte(&mut self) {}
    fn complete(&mut self, response: &Response) {
        self.0.push(*response);
    }
}

fn token(i: usize, generation: u32) -> Token {
    Token(i | (generation as usize) << 32)
}

fn errno() -> i32 {
    std::io::Error::last_os_error()
        .raw_os_error()
        .unwrap_or(libc::EIO)
}

impl Thread {
    pub(super) fn set_state(&mut self, i: usize, state: State) {
        let c = &mut self.conns[i];
        self.tally.moved(c.role, c.state, state);
        c.state = state;
    }

    /// Counted once for `BesideLoad::start`: it came up or failed.
    pub(super) fn settle(&mut self, i: usize) {
        if !std::mem::replace(&mut self.conns[i].settled, true) {
            self.tally.settle(self.conns[i].role);
        }
    }

    /// Open connection `i` (again).
    pub(super) fn open(&mut self, i: usize) {
        let c = &mut self.conns[i];
        c.generation = c.generation.wrapping_add(1);
        let bind = (!self.bind.is_empty()).then(|| self.bind[i % self.bind.len()]);
        let socket = new_socket(self.addr.family(), bind, true);
        self.set_state(i, State::Connecting);
        let Ok(fd) = socket else {
            return self.server_closed(i);
        };
        self.conns[i].fd = fd;
        let slow_read = self.spec.slow.as_ref().filter(|s| s.mode == SlowMode::Read);
        if let (Role::Slow, Some(slow)) = (self.conns[i].role, slow_read) {
            // Before connecting, so that the window the server is offered is small from the SYN.
            let window = slow.window_bytes as libc::c_int;
            // SAFETY: an int option on a socket we own.
            unsafe {
                libc::setsockopt(
                    fd,
                    libc::SOL_SOCKET,
                    libc::SO_RCVBUF,
                    &window as *const _ as *const libc::c_void,
                    4,
                );
            }
        }
        let registered = self.poll.registry().register(
            &mut SourceFd(&fd),
            token(i, self.conns[i].generation),
            Interest::READABLE | Interest::WRITABLE,
        );
        if registered.is_err() {
            return self.server_closed(i);
        }
        // SAFETY: `addr` is a valid sockaddr of its length.
        let ret = unsafe { libc::connect(fd, self.addr.as_ptr(), self.addr.len()) };
        if ret == 0 {
            self.connected(i);
        } else if errno() != libc::EINPROGRESS {
            self.server_closed(i);
        }
    }

    /// TCP is up: TLS's handshake first over https.
    fn connected(&mut self, i: usize) {
        let Some((client, config)) = &self.tls else {
            return self.up(i);
        };
        match Session::new(client, config) {
            Ok(mut tls) => {
                tls.take_queued(&mut self.bufs.queued);
                let c = &mut self.conns[i];
                c.out.extend_from_slice(&self.bufs.queued);
                c.tls = Some(Box::new(tls));
                self.set_state(i, State::Handshaking);
                self.flush(i);
            }
            Err(_) => self.server_closed(i),
        }
    }

    /// Close connection `i`, whatever it is doing.
    pub(super) fn close(&mut self, i: usize) {
        self.set_state(i, State::Closed);
        let c = &mut self.conns[i];
        if c.fd >= 0 {
            // Closing the last reference also takes it out of the epoll set.
            // SAFETY: the descriptor is ours and used by nothing else.
            unsafe { libc::close(c.fd) };
        }
        c.fd = -1;
        c.tls = None;
        c.out.clear();
        c.parser.reset();
        c.early = Vec::new();
        c.stream = 0;
        c.trickled = 0;
        c.asking = false;
        // Its alarms end with it; entries still in the heap find them cancelled.
        c.wants = [u64::MAX; ALARMS];
    }

    /// Whether connection `i` is still the socket of `generation`, not closed since.
    pub(super) fn still(&self, i: usize, generation: u32) -> bool {
        let c = &self.conns[i];
        c.generation == generation && c.state != State::Closed
    }

    pub(super) fn event(&mut self, event: &Event) {
        let i = event.token().0 & 0xffff_ffff;
        let generation = (event.token().0 >> 32) as u32;
        if i >= self.conns.len() || !self.still(i, generation) {
            return;
        }
        if self.conns[i].state == State::Connecting {
            if event.is_writable() || event.is_error() || event.is_write_closed() {
                match socket_error(self.conns[i].fd) {
                    0 => self.connected(i),
                    _ => self.server_closed(i),
                }
            }
            return;
        }
        if event.is_writable() && !self.flush(i) {
            return;
        }
        if !(event.is_readable() || event.is_read_closed() || event.is_error()) {
            return;
        }
        // A slow reader reads on its timer only; a close it sees at once. The FIN comes after
        // every byte before it, so those are all in its receive buffer by then.
        if self.reading_slowly(i) {
            if event.is_read_closed() || event.is_error() {
                self.server_closed(i);
            }
            return;
        }
        self.receive(i, usize::MAX);
    }

    /// A slow-read connection past its handshake: it reads on its timer (over HTTP/2 its stream
    /// window, which it opens a chunk at a time, holds the answer back instead).
    fn reading_slowly(&self, i: usize) -> bool {
        self.conns[i].role == Role::Slow
            && !self.spec.http2
            && self.conns[i].state == State::Open
            && self
                .spec
                .slow
                .as_ref()
                .is_some_and(|s| s.mode == SlowMode::Read)
    }

    /// Send what is waiting on connection `i`; false if that failed (it is closed then).
    pub(super) fn flush(&mut self, i: usize) -> bool {
        let c = &mut self.conns[i];
        while !c.out.is_empty() {
            // SAFETY: reads `out`, which outlives the call.
            let n = unsafe {
                libc::send(
                    c.fd,
                    c.out.as_ptr() as *const libc::c_void,
                    c.out.len(),
                    libc::MSG_NOSIGNAL | libc::MSG_DONTWAIT,
                )
            };
            if n >= 0 {
                c.out.drain(..n as usize);
                continue;
            }
            match errno() {
                libc::EAGAIN => return true,
                libc::EINTR => continue,
                _ => {
                    self.server_closed(i);
                    return false;
                }
            }
        }
        true
    }

    /// Send `data` on connection `i` (encrypted over TLS); false if that failed.
    pub(super) fn send(&mut self, i: usize, data: &[u8]) -> bool {
        let c = &mut self.conns[i];
        match c.tls.as_mut() {
            Some(tls) => {
                if tls.write(data).is_err() {
                    self.server_closed(i);
                    return false;
                }
                tls.take_queued(&mut self.bufs.queued);
                c.out.extend_from_slice(&self.bufs.queued);
            }
            None => c.out.extend_from_slice(data),
        }
        self.flush(i)
    }

    /// Read from connection `i`: until the socket has nothing more, or one read of at most
    /// `most` bytes when that is less than a whole read.
    pub(super) fn receive(&mut self, i: usize, most: usize) {
        let generation = self.conns[i].generation;
        let mut buf = std::mem::take(&mut self.bufs.read);
        buf.resize(READ_BYTES, 0);
        let want = most.min(READ_BYTES);
        loop {
            // SAFETY: reads into the buffer we own.
            let n = unsafe {
                libc::recv(
                    self.conns[i].fd,
                    buf.as_mut_ptr() as *mut libc::c_void,
                    want,
                    0,
                )
            };
            if n > 0 {
                self.deliver(i, &buf[..n as usize]);
                if want < READ_BYTES || !self.still(i, generation) {
                    break;
                }
            } else if n == 0 {
                self.server_closed(i);
                break;
            } else {
                match errno() {
                    libc::EINTR => continue,
                    libc::EAGAIN => {}
                    _ => self.server_closed(i),
                }
                break;
            }
        }
        self.bufs.read = buf;
    }

    /// Bytes read on connection `i`: decrypted over TLS (ending its handshake, if they do), then
    /// handed to its role.
    fn deliver(&mut self, i: usize, data: &[u8]) {
        let c = &mut self.conns[i];
        let (generation, handshaking) = (c.generation, c.state == State::Handshaking);
        let Some(tls) = c.tls.as_mut() else {
            return self.received(i, data);
        };
        let mut plaintext = std::mem::take(&mut self.bufs.plaintext);
        plaintext.clear();
        let failed = tls
            .receive(data, &mut self.bufs.scratch, &mut plaintext)
            .is_err();
        let done = handshaking && !failed && !tls.state().is_handshaking();
        let peer_closed = tls.peer_closed();
        if tls.wants_write() {
            tls.take_queued(&mut self.bufs.queued);
            self.conns[i].out.extend_from_slice(&self.bufs.queued);
        }
        if failed {
            self.bufs.plaintext = plaintext;
            return self.server_closed(i);
        }
        if self.flush(i) && done {
            self.up(i);
        }
        if !plaintext.is_empty() && self.still(i, generation) {
            self.received(i, &plaintext);
        }
        self.bufs.plaintext = plaintext;
        // close_notify: the server's end of the connection, as a FIN is.
        if peer_closed && self.still(i, generation) {
            self.server_closed(i);
        }
    }
}
