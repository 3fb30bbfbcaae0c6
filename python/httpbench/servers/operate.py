"""An operator's action performed on a running server (a reload, a graceful or full restart, logs
reopened), and verified to have happened: the master kept or replaced as the action implies, the
workers from before it gone, the logs reopened, and the server answering a verified request again,
on its new certificate when one was written first. A server that refuses the action (a
configuration it found broken) is reported in its own words, and must still be serving.

The monitor, when given, is told the action's span (Monitor.planned), so what it does to the
server's processes is never taken for a crash or a worker restart.
"""

from __future__ import annotations

import re
import signal
import time
from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Optional, Sequence, Set, Tuple

from httpbench.errors import Error
from httpbench.observe.monitor import Monitor
from httpbench.servers.base import Server, ServerFailed
from httpbench.servers.operations import Operation, Performed
from httpbench.servers.own_words import last_word, log_size, written_since
from httpbench.servers.process import RunningServer
from httpbench.servers.verify import verify

# How long an action may take to complete, from its signal to the old workers gone and the server
# answering again: a graceful one waits for requests in flight, which on loopback take milliseconds.
BOUND = 15.0
# What a signalled server writes in its error log when it refuses an action: nginx logs a
# configuration it cannot load at emerg level and goes on serving on its old one. Only that level:
# a loaded nginx may log alerts of its own meanwhile ("worker_connections are not enough").
_REFUSED = re.compile(r"\[emerg\]")
# php-fpm(8): SIGUSR2 reloads the pool's configuration and replaces its workers gracefully, SIGUSR1
# reopens its log; its pool is reloaded with the server it serves.
_POOL_SIGNALS = {
    "reload": signal.SIGUSR2,
    "graceful-restart": signal.SIGUSR2,
    "restart": signal.SIGUSR2,
    "reopen-logs": signal.SIGUSR1,
}
# A line no server's configuration language accepts, for tests of a refused action.
BROKEN = "httpbench-broken-on-purpose {"


class OperationUnsupported(ServerFailed):
    """An action asked of a server that has no documented means for it; the message says so, and
    what it has, in one line. A ServerFailed, as TLSUnsupported is."""


def lacks(server: Server, action: str) -> str:
    """One line: `server` has no `action` in httpbench, and what it has."""
    return f"{server.name} has no {action} in httpbench; it has {', '.join(server.operations)}"


@dataclass(frozen=True)
class _Before:
    """The server as the action found it."""

    master: int
    workers: Set[int]
    logs: Tuple[Path, ...]  # its logs, its error log first
    rotated: Tuple[Path, ...]  # those moved aside for reopen-logs
    said_from: int  # where the error log's next line starts (a rotated log starts again at 0)


def perform(
    running: RunningServer,
    action: str,
    probe: Tuple[str, bytes],
    monitor: Optional[Monitor] = None,
    renew: Optional[Callable[[], None]] = None,
    bound: float = BOUND,
) -> Performed:
    """Perform `action` on `running` and wait, up to `bound` seconds, until it is seen done: the
    file `probe` (URL path without its "/", its bytes) verified in an answer after it. `renew`,
    for an HTTPS site, writes its new certificate at the same paths first. `monitor` (an
    observe.monitor.Monitor on the server) is told the span."""
    server, site = running.server, running.site
    operation = server.operations.get(action)
    if operation is None:
        raise OperationUnsupported(lacks(server, action))
    if renew is not None:
        renew()
    logs = server.logs(site)
    rotated = _rotate(logs) if action == "reopen-logs" else ()
    before = _Before(running.pid, _workers(running), logs, rotated, log_size(logs[0]) if logs else 0)
    with monitor.planned(action) if monitor is not None else nullcontext():
        at, started = time.time(), time.monotonic()
        problem = _act(running, action, monitor)
        took = None
        if problem is None:
            took, problem = _settle(running, operation, before, probe, (started, bound))
        if problem is not None and running.alive():
            problem += _still_serving(running, probe)
    observed = "gone" if not running.alive() else "kept" if running.pid == before.master else "replaced"
    if problem is None and observed != operation.master:
        problem = f"its master was {observed}, where {operation.means} keeps it {operation.master}"
    return Performed(
        action=action,
        at=at,
        took_s=took,
        master=observed,
        ok=problem is None,
        problem=problem,
        workers_replaced=len(before.workers - _workers(running)),
        certificate_renewed=renew is not None and problem is None,
    )


def _act(running: RunningServer, action: str, monitor: Optional[Monitor]) -> Optional[str]:
    """The action itself; the server's words when it refused it."""
    if action == "restart":
        try:
            running.restart()
        except ServerFailed as e:
            return str(e)
        finally:
            if monitor is not None and running.alive():
                monitor.follow(running.pid)
    else:
        refused = running.server.operate(action, running.site, running.pid)
        if refused is not None:
            return refused
    pool = running.php
    if pool is not None and pool.alive():
        pool.process.send_signal(_POOL_SIGNALS[action])
    return None


def _settle(
    running: RunningServer, operation: Operation, before: _Before, probe: Tuple[str, bytes], bound: Tuple[float, float]
) -> Tuple[Optional[float], Optional[str]]:
    """(seconds from the action's start to its end, None) once that end is seen; (None, why) when
    the server refused the action or the bound passed first. `bound`: when the action started
    (time.monotonic()), and how long it may take."""
    (started, seconds), waiting = bound, "it did not answer"
    while True:
        if before.logs:
            refused = _refusal(before.logs[0], before.said_from)
            if refused is not None:
                return None, refused
        if not running.alive():
            return None, f"{running.server.name} exited: {last_word(running)}"
        left = before.workers & _workers(running) if operation.workers == "replaced" else set()
        missing = [log.name for log in before.rotated if not log.exists()]
        if left:
            waiting = f"{len(left)} of its {len(before.workers)} workers from before still ran"
        elif missing:
            waiting = f"it had not reopened {', '.join(missing)}"
        else:
            try:
                verify(running.site, dict([probe]), running.server.name)
                return time.monotonic() - started, None
            except Error as e:
                waiting = f"it did not answer as verified: {e}"
        if time.monotonic() - started > seconds:
            return None, f"not done within {seconds:.0f} s: {waiting}"
        time.sleep(0.02)


def _still_serving(running: RunningServer, probe: Tuple[str, bytes]) -> str:
    """After an action that failed: "" when the server still answers as verified (a refused reload
    leaves it on its old configuration), else what it answered."""
    try:
        verify(running.site, dict([probe]), running.server.name)
    except Error as e:
        return f"; and then: {e}"
    return ""


def _workers(running: RunningServer) -> Set[int]:
    """The processes of the server's session but its master, and of its PHP pool but the pool's."""
    pids = set(running.pids()) - {running.pid}
    if running.php is not None:
        pids |= set(running.php.pids()) - {running.php.pid}
    return pids


def _rotate(logs: Sequence[Path]) -> Tuple[Path, ...]:
    """Each log moved aside to `name.1`, as logrotate does before it signals the server."""
    moved = tuple(log for log in logs if log.exists())
    for log in moved:
        log.replace(log.with_name(log.name + ".1"))
    return moved


def _refusal(log: Path, since: int) -> Optional[str]:
    """The server's first line refusing the action in its error log since offset `since`."""
    text = written_since(log, since)
    # From its level on: the timestamp before it says nothing the report does not.
    return next((line[m.start() :].strip() for line in text.splitlines() if (m := _REFUSED.search(line))), None)


def break_config(running: RunningServer) -> None:
    """For tests: a line no server can parse added to each of its configuration files (varnish
    reloads its VCL, not its command line), so the next action that reads them is refused."""
    for name in running.config.files:
        path = running.site.run_dir / name
        path.write_text(path.read_text() + f"\n{BROKEN}\n")
