"""What Linux's /proc says of processes and of the machine, read one way for the whole suite: the
server's monitor, the contention figures, the server's process tree and the store's run owner.

Only /proc is read (no psutil), so this works with any Python the suite runs under. Every reader
returns None (or 0, where the caller sums) for a process that exited between being listed and
being read: on a machine running a server that starts and ends workers, that is routine.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Dict, List, Optional, Tuple

TICKS = os.sysconf("SC_CLK_TCK")
PAGE = os.sysconf("SC_PAGE_SIZE")
PF_KTHREAD = 0x00200000  # include/linux/sched.h: the task is a kernel thread

Key = Tuple[int, int]  # (pid, start time): one process, even after its pid is reused


def read(path: str, size: int = 65536) -> bytes:
    # os.read straight from the descriptor: half the cost of open().read() for these small files,
    # which matters at 100 files ten times a second. One read returns a whole /proc/PID file.
    fd = os.open(path, os.O_RDONLY)
    try:
        return os.read(fd, size)
    finally:
        os.close(fd)


@dataclass(frozen=True)
class Stat:
    """The fields of /proc/PID/stat the suite uses (proc(5) numbers them from 1)."""

    pid: int
    zombie: bool  # 3, state Z: exited, not yet reaped
    ppid: int  # 4
    session: int  # 6
    kernel_thread: bool  # 9, flags & PF_KTHREAD
    utime: int  # 14-17: clock ticks; cutime and cstime are the reaped children's
    stime: int
    cutime: int
    cstime: int
    threads: int  # 20
    started: int  # 22, starttime: clock ticks after the boot, never moved by a clock step
    rss: int  # 24, in bytes

    @property
    def key(self) -> Key:
        return (self.pid, self.started)


def stat(pid: int) -> Optional[Stat]:
    """What /proc/PID/stat says of a process, or None if it has exited."""
    try:
        raw = read(f"/proc/{pid}/stat")
    except OSError:
        return None
    # The fields after the command name, which may itself hold spaces and parentheses: field 3,
    # the state, is index 0 here.
    f = raw[raw.rindex(b")") + 2 :].split()
    return Stat(
        pid=pid,
        zombie=f[0] == b"Z",
        ppid=int(f[1]),
        session=int(f[3]),
        kernel_thread=bool(int(f[6]) & PF_KTHREAD),
        utime=int(f[11]),
        stime=int(f[12]),
        cutime=int(f[13]),
        cstime=int(f[14]),
        threads=int(f[17]),
        started=int(f[19]),
        rss=int(f[21]) * PAGE,
    )


def runtime_s(pid: int) -> Optional[float]:
    """Seconds the process's main thread has run, to the nanosecond (/proc/PID/schedstat's first
    field), or None if it has exited or the kernel keeps no scheduler statistics. For a process
    of one thread that is its whole CPU time, which /proc/PID/stat gives only in clock ticks."""
    try:
        return int(read(f"/proc/{pid}/schedstat").split()[0]) / 1e9
    except (OSError, IndexError, ValueError):
        return None


def pids() -> List[int]:
    """Every process now, by pid."""
    return [int(entry) for entry in os.listdir("/proc") if entry.isdigit()]


def session_pids(sid: int) -> List[int]:
    """Every live process of session `sid` (a server and all its workers)."""
    return [s.pid for s in map(stat, pids()) if s is not None and s.session == sid and not s.zombie]


def pss(pid: int) -> Optional[int]:
    """Proportional set size in bytes: a page shared by n processes counts 1/n in each. None where
    the kernel has no smaps_rollup (before 4.14) or will not let us read it."""
    try:
        rollup = read(f"/proc/{pid}/smaps_rollup")
    except OSError:
        return _gone_or_unknown(pid)
    start = rollup.find(b"\nPss:")
    if start < 0:
        return 0  # no memory left to describe: the process is exiting
    return int(rollup[start + len(b"\nPss:") : rollup.index(b"kB", start)]) * 1024


def fd_count(pid: int) -> Optional[int]:
    # Since Linux 6.2 the fd directory's size is its number of entries: one stat instead of
    # listing 10,000 sockets. Older kernels say 0, and then the listing counts.
    path = f"/proc/{pid}/fd"
    try:
        return os.stat(path).st_size or len(os.listdir(path))
    except OSError:
        return _gone_or_unknown(pid)


def _gone_or_unknown(pid: int) -> Optional[int]:
    """A figure that could not be read: 0 if the process has exited since its stat was read (a
    worker exiting mid-sample must not blank a whole window's PSS), None if it is unreadable."""
    return None if os.path.exists(f"/proc/{pid}") else 0


def schedstat(pid: int) -> Dict[Key, Tuple[int, int]]:
    """(ns on a CPU, ns on a run queue waiting for one) of each thread of `pid`, by (pid, tid)."""
    threads = {}
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return threads  # exited since it was listed
    for tid in tids:
        try:
            running, waiting = read(f"/proc/{pid}/task/{tid}/schedstat").split()[:2]
        except (OSError, ValueError):
            continue  # exited, or a kernel without CONFIG_SCHED_INFO
        threads[(pid, int(tid))] = (int(running), int(waiting))
    return threads


def machine_cpu() -> Tuple[int, int]:
    """(idle + iowait, total) jiffies of all CPUs since boot."""
    cpu = read("/proc/stat", 4096).split(b"\n", 1)[0].split()
    # user nice system idle iowait irq softirq steal; guest time is already inside user.
    jiffies = [int(x) for x in cpu[1:9]]
    return jiffies[3] + jiffies[4], sum(jiffies)


def boot_id() -> str:
    """This boot of this machine: a new one after every reboot, so with a process's `started` it
    names one process for good, where a start time in wall-clock seconds moves with the clock."""
    return read("/proc/sys/kernel/random/boot_id").decode().strip()
