//! One engine thread: its share of the connections, their state machines, and its tallies.
//!
//! Written once against [`Reactor`] completions. Every request that is sent is accounted for
//! exactly once: completed, failed in one error class, or in flight when the run ended.
//!
//! `mod.rs` has the thread's loop and what it reports; `conn.rs` a connection's opening,
//! failure and closing; `schedule.rs` when requests are due and how many the budget allows;
//! `gather.rs` how long a wait lets responses gather; `http1.rs`, `h2.rs` and `tls.rs` each
//! protocol's path; `sink.rs` the accounting of each response.

use std::collections::VecDeque;
use std::net::IpAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::Sender;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::http::request::RequestSet;
use crate::io::{slot_of, Completion, Gather, Reactor, SockAddr, Token};
use crate::spec::{Resolved, Stop};
use crate::stats::cpu::CpuTime;
use crate::stats::series::{SecondRecorder, SecondSample};
use crate::stats::ticks::TickRecorder;
use crate::stats::{Counters, ErrorClass, Latencies};
use crate::tls::{Negotiated, TlsClient};

use conn::{Conn, State};
use gather::Recent;
pub use h2::Http2;
pub use schedule::Budget;
use schedule::{Alarms, Schedule};
use tls::ThreadTls;
pub use warmup::Warmup;

mod arrivals;
mod conn;
mod gather;
mod h2;
mod http1;
mod retry;
mod schedule;
mod sink;
mod tls;
mod warmup;

/// What all threads of a run share.
pub struct Shared {
    pub spec: Resolved,
    pub requests: RequestSet,
    pub mix: crate::mix::Mix,
    pub head_request: bool,
    pub answers: crate::stats::sizes::Answers,
    /// The spec's `expect_status`: what an answer must have to have succeeded.
    pub expect_status: Vec<u16>,
    pub addr: SockAddr,
    pub bind: Vec<IpAddr>,
    /// https://: how connections speak TLS.
    pub tls: Option<TlsClient>,
    /// An HTTP/2 run: its requests and streams per connection.
    pub http2: Option<Http2>,
    /// What is left of the requests of a run that stops after a count.
    pub budget: Budget,
    /// Set to end the run early (Ctrl-C, or a thread that found the server gone).
    pub stop: AtomicBool,
    /// Why a thread ended the run early, if one did.
    pub abort_reason: std::sync::Mutex<Option<String>>,
    /// Why the server cannot be measured as the spec asks, if a thread found out under load (the
    /// validation request finds out first, when there is one): the run's error, not a report.
    pub refusal: std::sync::Mutex<Option<crate::Error>>,
    /// Time zero of the run: load starts here, measurement once the warm-up is over.
    pub start: Instant,
    pub warmup: Warmup,
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
    pub cpu: CpuTime,
    pub wall: Duration,
    /// Open loop: requests that were due in the measured window but never sent.
    pub behind_schedule: u64,
    /// What this thread's first TLS handshake negotiated.
    pub negotiated: Option<Negotiated>,
    /// The fine series, if the spec asks for it.
    pub ticks: Option<crate::report::Ticks>,
}

pub struct Worker<'a> {
    shared: &'a Shared,
    conns: Vec<Conn>,
    counters: Counters,
    latencies: Latencies,
    series: SecondRecorder,
    /// The fine series, if the spec asks for it, until the window's tallies are taken.
    ticks: Option<TickRecorder>,
    /// When each connection is next to be woken.
    alarms: Alarms,
    /// Connects and TLS handshakes under way, in deadline order (the timeout is the same for
    /// all, and each is queued as it starts): (deadline, connection, generation, the state it
    /// times: `Connecting` or `Handshaking`).
    connect_deadlines: VecDeque<(u64, u32, u32, State)>,
    /// Connections whose pipeline has room, refilled once the whole batch of completions is
    /// in: a server that answers pipelined requests one segment at a time would otherwise get
    /// as many one-request sends, each a packet with its full cost in the kernel.
    refill: Vec<u32>,
    now: u64,
    /// When measurement starts, in ns since `start`; `u64::MAX` while a warm-up of the
    /// connections has not decided it.
    measure_from: u64,
    /// End of a timed run, in ns since `start`.
    end: u64,
    /// When each request is due.
    schedule: Schedule,
    /// A replay's place in the log, shared by the thread's connections (see `Mix::Replay`).
    replay: crate::mix::Cursor,
    outstanding: usize,
    /// Past the end, reading what is still on its way (the spec's `drain`).
    draining: bool,
    /// What the thread measured, taken when the window ended with answers still to drain.
    taken: Option<Outcome>,
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
    tls: ThreadTls,
    /// Why the last HTTP/2 connection failed, for the message of a run that ends unanswered.
    last_h2_error: Option<crate::h2::H2Error>,
}

/// How long the run goes on after a refused connect with no connect and no response meanwhile:
/// long enough for a listener that is being replaced, far shorter than a run.
const REFUSED_GIVE_UP: u64 = 1_000_000_000;
/// How often request timeouts are checked and the per-second series moves on.
const TICK: u64 = 10_000_000;

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

/// The end of a run that measures from `from`: a timed run's, or none.
fn end_after(stop: &Stop, from: u64) -> u64 {
    match *stop {
        Stop::Duration(d) => from.saturating_add(ns(Duration::from_secs_f64(d))),
        Stop::Requests(_) => u64::MAX,
    }
}

impl<'a> Worker<'a> {
    pub fn new(shared: &'a Shared, a: &Assignment, series: Sender<SecondSample>) -> Worker<'a> {
        let spec = &shared.spec;
        let measure_from = shared.warmup.at(0).unwrap_or(u64::MAX);
        let streams = shared.http2.as_ref().map_or(1, |h| h.streams);
        let in_flight = spec.pipeline.max(streams) as usize;
        Worker {
            shared,
            conns: (0..a.connections)
                .map(|i| Conn::new(shared, a.first_connection + i, in_flight))
                .collect(),
            counters: Counters::default(),
            latencies: Latencies::default(),
            series: SecondRecorder::new(a.index, series),
            ticks: spec
                .tick
                .map(|ns| TickRecorder::new(ns, &Counters::default())),
            alarms: Alarms::new(a.connections),
            connect_deadlines: VecDeque::new(),
            refill: Vec::new(),
            now: 0,
            measure_from,
            end: end_after(&spec.stop, measure_from),
            schedule: Schedule::new(
                a,
                spec.rate.unwrap_or(1.0),
                spec.arrivals,
                spec.seed,
                (&shared.mix, spec.threads as usize),
            ),
            replay: shared.mix.cursor(a.index),
            outstanding: 0,
            draining: false,
            taken: None,
            last_progress: 0,
            refused_since: None,
            cpu_at_start: None,
            realtime_offset: 0,
            recent: Recent::default(),
            gather: Gather::NONE,
            tls: ThreadTls::new(shared.tls.as_ref(), a.connections),
            last_h2_error: None,
        }
    }

    fn end_after(&self, from: u64) -> u64 {
        end_after(&self.shared.spec.stop, from)
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

    pub fn run<R: Reactor>(mut self, reactor: &mut R) -> Outcome {
        self.now = self.clock();
        self.last_progress = self.now;
        for i in 0..self.conns.len() {
            self.connect(reactor, i);
        }
        let give_up_after =
            ns(self.shared.spec.connect_timeout + self.shared.spec.request_timeout) + 1_000_000_000;
        // Beside slow clients a server that stops answering the load is what is measured, and
        // a server restarted on purpose (`keep_going`) comes back: the run goes on to its end,
        // its refused connects and timeouts counted, never cut short.
        let patient = self.shared.spec.slow.is_some() || self.shared.spec.keep_going;
        let mut next_tick = self.now;
        loop {
            self.now = self.clock();
            self.follow_warmup();
            self.follow_ticks();
            if self.cpu_at_start.is_none() && self.measuring(self.now) {
                self.cpu_at_start = Some(CpuTime::of_this_thread());
            }
            if self.now >= self.end || self.shared.stop.load(Ordering::Relaxed) {
                break;
            }
            if self.outstanding == 0 && self.shared.budget.spent() {
                break;
            }
            // Connections held after their warm-up are silent by choice, not the server's.
            if !patient
                && !self.warming()
                && self.now.saturating_sub(self.last_progress) > give_up_after
            {
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
            if !patient
                && self
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
            self.ring_alarms(reactor);
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
            if let Some(at) = self.alarms.next() {
                until = until.min(at);
            }
            let deadline = self.shared.start + Duration::from_nanos(until);
            let mut fresh = false;
            let result = reactor.wait(deadline, self.gather, |r, token, completion| {
                if !fresh {
                    self.now = self.clock();
                    self.follow_ticks();
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

    /// A connect or a response came through: the server is there.
    fn progressed(&mut self) {
        self.last_progress = self.now;
        self.refused_since = None;
    }

    /// What the thread measured, taken at the end: requests still unanswered count as in
    /// flight, aged to the end here, or by the drain after it to their answer, their failure
    /// or the drain's end.
    fn measured(&mut self) -> Outcome {
        let ended = self.now.min(self.end);
        let in_flight = self.age_in_flight(ended, !self.shared.spec.drain);
        let second = ended.saturating_sub(self.measure_from) / 1_000_000_000;
        self.series.finish(second);
        let wall = Duration::from_nanos(ended.saturating_sub(self.measure_from));
        let cpu = self
            .cpu_at_start
            .map(|s| CpuTime::of_this_thread().since(s))
            .unwrap_or_default();
        let window = ended.saturating_sub(self.measure_from);
        let ticks = self.ticks.take().map(|t| t.finish(window, &self.counters));
        Outcome {
            ticks,
            counters: std::mem::take(&mut self.counters),
            latencies: std::mem::take(&mut self.latencies),
            in_flight,
            cpu,
            wall,
            behind_schedule: self.schedule.behind(ended, self.measure_from),
            negotiated: self.tls.negotiated.clone(),
        }
    }

    /// The requests sent in the window and still unanswered; each aged to `ended` if `age`.
    fn age_in_flight(&mut self, ended: u64, age: bool) -> u64 {
        let mut in_flight = 0;
        for c in &self.conns {
            let measured = c.pending.iter().filter(|p| p.sent >= self.measure_from);
            let requeued = c.requeued.iter().filter(|p| p.sent >= self.measure_from);
            for due in measured.chain(requeued).map(|p| p.due) {
                in_flight += 1;
                if age {
                    self.latencies.record_in_flight(ended.saturating_sub(due));
                }
            }
        }
        in_flight
    }

    /// Reads the answers still on their way, sending nothing and counting nothing (the tallies
    /// were taken) but their ages, until none is left, the request timeout has passed or the run
    /// is stopped: the window's requests still unanswered then are aged to then, as the run
    /// really ended, not to the window's end, where those answered meanwhile came later.
    fn drain<R: Reactor>(&mut self, reactor: &mut R) {
        self.draining = true;
        let deadline = self.now + ns(self.shared.spec.request_timeout);
        while self.outstanding > 0 && !self.shared.stop.load(Ordering::Relaxed) {
            self.now = self.clock();
            if self.now >= deadline {
                break;
            }
            let until = self.shared.start + Duration::from_nanos((self.now + TICK).min(deadline));
            let result = reactor.wait(until, Gather::NONE, |r, token, completion| {
                self.now = self.clock();
                self.complete(r, token, completion);
            });
            // Nothing is sent after the end, so a connection with room has nothing to refill.
            for i in std::mem::take(&mut self.refill) {
                self.conns[i as usize].refill = false;
            }
            if result.is_err() {
                break;
            }
        }
    }

    fn finish<R: Reactor>(mut self, reactor: &mut R) -> Outcome {
        let mut outcome = match self.taken.take() {
            Some(taken) => taken,
            None => self.measured(),
        };
        if self.shared.spec.drain {
            self.drain(reactor);
            self.age_in_flight(self.now, true);
            outcome.latencies.add(&self.latencies);
        }
        for i in 0..self.conns.len() {
            let c = &self.conns[i];
            if c.fd >= 0 {
                reactor.close(self.token(i), c.fd);
            }
        }
        // Closes are submitted on this last call; nothing it reports matters any more.
        let _ = reactor.wait(Instant::now(), Gather::NONE, |_, _, _| {});
        outcome
    }

    fn complete<R: Reactor>(&mut self, reactor: &mut R, token: Token, completion: Completion<'_>) {
        let i = slot_of(token);
        if i >= self.conns.len() || self.token(i) != token || self.conns[i].fd < 0 {
            return; // about a socket closed since
        }
        if self.now >= self.end && !self.draining {
            if !self.shared.spec.drain {
                return; // past the end of a timed run: what is still on its way stays in flight
            }
            // The window's tallies are taken now, and this answer read as the drain's: dropped
            // unread, its connection would read no more, and the drain wait out the timeout.
            self.taken = Some(self.measured());
            self.draining = true;
        }
        match completion {
            Completion::Connected => self.connected(reactor, i),
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
                self.transfer_failed(reactor, i, ErrorClass::of_transfer(errno));
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
}
