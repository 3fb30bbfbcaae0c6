"""A server that dies under load, for real: nginx started by the suite's adapter, killed with
SIGKILL by PID from the test in the middle of a level. Its master dying stops the cell, kills
what is left of its session, flags the level `crashed` and keeps the cell out of every ranking;
one of its workers dying flags the level `server_restarted` and says so on the console."""

import os
import signal
import threading

from httpbench import plan as plans, results
from httpbench.placement import Placement
from httpbench.report import summary
from httpbench.servers.process import session_pids
from httpbench.store import Store
from httpbench.sweep import Progress, Sweep

from conftest import short_plan

KILL_AFTER_S = 0.3


def kill_in_first_window(sweep: Sweep, server: str, victim) -> dict:
    """Have `victim(running server)` (a pid of that server's session) killed with SIGKILL
    KILL_AFTER_S into the first measurement window of `server`'s cell; returns what was killed
    (`pid`, and `session`, the master's pid) once it is."""
    killed: dict = {}
    make_host = sweep._server_host

    def host_watched():
        host = make_host()
        start_window = host.start_window

        def first_window_kills():
            start_window()
            if host.name == server and not killed:
                pid = victim(host.running)
                killed.update(pid=pid, session=host.running.pid)
                timer = threading.Timer(KILL_AFTER_S, os.kill, (pid, signal.SIGKILL))
                timer.start()
                killed["timer"] = timer
        host.start_window = first_window_kills
        return host
    sweep._server_host = host_watched
    return killed


def sweep_of(tmp_path, notes: list) -> Sweep:
    # Levels long enough that a kill KILL_AFTER_S into the first one lands inside it, even on a
    # busy machine.
    plan = short_plan(tmp_path, '["nginx", "reference"]', "1, 5, 10", 'duration = "1s"')
    sweep = Sweep(plans.load(str(plan)), Store(str(tmp_path / "r.db")), Placement.choose("0", "1"),
                  progress=Progress(on_note=notes.append))
    # The client ceiling is not what these tests are about: 3 s saved each.
    sweep._client_ceiling = lambda: None
    return sweep


def run_of(sweep: Sweep) -> int:
    run_id = sweep.start()
    sweep.run(run_id)
    return run_id


def test_a_master_that_dies_stops_its_cell_and_is_never_ranked(tmp_path):
    notes: list = []
    sweep = sweep_of(tmp_path, notes)
    killed = kill_in_first_window(sweep, "nginx", lambda running: running.pid)
    run_id = run_of(sweep)
    killed["timer"].join()
    # Nothing of its session outlived the cell: the orphaned workers were killed with it.
    assert session_pids(killed["session"]) == []
    run = sweep.store.run(run_id)
    cells = {c["server"]: c for c in run["cells"]}
    dead = cells["nginx"]
    assert dead["status"] == "failed" and "level 1" in dead["error"] and "died" in dead["error"], dead["error"]
    # The level it died in is stored, flagged; no level is measured after it.
    assert [r["level"] for r in dead["rounds"]] == [1]
    flags = {f["kind"]: f["reason"] for f in dead["rounds"][0]["measurement"]["flags"]}
    assert "crashed" in flags and str(killed["pid"]) in flags["crashed"], flags
    assert cells["reference"]["status"] == "done" and len(cells["reference"]["rounds"]) == 3
    assert any("nginx" in note and "died" in note for note in notes), notes
    # Shown as incomplete, and never ranked: the group has one cell that finished, so no winner.
    measured = results.load(sweep.store, run_id)
    (group,) = results.groups(measured.measured)
    nginx = next(c for c in group.cells if c.server == "nginx")
    assert [c.server for c in group.ranked()] == ["reference"]
    assert group.incomplete(nginx) and "incomplete" in group.flags(nginx)
    assert summary.winners([measured]) == []
    assert any("nginx/default" in line and "died" in line for line in summary.cautions([measured]))
    assert any("flagged crashed" in line for line in summary.cautions([measured]))
    # Resumed, the cell measures the levels it lacked and is done; the level its server died in
    # is stored as it was, so the cell is still no result to rank.
    resumed = Sweep(sweep.plan, sweep.store, sweep.placement)
    resumed._client_ceiling = lambda: None
    resumed.run(run_id)
    measured = results.load(sweep.store, run_id)
    (group,) = results.groups(measured.measured)
    nginx = next(c for c in group.cells if c.server == "nginx")
    assert nginx.status == "done" and nginx.level_numbers == (1, 5, 10)
    assert [c.server for c in group.ranked()] == ["reference"]
    assert group.incomplete(nginx).startswith("its server died during level 1"), group.incomplete(nginx)


def test_a_worker_that_dies_flags_the_level_server_restarted(tmp_path):
    notes: list = []
    sweep = sweep_of(tmp_path, notes)
    sweep.cells = [c for c in sweep.cells if c.server == "nginx"]
    killed = kill_in_first_window(sweep, "nginx", lambda running: next(p for p in running.pids() if p != running.pid))
    run_id = run_of(sweep)
    killed["timer"].join()
    (cell,) = sweep.store.run(run_id)["cells"]
    assert cell["status"] == "done", cell["error"]
    flags = [{f["kind"]: f["reason"] for f in r["measurement"]["flags"]} for r in cell["rounds"]]
    assert "server_restarted" in flags[0] and f"worker pid {killed['pid']} exited" in flags[0]["server_restarted"]
    assert "crashed" not in flags[0]
    assert all("server_restarted" not in f for f in flags[1:]), flags
    # Said on the console as it happens, naming the level.
    assert any("level 1" in note and f"worker pid {killed['pid']} exited" in note for note in notes), notes


def test_a_worker_leaving_without_a_replacement_is_a_pool_shrinking_not_a_restart():
    from httpbench import honesty
    # apache2's event MPM ends the children it has more of than it keeps spare (one went at level 2
    # of a 1, 2, 100, 200 sweep here), in a level that may have failed requests of its own.
    window = {"crashed": False, "workers_exited": 1, "workers_started": 0, "events": ["worker pid 7 exited"]}
    assert honesty.server_restarted({"server": window, "errors_total": 3}) is None
    window.update(workers_started=1, events=["worker pid 7 exited", "1 new worker appeared (pid 9)"])
    flag = honesty.server_restarted({"server": window, "errors_total": 3})
    assert flag.kind == "server_restarted"
    assert flag.reason == "worker pid 7 exited; 1 new worker appeared (pid 9); 3 requests failed in the round"
