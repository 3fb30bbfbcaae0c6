//! When requests go: the run's budget of requests, each connection's place in an open loop's
//! schedule, and the alarms that wake a connection when its next request is due (or when it may
//! connect again).
//!
//! The connection state machines ask these how many requests may go now and what each was due
//! at; they never look at the loop's kind themselves, so another way of pacing is another
//! `Schedule`, not another branch in them.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::io::Reactor;
use crate::mix::Mix;
use crate::spec::{Arrivals as Spacing, Stop};

use super::arrivals::Arrivals;
use super::{Assignment, Worker};

/// The requests a run that stops after a count has still to send, shared by its threads.
pub struct Budget {
    /// None: the run stops after a time, and any number may go.
    left: Option<AtomicU64>,
}

impl Budget {
    pub fn of(stop: &Stop) -> Budget {
        Budget {
            left: match stop {
                Stop::Requests(n) => Some(AtomicU64::new(*n)),
                Stop::Duration(_) => None,
            },
        }
    }

    /// Take up to `k` requests.
    pub(super) fn claim(&self, k: u64) -> u64 {
        let Some(left) = &self.left else { return k };
        let mut now = left.load(Ordering::Relaxed);
        loop {
            let take = k.min(now);
            if take == 0 {
                return 0;
            }
            match left.compare_exchange_weak(now, now - take, Ordering::Relaxed, Ordering::Relaxed)
            {
                Ok(_) => return take,
                Err(seen) => now = seen,
            }
        }
    }

    /// `n` requests taken were not sent after all: another thread may send them.
    pub(super) fn give_back(&self, n: u64) {
        if let Some(left) = &self.left {
            left.fetch_add(n, Ordering::Relaxed);
        }
    }

    pub(super) fn spent(&self) -> bool {
        self.left
            .as_ref()
            .is_some_and(|left| left.load(Ordering::Relaxed) == 0)
    }
}

/// When one thread's requests are due.
pub(super) enum Schedule {
    /// Each request goes when the one before it on its connection is answered (a whole
    /// pipeline at once): it is due when it goes.
    Closed,
    /// Each connection sends at a set pace, whether or not the server keeps up.
    Open {
        /// ns between two requests of one connection.
        interval: u64,
        /// When each connection's next request is due, in ns since `start`.
        due: Vec<u64>,
        /// Each connection's first due time: its phase, spread over the interval.
        phase: Vec<u64>,
    },
    /// Requests arrive at random, or at a timed log's times, whether or not the server keeps
    /// up, each taken by whichever connection is free.
    Arrivals(Arrivals),
}

impl Schedule {
    /// `total_rate` is the whole run's, over which the phases of all connections of all threads
    /// are spread evenly: no microbursts.
    /// A timed `mix` sets its own pace, shared out over `threads`.
    pub(super) fn new(
        a: &Assignment,
        total_rate: f64,
        spacing: Spacing,
        seed: u64,
        (mix, threads): (&Mix, usize),
    ) -> Schedule {
        if let Mix::Timed(timed) = mix {
            return Schedule::Arrivals(Arrivals::timed(a, timed.clone(), threads));
        }
        let Some(rate) = a.rate else {
            return Schedule::Closed;
        };
        if spacing == Spacing::Poisson {
            return Schedule::Arrivals(Arrivals::new(a, rate, seed));
        }
        let phase: Vec<u64> = (0..a.connections)
            .map(|i| ((a.first_connection + i) as f64 * 1e9 / total_rate) as u64)
            .collect();
        Schedule::Open {
            interval: (a.connections as f64 * 1e9 / rate).max(1.0) as u64,
            due: phase.clone(),
            phase,
        }
    }

    /// Start again at `from`, waking the connections that held after their warm-up: what a
    /// warm-up of the connections left unsent (due while they connected) is dropped, not sent
    /// in a burst at the start of measurement.
    pub(super) fn restart(&mut self, from: u64, alarms: &mut Alarms) {
        match self {
            Schedule::Open { due, phase, .. } => {
                for (i, (due, phase)) in due.iter_mut().zip(phase.iter()).enumerate() {
                    *due = from + phase;
                    alarms.set(i, *due);
                }
            }
            Schedule::Closed => {
                for i in 0..alarms.connections() {
                    alarms.set(i, from);
                }
            }
            Schedule::Arrivals(arrivals) => arrivals.restart(from, alarms),
        }
    }

    pub(super) fn is_open(&self) -> bool {
        !matches!(self, Schedule::Closed)
    }

    /// How many of `room` requests one connection may take at once: Poisson arrivals go one to
    /// a connection, so that a burst goes to the free connections in turn, not pipelined
    /// behind each other on one.
    fn at_once(&self, room: u64) -> u64 {
        match self {
            Schedule::Arrivals(_) => room.min(1),
            _ => room,
        }
    }

    /// Connection `i` took `k` of `room` requests, the next due at `next`: its alarm set for
    /// then, or, under Poisson arrivals, the connection queued as free while it has room.
    fn claimed(&mut self, i: usize, k: u64, room: u64, next: Option<u64>, alarms: &mut Alarms) {
        match self {
            Schedule::Arrivals(arrivals) => arrivals.claimed(i, k, room, next, alarms),
            _ => {
                if let Some(at) = next {
                    alarms.set(i, at);
                }
            }
        }
    }

    /// How many of `room` requests connection `i` may send at `now`, and, when that is fewer,
    /// when the next of them is due.
    pub(super) fn due(&self, i: usize, now: u64, room: u64) -> (u64, Option<u64>) {
        let (interval, due) = match self {
            Schedule::Closed => return (room, None),
            Schedule::Arrivals(arrivals) => return arrivals.due(now, room),
            Schedule::Open { interval, due, .. } => (interval, due),
        };
        let next = due[i];
        let ready = if next <= now {
            (now - next) / interval + 1
        } else {
            0
        };
        if ready < room {
            (ready, Some(next + ready * interval))
        } else {
            (room, None)
        }
    }

    /// When connection `i`'s next request was meant to go, its place moving on to the one
    /// after.
    pub(super) fn take_next(&mut self, i: usize, now: u64) -> u64 {
        match self {
            Schedule::Closed => now,
            Schedule::Arrivals(arrivals) => arrivals.take(),
            Schedule::Open { interval, due, .. } => {
                due[i] += *interval;
                due[i] - *interval
            }
        }
    }

    /// Requests that were due between `measure_from` and `ended` and never went.
    pub(super) fn behind(&self, ended: u64, measure_from: u64) -> u64 {
        let (interval, due) = match self {
            Schedule::Closed => return 0,
            Schedule::Arrivals(arrivals) => return arrivals.behind(ended, measure_from),
            Schedule::Open { interval, due, .. } => (interval, due),
        };
        due.iter()
            .filter(|&&next| ended > next)
            .map(|&next| ended.saturating_sub(next.max(measure_from)) / interval)
            .sum()
    }
}

/// When each connection is next to be acted on: a reconnect after a back-off, or its next
/// request in an open loop.
pub(super) struct Alarms {
    /// (time, connection), soonest first; an entry whose connection was set for another time
    /// since is stale.
    queue: BinaryHeap<Reverse<(u64, u32)>>,
    at: Vec<Option<u64>>,
}

impl Alarms {
    /// Alarms for `connections`, and one more for the run's own use (Poisson arrivals).
    pub(super) fn new(connections: usize) -> Alarms {
        Alarms {
            queue: BinaryHeap::new(),
            at: vec![None; connections + 1],
        }
    }

    pub(super) fn connections(&self) -> usize {
        self.at.len() - 1
    }

    /// Wake connection `i` at `at`, unless it is to be woken sooner.
    pub(super) fn set(&mut self, i: usize, at: u64) {
        if self.at[i].is_none_or(|w| at < w) {
            self.at[i] = Some(at);
            self.queue.push(Reverse((at, i as u32)));
        }
    }

    /// When the soonest is set for.
    pub(super) fn next(&self) -> Option<u64> {
        self.queue.peek().map(|&Reverse((at, _))| at)
    }

    /// A connection whose time has come by `now`, taken off.
    pub(super) fn pop_due(&mut self, now: u64) -> Option<usize> {
        while let Some(&Reverse((at, i))) = self.queue.peek() {
            if at > now {
                return None;
            }
            self.queue.pop();
            let i = i as usize;
            if self.at[i] == Some(at) {
                self.at[i] = None;
                return Some(i);
            }
        }
        None
    }
}

impl Worker<'_> {
    /// How many of `room` requests connection `i` sends now: no more than its requests per
    /// connection allow, than are due (an alarm is set for the next), and than the budget has
    /// left. They are counted as sent.
    pub(super) fn claim_due(&mut self, i: usize, room: u64) -> u64 {
        if self.holding(i) {
            // Woken when measurement starts: by `restart` while that is undecided, else here (an
            // alarm pending from before the decision kept `restart`'s later one from being set).
            if !self.warming() {
                self.alarms.set(i, self.measure_from);
            }
            return 0;
        }
        let mut room = room;
        if let Some(limit) = self.shared.spec.requests_per_connection {
            room = room.min(limit - self.conns[i].on_connection);
        }
        let take = self.schedule.at_once(room);
        let (due, next) = self.schedule.due(i, self.now, take);
        let mut k = if due == 0 && take > 0 && self.priming(i) {
            1
        } else {
            due
        };
        if k > 0 && self.measuring(self.now) {
            k = self.shared.budget.claim(k);
            self.counters.sent += k;
        }
        self.schedule.claimed(i, k, room, next, &mut self.alarms);
        k
    }

    /// The URL of connection `i`'s next request: a timed log's entry taken last, a replay's
    /// next of the thread's, or the connection's pick.
    pub(super) fn next_url(&mut self, i: usize) -> usize {
        match (&self.schedule, &self.shared.mix) {
            (Schedule::Arrivals(arrivals), Mix::Timed(timed)) => timed.url(arrivals.taken()),
            (_, mix @ Mix::Replay { .. }) => mix.pick(&mut self.replay),
            (_, mix) => mix.pick(&mut self.conns[i].cursor),
        }
    }

    /// When connection `i`'s next request was meant to go: its place in the schedule.
    pub(super) fn next_due(&mut self, i: usize) -> u64 {
        // A warm-up's first request, sent ahead of its place: the schedule keeps the place.
        if self.priming(i) && self.schedule.due(i, self.now, 1).0 == 0 {
            return self.now;
        }
        self.schedule.take_next(i, self.now)
    }

    /// `n` requests counted as sent were not: they go back to the budget, to be sent again.
    pub(super) fn give_back(&mut self, n: u64) {
        if n == 0 || !self.measuring(self.now) {
            return;
        }
        self.counters.sent -= n;
        self.shared.budget.give_back(n);
    }

    /// Wake the connections whose alarms have gone off: reconnect them, or send what has
    /// become due.
    pub(super) fn ring_alarms<R: Reactor>(&mut self, reactor: &mut R) {
        while let Some(i) = self.alarms.pop_due(self.now) {
            match &self.schedule {
                Schedule::Arrivals(arrivals) if arrivals.is_alarm(i) => self.hand_out(reactor),
                _ => self.wake(reactor, i),
            }
        }
    }

    /// Hand the arrivals that have come to the connections free longest; what no connection
    /// is free for waits for the first to come free.
    /// Each free connection is woken once a ring at most; one that takes nothing (still
    /// connecting, or the budget spent) is free again only at its next event.
    fn hand_out<R: Reactor>(&mut self, reactor: &mut R) {
        let Schedule::Arrivals(arrivals) = &self.schedule else {
            return;
        };
        if self.shared.budget.spent() {
            return;
        }
        for _ in 0..arrivals.free_waiting() {
            let Schedule::Arrivals(arrivals) = &mut self.schedule else {
                return;
            };
            if arrivals.due(self.now, 1).0 == 0 {
                return arrivals.rearm(&mut self.alarms);
            }
            let Some(i) = arrivals.next_free() else {
                return;
            };
            self.wake(reactor, i);
        }
    }
}
