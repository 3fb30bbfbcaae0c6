//! `httpbench._engine`: the Python face of the engine. It speaks JSON strings both ways so that
//! the spec and report schemas are defined once, by serde, and Python just loads them.
//!
//! Long calls (`run`, `load_main`) release the GIL so other Python threads (a server supervisor,
//! a progress printer) keep running. `run` works in a thread of its own and checks for Python
//! signals every 20 ms, so Ctrl-C stops the engine promptly and surfaces as KeyboardInterrupt;
//! `load_main` handles SIGINT itself, as the standalone CLI does.
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use httpbench_engine::ErrorKind;
use pyo3::import_exception;

mod capacity;
use pyo3::prelude::*;

// Defined in Python (httpbench/errors.py), where every error the user can fix derives from one
// base class.
import_exception!(httpbench.errors, EngineError);
import_exception!(httpbench.errors, EnginePanicked);

/// The engine's error as Python's EngineError, with its kind and the kind's fields, its `fact`
/// among them (what is wrong without the remedy, which a caller words in its own terms); a
/// panic as EnginePanicked.
fn engine_error(py: Python<'_>, e: httpbench_engine::Error) -> PyErr {
    if let ErrorKind::Panicked { .. } = e.kind {
        return EnginePanicked::new_err(e.to_string());
    }
    let mut fields = match serde_json::to_value(&e.kind) {
        Ok(serde_json::Value::Object(fields)) => fields,
        _ => serde_json::Map::new(),
    };
    let kind = match fields.remove("kind") {
        Some(serde_json::Value::String(kind)) => kind,
        _ => "other".to_string(),
    };
    fields.insert("fact".into(), e.kind.fact().into());
    let raised = (|| -> PyResult<PyErr> {
        let fields = py
            .import("json")?
            .call_method1("loads", (serde_json::Value::Object(fields).to_string(),))?;
        let error = py
            .get_type::<EngineError>()
            .call1((e.to_string(), kind, fields))?;
        Ok(PyErr::from_value(error))
    })();
    raised.unwrap_or_else(|failed| failed)
}

/// A panic caught at the module's edge (the module unwinds: see Cargo.toml's python profile).
fn panicked(py: Python<'_>, payload: Box<dyn std::any::Any + Send>) -> PyErr {
    engine_error(py, httpbench_engine::Error::panicked(&*payload))
}

/// Run a load test described by `spec_json` (a `LoadSpec`) and return its `Report` as JSON.
#[pyfunction]
fn run(py: Python<'_>, spec_json: &str) -> PyResult<String> {
    let spec: httpbench_engine::LoadSpec = serde_json::from_str(spec_json)
        .map_err(|e| EngineError::new_err((format!("bad load spec: {e}"), "invalid_spec")))?;
    let stop = Arc::new(AtomicBool::new(false));
    let engine = {
        let stop = Arc::clone(&stop);
        std::thread::spawn(move || httpbench_engine::run_until(&spec, &stop))
    };
    while !engine.is_finished() {
        py.detach(|| std::thread::sleep(Duration::from_millis(20)));
        if let Err(interrupt) = py.check_signals() {
            stop.store(true, Ordering::Relaxed);
            py.detach(|| engine.join()).ok();
            return Err(interrupt);
        }
    }
    let outcome = engine.join().map_err(|payload| panicked(py, payload))?;
    let report = outcome.map_err(|e| engine_error(py, e))?;
    serde_json::to_string(&report).map_err(|e| EngineError::new_err(e.to_string()))
}

/// Serve `root` with the suite's reference server (`httpbench-reference`) until a Python signal
/// handler raises (Ctrl-C; SIGTERM once Python handles it): the exception ends the serving, which
/// closes the sockets, and propagates. `threads` 0 means one event loop per CPU of the affinity
/// mask. With `tls`, (certificate PEM file, its key's PEM file, version "1.2" or "1.3" or None
/// for both), it serves HTTPS.
#[pyfunction]
#[pyo3(signature = (root, host, port, threads, tls=None))]
fn serve_reference(
    py: Python<'_>,
    root: std::path::PathBuf,
    host: &str,
    port: u16,
    threads: usize,
    tls: Option<(std::path::PathBuf, std::path::PathBuf, Option<String>)>,
) -> PyResult<()> {
    let server =
        httpbench_reference::Server::bind(&root, host, port, threads).and_then(
            |server| match &tls {
                Some((cert, key, version)) => server.with_tls(cert, key, version.as_deref()),
                None => Ok(server),
            },
        );
    let server = server.map_err(EngineError::new_err)?;
    eprintln!("{}", server.banner(&root));
    let stop = Arc::new(AtomicBool::new(false));
    let serving = {
        let stop = Arc::clone(&stop);
        std::thread::spawn(move || server.run(&stop))
    };
    while !serving.is_finished() {
        py.detach(|| std::thread::sleep(Duration::from_millis(100)));
        if let Err(interrupt) = py.check_signals() {
            stop.store(true, Ordering::Relaxed);
            py.detach(|| serving.join()).ok();
            return Err(interrupt);
        }
    }
    let outcome = serving.join().map_err(|payload| panicked(py, payload))?;
    outcome.map_err(EngineError::new_err)
}

/// This host's facts (CPU, kernel, memory, sysctls, limits) as JSON.
#[pyfunction]
fn host_facts() -> PyResult<String> {
    serde_json::to_string(&httpbench_engine::host::facts())
        .map_err(|e| EngineError::new_err(e.to_string()))
}

/// The report's JSON Schema, derived from the engine's types: what
/// python/httpbench/load/fields.py is generated from.
#[pyfunction]
fn report_schema() -> String {
    httpbench_engine::report::schema().to_string()
}

/// Merge encoded latency histograms exactly; returns the merged summary (schema's `summary`) as
/// JSON.
#[pyfunction]
fn merge_latency(hdrs: Vec<String>) -> PyResult<String> {
    let merged = httpbench_engine::report::merge_histograms(hdrs.iter().map(String::as_str))
        .map_err(|e| EngineError::new_err(format!("not an HdrHistogram: {e}")))?;
    serde_json::to_string(&httpbench_engine::report::Summary::of(&merged))
        .map_err(|e| EngineError::new_err(e.to_string()))
}

/// One report (JSON) of the run `spec_json` from the JSON reports of its parts, merged as they
/// ran: "concurrent", its hosts' engines, or "sequential", a level's rounds (`spec_json` None:
/// the first part's spec, which the rounds of a level share). A part is read whatever measured
/// it (`Report::read_any`: a client tool's nulls, an older version's missing fields); see
/// `Report::merge`.
#[pyfunction]
#[pyo3(signature = (spec_json, reports, parts="concurrent"))]
fn merge_reports(spec_json: Option<&str>, reports: Vec<String>, parts: &str) -> PyResult<String> {
    let how: httpbench_engine::report::Parts = serde_json::from_value(parts.into())
        .map_err(|e| EngineError::new_err(format!("bad parts: {e}")))?;
    let parts = reports
        .iter()
        .map(|r| httpbench_engine::Report::read_any(r))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| EngineError::new_err(format!("not a load report: {e}")))?;
    let spec = match spec_json {
        Some(spec) => serde_json::from_str(spec)
            .map_err(|e| EngineError::new_err(format!("bad load spec: {e}")))?,
        None => parts
            .first()
            .map(|r| r.spec.clone())
            .ok_or_else(|| EngineError::new_err("no reports to merge"))?,
    };
    let merged =
        httpbench_engine::Report::merge(&spec, &parts, how).map_err(EngineError::new_err)?;
    serde_json::to_string(&merged).map_err(|e| EngineError::new_err(e.to_string()))
}

/// What the report `report_json` (read whatever measured it, as `merge_reports` reads a part)
/// says of its goodput: its succeeded requests and `Report::error_share`, each None where its
/// client could not tell which answers succeeded.
#[pyfunction]
fn goodput(report_json: &str) -> PyResult<(Option<u64>, Option<f64>)> {
    let report = httpbench_engine::Report::read_any(report_json)
        .map_err(|e| EngineError::new_err(format!("not a load report: {e}")))?;
    Ok((report.requests.succeeded, report.error_share()))
}

/// What the points of the report `report_json`'s fine series (`ticks`) from `from_ms`
/// (included) to `to_ms` (excluded) carried, as JSON (`WindowFigures`: requests, errors by class,
/// closed_by_server, p50_us, p99_us, max_us); an error if the report has no fine series.
#[pyfunction]
fn ticks_window(report_json: &str, from_ms: u64, to_ms: u64) -> PyResult<String> {
    let ticks = ticks_of(report_json)?;
    serde_json::to_string(&ticks.window(from_ms, to_ms))
        .map_err(|e| EngineError::new_err(e.to_string()))
}

/// Every point of the report `report_json`'s fine series with its figures, as JSON: a list of
/// `[at_ms, WindowFigures]`, what a timeline draws; an error if the report has no fine series.
#[pyfunction]
fn ticks_points(report_json: &str) -> PyResult<String> {
    let ticks = ticks_of(report_json)?;
    let step = u64::from(ticks.interval_ms);
    let points: Vec<_> = ticks
        .points
        .iter()
        .map(|p| (p.at_ms, ticks.window(p.at_ms, p.at_ms + step)))
        .collect();
    serde_json::to_string(&points).map_err(|e| EngineError::new_err(e.to_string()))
}

fn ticks_of(report_json: &str) -> PyResult<httpbench_engine::report::Ticks> {
    let report = httpbench_engine::Report::read_any(report_json)
        .map_err(|e| EngineError::new_err(format!("not a load report: {e}")))?;
    report.ticks.ok_or_else(|| {
        EngineError::new_err("the report has no fine series (ticks): run it with tick_ms")
    })
}

/// The spec `spec_json` split over `hosts` client hosts: JSON specs, one per host it takes (see
/// `LoadSpec::split`).
#[pyfunction]
fn split_spec(spec_json: &str, hosts: usize) -> PyResult<Vec<String>> {
    let spec: httpbench_engine::LoadSpec = serde_json::from_str(spec_json)
        .map_err(|e| EngineError::new_err(format!("bad load spec: {e}")))?;
    spec.split(hosts)
        .iter()
        .map(|s| serde_json::to_string(s).map_err(|e| EngineError::new_err(e.to_string())))
        .collect()
}

/// The percentile spectrum of the merged histograms: JSON `[[percentile, microseconds], ...]`.
#[pyfunction]
fn latency_spectrum(hdrs: Vec<String>, ticks: u32) -> PyResult<String> {
    let merged = httpbench_engine::report::merge_histograms(hdrs.iter().map(String::as_str))
        .map_err(|e| EngineError::new_err(format!("not an HdrHistogram: {e}")))?;
    serde_json::to_string(&httpbench_engine::report::percentile_spectrum(
        &merged, ticks,
    ))
    .map_err(|e| EngineError::new_err(e.to_string()))
}

/// Run the `httpbench-load` command line with `argv` (argv[0] is the program name shown in its
/// help and errors); returns its exit code. A panic raises EnginePanicked.
#[pyfunction]
fn load_main(py: Python<'_>, argv: Vec<String>) -> PyResult<i32> {
    py.detach(|| std::panic::catch_unwind(|| httpbench_load::main_with_args(argv)))
        .map_err(|payload| panicked(py, payload))
}

#[pymodule]
#[pyo3(name = "_engine")]
fn engine(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add_function(wrap_pyfunction!(run, m)?)?;
    m.add_function(wrap_pyfunction!(host_facts, m)?)?;
    m.add_function(wrap_pyfunction!(report_schema, m)?)?;
    m.add_function(wrap_pyfunction!(load_main, m)?)?;
    m.add_function(wrap_pyfunction!(serve_reference, m)?)?;
    m.add_function(wrap_pyfunction!(merge_latency, m)?)?;
    m.add_function(wrap_pyfunction!(latency_spectrum, m)?)?;
    m.add_function(wrap_pyfunction!(merge_reports, m)?)?;
    m.add_function(wrap_pyfunction!(split_spec, m)?)?;
    m.add_class::<capacity::CapacitySearch>()?;
    m.add_function(wrap_pyfunction!(capacity::capacity_words, m)?)?;
    m.add_function(wrap_pyfunction!(goodput, m)?)?;
    m.add_function(wrap_pyfunction!(ticks_window, m)?)?;
    m.add_function(wrap_pyfunction!(ticks_points, m)?)?;
    Ok(())
}
