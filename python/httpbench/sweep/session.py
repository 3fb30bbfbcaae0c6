"""A session: one sitting of a run, in this process. It starts a new run of a plan, or goes on
with a stored one (`httpbench run --resume`): it claims the run in the store, places server and
client on the CPUs the run started on, opens and closes the cluster, and sweeps every round not
stored yet, telling a listener (the sweep's `Progress`) what happens. How that is shown is the
console's business.
"""

from __future__ import annotations

import shlex
import signal
from dataclasses import dataclass, replace
from pathlib import Path
from typing import List, Optional

from httpbench import results
from httpbench.judge.honesty import stops_cell
from httpbench.load.report import stored_host
from httpbench.placement import Placement, PlacementError, parse_cpus, show_cpus
from httpbench.plan import builtin as plans
from httpbench.plan import capacity
from httpbench.plan.workload import WorkloadError
from httpbench.store.database import Store, StoreError
from httpbench.store.owner import owner_alive
from httpbench.sweep.errors import Stopped
from httpbench.sweep.sweep import Progress, Sweep


class Terminated(KeyboardInterrupt):
    """SIGTERM (a `kill`, a CI timeout, a shutdown), handled as Ctrl-C: the run is stored as
    interrupted with its resume command; the exit status stays SIGTERM's."""

    exit_code = 128 + signal.SIGTERM


def _terminate(signum, frame) -> None:
    raise Terminated()


@dataclass(frozen=True)
class Setup:
    """Where a session measures, as `httpbench run` was asked."""

    server_cpus: Optional[str] = None
    client_cpus: Optional[str] = None
    allow_shared: bool = False
    cluster: Optional[str] = None  # a Dask scheduler: load from its client hosts
    certs: Optional[Path] = None
    on_client_loss: str = "continue"  # or "stop"

    def facts(self) -> dict:
        """What a resume must be told again besides the scheduler, stored with the cluster's facts."""
        return {"certs": str(self.certs) if self.certs else None, "on_client_loss": self.on_client_loss}


def resume_command(run_id: int, db: str, host: dict, only: Optional[List[str]] = None) -> str:
    """The command that goes on with run `run_id` of `db`, from the facts its `host` stored;
    `only`: the servers this session was limited to."""
    words = ["httpbench", "run", "--resume", str(run_id), "--db", db]
    if only:
        words += ["--servers", ",".join(only)]
    cluster = host["cluster"]
    if cluster:
        # Resumed without them, the rest of the run would be measured from this host alone.
        words += ["--cluster", cluster["scheduler"]]
        if cluster.get("certs"):
            words += ["--certs", cluster["certs"]]
        if cluster.get("on_client_loss") == "stop":
            words += ["--on-client-loss", "stop"]
    return shlex.join(words)


class Session:
    def __init__(
        self,
        db: str,
        plan_name: Optional[str] = None,
        resume: Optional[int] = None,
        only: Optional[List[str]] = None,
        setup: Setup = Setup(),
    ) -> None:
        """A new run of `plan_name` (default: quick), or the rest of run `resume`; `only`: its
        cells of these servers. Refuses (one line) a damaged store, an unknown run, a run another
        process is measuring and a resume on other CPUs than the run's."""
        self.db, self.only = db, only
        self.store = Store(db)
        self.store.check()  # a damaged file is refused before anything is measured that it could not keep
        self.run_id = resume
        self.finished = False
        self.stored: dict = {"host": stored_host({}), "cells": []}
        self.measured: Optional[results.RunResults] = None  # the run as the sweep ended it
        if resume is None:
            self.plan = plans.load(plan_name or "quick")
            self.setup = setup
            return
        self.stored = self.store.run(resume)
        if self.stored["status"] == "running" and owner_alive(self.stored):
            pid = self.stored["owner_pid"]
            raise StoreError(
                f"run {resume} is still being measured, by process {pid}; wait for it, "
                f"or stop it (kill {pid}: it stores what it measured) and resume then"
            )
        self.finished = _finished(self.stored, only)
        self.plan = plans.parse(self.stored["plan_text"], f"run {resume}")
        self.setup = _placed_as_stored(resume, self.stored["host"]["placement"], setup)

    def __enter__(self) -> "Session":
        """Everything the sweep needs: SIGTERM taken as Ctrl-C, the cluster opened, server and
        client placed, the run started or claimed."""
        self._sigterm = signal.signal(signal.SIGTERM, _terminate)
        setup = self.setup
        self.cluster = None
        try:
            if setup.cluster:
                _served_from_here(self.plan)
                # Nothing of Dask is imported or started without --cluster.
                from httpbench.cluster import ClusterLoad

                self.cluster = ClusterLoad(setup.cluster, setup.certs)
            placement = (
                self.cluster.placement(setup.server_cpus)
                if self.cluster
                else Placement.choose(setup.server_cpus, setup.client_cpus, setup.allow_shared)
            )
            self.sweep = Sweep(
                self.plan, self.store, placement, self.only, cluster=self.cluster, on_client_loss=setup.on_client_loss
            )
            if self.run_id is None:
                self.run_id = self.sweep.start(setup=setup.facts())
                self.stored = self.store.run(self.run_id)
            else:
                self.store.claim(self.run_id)
        except BaseException:
            self.__exit__()
            raise
        return self

    def __exit__(self, *exc) -> None:
        if self.cluster is not None:
            self.cluster.close()
        signal.signal(signal.SIGTERM, self._sigterm)

    @property
    def rounds_total(self) -> int:
        """The rounds this session's cells take, at least."""
        return len(self.sweep.cells) * self._per_cell

    @property
    def rounds_stored(self) -> int:
        """Of those, the ones stored by earlier sessions; not a round that stopped its cell (its
        server died), which the sweep measures again, nor the probes of a capacity search that did
        not finish, which is searched again."""
        keys = {cell.key for cell in self.sweep.cells}
        return sum(
            min(sum(not stops_cell(r["measurement"]) for r in c["rounds"]), self._per_cell)
            for c in self.stored["cells"]
            if c["key"] in keys and (not self.plan.capacity or c["status"] == "done")
        )

    @property
    def probes_per_search(self) -> Optional[int]:
        """A capacity plan's probes a cell as first guessed (a search takes however many it
        needs); None for a plan of levels."""
        return capacity.EXPECTED_PROBES if self.plan.capacity else None

    @property
    def _per_cell(self) -> int:
        return self.probes_per_search or len(self.plan.levels) * self.plan.rounds.fewest

    def resume_command(self) -> str:
        return resume_command(self.run_id, self.db, self.stored["host"], self.only)

    def measure(self, progress: Progress) -> Optional[str]:
        """Sweep every round not stored yet; returns None when every cell was tried, or why the
        run stopped early (stored "stopped"). KeyboardInterrupt (Ctrl-C, SIGTERM) leaves the run
        "interrupted"; either way a resume goes on from there."""
        self.sweep.progress = progress
        try:
            self.measured = self.sweep.run(self.run_id)
        except Stopped as e:
            return str(e)
        return None

    def results(self) -> results.RunResults:
        """The run as stored: as the sweep ended it, or read again when it stopped early."""
        return self.measured or results.load(self.store, self.run_id)


def _finished(stored: dict, only: Optional[List[str]]) -> bool:
    """Whether a resume of run `stored` has nothing to measure: it ended, every cell finished
    (results.CellResult.finished: one that failed, or is done but holds a level that stopped it,
    is measured again), and every server of `only` has its cells."""
    measured = results.of_run(stored)
    return (
        stored["status"] == "done" and not measured.unfinished and set(only or ()) <= {c.server for c in measured.cells}
    )


def _placed_as_stored(run_id: int, placed: Optional[dict], setup: Setup) -> Setup:
    """`setup` with the CPUs run `run_id` started on (`placed`, stored with it): rounds measured
    on other CPUs would not compare with its first. Other CPUs asked for are refused."""
    if not placed:
        return setup
    server = _cpus_as_stored(run_id, placed, "server", setup.server_cpus)
    if setup.cluster:
        return replace(setup, server_cpus=server)  # the client hosts' engines use their own CPUs
    return replace(
        setup,
        server_cpus=server,
        client_cpus=_cpus_as_stored(run_id, placed, "client", setup.client_cpus),
        allow_shared=setup.allow_shared or placed["shared"],
    )


def _cpus_as_stored(run_id: int, placed: dict, part: str, given: Optional[str]) -> str:
    """The CPUs run `run_id` gave its `part` ("server" or "client"), as a CPU list."""
    stored = show_cpus(placed[part])
    if given and parse_cpus(given, f"--{part}-cpus") != tuple(placed[part]):
        raise PlacementError(
            f"run {run_id} ran its {part} on CPU(s) {stored}: resume it on the same ones (drop --{part}-cpus)"
        )
    return stored


def _served_from_here(plan) -> None:
    """Refuses a cluster run of a plan whose site is served where it is: a cluster's server host
    would serve whatever lies at that path on its own disk, and verify against it too."""
    for work in plan.workloads:
        if work.root is not None:
            raise WorkloadError(
                f"{work.label} is served where it is, in {work.root} on this machine, and a cluster's server "
                "host serves from its own disk: run this plan without --cluster"
            )
