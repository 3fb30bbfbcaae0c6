//! One engine thread: its share of the connections, their state machines, and its tallies.
//!
//! Written once against [`Reactor`] completions. Every request that is sent is accounted for
//! exactly once: completed, failed in one error class, or in flight when the run ended.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::net::IpAddr;
use std::os::fd::RawFd;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::Sender;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::http::request::RequestSet;
use crate::http::response::{EofOutcome, ResponseParser};
use crate::io::{new_socket, slot_of, Completion, Gather, Reactor, SockAddr, Token};
use crate::spec::{Resolved, Stop};
use crate::stats::cpu::CpuTime;
use crate::stats::series::{SecondRecorder, SecondSample};
use crate::stats::{record_ns, Counters, ErrorClass, Latencies};
use crate::tls::{Negotiated, Session, TlsClient};

pub use h2::Http2;
use sink::Sink;

mod h2;
mod sink;
mod tls;

/// What all threads of a run share.
pub struct Shared {
    pub spec: Resolved,
    pub requests: RequestSet,
    pub head_request: bool,
    pub expect_length: Option<u64>,
    pub addr: SockAddr,
    pub bind: Vec<IpAddr>,
    /// https://: how connections speak TLS.
    pub tls: Option<TlsClient>,
    /// An HTTP/2 run: its requests and streams per connection.
    pub http2: Option<Http2>,
    /// Requests still to send when the run stops after a count.
    pub tickets: AtomicU64,
    /// Set to end the run early (Ctrl-C, or a thread that found the server gone).
    pub stop: AtomicBool,
    /// Why a thread ended the run early, if one did.
    pub abort_reason: std::sync::Mutex<Option<String>>,
    /// Why the server cannot be measured as the spec asks, if a thread found out under load (the
    /// validation request finds out first, when there is one): the run's error, not a report.
    pub refusal: std::sync::Mutex<Option<crate::Error>>,
    /// Time zero of the run: load starts here, measurement `warmup` later.
    pub start: Instant,
}

impl Shared {
    /// End the run early for every thread; the first reason given is the one reported.
    pub fn abort(&self, why: String) {
        self.abort_reason
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get_or_insert(why);
        self.stop.store(true, Ordering::Relaxed);
    }

    /// End the run early for every thread, as a refusal rather than a report; the first given
    /// is the one returned.
    pub fn refuse(&self, why: crate::Error) {
        self.refusal
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get_or_insert(why);
        self.stop.store(true, Ordering::Relaxed);
    }

    /// Take up to `k` requests from the run's budget.
    fn claim(&self, k: u64) -> u64 {
        if !matches!(self.spec.stop, Stop::Requests(_)) {
            return k;
        }
        let mut left = self.tickets.load(Ordering::Relaxed);
        loop {
            let take = k.min(left);
            if take == 0 {
                return 0;
            }
            match self.tickets.compare_exchange_weak(
                left,
                left - take,
                Ordering::Relaxed,
                Ordering::Relaxed,
            ) {
                Ok(_) => return take,
                Err(now) => left = now,
            }
        }
    }
}

/// This thread's part of the run.
pub struct Assignment {
    pub index: usize,
    /// Global index of its first connection (spreads open-loop phases and bind addresses).
    pub first_connection: usize,
    pub connections: usize,
    /// Open loop: this thread's requests per second.
    pub rate: Option<f64>,
    pub cpu: Option<usize>,
}

/// What a thread hands back (the default: nothing measured).
#[derive(Default)]
pub struct Outcome {
    pub counters: Counters,
    pub latencies: Latencies,
    pub in_flight: u64,
    /// How long the requests in flight had waited when the run ended (from when they were due),
    /// in ns: the sum and the longest.
    pub in_flight_age: (u64, u64),
    pub cpu: CpuTime,
    pub wall: Duration,
    /// Open loop: requests that were due in the measured window but never sent.
    pub behind_schedule: u64,
    /// What this thread's first TLS handshake negotiated.
    pub negotiated: Option<Negotiated>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Closed,
    Connecting,
    /// Connected, in the TLS handshake: no request goes before it ends.
    Handshaking,
    Open,
}

/// A request on the wire, waiting for its response.
#[derive(Debug, Clone, Copy)]
struct Pending {
    /// When it was meant to go (open loop) or went (closed loop), in ns since `start`.
    due: u64,
    sent: u64,
    /// HTTP/2: its stream, and when its response's first byte arrived (0: not yet).
    stream: u32,
    first_byte: u64,
}

struct Conn {
    fd: RawFd,
    generation: u32,
    state: State,
    /// The unsent rest of the current send, if one is under way: requests in the run's
    /// RequestSet, or ciphertext in `tls_out`.
    sending: Option<(*const u8, usize)>,
    /// https://: the TLS connection, from TCP's establishment to the close.
    tls: Option<Box<Session>>,
    /// Ciphertext on its way to the kernel, swapped with the session's queue (both keep their
    /// capacity), and never touched while a send from it is under way. A close does not wait
    /// for such a send: the kernel may then read a buffer the next session of the slot reuses,
    /// and send its bytes on the socket being closed, never on another.
    tls_out: Vec<u8>,
    /// When the TLS handshake began (TCP established), in ns since `start`.
    handshake_started: u64,
    pending: VecDeque<Pending>,
    parser: ResponseParser,
    /// An HTTP/2 run: the connection's HTTP/2 state, from TCP (h2c) or the TLS handshake (h2)
    /// to the close.
    h2: Option<Box<crate::h2::Connection>>,
    /// HTTP/2 frames on their way (to the kernel, or to TLS), swapped with the connection's
    /// queue like `tls_out`.
    h2_out: Vec<u8>,
    first_byte: u64,
    /// Round-robin position of the next request.
    next_url: usize,
    /// Requests sent on this connection since it was opened.
    on_connection: u64,
    /// The server said it will close after the last response we are waiting for.
    server_closing: bool,
    connect_started: u64,
    /// Open loop: when this connection's next request is due, in ns since `start`.
    due: u64,
    /// The time it is queued to be woken at, if any.
    wake_at: Option<u64>,
    /// Listed in `Worker::refill`.
    refill: bool,
    /// HTTP/2 in an open loop: the requests whose streams a GOAWAY refused unprocessed, as they
    /// were first sent. They go first on the next connection, timed from when they were due;
    /// meanwhile they are outstanding, and those sent while measuring count as sent, and in
    /// flight if the run ends.
    requeued: VecDeque<Pending>,
    bind: Option<IpAddr>,
}

pub struct Worker<'a> {
    shared: &'a Shared,
    conns: Vec<Conn>,
    counters: Counters,
    latencies: Latencies,
    series: SecondRecorder,
    /// Connections to act on at a time: (time, connection).
    wakes: BinaryHeap<Reverse<(u64, u32)>>,
    /// Connects and TLS handshakes under way, in deadline order (the timeout is the same for
    /// all, and each is queued as it starts): (deadline, connection, generation, the state it
    /// times: `Connecting` or `Handshaking`).
    connect_deadlines: VecDeque<(u64, u32, u32, State)>,
    /// Connections whose pipeline has room, refilled once the whole batch of completions is
    /// in: a server that answers pipelined requests one segment at a time would otherwise get
    /// as many one-request sends, each a packet with its full cost in the kernel.
    refill: Vec<u32>,
    now: u64,
    measure_from: u64,
    /// End of a timed run, in ns since `start`.
    end: u64,
    /// Open loop: ns between two requests of one connection.
    interval: Option<u64>,
    outstanding: usize,
    last_progress: u64,
    /// When a connect was first refused since the last progress: nothing listens any more.
    refused_since: Option<u64>,
    cpu_at_start: Option<CpuTime>,
    /// The wall-clock time of `start` in ns, to put the kernel's arrival stamps on our clock;
    /// taken again at every tick so that a step of the wall clock upsets them for a tick at most.
    realtime_offset: u64,
    /// Service times of the responses since the last tick, warm-up included.
    recent: Recent,
    gather: Gather,
    /// https://: this thread's TLS configuration, with its session store.
    tls_config: Option<Arc<rustls::ClientConfig>>,
    /// Plaintext of the records of one receive, handed to the response parser.
    plaintext: Vec<u8>,
    /// Where the records of one receive are decrypted, in place.
    ciphertext: Vec<u8>,
    negotiated: Option<Negotiated>,
    /// Why the last HTTP/2 connection failed, for the message of a run that ends unanswered.
    last_h2_error: Option<crate::h2::H2Error>,
}

/// Sum and count of service times, in ns.
#[derive(Default)]
struct Recent {
    sum: u64,
    count: u64,
}

/// How long to wait before connecting again after a connect failed: long enough not to spin
/// against a refusing server, short enough not to matter in a run.
const RECONNECT_BACKOFF: u64 = 10_000_000;
/// How long the run goes on after a refused connect with no connect and no response meanwhile:
/// long enough for a listener that is being replaced, far shorter than a run.
const REFUSED_GIVE_UP: u64 = 1_000_000_000;
/// How often request timeouts are checked and the per-second series moves on.
const TICK: u64 = 10_000_000;
/// How long a closed loop lets responses gather before it handles them, and how many
/// (docs/DESIGN-engine.md, "Timing and wake-ups", which has the measurements). Their latencies
/// are the kernel's arrival stamps, so only the next requests can go up to the hold later. During
/// a hold of 1/k of the mean service time the server answers about 1/k of the requests in flight
/// (Little's law) and still has the rest queued, so a short enough hold costs a bottleneck server
/// nothing; at h2o 10 x 10 over HTTP/2, holds of a fifth and a quarter served a little less than
/// an eighth in the quietest rounds.
struct GatherRule {
    /// Wake once reads of 1/`connections_share` of the connections with requests in flight
    /// are in: the rest keep the server busy meanwhile ...
    connections_share: usize,
    /// ... or 1/`service_share` of the recent mean service time after the wait began, if one
    /// is in.
    service_share: u32,
    /// No hold shorter than this.
    min_hold: Duration,
}

/// Over HTTP/1.1, and HTTP/2 with fewer than two streams in flight a connection on average.
/// Below 50 us, arming the kernel's timer for every wait cost the client more than the
/// wake-ups it saved.
const HTTP1_GATHER: GatherRule = GatherRule {
    connections_share: 4,
    service_share: 16,
    min_hold: Duration::from_micros(50),
};
/// Over HTTP/2 with two or more streams in flight a connection on average. Half the
/// connections: a read brings only the part of its connection's responses that has arrived
/// (about 2 of 10 at 10 connections x 10 streams), so the other half and the streams still
/// unanswered keep the server busy. Holds from 20 us, under HTTP/1.1's floor, because each read
/// that wakes a sleeping client costs the server an interrupt to the client's CPU, which a hold
/// ended by the client's own timer does not; an eighth of the service time, not a sixteenth,
/// because at h2o 10 x 10 a sixteenth (14 us) raised the client's CPU a request where an eighth
/// lowered it. Not measured over HTTP/1.1.
const STREAMED_GATHER: GatherRule = GatherRule {
    connections_share: 2,
    service_share: 8,
    min_hold: Duration::from_micros(20),
};
/// A wait gathers only reads that can bring this many responses: fewer are not worth a timer.
const GATHER_MIN_RESPONSES: usize = 4;

/// How a closed loop with `outstanding` requests in flight over `connections` gathers, given the
/// recent mean service time; `multiplexed` over HTTP/2. A read can bring one response over
/// HTTP/1.1 (pipelined ones are counted so too, as the rule was measured) and up to a
/// connection's streams in flight over HTTP/2, and the 4-response floor counts those, so 10
/// connections x 10 streams gather where 10 of HTTP/1.1 do not.
fn gather_for(
    outstanding: usize,
    connections: usize,
    multiplexed: bool,
    service: Duration,
) -> Gather {
    let per_read = if multiplexed {
        (outstanding / connections.max(1)).max(1)
    } else {
        1
    };
    let rule = if per_read > 1 {
        STREAMED_GATHER
    } else {
        HTTP1_GATHER
    };
    let reads = outstanding.min(connections) / rule.connections_share;
    let hold = service / rule.service_share;
    if reads < 2 || reads * per_read < GATHER_MIN_RESPONSES || hold < rule.min_hold {
        return Gather::NONE;
    }
    Gather {
        completions: reads as u32,
        hold,
    }
}

/// The wall-clock time (CLOCK_REALTIME) of `start`, since the epoch.
pub fn wall_clock_of(start: Instant) -> Duration {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .saturating_sub(start.elapsed())
}

fn ns(d: Duration) -> u64 {
    d.as_nanos().min(u64::MAX as u128) as u64
}

impl<'a> Worker<'a> {
    pub fn new(shared: &'a Shared, a: &Assignment, series: Sender<SecondSample>) -> Worker<'a> {
        let spec = &shared.spec;
        let measure_from = ns(spec.warmup);
        let end = match spec.stop {
            Stop::Duration(d) => measure_from + ns(Duration::from_secs_f64(d)),
            Stop::Requests(_) => u64::MAX,
        };
        let interval = a
            .rate
            .map(|r| (a.connections as f64 * 1e9 / r).max(1.0) as u64);
        let total_rate = spec.rate.unwrap_or(1.0);
        let streams = shared.http2.as_ref().map_or(1, |h| h.streams);
        let conns = (0..a.connections)
            .map(|i| {
                let global = a.first_connection + i;
                Conn {
                    fd: -1,
                    generation: 0,
                    state: State::Closed,
                    sending: None,
                    tls: None,
                    tls_out: Vec::new(),
                    handshake_started: 0,
                    pending: VecDeque::with_capacity(spec.pipeline.max(streams) as usize),
                    parser: ResponseParser::new(shared.head_request),
                    h2: None,
                    h2_out: Vec::new(),
                    first_byte: 0,
                    next_url: global % shared.requests.cycle(),
                    on_connection: 0,
                    server_closing: false,
                    connect_started: 0,
                    // Phases spread evenly over all connections of all threads: no microbursts.
                    due: (global as f64 * 1e9 / total_rate) as u64,
                    wake_at: None,
                    refill: false,
                    requeued: VecDeque::new(),
                    bind: (!shared.bind.is_empty())
                        .then(|| shared.bind[global % shared.bind.len()]),
                }
            })
            .collect();
        Worker {
            shared,
            conns,
            counters: Counters::default(),
            latencies: Latencies::default(),
            series: SecondRecorder::new(a.index, series),
            wakes: BinaryHeap::new(),
            connect_deadlines: VecDeque::new(),
            refill: Vec::new(),
            now: 0,
            measure_from,
            end,
            interval,
            outstanding: 0,
            last_progress: 0,
            refused_since: None,
            cpu_at_start: None,
            realtime_offset: 0,
            recent: Recent::default(),
            gather: Gather::NONE,
            tls_config: shared.tls.as_ref().map(|t| t.for_thread(a.connections)),
            plaintext: Vec::new(),
            ciphertext: Vec::new(),
            negotiated: None,
            last_h2_error: None,
        }
    }

    fn clock(&self) -> u64 {
        ns(self.shared.start.elapsed())
    }

    fn token(&self, i: usize) -> Token {
        crate::io::token(i, self.conns[i].generation)
    }

    fn measuring(&self, t: u64) -> bool {
        t >= self.measure_from
    }

    fn second(&self) -> u64 {
        self.now.saturating_sub(self.measure_from) / 1_000_000_000
    }

    fn mark_for_refill(&mut self, i: usize) {
        let c = &mut self.conns[i];
        if !c.refill {
            c.refill = true;
            self.refill.push(i as u32);
        }
    }

    fn schedule(&mut self, i: usize, at: u64) {
        let c = &mut self.conns[i];
        if c.wake_at.is_none_or(|w| at < w) {
            c.wake_at = Some(at);
            self.wakes.push(Reverse((at, i as u32)));
        }
    }

    pub fn run<R: Reactor>(mut self, reactor: &mut R) -> Outcome {
        self.now = self.clock();
        self.last_progress = self.now;
        for i in 0..self.conns.len() {
            self.connect(reactor, i);
        }
        let give_up_after =
            ns(self.shared.spec.connect_timeout + self.shared.spec.request_timeout) + 1_000_000_000;
        let mut next_tick = self.now;
        loop {
            self.now = self.clock();
            if self.cpu_at_start.is_none() && self.measuring(self.now) {
                self.cpu_at_start = Some(CpuTime::of_this_thread());
            }
            if self.now >= self.end || self.shared.stop.load(Ordering::Relaxed) {
                break;
            }
            if self.outstanding == 0 && self.budget_spent() {
                break;
            }
            if self.now.saturating_sub(self.last_progress) > give_up_after {
                let (silence, or) = if self.shared.http2.is_some() {
                    ("no stream answered", " or refused every stream")
                } else {
                    ("no connection and no response", "")
                };
                let why = match self.last_h2_error {
                    Some(e) => format!("the server broke HTTP/2 ({e})"),
                    None => format!("the server stopped answering{or}"),
                };
                self.shared.abort(format!(
                    "{silence} for {:.0} s: {why}",
                    give_up_after as f64 / 1e9
                ));
                break;
            }
            // A refusal is no slow server: it says at once that the server has gone, so a run
            // shorter than the silence above ends early too, not on time with an average over a
            // dead server.
            if self
                .refused_since
                .is_some_and(|t| self.now - t > REFUSED_GIVE_UP)
            {
                self.shared.abort(format!(
                    "the server stopped answering: a connect to {} was refused, and nothing connected or answered in the {:.0} s after (nothing listens there any more)",
                    self.shared.spec.addr,
                    REFUSED_GIVE_UP as f64 / 1e9
                ));
                break;
            }
            while let Some(&Reverse((at, i))) = self.wakes.peek() {
                if at > self.now {
                    break;
                }
                self.wakes.pop();
                let i = i as usize;
                if self.conns[i].wake_at == Some(at) {
                    self.conns[i].wake_at = None;
                    self.wake(reactor, i);
                }
            }
            if self.now >= next_tick {
                self.expire_connects(reactor);
                self.expire_requests(reactor);
                let second = self.second();
                self.series.at(second);
                self.gather = self.next_gather();
                self.realtime_offset = ns(wall_clock_of(self.shared.start));
                next_tick = self.now + TICK;
            }
            let mut until = next_tick.min(self.end);
            if let Some(&Reverse((at, _))) = self.wakes.peek() {
                until = until.min(at);
            }
            let deadline = self.shared.start + Duration::from_nanos(until);
            let mut fresh = false;
            let result = reactor.wait(deadline, self.gather, |r, token, completion| {
                if !fresh {
                    self.now = self.clock();
                    fresh = true;
                }
                self.complete(r, token, completion);
            });
            if let Err(e) = result {
                self.shared
                    .abort(format!("the {} reactor failed: {e}", R::NAME));
                break;
            }
            // Requests sent now are stamped now, not at the batch's first completion: handling
            // a gathered batch takes long enough to show in their latencies.
            if !self.refill.is_empty() {
                self.now = self.clock();
            }
            let mut refill = std::mem::take(&mut self.refill);
            for &i in &refill {
                self.conns[i as usize].refill = false;
                self.send_more(reactor, i as usize);
            }
            refill.clear();
            self.refill = refill;
        }
        self.finish(reactor)
    }

    /// How many responses the next waits may gather, and for how long (see GatherRule).
    /// Not in an open loop, whose requests go at set times. Connect times, which have no
    /// kernel stamp, may be seen up to that hold late.
    fn next_gather(&mut self) -> Gather {
        let recent = std::mem::take(&mut self.recent);
        if self.interval.is_some() {
            return Gather::NONE;
        }
        if recent.count == 0 {
            return self.gather;
        }
        gather_for(
            self.outstanding,
            self.conns.len(),
            self.shared.http2.is_some(),
            Duration::from_nanos(recent.sum / recent.count),
        )
    }

    /// A connect or a response came through: the server is there.
    fn progressed(&mut self) {
        self.last_progress = self.now;
        self.refused_since = None;
    }

    fn budget_spent(&self) -> bool {
        matches!(self.shared.spec.stop, Stop::Requests(_))
            && self.shared.tickets.load(Ordering::Relaxed) == 0
    }

    fn finish<R: Reactor>(self, reactor: &mut R) -> Outcome {
        let ended = self.now.min(self.end);
        let mut in_flight = 0;
        let mut in_flight_age = (0, 0);
        let mut behind = 0;
        for i in 0..self.conns.len() {
            let c = &self.conns[i];
            let measured = c.pending.iter().filter(|p| p.sent >= self.measure_from);
            let requeued = c.requeued.iter().filter(|p| p.sent >= self.measure_from);
            for due in measured.chain(requeued).map(|p| p.due) {
                in_flight += 1;
                let age = ended.saturating_sub(due);
                in_flight_age = (in_flight_age.0 + age, in_flight_age.1.max(age));
            }
            if let (Some(interval), true) = (self.interval, ended > c.due) {
                behind += (ended - c.due.max(self.measure_from)) / interval;
            }
            if c.fd >= 0 {
                reactor.close(self.token(i), c.fd);
            }
        }
        // Closes are submitted on this last call; nothing it reports matters any more.
        let _ = reactor.wait(Instant::now(), Gather::NONE, |_, _, _| {});
        let second = ended.saturating_sub(self.measure_from) / 1_000_000_000;
        self.series.finish(second);
        let wall = Duration::from_nanos(ended.saturating_sub(self.measure_from));
        let cpu = self
            .cpu_at_start
            .map(|s| CpuTime::of_this_thread().since(s))
            .unwrap_or_default();
        Outcome {
            counters: self.counters,
            latencies: self.latencies,
            in_flight,
            in_flight_age,
            cpu,
            wall,
            behind_schedule: behind,
            negotiated: self.negotiated,
        }
    }

    fn connect<R: Reactor>(&mut self, reactor: &mut R, i: usize) {
        if self.now >= self.end || (self.budget_spent() && self.conns[i].requeued.is_empty()) {
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
                c.state = State::Connecting;
                c.connect_started = self.now;
                let deadline = self.now + ns(self.shared.spec.connect_timeout);
                self.connect_deadlines.push_back((
                    deadline,
                    i as u32,
                    c.generation,
                    State::Connecting,
                ));
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

    /// A connect or a TLS handshake failed, or took too long: give up its socket.
    fn connect_ended<R: Reactor>(&mut self, reactor: &mut R, i: usize, class: ErrorClass) {
        reactor.close(self.token(i), self.conns[i].fd);
        self.conns[i].fd = -1;
        self.conns[i].tls = None;
        self.connect_failed(i, class);
    }

    fn connect_failed(&mut self, i: usize, class: ErrorClass) {
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
        self.schedule(i, self.now + RECONNECT_BACKOFF);
    }

    /// A connection's timer went off: reconnect it, or send what has become due.
    fn wake<R: Reactor>(&mut self, reactor: &mut R, i: usize) {
        match self.conns[i].state {
            State::Closed => self.connect(reactor, i),
            State::Open => self.send_more(reactor, i),
            State::Connecting | State::Handshaking => {}
        }
    }

    fn close<R: Reactor>(&mut self, reactor: &mut R, i: usize) {
        let token = self.token(i);
        let c = &mut self.conns[i];
        if c.fd >= 0 {
            reactor.close(token, c.fd);
        }
        c.fd = -1;
        c.state = State::Closed;
        c.sending = None;
        c.tls = None;
        c.h2 = None;
        c.server_closing = false;
        c.on_connection = 0;
        c.parser.reset();
        self.outstanding -= c.pending.len();
        c.pending.clear();
    }

    /// Close and, unless the run is over, open again.
    fn reconnect<R: Reactor>(&mut self, reactor: &mut R, i: usize) {
        self.close(reactor, i);
        self.connect(reactor, i);
    }

    /// The connection failed: every request still on it fails with `class`.
    fn fail<R: Reactor>(&mut self, reactor: &mut R, i: usize, class: ErrorClass) {
        self.count_failed(i, self.conns[i].pending.len(), class);
        self.reconnect(reactor, i);
    }

    /// The first `n` requests waiting on connection `i` failed with `class`.
    fn count_failed(&mut self, i: usize, n: usize, class: ErrorClass) {
        let timeout = ns(self.shared.spec.request_timeout);
        let mut failed = 0;
        for p in self.conns[i].pending.iter().take(n) {
            if !self.measuring(p.sent) {
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
    fn expire_connects<R: Reactor>(&mut self, reactor: &mut R) {
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

    fn expire_requests<R: Reactor>(&mut self, reactor: &mut R) {
        if self.outstanding == 0 {
            return;
        }
        let timeout = ns(self.shared.spec.request_timeout);
        for i in 0..self.conns.len() {
            // Oldest first: the expired requests are the first ones.
            let pending = &self.conns[i].pending;
            let expired = pending
                .iter()
                .take_while(|p| self.now - p.sent >= timeout)
                .count();
            if expired == 0 {
                continue;
            }
            // HTTP/2 streams are independent: those that expired are cancelled, the connection
            // goes on, unless nothing on it is younger (then it is the connection that hangs).
            if self.conns[i].h2.is_some() && expired < pending.len() {
                self.cancel_streams(reactor, i, expired);
            } else {
                self.fail(reactor, i, ErrorClass::Timeout);
            }
        }
    }

    /// Put as many requests on the wire as the pipeline, the schedule and the budget allow, in
    /// one send.
    fn send_more<R: Reactor>(&mut self, reactor: &mut R, i: usize) {
        if self.conns[i].h2.is_some() {
            return self.send_streams(reactor, i);
        }
        let spec = &self.shared.spec;
        let c = &self.conns[i];
        if c.state != State::Open || c.sending.is_some() || c.server_closing || self.now >= self.end
        {
            return;
        }
        // A closed loop refills a pipeline once all of it is answered, as wrk's pipelining does:
        // each send is a packet whose kernel cost dwarfs the request's, and servers answer
        // pipelined requests in separate segments, so topping it up per response would double
        // the packets. An open loop sends what is due whenever the pipeline has room.
        if self.interval.is_none() && !c.pending.is_empty() {
            return;
        }
        let k = self.claim_due(i, spec.pipeline as u64 - c.pending.len() as u64);
        if k == 0 {
            return;
        }
        let c = &mut self.conns[i];
        let data = self.shared.requests.window(c.next_url, k as usize);
        for _ in 0..k {
            let due = self.next_due(i);
            self.conns[i].pending.push_back(Pending {
                due,
                sent: self.now,
                stream: 0,
                first_byte: 0,
            });
        }
        let c = &mut self.conns[i];
        c.next_url = (c.next_url + k as usize) % self.shared.requests.cycle();
        c.on_connection += k;
        self.outstanding += k as usize;
        if let Some(tls) = c.tls.as_mut() {
            match tls.write(data) {
                Ok(()) => self.flush_tls(reactor, i),
                Err(_) => self.fail(reactor, i, ErrorClass::TlsProtocol),
            }
            return;
        }
        c.sending = Some((data.as_ptr(), data.len()));
        let (fd, token) = (c.fd, self.token(i));
        // SAFETY: `data` lives in the run's RequestSet, which outlives every worker.
        unsafe { reactor.send(token, fd, data.as_ptr(), data.len()) };
    }

    /// How many of `room` requests connection `i` sends now: no more than its requests per
    /// connection allow, than are due (open loop; a wake is set for the next), and than the
    /// budget has left. They are counted as sent.
    fn claim_due(&mut self, i: usize, room: u64) -> u64 {
        let c = &self.conns[i];
        let mut k = room;
        if let Some(limit) = self.shared.spec.requests_per_connection {
            k = k.min(limit - c.on_connection);
        }
        if let Some(interval) = self.interval {
            let due = if c.due <= self.now {
                (self.now - c.due) / interval + 1
            } else {
                0
            };
            if due < k {
                self.schedule(i, c.due + due * interval);
            }
            k = k.min(due);
        }
        if k == 0 {
            return 0;
        }
        if self.measuring(self.now) {
            k = self.shared.claim(k);
            self.counters.sent += k;
        }
        k
    }

    /// When connection `i`'s next request was meant to go: its place in the open loop's
    /// schedule, or now.
    fn next_due(&mut self, i: usize) -> u64 {
        let c = &mut self.conns[i];
        match self.interval {
            Some(interval) => {
                c.due += interval;
                c.due - interval
            }
            None => self.now,
        }
    }

    fn complete<R: Reactor>(&mut self, reactor: &mut R, token: Token, completion: Completion<'_>) {
        let i = slot_of(token);
        if i >= self.conns.len() || self.token(i) != token || self.conns[i].fd < 0 {
            return; // about a socket closed since
        }
        if self.now >= self.end {
            return; // past the end of a timed run: what is still on its way stays in flight
        }
        match completion {
            Completion::Connected => {
                // Over TLS the server is there once a handshake ends, over HTTP/2 once a stream
                // is answered: one that accepts connections and never finishes a handshake, or
                // refuses every stream, must not keep a run going.
                if self.shared.tls.is_none() && self.shared.http2.is_none() {
                    self.progressed();
                }
                let c = &mut self.conns[i];
                c.state = State::Open;
                let started = c.connect_started;
                let took = self.now - started;
                if self.measuring(started) {
                    self.counters.connects += 1;
                    record_ns(&mut self.latencies.connect, took);
                }
                if self.shared.tls.is_some() {
                    self.start_handshake(reactor, i);
                } else {
                    self.start_h2(i);
                    self.send_more(reactor, i);
                }
            }
            Completion::ConnectFailed(errno) => {
                self.connect_ended(reactor, i, ErrorClass::of_connect(errno))
            }
            Completion::Sent(n) => {
                if self.measuring(self.now) {
                    self.counters.bytes_written += n as u64;
                }
                let c = &mut self.conns[i];
                let Some((ptr, len)) = c.sending else { return };
                if n < len {
                    // SAFETY: the rest of the same RequestSet window or `tls_out`.
                    let rest = unsafe { ptr.add(n) };
                    c.sending = Some((rest, len - n));
                    let fd = c.fd;
                    unsafe { reactor.send(token, fd, rest, len - n) };
                } else {
                    c.sending = None;
                    self.flush_h2(reactor, i);
                    self.flush_tls(reactor, i);
                    if self.conns[i].sending.is_none() {
                        self.mark_for_refill(i);
                    }
                }
            }
            Completion::SendFailed(errno) | Completion::RecvFailed(errno) => {
                self.fail(reactor, i, ErrorClass::of_transfer(errno));
            }
            Completion::Received(data, arrived) => {
                // The kernel's clock for arrivals is CLOCK_REALTIME; a stamp that does not fall
                // before now (the wall clock was stepped) is taken as now.
                let at = arrived
                    .and_then(|t| t.checked_sub(self.realtime_offset))
                    .map_or(self.now, |t| t.min(self.now));
                if self.conns[i].tls.is_some() {
                    self.tls_received(reactor, i, data, at);
                } else {
                    if self.measuring(self.now) {
                        self.counters.bytes_read += data.len() as u64;
                    }
                    self.received(reactor, i, data, at);
                }
            }
            Completion::Eof => self.eof(reactor, i),
        }
    }

    /// Hand connection `i`'s parser (HTTP/1.x) or HTTP/2 state to `parse` with a sink that
    /// accounts for every response it completes; returns what `parse` returned and whether a
    /// response came unasked.
    fn parse<T>(
        &mut self,
        i: usize,
        at: u64,
        parse: impl FnOnce(&mut ResponseParser, Option<&mut crate::h2::Connection>, &mut Sink<'_>) -> T,
    ) -> (T, bool) {
        let second = self.second();
        let c = &mut self.conns[i];
        let mut sink = Sink {
            at,
            now: self.now,
            measure_from: self.measure_from,
            expect_length: self.shared.expect_length,
            pending: &mut c.pending,
            first_byte: &mut c.first_byte,
            server_closing: &mut c.server_closing,
            counters: &mut self.counters,
            latencies: &mut self.latencies,
            recent: &mut self.recent,
            series: self.series.at(second),
            done: 0,
            given_back: 0,
            unsolicited: false,
        };
        let out = parse(&mut c.parser, c.h2.as_deref_mut(), &mut sink);
        let (done, unsolicited) = (sink.done, sink.unsolicited);
        self.outstanding -= done;
        if done > sink.given_back {
            self.progressed();
        }
        (out, unsolicited)
    }

    /// Response bytes `data` arrived at `at` (ns since `start`).
    fn received<R: Reactor>(&mut self, reactor: &mut R, i: usize, data: &[u8], at: u64) {
        if self.conns[i].h2.is_some() {
            return self.h2_received(reactor, i, data, at);
        }
        match self.parse(i, at, |parser, _, sink| parser.feed(data, sink)) {
            (Err(_), _) | (Ok(()), true) => self.fail(reactor, i, ErrorClass::Protocol),
            (Ok(()), false) => self.after_responses(reactor, i),
        }
    }

    /// Decide what a connection does once responses have arrived.
    fn after_responses<R: Reactor>(&mut self, reactor: &mut R, i: usize) {
        let shared = self.shared;
        let spec = &shared.spec;
        let c = &self.conns[i];
        if !c.pending.is_empty() {
            if !c.server_closing {
                self.mark_for_refill(i);
            }
            return;
        }
        let spent = spec
            .requests_per_connection
            .is_some_and(|limit| c.on_connection >= limit);
        if c.server_closing {
            if self.measuring(self.now) {
                self.counters.server_closes += 1;
            }
            self.reconnect(reactor, i);
        } else if spent {
            self.reconnect(reactor, i);
        } else {
            self.mark_for_refill(i);
        }
    }

    fn eof<R: Reactor>(&mut self, reactor: &mut R, i: usize) {
        let c = &mut self.conns[i];
        if c.state == State::Handshaking {
            self.connect_ended(reactor, i, ErrorClass::TlsHandshake);
            return;
        }
        // Without close_notify, a close may be an attacker's truncation: inside a body it is a
        // TLS failure; between responses, as most servers close, none.
        let truncated = c.tls.as_ref().is_some_and(|tls| !tls.peer_closed());
        let class = if c.h2.is_some() {
            ErrorClass::Eof
        } else {
            let (outcome, _) = self.parse(i, self.now, |parser, _, sink| parser.feed_eof(sink));
            match outcome {
                EofOutcome::MidBody if truncated => ErrorClass::TlsProtocol,
                EofOutcome::MidBody => ErrorClass::LengthMismatch,
                _ => ErrorClass::Eof,
            }
        };
        if self.conns[i].pending.is_empty() {
            if self.measuring(self.now) {
                self.counters.server_closes += 1;
            }
            self.reconnect(reactor, i);
        } else {
            self.fail(reactor, i, class);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS2: Duration = Duration::from_millis(2);

    fn gathers(completions: u32, hold_us: u64) -> Gather {
        Gather {
            completions,
            hold: Duration::from_micros(hold_us),
        }
    }

    #[test]
    fn http1_gathers_from_a_quarter_of_its_connections_once_that_is_four_responses() {
        assert_eq!(gather_for(10, 10, false, MS2), Gather::NONE);
        assert_eq!(gather_for(16, 16, false, MS2), gathers(4, 125));
        assert_eq!(gather_for(100, 100, false, MS2), gathers(25, 125));
        // Pipelined responses count one a read, as before HTTP/2 came.
        assert_eq!(gather_for(128, 8, false, MS2), Gather::NONE);
    }

    #[test]
    fn http2_gathers_from_half_its_connections_counting_the_responses_a_read_brings() {
        assert_eq!(gather_for(100, 10, true, MS2), gathers(5, 250));
        assert_eq!(gather_for(10_000, 100, true, MS2), gathers(50, 250));
        // One stream a connection is HTTP/1.1's case.
        assert_eq!(gather_for(10, 10, true, MS2), Gather::NONE);
        assert_eq!(gather_for(16, 16, true, MS2), gathers(4, 125));
        // Half of few connections too: the hold bounds the wait.
        assert_eq!(gather_for(8, 4, true, MS2), gathers(2, 250));
        assert_eq!(gather_for(400, 4, true, MS2), gathers(2, 250));
        // Fewer than 2 streams in flight a connection on average: the quarter, as HTTP/1.1.
        assert_eq!(gather_for(19, 10, true, MS2), Gather::NONE);
        assert_eq!(gather_for(20, 10, true, MS2), gathers(5, 250));
    }

    #[test]
    fn no_gathering_under_a_timer_worth_arming() {
        let us = Duration::from_micros;
        assert_eq!(gather_for(100, 100, false, us(790)), Gather::NONE);
        assert_eq!(gather_for(100, 100, false, us(800)), gathers(25, 50));
        // With streams to spare, an eighth from 20 us (h2o at 10 x 10: 28 us).
        assert_eq!(gather_for(100, 10, true, us(159)), Gather::NONE);
        assert_eq!(gather_for(100, 10, true, us(160)), gathers(5, 20));
    }
}
