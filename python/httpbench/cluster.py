"""Load from several client hosts, on Dask distributed.

Every host runs a Dask worker started by `httpbench worker` with its role as a Dask resource
(`client` or `server`); a scheduler runs anywhere (`httpbench cluster scheduler`). Workers run
whatever the scheduler sends them, so the cluster is TLS with mutual authentication (a CA made
by `httpbench cluster certs`) whenever any address is not loopback; plain TCP is accepted on
loopback only.

A level is split over the client workers (connections, rate and request budget divided as evenly
as whole numbers allow); every engine waits at a barrier and starts when all are ready, and each
returns its report with its HdrHistograms, which the engine's merge adds exactly. Each host's engine
runs in a process of its own, so that a failed or abandoned level can stop it.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import ipaddress
import json
import logging
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid
from concurrent.futures import CancelledError
from pathlib import Path
from typing import Callable, Dict, List, Optional, Sequence, Tuple
from urllib.parse import urlsplit

from httpbench import engine
from httpbench.servers import ServerFailed

ROLES = ("client", "server")
CERT_NAMES = ("scheduler", "worker", "client")
# How long the client hosts have to get their engines ready for a level. Once the load runs there
# is no time limit: a level takes as long as its budget and the engine's own timeouts say, and a
# host is lost only when its worker leaves the cluster.
READY_TIMEOUT_S = 60.0
# One call to the server host: well beyond a server's own start-up (20 s) and verification limits.
SERVER_CALL_TIMEOUT_S = 120.0
# Dask serves HTTP (dashboard, metrics, health) beside every scheduler and worker, plain and
# unauthenticated even when the cluster is TLS: it gets no routes, and listens on loopback only.
NO_HTTP = {"distributed.scheduler.http.routes": [], "distributed.worker.http.routes": []}
HTTP_ON_LOOPBACK = "127.0.0.1:0"
# How long a worker tries to join its scheduler before it gives up, saying why: a wrong address or
# certificates from another CA would otherwise have it retry forever.
WORKER_JOIN_TIMEOUT_S = 60.0
# A worker whose host vanished without closing its connections (power, network) is declared lost
# once it has missed its heartbeats this long; Dask's own default is five minutes.
WORKER_TTL_S = 60.0
# An engine told to stop looks for the signal every 20 ms: one still running after this is stuck.
ENGINE_STOP_TIMEOUT_S = 5.0


class ClusterError(ValueError):
    """The cluster cannot be used as asked; one line saying why and what to do."""


class ClusterDown(ClusterError):
    """Nothing more can be measured until the cluster's hosts are back: the run stops, to be
    resumed."""


class NoClientHost(ClusterDown):
    """No client host is left to load from."""


class SchedulerLost(ClusterDown):
    """The controller lost the scheduler, and the workers with it."""


class ServerHostLost(ServerFailed):
    """The server host's worker left the cluster, or never answered: its watchdog stops its
    servers, so there is nothing left there to stop."""


# ---------------------------------------------------------------- certificates and security

def make_certs(directory: Path, days: int = 365, force: bool = False) -> List[Path]:
    """A CA and one certificate per part (scheduler, worker, client) signed by it; every private
    key and certificate written 0600. The directory must be new or empty (a CA every host trusts
    is not replaced by accident) unless `force`; a new or empty one is made 0700."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    if directory.exists() and not directory.is_dir():
        raise ClusterError(f"{directory} exists and is not a directory; name a new directory for the certificates")
    try:
        empty = not directory.exists() or not any(directory.iterdir())
        if not empty and not force:
            raise ClusterError(f"{directory} is not empty; name a new or empty directory (--force overwrites its "
                               "certificates, and every host then needs the new CA)")
        directory.mkdir(parents=True, exist_ok=True)
        if empty:
            directory.chmod(0o700)
    except OSError as e:
        raise ClusterError(f"cannot use {directory} for the certificates: {e.strerror}") from None
    now = dt.datetime.now(dt.timezone.utc)

    def name(common: str) -> x509.Name:
        return x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME, "httpbench"),
                          x509.NameAttribute(NameOID.COMMON_NAME, common)])

    def write(path: Path, data: bytes) -> Path:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        path.chmod(0o600)   # an existing file keeps its mode through O_CREAT
        return path

    def pem_key(key) -> bytes:
        return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                 serialization.NoEncryption())

    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca = (x509.CertificateBuilder().subject_name(name("httpbench CA")).issuer_name(name("httpbench CA"))
          .public_key(ca_key.public_key()).serial_number(x509.random_serial_number())
          .not_valid_before(now - dt.timedelta(minutes=5)).not_valid_after(now + dt.timedelta(days=days))
          .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
          .sign(ca_key, hashes.SHA256()))
    written = [write(directory / "ca.pem", ca.public_bytes(serialization.Encoding.PEM)),
               write(directory / "ca-key.pem", pem_key(ca_key))]
    for part in CERT_NAMES:
        key = ec.generate_private_key(ec.SECP256R1())
        cert = (x509.CertificateBuilder().subject_name(name(f"httpbench {part}")).issuer_name(ca.subject)
                .public_key(key.public_key()).serial_number(x509.random_serial_number())
                .not_valid_before(now - dt.timedelta(minutes=5)).not_valid_after(now + dt.timedelta(days=days))
                .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
                .sign(ca_key, hashes.SHA256()))
        written.append(write(directory / f"{part}.pem", cert.public_bytes(serialization.Encoding.PEM)))
        written.append(write(directory / f"{part}-key.pem", pem_key(key)))
    return written


def security(certs: Optional[Path], part: str):
    """Dask's Security for one part of the cluster: mutual TLS with the CA, or None (plain TCP)."""
    from distributed import Security
    if certs is None:
        return Security()
    missing = [n for n in ("ca.pem", f"{part}.pem", f"{part}-key.pem") if not (certs / n).exists()]
    if missing:
        raise ClusterError(f"{certs} lacks {', '.join(missing)}; make them with: httpbench cluster certs {certs}")
    files = {"tls_ca_file": str(certs / "ca.pem")}
    # Each part presents its own certificate in every role it may take: a worker's tasks open
    # client connections too (the barrier's Queue and Events).
    for role in CERT_NAMES:
        files[f"tls_{role}_cert"] = str(certs / f"{part}.pem")
        files[f"tls_{role}_key"] = str(certs / f"{part}-key.pem")
    return Security(require_encryption=True, **files)


def _is_loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return host == "localhost"


def check_address(address: str, certs: Optional[Path], what: str = "scheduler address",
                  with_port: bool = True) -> str:
    """The security rule: tls:// with certificates anywhere, tcp:// on loopback only and without
    certificates. Returns the address with its scheme (HOST:PORT alone is tcp://)."""
    full = address if "://" in address else f"tcp://{address}"
    parts = urlsplit(full)
    try:
        port = parts.port
    except ValueError:
        port = None
    shape = "tls://HOST:PORT or tcp://HOST:PORT" if with_port else "tls://HOST or tcp://HOST"
    if parts.scheme not in ("tls", "tcp") or not parts.hostname or (with_port and not port):
        raise ClusterError(f"the {what} {address!r} is not {shape}")
    if parts.scheme == "tls" and certs is None:
        raise ClusterError(f"the {what} {address} is TLS: give --certs DIR (made by 'httpbench cluster certs DIR')")
    if parts.scheme == "tcp" and not _is_loopback(parts.hostname):
        raise ClusterError(f"refusing plain TCP for the {what} {address}: workers run what the scheduler sends, so "
                           "beyond loopback the cluster must use mutual TLS (tls://, with --certs)")
    if parts.scheme == "tcp" and certs is not None:
        raise ClusterError(f"the {what} {address} is plain TCP but --certs is given: use tls://{parts.netloc} "
                           "for mutual TLS, or drop --certs (plain TCP on loopback only)")
    return full


# ---------------------------------------------------------------- scheduler and workers

def _cause(error: Optional[BaseException]) -> str:
    """The innermost reason given for `error`: Dask wraps an OSError in errors of its own."""
    reason = type(error).__name__
    while error is not None:
        reason = getattr(error, "strerror", None) or str(error) or reason
        error = error.__cause__
    return reason


@contextlib.contextmanager
def _only_critical_logs():
    """Dask logs only critical lines meanwhile (every logger: Dask's have levels of their own)."""
    logging.disable(logging.ERROR)
    try:
        yield
    finally:
        logging.disable(logging.NOTSET)


async def _started(what: str, kind: type, *args, **kwargs):
    """A Dask Scheduler or Worker made and started; a failure is a ClusterError naming its cause.
    Dask's lines about a start that fails (tracebacks of its own clean-up among them) would bury
    that one, so it logs only critical ones meanwhile."""
    with _only_critical_logs():
        try:
            return await kind(*args, **kwargs)
        except (RuntimeError, OSError) as e:   # TimeoutError is an OSError
            raise ClusterError(f"{what} could not start: {_cause(e)}") from None


async def _serve_scheduler(address: str, certs: Optional[Path]) -> None:
    import dask
    from distributed import Scheduler
    with dask.config.set({**NO_HTTP, "distributed.scheduler.worker-ttl": f"{WORKER_TTL_S:.0f}s"}):
        scheduler = await _started(f"the scheduler at {address}", Scheduler, host=address,
                                   security=security(certs, "scheduler"), dashboard=False,
                                   dashboard_address=HTTP_ON_LOOPBACK)
        async with scheduler:
            print(f"scheduler at {scheduler.address}", flush=True)
            await scheduler.finished()


async def _join(scheduler: str, tls, certs: Optional[Path]) -> None:
    """Reach the scheduler once before starting the worker: Dask's worker retries a refused TLS
    handshake (certificates of another CA) forever, where this fails at once, naming it."""
    from distributed.comm import connect
    try:
        comm = await connect(scheduler, timeout=WORKER_JOIN_TIMEOUT_S, **tls.get_connection_args("worker"))
    except OSError as e:
        hint = f", and that {certs} holds certificates made with the scheduler's CA" if certs else ""
        raise ClusterError(f"cannot join the scheduler {scheduler}: {_cause(e)}; check its address{hint}") from None
    await comm.close()


async def _serve_worker(scheduler: str, role: str, certs: Optional[Path], name: Optional[str],
                        listen: str) -> None:
    import dask
    from distributed import Worker
    tls = security(certs, "worker")
    await _join(scheduler, tls, certs)
    # One task at a time: a worker is a host's load generator (or its server), never a pool.
    with dask.config.set(NO_HTTP):
        worker = await _started(f"the worker listening at {listen}", Worker, scheduler, nthreads=1,
                                resources={role: 1}, security=tls, name=name or f"{socket.gethostname()}-{role}",
                                host=listen, dashboard=False, dashboard_address=HTTP_ON_LOOPBACK, memory_limit=0,
                                death_timeout=WORKER_JOIN_TIMEOUT_S)
        async with worker:
            print(f"worker {worker.name} ({role}) at {worker.address}", flush=True)
            await worker.finished()


def _listen_address(scheduler: str) -> str:
    """Where a worker listens by default: its address on the route to the scheduler, with the
    scheduler's scheme (an IPv6 address in brackets)."""
    host = _route_address(scheduler)
    return f"{urlsplit(scheduler).scheme}://{f'[{host}]' if ':' in host else host}"


def _route_address(scheduler: str) -> str:
    """This host's address on the route to the scheduler: what the other hosts can reach."""
    parts = urlsplit(scheduler)
    family = socket.AF_INET6 if ":" in (parts.hostname or "") else socket.AF_INET
    try:
        with socket.socket(family, socket.SOCK_DGRAM) as probe:
            probe.connect((parts.hostname, parts.port))
            return probe.getsockname()[0]
    except OSError as e:
        raise ClusterError(f"no route to the scheduler {scheduler}: {e.strerror or e}; check its address, "
                           "or give --listen") from None


def run_scheduler(address: str, certs: Optional[Path]) -> int:
    import asyncio
    asyncio.run(_serve_scheduler(check_address(address, certs), certs))
    return 0


def run_worker(scheduler: str, role: str, certs: Optional[Path], name: Optional[str] = None,
               listen: Optional[str] = None) -> int:
    import asyncio
    scheduler = check_address(scheduler, certs)
    if role not in ROLES:
        raise ClusterError(f"unknown role {role!r}: choose {' or '.join(ROLES)}")
    listen = (check_address(listen, certs, "worker's --listen address", with_port=False) if listen
              else _listen_address(scheduler))
    asyncio.run(_serve_worker(scheduler, role, certs, name, listen))
    # Nothing here asks a worker to stop: it ended because its scheduler went away.
    print(f"httpbench: lost the scheduler {scheduler}, so this worker stopped; start it again once the "
          "scheduler is back", file=sys.stderr)
    return 1


# ---------------------------------------------------------------- splitting and merging load

def merge_hosts(reports: Sequence[dict], hosts: Sequence[str], spec: dict) -> dict:
    """The level `spec`'s report from its hosts' reports, merged by the engine (counts and
    histograms added, rates and means derived again); the level's spec at the top, and each
    host's own figures, its share of the spec, its facts and when its load started, under
    `hosts`. An aborted host's reason is named after it."""
    named = [{**r, "aborted": r["aborted"] and f"{h}: {r['aborted']}"} for h, r in zip(hosts, reports)]
    merged = engine.merge_reports(named)
    # Each host's, kept under `hosts`.
    del merged["host"], merged["started_at"]
    merged["spec"] = spec
    merged["hosts"] = [{"host": h, "started_at": r["started_at"],
                        "report": {k: v for k, v in r.items() if k != "started_at"}}
                       for h, r in zip(hosts, reports)]
    return merged


# ---------------------------------------------------------------- one level on the client hosts

# The engine's stop flag is reached only through a signal to the main thread of the process that
# runs it, and a Dask task runs in a worker's thread: so each host's engine gets a process.
_ENGINE_PROCESS = "from httpbench.cluster import engine_process; engine_process()"


def engine_process() -> None:
    """One host's engine for one level, as a process of its own: its spec comes on stdin; it says
    "ready", starts at the line "go" and stops at the next line or at the end of input (its worker
    gone). It prints one JSON line: the report, or the engine's error; stopped, nothing."""
    spec = json.loads(sys.stdin.readline())
    print("ready", flush=True)
    if sys.stdin.readline().strip() != "go":
        return
    threading.Thread(target=_stop_at_next_line, daemon=True).start()
    try:
        report = engine.run(engine.with_threads(spec))
        signal.signal(signal.SIGINT, signal.SIG_IGN)   # the figures are in hand: a late stop changes nothing
        print(json.dumps({"report": report}), flush=True)
    except engine.EngineError as e:
        print(json.dumps({"error": str(e)}), flush=True)
    except KeyboardInterrupt:
        pass


def _stop_at_next_line() -> None:
    sys.stdin.readline()
    # The engine looks for signals every 20 ms: SIGINT stops it as Ctrl-C would.
    os.kill(os.getpid(), signal.SIGINT)


def _share_at_barrier(spec: dict, level: str) -> Optional[dict]:
    """On a client worker: start this host's engine process, say ready, wait for every host, then
    run. Returns the report with `started_at`, or None when the level was stopped."""
    from distributed import Event, Queue, get_worker
    go, stop = Event(f"{level}-go"), Event(f"{level}-stop")
    worker = get_worker()
    with subprocess.Popen([sys.executable, "-c", _ENGINE_PROCESS], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                          text=True) as process:
        try:
            process.stdin.write(json.dumps(spec) + "\n")
            process.stdin.flush()
            if process.stdout.readline().strip() != "ready":
                raise ClusterError(f"the engine process on {worker.name} did not start (exit code {process.wait()})")
            Queue(f"{level}-ready").put(worker.address)
            if not _wait_for_go(go, stop):
                return None
            process.stdin.write("go\n")
            process.stdin.flush()
            return _report_of(process, stop, worker.name)
        finally:
            if process.poll() is None:
                process.kill()


def _wait_for_go(go, stop) -> bool:
    """True once every host is ready, False if the level was stopped first."""
    # The controller sets one or the other within its own READY_TIMEOUT_S.
    deadline = time.monotonic() + 2 * READY_TIMEOUT_S
    while time.monotonic() < deadline:
        if stop.is_set():
            return False
        if go.wait(timeout=0.5):
            return not stop.is_set()
    raise ClusterError(f"no word from the controller within {2 * READY_TIMEOUT_S:.0f} s of being ready")


def _report_of(process: subprocess.Popen, stop, host: str) -> Optional[dict]:
    """The engine process's report, with the wall-clock time its load started; None when the
    level is stopped meanwhile (the process is told to stop)."""
    printed: List[str] = []
    reader = threading.Thread(target=lambda: printed.append(process.stdout.read()), daemon=True)
    reader.start()
    while reader.is_alive():
        reader.join(timeout=0.2)
        if reader.is_alive() and stop.is_set():
            try:
                process.stdin.write("stop\n")
                process.stdin.flush()
            except BrokenPipeError:
                pass   # it has just ended on its own
            reader.join(ENGINE_STOP_TIMEOUT_S)
            if reader.is_alive():
                process.kill()
            return None
    if not printed[0].strip():
        raise ClusterError(f"the engine process on {host} ended without a report (exit code {process.wait()})")
    try:
        out = json.loads(printed[0])
    except ValueError:
        raise ClusterError(f"the engine process on {host} printed no report but: {printed[0].strip()[:200]!r}") \
            from None
    if "error" in out:
        raise engine.EngineError(out["error"])
    return out["report"]


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
        return SchedulerLost(f"lost the scheduler {self.address} ({why}), and its workers with it; start it and "
                             "the workers again, then resume")

    def _alive(self) -> Dict[str, dict]:
        """The workers in the cluster now, by address: asked of the scheduler every time, since
        Dask's scheduler_info() answers from its last copy once the scheduler is gone."""
        if self.client.status != "running":
            raise self._lost_scheduler("the connection to it broke")
        try:
            return self.client.sync(self.client.scheduler.identity, n_workers=-1)["workers"]
        except OSError as e:
            raise self._lost_scheduler(_cause(e)) from None

    def _workers(self, role: str) -> Dict[str, str]:
        """address -> name of the workers with `role`, by name."""
        found = [(addr, str(w.get("name") or addr)) for addr, w in self._alive().items()
                 if w.get("resources", {}).get(role)]
        return dict(sorted(found, key=lambda pair: pair[1]))

    def client_workers(self) -> Dict[str, str]:
        return self._workers("client")

    def run(self, spec: dict) -> dict:
        """One level over the client hosts, merged. SchedulerLost when the scheduler goes: Dask
        then cancels every future, and its calls fail."""
        try:
            return self._level(spec)
        except (CancelledError, OSError) as e:
            self._alive()   # SchedulerLost, unless the scheduler still answers
            if isinstance(e, CancelledError):
                raise ClusterError(f"Dask cancelled the level: {e}") from None
            raise

    def _level(self, spec: dict) -> dict:
        from distributed import Event
        workers = self.client_workers()
        if not workers:
            raise NoClientHost("the cluster has no client worker: start one with "
                               "'httpbench worker --scheduler ADDRESS --role client'")
        self.client_hosts_seen.update(dict.fromkeys(workers.values()))
        shares = engine.split_spec(spec, len(workers))
        chosen = list(workers)[:len(shares)]
        # The level's name for its Events, Queue and tasks: unique, since the scheduler keeps them.
        level = f"httpbench-level-{uuid.uuid4().hex}"
        stop = Event(f"{level}-stop", client=self.client)
        futures = {addr: self.client.submit(_share_at_barrier, share, level, workers=[addr], resources={"client": 1},
                                            pure=False, key=f"{level}-{workers[addr]}")
                   for share, addr in zip(shares, chosen)}
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
        not ready within READY_TIMEOUT_S fails the level."""
        from distributed import Queue
        ready_queue = Queue(f"{level}-ready", client=self.client)
        ready: set = set()
        lost: List[str] = []
        deadline = time.monotonic() + READY_TIMEOUT_S
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
                raise ClusterError(f"client host(s) {', '.join(workers[a] for a in waiting)} were not ready within "
                                   f"{READY_TIMEOUT_S:.0f} s; check their workers' logs")
            try:
                ready.add(ready_queue.get(timeout=0.5))
            except TimeoutError:
                pass

    def _collect(self, running: Dict[str, object]) -> Tuple[Dict[str, dict], List[str]]:
        """Every running host's report, however long the level takes: a host is lost only when its
        worker leaves the cluster (its task could run nowhere else). A host's error is raised:
        the level failed, and `run` stops the others."""
        from distributed import wait
        reports: Dict[str, dict] = {}
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
            raise ClusterError("the cluster has no server worker: start one on the server's host with "
                               "'httpbench worker --scheduler ADDRESS --role server'")
        return next(iter(found.items()))

    def server_host_name(self) -> str:
        return self._server_worker()[1]

    def placement(self, server_cpus: Optional[str]):
        """The server's CPUs, checked against the server host's own; the client hosts' engines use
        their hosts' CPUs, so nothing is taken from the server's host for them."""
        from httpbench.placement import Placement
        from httpbench.servers.host import usable_cpus
        return Placement.choose(server_cpus, allow_shared=True, available=self.on_server_host(usable_cpus),
                                where=f"the server host {self.server_host_name()}")

    def on_server_host(self, function: Callable, *args):
        """`function(*args)` run on the server worker's host (its facts, its installed servers)."""
        address, name = self._server_worker()
        return self.answer(lambda: self.client.submit(function, *args, workers=[address], pure=False), name)

    def server_host(self, cpus: Sequence[int]) -> "RemoteServerHost":
        """A ServerHost living on the server-role worker, as a Dask actor."""
        from httpbench.servers.host import WORKER_ADDRESS, ServerHost
        address, name = self._server_worker()
        actor = self.answer(lambda: self.client.submit(ServerHost, list(cpus), WORKER_ADDRESS, actor=True,
                                                       workers=[address], resources={"server": 1}, pure=False), name)
        return RemoteServerHost(actor, name, self)

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
            raise ServerHostLost(f"the server host {host} did not answer within {SERVER_CALL_TIMEOUT_S:.0f} s") \
                from None
        except Exception as e:   # the worker or its connection is gone, whatever Dask calls it
            self._alive()
            raise ServerHostLost(f"the server host {host} was lost: {type(e).__name__}: {e}") from None

    def close(self) -> None:
        # Closing a client that lost its scheduler cancels Dask's attempt to reconnect, which it
        # logs as an error, with a traceback: the loss has been said already, in one line.
        with _only_critical_logs():
            self.client.close()


class RemoteServerHost:
    """The sweep's ServerHost interface on a Dask actor: every call waited for, within a limit."""

    def __init__(self, actor, name: str, cluster: ClusterLoad) -> None:
        self._actor = actor
        self._cluster = cluster
        self.name = name

    def stop(self) -> None:
        try:
            self.__getattr__("stop")()
        except (ServerHostLost, SchedulerLost):
            # The server worker is gone (a lost scheduler takes it too), and its host's watchdog
            # has stopped its servers: nothing is left to stop.
            pass

    def __getattr__(self, method: str):
        return lambda *args, **kwargs: self._cluster.answer(lambda: getattr(self._actor, method)(*args, **kwargs),
                                                            self.name)
