"""A sweep: every cell of a plan, each on a fresh server, every level and round through the
engine (or the write-up's own client), each round stored the moment it is measured.

A cell is server x profile x workload x keep-alive x CPU count. For each: start the server pinned
to its CPUs, verify it, warm it up, then measure; the monitor's window of each round is stored
with the round. A crash or Ctrl-C loses at most the round in flight, and `resume` picks up at the
first round not stored.
"""

from __future__ import annotations

import shutil
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable, List, Optional, Sequence

from httpbench import clients, engine, honesty, servers
from httpbench.monitor import Monitor
from httpbench.placement import Placement
from httpbench.plan import Cell, Plan
from httpbench.servers import ServerProfile, Site
from httpbench.store import Store

# Load used to warm a server up and to measure the client ceiling: enough connections to keep
# any server busy, few enough for every open-file limit.
WARM_CONNECTIONS = 50
# The ceiling is the best of a few short measurements: other load on the machine can only
# lower it, so the best is the closest to what the client can do.
CEILING_ROUNDS = 3
CEILING_SECONDS = 1.0


@dataclass
class Progress:
    """What a progress display is told; the sweep does not know how it is shown."""

    on_cell: Callable[[int, int, Cell], None] = lambda index, total, cell: None
    on_round: Callable[[Cell, int, int, dict], None] = lambda cell, level, index, measurement: None
    on_note: Callable[[str], None] = lambda text: None


class Sweep:
    def __init__(self, plan: Plan, store: Store, placement: Placement, only: Optional[Sequence[str]] = None,
                 progress: Optional[Progress] = None) -> None:
        self.plan = plan
        self.store = store
        self.placement = placement
        self.progress = progress or Progress()
        installed = [name for name in servers.names() if servers.get(name).installed()]
        if only:
            unknown = [name for name in only if name not in servers.names()]
            if unknown:
                raise servers.UnknownServer(f"unknown server {unknown[0]!r}; known servers: {', '.join(servers.names())}")
            missing = [name for name in only if name not in installed]
            if missing:
                adapter = servers.get(missing[0])
                raise servers.ServerFailed(f"{missing[0]} is not installed; install it with: {adapter.install_command()}")
            installed = list(only)
        else:
            plan.check_installed(installed)
        self.cells: List[Cell] = [c for c in plan.cells(installed) if not only or c.server in only]
        for cell in self.cells:
            if cell.cpus > len(placement.server):
                raise ValueError(f"the plan gives {cell.server} {cell.cpus} CPUs but --server-cpus gives "
                                 f"{len(placement.server)}; name more CPUs or drop that count from server_cpus")
        self.ceiling: Optional[float] = None

    def start(self) -> int:
        facts = engine.host_facts()
        facts["placement"] = asdict(self.placement)
        versions = {c.server: self.plan.adapter(c.server).version() for c in self.cells}
        return self.store.start_run(self.plan, facts, versions)

    def run(self, run_id: int) -> None:
        """Measure every round of `run_id` not stored yet. KeyboardInterrupt leaves the run
        `interrupted`, resumable."""
        status = "failed"
        try:
            self.ceiling = self._client_ceiling()
            for index, cell in enumerate(self.cells):
                self.progress.on_cell(index, len(self.cells), cell)
                self._cell(run_id, cell)
            status = "done"
        except KeyboardInterrupt:
            status = "interrupted"
            raise
        finally:
            self.store.finish_run(run_id, status)

    def _client_ceiling(self) -> Optional[float]:
        """The engine's throughput against the reference server on this machine: no server
        measured here can be told apart from the client above it."""
        if "reference" not in servers.names():
            return None
        with tempfile.TemporaryDirectory(prefix="httpbench-ceiling-") as tmp:
            workload = self.plan.workloads[0]
            site = self._site(Path(tmp), 1)
            workload.write(site.docroot)
            with servers.start(servers.get("reference"), site, ServerProfile("tuned")):
                spec = self._spec(site, workload, WARM_CONNECTIONS, {"duration": CEILING_SECONDS}, keep_alive=True)
                ceiling = max(engine.run(spec)["requests"]["per_second"] for _ in range(CEILING_ROUNDS))
        self.progress.on_note(f"client ceiling (engine against the reference server): {ceiling:,.0f} req/s")
        return ceiling

    def _site(self, base: Path, cpus: int) -> Site:
        docroot = base / "www"
        docroot.mkdir(parents=True, exist_ok=True)
        return Site(docroot=docroot, run_dir=base / "run", port=servers.free_port(),
                    cpus=tuple(self.placement.server[:cpus]))

    def _spec(self, site: Site, workload, level: int, stop: dict, keep_alive: bool) -> dict:
        client_cpus = list(self.placement.client)
        spec = {
            "urls": [site.url.rstrip("/") + path for path in workload.paths],
            "keep_alive": keep_alive,
            "pipeline": self.plan.pipeline,
            "stop": stop,
            "cpus": client_cpus,
            "expect_length": None,
        }
        if self.plan.model == "open":
            connections = max(1, min(WARM_CONNECTIONS, level))
            spec.update(connections=connections, rate=float(level))
        else:
            connections = max(1, level)
            spec["connections"] = connections
        spec["threads"] = max(1, min(len(client_cpus), connections))
        return spec

    def _stop(self, cell: Cell) -> dict:
        budget = self.plan.budget_for(cell)
        return {"requests": budget.requests} if budget.requests else {"duration": budget.duration}

    def _cell(self, run_id: int, cell: Cell) -> None:
        adapter = self.plan.adapter(cell.server)
        profile = ServerProfile(cell.profile, directives=tuple(self.plan.directives.get(cell.server, ())),
                                config_file=self.plan.config_files.get(cell.server))
        base = Path(tempfile.mkdtemp(prefix=f"httpbench-{cell.server}-"))
        started = time.monotonic()
        cell_id = None
        try:
            site = self._site(base, cell.cpus)
            cell.workload.write(site.docroot)
            with servers.start(adapter, site, profile) as running:
                cell_id = self.store.cell(run_id, cell, running.config.text, adapter.version() or "")
                done = self.store.rounds_done(cell_id)
                servers.verify(site, cell.workload.file_map(), cell.server)
                if self.plan.warmup > 0:
                    engine.run(self._spec(site, cell.workload, WARM_CONNECTIONS, {"duration": self.plan.warmup},
                                          cell.keep_alive))
                with Monitor(running) as monitor:
                    monitor.baseline()
                    for level in self.plan.levels:
                        self._level(cell, cell_id, site, monitor, level, done)
                if not running.alive():
                    raise servers.ServerFailed(f"{cell.server} died during the measurement")
            self.store.finish_cell(cell_id, "done", time.monotonic() - started, None)
        except KeyboardInterrupt:
            if cell_id is not None:
                self.store.finish_cell(cell_id, "interrupted", time.monotonic() - started, None)
            raise
        except (servers.ServerFailed, servers.VerificationFailed, engine.EngineError, clients.ClientError) as e:
            # A failed cell is recorded and the run goes on: the report shows the failure.
            if cell_id is None:
                cell_id = self.store.cell(run_id, cell, "", adapter.version() or "")
            self.store.finish_cell(cell_id, "failed", time.monotonic() - started, str(e))
            self.progress.on_note(f"{cell.key}: {e}")
        finally:
            shutil.rmtree(base, ignore_errors=True)

    def _level(self, cell: Cell, cell_id: int, site: Site, monitor: Monitor, level: int, done) -> None:
        rounds: List[dict] = []
        index = 0
        while True:
            if (level, index) not in done:
                measurement = self._round(cell, site, monitor, level)
                self.store.add_round(cell_id, level, index, measurement)
                self.progress.on_round(cell, level, index, measurement)
                rounds.append(measurement)
            index += 1
            if self.plan.rounds == "auto":
                values = [m["requests"]["per_second"] for m in rounds]
                if not honesty.needs_more_rounds(values, index, self.plan.max_rounds):
                    break
            elif index >= self.plan.rounds:
                break

    def _round(self, cell: Cell, site: Site, monitor: Monitor, level: int) -> dict:
        monitor.start_window()
        if self.plan.client == "engine":
            measurement = engine.run(self._spec(site, cell.workload, level, self._stop(cell), cell.keep_alive))
        else:
            budget = self.plan.budget_for(cell)
            url = site.url.rstrip("/") + cell.workload.paths[0]
            measurement = clients.run(self.plan.client, url, max(1, level), budget.requests, budget.duration,
                                      cell.keep_alive, self.placement.client, self.plan.pipeline)
        window = monitor.end_window()
        measurement["server"] = asdict(window)
        flags = [honesty.client_saturated([measurement], self.ceiling, len(self.placement.client))]
        if self.plan.model == "closed" and self.plan.client == "engine":
            flags.append(honesty.littles_law([measurement], max(1, level) * self.plan.pipeline))
        if self.placement.shared:
            flags.append(honesty.Flag("shared_cpus", "server and client shared CPUs"))
        measurement["flags"] = [asdict(f) for f in flags if f is not None]
        return measurement

