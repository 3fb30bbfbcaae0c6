"""A server's process tree (its session, or a PHP pool's) sampled from /proc: the processes, their
memory (RSS, and PSS where the kernel offers it), CPU time, threads and descriptors, summed at one
instant; httpbench.observe.monitor sums the samples over a measurement window.

Only /proc is read (httpbench.observe.procfs), so this works with any Python the suite runs under.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, replace
from typing import Dict, List, Optional, Set, Tuple

from httpbench.observe import procfs
from httpbench.observe.procfs import Key


@dataclass(frozen=True)
class Sample:
    """The server's process tree at one instant. CPU figures are cumulative seconds, counters
    from /proc/stat are cumulative jiffies: only differences between two samples mean something."""

    t: float  # time.monotonic()
    pids: Tuple[int, ...]
    rss_bytes: int
    pss_bytes: Optional[int]  # None when any process's smaps_rollup could not be read
    cpu_user_s: float
    cpu_sys_s: float
    threads: int
    fds: Optional[int]  # None when any process's fd directory could not be read
    machine_idle: int  # idle + iowait jiffies, all CPUs
    machine_total: int  # all jiffies, all CPUs

    @property
    def processes(self) -> int:
        return len(self.pids)

    def plus(self, other: "Sample") -> "Sample":
        """Two trees sampled together (a server and its PHP pool) as one; the machine's counters
        are this sample's."""
        return replace(
            self,
            pids=self.pids + other.pids,
            rss_bytes=self.rss_bytes + other.rss_bytes,
            pss_bytes=None if None in (self.pss_bytes, other.pss_bytes) else self.pss_bytes + other.pss_bytes,
            cpu_user_s=self.cpu_user_s + other.cpu_user_s,
            cpu_sys_s=self.cpu_sys_s + other.cpu_sys_s,
            threads=self.threads + other.threads,
            fds=None if None in (self.fds, other.fds) else self.fds + other.fds,
        )


class ProcessTree:
    """One server's processes (its session), sampled again and again.

    What successive samples must remember lives here:

    - CPU time. A process's utime/stime vanish from the sum when it exits, so each process's
      last-seen values are kept and, once it is gone, still counted: the total never goes
      backwards. What it spent between its last sample and its exit is lost (an interval's worth
      at most).
    - Which pids are not the server's. Finding the session by reading every /proc/PID/stat
      (as `process.session_pids` does) costs ~30 us a process, 6 ms on this machine at every
      sample; only pids new since the last listing are read instead. That is exact: a process
      cannot join a session it was not born in, and a pid cannot be reused between two listings
      an interval apart unless the whole pid space was cycled through in between.
    - PSS. Reading smaps_rollup walks the process's page tables under its mmap lock: ~150 us for
      a small Python process, 15 ms for 100 of them. So each process's PSS is re-read once every
      `pss_refresh` seconds, a share of the tree at each sample, the stalest first, to spread the
      cost evenly; new processes are read at once. pss_refresh=0 re-reads all at every sample.
    """

    def __init__(self, session_id: int, pss_refresh: float = 1.0) -> None:
        self.sid = session_id
        self.pss_refresh = pss_refresh
        self._outside: Set[int] = set()
        self._cpu: Dict[Key, Tuple[float, float]] = {}
        self._gone_user = self._gone_sys = 0.0
        self._pss: Dict[Key, Tuple[Optional[int], float]] = {}  # PSS, and when it was read
        self._last_t: Optional[float] = None

    def follow(self, session_id: int) -> None:
        """The server restarted in a new session: sample that one from now on, the CPU time of
        the old one's processes kept in the totals."""
        self.sid = session_id
        self._outside = set()  # its processes may have been listed before, as not ours

    def sample(self) -> Sample:
        t = time.monotonic()
        idle, total = procfs.machine_cpu()
        processes = self._members()
        user, system = self._account_cpu(processes)
        pss = self._refresh_pss(processes, t)
        fds = [procfs.fd_count(p.pid) for p in processes]
        self._last_t = t
        return Sample(
            t=t,
            pids=tuple(p.pid for p in processes),
            rss_bytes=sum(p.rss for p in processes),
            # A partial sum would look like a smaller server: all or nothing.
            pss_bytes=None if None in pss else sum(pss),
            cpu_user_s=user,
            cpu_sys_s=system,
            threads=sum(p.threads for p in processes),
            fds=None if None in fds else sum(fds),
            machine_idle=idle,
            machine_total=total,
        )

    def _members(self) -> List[procfs.Stat]:
        listed = set(procfs.pids())
        members, outside = [], self._outside & listed
        for pid in sorted(listed - outside):
            process = procfs.stat(pid)
            if process is None:
                continue  # exited since the listing
            if process.session == self.sid and not process.zombie:
                members.append(process)
            else:
                outside.add(pid)  # not ours, and never will be (nor will a zombie come back)
        self._outside = outside
        return members

    def _account_cpu(self, processes: List[procfs.Stat]) -> Tuple[float, float]:
        """(user, system) seconds of the tree so far, exited processes included."""
        live = {p.key: _cpu_seconds(p) for p in processes}
        for key in self._cpu.keys() - live.keys():
            user, system = self._cpu.pop(key)
            self._gone_user += user
            self._gone_sys += system
            self._pss.pop(key, None)
        self._cpu.update(live)
        return (self._gone_user + sum(u for u, _ in live.values()), self._gone_sys + sum(s for _, s in live.values()))

    def _refresh_pss(self, processes: List[procfs.Stat], t: float) -> List[Optional[int]]:
        due = [p for p in processes if p.key not in self._pss]
        known = [p for p in processes if p.key in self._pss]
        if self.pss_refresh <= 0 or self._last_t is None:
            due += known
        else:
            # The share of the tree whose turn came since the last sample, stalest first.
            share = math.ceil(len(known) * (t - self._last_t) / self.pss_refresh)
            due += sorted(known, key=lambda p: self._pss[p.key][1])[:share]
        for p in due:
            self._pss[p.key] = (procfs.pss(p.pid), t)
        return [self._pss[p.key][0] for p in processes]


def _cpu_seconds(p: procfs.Stat) -> Tuple[float, float]:
    """A process's (user, system) CPU seconds. /proc/PID/stat counts them in whole clock ticks
    (10 ms): a prefork or PHP-FPM child serving a few requests a second stays at 0 for many
    seconds, and 1,024 of them read as an idle server (0.01 cores where the scheduler counted
    0.66). A process of one thread (such children are) is timed by the scheduler's nanoseconds
    instead; the ticks only split it, system time being its ticks' worth and the rest user, so
    the split is off by a tick at most and the total exact. Threaded servers are few processes:
    their ticks' rounding is a tick a process."""
    user, system = p.utime / procfs.TICKS, p.stime / procfs.TICKS
    if p.threads == 1:
        runtime = procfs.runtime_s(p.pid)
        if runtime is not None and runtime >= system:
            return runtime - system, system
    return user, system


def sample_tree(session_id: int) -> Sample:
    """The processes of session `session_id` (a server and its workers) summed, now, every PSS
    read fresh. For a series of samples, keep one ProcessTree."""
    return ProcessTree(session_id, pss_refresh=0).sample()
