"""Plans: what a run measures, read from TOML (plan.toml) and validated completely before anything
starts (every mistake one line naming the file, the line and the key; plan.builtin loads them).

A plan is a matrix: servers x profiles x workloads x protocols x keep-alive (x TLS resumption,
for TLS without keep-alive; x streams per connection, for HTTP/2) x server CPU counts (x budgets,
when it sweeps several, as the 2007 write-up did) make the cells; each cell is measured at every
level, for every round. The built-in plans live in `plans/*.toml`, beside this module.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Dict, List, Optional, Sequence, Tuple

from httpbench import servers
from httpbench.errors import Error
from httpbench.judge.honesty import AUTO_MIN_ROUNDS, needs_more_rounds
from httpbench.load.engine import host_facts
from httpbench.plan.lines import line_of
from httpbench.plan.protocol import TlsSettings, is_http2, uses_tls, warms_connections
from httpbench.plan.workload import Workload
from httpbench.servers.adapters.command import CommandServer

if TYPE_CHECKING:  # plan.capacity reads its table with plan.values, which needs PlanError from here
    from httpbench.plan.capacity import Capacity

# What `estimate_seconds` adds to the measured time, measured on a 2-core machine: starting,
# verifying and stopping a server takes 0.1-0.6 s for most and 2.2 s for jetty9 (1.5 s budgeted);
# the monitor's idle baseline is 0.5 s; a level costs about 0.03 s beyond its budget in the
# engine, and the monitor window and the store's commit add some (0.25 s budgeted); a run
# starts with the client ceiling against reference (2 s) and version queries (5 s in all).
CELL_OVERHEAD_S = 1.5 + 0.5
LEVEL_OVERHEAD_S = 0.25
RUN_OVERHEAD_S = 5.0
# A level that warms its connections up (protocol.warms_connections, the engine's client only)
# waits until each has answered once: measured against nginx here, 20 ms plus 0.3 ms a connection
# (1,000 connections: 0.3 s), 1.4 ms over TLS, whose first handshakes are full (500: 0.7 s).
WARM_LEVEL_S = 0.02
WARM_CONNECTION_S = {False: 0.0003, True: 0.0014}
# Each kind of connection beyond the first has a client ceiling of its own: the reference server
# (over HTTP/2, an h2 server) started, then 3 rounds of 1 s.
CEILING_S = 3.5


# How a cell's key and its sentences name each slow mode: the attacks' own names.
ATTACKS = {"headers": "slowloris", "body": "slow-body", "read": "slow-read"}


def attack_label(idle: int, slow: Optional[str], clients: int) -> str:
    """The end of an attacked cell's key: "/idle-5000", "/slowloris-300" (both when both); ""
    for a cell without, whose key stays what it was before the axes."""
    return (f"/idle-{idle}" if idle else "") + (f"/{ATTACKS[slow]}-{clients}" if slow else "")


@dataclass(frozen=True)
class Event:
    """An action performed on the server `count` times, the first `at` seconds into the level's
    measured load and then every `every` seconds."""

    action: str
    at: float
    every: Optional[float] = None
    count: int = 1
    renew_certificate: bool = False
    # The cell it is performed in: events of one group share a level, each group is a cell of its
    # own (an axis); by default each action is its own group, so a server that lacks one action
    # loses only that action's cells.
    group: str = ""

    def times(self) -> Tuple[float, ...]:
        """When each of its actions is due, in seconds from the start of the measured load."""
        return tuple(self.at + i * (self.every or 0.0) for i in range(self.count))

    @property
    def label(self) -> str:
        """Short and stable, for a cell's key: "reload@2s+2sx5", "graceful-restart@11s"."""
        label = f"{self.action}@{self.at:g}s"
        if self.count > 1:
            label += f"+{self.every:g}sx{self.count}"
        return label + ("+cert" if self.renew_certificate else "")


def event_groups(events: Sequence[Event]) -> Tuple[Tuple[Event, ...], ...]:
    """`events` by group, each group a cell's events, in the order each group first appears; ((),)
    without events: one cell, without any."""
    groups: Dict[str, List[Event]] = {}
    for event in events:
        groups.setdefault(event.group or event.action, []).append(event)
    return tuple(tuple(group) for group in groups.values()) or ((),)


def events_label(events: Sequence[Event]) -> str:
    """The end of a cell's key with events: "reload@2s+2sx5,graceful-restart@11s"."""
    return ",".join(event.label for event in events)


@dataclass(frozen=True)
class SlowSettings:
    """The slow clients' settings beside the mode (the engine's spec `slow`; None: its default
    for the mode, docs/json-schema.md)."""

    interval: Optional[float] = None  # seconds between chunks
    chunk_bytes: Optional[int] = None
    window_bytes: Optional[int] = None  # read: the receive buffer, or the h2 stream window
    content_length: Optional[int] = None  # body: what the POST announces
    hold: Optional[float] = None  # seconds a connection is held at most before it is replaced


class PlanError(Error):
    """One line: "<source> line N: <key> <what is wrong>"."""


@dataclass(frozen=True)
class Budget:
    requests: Optional[int] = None  # like ab's and weighttp's -n
    duration: Optional[float] = None  # seconds

    def __post_init__(self) -> None:
        if (self.requests is None) == (self.duration is None):
            raise ValueError("a budget is either requests or a duration, exactly one")

    @property
    def label(self) -> str:
        return f"n{self.requests}" if self.requests is not None else f"{self.duration:g}s"


@dataclass(frozen=True)
class Rounds:
    """How many rounds each level gets: `fixed`, or with `fixed` None ("auto"), as the Phoronix
    Test Suite's dynamic run count, rounds until they agree, `most` at most."""

    fixed: Optional[int]
    most: int

    @property
    def auto(self) -> bool:
        return self.fixed is None

    @property
    def fewest(self) -> int:
        """The rounds a level takes at least: what a progress display counts on."""
        return self.fixed or min(AUTO_MIN_ROUNDS, self.most)

    @property
    def longest(self) -> int:
        """The rounds a level takes at most: what a time estimate counts on."""
        return self.fixed or self.most

    def more(self, values: Sequence[float]) -> bool:
        """Whether a level whose rounds so far have `values` requests/s (those stored by an
        earlier session too) needs another."""
        return len(values) < self.fixed if self.fixed else needs_more_rounds(values, self.most)

    def __str__(self) -> str:
        return "auto" if self.auto else str(self.fixed)


@dataclass(frozen=True)
class Cell:
    server: str
    profile: str
    workload: Workload
    keep_alive: bool
    cpus: int
    # Set only when the plan sweeps several budgets (the 2007 write-up's -n 100/1000/10000): then
    # the budget is part of what a cell is. None: the plan's one budget applies (Plan.budget_for).
    budget: Optional[Budget] = None
    protocol: str = "http"
    # A TLS cell's handshakes without keep-alive: "none" (every one full), "tickets" or "ids";
    # None for every other cell.
    resumption: Optional[str] = None
    # Streams each connection keeps open at once: HTTP/2's; 1 for every HTTP/1.1 cell.
    streams: int = 1
    # The content coding every request asks (the plan's accept_encoding); None: no
    # Accept-Encoding header, as before the axis.
    encoding: Optional[str] = None
    # A keep-alive cell's requests before its connection closes (the plan's
    # requests_per_connection); None: kept throughout.
    requests_per_connection: Optional[int] = None
    # Keep-alive connections held idle beside the load (the plan's idle_connections); 0: none.
    idle: int = 0
    # The slow clients' mode ("headers", "body", "read"; the plan's slow); None: no attack.
    slow: Optional[str] = None
    slow_clients: int = 0
    # The events performed on the server during each level (a group of the plan's); (): none.
    # Part of what a cell is: a level through five reloads is not the same measurement.
    events: Tuple[Event, ...] = ()

    @property
    def key(self) -> str:
        """Stable and readable, used to resume: "nginx/tuned/7B/ka/1cpu", then the protocol
        unless it is plain HTTP ("/https", "/https/tickets", "/h2/10streams") and the budget when
        the plan sweeps several ("/n100"), the content coding asked between them ("/br"); a plain
        HTTP cell keeps the key it had before protocols existed. Keep-alive for N requests a
        connection is "ka5", not "ka": not the same measurement."""
        connection = f"ka{self.requests_per_connection or ''}" if self.keep_alive else "close"
        key = f"{self.server}/{self.profile}/{self.workload.label}/{connection}/{self.cpus}cpu"
        if self.protocol != "http":
            key += f"/{self.protocol}" + (f"/{self.resumption}" if self.resumption else "")
        if is_http2(self.protocol):
            key += f"/{self.streams}streams"
        if self.encoding is not None:
            key += f"/{self.encoding}"
        key += f"/{self.budget.label}" if self.budget is not None else ""
        key += attack_label(self.idle, self.slow, self.slow_clients)
        return key + (f"/{self.events_label}" if self.events else "")

    @property
    def events_label(self) -> str:
        """Its events as its key names them ("reload@2s+2sx5"); "" without any."""
        return events_label(self.events)


@dataclass(frozen=True)
class Plan:
    name: str
    description: str
    notes: str  # what an ambiguous write-up made us choose, and why
    servers: Optional[Tuple[str, ...]]  # None: every installed adapter, plus "reference"
    profiles: Tuple[str, ...]
    workloads: Tuple[Workload, ...]
    keep_alive: Tuple[bool, ...]
    server_cpus: Tuple[int, ...]
    levels: Tuple[int, ...]  # connections (0 already made 1); open loop: req/s
    rounds: Rounds
    budget: Budget  # the first of `budgets`; the only one for most plans
    model: str
    pipeline: int
    warmup: float
    client: str
    directives: Dict[str, Tuple[str, ...]]
    config_files: Dict[str, str]
    text: str
    # Additions to the design's fields:
    budgets: Tuple[Budget, ...] = ()  # several: one cell per budget (the 2007 write-up)
    baseline: Optional[str] = None  # the server reports rate others against (= 100, as the 2010 write-up rated)
    commands: Dict[str, str] = field(default_factory=dict)  # name -> command line (command adapter)
    source: str = ""  # where the text came from, for messages
    allow_errors: bool = False  # the engine loads a server whose first answer is wrong
    expect_status: Tuple[int, ...] = ()  # the statuses that count as served; (): any 2xx
    max_errors: float = 0.01  # a level with a larger share of requests not served is flagged `errors`
    protocols: Tuple[str, ...] = ("http",)
    tls: TlsSettings = TlsSettings()
    streams: Tuple[int, ...] = (1,)  # per connection, for HTTP/2 cells
    # [capacity]: each cell searched for its capacity, in place of levels (which are then empty;
    # each probe is stored as a round of the level of its offered rate).
    capacity: Optional[Capacity] = None
    # A keep-alive connection closes after this many requests and a new one opens, as a
    # browser's does (live traffic shows about five per connection); None: it stays open.
    requests_per_connection: Optional[int] = None
    # accept_encoding: a cell per content coding, each asked on every request; (None,): no
    # Accept-Encoding header.
    encodings: Tuple[Optional[str], ...] = (None,)
    # Clients that are not a benchmark (issue 28), axes as the others: idle keep-alive connections
    # held beside the load (0: none) and pinged each idle_ping seconds (None: never); the slow
    # clients' modes (None: no attack), slow_clients of them in each attacked cell.
    idle_connections: Tuple[int, ...] = (0,)
    idle_ping: Optional[float] = None
    slow: Tuple[Optional[str], ...] = (None,)
    slow_clients: int = 0
    slow_settings: SlowSettings = SlowSettings()
    # Operations under load (issue 29): what is done to the server during each level (plan.events),
    # and whether a request lost to a close as its connection was reused is retried once.
    events: Tuple[Event, ...] = ()
    retry_idempotent: bool = False
    # keep_alive given by protocol (a table); {}: `keep_alive` applies to every protocol.
    keep_alive_by: Dict[str, Tuple[bool, ...]] = field(default_factory=dict)
    # The plan's attacks key: its (idle, slow) pairs in place of the two axes crossed; None: crossed.
    attack_pairs: Optional[Tuple[Tuple[int, Optional[str]], ...]] = None

    @property
    def attacks(self) -> List[Tuple[int, Optional[str]]]:
        """(idle connections, slow mode) of each cell a connection kind gets."""
        if self.attack_pairs is not None:
            return list(self.attack_pairs)
        return [(idle, slow) for idle in self.idle_connections for slow in self.slow]

    def connections(self) -> List[Tuple[str, bool, Optional[str], int]]:
        """(protocol, keep-alive, resumption, streams) of each kind of cell a server gets: a TLS
        cell without keep-alive once per resumption, an HTTP/2 cell once per streams count,
        every other once."""
        return [
            (protocol, ka, resumption, streams)
            for protocol in self.protocols
            for ka in self.keep_alive_by.get(protocol, self.keep_alive)
            for resumption in (self.tls.resumption if uses_tls(protocol) and not ka else (None,))
            for streams in (self.streams if is_http2(protocol) else (1,))
        ]

    def cells(self, installed: Sequence[str]) -> List[Cell]:
        """Every cell, server-major. `installed` is what may run here: servers the plan names
        that are not in it are left out (`check_installed` refuses them with one line; a caller
        narrowing a run with --servers passes only those). Command servers always count."""
        if self.servers is None:
            chosen = list(dict.fromkeys([*installed, "reference"]))
        else:
            chosen = [s for s in self.servers if s in installed or s in self.commands]
        several = len(self.budgets) > 1
        return [
            Cell(
                server,
                profile,
                work,
                ka,
                cpus,
                budget if several else None,
                protocol,
                resumption,
                streams,
                encoding,
                self.requests_per_connection if ka else None,
                idle,
                slow,
                self.slow_clients if slow else 0,
                events,
            )
            for server in chosen
            for profile in self.profiles
            for work in self.workloads
            for encoding in self.encodings
            for protocol, ka, resumption, streams in self.connections()
            for cpus in self.server_cpus
            for budget in (self.budgets or (self.budget,))
            for idle, slow in self.attacks
            for events in event_groups(self.events)
        ]

    def check_installed(self, installed: Sequence[str], where: str = "here") -> None:
        """PlanError naming the first server the plan names that cannot run where the servers
        run; `installed` names the servers, command servers too, that can run `where`."""
        for name in self.servers or ():
            if name in installed:
                continue
            if name in self.commands:
                hint = f"its command's program {self.adapter(name).program!r} is not found"
            else:
                hint = f"install it with 'httpbench servers install {name}' ({servers.get(name).install_command()})"
            line = line_of(self.text, ("servers",))
            raise PlanError(
                f"{self.source or self.name} line {line}: servers names {name}, which is not installed "
                f"{where}; {hint}, or leave it out with --servers"
            )

    def check_open_files(self) -> None:
        """PlanError when a cell's idle and slow connections, beside its load, are more than this
        host's open-file hard limit allows: each is a descriptor in the client and another in the
        server, both on this host (as `httpbench doctor` counts). Checked where the plan is run,
        not where it is read: a built-in plan is listed and read on any host."""
        hard = host_facts()["nofile_hard"]
        if hard is None or not any(idle or slow for idle, slow in self.attacks):
            return  # a level's own connections are the engine's to refuse, in its words
        fit, load = hard // 2, max(self.levels, default=0) if self.model == "closed" else 0
        # A cell holds its own pair's connections only (paired or crossed), never the largest of each.
        idle, slow = max(self.attacks, key=lambda pair: pair[0] + (self.slow_clients if pair[1] else 0))
        clients = self.slow_clients if slow else 0
        held = idle + clients + load
        if held <= fit:
            return
        key = "attacks" if self.attack_pairs is not None else "slow_clients" if clients >= idle else "idle_connections"
        raise PlanError(
            f"{self.source or self.name} line {line_of(self.text, (key,))}: {key}: {idle:,} idle and {clients:,} "
            f"slow connections beside {load:,} of the load make {held:,}, but the open-file hard limit {hard:,} "
            f"fits about {fit:,} (client and server on one host; see httpbench doctor): ask for fewer or raise "
            "the limit"
        )

    def budget_for(self, cell: Cell) -> Budget:
        return cell.budget or self.budget

    def adapter(self, name: str):
        """The server adapter for `name`: the plan's own command server, or a built-in one."""
        if name in self.commands:
            return CommandServer(self.commands[name], name=name)
        return servers.get(name)

    def estimate_seconds(self, n_servers: int, rate: float = 20000.0) -> float:
        """Time a run takes with `n_servers` servers (count "reference" if it is one of them):
        the budgets plus the overheads above. A request budget is timed at `rate` req/s;
        rounds = "auto" counts max_rounds, the longest it may take."""
        rounds = self.rounds.longest
        per_cell = len(self.workloads) * len(self.connections()) * len(self.server_cpus) * len(self.profiles)
        per_cell *= len(self.encodings) * len(self.attacks) * len(event_groups(self.events))
        total = 0.0
        for budget in self.budgets or (self.budget,):
            if self.capacity:
                total += CELL_OVERHEAD_S + self.warmup + self.capacity.estimate_seconds()
                continue
            seconds = budget.duration if budget.duration is not None else budget.requests / rate
            total += CELL_OVERHEAD_S + self.warmup + len(self.levels) * rounds * (seconds + LEVEL_OVERHEAD_S)
        ceilings = CEILING_S * (len(set(self.connections())) - 1)
        return RUN_OVERHEAD_S + ceilings + n_servers * (per_cell * total + self._warming_seconds())

    def _warming_seconds(self) -> float:
        """What the warm-ups of a server's levels' connections add up to, over its cells."""
        if self.client != "engine":
            return 0.0
        cells = len(self.workloads) * len(self.server_cpus) * len(self.profiles) * len(self.budgets or (self.budget,))
        cells *= len(self.encodings) * len(self.attacks) * len(event_groups(self.events))
        return sum(
            cells
            * self.rounds.longest
            * sum(WARM_LEVEL_S + level * WARM_CONNECTION_S[uses_tls(protocol)] for level in self.levels)
            for protocol, keep_alive, resumption, _ in self.connections()
            if warms_connections(keep_alive, resumption)
        )
