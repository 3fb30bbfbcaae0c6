"""The bench's matrix: which scenarios run, against which server, with which tools, and what each
scenario collected (one Run per tool and repetition)."""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence

TOOLS = ("wrk", "h2load", "ab", "oha", "httpbench")
# oha joined with the HTTPS scenarios; the cleartext ones keep the tools their recorded runs had.
HTTP_TOOLS = ("wrk", "h2load", "ab", "httpbench")
PEERS = tuple(tool for tool in TOOLS if tool != "httpbench")
HTTP_SCENARIOS = ("ka", "pipeline", "close", "big", "h2o", "reference")
# tls-idle is no scenario of tools but httpbench-load's memory per idle connection (vs_peers/idle.py).
TLS_SCENARIOS = ("tls-ka", "tls-close", "tls-resume", "tls-reference", "tls-idle")
# HTTP/2 over TLS 1.3 (ALPN) and in cleartext by prior knowledge (issue 15).
H2_SCENARIOS = ("h2", "h2c")
SCENARIOS = HTTP_SCENARIOS + TLS_SCENARIOS + H2_SCENARIOS
SERVERS = ("nginx", "h2o", "reference")  # in the order they run, each over http, then https
PIPELINE = 16
BASE_CONNS = 100
# Without keep-alive every request is a handshake and the client is the limit long before the
# connection count matters; 20 is what the figures of issue 14 were measured with.
TLS_CLOSE_CONNS = 20
# Issue 15's shapes, (connections, streams per connection), and the clients that speak HTTP/2.
H2_SHAPES = ((10, 10), (100, 10), (100, 100))
H2_TOOLS = ("h2load", "oha", "httpbench")
H2_SERVERS = ("nginx", "h2o")  # the reference server has no HTTP/2


@dataclass
class Run:
    """One tool's run in one scenario. `rps` None: it gave no figures, `problem` says why."""

    tool: str
    rps: Optional[float] = None
    errors: Optional[int] = None  # transport errors plus failing statuses
    us_per_req: Optional[float] = None  # the client's own user+sys CPU / completed requests
    server_pct: Optional[float] = None  # the server's CPU over the run, 100 = one core
    client_pct: Optional[float] = None  # the client's own CPU over its wall time, 100 = one core
    others_pct: Optional[float] = None  # every other process's CPU meanwhile
    problem: Optional[str] = None
    noisy: bool = False
    engine_io: Optional[str] = None  # httpbench-load's I/O interface, from its report
    # Over HTTPS, httpbench-load's own counts; a peer without keep-alive makes one full handshake
    # per request and cannot resume, so its counts stay None.
    handshakes_full: Optional[int] = None
    handshakes_resumed: Optional[int] = None
    us_per_handshake: Optional[float] = None  # without keep-alive: the client's CPU / handshakes


@dataclass
class Scenario:
    key: str  # "nginx-ka-100": what the targets name
    server: str
    mode: str  # "ka" keep-alive, "pipe" PIPELINE requests deep, "close" keep-alive off
    conns: int
    tools: List[str]
    title: str
    https: bool = False
    resumption: str = "none"  # httpbench-load's --tls-resumption over https
    http2: bool = False  # h2 over https, h2c over http
    streams: int = 1  # per connection, over HTTP/2
    rate: Optional[int] = None  # httpbench-load only: an open loop at this many req/s, connections warmed
    baseline: str = "wrk"  # the peer the table's ratio columns divide by
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

    def add(key, server, mode, conns, candidates, title, **tls):
        chosen = [tool for tool in candidates if tool in tools]
        if chosen:
            out.append(Scenario(key, server, mode, conns, chosen, title, **tls))

    if "ka" in scenarios:
        for conns in levels:
            add(f"nginx-ka-{conns}", "nginx", "ka", conns, HTTP_TOOLS, f"nginx, keep-alive, {conns} connections")
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
    add_tls(levels, scenarios, add)
    add_h2(scenarios, add)
    return out


def add_tls(levels: Sequence[int], scenarios: Sequence[str], add) -> None:
    """Add the HTTPS scenarios of issue 14: TLS 1.3, ECDSA P-256, against nginx and the reference server."""
    if "tls-ka" in scenarios:
        for conns in levels:
            add(
                f"nginx-tls-ka-{conns}",
                "nginx",
                "ka",
                conns,
                TOOLS,
                f"nginx over TLS 1.3, keep-alive, {conns} connections",
                https=True,
            )
    if "tls-close" in scenarios:
        # Against the reference server too: its rustls spends less per handshake than nginx, so
        # there the client is the limit even for the fastest client.
        for server, name in (("nginx", "nginx"), ("reference", "reference server")):
            add(
                f"{server}-tls-close-{TLS_CLOSE_CONNS}",
                server,
                "close",
                TLS_CLOSE_CONNS,
                ("ab", "oha", "wrk", "httpbench"),
                f"{name} over TLS 1.3, keep-alive off, one full handshake per request, {TLS_CLOSE_CONNS} "
                "connections (wrk: -H 'Connection: close', not the same thing)",
                https=True,
                baseline="ab",
            )
    if "tls-resume" in scenarios:
        add(
            f"nginx-tls-resume-{TLS_CLOSE_CONNS}",
            "nginx",
            "close",
            TLS_CLOSE_CONNS,
            ("httpbench",),
            f"nginx over TLS 1.3, keep-alive off, resumed handshakes (tickets), {TLS_CLOSE_CONNS} connections "
            "(the peers cannot resume: wrk, ab and oha make a full handshake per connection)",
            https=True,
            resumption="tickets",
        )
    if "tls-reference" in scenarios:
        add(
            f"reference-tls-ka-{BASE_CONNS}",
            "reference",
            "ka",
            BASE_CONNS,
            TOOLS,
            f"reference server over TLS 1.3, keep-alive, {BASE_CONNS} connections (the client is the limit)",
            https=True,
        )


def add_h2(scenarios: Sequence[str], add) -> None:
    """Add issue 15's HTTP/2 scenarios against nginx and h2o, h2load the baseline."""
    for protocol, https, words in (("h2", True, "h2 over TLS 1.3"), ("h2c", False, "h2c")):
        if protocol not in scenarios:
            continue
        for server in H2_SERVERS:
            for conns, streams in H2_SHAPES:
                add(
                    f"{server}-{protocol}-{conns}x{streams}",
                    server,
                    "ka",
                    conns,
                    H2_TOOLS,
                    f"{server}, {words}, {conns} connections x {streams} streams",
                    https=https,
                    http2=True,
                    streams=streams,
                    baseline="h2load",
                )


def find(scenarios: Sequence[Scenario], key: str) -> Optional[Scenario]:
    return next((s for s in scenarios if s.key == key), None)
