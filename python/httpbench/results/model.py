"""A stored run as results: per cell, per level, the statistics of its rounds, latency merged from
their histograms, the server's CPU and memory, errors and honesty flags (httpbench.results reads
them from the store)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence, Tuple

from httpbench.judge.honesty import CELL_STOPPERS
from httpbench.judge.stats import LevelStats
from httpbench.load.report import Report
from httpbench.plan import protocol
from httpbench.plan.dynamic import PHP_KINDS
from httpbench.plan.model import ATTACKS


@dataclass(frozen=True)
class Latency:
    """A latency of a level in microseconds: the total one, or a TLS cell's handshakes'. `exact`:
    from the rounds' HdrHistograms added (all None when they hold no request: every one failed);
    otherwise the median of the rounds' own percentiles (ab, wrk and h2load give no histogram)."""

    p50_us: Optional[float]
    p90_us: Optional[float]
    p99_us: Optional[float]
    p99_9_us: Optional[float]
    mean_us: Optional[float]
    max_us: Optional[float]
    exact: bool
    summaries: tuple = ()  # the merged summary, with its histogram, for the percentile spectrum


def _counter(group: str, name: str, doc: str) -> property:
    """A count of the level's report's `group` (`tls`, `h2`), which only a TLS or an HTTP/2 level
    has: None for the others."""
    return property(lambda self: self.report[group] and self.report[group][name], doc=doc)


@dataclass(frozen=True)
class LevelResult:
    level: int
    rps_values: tuple  # requests/s served (succeeded) of each round: results.served_per_second
    rps: LevelStats  # their statistics: what levels are ranked, charted and compared on
    latency: Latency
    # The rounds merged by the engine, one after another: the level's counts, its measured seconds
    # (all rounds), its TLS and HTTP/2 counters, read by the properties below; a count the report
    # gains is read here too, with nothing to add to results.
    report: Report
    server_cpu_user: Optional[float]  # cores, mean over the rounds
    server_cpu_sys: Optional[float]
    server_memory_bytes: Optional[int]  # PSS peak (RSS where PSS is unreadable), highest round
    client_busy: Optional[float]  # busiest client thread, highest round
    flags: Dict[str, str]  # kind -> reason, any round's, plus noisy across rounds
    timeseries: List[dict]  # per second, rounds one after another: second, round, requests/s, errors/s
    # A TLS cell's: its handshakes' latency and the versions negotiated ("1.3"); None, or empty,
    # for plain HTTP.
    handshake: Optional[Latency] = None
    tls_versions: Tuple[str, ...] = ()
    # A PHP cell's PHP-FPM pool, apart (the server's figures above include it): its memory (mean
    # PSS, RSS where PSS is unreadable; highest round), CPU (cores, mean over the rounds) and
    # most processes. None where PHP runs inside the server's own processes (mod_php), without
    # PHP, and in rounds stored before the monitor watched the pool.
    php_memory_bytes: Optional[int] = None
    php_cpu_cores: Optional[float] = None
    php_processes: Optional[int] = None
    # The server's most processes and threads in any round's window: what slow clients make a
    # process- or thread-per-connection server grow to. None in rounds of a monitor without them.
    server_processes: Optional[int] = None
    server_threads: Optional[int] = None
    # Its planned events (the plan's [[event]]), every round's in turn, each with what it cost the
    # load (results.operations.EventCost); () for a level without events.
    operations: tuple = ()
    # Their rounds' fine series (results.operations.fine_series), one point a tick: rates and
    # p99; () without events.
    fine_series: tuple = ()

    handshakes_full = _counter("tls", "handshakes_full", "TLS handshakes made in full, all rounds.")
    handshakes_resumed = _counter("tls", "handshakes_resumed", "TLS handshakes resumed, all rounds.")
    streams_granted = _counter("h2", "streams_granted", "The fewest streams per connection the server granted.")
    goaways = _counter("h2", "goaways", "GOAWAY frames received.")
    refused_streams = _counter("h2", "refused_streams", "Streams the server refused (REFUSED_STREAM).")

    @property
    def completed(self) -> int:
        return self.report["requests"]["completed"]

    @property
    def errors(self) -> int:
        return self.report["errors_total"]

    @property
    def errors_by_class(self) -> Dict[str, int]:
        """The errors of each class (a client tool's: of its own groups) there were."""
        return {name: count for name, count in self.report["errors"].items() if count}

    @property
    def non_2xx(self) -> int:
        return sum(count for status, count in self.report["status"].items() if status != "2xx")

    @property
    def duration_s(self) -> float:
        """Seconds measured, all rounds."""
        return self.report["duration_s"]

    @property
    def encodings(self) -> Dict[str, dict]:
        """The answers in each content coding, all rounds: answers, bytes on the wire and decoded
        (the engine's `encodings`; empty for a client tool's, and in rounds stored before it)."""
        return self.report.get("encodings") or {}

    def body_bytes(self, which: str) -> Optional[int]:
        """The answers' body bytes of every coding: "bytes" as they came on the wire, or
        "decoded_bytes" (None when a coding's are not known)."""
        counts = [e.get(which) for e in self.encodings.values()]
        return None if not counts or None in counts else sum(counts)

    @property
    def classes(self) -> List[dict]:
        """A site level's answers by size class (the report's `classes`, its rounds added, each
        with its latency percentiles): empty for a single file, and in rounds from before them."""
        return self.report.get("classes") or []

    @property
    def body_bytes_per_second(self) -> Optional[float]:
        """Response bodies received per second of measurement, all rounds: as they came over the
        wire, compressed where the server compressed them (the engine de-chunks, never decodes)."""
        body = self.report["bytes"]["body"]
        return body / self.duration_s if body is not None and self.duration_s else None

    @property
    def resets(self) -> Dict[str, int]:
        """An HTTP/2 level's streams the server reset (RST_STREAM), by error-code name."""
        return self.report["h2"]["resets"] if self.report["h2"] else {}

    @property
    def slow_clients(self) -> Optional[dict]:
        """The slow clients beside the load, its rounds merged (the report's `slow_clients`); None
        without them."""
        return self.report.get("slow_clients")

    @property
    def idle_connections(self) -> Optional[dict]:
        """The idle connections beside the load, its rounds merged (`idle_connections`); None
        without them."""
        return self.report.get("idle_connections")

    @property
    def succeeded_share(self) -> Optional[float]:
        """The share of the load's requests that succeeded, all rounds, of those answered or
        failed and of those still waiting at the end when they had waited longer than any answer
        took (a server whose workers slow clients hold); a run's last requests, on their way as it
        ends, count for nothing. 0 under slow clients that left the load nothing to send; None
        when there are none, or its client counts no sends (a tool's)."""
        requests = self.report["requests"]
        succeeded, waiting = requests.get("succeeded"), requests.get("in_flight") or 0
        done = (requests.get("completed") or 0) + (requests.get("failed") or 0)
        longest = self.latency.max_us
        if waiting and (longest is None or (requests.get("in_flight_age_mean_us") or 0) > longest):
            done += waiting
        if not done and self.slow_clients:
            # Under slow clients the load's connections waited the whole level for the first
            # answer each waits for before the measured window (the engine's warm-up): none came.
            return 0.0
        return succeeded / done if done and succeeded is not None else None

    @property
    def server_cpu_per_request_us(self) -> Optional[float]:
        """The server's CPU time (user and system) per request served, in microseconds: what a
        request costs the server, which TLS raises even where the client sets the pace."""
        if self.server_cpu_user is None or self.server_cpu_sys is None or self.rps.mean <= 0:
            return None
        return (self.server_cpu_user + self.server_cpu_sys) / self.rps.mean * 1e6

    def handshakes_per_second(self, which: str) -> Optional[float]:
        """TLS handshakes completed per second of measurement, all rounds: "full", "resumed", or
        "all" of them (a cell offering resumption still makes each connection's first in full)."""
        full, resumed = self.handshakes_full, self.handshakes_resumed
        count = {"full": full, "resumed": resumed, "all": None if None in (full, resumed) else full + resumed}[which]
        return count / self.duration_s if count is not None and self.duration_s > 0 else None


@dataclass(frozen=True)
class CellResult:
    run_id: int
    key: str
    server: str
    profile: str
    workload: str
    keep_alive: bool
    cpus: int
    budget: str  # "" for the plan's one budget, "n100" when the plan sweeps several
    requests_budget: Optional[int]
    status: str
    error: Optional[str]
    seconds: Optional[float]  # wall time of the whole cell: start, verify, warm-up, levels, stop
    server_version: str
    config_text: str
    levels: List[LevelResult]
    sessions: int = 1  # how many times it was started: more than 1 when resumed
    protocol: str = "http"
    tls_key: Optional[str] = None  # a TLS cell's certificate key type
    tls_version: Optional[str] = None  # pinned by the plan; None: negotiated
    resumption: Optional[str] = None  # a TLS cell without keep-alive: "none", "tickets", "ids"
    streams: int = 1  # per connection: an HTTP/2 cell's; 1 for HTTP/1.1
    # A capacity plan's cell: the engine's `capacity` object (docs/json-schema.md), its probes
    # also stored as rounds, each at the level of its offered rate; None for a cell of levels.
    capacity: Optional[dict] = None
    # The content coding every request asked (Accept-Encoding); None: no such header.
    encoding: Optional[str] = None
    # Clients beside the load (plan.Cell): idle keep-alive connections, the slow clients' mode
    # (None: no attack) and how many.
    idle: int = 0
    slow: Optional[str] = None
    slow_clients: int = 0
    # The plan's events performed on its server during each level (plan.model.events_label); "":
    # none. A cell through reloads is never in one group with one without.
    events: str = ""

    @property
    def series(self) -> str:
        """What a line on a chart is: one server in one profile."""
        return f"{self.server}/{self.profile}"

    @property
    def group(self) -> str:
        """Cells in one group differ only by server and profile, so they can be compared."""
        parts = [self.workload, *self.connection, f"{self.cpus} CPU"]
        events = [f"through {self.events}"] if self.events else []
        return ", ".join(parts + ([self.budget] if self.budget else []) + self.attack + events)

    @property
    def attack(self) -> List[str]:
        """The clients beside its load, in words ("300 slowloris clients", "5,000 idle
        connections"): a cell under attack is never in one group with one without."""
        words = [f"{self.idle:,} idle connections"] if self.idle else []
        if self.slow:
            words.append(f"{self.slow_clients:,} {ATTACKS[self.slow]} clients")
        return words

    @property
    def connection(self) -> List[str]:
        """How the cell was spoken to, in words: keep-alive or not, for TLS its protocol,
        version, key type and handshakes, for HTTP/2 its streams per connection; plain HTTP names
        keep-alive only, as it always did; a cell that asked a content coding names it ("br
        asked"), so cells that asked different codings are never in one group."""
        words = ["keep-alive" if self.keep_alive else "no keep-alive"]
        if self.encoding is not None:
            words.append(f"{self.encoding} asked")
        if protocol.is_http2(self.protocol):
            words.append(f"{self.streams} stream{'s' if self.streams > 1 else ''} per connection")
        if self.protocol == "http":
            return words
        if not protocol.uses_tls(self.protocol):
            return [self.protocol.upper()] + words
        version = f"TLS {self.tls_version}" if self.tls_version else "TLS negotiated"
        words = [f"{self.protocol.upper()} ({version}, {self.tls_key})"] + words
        if self.resumption is not None:
            words.append(protocol.HANDSHAKES[self.resumption])
        return words

    @property
    def site(self) -> bool:
        """Whether the cell served a site (a mix of files counted by size class) rather than one
        file: its levels' reports have classes."""
        return any(lv.classes for lv in self.levels)

    @property
    def coded_share(self) -> Optional[float]:
        """The share of its answers, all levels, that came in the coding it asked; None when it
        asked none (or identity) or its rounds counted no codings."""
        if self.encoding in (None, "identity"):
            return None
        sent = [lv.encodings for lv in self.levels]
        total = sum(e["answers"] for codings in sent for e in codings.values())
        coded = sum(codings.get(self.encoding, {}).get("answers", 0) for codings in sent)
        return coded / total if total else None

    @property
    def php(self) -> Optional[str]:
        """The PHP workload's kind ("php-page") when the cell ran PHP scripts; None otherwise."""
        return self.workload if self.workload in PHP_KINDS else None

    @property
    def tls_version_used(self) -> Optional[str]:
        """The TLS version the plan pinned, else the ones its rounds negotiated ("1.3"); None for
        plain HTTP, or when no handshake completed."""
        if self.tls_version:
            return self.tls_version
        versions = dict.fromkeys(v for lv in self.levels for v in lv.tls_versions)
        return ", ".join(versions) or None

    @property
    def level_numbers(self) -> Tuple[int, ...]:
        return tuple(lv.level for lv in self.levels)

    @property
    def finished(self) -> bool:
        """Whether every level was measured whole on a server alive to the end: a cell that
        failed (its server died, or a load ended early), was interrupted or stopped is shown,
        never ranked; so is one marked done that still holds a level that stopped it (a resume
        measures such a level again, but an older httpbench kept it)."""
        return self.status == "done" and not self.stopped_by

    @property
    def stopped_by(self) -> List[str]:
        """What stopped the cell in a level still stored: "its server died during level 1"."""
        levels = {kind: tuple(lv.level for lv in self.levels if kind in lv.flags) for kind in CELL_STOPPERS}
        return [f"{CELL_STOPPERS[kind]} {levels_text(at)}" for kind, at in levels.items() if at]


def levels_text(levels: Sequence[int]) -> str:
    """(1,) -> "level 1", (1, 20) -> "levels 1, 20"."""
    return f"level{'s' if len(levels) != 1 else ''} {', '.join(map(str, levels))}"


@dataclass
class RunResults:
    id: int
    plan_name: str
    plan_text: str
    status: str
    started: object
    ended: object
    host: dict
    versions: dict
    baseline: Optional[str]
    client: str
    cells: List[CellResult] = field(default_factory=list)

    @property
    def measured(self) -> List[CellResult]:
        return [c for c in self.cells if c.levels]

    @property
    def failed(self) -> List[CellResult]:
        return [c for c in self.cells if c.status == "failed"]

    @property
    def unfinished(self) -> List[CellResult]:
        """The cells that did not finish (CellResult.finished): the run is no whole result
        until a resume measures them."""
        return [c for c in self.cells if not c.finished]
