//! A latency objective: bounds on percentiles of the corrected total latency and on the share of
//! failed requests, written as users write them (`p99=10ms`, `p50=2ms,p99=10ms,errors=0.1%`, or
//! a plan's `p99 <= 10ms`), and whether one probe's figures meet it.

use std::fmt;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The percentiles an objective may bound: those every report carries (`Summary`).
const PERCENTILES: [(&str, f64); 4] =
    [("p50", 50.0), ("p90", 90.0), ("p99", 99.0), ("p99.9", 99.9)];
/// The failed share allowed when the objective names none.
pub const DEFAULT_MAX_ERROR_SHARE: f64 = 0.001;
/// A probe meets its objective only if it achieved this share of the rate it offered: a server
/// that could not take the rate is not carrying it, whatever the latency of what it took.
pub const MIN_ACHIEVED_SHARE: f64 = 0.98;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Bound {
    /// 50, 90, 99 or 99.9.
    pub percentile: f64,
    pub latency_us: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Objective {
    /// From the lowest percentile up, each at most once.
    pub percentiles: Vec<Bound>,
    /// The largest share of a probe's requests that may fail (0.001 is 0.1%).
    pub max_error_share: f64,
}

/// What the objective judges of one probe: its offered and achieved rates, its requests and
/// failures, and its corrected latency percentiles in microseconds (None: nothing completed);
/// and what says whether the probe measured the server (its connections, the client's CPU).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Figures {
    pub offered: f64,
    pub achieved: f64,
    /// Requests completed per second: what an overloaded server carried.
    pub throughput: f64,
    pub requests: u64,
    pub errors: u64,
    pub latency_us: [Option<u64>; 4],
    pub connections: u32,
    pub connections_short: bool,
    pub client_bound: bool,
}

/// Where `percentile` is among those an objective may bound: the index of its latency in
/// `Figures::latency_us` and in a probe's p50..p99.9.
pub(super) fn slot(percentile: f64) -> Option<usize> {
    PERCENTILES.iter().position(|(_, p)| *p == percentile)
}

impl Figures {
    /// The probe's latency at `percentile` (one of those an objective may bound).
    pub fn at(&self, percentile: f64) -> Option<u64> {
        self.latency_us[slot(percentile)?]
    }

    pub fn error_share(&self) -> f64 {
        if self.requests == 0 {
            return 0.0;
        }
        self.errors as f64 / self.requests as f64
    }
}

impl Objective {
    /// One line naming what is wrong and how to write it, for any objective that does not parse.
    pub fn parse(text: &str) -> Result<Objective, String> {
        let mut percentiles: Vec<Bound> = Vec::new();
        let mut max_error_share = None;
        for term in text.split(',').map(str::trim) {
            let (name, value) = split_term(term)?;
            if name == "errors" {
                if max_error_share.replace(share(value, term)?).is_some() {
                    return Err(format!(
                        "objective {text:?} bounds errors twice; give it once"
                    ));
                }
                continue;
            }
            let percentile = PERCENTILES
                .iter()
                .find(|(n, _)| *n == name)
                .map(|(_, p)| *p)
                .ok_or_else(|| {
                    format!(
                        "objective term {term:?}: {name:?} is no percentile it can bound; use p50, p90, p99 or p99.9 \
                         (as in p99=10ms)"
                    )
                })?;
            if percentiles.iter().any(|b| b.percentile == percentile) {
                return Err(format!(
                    "objective {text:?} bounds {name} twice; give it once"
                ));
            }
            percentiles.push(Bound {
                percentile,
                latency_us: latency_us(value, term)?,
            });
        }
        if percentiles.is_empty() {
            return Err(format!(
                "objective {text:?} bounds no latency percentile; name at least one, as in p99=10ms"
            ));
        }
        percentiles.sort_by(|a, b| a.percentile.total_cmp(&b.percentile));
        Ok(Objective {
            percentiles,
            max_error_share: max_error_share.unwrap_or(DEFAULT_MAX_ERROR_SHARE),
        })
    }

    /// Whether a probe with these figures meets the objective: every bounded percentile within
    /// its bound, the failed share at most the allowed one, and the offered rate achieved.
    pub fn met(&self, figures: &Figures) -> bool {
        figures.achieved >= MIN_ACHIEVED_SHARE * figures.offered
            && figures.error_share() <= self.max_error_share
            && self.percentiles.iter().all(|b| {
                figures
                    .at(b.percentile)
                    .is_some_and(|us| us <= b.latency_us)
            })
    }

    /// The largest latency any percentile may have.
    pub fn longest_bound_us(&self) -> u64 {
        self.percentiles
            .iter()
            .map(|b| b.latency_us)
            .max()
            .unwrap_or(0)
    }

    /// The requests a probe must hold for its highest bounded percentile to rest on at least ten
    /// requests beyond it: 1,000 for p99, 10,000 for p99.9.
    pub fn min_requests(&self) -> u64 {
        let highest = self.percentiles.last().map_or(50.0, |b| b.percentile);
        (10.0 / (1.0 - highest / 100.0)).round() as u64
    }
}

impl fmt::Display for Objective {
    /// As the verdicts say it: "p50 <= 2 ms, p99 <= 10 ms, errors <= 0.1%".
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for b in &self.percentiles {
            let name = PERCENTILES
                .iter()
                .find(|(_, p)| *p == b.percentile)
                .map_or("p?", |(n, _)| n);
            write!(f, "{name} <= {}, ", show_us(b.latency_us))?;
        }
        write!(f, "errors <= {}%", self.max_error_share * 100.0)
    }
}

fn show_us(us: u64) -> String {
    match us {
        0..1_000 => format!("{us} us"),
        1_000..1_000_000 => format!("{} ms", us as f64 / 1e3),
        _ => format!("{} s", us as f64 / 1e6),
    }
}

/// `name=value` or `name <= value`.
fn split_term(term: &str) -> Result<(&str, &str), String> {
    let (name, value) = term
        .split_once("<=")
        .or_else(|| term.split_once('='))
        .ok_or_else(|| {
            format!("objective term {term:?} has no bound; write it as p99=10ms or p99 <= 10ms")
        })?;
    Ok((name.trim(), value.trim()))
}

fn latency_us(value: &str, term: &str) -> Result<u64, String> {
    let bad = || {
        format!("objective term {term:?}: {value:?} is no latency; write a positive time with its unit, as 10ms, 500us or 1.5s")
    };
    let split = value
        .find(|c: char| c.is_ascii_alphabetic())
        .ok_or_else(bad)?;
    let (number, unit) = value.split_at(split);
    let number: f64 = number.trim().parse().map_err(|_| bad())?;
    let scale = match unit.trim() {
        "us" => 1.0,
        "ms" => 1e3,
        "s" => 1e6,
        _ => return Err(bad()),
    };
    let us = number * scale;
    if !(us.is_finite() && us >= 1.0) {
        return Err(bad());
    }
    Ok(us.round() as u64)
}

fn share(value: &str, term: &str) -> Result<f64, String> {
    let bad = || {
        format!("objective term {term:?}: {value:?} is no share; write a percentage from 0% to 100%, as errors=0.1%")
    };
    let number: f64 = value
        .strip_suffix('%')
        .ok_or_else(bad)?
        .trim()
        .parse()
        .map_err(|_| bad())?;
    if !(0.0..=100.0).contains(&number) {
        return Err(bad());
    }
    Ok(number / 100.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn figures(offered: f64, achieved: f64, errors: u64, p50: u64, p99: u64) -> Figures {
        Figures {
            offered,
            achieved,
            requests: 10_000,
            errors,
            latency_us: [Some(p50), Some(p50), Some(p99), Some(p99)],
            ..Figures::default()
        }
    }

    #[test]
    fn an_objective_parses_in_the_users_and_the_plans_words() {
        let short = Objective::parse("p99=10ms").unwrap();
        assert_eq!(
            short.percentiles,
            vec![Bound {
                percentile: 99.0,
                latency_us: 10_000
            }]
        );
        assert_eq!(short.max_error_share, DEFAULT_MAX_ERROR_SHARE);
        let long = Objective::parse("p99 <= 10ms, p50 <= 2ms, errors <= 1%").unwrap();
        assert_eq!(
            long.percentiles
                .iter()
                .map(|b| b.percentile)
                .collect::<Vec<_>>(),
            vec![50.0, 99.0]
        );
        assert_eq!(long.max_error_share, 0.01);
        assert_eq!(
            Objective::parse("p99.9=1.5s").unwrap().percentiles[0].latency_us,
            1_500_000
        );
        assert_eq!(long.to_string(), "p50 <= 2 ms, p99 <= 10 ms, errors <= 1%");
    }

    #[test]
    fn a_bad_objective_is_one_line_saying_how_to_write_it() {
        for (text, says) in [
            ("p99<10", "write it as p99=10ms"),
            ("p101 <= 5ms", "use p50, p90, p99 or p99.9"),
            ("p99=-5ms", "write a positive time"),
            ("p99=10", "write a positive time"),
            ("p99=10ms,p99=5ms", "bounds p99 twice"),
            ("errors=1%", "bounds no latency percentile"),
            ("p99=10ms,errors=150%", "from 0% to 100%"),
            ("p99=10ms,errors=1", "write a percentage"),
        ] {
            let e = Objective::parse(text).unwrap_err();
            assert!(e.contains(says) && !e.contains('\n'), "{text}: {e}");
        }
    }

    #[test]
    fn a_probe_meets_it_with_every_bound_kept_and_its_rate_achieved() {
        let o = Objective::parse("p50=2ms,p99=10ms,errors=0.1%").unwrap();
        assert!(o.met(&figures(1000.0, 990.0, 10, 2_000, 10_000)));
        assert!(
            !o.met(&figures(1000.0, 990.0, 10, 2_000, 10_001)),
            "p99 over"
        );
        assert!(
            !o.met(&figures(1000.0, 990.0, 10, 2_001, 9_000)),
            "p50 over"
        );
        assert!(
            !o.met(&figures(1000.0, 979.0, 0, 1_000, 9_000)),
            "rate not achieved"
        );
        assert!(
            !o.met(&figures(1000.0, 990.0, 11, 1_000, 9_000)),
            "errors over"
        );
        let none = Figures {
            latency_us: [None; 4],
            ..figures(1000.0, 1000.0, 0, 0, 0)
        };
        assert!(!o.met(&none), "nothing completed");
    }

    #[test]
    fn a_probe_holds_enough_requests_for_its_highest_percentile() {
        assert_eq!(Objective::parse("p99=10ms").unwrap().min_requests(), 1_000);
        assert_eq!(
            Objective::parse("p50=1ms,p99.9=10ms")
                .unwrap()
                .min_requests(),
            10_000
        );
        assert_eq!(Objective::parse("p50=1ms").unwrap().min_requests(), 20);
    }
}
