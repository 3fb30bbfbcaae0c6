//! The two ways the engine talks to the kernel, behind one small completion-style trait.
//!
//! The connection logic ([`crate::worker`]) is written once against completions ("connected",
//! "sent n bytes", "received these bytes"). io_uring produces those natively and in batches; the
//! epoll reactor performs the syscalls itself when mio reports readiness and turns their results
//! into the same completions.

pub mod epoll;
pub mod uring;

use std::io;
use std::net::{IpAddr, SocketAddr};
use std::os::fd::RawFd;
use std::time::{Duration, Instant};

/// Names a connection and its incarnation in 64 bits: the low 32 are the connection's slot, the
/// next 24 a generation that changes on every reconnect, so that completions still on their way
/// for a closed socket are recognised and dropped, and the top 8 (`REACTOR_BITS`) are the
/// reactor's own (io_uring puts the kind of operation there, in each submission's user data).
pub type Token = u64;

/// The top byte of a token, which names no connection: the reactor's own.
pub const REACTOR_BITS: u64 = 0xff << 56;

/// The token of connection `slot` in its `generation`, of which the low 24 bits are kept: a
/// completion would have to outlive 16 million reconnects of its slot to be taken for current.
pub fn token(slot: usize, generation: u32) -> Token {
    slot as u64 | (u64::from(generation) & 0x00ff_ffff) << 32
}

/// The connection slot `token` names.
pub fn slot_of(token: Token) -> usize {
    (token & 0xffff_ffff) as usize
}

#[derive(Debug)]
pub enum Completion<'a> {
    Connected,
    ConnectFailed(i32),
    Sent(usize),
    SendFailed(i32),
    /// Bytes read, and when the kernel received the last of them (CLOCK_REALTIME, in ns) if
    /// the reactor knows.
    Received(&'a [u8], Option<u64>),
    Eof,
    RecvFailed(i32),
}

pub trait Reactor: Sized {
    /// The name reported with every result.
    const NAME: &'static str;

    /// Connect the fresh socket `fd` to `addr`; completes with `Connected` or `ConnectFailed`
    /// (the caller enforces its own timeout by closing). After `Connected` the reactor delivers
    /// what arrives (`Received`, `Eof`, `RecvFailed`) until `close`.
    ///
    /// # Safety
    /// `addr` must stay valid and unchanged until that completion arrives: io_uring reads it
    /// when it takes the connect, which may be at a later call, even after `fd` is closed.
    unsafe fn connect(&mut self, token: Token, fd: RawFd, addr: &SockAddr);

    /// Send `len` bytes at `data`; completes with `Sent` (possibly fewer bytes) or `SendFailed`.
    ///
    /// # Safety
    /// The bytes must stay valid and unchanged until that completion arrives or `fd` is closed.
    unsafe fn send(&mut self, token: Token, fd: RawFd, data: *const u8, len: usize);

    /// Close the socket, whatever it is doing; nothing more is delivered for it.
    fn close(&mut self, token: Token, fd: RawFd);

    /// Wait until `deadline` at the latest for completions and hand each to `on`, which may
    /// start new operations on the reactor it is given; a deadline already past takes only what
    /// is there, without sleeping. A reactor that can (io_uring) lets completions gather as
    /// `gather` allows before it wakes up; one that cannot returns at the first. A wait may end
    /// with nothing handed over, before its deadline.
    fn wait<F: FnMut(&mut Self, Token, Completion<'_>)>(
        &mut self,
        deadline: Instant,
        gather: Gather,
        on: F,
    ) -> io::Result<()>;
}

/// How many completions a wait may gather before the thread wakes up, and how long after the
/// wait began it wakes anyway if at least one has arrived. Every wake-up of a sleeping thread
/// costs the client several times a request's own user-space work (bench/RESULTS.md); gathering
/// a few responses per wake-up saves that.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Gather {
    pub completions: u32,
    pub hold: Duration,
}

impl Gather {
    /// Wake at the first completion.
    pub const NONE: Gather = Gather {
        completions: 1,
        hold: Duration::ZERO,
    };
}

/// A socket address in the form the kernel takes. io_uring may read it after the call that
/// queued a connect returned (see `Reactor::connect`).
pub struct SockAddr {
    storage: libc::sockaddr_storage,
    len: libc::socklen_t,
}

impl SockAddr {
    pub fn new(addr: &SocketAddr) -> SockAddr {
        // SAFETY: sockaddr_storage is plain data, large enough for either family.
        let mut storage: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
        let len = match addr {
            SocketAddr::V4(a) => {
                let sin = libc::sockaddr_in {
                    sin_family: libc::AF_INET as _,
                    sin_port: a.port().to_be(),
                    sin_addr: libc::in_addr {
                        s_addr: u32::from_ne_bytes(a.ip().octets()),
                    },
                    sin_zero: [0; 8],
                };
                unsafe { std::ptr::write(&mut storage as *mut _ as *mut libc::sockaddr_in, sin) };
                std::mem::size_of::<libc::sockaddr_in>()
            }
            SocketAddr::V6(a) => {
                let sin6 = libc::sockaddr_in6 {
                    sin6_family: libc::AF_INET6 as _,
                    sin6_port: a.port().to_be(),
                    sin6_flowinfo: a.flowinfo(),
                    sin6_addr: libc::in6_addr {
                        s6_addr: a.ip().octets(),
                    },
                    sin6_scope_id: a.scope_id(),
                };
                unsafe { std::ptr::write(&mut storage as *mut _ as *mut libc::sockaddr_in6, sin6) };
                std::mem::size_of::<libc::sockaddr_in6>()
            }
        };
        SockAddr {
            storage,
            len: len as libc::socklen_t,
        }
    }

    pub fn as_ptr(&self) -> *const libc::sockaddr {
        &self.storage as *const _ as *const libc::sockaddr
    }

    pub fn len(&self) -> libc::socklen_t {
        self.len
    }

    pub fn family(&self) -> libc::c_int {
        self.storage.ss_family as libc::c_int
    }
}

fn check(ret: libc::c_int) -> io::Result<libc::c_int> {
    if ret < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(ret)
    }
}

/// A non-blocking TCP socket, bound to `bind` when given. `nodelay` turns Nagle off: requests
/// are whole writes, and holding one back until the previous is acknowledged only adds latency.
/// A connection that carries a single request never meets Nagle (nothing is unacknowledged when
/// it writes), so it is spared the extra syscall.
pub fn new_socket(family: libc::c_int, bind: Option<IpAddr>, nodelay: bool) -> io::Result<RawFd> {
    // SAFETY: plain syscalls on a descriptor we own; it is closed on every error path.
    unsafe {
        let fd = check(libc::socket(
            family,
            libc::SOCK_STREAM | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC,
            0,
        ))?;
        let setup = || -> io::Result<()> {
            let one: libc::c_int = 1;
            let opt = |level, name| {
                check(libc::setsockopt(
                    fd,
                    level,
                    name,
                    &one as *const _ as *const libc::c_void,
                    4,
                ))
                .map(drop)
            };
            if nodelay {
                opt(libc::IPPROTO_TCP, libc::TCP_NODELAY)?;
            }
            if let Some(ip) = bind {
                // Choose the port at connect time, from the full 4-tuple, so that several
                // source addresses multiply the ports available instead of sharing them.
                opt(libc::IPPROTO_IP, libc::IP_BIND_ADDRESS_NO_PORT)?;
                let a = SockAddr::new(&SocketAddr::new(ip, 0));
                check(libc::bind(fd, a.as_ptr(), a.len()))?;
            }
            Ok(())
        };
        if let Err(e) = setup() {
            libc::close(fd);
            return Err(e);
        }
        Ok(fd)
    }
}

/// The errno of a failed non-blocking connect, read once the socket is writable.
pub fn socket_error(fd: RawFd) -> i32 {
    let mut err: libc::c_int = 0;
    let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: writes an int into `err`.
    let ret = unsafe {
        libc::getsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_ERROR,
            &mut err as *mut _ as *mut libc::c_void,
            &mut len,
        )
    };
    if ret < 0 {
        io::Error::last_os_error()
            .raw_os_error()
            .unwrap_or(libc::EIO)
    } else {
        err
    }
}

/// Hands `data` to the socket's send buffer now, without waiting and without a completion: the
/// last words on a socket about to close (HTTP/2's GOAWAY), which no reactor would report on.
/// Returns how many bytes the kernel took (0 if it took none, or the socket failed).
pub fn send_before_close(fd: RawFd, data: &[u8]) -> usize {
    // SAFETY: reads `data`, which outlives the call; MSG_DONTWAIT makes it non-blocking whatever
    // the socket's flags.
    let n = unsafe {
        libc::send(
            fd,
            data.as_ptr() as *const libc::c_void,
            data.len(),
            libc::MSG_DONTWAIT | libc::MSG_NOSIGNAL,
        )
    };
    n.max(0) as usize
}
