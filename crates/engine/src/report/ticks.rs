//! The fine series (`ticks`): what each point of a few to a thousand milliseconds of the
//! measured window carried, with its latencies kept whole (sparse histogram pairs), so that any
//! window of points (an event's, the seconds before it) gives exact counts and percentiles of
//! 2 significant digits. Threads', hosts' and rounds' series are merged by adding point to point.

use std::collections::BTreeMap;

use hdrhistogram::Histogram;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The significant digits of a point's latencies: 1% buckets, enough for a p99 of a spike and
/// small enough for thousands of points.
pub const TICK_DIGITS: u8 = 2;

/// A point's latency histogram, in microseconds, 1 us to 60 s.
pub fn tick_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 60_000_000, TICK_DIGITS).expect("constant bounds are valid")
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Ticks {
    /// Each point's length, in milliseconds (the spec's `tick_ms`).
    pub interval_ms: u32,
    /// Every point of the measured window, in order, empty ones included.
    pub points: Vec<TickPoint>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TickPoint {
    /// The point's start, in ms from the start of the measured window (after the warm-up, the
    /// origin of `timeseries`).
    pub at_ms: u64,
    /// Answers completed in the point.
    pub requests: u64,
    /// Errors counted in the point, by class (only the classes with some).
    pub errors: BTreeMap<String, u64>,
    /// Connections the server ended in the point: EOF, reset, `Connection: close` or GOAWAY.
    pub closed_by_server: u64,
    /// The point's latencies (as `latency.total` times them), as [value_us, count] pairs in
    /// ascending value, each value the top of its bucket of an HdrHistogram of 2 significant
    /// digits.
    pub latency_us: Vec<(u64, u64)>,
}

impl TickPoint {
    pub fn empty(at_ms: u64) -> TickPoint {
        TickPoint {
            at_ms,
            requests: 0,
            errors: BTreeMap::new(),
            closed_by_server: 0,
            latency_us: Vec::new(),
        }
    }

    fn add(&mut self, o: &TickPoint) {
        self.requests += o.requests;
        self.closed_by_server += o.closed_by_server;
        for (class, n) in &o.errors {
            *self.errors.entry(class.clone()).or_insert(0) += n;
        }
        let mut latency: BTreeMap<u64, u64> = self.latency_us.iter().copied().collect();
        for &(value, n) in &o.latency_us {
            *latency.entry(value).or_insert(0) += n;
        }
        self.latency_us = latency.into_iter().collect();
    }
}

/// What a window of points carried.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct WindowFigures {
    pub requests: u64,
    /// By class, only the classes with some.
    pub errors: BTreeMap<String, u64>,
    pub closed_by_server: u64,
    /// Percentiles and largest of the window's latencies (2 significant digits); 0 without any.
    pub p50_us: u64,
    pub p99_us: u64,
    pub max_us: u64,
}

impl Ticks {
    /// One series from `parts` (a run's threads, hosts or rounds) of one interval: points added
    /// by `at_ms`, every point from the first to the last present. Rounds are laid over one
    /// another, not end to end: a level's rounds share its schedule of events.
    pub fn merge<'a>(parts: impl IntoIterator<Item = &'a Ticks>) -> Result<Option<Ticks>, String> {
        let mut merged: Option<Ticks> = None;
        for part in parts {
            let m = merged.get_or_insert_with(|| Ticks {
                interval_ms: part.interval_ms,
                points: Vec::new(),
            });
            if m.interval_ms != part.interval_ms {
                return Err(format!(
                    "fine series of {} ms and {} ms points do not add up",
                    m.interval_ms, part.interval_ms
                ));
            }
            for p in &part.points {
                let index = (p.at_ms / u64::from(m.interval_ms)) as usize;
                while m.points.len() <= index {
                    let at_ms = m.points.len() as u64 * u64::from(m.interval_ms);
                    m.points.push(TickPoint::empty(at_ms));
                }
                m.points[index].add(p);
            }
        }
        Ok(merged)
    }

    /// What the points starting from `from_ms` (included) to `to_ms` (excluded) carried.
    pub fn window(&self, from_ms: u64, to_ms: u64) -> WindowFigures {
        let mut sum = TickPoint::empty(from_ms);
        let mut latency = tick_histogram();
        for p in self
            .points
            .iter()
            .filter(|p| (from_ms..to_ms).contains(&p.at_ms))
        {
            sum.requests += p.requests;
            sum.closed_by_server += p.closed_by_server;
            for (class, n) in &p.errors {
                *sum.errors.entry(class.clone()).or_insert(0) += n;
            }
            for &(value, n) in &p.latency_us {
                latency.saturating_record_n(value, n);
            }
        }
        let q = |x: f64| {
            if latency.is_empty() {
                0
            } else {
                latency.value_at_quantile(x)
            }
        };
        WindowFigures {
            requests: sum.requests,
            errors: sum.errors,
            closed_by_server: sum.closed_by_server,
            p50_us: q(0.5),
            p99_us: q(0.99),
            max_us: if latency.is_empty() {
                0
            } else {
                latency.highest_equivalent(latency.max())
            },
        }
    }
}

/// A histogram's recorded buckets as [value, count] pairs, each value its bucket's top.
pub fn pairs(h: &Histogram<u64>) -> Vec<(u64, u64)> {
    h.iter_recorded()
        .map(|v| (v.value_iterated_to(), v.count_at_value()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(at_ms: u64, requests: u64, errors: &[(&str, u64)], latencies: &[u64]) -> TickPoint {
        let mut h = tick_histogram();
        for &v in latencies {
            h.record(v).unwrap();
        }
        TickPoint {
            at_ms,
            requests,
            errors: errors.iter().map(|&(c, n)| (c.to_string(), n)).collect(),
            closed_by_server: requests / 10,
            latency_us: pairs(&h),
        }
    }

    #[test]
    fn merged_points_add_by_time_and_value_and_fill_gaps() {
        let a = Ticks {
            interval_ms: 100,
            points: vec![
                point(0, 10, &[], &[100, 100, 200]),
                point(100, 20, &[("reset", 2)], &[300]),
            ],
        };
        let b = Ticks {
            interval_ms: 100,
            points: vec![
                point(0, 30, &[("reset", 1)], &[100, 5000]),
                point(300, 1, &[("retryable", 1)], &[]),
            ],
        };
        let m = Ticks::merge([&a, &b]).unwrap().unwrap();
        assert_eq!(
            m.points.iter().map(|p| p.at_ms).collect::<Vec<_>>(),
            [0, 100, 200, 300]
        );
        let first = &m.points[0];
        assert_eq!((first.requests, first.closed_by_server), (40, 4));
        assert_eq!(first.errors, BTreeMap::from([("reset".into(), 1)]));
        assert_eq!(first.latency_us[0], (100, 3));
        assert_eq!(first.latency_us.iter().map(|p| p.1).sum::<u64>(), 5);
        assert_eq!(m.points[2], TickPoint::empty(200));
        let other = Ticks {
            interval_ms: 10,
            points: vec![],
        };
        assert!(Ticks::merge([&a, &other]).is_err());
        assert_eq!(Ticks::merge([]).unwrap(), None);
    }

    #[test]
    fn a_window_counts_its_points_and_takes_exact_percentiles() {
        let latencies: Vec<u64> = (1..=100).map(|v| v * 100).collect();
        let t = Ticks {
            interval_ms: 100,
            points: vec![
                point(0, 50, &[("eof", 1)], &latencies[..50]),
                point(100, 50, &[("eof", 2), ("timeout", 1)], &latencies[50..]),
                point(200, 7, &[], &[1_000_000]),
            ],
        };
        let w = t.window(0, 200);
        assert_eq!(w.requests, 100);
        assert_eq!(
            w.errors,
            BTreeMap::from([("eof".into(), 3), ("timeout".into(), 1)])
        );
        let mut h = tick_histogram();
        for &v in &latencies {
            h.record(v).unwrap();
        }
        assert_eq!(
            (w.p50_us, w.p99_us, w.max_us),
            (
                h.value_at_quantile(0.5),
                h.value_at_quantile(0.99),
                h.highest_equivalent(10_000)
            )
        );
        assert_eq!(t.window(100, 101).requests, 50);
        assert_eq!(t.window(300, 400).p99_us, 0);
        assert_eq!(
            t.window(200, 300).max_us,
            tick_histogram().highest_equivalent(1_000_000)
        );
    }
}
