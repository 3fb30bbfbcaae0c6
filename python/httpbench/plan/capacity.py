"""A plan's `[capacity]` table: each cell searched for the most requests per second it carries
within a latency objective, in place of `[levels]`.

    [capacity]
    objective = "p99 <= 10ms"
    max_errors = "0.1%"     # the objective's share of failed requests (default 0.1%)
    precision = "2%"        # the search settles when its bracket is this narrow
    probe = "3s"            # each probe's measured time, after its own 1 s warm-up
    rounds = 3              # probes confirming the rate found
    connections = 200       # the probes' pool; default: as many as the rate needs
    arrivals = "poisson"    # requests at random gaps, each taken by a free connection; default
                            # "even": evenly spaced on each connection, as wrk2 and oha send

The search is the engine's (`httpbench._engine.CapacitySearch`, the one `httpbench-load
--capacity` drives): the table's settings are handed to it as they are, and it is made once
here, so that what it refuses (an objective that does not parse, a precision over 50%) is
refused with the plan's line before anything runs.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Optional, Tuple

from httpbench import _engine
from httpbench.plan.values import ValueChecks, key_name, show

KEYS = (
    "objective",
    "max_errors",
    "precision",
    "probe",
    "rounds",
    "connections",
    "start",
    "min_rate",
    "max_rate",
    "arrivals",
)
ARRIVALS = ("even", "poisson")
# The top-level keys a capacity plan does without: the search chooses the rates, each probe's
# length and how many probes confirm it.
INSTEAD = {
    "levels": "a capacity search chooses its own rates",
    "budget": "capacity.probe sets each probe's length",
    "rounds": "capacity.rounds sets the probes that confirm the rate found",
    "max_rounds": "capacity.rounds sets the probes that confirm the rate found",
}
# What a time estimate counts on per search: a rise, a bisection and the confirmations of a
# search that settles within 2% (bench/RESULTS.md aims at 12 at most), each probe with its own
# warm-up and a drain.
EXPECTED_PROBES = 12
PROBE_OVERHEAD_S = 1.5

_SHARE = re.compile(r"^\s*(\d+(?:\.\d*)?|\.\d+)\s*%\s*$")


@dataclass(frozen=True)
class Capacity:
    """A plan's [capacity] table, as the search takes it (None: the engine's default)."""

    objective: str  # as the engine parses it, max_errors included
    precision: Optional[float] = None  # a share: 0.02 for 2%
    probe: Optional[float] = None  # seconds
    rounds: Optional[int] = None
    connections: Optional[int] = None
    start: Optional[float] = None
    min_rate: Optional[float] = None
    max_rate: Optional[float] = None
    arrivals: str = "even"  # the engine spec's `arrivals`

    def search(self) -> "_engine.CapacitySearch":
        """A new search with these settings; ValueError (one line) if the engine refuses them."""
        return _engine.CapacitySearch(
            self.objective,
            start=self.start,
            precision=self.precision,
            rounds=self.rounds,
            min_rate=self.min_rate,
            max_rate=self.max_rate,
            probe_s=self.probe,
        )

    def estimate_seconds(self) -> float:
        """A search's time on one cell, for the plan's estimate."""
        return EXPECTED_PROBES * ((self.probe or 3.0) + PROBE_OVERHEAD_S)


def read(checks: ValueChecks, data: dict, model: Optional[str], client: str, pipeline: int) -> Capacity:
    """The [capacity] table of a plan's `data`, refused in one line (checks.fail) where the rest
    of the plan cannot search: levels, a budget or rounds beside it, a closed loop, a client other
    than the engine, pipelining."""
    path = ("capacity",)
    table = checks.keys(data["capacity"], KEYS, path)
    for key, why in INSTEAD.items():
        if key in data:
            checks.fail((key,), f"{key} cannot be used with [capacity]: {why}; drop {key}")
    if model == "closed":
        checks.fail(
            ("model",),
            'model = "closed" cannot be used with [capacity]: a capacity search offers each rate '
            'in an open loop; drop model (or write model = "open")',
        )
    if client != "engine":
        checks.fail(
            ("client",),
            f'client = "{client}" cannot be used with [capacity]: only the engine runs the open-loop '
            'probes a capacity search needs; drop client (or write client = "engine")',
        )
    if pipeline > 1:
        checks.fail(
            ("pipeline",),
            f"pipeline = {pipeline} cannot be used with [capacity]: an open loop sends each request "
            "at its own time; drop pipeline",
        )
    if "objective" not in table:
        checks.fail(path, 'capacity.objective is missing: give the latency to keep, as objective = "p99 <= 10ms"')
    objective = checks.string(table["objective"], path + ("objective",))
    if "max_errors" in table:
        if "errors" in objective:
            checks.fail(
                path + ("max_errors",),
                "capacity.max_errors and an objective naming errors bound errors twice; keep one",
            )
        objective += f", errors <= {_percent(checks, table['max_errors'], path + ('max_errors',)) * 100:g}%"
    settings = Capacity(
        objective=objective,
        precision=_percent(checks, table["precision"], path + ("precision",)) if "precision" in table else None,
        probe=checks.duration(table["probe"], path + ("probe",), zero_ok=False) if "probe" in table else None,
        rounds=checks.integer(table["rounds"], path + ("rounds",), 1) if "rounds" in table else None,
        connections=checks.integer(table["connections"], path + ("connections",), 1)
        if "connections" in table
        else None,
        **{key: _rate(checks, table[key], path + (key,)) for key in ("start", "min_rate", "max_rate") if key in table},
        arrivals=_arrivals(checks, table.get("arrivals", "even"), path + ("arrivals",)),
    )
    try:
        settings.search()
    except ValueError as e:
        # The engine's words: what is wrong with the objective or the settings, and how to write it.
        where = _blamed(str(e), table)
        checks.fail(path + (where,), f"capacity.{where}: {e}")
    return settings


def _arrivals(checks: ValueChecks, value: Any, path: Tuple) -> str:
    if value not in ARRIVALS:
        checks.fail(
            path, f'capacity.arrivals = {show(value)} is not one of "even", "poisson"; write arrivals = "poisson"'
        )
    return value


def _blamed(message: str, table: dict) -> str:
    """The key of the table the engine's refusal is about, for its line."""
    for key, words in (
        ("precision", "precision"),
        ("start", "start rate"),
        ("min_rate", "smallest rate"),
        ("rounds", "round"),
        ("max_errors", "errors"),
    ):
        if key in table and words in message:
            return key
    return "objective"


def _percent(checks: ValueChecks, value: Any, path: Tuple) -> float:
    """ "2%" -> 0.02; a share may also be written as a number, 0.02."""
    if isinstance(value, (int, float)) and not isinstance(value, bool) and 0 <= value <= 1:
        return float(value)
    match = _SHARE.match(value) if isinstance(value, str) else None
    if not match:
        checks.fail(path, f'{key_name(path)} must be a percentage like "2%" (or a share like 0.02), got {show(value)}')
    return float(match.group(1)) / 100


def _rate(checks: ValueChecks, value: Any, path: Tuple) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
        checks.fail(
            path, f"{key_name(path)} must be a rate in requests per second above 0, like 1000, got {show(value)}"
        )
    return float(value)


def level_of(rate: float) -> int:
    """The level a probe at `rate` req/s is stored at: its offered rate, whole."""
    return max(1, round(rate))
