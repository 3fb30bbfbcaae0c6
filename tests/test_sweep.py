"""`httpbench run` for real: a short quick-shaped sweep against nginx and reference, stored and
shown; a sweep killed with SIGKILL and resumed loses and duplicates no round."""

import signal
import subprocess
import sys
import time

import pytest

from httpbench.store import Store

PLAN = """
name = "tiny"
description = "two servers, three levels, two rounds, half a second each"
servers = ["nginx", "reference"]
profiles = ["tuned"]
keep_alive = [true]
server_cpus = [1]
rounds = 2
warmup = "0.2s"
[[workload]]
kind = "generated"
size = 7
name = "index.html"
[levels]
list = [1, 10, 50]
[budget]
duration = "0.5s"
"""


def httpbench(*args, timeout=300):
    return subprocess.run([sys.executable, "-m", "httpbench", *args], capture_output=True, text=True, timeout=timeout)


@pytest.fixture
def plan_file(tmp_path):
    path = tmp_path / "tiny.toml"
    path.write_text(PLAN)
    return path


def rounds_of(db, run_id):
    run = Store(str(db)).run(run_id)
    return run, [(c["key"], r["level"], r["round"]) for c in run["cells"] for r in c["rounds"]]


def test_a_short_sweep_is_stored_and_shown(plan_file, tmp_path):
    db = tmp_path / "results.db"
    done = httpbench("run", str(plan_file), "--db", str(db))
    assert done.returncode == 0, done.stderr[-2000:]
    run, rounds = rounds_of(db, 1)
    assert run["status"] == "done"
    assert len(rounds) == 2 * 3 * 2 == len(set(rounds))
    for cell in run["cells"]:
        assert cell["status"] == "done" and cell["config_text"] and cell["seconds"] > 0
        for r in cell["rounds"]:
            m = r["measurement"]
            assert m["requests"]["completed"] > 0 and m["errors_total"] == 0
            assert m["server"]["rss_peak_bytes"] > 0 and m["server"]["cpu_user_cores"] >= 0
    assert "served" in done.stdout  # the verdict sentence
    shown = httpbench("show", "1", "--db", str(db))
    assert shown.returncode == 0 and "nginx/tuned" in shown.stdout
    listed = httpbench("runs", "--db", str(db))
    assert listed.returncode == 0 and "tiny" in listed.stdout


def test_resume_after_sigkill_loses_and_duplicates_nothing(plan_file, tmp_path):
    db = tmp_path / "results.db"
    sweep = subprocess.Popen([sys.executable, "-m", "httpbench", "run", str(plan_file), "--db", str(db)],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        time.sleep(0.3)
        try:
            if len(rounds_of(db, 1)[1]) >= 3:
                break
        except Exception:
            continue
    sweep.send_signal(signal.SIGKILL)
    sweep.wait()
    before = rounds_of(db, 1)[1]
    assert 3 <= len(before) < 12
    done = httpbench("run", "--resume", "1", "--db", str(db))
    assert done.returncode == 0, done.stderr[-2000:]
    run, after = rounds_of(db, 1)
    assert run["status"] == "done"
    assert len(after) == 12 == len(set(after))
    assert set(before) <= set(after)


def test_unknown_run_and_bad_plan_are_one_line(tmp_path, plan_file):
    db = tmp_path / "results.db"
    assert httpbench("run", str(plan_file), "--db", str(db), "--servers", "reference").returncode == 0
    shown = httpbench("show", "99", "--db", str(db))
    assert shown.returncode == 2 and len(shown.stderr.strip().splitlines()) == 1
    bad = tmp_path / "bad.toml"
    bad.write_text(PLAN.replace("step", "stepp").replace("[levels]\nlist", "[levels]\nlisst"))
    done = httpbench("run", str(bad), "--db", str(db))
    assert done.returncode == 2 and "lisst" in done.stderr and "Traceback" not in done.stderr
    unreachable = httpbench("run", str(plan_file), "--db", "postgresql://127.0.0.1:1/none")
    assert unreachable.returncode == 2 and len(unreachable.stderr.strip().splitlines()) == 1
