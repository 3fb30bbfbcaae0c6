//! Capacity: the most traffic a server carries within a latency objective, found by open-loop
//! probes at one rate each. The objective and the search are here, sans IO; running the probes
//! is the caller's, so one search serves the CLI, the suite's sweep and a cluster.

mod objective;
mod probe;
mod search;
pub mod words;

pub use objective::{Bound, Figures, Objective, DEFAULT_MAX_ERROR_SHARE, MIN_ACHIEVED_SHARE};
pub use probe::{client_bound, run_until, Pool, CLIENT_BOUND_SHARE};
pub use search::{Capacity, Interval, Limit, LimitedBy, Next, Probe, Search, Settings};
