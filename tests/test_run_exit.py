"""A run that measured with failures says so: in its exit code, its stored status and its summary,
in the plan's terms; a plan that cannot be run as written is refused in one line, exit 2."""

import resource

from conftest import httpbench, refused_run, short_plan
from httpbench.store.database import Store


def test_a_run_whose_cell_failed_exits_1_in_plan_terms(tmp_path):
    # A level no open-file limit here allows: the cell fails before measuring anything.
    plan = short_plan(tmp_path, '["reference"]', "100000000", 'duration = "0.5s"')
    db = tmp_path / "results.db"
    done = httpbench("run", str(plan), "--db", str(db), timeout=120)
    assert done.returncode == 1, done.stderr[-2000:]
    run = Store(str(db)).run(1)
    assert run["status"] == "cells failed"
    [cell] = run["cells"]
    assert cell["status"] == "failed"
    # Worded for the plan's user, who has no -c to lower.
    assert "level 100000000" in cell["error"] and "open files" in cell["error"] and "-c" not in cell["error"]
    assert f"{cell['key']} failed: {cell['error']}" in " ".join(done.stdout.split())
    assert "(cells failed)" in done.stdout
    listed = httpbench("runs", "--db", str(db), timeout=60)
    assert listed.returncode == 0 and "cells failed" in listed.stdout


def few_files() -> None:
    resource.setrlimit(resource.RLIMIT_NOFILE, (40, 40))


def test_a_run_that_fails_once_stored_exits_1_with_its_resume_command(tmp_path):
    # An open-file limit too low for the client ceiling's connections: the engine refuses them
    # after the run is stored. A failed run, not bad input.
    plan = short_plan(tmp_path, '["reference"]', "1", 'duration = "0.2s"')
    db = tmp_path / "results.db"
    done = httpbench("run", str(plan), "--db", str(db), timeout=120, preexec_fn=few_files)
    assert done.returncode == 1, done.stderr[-2000:]
    resume = f"httpbench run --resume 1 --db {db}"
    assert "run 1 failed: " in done.stderr and "open files" in done.stderr and f"Resume with: {resume}" in done.stderr
    assert "Traceback" not in done.stderr
    assert Store(str(db)).run(1)["status"] == "failed"
    listed = httpbench("runs", "--db", str(db), timeout=60)
    assert f"run 1 is failed; resume with: {resume}" in listed.stdout.replace("\n", ""), listed.stdout


def test_a_plan_naming_a_server_without_https_is_refused_in_one_line_leaving_nothing(tmp_path):
    # Debian's mighttpd2 has no TLS: named by a plan with https cells, the run is refused before
    # anything starts or is stored, and nothing of the run's session outlives it.
    plan = short_plan(tmp_path, '["nginx", "mighttpd2"]', "1", 'duration = "0.2s"', extra='protocols = ["https"]')
    err = refused_run(plan, tmp_path / "results.db")
    assert "mighttpd2 is built without TLS" in err and "measure it over http" in err, err
