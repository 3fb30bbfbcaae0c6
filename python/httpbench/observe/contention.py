"""Was the machine busy with other work while a window was measured? Two figures, from a
snapshot of /proc at the window's start and one at its end:

- how long the server's threads waited for a CPU: the second field of each thread's schedstat
  (/proc/PID/task/TID/schedstat: nanoseconds on a run queue, ready to run but not running), as
  the engine measures its own threads' `waiting_share`. A server pinned to one CPU beside a
  CPU-bound job gets about half of it and waits the other half; on a quiet machine it barely
  waits, whatever the load.
- how much CPU other processes used: every process's CPU time, its reaped children's included,
  but not the server's sessions (its own, and its origin's: a cache's nginx, pinned to the
  server's CPUs, is part of the server measured), not this process (the suite, and the engine's threads inside
  it, or the server-host worker on a cluster) and not kernel threads (softirq work for the
  benchmark's own packets shows up in ksoftirqd). The suite's client tools (wrk, ab) are its
  children, started and reaped inside the window: never seen alive at either end, their time
  lands in this process's. On a one-machine cluster, the client hosts' engines are other
  processes: they do take the server's CPUs.

Both are taken at the window's ends only, not at every 100 ms sample: a few milliseconds twice
per round. A thread that exits within the window takes its wait with it, and a process that
exits inside it is counted only when its parent, still alive, reaped it: both figures are
lower bounds, which is the safe side for a flag that says "busy".
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from typing import Collection, Dict, Set, Tuple

from httpbench.observe import procfs
from httpbench.observe.procfs import Key


@dataclass(frozen=True)
class Snapshot:
    t: float  # time.monotonic()
    server_threads: Dict[Key, Tuple[int, int]]  # (pid, tid) -> (ns on a CPU, ns waiting for one)
    others: Dict[Key, Tuple[int, int]]  # process -> (CPU ticks with reaped children's, ppid)

    @classmethod
    def take(cls, server_sessions: Collection[int]) -> "Snapshot":
        me = os.getpid()
        server: Dict[Key, Tuple[int, int]] = {}
        others: Dict[Key, Tuple[int, int]] = {}
        for pid in procfs.pids():
            p = procfs.stat(pid) if pid != me else None
            if p is None or p.kernel_thread:
                continue
            if p.session in server_sessions:
                if not p.zombie:
                    server.update(procfs.schedstat(pid))
                continue
            # Reaped children's time too: a child reaped inside the window adds its time to its
            # parent's, so a busy `make -j` is seen though its compilers come and go.
            others[p.key] = (p.utime + p.stime + p.cutime + p.cstime, p.ppid)
        return cls(time.monotonic(), server, others)

    def since(self, start: "Snapshot") -> dict:
        """The window's figures, as stored with it: `server_waiting_share` (the server threads'
        time waiting for a CPU / their time running or waiting; 0 when they never wanted one,
        None without scheduler statistics), `others_cpu_cores` (CPU seconds of other processes
        / the window's duration) and `machine_cpus`."""
        running = waiting = 0
        for thread, (ran, waited) in self.server_threads.items():
            ran_before, waited_before = start.server_threads.get(thread, (0, 0))  # or born since
            running += ran - ran_before
            waiting += waited - waited_before
        seen = bool(self.server_threads or start.server_threads)
        ticks = sum(total - start.others.get(key, (0, 0))[0] for key, (total, _) in self.others.items())
        alive = {pid for pid, _ in self.others}
        parents = {pid: parent for (pid, _), (_, parent) in start.others.items()}
        ticks -= sum(
            total
            for key, (total, _) in start.others.items()
            if key not in self.others and _reaped_by(key[0], parents, alive)
        )
        duration = self.t - start.t
        return {
            "server_waiting_share": (waiting / (running + waiting) if running + waiting > 0 else 0.0) if seen else None,
            "others_cpu_cores": max(0, ticks) / procfs.TICKS / duration if duration > 0 else 0.0,
            "machine_cpus": os.cpu_count(),
        }


def _reaped_by(pid: int, parents: Dict[int, int], alive: Set[int]) -> bool:
    """Whether an other process that exited inside the window ended up in the reaped children's
    time of one alive at its end (its parent, or the process that reaped its parent after that
    one reaped it): that time then holds its whole life, whose part before the window must come
    out again. `parents`: each process's parent at the window's start."""
    for _ in range(len(parents)):
        pid = parents.get(pid, 0)
        if pid in alive or pid not in parents:
            return pid in alive
    return False
