//! The clients beside the load that are no benchmark: keep-alive connections held idle
//! (`idle.rs`) and slow clients (`slow.rs`: slowloris, R.U.D.Y., slow read), all on one thread of
//! their own that the measured load never waits for.
//!
//! They must not cost the load: each has a connection of its own, never a slot of a worker's
//! state machine, and the one thread drives them all from readiness (epoll through mio, edge
//! triggered) and a heap of timers, so that 10,000 slow connections that each send a few bytes
//! every 10 s wake it about 1,000 times a second. `conn.rs` is a connection's socket and TLS,
//! `wire.rs` the bytes each kind sends, `tally.rs` what is counted.
//!
//! Lifecycle: `BesideLoad::start` opens them all and returns once every idle connection has had
//! its first answer and every slow one is open with its trickle started (or failed once), at
//! the latest after the connect and request timeouts; the load's warm-up starts after. A slow
//! connection the server closes is opened again; an idle one is not (the server closing it is
//! what is seen). `BesideLoad::finish`, once the load has ended, takes their figures at that
//! moment and closes them all.

mod conn;
mod h2;
mod idle;
mod slow;
mod tally;
mod wire;

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use mio::{Events, Poll};

use crate::report::{IdleConnections, SlowClients, ThreadUse};
use crate::spec::{LoadSpec, Resolved};
use crate::stats::cpu::CpuTime;
use crate::tls::TlsClient;
use crate::Error;

use conn::{Conn, Role, State};
use tally::Tally;
use wire::Wire;

/// How long the thread sleeps at most, so that it sees `finish` soon.
const TICK: Duration = Duration::from_millis(20);

/// What a timer is for: a connection has at most one of each kind due (`Conn::wants`), and
/// closing it cancels them all.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
#[repr(usize)]
enum Alarm {
    /// Slow: the next chunk to send (headers, body) or read (read).
    Trickle,
    /// Slow: the connection's time is up (the spec's `slow.hold`).
    Hold,
    /// Idle: the request that keeps it alive (the spec's `idle.ping`).
    Ping,
    /// Open the connection (again).
    Open,
}

/// The thread of the connections beside the load, running.
pub struct BesideLoad {
    stop: Arc<AtomicBool>,
    handle: Option<JoinHandle<Finished>>,
}

/// A run that ends without `finish` (an error, a panic) still ends the thread, which then closes
/// its connections.
impl Drop for BesideLoad {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// What they came to.
pub struct Finished {
    pub slow: Option<SlowClients>,
    pub idle: Option<IdleConnections>,
    pub thread: ThreadUse,
    /// The moment their per-second states count from.
    origin: Instant,
}

impl BesideLoad {
    /// Start the idle connections and slow clients `resolved` asks for (None if it asks for
    /// none), returning once they hold what they can, as described in the module's comment.
    pub fn start(
        spec: &LoadSpec,
        resolved: &Resolved,
        tls: Option<&TlsClient>,
    ) -> Result<Option<BesideLoad>, Error> {
        let idle = resolved.idle.as_ref().map_or(0, |i| i.connections) as usize;
        let slow = resolved.slow.as_ref().map_or(0, |s| s.clients) as usize;
        if idle + slow == 0 {
            return Ok(None);
        }
        let poll = Poll::new().map_err(|e| {
            Error::spec(
                "slow.clients",
                format!("cannot create an epoll instance for the idle and slow connections: {e}"),
            )
        })?;
        let stop = Arc::new(AtomicBool::new(false));
        let (ready_tx, ready_rx) = mpsc::channel();
        let thread = Thread {
            spec: resolved.clone(),
            expect_status: spec.expect_status.clone(),
            wire: Arc::new(Wire::build(spec, resolved)),
            bind: spec.bind.clone(),
            tls: tls.map(|t| (t.clone(), t.for_thread(idle + slow))),
            addr: crate::io::SockAddr::new(&resolved.addr),
            poll,
            conns: (0..idle + slow)
                .map(|i| Conn::new(if i < idle { Role::Idle } else { Role::Slow }))
                .collect(),
            timers: BinaryHeap::new(),
            origin: Instant::now(),
            now: 0,
            tally: Tally::new(resolved),
            bufs: conn::Buffers::default(),
            ready: Some(ready_tx),
            stop: stop.clone(),
        };
        let handle = std::thread::Builder::new()
            .name("httpbench-beside".into())
            .spawn(move || thread.run())
            .map_err(|e| {
                Error::spec(
                    "slow.clients",
                    format!("cannot start the thread of the idle and slow connections: {e}"),
                )
            })?;
        // Bounded: a server that never answers does not hold the load off.
        let bound = resolved.connect_timeout + resolved.request_timeout;
        let _ = ready_rx.recv_timeout(bound);
        Ok(Some(BesideLoad {
            stop,
            handle: Some(handle),
        }))
    }

    /// The load has ended: their figures now, then every connection closed. `window_start` is
    /// when the load's measurement began, which their per-second states count from.
    pub fn finish(mut self, window_start: Instant) -> Result<Finished, Error> {
        self.stop.store(true, Ordering::Relaxed);
        let Some(handle) = self.handle.take() else {
            unreachable!("finish takes the thread once");
        };
        let mut finished = handle
            .join()
            .map_err(|payload| Error::panicked(&*payload))?;
        let offset = signed_seconds(finished.origin, window_start);
        for series in [
            finished.slow.as_mut().map(|s| &mut s.series),
            finished.idle.as_mut().map(|s| &mut s.series),
        ]
        .into_iter()
        .flatten()
        {
            for p in series.iter_mut() {
                p.second += offset;
            }
        }
        Ok(finished)
    }
}

/// Whole seconds from `window_start` to `origin` (negative when `origin` is earlier).
fn signed_seconds(origin: Instant, window_start: Instant) -> i64 {
    match origin.checked_duration_since(window_start) {
        Some(after) => after.as_secs_f64().round() as i64,
        None => -(window_start.duration_since(origin).as_secs_f64().round() as i64),
    }
}

/// The thread's state.
struct Thread {
    spec: Resolved,
    expect_status: Vec<u16>,
    wire: Arc<Wire>,
    /// Source addresses to spread the connections over, as the load's.
    bind: Vec<std::net::IpAddr>,
    /// https://: the run's client and this thread's configuration.
    tls: Option<(TlsClient, Arc<rustls::ClientConfig>)>,
    addr: crate::io::SockAddr,
    poll: Poll,
    conns: Vec<Conn>,
    /// (when, connection, what for), soonest first: at most two of each kind per connection
    /// (`Thread::set`), however often the server cuts them, so that it stays small.
    timers: BinaryHeap<Reverse<(u64, u32, Alarm)>>,
    /// Time zero: `now` and every timer count from here, in ns.
    origin: Instant,
    now: u64,
    tally: Tally,
    bufs: conn::Buffers,
    /// Told once every connection holds what it can.
    ready: Option<mpsc::Sender<()>>,
    stop: Arc<AtomicBool>,
}

impl Thread {
    fn clock(&self) -> u64 {
        self.origin.elapsed().as_nanos() as u64
    }

    /// Connection `i`'s `alarm` is due at `at` (in place of any earlier setting). An entry is
    /// pushed only when none as early is in the heap: one due later is pushed again when it
    /// comes (`ring`), so a connection the server cuts every few milliseconds leaves no trail of
    /// entries due minutes later.
    fn set(&mut self, at: u64, i: usize, alarm: Alarm) {
        let (c, k) = (&mut self.conns[i], alarm as usize);
        c.wants[k] = at;
        if at < c.queued[k] {
            c.queued[k] = at;
            self.timers.push(Reverse((at, i as u32, alarm)));
        }
    }

    fn run(mut self) -> Finished {
        let cpu_at_start = CpuTime::of_this_thread();
        let mut events = Events::with_capacity(1024);
        for i in 0..self.conns.len() {
            self.open(i);
        }
        let mut next_sample = 0;
        while !self.stop.load(Ordering::Relaxed) {
            self.now = self.clock();
            if self.now >= next_sample {
                self.tally.sample(self.now);
                next_sample += 1_000_000_000;
            }
            self.ring();
            if self.ready.is_some() && self.tally.settled() {
                if let Some(ready) = self.ready.take() {
                    let _ = ready.send(());
                }
            }
            let mut until = next_sample.min(self.now + TICK.as_nanos() as u64);
            if let Some(Reverse((at, ..))) = self.timers.peek() {
                until = until.min(*at);
            }
            let timeout = Duration::from_nanos(until.saturating_sub(self.now));
            if let Err(e) = self.poll.poll(&mut events, Some(timeout)) {
                if e.kind() != std::io::ErrorKind::Interrupted {
                    break;
                }
            }
            self.now = self.clock();
            for event in events.iter() {
                self.event(event);
            }
        }
        self.now = self.clock();
        self.tally.sample(self.now);
        let held = self.tally.held();
        for i in 0..self.conns.len() {
            self.close(i);
        }
        let cpu = CpuTime::of_this_thread().since(cpu_at_start);
        let wall = Duration::from_nanos(self.now);
        Finished {
            slow: self.tally.slow_report(held.0),
            idle: self.tally.idle_report(held.1),
            thread: ThreadUse::new(
                None,
                cpu.user.as_secs_f64(),
                cpu.sys.as_secs_f64(),
                cpu.waiting.as_secs_f64(),
                wall.as_secs_f64(),
            ),
            origin: self.origin,
        }
    }

    /// The timers that are due.
    fn ring(&mut self) {
        while let Some(&Reverse((at, i, alarm))) = self.timers.peek() {
            if at > self.now {
                break;
            }
            self.timers.pop();
            let (i, k) = (i as usize, alarm as usize);
            let c = &mut self.conns[i];
            if c.queued[k] != at {
                continue; // an earlier entry took its place
            }
            c.queued[k] = u64::MAX;
            let want = c.wants[k];
            if want == u64::MAX {
                continue; // cancelled
            }
            if want > self.now {
                c.queued[k] = want;
                self.timers.push(Reverse((want, i as u32, alarm)));
                continue;
            }
            c.wants[k] = u64::MAX;
            match (alarm, c.state) {
                (Alarm::Open, State::Closed) => self.open(i),
                (Alarm::Trickle, State::Open) => self.trickle(i),
                (Alarm::Hold, State::Open | State::Opening) => self.expire(i),
                (Alarm::Ping, State::Open) => self.ping(i),
                _ => {}
            }
        }
    }

    /// Connection `i` is up (TCP, and TLS's handshake over https): what it sends first.
    fn up(&mut self, i: usize) {
        self.conns[i].since = self.now;
        match self.conns[i].role {
            Role::Idle => self.idle_up(i),
            Role::Slow => self.slow_up(i),
        }
    }

    /// Plaintext arrived on connection `i`.
    fn received(&mut self, i: usize, data: &[u8]) {
        match self.conns[i].role {
            Role::Idle => self.idle_received(i, data),
            Role::Slow => self.slow_received(i, data),
        }
    }

    /// The server closed connection `i` (FIN, reset, or a failed send or receive), or a connect
    /// or handshake failed.
    fn server_closed(&mut self, i: usize) {
        let state = self.conns[i].state;
        if state == State::Closed {
            return;
        }
        match self.conns[i].role {
            Role::Idle => self.idle_closed(i, state),
            Role::Slow => self.slow_closed(i, state),
        }
    }
}
