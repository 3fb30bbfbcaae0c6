//! httpbench's load engine: closed-loop and open-loop HTTP/1.x load with exact accounting.
//!
//! The engine knows nothing of plans, servers or Python: it takes a [`LoadSpec`], runs it, and
//! returns a [`Report`]. Everything above it (the CLI, the Python suite) is a client of this API.

pub mod capacity;
mod error;
pub mod h2;
pub mod host;
mod hostile;
pub mod http;
mod io;
pub mod mix;
pub mod report;
mod run;
pub mod spec;
pub mod stats;
pub mod tls;
mod validate;
mod worker;

pub use error::{Error, ErrorKind, OpenFiles};
pub use report::Report;
pub use run::run_until;
pub use spec::LoadSpec;

/// Run a load test to the end and return its measurements.
pub fn run(spec: &LoadSpec) -> Result<Report, Error> {
    run_until(spec, &std::sync::atomic::AtomicBool::new(false))
}
