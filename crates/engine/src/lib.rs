//! httpbench's load engine: closed-loop and open-loop HTTP/1.x load with exact accounting.
//!
//! The engine knows nothing of plans, servers or Python: it takes a [`LoadSpec`], runs it, and
//! returns a [`Report`]. Everything above it (the CLI, the Python suite) is a client of this API.

pub mod host;
pub mod http;
mod io;
pub mod report;
mod run;
pub mod spec;
pub mod stats;
mod worker;

pub use report::Report;
pub use run::run_until;
pub use spec::LoadSpec;

/// Why a run could not start or could not go on. Its `Display` is one line saying what is wrong
/// and what to do, fit to show a user as it is; `kind` lets a front end word the remedy in its
/// own terms instead (a command-line flag, a plan's level).
#[derive(Debug)]
pub struct Error {
    message: String,
    pub kind: ErrorKind,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    Other,
    /// The open-file limit allows fewer connections than asked.
    OpenFiles(OpenFiles),
}

/// `connections` need about `need` descriptors; this process may have `limit` (its soft limit,
/// already raised to the hard one), which leaves room for `most` connections.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OpenFiles {
    pub connections: u32,
    pub need: u64,
    pub limit: u64,
    pub hard_limit: u64,
    pub most: u64,
}

impl OpenFiles {
    /// What is wrong and what to do, with `fewer` saying how to ask for fewer connections.
    pub fn message(&self, fewer: &str) -> String {
        format!(
            "{} connections need about {} open files but this process may have {} (hard limit {}); {fewer} or raise the hard limit (ulimit -Hn, LimitNOFILE=)",
            self.connections, self.need, self.limit, self.hard_limit
        )
    }
}

impl Error {
    pub fn new(message: String) -> Error {
        Error {
            message,
            kind: ErrorKind::Other,
        }
    }
}

impl From<OpenFiles> for Error {
    fn from(o: OpenFiles) -> Error {
        Error {
            message: o.message(&format!("use at most {} connections", o.most)),
            kind: ErrorKind::OpenFiles(o),
        }
    }
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Error {}

/// Run a load test to the end and return its measurements.
pub fn run(spec: &LoadSpec) -> Result<Report, Error> {
    run_until(spec, &std::sync::atomic::AtomicBool::new(false))
}
