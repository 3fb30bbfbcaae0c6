"""Watching the server under test: its whole process tree sampled from /proc every 100 ms, summed
over each measurement window, with a server that dies or restarts workers during it reported.

Memory is PSS where the kernel offers it (/proc/PID/smaps_rollup): a prefork server's workers
share most of their pages, so their RSS summed counts those pages once per worker (129 apache2
processes "use" 548 MB of RSS). RSS is kept beside it because every other tool reports RSS.

    with Monitor(running) as monitor:
        idle = monitor.baseline()
        with monitor.window() as measured:
            engine.run(spec)
        print(measured.window.cpu_user_cores, measured.window.events)

A site that runs PHP through FastCGI has a second tree, its PHP-FPM pool (a session of its own):
its processes count as the server's in every figure, and the window also shows them apart
(`php_*`); the pool dying in a window is the server's crash, as an origin's is for a cache.

Only /proc is read (httpbench.observe.procfs), so this works with any Python the suite runs under.
"""

from __future__ import annotations

import os
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import Iterator, List, Optional, Tuple

from httpbench.observe import contention
from httpbench.observe.process_tree import ProcessTree, Sample
from httpbench.observe.restarts import WorkerChanges

# A server done with an action (its old workers gone, a file answered as verified) may still
# replace a worker or two: lighttpd under load after its graceful restart, apache2 topping up its
# pool. Worker changes this soon after an action are the action's; a master that dies then is
# still a crash (only workers are judged so).
SETTLE_S = 2.0


@dataclass(frozen=True)
class Window:
    """The server over one measurement window."""

    duration_s: float
    samples: int
    rss_mean_bytes: int
    rss_peak_bytes: int
    pss_mean_bytes: Optional[int]
    pss_peak_bytes: Optional[int]
    cpu_user_cores: float  # CPU seconds over the window / its duration
    cpu_sys_cores: float
    threads_peak: int
    fds_peak: Optional[int]
    machine_idle_share: float  # 0..1, all CPUs, suite and server included
    processes_min: int
    processes_max: int
    # Was the machine busy with other work (httpbench.observe.contention)? None: not measured.
    server_waiting_share: Optional[float] = None  # the server's threads' wait for a CPU / running + waiting
    others_cpu_cores: Optional[float] = None  # CPUs' worth used by other processes
    machine_cpus: Optional[int] = None
    events: List[str] = field(default_factory=list)
    crashed: bool = False  # the session leader (the server's main process) died
    workers_exited: int = 0  # processes other than the leader that left the tree
    workers_started: int = 0  # processes that joined it (a restarted worker is one of each)
    # The same, seen while the suite performed an action on the server (Monitor.planned): what a
    # reload or restart did, apart from the figures above, which honesty flags.
    planned_events: List[str] = field(default_factory=list)
    planned_workers_exited: int = 0
    planned_workers_started: int = 0
    # The PHP-FPM pool's share of the figures above (its processes are counted in them too);
    # None for a server without a pool.
    php_cpu_cores: Optional[float] = None
    php_rss_mean_bytes: Optional[int] = None
    php_pss_mean_bytes: Optional[int] = None
    php_rss_peak_bytes: Optional[int] = None
    php_pss_peak_bytes: Optional[int] = None
    php_processes_max: Optional[int] = None

    @property
    def cpu_cores(self) -> float:
        return self.cpu_user_cores + self.cpu_sys_cores


class _Aggregate:
    """Running figures of the window being measured: no samples kept, so memory stays bounded
    however long the window."""

    def __init__(self, leader: int, first: Sample, what: str = "server") -> None:
        self.leader = leader
        self.what = what  # what the tree is, as its events name it
        self.first = self.last = first
        self.events: List[str] = []
        self.crashed = False
        self.exited = False
        self.samples = 0
        self.alive_samples = 0
        self.rss_sum = self.rss_peak = 0
        self.pss_sum: Optional[int] = 0
        self.pss_peak: Optional[int] = 0
        self.threads_peak = 0
        self.fds_peak: Optional[int] = 0
        self.processes_min = self.processes_max = first.processes
        self._take(first, previous=None)

    def add(self, sample: Sample, planned: bool = False) -> None:
        self._take(sample, previous=self.last, planned=planned)
        self.last = sample

    def _take(self, s: Sample, previous: Optional[Sample], planned: bool = False) -> None:
        self.samples += 1
        self.processes_min = min(self.processes_min, s.processes)
        self.processes_max = max(self.processes_max, s.processes)
        if not planned:  # a planned restart's main process is gone until the new one is followed
            self._note_changes(s, previous)
        if not s.pids:
            return  # nothing ran: no memory to average in
        self.alive_samples += 1
        self.rss_sum += s.rss_bytes
        self.rss_peak = max(self.rss_peak, s.rss_bytes)
        if s.pss_bytes is None or self.pss_sum is None:
            self.pss_sum = self.pss_peak = None
        else:
            self.pss_sum += s.pss_bytes
            self.pss_peak = max(self.pss_peak, s.pss_bytes)
        self.threads_peak = max(self.threads_peak, s.threads)
        self.fds_peak = None if s.fds is None or self.fds_peak is None else max(self.fds_peak, s.fds)

    def _note_changes(self, s: Sample, previous: Optional[Sample]) -> None:
        now = set(s.pids)
        if self.leader not in now and not self.crashed:
            self.crashed = True
            self.events.append(
                f"{self.what} (pid {self.leader}) " + ("died during the window" if previous else "was not running")
            )
        if not now and not self.exited:
            self.exited = True
            self.events.append(f"{self.what} exited during the window")

    def window(self) -> Window:
        first, last = self.first, self.last
        duration = last.t - first.t
        per_second = (lambda x: x / duration) if duration > 0 else (lambda x: 0.0)
        n = max(1, self.alive_samples)
        jiffies = last.machine_total - first.machine_total
        return Window(
            duration_s=duration,
            samples=self.samples,
            rss_mean_bytes=self.rss_sum // n,
            rss_peak_bytes=self.rss_peak,
            pss_mean_bytes=None if self.pss_sum is None else self.pss_sum // n,
            pss_peak_bytes=self.pss_peak,
            cpu_user_cores=per_second(last.cpu_user_s - first.cpu_user_s),
            cpu_sys_cores=per_second(last.cpu_sys_s - first.cpu_sys_s),
            threads_peak=self.threads_peak,
            fds_peak=self.fds_peak,
            machine_idle_share=(last.machine_idle - first.machine_idle) / jiffies if jiffies > 0 else 1.0,
            processes_min=self.processes_min,
            processes_max=self.processes_max,
            events=list(self.events),
            crashed=self.crashed,
        )


@dataclass
class Measured:
    """What `Monitor.window()` yields; `window` is filled in when the block ends."""

    window: Optional[Window] = None


class Monitor:
    """Samples a server's process tree in a background thread, every `interval` seconds.

    `server` is a RunningServer, or the pid of any process of the server's session. Windows are
    bounded by samples taken at their very start and end, so CPU figures cover exactly the window.
    """

    def __init__(self, server, interval: float = 0.1, pss_refresh: float = 1.0) -> None:
        pid = getattr(server, "pid", server)
        self.sid = os.getsid(pid)
        # A cache's origin runs in a session of its own, on the server's CPUs: for contention it
        # is the server, not another job, and a window it died in is the server's crash.
        self.backend = getattr(server, "backend", None)
        self.sessions = {self.sid} | ({os.getsid(self.backend.pid)} if self.backend is not None else set())
        # A PHP-FPM pool is a session of its own (its master leads it), watched beside the server.
        self.php = getattr(server, "php", None)
        self._php_tree = ProcessTree(self.php.pid, pss_refresh) if self.php is not None else None
        self._php_current: Optional[_Aggregate] = None
        if self.php is not None:
            self.sessions.add(self.php.pid)
        self.interval = interval
        self.idle: Optional[Window] = None
        self._tree = ProcessTree(self.sid, pss_refresh)
        # One lock for sampling and aggregating: the tree must see its samples in time order.
        self._lock = threading.Lock()
        self._current: Optional[_Aggregate] = None
        self._workers = WorkerChanges(self.sid)
        self._planned: Optional[str] = None  # the action the suite is performing on the server
        # The last action performed, and until when (time.monotonic()) its server settles.
        self._settling: Tuple[Optional[str], float] = (None, 0.0)
        self._machine_at_start: Optional[contention.Snapshot] = None
        self._error: Optional[BaseException] = None
        self.last = self._sample_trees()[0]
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"monitor-{self.sid}", daemon=True)
        self._thread.start()

    def _sample_trees(self) -> Tuple[Sample, Optional[Sample]]:
        """The server with its PHP pool, and the pool alone (None without one)."""
        server = self._tree.sample()
        if self._php_tree is None:
            return server, None
        pool = self._php_tree.sample()
        return server.plus(pool), pool

    def sample(self) -> Sample:
        with self._lock:
            sample, pool = self._sample_trees()
            if self._current is not None:
                self._current.add(sample, planned=self._planned is not None)
                if pool is not None:
                    self._php_current.add(pool, planned=self._planned is not None)
            self._take(sample)
            return sample

    def _take(self, sample: Sample) -> None:
        # Every sample, in a window or not: a worker may restart at any time.
        action, until = self._settling
        if self._planned:
            planned = f"during the planned {self._planned}"
        else:
            planned = f"just after the planned {action}" if action and time.monotonic() < until else None
        self._workers.note(self.last.pids, sample.pids, sample.t, planned)
        self.last = sample

    @contextmanager
    def planned(self, action: str) -> Iterator[None]:
        """The suite performing `action` on the server (httpbench.servers.operate): its workers
        leaving and joining meanwhile are the action's, told apart and never flagged, and its main
        process gone is no crash (`follow` names the new one). The block ends with a sample, so
        the changes the action made by then are seen inside it."""
        with self._lock:
            self._planned = action
        try:
            yield
        finally:
            try:
                self.sample()
            finally:
                with self._lock:
                    self._planned = None
                    self._settling = (action, time.monotonic() + SETTLE_S)

    def follow(self, pid: int) -> None:
        """The server's new main process `pid`, after a planned restart: its session is the
        server's from now on. One already gone is not followed: the old master missing from the
        tree is then a crash, as it should be."""
        try:
            sid = os.getsid(pid)
        except ProcessLookupError:
            return
        with self._lock:
            self.sessions = (self.sessions - {self.sid}) | {sid}
            self.sid = sid
            self._tree.follow(sid)
            self._workers.leaders.add(sid)
            if self._current is not None:
                self._current.leader = sid

    def _run(self) -> None:
        due = time.monotonic()
        while True:
            # A fixed cadence, not interval-after-sample; a sampler that falls behind skips ahead.
            due = max(due + self.interval, time.monotonic())
            if self._stopping.wait(due - time.monotonic()):
                return
            try:
                self.sample()
            except Exception as e:  # surfaced by end_window rather than lost with the thread
                self._error = e
                return

    def snapshot(self) -> contention.Snapshot:
        return contention.Snapshot.take(self.sessions)

    def start_window(self) -> None:
        machine = self.snapshot()
        with self._lock:
            if self._current is not None:
                raise RuntimeError("a window is already open")
            self._machine_at_start = machine
            first, pool = self._sample_trees()
            self._current = _Aggregate(self.sid, first)
            if pool is not None:
                self._php_current = _Aggregate(self.php.pid, pool, "its PHP-FPM pool's master")
            self._take(first)

    def end_window(self) -> Window:
        self.sample()
        machine = self.snapshot()
        with self._lock:
            current, self._current = self._current, None
            pool, self._php_current = self._php_current, None
            if current is None:
                raise RuntimeError("no window is open")
            workers = self._workers.close(current.first.t, current.last.t)
        if self._error is not None:
            raise RuntimeError(f"the monitor stopped sampling: {self._error}") from self._error
        window = current.window()
        events = window.events + workers.pop("events")
        crashed = window.crashed
        # The tree is the server's own session; without the origin it fronts (varnish's), the
        # figures are no longer the pair's.
        if self.backend is not None and not crashed and not self.backend.alive():
            crashed = True
            events.append(f"its origin {self.backend.server.name} (pid {self.backend.pid}) died")
        php = {}
        if pool is not None:
            # Without its pool the server answers every PHP request 502: its figures are not the
            # pair's any more, and the level is not one to rank.
            pooled = pool.window()
            crashed = crashed or pooled.crashed
            events += pooled.events
            php = dict(
                php_cpu_cores=pooled.cpu_cores,
                php_rss_mean_bytes=pooled.rss_mean_bytes,
                php_pss_mean_bytes=pooled.pss_mean_bytes,
                php_rss_peak_bytes=pooled.rss_peak_bytes,
                php_pss_peak_bytes=pooled.pss_peak_bytes,
                php_processes_max=pooled.processes_max,
            )
        return replace(
            window, events=events, crashed=crashed, **workers, **php, **machine.since(self._machine_at_start)
        )

    @contextmanager
    def window(self) -> Iterator[Measured]:
        measured = Measured()
        self.start_window()
        try:
            yield measured
        finally:
            measured.window = self.end_window()

    def baseline(self, duration: float = 0.5) -> Window:
        """The idle server, right after start-up and before any load: a short window (five
        samples at the default interval), also kept as `self.idle`."""
        with self.window() as measured:
            time.sleep(duration)
        self.idle = measured.window
        return self.idle

    def stop(self) -> None:
        self._stopping.set()
        self._thread.join()

    def __enter__(self) -> "Monitor":
        return self

    def __exit__(self, *exc) -> None:
        self.stop()
