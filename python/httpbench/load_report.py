"""The load report (schema httpbench-load/1, docs/json-schema.md) as Python sees it, typed once.

The engine defines the report (crates/engine/src/report.rs) and hands it over as JSON; here it
is only given types, for the engine's reports, the cluster's merged levels (the engine's merge,
plus what the cluster adds) and the client tools' reports, which `tool_report` starts with every
field present. Readers index these fields directly: a field is never missing from a report made
by this version, and a tool leaves what it does not measure None, never 0.
"""

from __future__ import annotations

from typing import Dict, List, NotRequired, Optional, Type, TypedDict, TypeVar

SCHEMA = "httpbench-load/1"

T = TypeVar("T")

# A latency distribution in microseconds; `hdr` is the whole HdrHistogram (None from a tool).
Summary = TypedDict(
    "Summary",
    {
        "count": Optional[int],
        "min_us": Optional[float],
        "mean_us": Optional[float],
        "stdev_us": Optional[float],
        "max_us": Optional[float],
        "p50_us": Optional[float],
        "p75_us": Optional[float],
        "p90_us": Optional[float],
        "p99_us": Optional[float],
        "p99_9_us": Optional[float],
        "p99_99_us": Optional[float],
        "hdr": Optional[str],
    },
)

SUMMARY_FIELDS = tuple(Summary.__annotations__)

# Responses by status class; a tool that groups them its own way adds its groups (ab's
# `non_2xx`, wrk's `non_2xx_3xx`).
Status = TypedDict(
    "Status",
    {
        "1xx": Optional[int],
        "2xx": Optional[int],
        "3xx": Optional[int],
        "4xx": Optional[int],
        "5xx": Optional[int],
        "other": Optional[int],
    },
)


class Validation(TypedDict):
    """The one request made before the load, unless the spec's `validate` turned it off."""

    # Whether it was made; absent in reports from before the field, which always made it.
    sent: NotRequired[bool]
    status: int
    body_bytes: int
    ok: bool
    problem: Optional[str]


class Requests(TypedDict):
    sent: Optional[int]
    completed: Optional[int]
    failed: Optional[int]
    in_flight: Optional[int]
    in_flight_age_mean_us: Optional[float]
    in_flight_age_max_us: Optional[float]
    per_second: Optional[float]


class OpenLoop(TypedDict):
    target_rate: float
    achieved_rate: float
    behind_schedule: int
    fell_short: bool


class Bytes(TypedDict):
    head: Optional[int]
    body: Optional[int]
    read: Optional[int]
    written: Optional[int]


class Connections(TypedDict):
    opened: Optional[int]
    server_closes: Optional[int]


class Latency(TypedDict):
    total: Summary
    service: Optional[Summary]
    first_byte: Optional[Summary]
    connect: Optional[Summary]


class SecondPoint(TypedDict):
    second: int
    requests: int
    errors: int
    # None where several hosts' points were added: their percentiles do not add up.
    p50_us: Optional[int]
    p99_us: Optional[int]


class ThreadUse(TypedDict):
    cpu: Optional[int]
    user_s: float
    sys_s: float
    wall_s: float
    busy_share: float
    waiting_share: float


class ClientUse(TypedDict):
    threads: Optional[List[ThreadUse]]
    user_s: Optional[float]
    sys_s: Optional[float]
    busy_share: Optional[float]
    waiting_share: Optional[float]
    cpu_us_per_request: Optional[float]
    handling_delay_us: Optional[float]
    # A client tool's: its name, version and command line, and its process's wall time and
    # threads, which its rusage (user_s, sys_s) covers.
    tool: NotRequired[str]
    version: NotRequired[Optional[str]]
    argv: NotRequired[Optional[List[str]]]
    wall_s: NotRequired[Optional[float]]
    thread_count: NotRequired[Optional[int]]


class HostPart(TypedDict):
    """One client host's part of a cluster's level: its own report, without `started_at`."""

    host: str
    started_at: float
    report: dict


class LoadReport(TypedDict):
    schema: str
    engine: Optional[dict]
    spec: Optional[dict]
    validation: Optional[Validation]
    started_at: Optional[float]
    duration_s: Optional[float]
    requests: Requests
    open_loop: Optional[OpenLoop]
    status: Status
    errors: Dict[str, Optional[int]]
    errors_total: Optional[int]
    bytes: Bytes
    connections: Connections
    latency: Latency
    timeseries: Optional[List[SecondPoint]]
    client: ClientUse
    aborted: Optional[str]
    host: Optional[dict]


class LevelReport(LoadReport):
    """A cluster's level: its hosts' reports merged, with the level's spec; `host` and
    `started_at` are each host's, under `hosts`."""

    hosts: List[HostPart]
    start_spread_s: float
    client_hosts: List[str]
    lost_hosts: List[str]
    absent_hosts: List[str]


def _unknown(kind: Type[T]) -> T:
    """A TypedDict with every field present and unknown (None)."""
    return kind(**dict.fromkeys(kind.__annotations__))


def summary(**given: Optional[float]) -> Summary:
    """A latency summary with only the fields a tool gives set."""
    extra = set(given) - set(SUMMARY_FIELDS)
    assert not extra, extra
    return Summary(**{**_unknown(Summary), **given})


def tool_report(tool: str) -> LoadReport:
    """A client tool's report with every field present and unknown (None), for its parser to fill
    in."""
    return LoadReport(
        schema=SCHEMA,
        engine=None,
        spec=None,
        validation=None,
        started_at=None,
        duration_s=None,
        requests=_unknown(Requests),
        open_loop=None,
        status=_unknown(Status),
        errors={},
        errors_total=None,
        bytes=_unknown(Bytes),
        connections=_unknown(Connections),
        latency=Latency(total=summary(), service=None, first_byte=None, connect=None),
        timeseries=None,
        client=ClientUse(**{**_unknown(ClientUse), "tool": tool}),
        aborted=None,
        host=None,
    )
