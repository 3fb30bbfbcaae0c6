"""A sweep: every cell of a plan, each on a fresh server, every level and round through the
engine (or the write-up's own client), each round stored the moment it is measured.

A cell is server x profile x workload x protocol (x streams, over HTTP/2) x keep-alive x CPU
count. For each: start the server pinned to its CPUs (over TLS with a certificate of its own),
verify it, warm it up, then measure; the monitor's window of each round is stored with the round.
A crash or Ctrl-C loses at most the round in flight, and `resume` picks up at the first round not
stored. A server that dies stops its cell: the round it died in is stored, flagged
`crashed`, and nothing more is measured against what is left of it. So does a load that ended
early (the engine gave up on a server that stopped answering, or a client hit its time limit): the
round is stored, flagged `ended_early`, and the cell fails there. `resume` measures such a round
again, in its place, so the cell can finish.
"""

from __future__ import annotations

import shutil
import tempfile
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Dict, List, Optional, Sequence, Tuple

from httpbench import results, servers
from httpbench.cluster import ClusterDown, ClusterError
from httpbench.judge import honesty
from httpbench.load import engine, tools
from httpbench.load.tools.process import ClientError
from httpbench.placement import Placement, PlacementError
from httpbench.plan.hostile import SLOW_READ_BYTES, SLOW_READ_FILE
from httpbench.plan.model import Cell, Plan
from httpbench.plan.protocol import is_http2, uses_tls, warms_connections
from httpbench.plan.workload import content
from httpbench.servers import ServerProfile
from httpbench.servers import host as server_host
from httpbench.servers.host import ServerHost
from httpbench.site import SIZE_CLASSES
from httpbench.store.database import Store
from httpbench.sweep import capacity, ceiling, operations, servable, target
from httpbench.sweep.errors import Stopped
from httpbench.sweep.target import Target

if TYPE_CHECKING:
    from httpbench.cluster import ClusterLoad

# Load used to warm a server up and to measure the client ceiling: enough connections to keep
# any server busy, few enough for every open-file limit.
WARM_CONNECTIONS = 50


@dataclass
class Progress:
    """What a progress display is told; the sweep does not know how it is shown."""

    on_cell: Callable[[int, int, Cell], None] = lambda index, total, cell: None
    on_round: Callable[[Cell, int, int, dict], None] = lambda cell, level, index, measurement: None
    on_note: Callable[[str], None] = lambda text: None
    on_finished: Callable[[], None] = lambda: None


class Sweep:
    def __init__(
        self,
        plan: Plan,
        store: Store,
        placement: Placement,
        only: Optional[Sequence[str]] = None,
        progress: Optional[Progress] = None,
        cluster: Optional["ClusterLoad"] = None,
        on_client_loss: str = "continue",
    ) -> None:
        """`cluster`: load from its client workers and run servers on its server worker; None: all
        in this process. `on_client_loss`: "continue" stores a level a client host left as
        partial and goes on, "stop" stores it and stops the run."""
        if cluster and plan.client != "engine":
            raise ClusterError(
                f'plan {plan.name} uses client = "{plan.client}", which runs on one host: on a '
                "cluster only the engine's load is split over the client hosts; drop --cluster, "
                'or use client = "engine"'
            )
        self.cluster = cluster
        self.on_client_loss = on_client_loss
        self.load: Callable[[dict], dict] = cluster.run if cluster else engine.run
        self.plan = plan
        self.store = store
        self.placement = placement
        self.progress = progress or Progress()
        # What is installed where the servers run: on a cluster, the server host.
        where = f"on the server host {cluster.server_host_name()}" if cluster else "here"
        adapters = [plan.adapter(name) for name in dict.fromkeys([*servers.names(), *plan.commands])]
        installed = self._on_server_host(server_host.installed, adapters)
        # Where an HTTP/2 ceiling may be measured, whatever --servers narrows the cells to.
        self.installed = [*installed, "reference"]
        if only:
            unknown = [name for name in only if name not in servers.names()]
            if unknown:
                raise servers.UnknownServer(
                    f"unknown server {unknown[0]!r}; known servers: {', '.join(servers.names())}"
                )
            missing = [name for name in only if name not in installed]
            if missing:
                adapter = servers.get(missing[0])
                raise servers.ServerFailed(
                    f"{missing[0]} is not installed {where}; install it with: {adapter.install_command()}"
                )
            installed = list(only)
        else:
            plan.check_installed(installed, where)
        plan.check_open_files()
        cells = [c for c in plan.cells(installed) if not only or c.server in only]
        php = self._on_server_host(
            server_host.php_refusals, [plan.adapter(s) for s in dict.fromkeys(c.server for c in cells)]
        )
        # Why a server lost cells, one line each, is said when the run starts (`run`): a session
        # gives the sweep its display only then.
        self.cells, self.left_out = servable.cells(plan, cells, bool(only) or plan.servers is not None, php)
        for cell in self.cells:
            if cell.cpus > len(placement.server):
                raise PlacementError(
                    f"the plan gives {cell.server} {cell.cpus} CPUs but --server-cpus gives "
                    f"{len(placement.server)}; name more CPUs or drop that count from server_cpus"
                )
        self.ceiling = ceiling.ClientCeiling()
        # Where a TLS cell's authority is written for the engine to verify against.
        self.scratch = Path(tempfile.mkdtemp(prefix="httpbench-sweep-"))

    def refusal(self, server: str, protocol: str) -> Optional[str]:
        """Why `server` cannot serve `protocol` as the plan asks; None when it can."""
        return servable.refusal(self.plan, server, protocol)

    def start(self, setup: Optional[dict] = None) -> int:
        """A new run in the store, with the facts of the servers' host and the servers' versions;
        on a cluster, with `setup`, what else a resume must be told (session.Setup.facts)."""
        adapters = [self.plan.adapter(name) for name in dict.fromkeys(c.server for c in self.cells)]
        facts, versions = self._on_server_host(server_host.facts, adapters)
        facts["placement"] = asdict(self.placement)
        # What an access log's mix kept and left out, by reason: said when the run starts, and
        # stored so that a report of the run says it too (it reads no log again).
        facts["site_notes"] = {w.label: w.site.note for w in self.plan.workloads if w.site is not None and w.site.note}
        if self.cluster:
            facts["cluster"] = {
                "scheduler": self.cluster.address,
                "server_host": self.cluster.server_host_name(),
                **(setup or {}),
            }
        return self.store.start_run(self.plan, facts, versions)

    def run(self, run_id: int) -> results.RunResults:
        """Measure every round of `run_id` not stored yet, and return the run as stored: it ends
        `done`, or `cells failed` when a cell failed. KeyboardInterrupt leaves the run
        `interrupted`, resumable."""
        status = "failed"
        for note in self.left_out:
            self.progress.on_note(note)
        # An access log's mix says what it left out, so the user sees what is not measured.
        for work in self.plan.workloads:
            if work.site is not None and work.site.note:
                self.progress.on_note(f"{work.label}: {work.site.note}")
        try:
            for kind in dict.fromkeys(ceiling.kind_of(c) for c in self.cells):
                self.measure_ceiling(kind)
            for index, cell in enumerate(self.cells):
                self.progress.on_cell(index, len(self.cells), cell)
                self._cell(run_id, cell)
            self.progress.on_finished()
            # Every cell was tried; one that did not finish (it failed now, or in a pass --servers
            # left out) is tried again by --resume.
            measured = results.load(self.store, run_id)
            status = "cells failed" if measured.unfinished else "done"
        except KeyboardInterrupt:
            status = "interrupted"
            raise
        except Stopped:
            status = "stopped"
            raise
        except ClusterDown as e:  # while measuring the client ceiling: no cell has begun
            status = "stopped"
            raise Stopped(str(e)) from None
        finally:
            shutil.rmtree(self.scratch, ignore_errors=True)
            ended = self.store.finish_run(run_id, status)
        return replace(measured, status=status, ended=ended)

    def measure_ceiling(self, kind: target.Kind) -> Optional[float]:
        """The client's ceiling for `kind` of connection, from rounds against the server the
        ceiling picks (on the server's host). On a cluster they are the client hosts' that go on
        to load the run: a host lost meanwhile starts the rounds again without it (or stops the
        run, under --on-client-loss stop)."""
        protocol, keep_alive, resumption, streams = kind
        against = self.ceiling.server(
            protocol, lambda name: name in self.installed and not self.refusal(name, protocol)
        )
        if against is None:
            return None
        host = self.server_host()
        # A PHP workload's pages as plain files: the client's ceiling is for answers of that size,
        # and the reference server runs no PHP.
        workload = self.plan.workloads[0].as_files()
        try:
            tls = self.plan.tls if uses_tls(protocol) else None
            started = host.start(
                servers.get(against), ServerProfile("tuned"), workload, 1, tls, http2=is_http2(protocol)
            )
            to = self.target_of(started, protocol, resumption, "ceiling")
            # Closed loop whatever the plan's model: the most the client can send, not a rate.
            stop = {"duration": ceiling.CEILING_SECONDS}
            spec = self.spec(to, workload, WARM_CONNECTIONS, stop, keep_alive, streams, closed=True)
            rounds: List[dict] = []
            while len(rounds) < ceiling.CEILING_ROUNDS:
                measurement = self.load(spec)
                lost = self.lost_hosts(measurement)
                if lost and self.on_client_loss == "stop":
                    raise Stopped(
                        f"client host(s) {', '.join(lost)} lost while measuring the client ceiling "
                        "(--on-client-loss stop)"
                    )
                if lost:
                    self.progress.on_note(
                        f"client host(s) {', '.join(lost)} lost while measuring the client "
                        "ceiling: measuring it again without them"
                    )
                    rounds = []
                else:
                    rounds.append(measurement)
        finally:
            host.stop()
        self.progress.on_note(
            self.ceiling.take(kind, against, rounds, self.cluster is not None, len(self.placement.client))
        )
        return self.ceiling.rps.get(kind)

    def server_host(self) -> ServerHost:
        if self.cluster:
            return self.cluster.server_host(self.placement.server)
        return ServerHost(self.placement.server)

    def lost_hosts(self, measurement: dict) -> List[str]:
        """The client hosts the cluster lost during `measurement` (a LevelReport); none off a
        cluster, where the engine's report has no hosts."""
        return measurement["lost_hosts"] if self.cluster else []

    def _on_server_host(self, function: Callable, *args):
        """`function(*args)` where the servers run: on the cluster's server host, or here."""
        return self.cluster.on_server_host(function, *args) if self.cluster else function(*args)

    def target_of(self, started, protocol: str, resumption: Optional[str], name: str) -> Target:
        return target.of(started, protocol, self.plan.tls.version, resumption, self.scratch / f"{name}-ca.pem")

    def spec(
        self,
        to: Target,
        workload,
        level: int,
        stop: dict,
        keep_alive: bool,
        streams: int = 1,
        closed: bool = False,
    ) -> dict:
        """The engine's spec of a load at `level`: connections, or in an open plan req/s unless
        `closed` (the warm-up and the client ceiling load as hard as they can)."""
        # On a cluster each client host's engine uses that host's CPUs, and threads to match.
        client_cpus = [] if self.cluster else list(self.placement.client)
        spec = {
            "urls": [to.url.rstrip("/") + path for path in workload.paths],
            "keep_alive": keep_alive,
            "pipeline": self.plan.pipeline,
            "stop": stop,
            "cpus": client_cpus,
            "expect_length": None,
            "allow_errors": self.plan.allow_errors,
            "expect_status": list(self.plan.expect_status),
        }
        if workload.site is not None:
            # Drawn by weight or in the log's order, each answer's length checked against its own
            # URL's, counted by size class.
            spec.update(
                expect_lengths=list(workload.lengths()),
                size_classes=list(SIZE_CLASSES),
                **workload.site.mix.spec(),
            )
            if closed and _timed(workload):
                # The warm-up and the client ceiling load as hard as they can: the log's order,
                # not its pace.
                spec.update(order="replay", offsets=None, speed=1.0)
        if to.encoding is not None:
            # Every answer in the coding and of the length on the wire verification saw.
            spec["headers"] = [f"Accept-Encoding: {to.encoding}"]
            if to.answers is not None:
                learned = [to.answers[path[1:]] for path in workload.paths]
                spec.update(
                    expect_encodings=[coding for coding, _ in learned],
                    expect_lengths=[length for _, length in learned],
                    decoded_lengths=list(workload.lengths()),
                )
        if keep_alive and self.plan.requests_per_connection:
            spec["requests_per_connection"] = self.plan.requests_per_connection
        if to.tls is not None:
            spec["tls"] = to.tls
        if warms_connections(keep_alive, to.tls and to.tls["resumption"]):
            spec["warmup_connections"] = True
        if to.http2:
            # Streams per connection are the same on every client host of a cluster, which
            # splits the connections.
            spec.update(http2=True, streams=streams)
        if self.plan.model == "open" and not closed:
            spec.update(connections=max(1, min(WARM_CONNECTIONS, level)), rate=float(level))
        else:
            spec["connections"] = max(1, level)
        return spec if self.cluster else engine.with_threads(spec)

    def hostile(self, cell: Cell) -> dict:
        """An attacked cell's idle connections and slow clients, in the engine's spec (`idle`,
        `slow`): each round opens its own before its load; the warm-up and the client ceiling
        have none. A level they starve is stored as measured: the engine never ends such a run
        early, so no round of it is flagged ended_early and the cell goes on."""
        spec: dict = {}
        if cell.idle:
            spec["idle"] = {"connections": cell.idle, "ping": self.plan.idle_ping}
        if cell.slow:
            path = "/" + SLOW_READ_FILE if cell.slow == "read" else None
            spec["slow"] = {
                "clients": cell.slow_clients,
                "mode": cell.slow,
                "path": path,
                **asdict(self.plan.slow_settings),
            }
        return spec

    def _stop(self, cell: Cell) -> dict:
        budget = self.plan.budget_for(cell)
        return {"requests": budget.requests} if budget.requests else {"duration": budget.duration}

    def _cell(self, run_id: int, cell: Cell) -> None:
        if self.plan.capacity and self.store.searched(run_id, cell.key):
            return  # a resumed run's cell whose search finished
        adapter = self.plan.adapter(cell.server)
        profile = ServerProfile(
            cell.profile,
            directives=tuple(self.plan.directives.get(cell.server, ())),
            config_file=self.plan.config_files.get(cell.server),
        )
        started_at = time.monotonic()
        cell_id = None
        host = None
        tls = self.plan.tls if uses_tls(cell.protocol) else None
        try:
            host = self.server_host()
            served = cell.workload
            if cell.slow == "read":
                served = served.serving(SLOW_READ_FILE, content(SLOW_READ_BYTES, SLOW_READ_FILE))
            started = host.start(
                adapter, profile, served, cell.cpus, tls, http2=is_http2(cell.protocol), encoding=cell.encoding
            )
            to = self.target_of(started, cell.protocol, cell.resumption, "cell")
            cell_id = self.store.cell(run_id, cell, started.config_text, started.version, tls)
            # The rounds stored, with their requests/s (rounds = "auto" judges a level on them all);
            # a round that stopped the cell before (its server died) is measured again, on this server.
            done = self.store.throughputs(cell_id, redo=honesty.CELL_STOPPERS)
            learned = host.verify()
            to = replace(to, encoding=cell.encoding, answers=learned)
            if self.plan.warmup > 0:
                self.load(
                    self.spec(
                        to,
                        cell.workload,
                        WARM_CONNECTIONS,
                        {"duration": self.plan.warmup},
                        cell.keep_alive,
                        cell.streams,
                        closed=True,
                    )
                )
            host.watch()
            if self.plan.capacity:
                capacity.search(self, cell, cell_id, to, host)
            for level in self.plan.levels:
                self._level(cell, cell_id, to, host, level, done)
            if not host.alive():
                raise servers.ServerFailed(f"{cell.server} died after its last level was measured")
            self.store.finish_cell(cell_id, "done", time.monotonic() - started_at, None)
        except KeyboardInterrupt:
            if cell_id is not None:
                self.store.finish_cell(cell_id, "interrupted", time.monotonic() - started_at, None)
            raise
        except (Stopped, ClusterDown) as e:
            # No load for the rest of the run as asked: the cell waits for --resume, as after Ctrl-C.
            if cell_id is not None:
                self.store.finish_cell(cell_id, "stopped", time.monotonic() - started_at, str(e))
            raise Stopped(f"{cell.key}: {e}") from None
        except (
            servers.ServerFailed,
            servers.VerificationFailed,
            engine.EngineError,
            engine.EnginePanicked,
            ClientError,
            ClusterError,
        ) as e:
            # A failed cell is recorded and the run goes on: the report shows the failure, in the
            # plan's terms (the engine's refusals name no flag a plan does not have).
            reason = engine.in_plan_terms(e) if isinstance(e, engine.EngineError) else str(e)
            if cell_id is None:
                cell_id = self.store.cell(run_id, cell, "", "", tls)
            self.store.finish_cell(cell_id, "failed", time.monotonic() - started_at, reason)
            self.progress.on_note(f"{cell.key}: {reason}")
        finally:
            if host is not None:
                host.stop()

    def _level(
        self, cell: Cell, cell_id: int, to: Target, host: ServerHost, level: int, done: Dict[Tuple[int, int], float]
    ) -> None:
        values: List[float] = []  # every round's requests/s, stored before or measured now
        while self.plan.rounds.more(values):
            index = len(values)
            if (level, index) in done:
                values.append(done[(level, index)])
            else:
                measurement = self._round(cell, to, host, level)
                self.store.add_round(cell_id, level, index, measurement, replace=True)
                self.progress.on_round(cell, level, index, measurement)
                values.append(measurement["requests"]["per_second"] or 0.0)
                if self.lost_hosts(measurement) and self.on_client_loss == "stop":
                    raise Stopped(
                        f"client host(s) {', '.join(measurement['lost_hosts'])} lost at level {level}, "
                        "stored as partial (--on-client-loss stop)"
                    )
                self.server_whole(cell, level, measurement)

    def server_whole(self, cell: Cell, level: int, measurement: dict) -> None:
        """Stops the cell if its server died during the round just stored (what is left of it is
        killed as the cell ends) or the round's load ended early; says so if one of its workers
        was restarted."""
        reasons = {f["kind"]: f["reason"] for f in measurement["flags"]}
        for kind, what in honesty.CELL_STOPPERS.items():
            if kind in reasons:
                raise servers.ServerFailed(f"{what} level {level}: {reasons[kind]}")
        if "server_restarted" in reasons:
            self.progress.on_note(f"{cell.key}: level {level} flagged server_restarted: {reasons['server_restarted']}")

    def _round(self, cell: Cell, to: Target, host: ServerHost, level: int) -> dict:
        if self.plan.client == "engine":
            spec = self.spec(to, cell.workload, level, self._stop(cell), cell.keep_alive, cell.streams)
            spec.update(self.hostile(cell))
            spec.update(operations.spec(cell.events, self.plan.retry_idempotent))
            if not cell.events:
                return self.measure(cell, host, level, lambda: self.load(spec))
            tls = uses_tls(cell.protocol)
            return self.measure(
                cell, host, level, lambda: operations.during(host, cell.events, tls, lambda: self.load(spec))
            )
        budget = self.plan.budget_for(cell)
        return self.measure(
            cell,
            host,
            level,
            lambda: tools.run(
                self.plan.client,
                to.url.rstrip("/") + cell.workload.paths[0],
                max(1, level),
                budget.requests,
                budget.duration,
                cell.keep_alive,
                self.placement.client,
                self.plan.pipeline,
            ),
        )

    def measure(self, cell: Cell, host: ServerHost, level: int, load: Callable[[], dict]) -> dict:
        """A round of `cell` at `level`: `load()`'s report with the server's monitor window around
        it and the round's honesty flags (a level's round, or a capacity search's probe)."""
        host.start_window()
        measurement = load()
        measurement["server"] = host.end_window()
        kind = ceiling.kind_of(cell)
        rps, against = self.ceiling.rps.get(kind), self.ceiling.against.get(kind, "reference")
        flags = (
            honesty.cluster_level(measurement, rps, against)
            if self.cluster
            else [honesty.client_saturated([measurement], rps, len(self.placement.client), against)]
        )
        # A timed log is an open loop at the log's pace: its connections wait between requests.
        if self.plan.model == "closed" and self.plan.client == "engine" and not _timed(cell.workload):
            in_flight = honesty.requests_in_flight(level, self.plan.pipeline, measurement)
            flags.append(honesty.littles_law([measurement], in_flight))
        if self.placement.shared and not self.cluster:
            flags.append(honesty.Flag("shared_cpus", "server and client shared CPUs"))
        # On a cluster the client hosts' waits are judged with their saturation, host by host.
        flags.append(
            honesty.contended(cell.server, measurement["server"], None if self.cluster else measurement["client"])
        )
        flags += [honesty.crashed(measurement), honesty.server_restarted(measurement), honesty.ended_early(measurement)]
        flags.append(honesty.not_resumed(measurement, cell.resumption))
        flags.append(honesty.encoding(measurement, cell.encoding))
        at = f"{level:,} req/s" if self.plan.model == "open" else f"{level:,} connections"
        flags.append(honesty.errors(measurement, self.plan.max_errors, cell.server, at))
        measurement["flags"] = [asdict(f) for f in honesty.merged(flags)]
        return measurement


def _timed(workload) -> bool:
    """Whether `workload` is an access log sent at its own times (an open loop of its own)."""
    return workload.site is not None and workload.site.mix.order == "timed"
