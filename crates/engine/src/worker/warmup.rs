//! When measurement starts: one moment for every thread of a run.
//!
//! A fixed warm-up is known before the run. A warm-up of the connections (the spec's
//! `warmup_connections`) ends once every connection has answered a request, so that its connect
//! and TLS handshake fall before the measured window: the thread whose connection answers last
//! sets the moment, a little ahead so that every thread sees it before it comes (each looks at
//! least once a tick), and duration budgets count from it.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use crate::spec::Resolved;

use super::{ns, Worker, TICK};

/// Not decided yet.
const UNDECIDED: u64 = u64::MAX;
/// How far ahead of the last answer the moment is set: two ticks, each thread looking at least
/// once in each.
const AHEAD: u64 = 2 * TICK;
/// A warm-up of the connections lasts at most this long, or the spec's `warmup` if longer: a
/// server that leaves a connection unanswered must not hold the run off. Long enough for 1,000
/// full TLS handshakes on one server CPU (about 1 ms of nginx's CPU each: 1,000 connections
/// were all answered within 1 s here).
const WARMUP_CONNECTIONS_BOUND: Duration = Duration::from_secs(2);

pub struct Warmup {
    /// When measurement starts, in ns since the run's start.
    from: AtomicU64,
    /// Connections of the run that have not answered yet.
    unanswered: AtomicUsize,
    /// The spec's `warmup`: no sooner.
    least: u64,
    /// No later.
    bound: u64,
}

impl Warmup {
    pub fn of(spec: &Resolved) -> Warmup {
        let least = ns(spec.warmup);
        if !spec.warmup_connections {
            return Warmup {
                from: AtomicU64::new(least),
                unanswered: AtomicUsize::new(0),
                least,
                bound: least,
            };
        }
        Warmup {
            from: AtomicU64::new(UNDECIDED),
            unanswered: AtomicUsize::new(spec.connections as usize),
            least,
            bound: least.max(ns(WARMUP_CONNECTIONS_BOUND)),
        }
    }

    /// When measurement starts, if decided; the first decision stands.
    fn decide(&self, at: u64) -> u64 {
        let at = at.clamp(self.least, self.bound);
        match self
            .from
            .compare_exchange(UNDECIDED, at, Ordering::Relaxed, Ordering::Relaxed)
        {
            Ok(_) => at,
            Err(decided) => decided,
        }
    }

    /// A connection answered for the first time, at `now`.
    fn answered(&self, now: u64) {
        if self.unanswered.fetch_sub(1, Ordering::Relaxed) == 1 {
            self.decide(now + AHEAD);
        }
    }

    /// When measurement starts as seen at `now`: decided once every connection has answered,
    /// or when the bound is near.
    pub(super) fn at(&self, now: u64) -> Option<u64> {
        match self.from.load(Ordering::Relaxed) {
            UNDECIDED if now + AHEAD >= self.bound => Some(self.decide(self.bound)),
            UNDECIDED => None,
            decided => Some(decided),
        }
    }

    /// When measurement started, once the run is over (at the bound, if nothing decided it).
    pub fn started(&self) -> u64 {
        self.at(self.bound).unwrap_or(self.bound)
    }
}

impl Worker<'_> {
    /// Still warming the connections up, the moment measurement starts not yet known.
    pub(super) fn warming(&self) -> bool {
        self.measure_from == UNDECIDED
    }

    /// Take the run's measurement start once it is known, and the end of a timed run from it.
    pub(super) fn follow_warmup(&mut self) {
        if !self.warming() {
            return;
        }
        if let Some(from) = self.shared.warmup.at(self.now) {
            self.measure_from = from;
            self.end = self.end_after(from);
            self.schedule.restart(from, &mut self.alarms);
        }
    }

    /// Connection `i` completed a response: the first on its slot ends its part of the warm-up.
    pub(super) fn answered(&mut self, i: usize) {
        let c = &mut self.conns[i];
        if !c.answered {
            c.answered = true;
            if self.shared.spec.warmup_connections {
                self.shared.warmup.answered(self.now);
            }
        }
    }

    /// Connection `i` answered its warm-up and waits for measurement to start: a warm-up of the
    /// connections is a request on each, not a load, so that the server sees the budget and one
    /// request per connection (a closed loop sent 20,000 more while one connection was 0.3 s
    /// late). The spec's own `warmup` is a load, and runs as one until its time is up.
    pub(super) fn holding(&self, i: usize) -> bool {
        self.shared.spec.warmup_connections
            && self.conns[i].answered
            && !self.measuring(self.now)
            && self.now >= self.shared.warmup.least
    }

    /// Warming up in an open loop, connection `i` sends its first request at once rather than
    /// at its place in the schedule, which may be seconds away at a low rate.
    pub(super) fn priming(&self, i: usize) -> bool {
        let c = &self.conns[i];
        self.warming() && !c.answered && c.pending.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn warmup(warmup: f64, connections: u32) -> Warmup {
        let spec = crate::LoadSpec {
            urls: vec!["http://127.0.0.1:1/".into()],
            connections,
            warmup,
            warmup_connections: true,
            ..Default::default()
        };
        Warmup::of(&spec.resolve().unwrap())
    }

    const MS: u64 = 1_000_000;

    #[test]
    fn the_last_connection_to_answer_sets_one_moment_ahead_for_every_thread() {
        let w = warmup(0.0, 2);
        w.answered(MS);
        assert_eq!(w.at(2 * MS), None);
        w.answered(3 * MS);
        assert_eq!(w.at(3 * MS), Some(3 * MS + AHEAD));
        // Decided once: the bound passing later changes nothing.
        assert_eq!(w.at(10_000 * MS), Some(3 * MS + AHEAD));
    }

    #[test]
    fn no_sooner_than_the_specs_warmup_and_no_later_than_the_bound() {
        let w = warmup(0.5, 1);
        w.answered(0);
        assert_eq!(w.at(0), Some(500 * MS));
        let w = warmup(0.0, 1);
        let bound = ns(WARMUP_CONNECTIONS_BOUND);
        assert_eq!(w.at(bound - AHEAD - 1), None);
        assert_eq!(w.at(bound - AHEAD), Some(bound));
        w.answered(bound + 5 * MS);
        assert_eq!(w.at(bound + 5 * MS), Some(bound));
        let w = warmup(3.0, 1);
        assert_eq!(w.at(3_000 * MS), Some(3_000 * MS));
    }
}
