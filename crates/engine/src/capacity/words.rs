//! A capacity in words, the same for every front end: `httpbench-load --capacity` prints it, the
//! suite's `show`, report and exports read it through the Python module. Each front end adds its
//! own remedy (its own flags or plan keys) where the verdict is "at least".

use super::objective::Objective;
use super::search::{Capacity, Limit, LimitedBy, Probe};

/// `41200.4` as "41,200".
pub fn rate(r: f64) -> String {
    let digits = format!("{:.0}", r.max(0.0));
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A latency as the verdict gives it: "8.70 ms", "310 ms", "none" (nothing completed).
pub fn ms(us: Option<u64>) -> String {
    match us {
        Some(us) if us >= 100_000 => format!("{:.0} ms", us as f64 / 1e3),
        Some(us) => format!("{:.2} ms", us as f64 / 1e3),
        None => "none".into(),
    }
}

/// "p99" for 99.0.
pub fn name(percentile: f64) -> String {
    format!("p{percentile}")
}

impl Probe {
    /// Its corrected latency at `percentile` (one an objective may bound).
    pub fn at(&self, percentile: f64) -> Option<u64> {
        [self.p50_us, self.p90_us, self.p99_us, self.p99_9_us][super::objective::slot(percentile)?]
    }

    /// Why it did not meet `objective`: the first thing it broke, "at p99 31.00 ms", "sending
    /// only 39,000 req/s" or "with 12 errors".
    fn broke(&self, objective: &Objective) -> String {
        if let Some(b) = objective
            .percentiles
            .iter()
            .rev()
            .find(|b| self.at(b.percentile).is_none_or(|us| us > b.latency_us))
        {
            return format!("at {} {}", name(b.percentile), ms(self.at(b.percentile)));
        }
        if self.achieved < super::MIN_ACHIEVED_SHARE * self.offered {
            return format!("sending only {} req/s", rate(self.achieved));
        }
        format!("with {} errors", self.errors)
    }
}

impl Objective {
    /// The highest percentile it bounds.
    pub fn top(&self) -> f64 {
        self.percentiles.last().map_or(99.0, |b| b.percentile)
    }
}

impl Capacity {
    /// Whether the capacity is a floor rather than the server's: the client or the connection
    /// pool set the pace, or the search stopped before it settled (the largest rate searched met
    /// the objective; the probes, the time or its driver stopped it).
    pub fn at_least(&self) -> bool {
        self.rate.is_some()
            && (matches!(
                self.limited_by,
                Some(LimitedBy::Client | LimitedBy::Connections)
            ) || self.bound.is_some())
    }

    /// The verdict, one line: "capacity: 41,200 req/s at p99 <= 10 ms, errors <= 0.1% (p99 there
    /// 8.70 ms; 42,000 req/s broke it at p99 31.00 ms)"; "at least" with what set the pace where
    /// the capacity is a floor; "no rate met ...: at 100 req/s, p99 was 45.00 ms" where none did.
    pub fn verdict(&self) -> String {
        let objective = &self.objective;
        let top = objective.top();
        let Some(found) = self.rate else {
            let lowest = self
                .probes
                .iter()
                .filter(|p| !p.met)
                .min_by(|a, b| a.offered.total_cmp(&b.offered));
            let so_far = if self.bound == Some(Limit::Stopped) {
                " before the search was stopped"
            } else {
                ""
            };
            return match lowest {
                Some(p) => {
                    let why = p.broke(objective);
                    let said = match why.strip_prefix("with ") {
                        None if why.starts_with("at ") => String::new(),
                        None => format!(" ({why})"),
                        Some(errors) => format!(" ({errors})"),
                    };
                    format!(
                        "no rate met {objective}{so_far}: at {} req/s, {} was {}{said}",
                        rate(p.offered),
                        name(top),
                        ms(p.at(top)),
                    )
                }
                None => format!("no rate met {objective}{so_far}: no probe failed or met"),
            };
        };
        // The worst of the probes at the capacity: each of them met the objective on its own.
        let there = self
            .probes
            .iter()
            .filter(|p| p.offered == found)
            .filter_map(|p| p.at(top))
            .max();
        let above = self.interval.high.and_then(|high| {
            self.probes
                .iter()
                .find(|p| p.offered == high && !p.met)
                .map(|p| format!("; {} req/s broke it {}", rate(high), p.broke(objective)))
        });
        let pace = match (self.limited_by, self.bound) {
            (Some(LimitedBy::Client), _) => {
                " — the client set the pace (an engine thread at 90% busy or more)"
            }
            (Some(LimitedBy::Connections), _) => {
                " — the connection pool set the pace (fewer connections than the rate needed)"
            }
            (_, Some(Limit::MaxRate)) => " — the largest rate searched met it",
            _ => "",
        };
        let unsettled = match self.bound {
            Some(Limit::Probes) => ", unsettled: the search ran out of probes",
            Some(Limit::Time) => ", unsettled: the search ran out of time",
            Some(Limit::Stopped) => ", unsettled: the search was stopped",
            _ => "",
        };
        format!(
            "capacity: {}{} req/s at {objective} ({} there {}{}){unsettled}{pace}",
            if self.at_least() { "at least " } else { "" },
            rate(found),
            name(top),
            ms(there),
            above.unwrap_or_default(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::super::search::Interval;
    use super::*;

    fn probe(offered: f64, p99_ms: u64, met: bool) -> Probe {
        Probe {
            offered,
            achieved: offered,
            p50_us: Some(500),
            p90_us: Some(800),
            p99_us: Some(p99_ms * 1000),
            p99_9_us: Some(p99_ms * 1000),
            errors: 0,
            connections: 100,
            connections_short: false,
            client_bound: false,
            met,
        }
    }

    fn capacity(rate: Option<f64>, probes: Vec<Probe>) -> Capacity {
        let high = probes.iter().find(|p| !p.met).map(|p| p.offered);
        Capacity {
            objective: Objective::parse("p99=10ms").unwrap(),
            rate,
            interval: Interval { low: rate, high },
            limited_by: rate.map(|_| LimitedBy::Server),
            bound: None,
            probes,
        }
    }

    #[test]
    fn the_verdict_says_the_capacity_and_what_broke_it() {
        let c = capacity(
            Some(41_200.0),
            vec![
                probe(41_200.0, 8, true),
                probe(42_000.0, 31, false),
                probe(41_200.0, 9, true),
            ],
        );
        assert_eq!(
            c.verdict(),
            "capacity: 41,200 req/s at p99 <= 10 ms, errors <= 0.1% (p99 there 9.00 ms; 42,000 req/s broke it at p99 31.00 ms)"
        );
        let none = capacity(None, vec![probe(100.0, 45, false)]);
        assert_eq!(
            none.verdict(),
            "no rate met p99 <= 10 ms, errors <= 0.1%: at 100 req/s, p99 was 45.00 ms"
        );
        let client = Capacity {
            limited_by: Some(LimitedBy::Client),
            ..c
        };
        assert!(client
            .verdict()
            .starts_with("capacity: at least 41,200 req/s"));
        assert!(client
            .verdict()
            .ends_with("(an engine thread at 90% busy or more)"));
    }

    #[test]
    fn rates_read_with_thousands() {
        assert_eq!(rate(41_200.4), "41,200");
        assert_eq!(rate(999.0), "999");
        assert_eq!(rate(1_000_000.0), "1,000,000");
    }
}
