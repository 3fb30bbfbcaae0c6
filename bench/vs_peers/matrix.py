"""The bench's matrix: which scenarios run, against which server, with which tools, and what each
scenario collected (one Run per tool and repetition)."""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence

TOOLS = ("wrk", "h2load", "ab", "httpbench")
SCENARIOS = ("ka", "pipeline", "close", "big", "h2o", "reference")
SERVERS = ("nginx", "h2o", "reference")  # in the order they run
PIPELINE = 16
BASE_CONNS = 100


@dataclass
class Run:
    """One tool's run in one scenario. `rps` None: it gave no figures, `problem` says why."""

    tool: str
    rps: Optional[float] = None
    errors: Optional[int] = None  # transport errors plus failing statuses
    us_per_req: Optional[float] = None  # the client's own user+sys CPU / completed requests
    server_pct: Optional[float] = None  # the server's CPU over the run, 100 = one core
    others_pct: Optional[float] = None  # every other process's CPU meanwhile
    problem: Optional[str] = None
    noisy: bool = False
    engine_io: Optional[str] = None  # httpbench-load's I/O interface, from its report


@dataclass
class Scenario:
    key: str  # "nginx-ka-100": what the targets name
    server: str
    mode: str  # "ka" keep-alive, "pipe" PIPELINE requests deep, "close" keep-alive off
    conns: int
    tools: List[str]
    title: str
    runs: Dict[str, List[Run]] = field(default_factory=dict)
    skipped: Dict[str, str] = field(default_factory=dict)  # tool -> why it did not run

    def __post_init__(self) -> None:
        self.runs = {tool: [] for tool in self.tools}

    def ok(self, tool: str) -> List[Run]:
        return [run for run in self.runs.get(tool, []) if run.rps is not None]

    def values(self, tool: str, figure: str) -> List[float]:
        return [getattr(run, figure) for run in self.ok(tool) if getattr(run, figure) is not None]

    def med(self, tool: str, figure: str) -> Optional[float]:
        values = self.values(tool, figure)
        return statistics.median(values) if values else None

    def spread(self, tool: str, figure: str):
        values = self.values(tool, figure)
        return (min(values), max(values)) if values else None

    def why_not(self, tool: str) -> str:
        if tool in self.skipped:
            return self.skipped[tool]
        problems = [run.problem for run in self.runs.get(tool, []) if run.problem]
        return problems[-1][:120] if problems else "no result"


def build(levels: Sequence[int], big: int, scenarios: Sequence[str], tools: Sequence[str]) -> List[Scenario]:
    """The scenarios asked for, each with the asked-for tools that have its mode."""
    out = []

    def add(key, server, mode, conns, candidates, title):
        chosen = [tool for tool in candidates if tool in tools]
        if chosen:
            out.append(Scenario(key, server, mode, conns, chosen, title))

    if "ka" in scenarios:
        for conns in levels:
            add(f"nginx-ka-{conns}", "nginx", "ka", conns, TOOLS, f"nginx, keep-alive, {conns} connections")
    if "pipeline" in scenarios:
        add(
            f"nginx-pipe-{BASE_CONNS}",
            "nginx",
            "pipe",
            BASE_CONNS,
            ("wrk", "h2load", "httpbench"),
            f"nginx, pipelining {PIPELINE}, {BASE_CONNS} connections",
        )
    if "close" in scenarios:
        add(
            f"nginx-close-{BASE_CONNS}",
            "nginx",
            "close",
            BASE_CONNS,
            ("ab", "wrk", "httpbench"),
            f"nginx, keep-alive off, {BASE_CONNS} connections (wrk: -H 'Connection: close', not the same thing)",
        )
    if "big" in scenarios and big:
        add(f"nginx-ka-{big}", "nginx", "ka", big, ("wrk", "httpbench"), f"nginx, keep-alive, {big} connections")
    for server, title in (
        ("h2o", "h2o, keep-alive, {} connections"),
        ("reference", "reference server, keep-alive, {} connections (the client is the limit)"),
    ):
        if server in scenarios:
            add(
                f"{server}-ka-{BASE_CONNS}",
                server,
                "ka",
                BASE_CONNS,
                ("wrk", "h2load", "httpbench"),
                title.format(BASE_CONNS),
            )
    return out


def find(scenarios: Sequence[Scenario], key: str) -> Optional[Scenario]:
    return next((s for s in scenarios if s.key == key), None)
