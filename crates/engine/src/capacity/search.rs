//! The capacity search, sans IO: told each probe's figures, it says which rate to probe next or
//! that it is done. `httpbench-load --capacity`, the suite's sweep and a cluster (whose probes
//! are split over hosts and merged) all drive this one object, each running probes its own way.
//!
//! Rates rise by a factor from the start until one fails (or fall until one is met), are
//! bisected between the highest met and the lowest failed until those are within the precision,
//! and the highest met is then confirmed by more probes at that rate. Near the knee latency is
//! noisy, so a confirming probe that fails steps the rate down by the precision (twice as far
//! for each failure in a row) and confirms again: the capacity is the highest rate whose probes
//! all met, wrk2 users' binary search of `-R` done for them.

use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::objective::{Figures, Objective, MIN_ACHIEVED_SHARE};

/// How a search runs; `Default` gives the documented defaults.
#[derive(Debug, Clone, PartialEq)]
pub struct Settings {
    pub start: f64,
    pub factor: f64,
    /// The bracket is narrow enough when (lowest failed - highest met) / highest met is this or
    /// less; also the step down after a failed confirmation.
    pub precision: f64,
    /// Probes that confirm the rate found, each at that rate.
    pub rounds: u32,
    pub min_rate: f64,
    pub max_rate: f64,
    pub max_probes: u32,
    pub time_limit: Duration,
    /// A probe's measured time, after its own warm-up.
    pub probe: Duration,
    /// A probe's warm-up: its connections open and the server settles at the new rate.
    pub warmup: Duration,
}

impl Default for Settings {
    fn default() -> Settings {
        Settings {
            start: 1_000.0,
            factor: 2.0,
            precision: 0.02,
            rounds: 3,
            min_rate: 10.0,
            max_rate: 10_000_000.0,
            max_probes: 20,
            time_limit: Duration::from_secs(300),
            probe: Duration::from_secs(3),
            warmup: Duration::from_secs(1),
        }
    }
}

impl Settings {
    /// One line naming the setting that cannot work and what would.
    pub fn check(&self) -> Result<(), String> {
        if !(self.precision > 0.0 && self.precision <= 0.5) {
            return Err(format!(
                "a precision of {}% cannot bracket a rate; give one above 0% and at most 50%, as 2%",
                self.precision * 100.0
            ));
        }
        if !(self.min_rate > 0.0 && self.min_rate <= self.max_rate) {
            return Err(format!(
                "the smallest rate {} must be above 0 and at most the largest, {}",
                self.min_rate, self.max_rate
            ));
        }
        if !(self.min_rate..=self.max_rate).contains(&self.start) {
            return Err(format!(
                "the start rate {} is outside the rates searched ({} to {}); start within them",
                self.start, self.min_rate, self.max_rate
            ));
        }
        if self.factor <= 1.0 || self.rounds == 0 || self.max_probes == 0 {
            return Err("a search needs a factor above 1, at least one round and one probe".into());
        }
        Ok(())
    }
}

/// Why a search stopped before it settled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Limit {
    /// No rate down to the smallest met the objective.
    MinRate,
    /// The largest rate met it: the capacity is at least that.
    MaxRate,
    /// The largest number of probes was spent.
    Probes,
    /// The search's time ran out.
    Time,
    /// It was stopped before it settled (Ctrl-C, a probe that could not run, a cell interrupted):
    /// what it found so far.
    Stopped,
}

/// One probe as the report keeps it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Probe {
    /// Requests per second offered.
    pub offered: f64,
    /// Requests per second sent.
    pub achieved: f64,
    /// Corrected total latency percentiles, in microseconds (null: nothing completed).
    pub p50_us: Option<u64>,
    pub p90_us: Option<u64>,
    pub p99_us: Option<u64>,
    pub p99_9_us: Option<u64>,
    /// Requests that did not succeed.
    pub errors: u64,
    /// Connections the probe had.
    pub connections: u32,
    /// Fewer than its rate needed at the objective's latency (the open-file limit's cap, or a
    /// pool the user set).
    pub connections_short: bool,
    /// The busiest engine thread was at least 90% busy or kept waiting for its CPU.
    pub client_bound: bool,
    pub met: bool,
}

/// The final bracket: the capacity and the lowest rate that failed above it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Interval {
    /// The capacity (null when no rate met).
    pub low: Option<f64>,
    /// The lowest rate that failed at or above it (null: none failed).
    pub high: Option<f64>,
}

/// What set the pace where the search stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum LimitedBy {
    /// The engine: the capacity is "at least", never a verdict on the server.
    Client,
    /// The connection pool's cap: more connections might have carried more.
    Connections,
    Server,
}

/// What a search found: the report's `capacity`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Capacity {
    pub objective: Objective,
    /// The highest rate whose probes all met the objective, in requests per second; null when
    /// none did.
    pub rate: Option<f64>,
    pub interval: Interval,
    /// Null when no rate met.
    pub limited_by: Option<LimitedBy>,
    /// Why it stopped before settling, if it did.
    pub bound: Option<Limit>,
    pub probes: Vec<Probe>,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Phase {
    /// Rising (or, while nothing has met, falling) by the factor.
    Explore,
    Bisect,
    /// `left` more probes at `rate` must meet.
    Confirm {
        rate: f64,
        left: u32,
    },
}

/// What the driver does next.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Next {
    Probe(f64),
    Done,
}

pub struct Search {
    objective: Objective,
    settings: Settings,
    phase: Phase,
    next: Next,
    /// A bound met on the way that settles the search once its rate is confirmed (max_rate).
    settles_at: Option<Limit>,
    /// The rate whose confirming probes all met, once the search settled on it.
    confirmed: Option<f64>,
    /// Confirmations that failed so far: each steps further down.
    step_downs: u32,
    highest_met: Option<f64>,
    lowest_failed: Option<f64>,
    /// The least a failed probe's server completed per second when it could not keep up: more
    /// than that only queues, so the knee is at or below it.
    carried: Option<f64>,
    probes: Vec<Probe>,
    bound: Option<Limit>,
}

impl Search {
    pub fn new(objective: Objective, settings: Settings) -> Result<Search, String> {
        settings.check()?;
        Ok(Search {
            next: Next::Probe(settings.start),
            objective,
            settings,
            phase: Phase::Explore,
            settles_at: None,
            confirmed: None,
            step_downs: 0,
            highest_met: None,
            lowest_failed: None,
            carried: None,
            probes: Vec::new(),
            bound: None,
        })
    }

    pub fn next(&self) -> Next {
        self.next
    }

    pub fn objective(&self) -> &Objective {
        &self.objective
    }

    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    /// How long a probe at `rate` measures: its set time, or long enough to hold the requests its
    /// highest percentile needs, whichever is longer.
    /// Never longer than the search's time limit, which is checked only between probes.
    pub fn probe_length(&self, rate: f64) -> Duration {
        let needed = Duration::try_from_secs_f64(self.objective.min_requests() as f64 / rate)
            .unwrap_or(Duration::MAX);
        self.settings
            .probe
            .max(needed)
            .min(self.settings.time_limit)
    }

    /// Takes the figures of the probe `next` asked for, `elapsed` since the search began.
    pub fn record(&mut self, figures: &Figures, elapsed: Duration) {
        let Next::Probe(rate) = self.next else {
            return;
        };
        let met = self.objective.met(figures);
        let [p50_us, p90_us, p99_us, p99_9_us] = figures.latency_us;
        self.probes.push(Probe {
            offered: rate,
            achieved: figures.achieved,
            p50_us,
            p90_us,
            p99_us,
            p99_9_us,
            errors: figures.errors,
            connections: figures.connections,
            connections_short: figures.connections_short,
            client_bound: figures.client_bound,
            met,
        });
        if met {
            self.highest_met = Some(self.highest_met.map_or(rate, |m| m.max(rate)));
        } else {
            self.lowest_failed = Some(self.lowest_failed.map_or(rate, |f| f.min(rate)));
            if figures.throughput < MIN_ACHIEVED_SHARE * rate {
                let t = figures.throughput;
                self.carried = Some(self.carried.map_or(t, |c| c.min(t)));
            }
        }
        self.next = self.step(rate, met);
        if self.next != Next::Done {
            if self.probes.len() >= self.settings.max_probes as usize {
                self.stop(Limit::Probes);
            } else if elapsed >= self.settings.time_limit {
                self.stop(Limit::Time);
            }
        }
    }

    fn step(&mut self, rate: f64, met: bool) -> Next {
        let s = &self.settings;
        match self.phase {
            Phase::Explore => match (self.highest_met, self.lowest_failed) {
                (Some(_), None) if rate >= s.max_rate => {
                    self.settles_at = Some(Limit::MaxRate);
                    self.confirm(rate)
                }
                (Some(_), None) => Next::Probe((rate * s.factor).min(s.max_rate)),
                (None, Some(_)) if rate <= s.min_rate => self.stop(Limit::MinRate),
                (None, Some(_)) => Next::Probe((rate / s.factor).max(s.min_rate)),
                _ => {
                    self.phase = Phase::Bisect;
                    self.bisect()
                }
            },
            Phase::Bisect => self.bisect(),
            Phase::Confirm {
                rate: confirming,
                left,
            } => {
                if !met {
                    // A rate that failed is no longer the largest one met. Each failed
                    // confirmation in a row steps down twice as far as the one before (the
                    // precision, then 2, 4, ... times it): near a noisy knee a step of the
                    // precision each time walks down for the whole probe budget.
                    self.settles_at = None;
                    let step = s.precision * f64::from(1u32 << self.step_downs.min(4));
                    self.step_downs += 1;
                    let lower = confirming * (1.0 - step).max(0.0);
                    if lower < s.min_rate {
                        return self.stop(Limit::MinRate);
                    }
                    return self.confirm(lower);
                }
                if left > 1 {
                    self.phase = Phase::Confirm {
                        rate: confirming,
                        left: left - 1,
                    };
                    return Next::Probe(confirming);
                }
                self.bound = self.settles_at;
                self.confirmed = Some(confirming);
                Next::Done
            }
        }
    }

    fn bisect(&mut self) -> Next {
        let (Some(met), Some(failed)) = (self.highest_met, self.lowest_failed) else {
            unreachable!("bisecting needs a rate met and one failed");
        };
        let precision = self.settings.precision;
        if (failed - met) / met <= precision {
            return self.confirm(met);
        }
        // A server that is CPU-bound breaks just above what it carried when overloaded: the
        // rates just above and just below that, 0.8 precisions apart, bracket the knee in two
        // probes, where halving from the factor's bracket would take five or six. A knee well
        // below it (latency breaking first) costs these two probes, then the halving goes on.
        let guesses = self
            .carried
            .map(|t| [t * (1.0 + 0.4 * precision), t * (1.0 - 0.4 * precision)]);
        let fresh = |&g: &f64| {
            g > met
                && g < failed
                && !self
                    .probes
                    .iter()
                    .any(|p| (p.offered - g).abs() <= g * precision / 4.0)
        };
        match guesses.into_iter().flatten().find(fresh) {
            Some(guess) => Next::Probe(guess),
            None => Next::Probe((met + failed) / 2.0),
        }
    }

    fn confirm(&mut self, rate: f64) -> Next {
        self.phase = Phase::Confirm {
            rate,
            left: self.settings.rounds,
        };
        Next::Probe(rate)
    }

    fn stop(&mut self, limit: Limit) -> Next {
        self.bound = Some(limit);
        self.next = Next::Done;
        Next::Done
    }

    /// What the search found so far (everything, once `next` is `Done`; before that, bound
    /// `Stopped`).
    pub fn outcome(&self) -> Capacity {
        // Settled: the rate confirmed. Stopped by the probes, the time or its driver before
        // settling: the highest rate probed whose every probe met (a rate one probe met and
        // another failed is not carried), a floor. Stopped at the smallest rate: none.
        let bound = match self.next {
            Next::Probe(_) => Some(Limit::Stopped),
            Next::Done => self.bound,
        };
        let unconfirmed = matches!(bound, Some(Limit::Probes | Limit::Time | Limit::Stopped));
        let rate = self
            .confirmed
            .or_else(|| unconfirmed.then(|| self.highest_all_met()).flatten());
        let failed_above = self
            .probes
            .iter()
            .filter(|p| !p.met && rate.is_none_or(|r| p.offered >= r))
            .map(|p| p.offered)
            .fold(None, |low: Option<f64>, r| {
                Some(low.map_or(r, |l| l.min(r)))
            });
        // The probes where it stopped say what set the pace: those at the capacity, and those
        // at the rate that broke it.
        let limited_by = rate.map(|r| {
            let there = self
                .probes
                .iter()
                .filter(|p| p.offered == r || Some(p.offered) == failed_above);
            let (client, short) = there.fold((false, false), |(c, s), p| {
                (c || p.client_bound, s || p.connections_short)
            });
            match (client, short) {
                (true, _) => LimitedBy::Client,
                (false, true) => LimitedBy::Connections,
                _ => LimitedBy::Server,
            }
        });
        Capacity {
            objective: self.objective.clone(),
            rate,
            interval: Interval {
                low: rate,
                high: failed_above,
            },
            limited_by,
            bound,
            probes: self.probes.clone(),
        }
    }

    fn highest_all_met(&self) -> Option<f64> {
        self.probes
            .iter()
            .filter(|p| p.met)
            .map(|p| p.offered)
            .filter(|&r| self.probes.iter().all(|p| p.offered != r || p.met))
            .fold(None, |best: Option<f64>, r| {
                Some(best.map_or(r, |b| b.max(r)))
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A server that carries `capacity` req/s at 1 ms and answers anything more at 50 ms; the
    /// second probe at `flaky` (its first confirmation) fails, as one near the knee may.
    struct Model {
        capacity: f64,
        /// What it completes per second when overloaded (CPU-bound: its capacity).
        carries: f64,
        flaky: Option<f64>,
        probed: Vec<f64>,
    }

    impl Model {
        fn figures(&mut self, rate: f64) -> Figures {
            self.probed.push(rate);
            let flake =
                self.flaky == Some(rate) && self.probed.iter().filter(|&&r| r == rate).count() == 2;
            let us = if rate <= self.capacity && !flake {
                1_000
            } else {
                50_000
            };
            Figures {
                offered: rate,
                achieved: rate,
                throughput: rate.min(self.carries),
                requests: 10_000,
                latency_us: [Some(us); 4],
                ..Figures::default()
            }
        }
    }

    fn search(settings: Settings, mut model: Model) -> Capacity {
        let mut s = Search::new(Objective::parse("p99=10ms").unwrap(), settings).unwrap();
        let mut elapsed = Duration::ZERO;
        while let Next::Probe(rate) = s.next() {
            elapsed += Duration::from_secs(4);
            s.record(&model.figures(rate), elapsed);
        }
        s.outcome()
    }

    fn interval(low: Option<f64>, high: Option<f64>) -> Interval {
        Interval { low, high }
    }

    fn model(capacity: f64) -> Model {
        Model {
            capacity,
            carries: f64::INFINITY,
            flaky: None,
            probed: vec![],
        }
    }

    #[test]
    fn it_finds_the_capacity_within_the_precision_and_confirms_it() {
        let found = search(Settings::default(), model(41_200.0));
        let rate = found.rate.unwrap();
        assert!((41_200.0 * 0.98..=41_200.0).contains(&rate), "{found:?}");
        let Interval { low, high } = found.interval;
        assert_eq!(low, Some(rate));
        assert!(
            high.unwrap() > 41_200.0 && (high.unwrap() - rate) / rate <= 0.02,
            "{found:?}"
        );
        assert_eq!(found.bound, None);
        assert_eq!(
            found.probes.iter().filter(|p| p.offered == rate).count(),
            4,
            "found once, confirmed 3 times"
        );
        assert!(found.probes.len() <= 20, "{}", found.probes.len());
    }

    #[test]
    fn a_cpu_bound_server_settles_within_twelve_probes() {
        // Overloaded, it completes what it carries: the bracket closes around that at once.
        let found = search(
            Settings::default(),
            Model {
                carries: 41_200.0,
                ..model(41_200.0)
            },
        );
        let rate = found.rate.unwrap();
        assert!((41_200.0 * 0.98..=41_200.0).contains(&rate), "{found:?}");
        assert!(found.probes.len() <= 12, "{:?}", found.probes);
        // A knee below what it carries costs the two guesses, and is still found.
        let found = search(
            Settings::default(),
            Model {
                carries: 45_000.0,
                ..model(41_200.0)
            },
        );
        let rate = found.rate.unwrap();
        assert!((41_200.0 * 0.98..=41_200.0).contains(&rate), "{found:?}");
    }

    #[test]
    fn a_search_stopped_midway_keeps_what_met_as_a_floor() {
        let mut s =
            Search::new(Objective::parse("p99=10ms").unwrap(), Settings::default()).unwrap();
        let mut m = model(41_200.0);
        for _ in 0..3 {
            let Next::Probe(rate) = s.next() else {
                unreachable!()
            };
            s.record(&m.figures(rate), Duration::from_secs(4));
        }
        // Stopped (Ctrl-C, a probe that could not run) after 1,000, 2,000 and 4,000 met.
        let found = s.outcome();
        assert_eq!(
            (found.rate, found.bound),
            (Some(4_000.0), Some(Limit::Stopped))
        );
        assert!(found.at_least(), "{found:?}");
        assert!(
            found
                .verdict()
                .starts_with("capacity: at least 4,000 req/s"),
            "{}",
            found.verdict()
        );
    }

    #[test]
    fn failed_confirmations_in_a_row_step_down_further_each_time() {
        // A knee where every confirmation within 8% below 41,200 fails (noise): steps of 2%, 4%
        // and 8% reach a rate that holds in three, where steps of 2% took five.
        struct Noisy(Model);
        let mut s =
            Search::new(Objective::parse("p99=10ms").unwrap(), Settings::default()).unwrap();
        let mut m = Noisy(model(41_200.0));
        let mut confirmations = 0;
        while let Next::Probe(rate) = s.next() {
            let mut f = m.0.figures(rate);
            let confirming = matches!(s.phase, Phase::Confirm { .. });
            if confirming && rate > 41_200.0 * 0.92 {
                confirmations += 1;
                f.latency_us = [Some(50_000); 4];
            }
            s.record(&f, Duration::from_secs(4));
        }
        let found = s.outcome();
        assert!(found.rate.unwrap() <= 41_200.0 * 0.92, "{found:?}");
        assert!(
            confirmations <= 4 && found.bound.is_none(),
            "{confirmations} {found:?}"
        );
    }

    #[test]
    fn a_start_rate_that_fails_falls_by_the_factor() {
        let found = search(Settings::default(), model(300.0));
        assert_eq!(
            found.probes[..3]
                .iter()
                .map(|p| p.offered)
                .collect::<Vec<_>>(),
            vec![1000.0, 500.0, 250.0]
        );
        let rate = found.rate.unwrap();
        assert!((294.0..=300.0).contains(&rate), "{found:?}");
    }

    #[test]
    fn a_failed_confirmation_steps_down_by_the_precision_and_confirms_again() {
        let first = search(Settings::default(), model(41_200.0));
        let knee = first.rate.unwrap();
        let found = search(
            Settings::default(),
            Model {
                flaky: Some(knee),
                ..model(41_200.0)
            },
        );
        // The knee is found, fails its first confirmation, and the rate below it is confirmed.
        let below = knee * 0.98;
        assert_eq!(found.rate, Some(below), "{found:?}");
        assert_eq!(found.interval, interval(Some(below), Some(knee)));
        assert_eq!(
            found.probes.iter().filter(|p| p.offered == below).count(),
            3
        );
    }

    #[test]
    fn a_rate_met_once_in_the_bisection_is_not_the_capacity_unless_confirmed() {
        // At 777 req/s the bisection meets a rate between the stepped-down one and the knee.
        let knee = search(Settings::default(), model(777.0)).rate.unwrap();
        let found = search(
            Settings::default(),
            Model {
                flaky: Some(knee),
                ..model(777.0)
            },
        );
        let below = knee * 0.98;
        assert_eq!(found.rate, Some(below), "{found:?}");
        assert!(found
            .probes
            .iter()
            .any(|p| p.met && p.offered > below && p.offered < knee));
    }

    #[test]
    fn a_failed_confirmation_at_the_largest_rate_is_no_max_rate_bound() {
        let found = search(
            Settings {
                max_rate: 4_000.0,
                ..Settings::default()
            },
            Model {
                flaky: Some(4_000.0),
                ..model(1e9)
            },
        );
        assert_eq!(
            (found.rate, found.bound),
            (Some(3_920.0), None),
            "{found:?}"
        );
        assert_eq!(found.interval, interval(Some(3_920.0), Some(4_000.0)));
    }

    #[test]
    fn no_rate_met_says_so_at_the_smallest() {
        let found = search(
            Settings {
                min_rate: 100.0,
                ..Settings::default()
            },
            model(10.0),
        );
        assert_eq!((found.rate, found.bound), (None, Some(Limit::MinRate)));
        assert_eq!(found.probes.last().unwrap().offered, 100.0);
        assert_eq!(found.interval, interval(None, Some(100.0)));
    }

    #[test]
    fn the_largest_rate_met_is_confirmed_and_said_to_bound_it() {
        let found = search(
            Settings {
                max_rate: 5_000.0,
                ..Settings::default()
            },
            model(1e9),
        );
        assert_eq!(
            (found.rate, found.bound),
            (Some(5_000.0), Some(Limit::MaxRate))
        );
        assert_eq!(found.interval, interval(Some(5_000.0), None));
    }

    #[test]
    fn the_probes_and_the_time_bound_a_search() {
        let found = search(
            Settings {
                max_probes: 5,
                ..Settings::default()
            },
            model(41_200.0),
        );
        assert_eq!((found.probes.len(), found.bound), (5, Some(Limit::Probes)));
        assert_eq!(
            found.rate,
            Some(16_000.0),
            "the highest met so far: {found:?}"
        );
        let found = search(
            Settings {
                time_limit: Duration::from_secs(20),
                ..Settings::default()
            },
            model(41_200.0),
        );
        assert_eq!((found.probes.len(), found.bound), (5, Some(Limit::Time)));
    }

    #[test]
    fn a_probe_lasts_long_enough_for_its_highest_percentile() {
        let s = Search::new(Objective::parse("p99=10ms").unwrap(), Settings::default()).unwrap();
        assert_eq!(s.probe_length(10_000.0), Duration::from_secs(3));
        assert_eq!(s.probe_length(100.0), Duration::from_secs(10));
        // p99.9 at 1 req/s would need 10,000 s: the search's time limit bounds it.
        let s = Search::new(Objective::parse("p99.9=10ms").unwrap(), Settings::default()).unwrap();
        assert_eq!(s.probe_length(1.0), Duration::from_secs(300));
    }

    #[test]
    fn settings_that_cannot_search_are_refused_in_one_line() {
        for (settings, says) in [
            (
                Settings {
                    precision: 0.0,
                    ..Settings::default()
                },
                "precision of 0%",
            ),
            (
                Settings {
                    precision: 0.6,
                    ..Settings::default()
                },
                "at most 50%",
            ),
            (
                Settings {
                    start: 5.0,
                    ..Settings::default()
                },
                "start rate 5 is outside",
            ),
        ] {
            let e = settings.check().unwrap_err();
            assert!(e.contains(says) && !e.contains('\n'), "{e}");
        }
    }
}
