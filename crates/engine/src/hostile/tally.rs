//! What the connections beside the load are counted in: each kind's states as they change, the
//! states each second, and the report's figures.

use hdrhistogram::Histogram;

use crate::report::{IdleConnections, Millis, SlowClients, StatePoint};
use crate::spec::{Resolved, SlowMode};
use crate::stats::histogram;

use super::conn::{Role, State};

/// One kind's counts (idle or slow).
struct Kind {
    asked: u64,
    pending: u64,
    connected: u64,
    /// Closed by the server so far.
    closed: u64,
    /// Came up (slow), or had their first answer (idle).
    opened: u64,
    failed: u64,
    settled: u64,
    /// Milliseconds each connection the server closed had been open (slow) or idle (idle).
    closed_after: Histogram<u64>,
    /// Slow: answers the server sent.
    answered: u64,
    /// Slow: closed at their hold.
    expired: u64,
    /// Idle: requests that kept them alive, and those that failed.
    pings: u64,
    pings_failed: u64,
    /// The states each second since the thread's origin.
    series: Vec<StatePoint>,
}

impl Kind {
    fn new(asked: u32) -> Kind {
        Kind {
            asked: asked.into(),
            pending: 0,
            connected: 0,
            closed: 0,
            opened: 0,
            failed: 0,
            settled: 0,
            closed_after: histogram(),
            answered: 0,
            expired: 0,
            pings: 0,
            pings_failed: 0,
            series: Vec::new(),
        }
    }
}

pub(super) struct Tally {
    mode: Option<SlowMode>,
    idle: Kind,
    slow: Kind,
}

impl Tally {
    pub(super) fn new(spec: &Resolved) -> Tally {
        Tally {
            mode: spec.slow.as_ref().map(|s| s.mode),
            idle: Kind::new(spec.idle.as_ref().map_or(0, |i| i.connections)),
            slow: Kind::new(spec.slow.as_ref().map_or(0, |s| s.clients)),
        }
    }

    fn kind(&mut self, role: Role) -> &mut Kind {
        match role {
            Role::Idle => &mut self.idle,
            Role::Slow => &mut self.slow,
        }
    }

    /// A connection of `role` went from state `from` to `to`.
    pub(super) fn moved(&mut self, role: Role, from: State, to: State) {
        let k = self.kind(role);
        for (state, step) in [(from, -1i64), (to, 1)] {
            let count = if state.pending() {
                &mut k.pending
            } else if state == State::Open {
                &mut k.connected
            } else {
                continue;
            };
            *count = count.saturating_add_signed(step);
        }
    }

    pub(super) fn settle(&mut self, role: Role) {
        self.kind(role).settled += 1;
    }

    /// Every connection came up or failed once.
    pub(super) fn settled(&self) -> bool {
        self.idle.settled >= self.idle.asked && self.slow.settled >= self.slow.asked
    }

    pub(super) fn opened(&mut self, role: Role) {
        self.kind(role).opened += 1;
    }

    pub(super) fn failed(&mut self, role: Role) {
        self.kind(role).failed += 1;
    }

    /// The server closed a connection of `role` after `ns` open (slow) or idle (idle).
    pub(super) fn closed_by_server(&mut self, role: Role, ns: u64) {
        let k = self.kind(role);
        k.closed += 1;
        k.closed_after.saturating_record((ns / 1_000_000).max(1));
    }

    /// A slow connection had an answer.
    pub(super) fn answered(&mut self) {
        self.slow.answered += 1;
    }

    /// A slow connection was closed at its hold.
    pub(super) fn expired(&mut self) {
        self.slow.expired += 1;
    }

    /// An idle connection's ping went.
    pub(super) fn ping(&mut self) {
        self.idle.pings += 1;
    }

    /// An idle connection's ping failed.
    pub(super) fn ping_failed(&mut self) {
        self.idle.pings_failed += 1;
    }

    /// The states at `now` (ns since the origin), as that whole second's.
    pub(super) fn sample(&mut self, now: u64) {
        let second = (now as f64 / 1e9).round() as i64;
        for k in [&mut self.idle, &mut self.slow] {
            if k.asked == 0 {
                continue;
            }
            let point = StatePoint {
                second,
                pending: k.pending,
                connected: k.connected,
                closed: k.closed,
            };
            match k.series.last_mut() {
                Some(last) if last.second == second => *last = point,
                _ => k.series.push(point),
            }
        }
    }

    /// Connections open now: (slow, idle).
    pub(super) fn held(&self) -> (u64, u64) {
        (self.slow.connected, self.idle.connected)
    }

    pub(super) fn slow_report(&mut self, held: u64) -> Option<SlowClients> {
        let mode = self.mode?;
        let k = &mut self.slow;
        Some(SlowClients {
            mode: mode.name().into(),
            connections: k.asked,
            opened: k.opened,
            failed: k.failed,
            held,
            cut_by_server: k.closed,
            cut_after_ms: Millis::of(&k.closed_after),
            answered: k.answered,
            expired: k.expired,
            series: std::mem::take(&mut k.series),
        })
    }

    pub(super) fn idle_report(&mut self, held: u64) -> Option<IdleConnections> {
        let k = &mut self.idle;
        (k.asked > 0).then(|| IdleConnections {
            asked: k.asked,
            opened: k.opened,
            held,
            closed_by_server: k.closed,
            closed_after_ms: Millis::of(&k.closed_after),
            pings: k.pings,
            pings_failed: k.pings_failed,
            series: std::mem::take(&mut k.series),
        })
    }
}
