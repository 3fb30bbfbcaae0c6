//! A capacity search on the command line: a line per probe as it ends, then the engine's
//! verdict with this command line's remedy where the capacity is a floor.

use httpbench_engine::capacity::words::{ms, name, rate};
use httpbench_engine::capacity::{Capacity, Limit, LimitedBy, Objective, Probe};

/// One probe as it ends: "probe 3: 4,000 req/s offered, 3,998 sent, p50 0.21 ms, p99 0.48 ms,
/// 0 errors: met".
pub fn probe_line(index: usize, p: &Probe, objective: &Objective) -> String {
    let top = objective.top();
    format!(
        "probe {index:>2}: {:>9} req/s offered, {:>9} sent, p50 {}, {} {}, {} errors{}: {}",
        rate(p.offered),
        rate(p.achieved),
        ms(p.p50_us),
        name(top),
        ms(p.at(top)),
        p.errors,
        if p.client_bound { ", client busy" } else { "" },
        if p.met { "met" } else { "not met" }
    )
}

/// The verdict, and what to do where the capacity is a floor.
pub fn verdict(c: &Capacity) -> String {
    let remedy = match (c.limited_by, c.bound) {
        (Some(LimitedBy::Client), _) => ": give it more threads or CPUs (-t, --cpus)",
        (Some(LimitedBy::Connections), _) => ": raise the open-file limit, or -c",
        (_, Some(Limit::MaxRate)) => ": raise --max-rate",
        _ => "",
    };
    format!("{}{remedy}", c.verdict())
}
