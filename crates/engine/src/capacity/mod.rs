//! Capacity: the most traffic a server carries within a latency objective, found by open-loop
//! probes at one rate each. The objective and the search are here, sans IO; running the probes
//! is the caller's, so one search serves the CLI, the suite's sweep and a cluster.

mod objective;
mod search;

pub use objective::{Bound, Figures, Objective, DEFAULT_MAX_ERROR_SHARE, MIN_ACHIEVED_SHARE};
pub use search::{Limit, Next, Outcome, Probe, Search, Settings};
