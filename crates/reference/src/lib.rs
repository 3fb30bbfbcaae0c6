//! httpbench-reference: the suite's own static server, and the yardstick of its client.
//!
//! Whatever it can do per core bounds what the client can measure on the same machine, so it does
//! as little as an HTTP/1.1 server can: files are read once at start and every response is
//! prebuilt (`files`), a request is one lookup (`http`), and each pinned core runs one epoll loop
//! on its own `SO_REUSEPORT` listener, so loops share nothing but the read-only files.
//!
//! Per request batch a connection costs one `recv` and one `send`: the epoll registration is
//! edge-triggered, but a short read is taken to mean drained (no extra `recv` to hear EAGAIN), and
//! all the answers to pipelined requests that arrived together go out in one `sendmsg`, as slices
//! of the prebuilt responses.
//!
//! Over TLS (`Server::with_tls`) the loops and the answers are the same; rustls (`tls`) sits
//! between the socket and the requests, and each batch of answers is encrypted as the socket takes
//! it.

mod files;
mod http;
pub mod tls;

use std::io::{self, IoSlice, Write};
use std::mem::{size_of, zeroed};
use std::net::{SocketAddr, ToSocketAddrs};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::path::Path;
use std::ptr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread;

use files::Files;
use http::Parsed;
use httpbench_engine::host::{cpus_allowed, raise_open_files_limit};
use httpbench_engine::stats::cpu::pin_this_thread;
use rustls::{ServerConfig, ServerConnection};

/// How often a loop looks at the stop flag when idle (ms).
const STOP_CHECK_MS: i32 = 100;
/// Events taken per `epoll_wait`.
const EVENTS: usize = 512;
/// The loop's read buffer: one read takes many pipelined requests.
const READ_BUF: usize = 64 * 1024;
/// Responses handed to one `sendmsg`.
const MAX_IOV: usize = 64;
const LISTENER: u64 = u64::MAX;

/// Serve `root` on `host:port` with `threads` event loops (0: one per CPU this process may run on)
/// until `stop` is set.
pub fn serve(
    root: &Path,
    host: &str,
    port: u16,
    threads: usize,
    stop: &AtomicBool,
) -> Result<(), String> {
    Server::bind(root, host, port, threads)?.run(stop)
}

/// A server with its files loaded and its listeners bound, not yet serving: once `bind` returns,
/// connections queue up, and errors (no such root, port in use) have been reported.
pub struct Server {
    files: Files,
    /// One listener per event loop, with the CPU the loop is pinned to.
    listeners: Vec<(OwnedFd, usize)>,
    addr: SocketAddr,
    /// Serve HTTPS with this configuration, not HTTP.
    tls: Option<Arc<ServerConfig>>,
}

impl Server {
    pub fn bind(root: &Path, host: &str, port: u16, threads: usize) -> Result<Server, String> {
        let files = Files::load(root)?;
        let mut addr = (host, port)
            .to_socket_addrs()
            .map_err(|e| format!("cannot resolve {host}: {e}"))?
            .next()
            .ok_or_else(|| format!("{host} has no address"))?;
        let cpus = allowed_cpus();
        let threads = if threads == 0 { cpus.len() } else { threads };
        // Each connection is a descriptor: take the hard limit, as servers configured for load do.
        raise_open_files_limit();
        let mut listeners = Vec::with_capacity(threads);
        for i in 0..threads {
            let fd = listen(addr).map_err(|e| format!("cannot listen on {addr}: {e}"))?;
            // With port 0 the first listener gets a port; the others join it.
            addr.set_port(bound_port(&fd).map_err(|e| format!("getsockname: {e}"))?);
            listeners.push((fd, cpus[i % cpus.len()]));
        }
        Ok(Server {
            files,
            listeners,
            addr,
            tls: None,
        })
    }

    /// Serve over TLS with the certificate chain in `cert` and its private key in `key` (PEM),
    /// speaking only `version` ("1.2" or "1.3") when one is given; an error says which file or
    /// version is wrong and how.
    pub fn with_tls(
        mut self,
        cert: &Path,
        key: &Path,
        version: Option<&str>,
    ) -> Result<Server, String> {
        self.tls = Some(tls::server_config(cert, key, version)?);
        Ok(self)
    }

    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    pub fn threads(&self) -> usize {
        self.listeners.len()
    }

    /// Files served.
    pub fn files(&self) -> usize {
        self.files.len()
    }

    /// The line both front ends print once bound, so a run's log says what was served.
    pub fn banner(&self, root: &Path) -> String {
        format!(
            "httpbench-reference: serving {} files from {} on {} with {} threads{}",
            self.files(),
            root.display(),
            self.local_addr(),
            self.threads(),
            if self.tls.is_some() { ", over TLS" } else { "" }
        )
    }

    /// Serve until `stop` is set (seen within 100 ms) or a loop fails.
    pub fn run(&self, stop: &AtomicBool) -> Result<(), String> {
        let failed = AtomicBool::new(false);
        thread::scope(|scope| {
            let loops: Vec<_> = self
                .listeners
                .iter()
                .enumerate()
                .map(|(i, (listener, cpu))| {
                    let (files, tls, failed) = (&self.files, &self.tls, &failed);
                    thread::Builder::new()
                        .name(format!("reference-{i}"))
                        .spawn_scoped(scope, move || {
                            let outcome =
                                event_loop(listener.as_raw_fd(), *cpu, files, tls, stop, failed);
                            if outcome.is_err() {
                                failed.store(true, Ordering::Relaxed);
                            }
                            outcome
                        })
                        .map_err(|e| format!("cannot start an event loop: {e}"))
                })
                .collect();
            let mut outcome = Ok(());
            for handle in loops {
                let result = match handle {
                    Ok(handle) => handle
                        .join()
                        .unwrap_or_else(|_| Err("an event loop panicked".into())),
                    Err(e) => {
                        failed.store(true, Ordering::Relaxed);
                        Err(e)
                    }
                };
                outcome = outcome.and(result);
            }
            outcome
        })
    }
}

struct Conn<'a> {
    fd: OwnedFd,
    /// The start of a request that has not fully arrived.
    partial: Vec<u8>,
    /// Answers not yet written, in request order; `sent` bytes of the first are out.
    out: Vec<&'a [u8]>,
    sent: usize,
    /// Close once `out` is written: the last request asked for it (or was malformed).
    closing: bool,
    /// The socket is full: the peer reads slower than it asks, so nothing more is read until it
    /// has caught up.
    waiting: bool,
    /// The TLS session, when serving HTTPS: between the socket and `partial`/`out`.
    tls: Option<Box<ServerConnection>>,
}

impl Conn<'_> {
    /// Write out what is queued; true when all is out, false when the socket is full.
    fn flush(&mut self) -> io::Result<bool> {
        if self.tls.is_some() {
            return self.flush_tls();
        }
        while !self.out.is_empty() {
            let fd = self.fd.as_raw_fd();
            // MSG_NOSIGNAL: a peer gone away is an error to handle, not a SIGPIPE.
            let (n, want) = if let [one] = self.out[..] {
                // One answer (no pipelining): send() takes the kernel's single-buffer path.
                let s = &one[self.sent..];
                // SAFETY: s is a live slice.
                (
                    unsafe { libc::send(fd, s.as_ptr() as *const _, s.len(), libc::MSG_NOSIGNAL) },
                    s.len(),
                )
            } else {
                let mut iov = [libc::iovec {
                    iov_base: ptr::null_mut(),
                    iov_len: 0,
                }; MAX_IOV];
                let mut want = 0;
                for (i, (v, s)) in iov.iter_mut().zip(&self.out).enumerate() {
                    let s = if i == 0 { &s[self.sent..] } else { s };
                    *v = libc::iovec {
                        iov_base: s.as_ptr() as *mut _,
                        iov_len: s.len(),
                    };
                    want += s.len();
                }
                // SAFETY: a zeroed msghdr is valid; iov points at `want` bytes of live slices.
                let n = unsafe {
                    let mut msg: libc::msghdr = zeroed();
                    msg.msg_iov = iov.as_mut_ptr();
                    msg.msg_iovlen = self.out.len().min(MAX_IOV);
                    libc::sendmsg(fd, &msg, libc::MSG_NOSIGNAL)
                };
                (n, want)
            };
            if n < 0 {
                let e = io::Error::last_os_error();
                return if e.kind() == io::ErrorKind::WouldBlock {
                    Ok(false)
                } else {
                    Err(e)
                };
            }
            self.advance(n as usize);
            if (n as usize) < want {
                // The socket buffer is full; another send now would only fail.
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// `flush` over TLS: the answers are encrypted as the socket takes them (rustls holds at most
    /// 64 KiB of records unsent), so a large file is never encrypted whole ahead of the reader.
    fn flush_tls(&mut self) -> io::Result<bool> {
        let fd = self.fd.as_raw_fd();
        loop {
            let Some(tls) = self.tls.as_mut() else {
                return Ok(true);
            };
            // The answers to pipelined requests go in together, so that rustls seals them in as
            // few records as they fill, not one (and one AEAD pass, one allocation) per answer.
            let mut iov = [IoSlice::new(&[]); MAX_IOV];
            let mut want = 0;
            for (i, (v, s)) in iov.iter_mut().zip(&self.out).enumerate() {
                let s = if i == 0 { &s[self.sent..] } else { s };
                *v = IoSlice::new(s);
                want += s.len();
            }
            let slices = self.out.len().min(MAX_IOV);
            let taken = tls.writer().write_vectored(&iov[..slices])?;
            let all_in = taken == want && self.out.len() <= MAX_IOV;
            // Once the last answer is in, say the connection ends (close_notify), so that the
            // client can tell the end from a truncation.
            if self.closing && all_in {
                tls.send_close_notify();
            }
            while tls.wants_write() {
                match tls.write_tls(&mut tls::Socket(fd)) {
                    Ok(_) => {}
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                        self.advance(taken);
                        return Ok(false);
                    }
                    Err(e) => return Err(e),
                }
            }
            self.advance(taken);
            if self.out.is_empty() {
                return Ok(true);
            }
        }
    }

    fn advance(&mut self, mut n: usize) {
        let mut done = 0;
        for s in &self.out {
            let left = s.len() - self.sent;
            if n < left {
                self.sent += n;
                break;
            }
            n -= left;
            self.sent = 0;
            done += 1;
        }
        self.out.drain(..done);
    }
}

/// Decrypted bytes in: queue the answers to the whole requests among them and `partial`, and keep
/// the start of an incomplete one in `partial`.
fn take_plaintext<'a>(
    data: &[u8],
    partial: &mut Vec<u8>,
    files: &'a Files,
    out: &mut Vec<&'a [u8]>,
    closing: &mut bool,
) {
    if partial.is_empty() {
        let used = answer(data, files, out, closing);
        partial.extend_from_slice(&data[used..]);
    } else {
        partial.extend_from_slice(data);
        let used = answer(partial, files, out, closing);
        partial.drain(..used);
    }
}

/// Queue the answers to every whole request at the start of `data`; returns the bytes used.
fn answer<'a>(data: &[u8], files: &'a Files, out: &mut Vec<&'a [u8]>, closing: &mut bool) -> usize {
    let mut used = 0;
    while used < data.len() && !*closing {
        match http::parse(&data[used..], files) {
            Parsed::Partial => break,
            Parsed::Complete {
                len,
                resource,
                head_only,
                keep_alive,
            } => {
                resource.reply(head_only, keep_alive, out);
                used += len;
                *closing = !keep_alive;
            }
        }
    }
    // Nothing after a closing request is answered.
    if *closing {
        data.len()
    } else {
        used
    }
}

struct Loop<'a> {
    epoll: OwnedFd,
    files: &'a Files,
    /// Indexed by descriptor: the kernel hands out the lowest free ones, so this stays dense.
    conns: Vec<Option<Conn<'a>>>,
    buf: Box<[u8]>,
    tls: Option<&'a Arc<ServerConfig>>,
    /// Over TLS, where the requests `buf`'s ciphertext carries are decrypted.
    plaintext: Box<[u8]>,
}

fn event_loop(
    listener: RawFd,
    cpu: usize,
    files: &Files,
    tls: &Option<Arc<ServerConfig>>,
    stop: &AtomicBool,
    failed: &AtomicBool,
) -> Result<(), String> {
    pin_this_thread(cpu).map_err(|e| format!("cannot pin an event loop to CPU {cpu}: {e}"))?;
    // SAFETY: plain syscall; the descriptor is owned from here on.
    let epoll = cvt(unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) })
        .map_err(|e| format!("epoll_create1: {e}"))?;
    let epoll = unsafe { OwnedFd::from_raw_fd(epoll) };
    ctl(
        epoll.as_raw_fd(),
        libc::EPOLL_CTL_ADD,
        listener,
        libc::EPOLLIN,
        LISTENER,
    )
    .map_err(|e| format!("epoll_ctl: {e}"))?;
    let mut lp = Loop {
        epoll,
        files,
        conns: Vec::new(),
        buf: vec![0; READ_BUF].into_boxed_slice(),
        tls: tls.as_ref(),
        plaintext: vec![0; if tls.is_some() { READ_BUF } else { 0 }].into_boxed_slice(),
    };
    let mut events = [libc::epoll_event { events: 0, u64: 0 }; EVENTS];
    while !stop.load(Ordering::Relaxed) && !failed.load(Ordering::Relaxed) {
        // SAFETY: `events` has room for EVENTS entries.
        let n = unsafe {
            libc::epoll_wait(
                lp.epoll.as_raw_fd(),
                events.as_mut_ptr(),
                EVENTS as i32,
                STOP_CHECK_MS,
            )
        };
        if n < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(format!("epoll_wait: {e}"));
        }
        for event in &events[..n as usize] {
            match event.u64 {
                LISTENER => lp.accept(listener),
                fd => lp.ready(fd as RawFd, event.events),
            }
        }
    }
    Ok(()) // dropping the loop closes its connections
}

impl<'a> Loop<'a> {
    fn accept(&mut self, listener: RawFd) {
        loop {
            // SAFETY: plain syscall; the descriptor is owned from here on.
            let fd = unsafe {
                libc::accept4(
                    listener,
                    ptr::null_mut(),
                    ptr::null_mut(),
                    libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC,
                )
            };
            if fd < 0 {
                // EAGAIN: none left. Anything else (EMFILE...) is tried again at the next wakeup.
                return;
            }
            let owned = unsafe { OwnedFd::from_raw_fd(fd) };
            let tls = match self
                .tls
                .map(|config| ServerConnection::new(Arc::clone(config)))
            {
                None => None,
                Some(Ok(conn)) => Some(Box::new(conn)),
                // Only a configuration rustls itself refuses fails here, and it would fail for
                // every connection: drop this one.
                Some(Err(_)) => continue,
            };
            // Answers are whole; Nagle could only hold one back behind an unacknowledged one.
            let _ = setsockopt(fd, libc::IPPROTO_TCP, libc::TCP_NODELAY, 1);
            // Edge-triggered, for reading and writing at once: registered once, never modified,
            // and a drained socket is not polled again at every wait.
            let events = libc::EPOLLIN | libc::EPOLLOUT | libc::EPOLLRDHUP | libc::EPOLLET;
            if ctl(
                self.epoll.as_raw_fd(),
                libc::EPOLL_CTL_ADD,
                fd,
                events,
                fd as u64,
            )
            .is_err()
            {
                continue;
            }
            let i = fd as usize;
            if self.conns.len() <= i {
                self.conns.resize_with(i + 1, || None);
            }
            self.conns[i] = Some(Conn {
                fd: owned,
                partial: Vec::new(),
                out: Vec::new(),
                sent: 0,
                closing: false,
                waiting: false,
                tls,
            });
            // With TCP_DEFER_ACCEPT the first request is usually here already: no need to wait
            // for epoll to say so.
            self.read(fd, false);
        }
    }

    fn ready(&mut self, fd: RawFd, events: u32) {
        let Some(Some(conn)) = self.conns.get_mut(fd as usize) else {
            return;
        };
        if conn.waiting {
            // The peer has taken some of what it is owed (or failed: the send says which).
            match conn.flush() {
                Ok(true) if !conn.closing => conn.waiting = false,
                Ok(false) => return,
                _ => return self.close(fd),
            }
            // Requests that came meanwhile were left unread, and their edge is gone.
            self.read(fd, true)
        } else if events & (libc::EPOLLRDHUP | libc::EPOLLHUP | libc::EPOLLERR) as u32 != 0 {
            // The peer is done sending: read on to the end, which no other edge will announce.
            self.read(fd, true)
        } else if events & libc::EPOLLIN as u32 != 0 {
            self.read(fd, false)
        }
    }

    /// Read and answer until the socket is drained (a short read says so, unless `to_the_end`:
    /// then only EAGAIN or the end does) or the peer must first take what it is owed.
    fn read(&mut self, fd: RawFd, to_the_end: bool) {
        let files = self.files;
        let Some(Some(conn)) = self.conns.get_mut(fd as usize) else {
            return;
        };
        loop {
            let (received, asked) = if let Some(tls) = conn.tls.as_mut() {
                let received = recv(fd, &mut self.buf).and_then(|n| {
                    let (partial, out, closing) =
                        (&mut conn.partial, &mut conn.out, &mut conn.closing);
                    let peer_closed =
                        tls::receive(tls, fd, &self.buf[..n], &mut self.plaintext, |data| {
                            take_plaintext(data, partial, files, out, closing)
                        })?;
                    // After close_notify nothing more comes: answer what came, then close.
                    *closing |= peer_closed;
                    Ok(n)
                });
                (received, self.buf.len())
            } else if conn.partial.is_empty() {
                // The common case: read into the loop's buffer, keep only an incomplete request.
                let received = recv(fd, &mut self.buf);
                if let Ok(n) = received {
                    let used = answer(&self.buf[..n], files, &mut conn.out, &mut conn.closing);
                    conn.partial.extend_from_slice(&self.buf[used..n]);
                }
                (received, self.buf.len())
            } else {
                let had = conn.partial.len();
                conn.partial.resize(had + 4096, 0);
                let received = recv(fd, &mut conn.partial[had..]);
                conn.partial
                    .truncate(had + *received.as_ref().unwrap_or(&0));
                if received.is_ok() {
                    let used = answer(&conn.partial, files, &mut conn.out, &mut conn.closing);
                    conn.partial.drain(..used);
                }
                (received, 4096)
            };
            let drained = match received {
                Ok(0) => return self.close(fd), // the peer closed
                Ok(n) => n < asked && !to_the_end,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(_) => return self.close(fd),
            };
            match conn.flush() {
                Ok(true) if conn.closing => return self.close(fd),
                Ok(true) if drained => return,
                Ok(true) => {}
                // The socket is full: its EPOLLOUT edge will say when to go on.
                Ok(false) => {
                    conn.waiting = true;
                    return;
                }
                Err(_) => return self.close(fd),
            }
        }
    }

    fn close(&mut self, fd: RawFd) {
        // Dropping the descriptor closes it, which also takes it out of the epoll set.
        self.conns[fd as usize] = None;
    }
}

fn recv(fd: RawFd, buf: &mut [u8]) -> io::Result<usize> {
    // SAFETY: buf is valid for writes of its length.
    let n = unsafe { libc::recv(fd, buf.as_mut_ptr() as *mut _, buf.len(), 0) };
    cvt(n as i32).map(|_| n as usize)
}

fn ctl(epoll: RawFd, op: i32, fd: RawFd, events: i32, token: u64) -> io::Result<()> {
    let mut event = libc::epoll_event {
        events: events as u32,
        u64: token,
    };
    // SAFETY: plain syscall on a valid event.
    cvt(unsafe { libc::epoll_ctl(epoll, op, fd, &mut event) }).map(drop)
}

fn cvt(ret: i32) -> io::Result<i32> {
    if ret < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(ret)
    }
}

fn setsockopt(fd: RawFd, level: i32, name: i32, value: i32) -> io::Result<()> {
    // SAFETY: the option value is an int, as these options take.
    cvt(unsafe {
        libc::setsockopt(
            fd,
            level,
            name,
            &value as *const i32 as *const _,
            size_of::<i32>() as u32,
        )
    })
    .map(drop)
}

fn listen(addr: SocketAddr) -> io::Result<OwnedFd> {
    let family = if addr.is_ipv4() {
        libc::AF_INET
    } else {
        libc::AF_INET6
    };
    // SAFETY: plain syscall; the descriptor is owned from here on.
    let fd = cvt(unsafe {
        libc::socket(
            family,
            libc::SOCK_STREAM | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC,
            0,
        )
    })?;
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    let raw = fd.as_raw_fd();
    setsockopt(raw, libc::SOL_SOCKET, libc::SO_REUSEADDR, 1)?;
    // One listener per loop: the kernel spreads connections over them, and a loop is never woken
    // for a connection another takes.
    setsockopt(raw, libc::SOL_SOCKET, libc::SO_REUSEPORT, 1)?;
    // Accept a connection only once its first request has arrived (nginx's `deferred`).
    setsockopt(raw, libc::IPPROTO_TCP, libc::TCP_DEFER_ACCEPT, 1)?;
    // SAFETY: sockaddr_storage is plain data; the filled part matches `len`.
    let mut storage: libc::sockaddr_storage = unsafe { zeroed() };
    let len = match addr {
        SocketAddr::V4(a) => {
            let sin = libc::sockaddr_in {
                sin_family: libc::AF_INET as libc::sa_family_t,
                sin_port: a.port().to_be(),
                sin_addr: libc::in_addr {
                    s_addr: u32::from_ne_bytes(a.ip().octets()),
                },
                sin_zero: [0; 8],
            };
            unsafe { ptr::write(&mut storage as *mut _ as *mut libc::sockaddr_in, sin) };
            size_of::<libc::sockaddr_in>()
        }
        SocketAddr::V6(a) => {
            let sin6 = libc::sockaddr_in6 {
                sin6_family: libc::AF_INET6 as libc::sa_family_t,
                sin6_port: a.port().to_be(),
                sin6_flowinfo: a.flowinfo(),
                sin6_addr: libc::in6_addr {
                    s6_addr: a.ip().octets(),
                },
                sin6_scope_id: a.scope_id(),
            };
            unsafe { ptr::write(&mut storage as *mut _ as *mut libc::sockaddr_in6, sin6) };
            size_of::<libc::sockaddr_in6>()
        }
    };
    // SAFETY: storage holds a sockaddr of `len` bytes.
    cvt(unsafe {
        libc::bind(
            raw,
            &storage as *const _ as *const libc::sockaddr,
            len as u32,
        )
    })?;
    cvt(unsafe { libc::listen(raw, 4096) })?;
    Ok(fd)
}

fn bound_port(fd: &OwnedFd) -> io::Result<u16> {
    // SAFETY: getsockname fills at most `len` bytes of the storage.
    let mut storage: libc::sockaddr_storage = unsafe { zeroed() };
    let mut len = size_of::<libc::sockaddr_storage>() as u32;
    cvt(unsafe {
        libc::getsockname(
            fd.as_raw_fd(),
            &mut storage as *mut _ as *mut libc::sockaddr,
            &mut len,
        )
    })?;
    // The port sits at the same place, in network order, in sockaddr_in and sockaddr_in6.
    let sin = unsafe { &*(&storage as *const _ as *const libc::sockaddr_in) };
    Ok(u16::from_be(sin.sin_port))
}

/// The CPUs to put event loops on: the ones this process may use.
fn allowed_cpus() -> Vec<usize> {
    let cpus = cpus_allowed();
    if cpus.is_empty() {
        return (0..thread::available_parallelism().map_or(1, |n| n.get())).collect();
    }
    cpus
}

#[cfg(test)]
mod tests;
