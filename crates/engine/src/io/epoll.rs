//! The fallback reactor: epoll through mio, for kernels where io_uring is missing or disabled.
//!
//! It performs each syscall itself when mio reports readiness and turns the result into a
//! completion, so the connection logic above cannot tell the two reactors apart. Sends are
//! tried at once (a small request nearly always fits the socket buffer) and only wait for
//! writability when the kernel pushes back.

use std::collections::VecDeque;
use std::io;
use std::os::fd::RawFd;
use std::time::{Duration, Instant};

use mio::unix::SourceFd;
use mio::{Events, Interest, Poll};

use super::{socket_error, Completion, Gather, Reactor, SockAddr, Token};

/// What the reactor knows of each open descriptor, indexed by descriptor number.
#[derive(Clone, Copy, Default)]
struct Slot {
    token: Token,
    open: bool,
    connecting: bool,
    /// A send the kernel pushed back on, retried when the socket turns writable.
    pending_send: Option<(*const u8, usize)>,
}

/// A completion the reactor produced synchronously, delivered at the next `wait`.
enum Early {
    Connected,
    ConnectFailed(i32),
    Sent(usize),
    SendFailed(i32),
}

pub struct EpollReactor {
    poll: Poll,
    events: Events,
    slots: Vec<Slot>,
    early: VecDeque<(Token, Early)>,
    /// One read buffer for every connection of the thread: data is parsed before the next read.
    buf: Box<[u8]>,
}

impl EpollReactor {
    pub fn new() -> io::Result<EpollReactor> {
        Ok(EpollReactor {
            poll: Poll::new()?,
            events: Events::with_capacity(1024),
            slots: Vec::new(),
            early: VecDeque::new(),
            buf: vec![0; 64 * 1024].into_boxed_slice(),
        })
    }

    fn slot(&mut self, fd: RawFd) -> &mut Slot {
        let i = fd as usize;
        if i >= self.slots.len() {
            self.slots.resize(i + 1, Slot::default());
        }
        &mut self.slots[i]
    }

    fn is_current(&self, fd: RawFd, token: Token) -> bool {
        self.slots
            .get(fd as usize)
            .is_some_and(|s| s.open && s.token == token)
    }

    fn try_send(fd: RawFd, data: *const u8, len: usize) -> Result<usize, i32> {
        // SAFETY: the caller of `send` keeps the bytes valid until the completion.
        let n = unsafe { libc::send(fd, data as *const libc::c_void, len, libc::MSG_NOSIGNAL) };
        if n >= 0 {
            Ok(n as usize)
        } else {
            Err(io::Error::last_os_error()
                .raw_os_error()
                .unwrap_or(libc::EIO))
        }
    }

    /// Read what `fd` holds. `closing`: the event said the peer closed (or the socket failed),
    /// so the reads go on to the end, whatever their size.
    fn readable<F: FnMut(&mut Self, Token, Completion<'_>)>(
        &mut self,
        fd: RawFd,
        token: Token,
        closing: bool,
        on: &mut F,
    ) {
        let buf = std::mem::take(&mut self.buf);
        loop {
            // SAFETY: reads into the buffer we own.
            let n = unsafe { libc::recv(fd, buf.as_ptr() as *mut libc::c_void, buf.len(), 0) };
            if n > 0 {
                on(self, token, Completion::Received(&buf[..n as usize], None));
                // Edge-triggered: a short read drained the socket; more data means a new edge.
                // Not so the close: a FIN that came with the last data was in this edge already,
                // and no other comes, so a short body would wait for its timeout.
                if ((n as usize) < buf.len() && !closing) || !self.is_current(fd, token) {
                    break;
                }
            } else if n == 0 {
                on(self, token, Completion::Eof);
                break;
            } else {
                let errno = io::Error::last_os_error()
                    .raw_os_error()
                    .unwrap_or(libc::EIO);
                if errno != libc::EAGAIN && errno != libc::EINTR {
                    on(self, token, Completion::RecvFailed(errno));
                }
                break;
            }
        }
        self.buf = buf;
    }
}

impl Reactor for EpollReactor {
    const NAME: &'static str = "epoll";

    unsafe fn connect(&mut self, token: Token, fd: RawFd, addr: &SockAddr) {
        *self.slot(fd) = Slot {
            token,
            open: true,
            connecting: false,
            pending_send: None,
        };
        let registered = self.poll.registry().register(
            &mut SourceFd(&fd),
            mio::Token(fd as usize),
            Interest::READABLE | Interest::WRITABLE,
        );
        if let Err(e) = registered {
            self.early.push_back((
                token,
                Early::ConnectFailed(e.raw_os_error().unwrap_or(libc::EIO)),
            ));
            return;
        }
        // SAFETY: `addr` points at a valid sockaddr of `len` bytes.
        let ret = unsafe { libc::connect(fd, addr.as_ptr(), addr.len()) };
        let errno = if ret == 0 {
            0
        } else {
            io::Error::last_os_error()
                .raw_os_error()
                .unwrap_or(libc::EIO)
        };
        match errno {
            0 => self.early.push_back((token, Early::Connected)),
            libc::EINPROGRESS => self.slot(fd).connecting = true,
            e => self.early.push_back((token, Early::ConnectFailed(e))),
        }
    }

    unsafe fn send(&mut self, token: Token, fd: RawFd, data: *const u8, len: usize) {
        match Self::try_send(fd, data, len) {
            Ok(n) => self.early.push_back((token, Early::Sent(n))),
            Err(libc::EAGAIN) => self.slot(fd).pending_send = Some((data, len)),
            Err(e) => self.early.push_back((token, Early::SendFailed(e))),
        }
    }

    fn close(&mut self, _token: Token, fd: RawFd) {
        *self.slot(fd) = Slot::default();
        // Closing the last reference also removes the descriptor from the epoll set.
        // SAFETY: the descriptor is ours and used by nothing else.
        unsafe { libc::close(fd) };
    }

    fn wait<F: FnMut(&mut Self, Token, Completion<'_>)>(
        &mut self,
        deadline: Instant,
        _: Gather,
        mut on: F,
    ) -> io::Result<()> {
        // A timeout of its own on every wait: the fallback has no ring to hold a timer.
        let timeout = if self.early.is_empty() {
            deadline.saturating_duration_since(Instant::now())
        } else {
            Duration::ZERO
        };
        match self.poll.poll(&mut self.events, Some(timeout)) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
        // Only what was queued before this call: handlers queue more, delivered next time.
        for _ in 0..self.early.len() {
            let Some((token, early)) = self.early.pop_front() else {
                break;
            };
            let completion = match early {
                Early::Connected => Completion::Connected,
                Early::ConnectFailed(e) => Completion::ConnectFailed(e),
                Early::Sent(n) => Completion::Sent(n),
                Early::SendFailed(e) => Completion::SendFailed(e),
            };
            on(self, token, completion);
        }
        let events = std::mem::replace(&mut self.events, Events::with_capacity(0));
        for event in events.iter() {
            let fd = event.token().0 as RawFd;
            let Some(&slot) = self.slots.get(fd as usize) else {
                continue;
            };
            if !slot.open {
                continue;
            }
            let token = slot.token;
            if slot.connecting {
                if !(event.is_writable() || event.is_error() || event.is_write_closed()) {
                    continue;
                }
                self.slot(fd).connecting = false;
                match socket_error(fd) {
                    0 => on(self, token, Completion::Connected),
                    e => {
                        on(self, token, Completion::ConnectFailed(e));
                        continue;
                    }
                }
            }
            if event.is_writable() && self.is_current(fd, token) {
                if let Some((data, len)) = self.slot(fd).pending_send.take() {
                    match Self::try_send(fd, data, len) {
                        Ok(n) => on(self, token, Completion::Sent(n)),
                        Err(libc::EAGAIN) => self.slot(fd).pending_send = Some((data, len)),
                        Err(e) => on(self, token, Completion::SendFailed(e)),
                    }
                }
            }
            if (event.is_readable() || event.is_read_closed() || event.is_error())
                && self.is_current(fd, token)
            {
                let closing = event.is_read_closed() || event.is_error();
                self.readable(fd, token, closing, &mut on);
            }
        }
        self.events = events;
        Ok(())
    }
}
