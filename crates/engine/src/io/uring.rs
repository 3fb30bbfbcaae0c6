//! The io_uring reactor: every connect, send, receive and close of a thread goes through one
//! ring and one `io_uring_enter` per loop iteration, however many connections are active.
//!
//! Receives go into a ring of provided buffers shared by all the thread's connections, so an
//! idle connection holds no buffer at all; each buffer goes back to the kernel as soon as its
//! bytes are parsed. A connection that carries many responses keeps one multishot receive armed;
//! one that carries a single response gets one receive at a time, so that closing it right
//! after that response leaves nothing to cancel.

use std::io;
use std::os::fd::RawFd;
use std::sync::atomic::{AtomicU16, Ordering};
use std::time::{Duration, Instant};

use io_uring::types::{BufRingEntry, Fd, RecvMsgOut, SubmitArgs, Timespec};
use io_uring::{cqueue, opcode, squeue, types, IoUring};

use super::{slot_of, Completion, Gather, Reactor, SockAddr, Token, REACTOR_BITS};

/// The kind of operation, in the reactor's bits of the token in each submission's user data.
const OP_CONNECT: u64 = 1 << 56;
const OP_SEND: u64 = 3 << 56;
const OP_RECV: u64 = 4 << 56;
const OP_CANCEL: u64 = 5 << 56;
const OP_TIMER: u64 = 6 << 56;
const OP_TIMER_MOVE: u64 = 7 << 56;
const OP_MASK: u64 = REACTOR_BITS;

const BUF_GROUP: u16 = 0;
const BUF_SIZE: usize = 8 * 1024;
/// Room for one SCM_TIMESTAMPNS control message in a multishot receive's buffer.
const CONTROL_LEN: usize = 64;

/// Memory mapped anonymously, page aligned as the kernel wants a buffer ring.
struct Mapping {
    ptr: *mut u8,
    len: usize,
}

impl Mapping {
    fn new(len: usize) -> io::Result<Mapping> {
        // SAFETY: a fresh private anonymous mapping; unmapped in Drop.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if ptr == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        Ok(Mapping {
            ptr: ptr as *mut u8,
            len,
        })
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: unmaps exactly what `new` mapped.
        unsafe { libc::munmap(self.ptr as *mut libc::c_void, self.len) };
    }
}

/// The provided-buffer ring: `entries` buffers of BUF_SIZE bytes the kernel picks from.
struct BufRing {
    ring: Mapping,
    buffers: Mapping,
    entries: u16,
    /// Our copy of the tail; published to the kernel once per batch.
    tail: u16,
}

impl BufRing {
    fn new(entries: u16) -> io::Result<BufRing> {
        let ring = Mapping::new(entries as usize * std::mem::size_of::<BufRingEntry>())?;
        let buffers = Mapping::new(entries as usize * BUF_SIZE)?;
        let mut br = BufRing {
            ring,
            buffers,
            entries,
            tail: 0,
        };
        for bid in 0..entries {
            br.give_back(bid);
        }
        br.publish();
        Ok(br)
    }

    fn base(&self) -> *mut BufRingEntry {
        self.ring.ptr as *mut BufRingEntry
    }

    /// # Safety
    /// `bid` must be a buffer the kernel handed us in a completion of `len` bytes, not yet given back.
    unsafe fn data(&self, bid: u16, len: usize) -> &'static [u8] {
        std::slice::from_raw_parts(self.buffers.ptr.add(bid as usize * BUF_SIZE), len)
    }

    fn give_back(&mut self, bid: u16) {
        let slot = (self.tail & (self.entries - 1)) as usize;
        // SAFETY: slot < entries, inside the ring mapping; the kernel only reads entries below
        // the published tail, and this one is past it.
        unsafe {
            let e = &mut *self.base().add(slot);
            e.set_addr(self.buffers.ptr.add(bid as usize * BUF_SIZE) as u64);
            e.set_len(BUF_SIZE as u32);
            e.set_bid(bid);
        }
        self.tail = self.tail.wrapping_add(1);
    }

    fn publish(&self) {
        // SAFETY: the tail field lives in the first entry of the ring mapping, which is aligned.
        unsafe {
            let tail = BufRingEntry::tail(self.base()) as *const AtomicU16;
            (*tail).store(self.tail, Ordering::Release);
        }
    }
}

/// CLOCK_MONOTONIC now, as the kernel's absolute timers take it.
fn monotonic_now() -> Duration {
    let mut now = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: writes the current time into `now`.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut now) };
    Duration::new(now.tv_sec as u64, now.tv_nsec as u32)
}

/// The kernel's receive time in an SCM_TIMESTAMPNS control message, in ns since the epoch.
fn arrival(control: &[u8]) -> Option<u64> {
    let header = std::mem::size_of::<libc::cmsghdr>();
    let mut at = 0;
    while control.len() >= at + header {
        // SAFETY: a whole header lies at `at`, read unaligned as the buffer may not be.
        let h: libc::cmsghdr =
            unsafe { std::ptr::read_unaligned(control.as_ptr().add(at) as *const libc::cmsghdr) };
        let len = h.cmsg_len;
        if len < header || at + len > control.len() {
            return None;
        }
        if h.cmsg_level == libc::SOL_SOCKET
            && h.cmsg_type == libc::SCM_TIMESTAMPNS
            && len >= header + 16
        {
            // SAFETY: the message holds a timespec right after its (aligned-size) header.
            let ts: libc::timespec = unsafe {
                std::ptr::read_unaligned(control.as_ptr().add(at + header) as *const libc::timespec)
            };
            return Some(ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64);
        }
        at += (len + 7) & !7;
    }
    None
}

/// A single-shot receive's message header and control data: the kernel writes the arrival
/// stamp into `control` itself, so each connection has its own.
struct Single {
    msghdr: libc::msghdr,
    iov: libc::iovec,
    control: [u8; CONTROL_LEN],
}

pub struct UringReactor {
    ring: IoUring,
    bufs: BufRing,
    /// The template of every multishot receive: no address, CONTROL_LEN bytes of control data.
    /// The kernel reads it when each receive is submitted; one for the reactor's life.
    msghdr: Box<libc::msghdr>,
    /// Per slot, for single-shot receives; boxed because the kernel writes into a control area
    /// when its receive completes, whether or not the vector has grown since.
    #[allow(clippy::vec_box)]
    singles: Vec<Box<Single>>,
    /// Completions copied out of the queue, so that handlers may submit while we go through them.
    batch: Vec<(u64, i32, u32)>,
    multishot: bool,
    slots: Vec<Slot>,
    /// Whether the kernel can end a wait for several completions early (Linux 6.12).
    min_timeout: bool,
    /// Sends pushed since the last wait: most complete within the submitting call, so a wait
    /// that gathers completions counts them on top of those it waits for. One that does not (a
    /// full socket buffer, a partial send whose rest must go before the server can answer) only
    /// makes such a wait last its hold; a wait that does not gather must not count them.
    sends: u32,
    /// The deadline of the wake-up the ring holds for us, whose serial is `timers_armed`. A wait
    /// that does not gather is bounded by it rather than by a timeout of its own, which arms and
    /// cancels a kernel timer on every wait that sleeps: on this kind of VM that cost 0.08 us a
    /// request at h2o 10 x 10 over h2c in the quieter of two sets of paired rounds, 0.30 in the
    /// noisier (bench/RESULTS.md, "A timer per wait"). A closed loop's is its next tick, armed
    /// once a tick; an open loop moves it to each request's time, a timer per request as before.
    timer: Option<Instant>,
    /// Numbers the timers armed, in the bits a token leaves free: one that fired on another CPU
    /// just as it was being moved completes late, when a new one may be held.
    timers_armed: u64,
    /// Read by the kernel when the timer's submission is taken, inside one of our calls.
    timer_at: Box<Timespec>,
    /// An instant and the monotonic clock read just after it: the kernel's timers take
    /// CLOCK_MONOTONIC times, and one set from this pair ends no earlier than its instant.
    epoch: (Instant, Duration),
}

/// Per connection slot: its current token and descriptor, to re-arm a receive that ended and to
/// tell completions of a closed socket from those of its successor; and which of its operations
/// the kernel still holds, the only ones a close has to cancel.
#[derive(Clone, Copy)]
struct Slot {
    token: Token,
    fd: RawFd,
    connecting: bool,
    receiving: bool,
}

const CLOSED: Slot = Slot {
    token: 0,
    fd: -1,
    connecting: false,
    receiving: false,
};

impl UringReactor {
    /// `connections`: how many this thread will hold at once (sizes the queues and buffers).
    /// `multishot`: whether connections carry more than one response each.
    pub fn new(connections: usize, multishot: bool) -> io::Result<UringReactor> {
        let sq = (connections * 2).clamp(256, 4096).next_power_of_two() as u32;
        let build = |deferred: bool| {
            let mut b = IoUring::builder();
            b.setup_cqsize(sq * 8).setup_submit_all();
            if deferred {
                // Completion work runs only inside our own enter calls: fewer interruptions
                // of the loop and naturally larger batches.
                b.setup_single_issuer().setup_defer_taskrun();
            }
            b.build(sq)
        };
        let ring = build(true).or_else(|_| build(false))?;
        let min_timeout = ring.params().is_feature_min_timeout();
        let entries = (connections * 2).clamp(256, 4096).next_power_of_two() as u16;
        let bufs = BufRing::new(entries)?;
        // SAFETY: the ring mapping lives as long as the reactor, which unregisters nothing
        // before the ring itself is dropped.
        unsafe {
            ring.submitter().register_buf_ring_with_flags(
                bufs.ring.ptr as u64,
                entries,
                BUF_GROUP,
                0,
            )?
        };
        // SAFETY: msghdr is plain data; all null and zero but the control length.
        let mut msghdr: Box<libc::msghdr> = Box::new(unsafe { std::mem::zeroed() });
        msghdr.msg_controllen = CONTROL_LEN;
        Ok(UringReactor {
            ring,
            bufs,
            msghdr,
            singles: Vec::new(),
            batch: Vec::with_capacity(4096),
            multishot,
            slots: Vec::new(),
            min_timeout,
            sends: 0,
            timer: None,
            timers_armed: 0,
            timer_at: Box::new(Timespec::new()),
            epoch: (Instant::now(), monotonic_now()),
        })
    }

    fn push(&mut self, entry: &squeue::Entry) {
        // SAFETY: every pointer in our entries outlives the operation (see `Reactor::send`,
        // `Reactor::connect`, and the boxed timespec).
        while unsafe { self.ring.submission().push(entry) }.is_err() {
            // The queue is full: hand what is there to the kernel and go on.
            if let Err(e) = self.ring.submit() {
                if e.raw_os_error() != Some(libc::EBUSY) {
                    panic!("io_uring submit failed: {e}");
                }
            }
        }
    }

    fn arm_recv(&mut self, token: Token, fd: RawFd) {
        let e = if self.multishot {
            opcode::RecvMsgMulti::new(Fd(fd), &*self.msghdr, BUF_GROUP).build()
        } else {
            let single = &mut *self.singles[slot_of(token)];
            // Cleared, so that a receive whose kernel wrote no stamp leaves none behind.
            single.control = [0; CONTROL_LEN];
            single.iov = libc::iovec {
                iov_base: std::ptr::null_mut(),
                iov_len: BUF_SIZE,
            };
            single.msghdr.msg_iov = &mut single.iov;
            single.msghdr.msg_iovlen = 1;
            single.msghdr.msg_control = single.control.as_mut_ptr() as *mut libc::c_void;
            single.msghdr.msg_controllen = CONTROL_LEN;
            opcode::RecvMsg::new(Fd(fd), &mut single.msghdr)
                .buf_group(BUF_GROUP)
                .build()
                .flags(squeue::Flags::BUFFER_SELECT)
        };
        self.slots[slot_of(token)].receiving = true;
        self.push(&e.user_data(OP_RECV | token));
    }

    /// The slot of `token` if that connection is still open.
    fn current(&mut self, token: Token) -> Option<&mut Slot> {
        self.slots
            .get_mut(slot_of(token))
            .filter(|s| s.token == token && s.fd >= 0)
    }

    /// Have the ring wake us at `deadline` at the latest: a timer already held that ends no
    /// later does; a later one is moved.
    fn wake_by(&mut self, deadline: Instant) {
        if self.timer.is_some_and(|held| held <= deadline) {
            return;
        }
        let at = self.epoch.1 + deadline.saturating_duration_since(self.epoch.0);
        *self.timer_at = Timespec::from(at);
        let e = if self.timer.is_some() {
            // If it has just fired, the update finds nothing: the next wait arms a new one.
            opcode::TimeoutUpdate::new(OP_TIMER | self.timers_armed, &*self.timer_at)
                .flags(types::TimeoutFlags::ABS)
                .build()
                .flags(squeue::Flags::SKIP_SUCCESS)
                .user_data(OP_TIMER_MOVE)
        } else {
            self.timers_armed = (self.timers_armed + 1) & !OP_MASK;
            opcode::Timeout::new(&*self.timer_at)
                .flags(types::TimeoutFlags::ABS)
                .build()
                .user_data(OP_TIMER | self.timers_armed)
        };
        self.timer = Some(deadline);
        self.push(&e);
    }

    /// Cancel the operation the kernel holds for `token`: it holds its own reference to the
    /// socket and would keep it open after the descriptor is closed.
    fn cancel(&mut self, op: u64, token: Token) {
        let e = opcode::AsyncCancel::new(op | token)
            .build()
            .flags(squeue::Flags::SKIP_SUCCESS)
            .user_data(OP_CANCEL);
        self.push(&e);
    }
}

impl Reactor for UringReactor {
    const NAME: &'static str = "io_uring";

    unsafe fn connect(&mut self, token: Token, fd: RawFd, addr: &SockAddr) {
        let slot = slot_of(token);
        if slot >= self.slots.len() {
            self.slots.resize(slot + 1, CLOSED);
            if !self.multishot {
                // SAFETY: plain data, all zero; set up by each `arm_recv`.
                self.singles
                    .resize_with(slot + 1, || Box::new(unsafe { std::mem::zeroed() }));
            }
        }
        self.slots[slot] = Slot {
            token,
            fd,
            connecting: true,
            receiving: false,
        };
        // Responses are timed by when the kernel received them, not by when this thread got
        // round to them: a wait that gathers completions then changes no latency.
        let one: libc::c_int = 1;
        // SAFETY: sets an int option on our socket. Without it responses are simply timed on
        // arrival in user space.
        unsafe {
            libc::setsockopt(
                fd,
                libc::SOL_SOCKET,
                libc::SO_TIMESTAMPNS,
                &one as *const _ as *const libc::c_void,
                4,
            )
        };
        let c = opcode::Connect::new(Fd(fd), addr.as_ptr(), addr.len())
            .build()
            .user_data(OP_CONNECT | token);
        self.push(&c);
    }

    unsafe fn send(&mut self, token: Token, fd: RawFd, data: *const u8, len: usize) {
        self.sends += 1;
        let e = opcode::Send::new(Fd(fd), data, len as u32)
            .flags(libc::MSG_NOSIGNAL)
            .build()
            .user_data(OP_SEND | token);
        self.push(&e);
    }

    fn close(&mut self, token: Token, fd: RawFd) {
        // A pending operation is cancelled inline at the next submission (a shutdown op would
        // run in io-wq worker threads, a fifth of a keep-alive-off run's CPU). The descriptor
        // itself is closed here and now: a close left queued in the ring would be dropped with
        // the ring at the end of a run, leaking the descriptor, whereas an operation still
        // pending then is cancelled by the ring's teardown and lets the socket go.
        if let Some(slot) = self.current(token) {
            let held = *slot;
            *slot = CLOSED;
            if held.connecting {
                self.cancel(OP_CONNECT, token);
            }
            if held.receiving {
                self.cancel(OP_RECV, token);
            }
        }
        // SAFETY: the descriptor is ours; completions for it are recognised by token, not number.
        unsafe { libc::close(fd) };
    }

    fn wait<F: FnMut(&mut Self, Token, Completion<'_>)>(
        &mut self,
        deadline: Instant,
        gather: Gather,
        mut on: F,
    ) -> io::Result<()> {
        let left = deadline.saturating_duration_since(Instant::now());
        let timeout = Timespec::from(left);
        let mut args = SubmitArgs::new();
        // A hold past the deadline ends there. Dropping the hold instead turned gathering off
        // whenever the hold (then a sixteenth of the mean service time) was over the time to
        // the next tick, always at mean service times past 160 ms: nginx over h2 at 100 x 100
        // then swung between 37k and 71k req/s from run to run, at up to 0.39 wake-ups a
        // response (bench/RESULTS.md).
        let hold_us = gather.hold.min(left).as_micros().min(u32::MAX as u128) as u32;
        let mut want = 1;
        if left.is_zero() {
            args = args.timespec(&timeout);
        } else if self.min_timeout && gather.completions > 1 && hold_us > 0 {
            // The kernel wakes us once `want` completions are in, or `hold` after the wait began
            // if at least one is; and at the deadline in any case. That takes a timeout of the
            // wait's own: without one, the kernel ends the wait at `hold` even with nothing in.
            // Gathering arms a timer for its hold on every such wait anyway.
            args = args.timespec(&timeout).min_wait_usec(hold_us);
            want = (gather.completions + self.sends) as usize;
        } else {
            self.wake_by(deadline);
        }
        self.sends = 0;
        if let Err(e) = self.ring.submitter().submit_with_args(want, &args) {
            match e.raw_os_error() {
                Some(libc::ETIME) | Some(libc::EINTR) | Some(libc::EBUSY) => {}
                _ => return Err(e),
            }
        }
        let mut batch = std::mem::take(&mut self.batch);
        batch.clear();
        batch.extend(
            self.ring
                .completion()
                .map(|c| (c.user_data(), c.result(), c.flags())),
        );
        for &(user_data, res, flags) in &batch {
            let token = user_data & !OP_MASK;
            match user_data & OP_MASK {
                OP_CONNECT => {
                    let Some(slot) = self.current(token) else {
                        continue;
                    };
                    slot.connecting = false;
                    let fd = slot.fd;
                    if res == 0 {
                        self.arm_recv(token, fd);
                        on(self, token, Completion::Connected);
                    } else {
                        on(self, token, Completion::ConnectFailed(-res));
                    }
                }
                OP_SEND => {
                    if res >= 0 {
                        on(self, token, Completion::Sent(res as usize));
                    } else {
                        on(self, token, Completion::SendFailed(-res));
                    }
                }
                OP_RECV => {
                    let more = cqueue::more(flags);
                    if let (false, Some(slot)) = (more, self.current(token)) {
                        slot.receiving = false;
                    }
                    let bid = cqueue::buffer_select(flags);
                    // Bytes of payload: a multishot receive's buffer starts with a header and
                    // the control data, and its end of stream is a buffer with no payload.
                    let mut got = res;
                    if res > 0 {
                        let bid = bid.expect("a receive with data names its buffer");
                        // SAFETY: the kernel filled `res` bytes of buffer `bid` for us; it is
                        // given back below, after the handler is done with it.
                        let data = unsafe { self.bufs.data(bid, res as usize) };
                        if !self.multishot {
                            let arrived = self
                                .singles
                                .get(slot_of(token))
                                .and_then(|s| arrival(&s.control));
                            on(self, token, Completion::Received(data, arrived));
                        } else if let Ok(msg) = RecvMsgOut::parse(data, &self.msghdr) {
                            got = msg.payload_data().len() as i32;
                            if got > 0 {
                                on(
                                    self,
                                    token,
                                    Completion::Received(
                                        msg.payload_data(),
                                        arrival(msg.control_data()),
                                    ),
                                );
                            }
                        } else {
                            // Shorter than the header the kernel always writes: nothing of
                            // this connection's stream can be trusted any more.
                            got = -libc::EIO;
                            if more {
                                on(self, token, Completion::RecvFailed(libc::EIO));
                            }
                        }
                        self.bufs.give_back(bid);
                    } else if let Some(bid) = bid {
                        self.bufs.give_back(bid);
                    }
                    if let (false, Some(fd)) = (more, self.current(token).map(|s| s.fd)) {
                        match got {
                            0 => on(self, token, Completion::Eof),
                            // Data from a single receive, out of buffers, or a multishot the
                            // kernel ended: arm it again; the buffers given back in this batch
                            // are published first.
                            r if r > 0 || r == -libc::ENOBUFS => self.arm_recv(token, fd),
                            r => on(self, token, Completion::RecvFailed(-r)),
                        }
                    }
                }
                // The held timer fired, or could not be moved (only SKIP_SUCCESS's failures come
                // back, inside the call that submitted the move): the next wait arms a new one.
                OP_TIMER if token == self.timers_armed => self.timer = None,
                OP_TIMER_MOVE => self.timer = None,
                _ => {} // cancels: nothing to report
            }
        }
        self.batch = batch;
        self.bufs.publish();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::net::{TcpListener, TcpStream};
    use std::os::fd::RawFd;
    use std::time::{Duration, Instant};

    use super::{arrival, UringReactor};
    use crate::io::{new_socket, token, Completion, Gather, Reactor, SockAddr};

    /// Waits until `deadline` has passed, counting them; none may take past `bound`.
    fn waits_until(
        r: &mut UringReactor,
        deadline: Instant,
        gather: Gather,
        bound: Duration,
    ) -> u32 {
        let begun = Instant::now();
        let mut waits = 0;
        while Instant::now() < deadline {
            r.wait(deadline, gather, |_, _, _| {}).unwrap();
            waits += 1;
            assert!(
                begun.elapsed() < bound,
                "{waits} waits took {:?}",
                begun.elapsed()
            );
        }
        waits
    }

    /// `n` connections to `listener` through `r` (tokens `token(i, 0)`), and the server's ends.
    /// The waits for them end long before their deadline, which the ring's timer keeps.
    fn connected(
        r: &mut UringReactor,
        listener: &TcpListener,
        n: usize,
    ) -> (Vec<RawFd>, Vec<TcpStream>) {
        // Leaked: a failed assertion below ends the test with connects still pending.
        let addr: &'static SockAddr =
            Box::leak(Box::new(SockAddr::new(&listener.local_addr().unwrap())));
        let fds: Vec<_> = (0..n)
            .map(|i| {
                let fd = new_socket(libc::AF_INET, None, true).unwrap();
                // SAFETY: `addr` lives for the rest of the process.
                unsafe { r.connect(token(i, 0), fd, addr) };
                fd
            })
            .collect();
        let begun = Instant::now();
        let mut done = 0;
        while done < n && begun.elapsed() < Duration::from_secs(2) {
            r.wait(begun + Duration::from_secs(3), Gather::NONE, |_, _, c| {
                done += matches!(c, Completion::Connected) as usize
            })
            .unwrap();
        }
        assert_eq!(done, n);
        (fds, (0..n).map(|_| listener.accept().unwrap().0).collect())
    }

    #[test]
    fn a_timer_held_for_later_is_moved_to_an_earlier_deadline() {
        let Ok(mut r) = UringReactor::new(1, true) else {
            return; // no io_uring here: the run falls back to epoll
        };
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        // The connects leave the ring's timer 3 s out, past this test's bound of 1 s.
        let (fds, _peers) = connected(&mut r, &listener, 1);
        let soon = Instant::now() + Duration::from_millis(20);
        let waits = waits_until(&mut r, soon, Gather::NONE, Duration::from_secs(1));
        assert!(waits <= 3, "{waits} waits");
        r.close(token(0, 0), fds[0]);
    }

    #[test]
    fn a_hold_longer_than_the_time_left_still_gathers() {
        let Ok(mut r) = UringReactor::new(3, true) else {
            return;
        };
        if !r.min_timeout {
            return; // gathering needs the kernel's minimum wait (6.12)
        }
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let (fds, peers) = connected(&mut r, &listener, 3);
        // One byte on each connection, 5 ms apart from 50 ms on (so that the wait has begun): a
        // wait for 3 that holds for longer than the 2 s left takes all three, where one that
        // waits for the first takes one.
        let writer = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(50));
            let first = Instant::now();
            for mut peer in peers {
                std::io::Write::write_all(&mut peer, b"x").unwrap();
                std::thread::sleep(Duration::from_millis(5));
            }
            first
        });
        let gather = Gather {
            completions: 3,
            hold: Duration::from_secs(60),
        };
        let mut received = 0;
        let began = Instant::now();
        r.wait(began + Duration::from_secs(2), gather, |_, _, c| {
            received += matches!(c, Completion::Received(..)) as usize
        })
        .unwrap();
        // A host too busy to begin the wait before the first byte proves nothing either way.
        if writer.join().unwrap() > began {
            assert_eq!(received, 3);
        }
        for (i, fd) in fds.into_iter().enumerate() {
            r.close(token(i, 0), fd);
        }
    }

    #[test]
    fn a_gathering_wait_with_nothing_in_lasts_to_its_deadline_not_its_hold() {
        let Ok(mut r) = UringReactor::new(1, true) else {
            return;
        };
        if !r.min_timeout {
            return;
        }
        let gather = Gather {
            completions: 4,
            hold: Duration::from_millis(1),
        };
        let deadline = Instant::now() + Duration::from_millis(50);
        // Woken at each hold, it would take about 50 waits.
        let waits = waits_until(&mut r, deadline, gather, Duration::from_secs(5));
        assert!(waits <= 3, "{waits} waits");
    }

    fn cmsg(level: i32, kind: i32, data: &[u8]) -> Vec<u8> {
        let header = std::mem::size_of::<libc::cmsghdr>();
        let mut out = vec![0u8; (header + data.len() + 7) & !7];
        // SAFETY: writes one header into a buffer large enough for it.
        unsafe {
            let h = out.as_mut_ptr() as *mut libc::cmsghdr;
            (*h).cmsg_len = header + data.len();
            (*h).cmsg_level = level;
            (*h).cmsg_type = kind;
        }
        out[header..header + data.len()].copy_from_slice(data);
        out
    }

    fn timespec(sec: i64, nsec: i64) -> Vec<u8> {
        [sec.to_ne_bytes(), nsec.to_ne_bytes()].concat()
    }

    #[test]
    fn the_arrival_stamp_is_found_among_control_messages() {
        let stamp = cmsg(
            libc::SOL_SOCKET,
            libc::SCM_TIMESTAMPNS,
            &timespec(1_700_000_000, 250),
        );
        assert_eq!(arrival(&stamp), Some(1_700_000_000_000_000_250));
        let other = cmsg(libc::IPPROTO_TCP, 1, &[1, 2, 3, 4]);
        assert_eq!(
            arrival(&[other.clone(), stamp].concat()),
            Some(1_700_000_000_000_000_250)
        );
        assert_eq!(arrival(&other), None);
        assert_eq!(arrival(&[]), None);
    }

    #[test]
    fn a_truncated_control_message_gives_no_stamp() {
        let stamp = cmsg(libc::SOL_SOCKET, libc::SCM_TIMESTAMPNS, &timespec(1, 2));
        assert_eq!(arrival(&stamp[..stamp.len() - 4]), None);
        let mut lying = stamp.clone();
        lying[0] = 200; // a length past the end
        assert_eq!(arrival(&lying), None);
    }
}
