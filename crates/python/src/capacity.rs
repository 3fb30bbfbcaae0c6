//! The capacity search as a Python object, for the suite's sweep, which runs each probe itself
//! (watching the server around it, or splitting it over client hosts) and tells the search what
//! it measured: the same search `httpbench-load --capacity` drives.

use std::time::{Duration, Instant};

use httpbench_engine::capacity::{Capacity, Next, Objective, Pool, Search, Settings};
use httpbench_engine::{LoadSpec, Report};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use crate::EngineError;

#[pyclass(name = "CapacitySearch", module = "httpbench._engine")]
pub struct CapacitySearch {
    search: Search,
    began: Instant,
}

fn json<T: serde::Serialize>(value: &T) -> PyResult<String> {
    serde_json::to_string(value).map_err(|e| EngineError::new_err(e.to_string()))
}

#[pymethods]
impl CapacitySearch {
    /// `objective` as users write it (`p99=10ms`, `p99 <= 10ms, errors <= 0.1%`); every other
    /// setting defaults as the engine's `Settings` does. What cannot search raises ValueError
    /// with one line saying why.
    #[new]
    #[pyo3(signature = (objective, start=None, precision=None, rounds=None, min_rate=None, max_rate=None, max_probes=None, time_limit_s=None, probe_s=None, warmup_s=None))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        objective: &str,
        start: Option<f64>,
        precision: Option<f64>,
        rounds: Option<u32>,
        min_rate: Option<f64>,
        max_rate: Option<f64>,
        max_probes: Option<u32>,
        time_limit_s: Option<f64>,
        probe_s: Option<f64>,
        warmup_s: Option<f64>,
    ) -> PyResult<CapacitySearch> {
        let objective = Objective::parse(objective).map_err(PyValueError::new_err)?;
        let d = Settings::default();
        let seconds = |s: Option<f64>, default: Duration| -> PyResult<Duration> {
            match s {
                None => Ok(default),
                Some(s) => Duration::try_from_secs_f64(s)
                    .map_err(|_| PyValueError::new_err(format!("{s} is no time in seconds"))),
            }
        };
        let settings = Settings {
            start: start.unwrap_or(d.start),
            precision: precision.unwrap_or(d.precision),
            rounds: rounds.unwrap_or(d.rounds),
            min_rate: min_rate.unwrap_or(d.min_rate),
            max_rate: max_rate.unwrap_or(d.max_rate),
            max_probes: max_probes.unwrap_or(d.max_probes),
            time_limit: seconds(time_limit_s, d.time_limit)?,
            probe: seconds(probe_s, d.probe)?,
            warmup: seconds(warmup_s, d.warmup)?,
            ..d
        };
        Ok(CapacitySearch {
            search: Search::new(objective, settings).map_err(PyValueError::new_err)?,
            began: Instant::now(),
        })
    }

    /// The rate to probe next, or None once the search is done.
    fn next_rate(&self) -> Option<f64> {
        match self.search.next() {
            Next::Probe(rate) => Some(rate),
            Next::Done => None,
        }
    }

    /// The spec (JSON) of a probe at `rate` from the cell's `base_json`: `connections` fixes
    /// the pool, None sizes it for the rate under the open-file limit.
    #[pyo3(signature = (base_json, rate, connections=None))]
    fn probe_spec(&self, base_json: &str, rate: f64, connections: Option<u32>) -> PyResult<String> {
        let base: LoadSpec = serde_json::from_str(base_json)
            .map_err(|e| EngineError::new_err(format!("bad load spec: {e}")))?;
        let pool = Pool::new(connections, base.threads);
        json(&self.search.probe_spec(&base, rate, pool))
    }

    /// Tell the search the report (JSON, whatever measured it) of the probe it asked for;
    /// returns the probe as the capacity object keeps it (JSON).
    fn record(&mut self, report_json: &str) -> PyResult<String> {
        let report = Report::read_any(report_json)
            .map_err(|e| EngineError::new_err(format!("not a load report: {e}")))?;
        let figures = self.search.figures(&report);
        self.search.record(&figures, self.began.elapsed());
        json(&self.search.outcome().probes.last())
    }

    /// What the search found so far (everything once `next_rate` is None): the report's
    /// `capacity` object, as JSON.
    fn capacity(&self) -> PyResult<String> {
        json(&self.search.outcome())
    }
}

/// A stored capacity object (JSON) in the engine's words: (its objective, as "p99 <= 10 ms,
/// errors <= 0.1%"; its verdict, one line, see `Capacity::verdict`; whether the capacity is a
/// floor, `Capacity::at_least`), so that the suite says what `httpbench-load --capacity` says.
#[pyfunction]
pub fn capacity_words(capacity_json: &str) -> PyResult<(String, String, bool)> {
    let capacity: Capacity = serde_json::from_str(capacity_json)
        .map_err(|e| EngineError::new_err(format!("not a capacity object: {e}")))?;
    Ok((
        capacity.objective.to_string(),
        capacity.verdict(),
        capacity.at_least(),
    ))
}
