"""A server starved of its CPU by other processes is flagged `contended`, with the numbers: the
monitor's window beside a process spinning on the server's CPU, the check on synthetic windows,
and the quick plan's shape run twice, quietly and beside a spinning process on each CPU, which
gives the same winner or says the second run was contended.

Spinning processes are started by the test, each bounded in time, and killed by PID.
"""

import os
import time

from conftest import httpbench, short_plan, spinning
from httpbench import servers
from httpbench.judge import honesty
from httpbench.load import engine
from httpbench.observe import contention
from httpbench.observe.monitor import Monitor
from httpbench.report import verdict
from httpbench.results import load as load_run
from httpbench.servers import ServerProfile
from httpbench.store.database import Store
from test_monitor import CLIENT_CPU, SERVER_CPU, nginx  # noqa: F401 (nginx: the fixture)

# --------------------------------------------------------------------------- the monitor's window


def test_a_server_sharing_its_cpu_with_another_process_is_seen_waiting(nginx, measured):
    """nginx's one worker and a spinning process on one CPU: the scheduler gives each about half,
    so the worker waits for its CPU about as long as it runs, and the spinning process, though a
    child of this one, is another process (this one, the engine's, is not)."""
    with Monitor(nginx) as monitor, spinning(SERVER_CPU):
        with monitor.window() as window:
            engine.run(
                {
                    "urls": [nginx.site.url + "index.html"],
                    "connections": 8,
                    "stop": {"duration": 1.0},
                    "cpus": [CLIENT_CPU],
                    "allow_errors": True,
                }
            )
    w = window.window
    measured(
        f"nginx beside a spinning process on its CPU: waited {w.server_waiting_share:.0%} of its time "
        f"for a CPU, other processes {w.others_cpu_cores:.2f} of {w.machine_cpus} CPUs"
    )
    assert w.machine_cpus == os.cpu_count()
    assert w.server_waiting_share > 0.2, w
    # The spinning process alone had a good share of a CPU; more may run here.
    assert w.others_cpu_cores > 0.25, w


def test_this_process_and_the_servers_are_not_other_processes(nginx):
    """The engine runs inside the suite's process and the server's tree is the server: neither
    may count as another job on the machine."""
    with spinning(SERVER_CPU) as (spinner,):
        taken = contention.Snapshot.take({os.getsid(nginx.pid)})
    others = {pid for pid, _ in taken.others}
    assert spinner.pid in others
    assert os.getpid() not in others
    assert not others & set(nginx.pids())
    assert {pid for pid, _ in taken.server_threads} == set(nginx.pids())


def test_a_caches_origin_is_part_of_the_server(site):
    """varnish's nginx origin runs in a session of its own, on the server's CPUs: the pair is the
    server measured, so the origin's threads are the server's and its CPU no other job's."""
    with servers.start(servers.get("varnish"), site, ServerProfile("tuned")) as running, Monitor(running) as monitor:
        taken = monitor.snapshot()
        origin = set(running.backend.pids())
    assert origin and origin <= {pid for pid, _ in taken.server_threads}
    assert not origin & {pid for pid, _ in taken.others}


def test_a_snapshot_of_a_server_tree_is_cheap(nginx):
    """Two per window (its start and end): every process's stat and the server's threads'
    schedstat, a few milliseconds at most on a machine of a hundred processes."""
    start = time.thread_time()
    for _ in range(10):
        contention.Snapshot.take({os.getsid(nginx.pid)})
    # CPU time, not wall time: what else runs here slows the reads, not what they cost.
    assert (time.thread_time() - start) / 10 < 0.02


# --------------------------------------------------------------------------- the check


def window(waiting: float = 0.3, others: float = 1.6, cpus: int = 2) -> dict:
    return {"server_waiting_share": waiting, "others_cpu_cores": others, "machine_cpus": cpus}


def test_a_starved_server_on_a_busy_machine_is_contended():
    flag = honesty.contended("nginx", window(0.41, 1.6), None)
    assert flag.kind == "contended"
    assert flag.reason == (
        "nginx waited for a CPU 41% of the time it was ready to run; other processes used 1.6 of 2 CPUs"
    )


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


# --------------------------------------------------------------------------- quiet against busy


def run_plan(plan, db):
    done = httpbench("run", str(plan), "--db", str(db))
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def test_a_busy_machine_gives_the_quiet_machines_winner_or_says_it_was_busy(tmp_path, measured):
    """The quick plan's shape, short: nginx and lighttpd, two levels. Run once as the machine is
    (other work may be running), once beside a spinning process on each CPU: the second gives
    the first's winner or says its levels were measured on a busy machine; and it says so,
    every level of it: the spinning processes take half of every CPU all along."""
    plan = short_plan(tmp_path, '["nginx", "lighttpd"]', "10, 100", 'duration = "0.5s"')
    quiet_db, busy_db = tmp_path / "quiet.db", tmp_path / "busy.db"
    quiet_out = run_plan(plan, quiet_db)
    with spinning(SERVER_CPU, CLIENT_CPU):
        busy_out = run_plan(plan, busy_db)
    quiet, busy = (load_run(Store(str(db)), 1) for db in (quiet_db, busy_db))
    (quiet_verdict,), (busy_verdict,) = verdict.verdicts([quiet]), verdict.verdicts([busy])
    levels = [lv for cell in busy.measured for lv in cell.levels]
    flagged = [lv for lv in levels if "contended" in lv.flags]
    measured(
        f"quiet run: {quiet_verdict.headline}; busy run: {busy_verdict.headline} "
        f"({len(flagged)} of {len(levels)} levels contended: {[lv.flags.get('contended') for lv in flagged]})"
    )
    said = f"{len(levels)} of {len(levels)} levels were measured on a busy machine"
    busy_words = " ".join(busy_out.split())
    after_verdict = busy_words.split(" ".join(busy_verdict.headline.split()), 1)
    assert len(after_verdict) == 2, busy_out  # the verdict is printed
    # The spinning processes take half of every CPU all along: every level is flagged, so the
    # issue's check (the quiet run's verdict, or, after the verdict, that the machine was busy)
    # comes down to the summary saying so after its verdict, whatever the verdict.
    assert len(levels) == 4 and flagged == levels, [lv.flags for lv in levels]
    assert said in after_verdict[1], busy_out
    # The report `run` wrote next to the database (the busy run's, written last) says so at its top.
    assert said in (tmp_path / "report-run-1.html").read_text().split("</header>")[0]
    # The quiet run says so too when other work here made it busy.
    quiet_flagged = sum("contended" in lv.flags for cell in quiet.measured for lv in cell.levels)
    assert ("measured on a busy machine" in quiet_out) == (quiet_flagged > 0), quiet_out
