"""The engine's Python API: dicts in, dicts out.

The extension speaks JSON strings so that the spec and report schemas are defined once, in Rust
(serde); here they only become dicts, typed and filled in by httpbench.load.report.
"""

import json
import os
from typing import NamedTuple, Optional

from httpbench import _engine

# Here for the engine's callers to catch: engine.EngineError, engine.EnginePanicked.
from httpbench.errors import EngineError, EnginePanicked  # noqa: F401
from httpbench.load.report import Report, Summary, filled


def run(spec: dict) -> Report:
    """Run a load test described by ``spec`` (a LoadSpec) and return its report.

    Raises EngineError, with a one-line message and the error's kind and fields, if the spec is
    bad or the run cannot start or go on; EnginePanicked if the engine hit a bug.
    """
    return filled(json.loads(_engine.run(json.dumps(spec))))


def in_plan_terms(error: EngineError) -> str:
    """The engine's refusal as a plan's user can act on it: in the plan's keys, never in the
    flags of `httpbench load`. The kinds a plan cannot cause, or whose remedy names no option
    (the server is unreachable, a URL is invalid), keep the engine's own words."""
    f = error.fields
    if error.kind == "validation_failed":
        return f"{f['fact']}; set allow_errors = true in the plan to load it anyway"
    if error.kind == "too_few_requests":
        return (
            f"budget.requests = {f['requests']} is less than the {f['connections']} connections of level "
            f"{f['connections']}: some would send nothing; raise budget.requests in the plan or drop the levels "
            f"above {f['requests']}"
        )
    if error.kind == "open_files":
        return (
            f"level {f['connections']}: {f['fact']}; drop the levels above {f['most']} from the plan, or raise the "
            "hard limit"
        )
    if error.kind == "pipeline_without_keep_alive":
        return (
            f"pipeline = {f['pipeline']} needs keep_alive = true: connections that close after each request "
            "carry one request at a time; set pipeline = 1 in the plan, or drop false from keep_alive"
        )
    if error.kind == "tls_certificate":
        # The suite made the certificate and the authority the engine checks it against: a
        # server that presents another one was given or kept a certificate of its own.
        return (
            f"the server's certificate is not the one httpbench made for the cell ({f['reason']}); "
            "a directive or config_file of the plan may set another certificate: let the suite's stand"
        )
    if error.kind == "http2_not_selected":
        # The suite sets h2 up on an h2 cell's server, as it does its certificate; what the plan
        # adds to the server's configuration may undo it.
        return (
            f"{f['fact']}; a directive or config_file of the plan may turn h2 off on the server: let the "
            'suite\'s h2 settings stand, or drop "h2" from protocols'
        )
    if error.kind == "tls_handshake":
        what = "refused every offer" if f["refused"] else "did not complete a TLS handshake"
        return f"the server {what}: {f['problem']}; check tls.version in the plan and the server's TLS settings"
    return str(error)


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


def merge_latency(summaries: list) -> Summary:
    """Add the histograms of several latency summaries (rounds, threads, hosts) and summarise the
    sum: exact percentiles, never an average of percentiles."""
    return json.loads(_engine.merge_latency([s["hdr"] for s in summaries]))


def merge_reports(spec: Optional[dict], reports: list, parts: str = "concurrent") -> Report:
    """The report of the run ``spec`` from the reports of its parts, as they ran: "concurrent" (a
    cluster's hosts: the longest part's duration) or "sequential" (a level's rounds: their
    durations added; spec None, theirs). The whole spec (an open loop's target is its rate),
    counts and histograms added, every rate and mean derived again (the engine's
    ``Report::merge``). A part without histograms, a client tool's, leaves the merged latencies
    none (``hdr`` empty)."""
    merged = _engine.merge_reports(None if spec is None else json.dumps(spec), [json.dumps(r) for r in reports], parts)
    return filled(json.loads(merged))


class Goodput(NamedTuple):
    """What a report says of the requests that succeeded (`engine.goodput`)."""

    succeeded: Optional[int]  # None: its client could not tell (wrk)
    error_share: Optional[float]  # the engine's Report::error_share, None likewise


def goodput(report: dict) -> Goodput:
    """The succeeded requests of ``report`` and the share of its requests that did not
    succeed (answers with another status than the spec's ``expect_status``, any 2xx by default,
    plus errors), as the engine reads it whatever measured it: a report from before
    ``requests.succeeded`` that counted its 2xx answers reads them as its succeeded."""
    return Goodput(*_engine.goodput(json.dumps(report)))


def ticks_window(report: dict, from_ms: int, to_ms: int) -> dict:
    """What the points of ``report``'s fine series (``ticks``) starting from ``from_ms``
    (included) to ``to_ms`` (excluded) carried: ``requests``, ``errors`` by class (the non-zero
    ones), ``closed_by_server``, and ``p50_us``, ``p99_us``, ``max_us`` of their latencies, added
    as histograms by the engine (``Ticks::window``). Raises EngineError without a fine series."""
    return json.loads(_engine.ticks_window(json.dumps(report), from_ms, to_ms))


def ticks_points(report: dict) -> list:
    """Every point of ``report``'s fine series as ``(at_ms, figures)``, the figures those of
    ``ticks_window`` over the point alone: what a timeline draws."""
    return [(at, figures) for at, figures in json.loads(_engine.ticks_points(json.dumps(report)))]


class CapacityWords(NamedTuple):
    """A capacity object in the engine's words, as ``httpbench-load --capacity`` says it."""

    objective: str  # "p99 <= 10 ms, errors <= 0.1%"
    verdict: str  # "capacity: 41,200 req/s at ... (p99 there 8.70 ms; ...)", or "no rate met ..."
    at_least: bool  # a floor: the client or the pool set the pace, or the search did not settle


def capacity_words(capacity: dict) -> CapacityWords:
    return CapacityWords(*_engine.capacity_words(json.dumps(capacity)))


def split_spec(spec: dict, hosts: int) -> list:
    """``spec`` split over ``hosts`` client hosts, one spec per host it takes: connections, rate
    and request budget divided as the engine divides them over its threads."""
    return [json.loads(s) for s in _engine.split_spec(json.dumps(spec), hosts)]


def latency_spectrum(summaries: list, ticks: int = 5) -> list:
    """The percentile spectrum of the added histograms, from the median up to the largest value:
    ``[[percentile, microseconds], ...]``."""
    return json.loads(_engine.latency_spectrum([s["hdr"] for s in summaries], ticks))
