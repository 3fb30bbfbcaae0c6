"""A server that dies under load, for real: nginx started by the suite's adapter, killed with
SIGKILL by PID from the test in the middle of a level. Its master dying stops the cell, kills
what is left of its session, flags the level `crashed` and keeps the cell out of every ranking;
one of its workers dying flags the level `server_restarted` and says so on the console. A server
that stops answering while its process lives on ends the load early: the round is stored, flagged
`ended_early`, and its cell stops as the dead master's does."""

import sys

from conftest import kill_in_first_window, quick_sweep, short_plan
from httpbench import results
from httpbench.report import summary, verdict
from httpbench.results import comparison
from httpbench.servers.process import session_pids
from httpbench.sweep.session import Session
from httpbench.sweep.sweep import Progress, Sweep


def sweep_of(tmp_path, notes: list) -> Sweep:
    # Levels long enough that a kill KILL_AFTER_S into the first one lands inside it, even on a
    # busy machine.
    plan = short_plan(tmp_path, '["nginx", "reference"]', "1, 5, 10", 'duration = "1s"')
    return quick_sweep(plan, tmp_path / "r.db", notes)


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
    (group,) = comparison.groups(measured.measured)
    nginx = next(c for c in group.cells if c.server == "nginx")
    assert [c.server for c in group.ranked()] == ["reference"]
    assert group.incomplete(nginx) and "incomplete" in group.flags(nginx)
    # The reference is the client's ceiling and nginx did not finish: nothing is ranked.
    (said,) = verdict.verdicts([measured])
    assert said.places == [] and said.headline is None and said.ceiling.startswith("ceiling (reference/")
    assert any("nginx/default" in line and "died" in line for line in summary.cautions([measured]))
    assert any("flagged crashed" in line for line in summary.cautions([measured]))
    # Resumed on a fresh server, the cell measures again the level its server died in (that
    # round replaced, not kept beside the new one) and the levels it lacked: it finished, so it
    # is ranked and the run is done.
    with Session(str(tmp_path / "r.db"), resume=run_id) as session:
        # The round its server died in is owed again: the progress bar does not count it stored.
        assert (session.rounds_stored, session.rounds_total) == (3, 6)
        session.sweep.measure_ceiling = lambda kind: None
        assert session.measure(Progress()) is None
    assert sweep.store.run(run_id)["status"] == "done"
    measured = results.load(sweep.store, run_id)
    (group,) = comparison.groups(measured.measured)
    nginx = next(c for c in group.cells if c.server == "nginx")
    assert nginx.status == "done" and nginx.level_numbers == (1, 5, 10) and nginx.finished
    assert len(nginx.levels[0].rps_values) == 1 and "crashed" not in nginx.levels[0].flags, nginx.levels[0].flags
    assert sorted(c.server for c in group.ranked()) == ["nginx", "reference"]
    assert group.incomplete(nginx) is None


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
    from httpbench.judge import honesty

    # apache2's event MPM ends the children it has more of than it keeps spare (one went at level 2
    # of a 1, 2, 100, 200 sweep here), in a level that may have failed requests of its own.
    window = {"crashed": False, "workers_exited": 1, "workers_started": 0, "events": ["worker pid 7 exited"]}
    assert honesty.server_restarted({"server": window, "errors_total": 3}) is None
    window.update(workers_started=1, events=["worker pid 7 exited", "1 new worker appeared (pid 9)"])
    flag = honesty.server_restarted({"server": window, "errors_total": 3})
    assert flag.kind == "server_restarted"
    assert flag.reason == "worker pid 7 exited; 1 new worker appeared (pid 9); 3 requests failed in the round"


# Serves the docroot with keep-alive until it has begun LIMIT requests, then closes its listening
# socket and every connection, and lives on: each connect is refused from then on.
DEAF_AFTER = """
import functools, http.server, sys, threading, time
host, port, docroot, limit = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
begun, gone, lock = [0], threading.Event(), threading.Lock()

class Handler(http.server.SimpleHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True   # headers and body are two writes: no 40 ms delayed ACK between

    def handle_one_request(self):
        with lock:
            begun[0] += 1
            if begun[0] > limit:
                gone.set()
        if gone.is_set():
            self.close_connection = True
        else:
            super().handle_one_request()

    def log_message(self, *args):
        pass

server = http.server.ThreadingHTTPServer((host, port), functools.partial(Handler, directory=docroot))
server.timeout = 0.05
while not gone.is_set():
    server.handle_request()
server.socket.close()
while True:
    time.sleep(60)
"""


def test_a_server_that_stops_answering_ends_its_cell_flagged_ended_early(tmp_path):
    script = tmp_path / "deaf_after.py"
    script.write_text(DEAF_AFTER)
    # Level 1 is served whole (the verification's request and 200), level 2 loses its server
    # halfway: the engine gives up when nothing connected or answered for 1 s after a refused connect.
    plan = short_plan(
        tmp_path,
        '["deaf"]',
        "1, 2, 4",
        "requests = 200",
        tables=f'[server.deaf]\ncommand = "{sys.executable} {script} {{host}} {{port}} {{docroot}} 350"\n',
    )
    notes: list = []
    sweep = quick_sweep(plan, tmp_path / "r.db", notes)
    run_id = run_of(sweep)
    run = sweep.store.run(run_id)
    assert run["status"] == "cells failed"
    (cell,) = run["cells"]
    # The round the load ended early in is stored with what it measured, flagged with the
    # engine's reason; no level is measured after it.
    assert [r["level"] for r in cell["rounds"]] == [1, 2], cell["error"]
    first, ended = (r["measurement"] for r in cell["rounds"])
    assert first["requests"]["completed"] == 200 and not first["aborted"]
    # Its warm-up is a request per connection (a closed loop once sent thousands more while it
    # waited for its slowest connection, and the server went deaf before level 2 began).
    assert ended["aborted"] and 0 < ended["requests"]["completed"] < 200
    flags = {f["kind"]: f["reason"] for f in ended["flags"]}
    assert flags.get("ended_early") == ended["aborted"] and "refused" in flags["ended_early"], flags
    assert "crashed" not in flags
    assert cell["status"] == "failed" and cell["error"].startswith("the load ended early at level 2: "), cell["error"]
    assert any("deaf" in note and "ended early at level 2" in note for note in notes), notes
    # Shown incomplete and never ranked, with the flag's meaning in the cautions.
    measured = results.load(sweep.store, run_id)
    (group,) = comparison.groups(measured.measured)
    (deaf,) = group.cells
    assert group.ranked() == [] and group.incomplete(deaf) and "ended_early" in group.flags(deaf, [2])
    assert any("flagged ended_early" in line for line in summary.cautions([measured]))
    # Resumed on a fresh server, the cell measures level 2 again, whole this time (its round
    # replaced), and level 4, where this server stops answering again: the cell fails there,
    # is never ranked, and the run is stored as one with failed cells.
    resumed = Sweep(sweep.plan, sweep.store, sweep.placement)
    resumed.measure_ceiling = lambda kind: None
    resumed.run(run_id)
    run = sweep.store.run(run_id)
    assert run["status"] == "cells failed"
    (cell,) = run["cells"]
    assert [r["level"] for r in cell["rounds"]] == [1, 2, 4]
    again = cell["rounds"][1]["measurement"]
    assert again["requests"]["completed"] == 200 and not again["aborted"], again["aborted"]
    assert cell["status"] == "failed" and cell["error"].startswith("the load ended early at level 4: ")
    measured = results.load(sweep.store, run_id)
    (group,) = comparison.groups(measured.measured)
    assert group.ranked() == [] and measured.unfinished == list(group.cells)


def test_a_load_that_ended_early_because_the_server_died_is_flagged_crashed_only():
    from httpbench.judge import honesty

    # The engine gives up on a server that is gone; when its process died, that death is the
    # cause, said once (the engine's reason stays in the stored `aborted`).
    aborted = {
        "aborted": "the server stopped answering: a connect to 127.0.0.1:1 was refused, and nothing connected or "
        "answered in the 1 s after (nothing listens there any more)"
    }
    assert honesty.ended_early({**aborted, "server": {"crashed": False}}).reason == aborted["aborted"]
    assert honesty.ended_early({**aborted, "server": {"crashed": True, "events": ["pid 7 died"]}}) is None
    assert honesty.ended_early({"aborted": None, "server": {}}) is None
