"""The controller: runs each level over the cluster's client hosts at once and merges their
reports, and reaches the server host for the sweep."""

from __future__ import annotations

import time
import uuid
from concurrent.futures import CancelledError
from pathlib import Path
from typing import Callable, Dict, List, Optional, Sequence, Tuple

from httpbench.cluster import client_host
from httpbench.cluster.daemons import cause, only_critical_logs
from httpbench.cluster.errors import ClusterError, NoClientHost, SchedulerLost, ServerHostLost
from httpbench.cluster.security import check_address, security
from httpbench.cluster.server_host import RemoteServerHost
from httpbench.load import engine
from httpbench.load.report import LevelReport, Report
from httpbench.servers import ServerFailed

# One call to the server host: well beyond a server's own start-up (20 s) and verification limits.
SERVER_CALL_TIMEOUT_S = 120.0


def merge_hosts(reports: Sequence[Report], hosts: Sequence[str], spec: dict) -> LevelReport:
    """The level `spec`'s report from its hosts' reports, merged by the engine (counts and
    histograms added, rates and means derived again); the level's spec at the top, and each
    host's own figures, its share of the spec, its facts and when its load started, under
    `hosts`. An aborted host's reason is named after it."""
    named = [{**r, "aborted": r["aborted"] and f"{h}: {r['aborted']}"} for h, r in zip(hosts, reports)]
    merged = engine.merge_reports(spec, named)
    # Each host's, kept under `hosts`.
    del merged["host"], merged["started_at"]
    merged["hosts"] = [
        {"host": h, "started_at": r["started_at"], "report": {k: v for k, v in r.items() if k != "started_at"}}
        for h, r in zip(hosts, reports)
    ]
    return merged


class ClusterLoad:
    """Runs each level's engine on every client worker of a Dask cluster at once and merges."""

    def __init__(self, scheduler: str, certs: Optional[Path]) -> None:
        from distributed import Client

        self.address = check_address(scheduler, certs)
        try:
            self.client = Client(self.address, security=security(certs, "client"), timeout="15s")
        except OSError as e:
            raise ClusterError(f"cannot reach the scheduler {scheduler}: {e}") from None
        # Every client host seen during the run: a level with fewer says so.
        self.client_hosts_seen: Dict[str, None] = {}

    def _lost_scheduler(self, why: str) -> SchedulerLost:
        return SchedulerLost(
            f"lost the scheduler {self.address} ({why}), and its workers with it; start it and "
            "the workers again, then resume"
        )

    def _alive(self) -> Dict[str, dict]:
        """The workers in the cluster now, by address: asked of the scheduler every time, since
        Dask's scheduler_info() answers from its last copy once the scheduler is gone."""
        if self.client.status != "running":
            raise self._lost_scheduler("the connection to it broke")
        try:
            return self.client.sync(self.client.scheduler.identity, n_workers=-1)["workers"]
        except OSError as e:
            raise self._lost_scheduler(cause(e)) from None

    def _workers(self, role: str) -> Dict[str, str]:
        """address -> name of the workers with `role`, by name."""
        found = [
            (addr, str(w.get("name") or addr)) for addr, w in self._alive().items() if w.get("resources", {}).get(role)
        ]
        return dict(sorted(found, key=lambda pair: pair[1]))

    def client_workers(self) -> Dict[str, str]:
        return self._workers("client")

    def run(self, spec: dict) -> LevelReport:
        """One level over the client hosts, merged. SchedulerLost when the scheduler goes: Dask
        then cancels every future, and its calls fail."""
        try:
            return self._level(spec)
        except (CancelledError, OSError) as e:
            self._alive()  # SchedulerLost, unless the scheduler still answers
            if isinstance(e, CancelledError):
                raise ClusterError(f"Dask cancelled the level: {e}") from None
            raise

    def _level(self, spec: dict) -> LevelReport:
        from distributed import Event

        workers = self.client_workers()
        if not workers:
            raise NoClientHost(
                "the cluster has no client worker: start one with 'httpbench worker --scheduler ADDRESS --role client'"
            )
        self.client_hosts_seen.update(dict.fromkeys(workers.values()))
        shares = engine.split_spec(spec, len(workers))
        chosen = list(workers)[: len(shares)]
        # A TLS level verifies against the cell's own authority, written here: each client host
        # gets its text, to write where its engine runs.
        cacert = (spec.get("tls") or {}).get("cacert")
        authority = Path(cacert).read_text() if cacert else None
        # The level's name for its Events, Queue and tasks: unique, since the scheduler keeps them.
        level = f"httpbench-level-{uuid.uuid4().hex}"
        stop = Event(f"{level}-stop", client=self.client)
        futures = {
            addr: self.client.submit(
                client_host.share_at_barrier,
                share,
                level,
                authority,
                workers=[addr],
                resources={"client": 1},
                pure=False,
                key=f"{level}-{workers[addr]}",
            )
            for share, addr in zip(shares, chosen)
        }
        try:
            lost = self._barrier(futures, workers, level)
            Event(f"{level}-go", client=self.client).set()
            reports, lost_running = self._collect({a: f for a, f in futures.items() if a not in lost})
        finally:
            # Whatever still runs stops: the other hosts of a failed level, or all on Ctrl-C. A
            # lost scheduler took the workers, and so their engines, with it.
            if self.client.status == "running":
                stop.set()
        lost += lost_running
        for address in lost:
            # Forgotten, or it would run on a worker coming back at the same address.
            futures[address].cancel()
        if not reports:
            raise NoClientHost(f"every client host of the level was lost: {', '.join(workers[a] for a in lost)}")
        order = [a for a in chosen if a in reports]
        merged = merge_hosts([reports[a] for a in order], [workers[a] for a in order], spec)
        starts = [part["started_at"] for part in merged["hosts"]]
        merged["start_spread_s"] = max(starts) - min(starts)
        merged["client_hosts"] = [workers[a] for a in chosen]
        merged["lost_hosts"] = [workers[a] for a in lost]
        gone = [name for name in self.client_hosts_seen if name not in workers.values()]
        # A level narrower than the cluster never needed them all.
        merged["absent_hosts"] = gone if len(engine.split_spec(spec, len(self.client_hosts_seen))) > len(shares) else []
        return merged

    def _barrier(self, futures: Dict[str, object], workers: Dict[str, str], level: str) -> List[str]:
        """Wait until every host's engine is ready; returns the hosts lost meanwhile (their
        workers left the cluster). A host's error is the level's; a host still in the cluster but
        not ready within client_host.READY_TIMEOUT_S fails the level."""
        from distributed import Queue

        ready_queue = Queue(f"{level}-ready", client=self.client)
        ready: set = set()
        lost: List[str] = []
        deadline = time.monotonic() + client_host.READY_TIMEOUT_S
        while True:
            for future in futures.values():
                if future.status in ("error", "cancelled"):
                    future.result()
            alive = set(self._alive())
            lost += [a for a in futures if a not in alive and a not in ready and a not in lost]
            waiting = [a for a in futures if a not in ready and a not in lost]
            if not waiting:
                return lost
            if time.monotonic() > deadline:
                raise ClusterError(
                    f"client host(s) {', '.join(workers[a] for a in waiting)} were not ready within "
                    f"{client_host.READY_TIMEOUT_S:.0f} s; check their workers' logs"
                )
            try:
                ready.add(ready_queue.get(timeout=0.5))
            except TimeoutError:
                pass

    def _collect(self, running: Dict[str, object]) -> Tuple[Dict[str, Report], List[str]]:
        """Every running host's report, however long the level takes: a host is lost only when its
        worker leaves the cluster (its task could run nowhere else). A host's error is raised:
        the level failed, and `run` stops the others."""
        from distributed import wait

        reports: Dict[str, Report] = {}
        lost: List[str] = []
        while running:
            try:
                wait(list(running.values()), timeout=1, return_when="FIRST_COMPLETED")
            except TimeoutError:
                pass
            alive = set(self._alive())
            for address, future in list(running.items()):
                if future.status == "finished":
                    reports[address] = future.result()
                elif future.status in ("error", "cancelled"):
                    future.result()
                elif address not in alive:
                    lost.append(address)
                else:
                    continue
                del running[address]
        return reports, lost

    # ------------------------------------------------------------ the server host

    def _server_worker(self) -> Tuple[str, str]:
        found = self._workers("server")
        if not found:
            raise ClusterError(
                "the cluster has no server worker: start one on the server's host with "
                "'httpbench worker --scheduler ADDRESS --role server'"
            )
        return next(iter(found.items()))

    def server_host_name(self) -> str:
        return self._server_worker()[1]

    def placement(self, server_cpus: Optional[str]):
        """The server's CPUs, checked against the server host's own; the client hosts' engines use
        their hosts' CPUs, so nothing is taken from the server's host for them."""
        from httpbench.placement import Placement
        from httpbench.servers.host import usable_cpus

        return Placement.choose(
            server_cpus,
            allow_shared=True,
            available=self.on_server_host(usable_cpus),
            where=f"the server host {self.server_host_name()}",
        )

    def on_server_host(self, function: Callable, *args):
        """`function(*args)` run on the server worker's host (its facts, its installed servers)."""
        address, name = self._server_worker()
        return self.answer(lambda: self.client.submit(function, *args, workers=[address], pure=False), name)

    def server_host(self, cpus: Sequence[int]) -> RemoteServerHost:
        """A ServerHost living on the server-role worker, as a Dask actor."""
        from httpbench.servers.host import WORKER_ADDRESS, ServerHost

        address, name = self._server_worker()
        actor = self.answer(
            lambda: self.client.submit(
                ServerHost,
                list(cpus),
                WORKER_ADDRESS,
                actor=True,
                workers=[address],
                resources={"server": 1},
                pure=False,
            ),
            name,
        )
        return RemoteServerHost(actor, name, self.answer)

    def answer(self, call: Callable, host: str):
        """The result of `call()`'s future, a call to the server host: a lost or silent host is a
        failed cell (ServerHostLost), not a crashed or hanging run; a lost scheduler is
        SchedulerLost, since nothing is left to run on."""
        from httpbench.servers import VerificationFailed

        try:
            return call().result(timeout=SERVER_CALL_TIMEOUT_S)
        except (ServerFailed, VerificationFailed, ClusterError):
            raise
        except TimeoutError:
            self._alive()
            raise ServerHostLost(
                f"the server host {host} did not answer within {SERVER_CALL_TIMEOUT_S:.0f} s"
            ) from None
        except Exception as e:  # the worker or its connection is gone, whatever Dask calls it
            self._alive()
            raise ServerHostLost(f"the server host {host} was lost: {type(e).__name__}: {e}") from None

    def close(self) -> None:
        # Closing a client that lost its scheduler cancels Dask's attempt to reconnect, which it
        # logs as an error, with a traceback: the loss has been said already, in one line.
        with only_critical_logs():
            self.client.close()
