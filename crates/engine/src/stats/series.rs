//! The per-second time series (requests, errors, p50, p99) for timeline charts.
//!
//! Percentiles of a second cannot be averaged across threads, so each thread hands over the
//! histogram of every second as soon as it is over, and the run adds them up and keeps only the
//! resulting point once every thread has moved past that second: long runs do not grow.

use std::sync::mpsc::Sender;

use hdrhistogram::Histogram;

use super::histogram;

/// One thread's measurements of one second of the run.
pub struct SecondSample {
    pub thread: usize,
    pub second: u64,
    pub requests: u64,
    pub errors: u64,
    pub latency: Histogram<u64>,
}

/// The part of a thread's state that fills the current second.
pub struct SecondRecorder {
    current: SecondSample,
    /// None once finished: a thread that drains after its end hands over nothing more.
    out: Option<Sender<SecondSample>>,
}

impl SecondRecorder {
    pub fn new(thread: usize, out: Sender<SecondSample>) -> Self {
        let current = SecondSample {
            thread,
            second: 0,
            requests: 0,
            errors: 0,
            latency: histogram(),
        };
        SecondRecorder {
            current,
            out: Some(out),
        }
    }

    /// Move on to `second` (called at least every few milliseconds), handing over the seconds
    /// that are over, empty ones too, so the merger knows this thread is past them.
    #[inline]
    pub fn at(&mut self, second: u64) -> &mut SecondSample {
        while self.current.second < second {
            let next = self.current.second + 1;
            let thread = self.current.thread;
            let done = std::mem::replace(
                &mut self.current,
                SecondSample {
                    thread,
                    second: next,
                    requests: 0,
                    errors: 0,
                    latency: histogram(),
                },
            );
            // The receiver outlives every worker; a send can only fail after the run is over.
            if let Some(out) = &self.out {
                let _ = out.send(done);
            }
        }
        &mut self.current
    }

    /// Hand over the last, partial second: the caller passes the second the run ended in.
    pub fn finish(&mut self, end_second: u64) {
        self.at(end_second + 1);
        self.out = None;
    }
}

/// One point of the merged series.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
pub struct SecondPoint {
    pub second: u64,
    pub requests: u64,
    pub errors: u64,
    /// `None` in a point added from several hosts' points: only their percentiles are left, and
    /// those do not add up.
    pub p50_us: Option<u64>,
    pub p99_us: Option<u64>,
}

/// Adds up the samples of all threads, second by second.
pub struct SeriesMerger {
    /// Per thread, the first second it has not handed over yet.
    marks: Vec<u64>,
    /// Seconds some thread is still in, oldest first, starting at `points.len()`.
    open: std::collections::VecDeque<SecondSample>,
    points: Vec<SecondPoint>,
}

impl SeriesMerger {
    pub fn new(threads: usize) -> Self {
        SeriesMerger {
            marks: vec![0; threads],
            open: Default::default(),
            points: Vec::new(),
        }
    }

    pub fn add(&mut self, s: SecondSample) {
        self.marks[s.thread] = self.marks[s.thread].max(s.second + 1);
        let index = (s.second as usize)
            .checked_sub(self.points.len())
            .expect("seconds arrive in order per thread");
        while self.open.len() <= index {
            let second = (self.points.len() + self.open.len()) as u64;
            self.open.push_back(SecondSample {
                thread: 0,
                second,
                requests: 0,
                errors: 0,
                latency: histogram(),
            });
        }
        let acc = &mut self.open[index];
        acc.requests += s.requests;
        acc.errors += s.errors;
        acc.latency
            .add(&s.latency)
            .expect("histograms share bounds");
        let done = self.marks.iter().copied().min().unwrap_or(0);
        while self.open.front().is_some_and(|f| f.second < done) {
            let s = self.open.pop_front().expect("checked");
            self.points.push(SecondPoint {
                second: s.second,
                requests: s.requests,
                errors: s.errors,
                p50_us: Some(s.latency.value_at_quantile(0.5)),
                p99_us: Some(s.latency.value_at_quantile(0.99)),
            });
        }
    }

    /// Every point, once all threads have finished.
    pub fn into_points(self) -> Vec<SecondPoint> {
        debug_assert!(self.open.is_empty());
        self.points
    }
}
