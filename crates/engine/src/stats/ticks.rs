//! One thread's fine series (the spec's `tick_ms`): its counts per point taken as differences
//! of its tallies at the points' boundaries, so that no error path counts twice, and its
//! latencies recorded into the one histogram of the current point, compacted to pairs when the
//! point is over: memory grows by a point's pairs, never by a histogram per point.

use hdrhistogram::Histogram;

use crate::report::ticks::{pairs, tick_histogram, TickPoint, Ticks};

use super::{Counters, ErrorClass};

/// The tallies a point counts, at its start.
#[derive(Clone, Copy)]
struct Mark {
    completed: u64,
    errors: [u64; ErrorClass::ALL.len()],
    closed_by_server: u64,
}

impl Mark {
    fn of(c: &Counters) -> Mark {
        Mark {
            completed: c.completed,
            errors: c.errors,
            closed_by_server: c.closed_by_server,
        }
    }
}

pub struct TickRecorder {
    interval_ns: u64,
    interval_ms: u32,
    /// The current point's index.
    index: u64,
    mark: Mark,
    /// The current point's latencies, in us.
    pub latency: Histogram<u64>,
    points: Vec<TickPoint>,
}

impl TickRecorder {
    /// A series of `interval_ns` points, whose first starts with `counters` as they are.
    pub fn new(interval_ns: u64, counters: &Counters) -> TickRecorder {
        TickRecorder {
            interval_ns,
            interval_ms: (interval_ns / 1_000_000) as u32,
            index: 0,
            mark: Mark::of(counters),
            latency: tick_histogram(),
            points: Vec::new(),
        }
    }

    /// Move on to the point `elapsed_ns` (since measurement started) falls in, closing the
    /// points before it with what `counters` counted since their start (the first closed all of
    /// it, those after it nothing).
    #[inline]
    pub fn at(&mut self, elapsed_ns: u64, counters: &Counters) {
        let index = elapsed_ns / self.interval_ns;
        while self.index < index {
            self.close(counters);
        }
    }

    fn close(&mut self, counters: &Counters) {
        let now = Mark::of(counters);
        let errors = ErrorClass::ALL
            .iter()
            .map(|&c| (c, now.errors[c as usize] - self.mark.errors[c as usize]))
            .filter(|&(_, n)| n > 0)
            .map(|(c, n)| (c.name().to_string(), n))
            .collect();
        self.points.push(TickPoint {
            at_ms: self.index * u64::from(self.interval_ms),
            requests: now.completed - self.mark.completed,
            errors,
            closed_by_server: now.closed_by_server - self.mark.closed_by_server,
            latency_us: pairs(&self.latency),
        });
        self.latency.reset();
        self.mark = now;
        self.index += 1;
    }

    /// The series of a window that ended `ended_ns` after it started: its last point is the one
    /// the end falls in, unless the end is its very start (a point past it holds nothing).
    pub fn finish(mut self, ended_ns: u64, counters: &Counters) -> Ticks {
        self.at(ended_ns.saturating_sub(1), counters);
        if self.index * self.interval_ns < ended_ns {
            self.close(counters);
        }
        Ticks {
            interval_ms: self.interval_ms,
            points: self.points,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn points_count_what_happened_in_them_empty_ones_included() {
        let mut c = Counters::default();
        let mut t = TickRecorder::new(100_000_000, &c);
        c.completed = 3;
        t.latency.record(250).unwrap();
        t.at(150_000_000, &c);
        c.completed = 5;
        c.error(ErrorClass::Retryable, 2);
        c.closed_by_server = 1;
        t.at(350_000_000, &c);
        let ticks = t.finish(400_000_000, &c);
        assert_eq!(ticks.interval_ms, 100);
        let got: Vec<(u64, u64, u64, usize)> = ticks
            .points
            .iter()
            .map(|p| (p.at_ms, p.requests, p.closed_by_server, p.errors.len()))
            .collect();
        assert_eq!(
            got,
            [(0, 3, 0, 0), (100, 2, 1, 1), (200, 0, 0, 0), (300, 0, 0, 0)]
        );
        assert_eq!(ticks.points[1].errors["retryable"], 2);
        assert_eq!(ticks.points[0].latency_us, [(250, 1)]);
        assert!(ticks.points[1].latency_us.is_empty());
    }
}
