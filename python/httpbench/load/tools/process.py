"""What running the write-ups' tools has in common: a level as a tool takes it, the child process
pinned, bounded in time and measured by rusage, and the numbers parsed out of its output."""

from __future__ import annotations

import functools
import math
import os
import re
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass
from typing import List, Optional, Sequence, Tuple

from httpbench.errors import Error
from httpbench.load.report import Report

# Time allowed beyond the duration budget: start-up, connecting, and the tool's own summary.
GRACE_S = 30.0
# A request budget has no duration to bound it; no sane level takes longer than this.
REQUESTS_TIMEOUT_S = 600.0
# After the deadline the tool gets SIGINT (ab and wrk print what they measured) and this long to
# print it, then SIGKILL.
INTERRUPT_GRACE_S = 5.0


class ClientError(Error):
    """A client run that cannot be done or did not produce figures; one line saying why."""


@dataclass(frozen=True)
class Level:
    """One level for a tool, as `run` checked it: exactly one budget set, `cpus` the ones the tool
    is pinned to (none: not pinned), `timeout` how long it may run."""

    url: str
    connections: int
    budget_requests: Optional[int]
    budget_seconds: Optional[float]
    keep_alive: bool
    cpus: Tuple[int, ...]
    pipeline: int
    timeout: float

    @property
    def threads(self) -> int:
        """A tool that takes a thread count (wrk, h2load) gets one per pinned CPU, but no more
        than its connections."""
        return min(max(1, len(self.cpus)), self.connections)


def time_limit(connections: int, seconds: float) -> float:
    """How long a tool given `seconds` of load over `connections` may run before it is stopped:
    the grace for start-up and its summary, and more for opening many connections."""
    return seconds + GRACE_S + connections / 500


_UNITS_US = {"us": 1.0, "ms": 1e3, "s": 1e6, "m": 60e6, "h": 3600e6}


def to_us(value: str, unit: str) -> float:
    """wrk and h2load print times as "126.00us", "1.90ms", "2.03s" (wrk also "m" and "h")."""
    return float(value) * _UNITS_US[unit]


TIME = r"([\d.]+)(us|ms|s|m|h)\b"


def number(pattern: str, text: str, cast=float):
    """The first group of `pattern` in `text` (multi-line), or None when the tool did not print it."""
    m = re.search(pattern, text, re.M)
    return cast(m.group(1).replace(",", "")) if m else None


def whole_seconds(seconds: float) -> int:
    """ab's -t and wrk's -d take whole seconds: a fractional budget is rounded up, never down to 0."""
    return max(1, math.ceil(seconds - 1e-9))


@functools.lru_cache(maxsize=None)
def version(argv: tuple, pattern: str) -> Optional[str]:
    """The tool's version from the first line matching `pattern` of its version output."""
    try:
        done = subprocess.run(list(argv), capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return number(pattern, done.stdout + done.stderr, str)


@dataclass
class Finished:
    argv: List[str]
    returncode: int
    stdout: str
    stderr: str
    user_s: float
    sys_s: float
    wall_s: float
    interrupted: bool  # the deadline passed and we stopped it

    def cpu_us_per_request(self, completed: Optional[int]) -> Optional[float]:
        """The tool's own CPU (its process's rusage, user + sys) per completed request, in
        microseconds; None when none completed."""
        return (self.user_s + self.sys_s) / completed * 1e6 if completed else None


def execute(argv: List[str], cpus: Sequence[int], timeout: float) -> Finished:
    """Run a tool to completion, pinned to `cpus` (taskset execs it, so the pid and its rusage are
    the tool's own), in its own session so that stopping it stops nothing else. Past `timeout`
    it gets SIGINT, then SIGKILL."""
    tool = argv[0]
    if cpus:
        argv = ["taskset", "-c", ",".join(str(c) for c in cpus)] + argv
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        started = time.monotonic()
        try:
            proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=err, start_new_session=True)
        except OSError as e:
            raise ClientError(f"{tool}: cannot start it ({e.strerror}); is it installed?") from None
        interrupted = False
        try:
            reaped = _wait4(proc.pid, started + timeout)
            if reaped is None:
                interrupted = True
                _signal(proc.pid, signal.SIGINT)
                reaped = _wait4(proc.pid, time.monotonic() + INTERRUPT_GRACE_S)
            if reaped is None:
                _signal(proc.pid, signal.SIGKILL)
                reaped = _wait4(proc.pid, None)
        except BaseException:
            # Ctrl-C or any failure here: the tool must not outlive us.
            _signal(proc.pid, signal.SIGKILL)
            _wait4(proc.pid, None)
            raise
        wall = time.monotonic() - started
        status, usage = reaped
        proc.returncode = os.waitstatus_to_exitcode(status)  # reaped by us: keep Popen from waiting
        out.seek(0)
        err.seek(0)
        return Finished(
            argv,
            proc.returncode,
            out.read().decode(errors="replace"),
            err.read().decode(errors="replace"),
            usage.ru_utime,
            usage.ru_stime,
            wall,
            interrupted,
        )


def _wait4(pid: int, deadline: Optional[float]):
    """(status, rusage) of `pid` once it exits, or None if `deadline` passes first."""
    while True:
        wpid, status, usage = os.wait4(pid, 0 if deadline is None else os.WNOHANG)
        if wpid == pid:
            return status, usage
        if time.monotonic() >= deadline:
            return None
        time.sleep(0.01)


def _signal(pid: int, sig: int) -> None:
    try:
        os.killpg(pid, sig)  # its own session: the group is the tool and nothing else
    except ProcessLookupError:
        pass


def finish(report: Report, done: Finished, tool_version: Optional[str], threads: int, timeout: float) -> Report:
    """Add what we measured around the tool, or raise if it produced no figures."""
    tail = (done.stderr.strip() or done.stdout.strip()).splitlines()[-1:] or [""]
    if report["requests"]["per_second"] is None or report["requests"]["completed"] is None:
        why = f"stopped after {timeout:.0f} s" if done.interrupted else f"exited with {done.returncode}"
        raise ClientError(f"{report['client']['tool']}: {why} without figures: {tail[0]}")
    if done.returncode != 0 and not done.interrupted:
        raise ClientError(f"{report['client']['tool']}: exited with {done.returncode}: {tail[0]}")
    if done.interrupted:
        report["aborted"] = f"stopped after the {timeout:.0f} s time limit; figures are what it measured until then"
    client = report["client"]
    client.update(
        version=tool_version,
        argv=done.argv,
        user_s=done.user_s,
        sys_s=done.sys_s,
        wall_s=done.wall_s,
        thread_count=threads,
    )
    if threads == 1 and done.wall_s > 0:
        client["busy_share"] = (done.user_s + done.sys_s) / done.wall_s
    client["cpu_us_per_request"] = done.cpu_us_per_request(report["requests"]["completed"])
    return report
