"""The cluster's daemons: a scheduler (`httpbench cluster scheduler`) and workers (`httpbench
worker`), each a Dask server with its role as a resource, started quietly or refused in one line."""

from __future__ import annotations

import contextlib
import logging
import socket
from pathlib import Path
from typing import Optional
from urllib.parse import urlsplit

from httpbench.cluster.errors import ClusterError
from httpbench.cluster.security import check_address, security

ROLES = ("client", "server")
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


def cause(error: Optional[BaseException]) -> str:
    """The innermost reason given for `error`: Dask wraps an OSError in errors of its own."""
    reason = type(error).__name__
    while error is not None:
        reason = getattr(error, "strerror", None) or str(error) or reason
        error = error.__cause__
    return reason


@contextlib.contextmanager
def only_critical_logs():
    """Dask logs only critical lines meanwhile: each of its loggers (and asyncio's, which reports
    its tasks' failures) is set to CRITICAL and given back its level after; the rest of the process
    logs as before."""
    names = ["distributed", "tornado", "asyncio"]
    loggers = [
        logging.getLogger(n) for n in [*names, *list(logging.root.manager.loggerDict)] if n.split(".")[0] in names
    ]
    levels = [logger.level for logger in loggers]
    for logger in loggers:
        logger.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        for logger, level in zip(loggers, levels):
            logger.setLevel(level)


async def _started(what: str, kind: type, *args, **kwargs):
    """A Dask Scheduler or Worker made and started; a failure is a ClusterError naming its cause.
    Dask's lines about a start that fails (tracebacks of its own clean-up among them) would bury
    that one, so it logs only critical ones meanwhile."""
    with only_critical_logs():
        try:
            return await kind(*args, **kwargs)
        except (RuntimeError, OSError) as e:  # TimeoutError is an OSError
            raise ClusterError(f"{what} could not start: {cause(e)}") from None


async def _serve_scheduler(address: str, certs: Optional[Path]) -> None:
    import dask
    from distributed import Scheduler

    with dask.config.set({**NO_HTTP, "distributed.scheduler.worker-ttl": f"{WORKER_TTL_S:.0f}s"}):
        scheduler = await _started(
            f"the scheduler at {address}",
            Scheduler,
            host=address,
            security=security(certs, "scheduler"),
            dashboard=False,
            dashboard_address=HTTP_ON_LOOPBACK,
        )
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
        raise ClusterError(f"cannot join the scheduler {scheduler}: {cause(e)}; check its address{hint}") from None
    await comm.close()


async def _serve_worker(scheduler: str, role: str, certs: Optional[Path], name: Optional[str], listen: str) -> None:
    import dask
    from distributed import Worker

    tls = security(certs, "worker")
    await _join(scheduler, tls, certs)
    # One task at a time: a worker is a host's load generator (or its server), never a pool.
    with dask.config.set(NO_HTTP):
        worker = await _started(
            f"the worker listening at {listen}",
            Worker,
            scheduler,
            nthreads=1,
            resources={role: 1},
            security=tls,
            name=name or f"{socket.gethostname()}-{role}",
            host=listen,
            dashboard=False,
            dashboard_address=HTTP_ON_LOOPBACK,
            memory_limit=0,
            death_timeout=WORKER_JOIN_TIMEOUT_S,
        )
        async with worker:
            print(f"worker {worker.name} ({role}) at {worker.address}", flush=True)
            await worker.finished()


def listen_address(scheduler: str) -> str:
    """Where a worker listens by default: its address on the route to the scheduler, with the
    scheduler's scheme (an IPv6 address in brackets)."""
    host = route_address(scheduler)
    return f"{urlsplit(scheduler).scheme}://{f'[{host}]' if ':' in host else host}"


def route_address(scheduler: str) -> str:
    """This host's address on the route to the scheduler: what the other hosts can reach."""
    parts = urlsplit(scheduler)
    family = socket.AF_INET6 if ":" in (parts.hostname or "") else socket.AF_INET
    try:
        with socket.socket(family, socket.SOCK_DGRAM) as probe:
            probe.connect((parts.hostname, parts.port))
            return probe.getsockname()[0]
    except OSError as e:
        raise ClusterError(
            f"no route to the scheduler {scheduler}: {e.strerror or e}; check its address, or give --listen"
        ) from None


def run_scheduler(address: str, certs: Optional[Path]) -> int:
    import asyncio

    asyncio.run(_serve_scheduler(check_address(address, certs), certs))
    return 0


def run_worker(
    scheduler: str, role: str, certs: Optional[Path], name: Optional[str] = None, listen: Optional[str] = None
) -> str:
    """Serve the scheduler until it goes away (nothing else stops a worker); return why the worker
    stopped, in one line."""
    import asyncio

    scheduler = check_address(scheduler, certs)
    if role not in ROLES:
        raise ClusterError(f"unknown role {role!r}: choose {' or '.join(ROLES)}")
    listen = (
        check_address(listen, certs, "worker's --listen address", with_port=False)
        if listen
        else listen_address(scheduler)
    )
    asyncio.run(_serve_worker(scheduler, role, certs, name, listen))
    return f"lost the scheduler {scheduler}, so this worker stopped; start it again once the scheduler is back"
