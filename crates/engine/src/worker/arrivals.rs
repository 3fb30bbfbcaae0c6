//! Poisson arrivals: one stream of requests per engine thread at exponential gaps, each handed
//! to whichever of the thread's connections is free, as independent users arrive at a site.
//! A timed access log arrives the same way, at the log's times instead of random gaps: thread t
//! of T takes the log's entries t, t+T, t+2T..., so that together the threads send every entry
//! at its time, each to whichever connection is free then.
//!
//! Paced per connection instead (each its own Poisson stream, as even arrivals are paced), a gap
//! shorter than an answer makes the next request wait for its own connection while others idle,
//! and that wait reads as the server's latency: p99 doubled at 25 req/s on a 50 ms server. An
//! arrival no connection is free for waits in the thread's queue (its latency counted from when
//! it arrived), and the first connection to come free takes the oldest.

use std::collections::VecDeque;

use crate::mix::{SplitMix64, Timed};

use super::schedule::Alarms;
use super::Assignment;

pub(super) struct Arrivals {
    /// When the arrivals after `next` come: read ahead from a copy.
    times: Times,
    /// A timed log's entries, apart from `times` so that a copy takes no reference count.
    log: Option<Timed>,
    /// When the first arrival not yet taken comes, in ns since `start`.
    next: u64,
    /// A timed log's: this thread's first entry, and the entry taken last.
    first: u64,
    taken: u64,
    /// Connections free to take an arrival, oldest first; an entry whose flag in `free` is off
    /// went busy since.
    waiting: VecDeque<u32>,
    free: Vec<bool>,
    /// The alarm that hands out the next arrival: one past the connections' own.
    alarm: usize,
}

/// Arrival streams apart from the URL draws of the same seed, whose connection 0 is thread 0.
const ARRIVALS: u64 = 0x6172_7269_7661_6c73;

/// Where a thread's arrivals come from, at the one after `next`.
#[derive(Clone)]
enum Times {
    /// Exponential gaps of this mean (ns) from this thread's stream.
    Poisson { mean_gap: f64, draws: SplitMix64 },
    /// This thread's entries of a timed log: every `stride`-th, from `entry`, at their times
    /// from `origin`.
    Log {
        entry: u64,
        stride: u64,
        origin: u64,
    },
}

impl Times {
    /// When the arrival after one at `at` comes (`log`: the timed log's entries, if any).
    fn after(&mut self, at: u64, log: Option<&Timed>) -> u64 {
        match self {
            Times::Poisson { mean_gap, draws } => at + gap(draws, *mean_gap),
            Times::Log {
                entry,
                stride,
                origin,
            } => {
                let timed = log.expect("a Log's arrivals hold their log");
                let came = *origin + timed.time(*entry);
                *entry += *stride;
                came
            }
        }
    }

    /// Start over from `from`: a log from its first entry of this thread's.
    fn restart(&mut self, from: u64, first: u64) {
        if let Times::Log { entry, origin, .. } = self {
            (*entry, *origin) = (first, from);
        }
    }
}

/// An exponential gap of mean `mean_gap` from the next number of `draws`.
fn gap(draws: &mut SplitMix64, mean_gap: f64) -> u64 {
    // Uniform in (0, 1]: never 0, whose logarithm has no end.
    let u = ((draws.next_u64() >> 11) + 1) as f64 / (1u64 << 53) as f64;
    (-u.ln() * mean_gap) as u64
}

impl Arrivals {
    /// Thread `a`'s arrivals at `rate`, of the run's `seed`: the same arrivals every run.
    pub(super) fn new(a: &Assignment, rate: f64, seed: u64) -> Arrivals {
        let times = Times::Poisson {
            mean_gap: 1e9 / rate,
            draws: SplitMix64::stream(seed ^ ARRIVALS, a.index as u64),
        };
        Arrivals::of(a, times, None)
    }

    /// Thread `a`'s entries of a timed log sent by `threads` threads.
    pub(super) fn timed(a: &Assignment, timed: Timed, threads: usize) -> Arrivals {
        let times = Times::Log {
            entry: a.index as u64,
            stride: threads as u64,
            origin: 0,
        };
        Arrivals::of(a, times, Some(timed))
    }

    fn of(a: &Assignment, mut times: Times, log: Option<Timed>) -> Arrivals {
        Arrivals {
            next: times.after(0, log.as_ref()),
            times,
            log,
            first: a.index as u64,
            taken: a.index as u64,
            waiting: VecDeque::with_capacity(a.connections),
            free: vec![false; a.connections],
            alarm: a.connections,
        }
    }

    /// A timed log's entry taken last (its first before any): the URL its request asks for.
    pub(super) fn taken(&self) -> u64 {
        self.taken
    }

    /// How many of `room` arrivals have come by `now` and are not taken, and, when that is
    /// fewer, when the next comes.
    pub(super) fn due(&self, now: u64, room: u64) -> (u64, Option<u64>) {
        let (mut ready, mut at, mut times) = (0, self.next, self.times.clone());
        while at <= now && ready < room {
            at = times.after(at, self.log.as_ref());
            ready += 1;
        }
        if ready < room {
            (ready, Some(at))
        } else {
            (room, None)
        }
    }

    /// Connection `i` takes `ready` of `room` arrivals: with room left it waits for the next,
    /// coming at `next`; full, it is no longer free.
    pub(super) fn claimed(
        &mut self,
        i: usize,
        ready: u64,
        room: u64,
        next: Option<u64>,
        alarms: &mut Alarms,
    ) {
        if ready >= room {
            self.free[i] = false;
            return;
        }
        if !self.free[i] {
            self.free[i] = true;
            self.waiting.push_back(i as u32);
        }
        // The next arrival after what it took; or, having taken one of several due, the next
        // due now, for the next free connection.
        alarms.set(self.alarm, next.unwrap_or(self.next));
    }

    /// The arrival taken next: when it came.
    pub(super) fn take(&mut self) -> u64 {
        let came = self.next;
        if let Times::Log { entry, stride, .. } = &self.times {
            self.taken = *entry - *stride;
        }
        self.next = self.times.after(came, self.log.as_ref());
        came
    }

    /// Entries on the queue of free connections (some may have gone busy since): at most
    /// this many wake-ups hand out what has come.
    pub(super) fn free_waiting(&self) -> usize {
        self.waiting.len()
    }

    /// The free connection that has waited longest, off the queue.
    pub(super) fn next_free(&mut self) -> Option<usize> {
        while let Some(i) = self.waiting.pop_front() {
            let i = i as usize;
            if std::mem::take(&mut self.free[i]) {
                return Some(i);
            }
        }
        None
    }

    /// Ring again when the next arrival comes, if a connection is free for it.
    pub(super) fn rearm(&self, alarms: &mut Alarms) {
        if !self.waiting.is_empty() {
            alarms.set(self.alarm, self.next);
        }
    }

    /// Whether `i` is the alarm that hands out arrivals rather than a connection's.
    pub(super) fn is_alarm(&self, i: usize) -> bool {
        i == self.alarm
    }

    /// Arrive again from `from`, every connection free: what came while the connections
    /// warmed up is dropped, not sent in a burst at the start of measurement.
    pub(super) fn restart(&mut self, from: u64, alarms: &mut Alarms) {
        self.times.restart(from, self.first);
        self.next = self.times.after(from, self.log.as_ref());
        for i in 0..self.free.len() {
            if !self.free[i] {
                self.free[i] = true;
                self.waiting.push_back(i as u32);
            }
        }
        alarms.set(self.alarm, self.next);
    }

    /// Arrivals that came between `measure_from` and `ended` and were never taken.
    pub(super) fn behind(&self, ended: u64, measure_from: u64) -> u64 {
        let (mut at, mut times, mut behind) = (self.next, self.times.clone(), 0);
        while at < ended {
            behind += u64::from(at >= measure_from);
            at = times.after(at, self.log.as_ref());
        }
        behind
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn thread(connections: usize, rate: f64) -> Arrivals {
        let a = Assignment {
            index: 0,
            first_connection: 0,
            connections,
            rate: Some(rate),
            cpu: None,
        };
        Arrivals::new(&a, rate, 0)
    }

    #[test]
    fn gaps_are_exponential_with_the_mean_of_the_rate() {
        let arrivals = thread(1, 1000.0);
        let n = 200_000;
        let Times::Poisson {
            mean_gap,
            mut draws,
        } = arrivals.times.clone()
        else {
            unreachable!()
        };
        let gaps: Vec<u64> = (0..n).map(|_| gap(&mut draws, mean_gap)).collect();
        let mean = gaps.iter().sum::<u64>() as f64 / n as f64;
        assert!((mean / 1e6 - 1.0).abs() < 0.01, "{mean}");
        // Exponential: 1/e of the gaps are longer than the mean, 1 - 1/e^0.1 shorter than a tenth.
        let longer = gaps.iter().filter(|&&g| g > 1_000_000).count() as f64 / n as f64;
        assert!((longer - (-1f64).exp()).abs() < 0.01, "{longer}");
        let short = gaps.iter().filter(|&&g| g < 100_000).count() as f64 / n as f64;
        assert!((short - (1.0 - (-0.1f64).exp())).abs() < 0.01, "{short}");
    }

    #[test]
    fn reading_ahead_agrees_with_taking() {
        let mut arrivals = thread(1, 1000.0);
        let (ready, next) = arrivals.due(5_000_000, 100);
        let taken: Vec<u64> = (0..ready).map(|_| arrivals.take()).collect();
        assert!(taken.iter().all(|&t| t <= 5_000_000) && next == Some(arrivals.next));
        assert!(arrivals.next > 5_000_000);
        assert!(taken.windows(2).all(|w| w[0] <= w[1]));
    }

    #[test]
    fn the_longest_free_connection_takes_the_next_arrival() {
        let mut arrivals = thread(3, 1000.0);
        let mut alarms = Alarms::new(4);
        arrivals.claimed(2, 0, 1, Some(7), &mut alarms);
        arrivals.claimed(0, 0, 1, Some(7), &mut alarms);
        arrivals.claimed(2, 0, 1, Some(7), &mut alarms); // still free: queued once
        assert_eq!(alarms.next(), Some(7));
        // 2 goes busy on an arrival of its own: 0 is next, then nobody.
        arrivals.claimed(2, 1, 1, None, &mut alarms);
        assert_eq!(arrivals.next_free(), Some(0));
        assert_eq!(arrivals.next_free(), None);
    }
}
