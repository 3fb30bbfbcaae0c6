//! A capacity search in words: a line per probe as it ends, then the verdict.

use httpbench_engine::capacity::{Capacity, Limit, LimitedBy, Objective, Probe};

/// `41200.4` as "41,200".
pub fn rate(r: f64) -> String {
    let digits = format!("{:.0}", r.max(0.0));
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

fn ms(us: Option<u64>) -> String {
    match us {
        Some(us) if us >= 100_000 => format!("{:.0} ms", us as f64 / 1e3),
        Some(us) => format!("{:.2} ms", us as f64 / 1e3),
        None => "none".into(),
    }
}

/// "p99" for 99.0.
fn name(percentile: f64) -> String {
    format!("p{percentile}")
}

fn latency_at(p: &Probe, percentile: f64) -> Option<u64> {
    match percentile {
        50.0 => p.p50_us,
        90.0 => p.p90_us,
        99.0 => p.p99_us,
        _ => p.p99_9_us,
    }
}

/// The highest percentile the objective bounds.
fn top(objective: &Objective) -> f64 {
    objective.percentiles.last().map_or(99.0, |b| b.percentile)
}

/// One probe as it ends: "probe 3: 4,000 req/s offered, 3,998 sent, p50 0.21 ms, p99 0.48 ms,
/// 0 errors: met".
pub fn probe_line(index: usize, p: &Probe, objective: &Objective) -> String {
    let top = top(objective);
    format!(
        "probe {index:>2}: {:>9} req/s offered, {:>9} sent, p50 {}, {} {}, {} errors{}: {}",
        rate(p.offered),
        rate(p.achieved),
        ms(p.p50_us),
        name(top),
        ms(latency_at(p, top)),
        p.errors,
        if p.client_bound { ", client busy" } else { "" },
        if p.met { "met" } else { "not met" }
    )
}

/// Why a probe did not meet the objective: the first thing it broke.
fn broke(p: &Probe, objective: &Objective) -> String {
    if let Some(b) = objective
        .percentiles
        .iter()
        .rev()
        .find(|b| latency_at(p, b.percentile).is_none_or(|us| us > b.latency_us))
    {
        return format!(
            "at {} {}",
            name(b.percentile),
            ms(latency_at(p, b.percentile))
        );
    }
    if p.achieved < httpbench_engine::capacity::MIN_ACHIEVED_SHARE * p.offered {
        return format!("sending only {} req/s", rate(p.achieved));
    }
    format!("with {} errors", p.errors)
}

/// The verdict, one line: "capacity: 41,200 req/s at p99 <= 10 ms (p99 there 8.7 ms; 42,000
/// req/s broke it at p99 31 ms)", "at least" where the client or the connections set the pace,
/// or "no rate met ...".
pub fn verdict(c: &Capacity) -> String {
    let objective = &c.objective;
    let wanted = objective.to_string();
    let top = top(objective);
    let Some(found) = c.rate else {
        let lowest = c
            .probes
            .iter()
            .min_by(|a, b| a.offered.total_cmp(&b.offered));
        return match lowest {
            Some(p) => format!(
                "no rate met {wanted}: at {} req/s, {} {}",
                rate(p.offered),
                name(top),
                match broke(p, objective) {
                    s if s.starts_with("at ") => format!("was {}", ms(latency_at(p, top))),
                    s => format!(
                        "was {} ({})",
                        ms(latency_at(p, top)),
                        s.trim_start_matches("with ")
                    ),
                }
            ),
            None => format!("no rate met {wanted}: no probe ran"),
        };
    };
    // The worst of the probes at the capacity: each of them met the objective on its own.
    let there = c
        .probes
        .iter()
        .filter(|p| p.offered == found)
        .filter_map(|p| latency_at(p, top))
        .max();
    let above = c.interval.high.and_then(|high| {
        c.probes
            .iter()
            .find(|p| p.offered == high && !p.met)
            .map(|p| format!("; {} req/s broke it {}", rate(high), broke(p, objective)))
    });
    let detail = format!(
        "({} there {}{})",
        name(top),
        ms(there),
        above.unwrap_or_default()
    );
    let at_least = match (c.limited_by, c.bound) {
        (Some(LimitedBy::Client), _) => {
            " — the client set the pace (an engine thread at 90% busy or more): give it more threads or CPUs (-t, --cpus)"
        }
        (Some(LimitedBy::Connections), _) => {
            " — the connection pool set the pace (its cap, or -c): raise the open-file limit or -c"
        }
        (_, Some(Limit::MaxRate)) => " — the largest rate searched (--max-rate) met it",
        _ => "",
    };
    let unsettled = match c.bound {
        Some(Limit::Probes) => ", unsettled: the search ran out of probes",
        Some(Limit::Time) => ", unsettled: the search ran out of time",
        _ => "",
    };
    format!(
        "capacity: {}{} req/s at {wanted} {detail}{unsettled}{at_least}",
        if at_least.is_empty() { "" } else { "at least " },
        rate(found)
    )
}

#[cfg(test)]
mod tests {
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
            interval: httpbench_engine::capacity::Interval { low: rate, high },
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
            verdict(&c),
            "capacity: 41,200 req/s at p99 <= 10 ms, errors <= 0.1% (p99 there 9.00 ms; 42,000 req/s broke it at p99 31.00 ms)"
        );
        let none = capacity(None, vec![probe(100.0, 45, false)]);
        assert_eq!(
            verdict(&none),
            "no rate met p99 <= 10 ms, errors <= 0.1%: at 100 req/s, p99 was 45.00 ms"
        );
        let client = Capacity {
            limited_by: Some(LimitedBy::Client),
            ..c
        };
        assert!(verdict(&client).starts_with("capacity: at least 41,200 req/s"));
    }

    #[test]
    fn rates_read_with_thousands() {
        assert_eq!(rate(41_200.4), "41,200");
        assert_eq!(rate(999.0), "999");
        assert_eq!(rate(1_000_000.0), "1,000,000");
    }
}
