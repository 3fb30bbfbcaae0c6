"""A server starved of its CPU by other processes is flagged `contended`, with the numbers: the
monitor's window beside a process spinning on the server's CPU, and the check on synthetic windows.

Spinning processes are started by the test, each bounded in time, and killed by PID.
"""

import os
import subprocess
import sys
import time
from contextlib import contextmanager

from test_monitor import CLIENT_CPU, SERVER_CPU, nginx  # noqa: F401 (nginx: the fixture)
from httpbench import contention, engine, honesty
from httpbench.monitor import Monitor

SPIN = "import time\nend = time.monotonic() + {seconds}\nwhile time.monotonic() < end: pass"


@contextmanager
def spinning(*cpus: int, seconds: float = 120):
    """One CPU-bound process pinned to each of `cpus`: another job using the machine."""
    procs = [subprocess.Popen(["taskset", "-c", str(cpu), sys.executable, "-c", SPIN.format(seconds=seconds)])
             for cpu in cpus]
    try:
        yield procs
    finally:
        for proc in procs:
            proc.kill()
            proc.wait()


# --------------------------------------------------------------------------- the monitor's window

def test_a_server_sharing_its_cpu_with_another_process_is_seen_waiting(nginx, measured):
    """nginx's one worker and a spinning process on one CPU: the scheduler gives each about half,
    so the worker waits for its CPU about as long as it runs, and the spinning process, though a
    child of this one, is another process (this one, the engine's, is not)."""
    with Monitor(nginx) as monitor, spinning(SERVER_CPU):
        with monitor.window() as window:
            engine.run({"urls": [nginx.site.url + "index.html"], "connections": 8, "stop": {"duration": 1.0},
                        "cpus": [CLIENT_CPU], "allow_errors": True})
    w = window.window
    measured(f"nginx beside a spinning process on its CPU: waited {w.server_waiting_share:.0%} of its time "
             f"for a CPU, other processes {w.others_cpu_cores:.2f} of {w.machine_cpus} CPUs")
    assert w.machine_cpus == os.cpu_count()
    assert w.server_waiting_share > 0.2, w
    # The spinning process alone had a good share of a CPU; more may run here.
    assert w.others_cpu_cores > 0.25, w


def test_this_process_and_the_servers_are_not_other_processes(nginx):
    """The engine runs inside the suite's process and the server's tree is the server: neither
    may count as another job on the machine."""
    with spinning(SERVER_CPU) as (spinner,):
        taken = contention.Snapshot.take(os.getsid(nginx.pid))
    others = {pid for pid, _ in taken.others}
    assert spinner.pid in others
    assert os.getpid() not in others
    assert not others & set(nginx.pids())
    assert {pid for pid, _ in taken.server_threads} == set(nginx.pids())


def test_a_snapshot_of_a_server_tree_is_cheap(nginx):
    """Two per window (its start and end): every process's stat and the server's threads'
    schedstat, a few milliseconds at most on a machine of a hundred processes."""
    start = time.thread_time()
    for _ in range(10):
        contention.Snapshot.take(os.getsid(nginx.pid))
    # CPU time, not wall time: what else runs here slows the reads, not what they cost.
    assert (time.thread_time() - start) / 10 < 0.02


# --------------------------------------------------------------------------- the check

def window(waiting: float = 0.3, others: float = 1.6, cpus: int = 2) -> dict:
    return {"server_waiting_share": waiting, "others_cpu_cores": others, "machine_cpus": cpus}


def test_a_starved_server_on_a_busy_machine_is_contended():
    flag = honesty.contended("nginx", window(0.41, 1.6), None)
    assert flag.kind == "contended"
    assert flag.reason == ("nginx waited for a CPU 41% of the time it was ready to run; "
                           "other processes used 1.6 of 2 CPUs")


def test_a_starved_client_on_a_busy_machine_is_contended():
    flag = honesty.contended("nginx", window(0.01, 1.2), {"waiting_share": 0.23})
    assert flag and "busiest client thread waited for its CPU 23% of the time" in flag.reason
    assert "nginx waited" not in flag.reason and "1.2 of 2 CPUs" in flag.reason


def test_a_quiet_machine_or_a_server_waiting_on_itself_is_not_contended():
    assert honesty.contended("nginx", window(0.04, 0.1), {"waiting_share": 0.05}) is None
    # apache2 with more processes than CPUs waits for its own processes, not for other jobs.
    assert honesty.contended("apache2", window(0.6, 0.05), None) is None
    # Other jobs that left the server and the client alone.
    assert honesty.contended("nginx", window(0.02, 1.5), {"waiting_share": 0.03}) is None
    # Stored before the window had these figures.
    assert honesty.contended("nginx", {}, {}) is None
