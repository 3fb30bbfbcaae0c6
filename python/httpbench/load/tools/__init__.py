"""The write-ups' own clients (ab, wrk, h2load), run for one level and parsed into the engine
report's shape (schema httpbench-load/1, typed in httpbench.load.report), so a reproduction can
be cross-checked against the engine with the original tool.

A field the tool does not give is None, never 0. Where a tool groups statuses or errors its own
way, `status` and `errors` carry its groups under its own names (ab's `non_2xx`, wrk's
`non_2xx_3xx`, wrk's `read`/`write` socket errors): they mean what the tool means, not what the
engine's classes mean. `client` holds the tool's name, version, command line and its own CPU time
(rusage of the child, with its wall time `wall_s` and `thread_count`), so the honesty checks work
on tool runs too. `client.threads` stays None, and so does `client.busy_share` for a tool with
more than one thread: its rusage is one figure for all of them, so the busiest is unknown.
"""

from __future__ import annotations

from typing import Callable, Dict, Optional, Sequence

from httpbench.load.report import Report
from httpbench.load.tools import ab, h2load, wrk
from httpbench.load.tools.process import REQUESTS_TIMEOUT_S, ClientError, Level, time_limit

TOOLS: Dict[str, Callable[[Level], Report]] = {"ab": ab.run, "wrk": wrk.run, "h2load": h2load.run}


def run(
    client: str,
    url: str,
    connections: int,
    budget_requests: Optional[int],
    budget_seconds: Optional[float],
    keep_alive: bool,
    cpus: Sequence[int],
    pipeline: int = 1,
    timeout: Optional[float] = None,
) -> Report:
    """Run `client` for one level against `url` and return its report. Exactly one budget is set.
    `cpus` pins the tool (empty: not pinned); `timeout` overrides the default bound."""
    if client not in TOOLS:
        raise ClientError(f"unknown client {client!r}: choose one of {', '.join(TOOLS)}")
    if (budget_requests is None) == (budget_seconds is None):
        raise ClientError(f"{client}: give exactly one budget, requests or seconds")
    if connections < 1 or pipeline < 1:
        raise ClientError(f"{client}: connections and pipeline must be >= 1, got {connections} and {pipeline}")
    if budget_requests is not None and budget_requests < 1 or budget_seconds is not None and budget_seconds <= 0:
        raise ClientError(f"{client}: the budget must be > 0")
    if timeout is None:
        timeout = time_limit(connections, budget_seconds) if budget_seconds is not None else REQUESTS_TIMEOUT_S
    return TOOLS[client](
        Level(url, connections, budget_requests, budget_seconds, keep_alive, tuple(cpus), pipeline, timeout)
    )
