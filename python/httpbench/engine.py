"""The engine's Python API: dicts in, dicts out.

The extension speaks JSON strings so that the spec and report schemas are defined once, in Rust
(serde); here they only become dicts.
"""

import json
import os

from httpbench import _engine

EngineError = _engine.EngineError
# An EngineError whose `connections`, `need`, `limit`, `hard_limit` and `most` (the connections
# the open-file limit allows) let a caller word the remedy in its own terms.
OpenFilesError = _engine.OpenFilesError


def run(spec: dict) -> dict:
    """Run a load test described by ``spec`` (a LoadSpec) and return its report.

    Raises EngineError (a ValueError) with a one-line message if the spec is bad or the run
    cannot start or go on.
    """
    return json.loads(_engine.run(json.dumps(spec)))


def with_threads(spec: dict) -> dict:
    """``spec`` with one engine thread per CPU its load may use (its pinned ``cpus``, else every
    CPU this process may run on), but no more than its connections: the engine refuses idle
    threads. Decided where the engine runs, which on a cluster is each client host."""
    cpus = len(spec.get("cpus") or ()) or len(os.sched_getaffinity(0))
    return {**spec, "threads": max(1, min(cpus, spec["connections"]))}


def host_facts() -> dict:
    """This host's facts: CPU, kernel, distribution, memory, open-file limits and the sysctls
    benchmarks tune."""
    return json.loads(_engine.host_facts())


def merge_latency(summaries: list) -> dict:
    """Add the histograms of several latency summaries (rounds, threads, hosts) and summarise the
    sum: exact percentiles, never an average of percentiles."""
    return json.loads(_engine.merge_latency([s["hdr"] for s in summaries]))


def merge_reports(reports: list) -> dict:
    """One report from the reports of one run's parts (its hosts' engines): counts and
    histograms added, every rate and mean derived again (the engine's ``Report::merge``)."""
    return json.loads(_engine.merge_reports([json.dumps(r) for r in reports]))


def split_spec(spec: dict, hosts: int) -> list:
    """``spec`` split over ``hosts`` client hosts, one spec per host it takes: connections, rate
    and request budget divided as the engine divides them over its threads."""
    return [json.loads(s) for s in _engine.split_spec(json.dumps(spec), hosts)]


def latency_spectrum(summaries: list, ticks: int = 5) -> list:
    """The percentile spectrum of the added histograms, from the median up to the largest value:
    ``[[percentile, microseconds], ...]``."""
    return json.loads(_engine.latency_spectrum([s["hdr"] for s in summaries], ticks))
