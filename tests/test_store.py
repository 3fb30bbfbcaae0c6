"""The results store on SQLite and on a real PostgreSQL server started by the test."""

import os
import pwd
import shutil
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from httpbench.store import Store, StoreError

from conftest import free_port, stop

PG_BIN = Path("/usr/lib/postgresql/15/bin")


@dataclass(frozen=True)
class FakePlan:
    name: str = "tiny"
    text: str = 'name = "tiny"\n'


@dataclass(frozen=True)
class FakeWorkload:
    label: str = "7B"


@dataclass(frozen=True)
class FakeCell:
    key: str
    server: str = "nginx"
    profile: str = "tuned"
    workload: FakeWorkload = FakeWorkload()
    keep_alive: bool = True
    cpus: int = 1


MEASUREMENT = {
    "requests": {"per_second": 12345.5, "completed": 6172, "sent": 6180, "failed": 0, "in_flight": 8},
    "errors_total": 0,
    "latency": {"total": {"p50_us": 812, "p99_us": 2048, "hdr": "HISTFAAAACR4nJNpmSzMwMDAxQABzFCaEUzz2X+AsQ=="}},
    "client": {"busy_share": 0.41},
    "timeseries": [{"second": 0, "requests": 6172, "errors": 0, "p50_us": 812, "p99_us": 2048}],
    "server": {"rss_peak_bytes": 1 << 20},
    "flags": [{"kind": "noisy", "reason": "cv 7%"}],
}


def fill(store: Store) -> int:
    run_id = store.start_run(FakePlan(), {"kernel": "6.18"}, {"nginx": "nginx/1.22.1"})
    for key in ("nginx/tuned/7B/ka/1cpu", "reference/tuned/7B/ka/1cpu"):
        cell_id = store.cell(run_id, FakeCell(key=key, server=key.split("/")[0]), "worker_processes 1;", "v1")
        for level in (1, 10):
            for index in (0, 1):
                store.add_round(cell_id, level, index, {**MEASUREMENT, "level": level, "round": index})
        store.finish_cell(cell_id, "done", 1.5, None)
    store.finish_run(run_id, "done")
    return run_id


def comparable(run: dict) -> dict:
    return {**run, "started": None, "ended": None}


@pytest.fixture(scope="module")
def postgres():
    """A private PostgreSQL server: its own data directory, unix socket and loopback port, run as
    the postgres user (it refuses root), stopped by PID at the end."""
    if not (PG_BIN / "postgres").exists():
        pytest.fail("PostgreSQL is not installed: apt-get install -y postgresql")
    base = Path(tempfile.mkdtemp(prefix="httpbench-pg-", dir="/tmp"))
    user = pwd.getpwnam("postgres")
    os.chown(base, user.pw_uid, user.pw_gid)
    as_postgres = ["runuser", "-u", "postgres", "--"]
    subprocess.run([*as_postgres, str(PG_BIN / "initdb"), "-D", str(base / "data"), "-A", "trust", "-U", "bench"],
                   check=True, capture_output=True)
    port = free_port()
    server = subprocess.Popen([*as_postgres, str(PG_BIN / "postgres"), "-D", str(base / "data"), "-k", str(base),
                               "-p", str(port), "-c", "listen_addresses=127.0.0.1"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"postgresql://bench@127.0.0.1:{port}/postgres"
    deadline = time.monotonic() + 30
    while True:
        try:
            Store(url)
            break
        except StoreError:
            if time.monotonic() > deadline or server.poll() is not None:
                stop(server)
                raise
            time.sleep(0.2)
    yield url
    server.send_signal(signal.SIGINT)  # fast shutdown
    try:
        server.wait(timeout=20)
    except subprocess.TimeoutExpired:
        stop(server)
    shutil.rmtree(base, ignore_errors=True)


def test_sqlite_and_postgresql_read_back_identically(tmp_path, postgres):
    lite, pg = Store(str(tmp_path / "r.db")), Store(postgres)
    a, b = lite.run(fill(lite)), pg.run(fill(pg))
    assert comparable(a)["cells"] == comparable(b)["cells"]
    assert {k: v for k, v in comparable(a).items() if k != "id"} == {k: v for k, v in comparable(b).items() if k != "id"}
    assert a["cells"][0]["rounds"][0]["measurement"] == {**MEASUREMENT, "level": 1, "round": 0}
    assert len(a["cells"][1]["rounds"]) == 4


def test_resume_sees_what_is_stored_and_never_duplicates(tmp_path):
    store = Store(str(tmp_path / "r.db"))
    run_id = store.start_run(FakePlan(), {}, {})
    cell = FakeCell(key="nginx/tuned/7B/ka/1cpu")
    cell_id = store.cell(run_id, cell, "conf", "v1")
    store.add_round(cell_id, 1, 0, MEASUREMENT)
    assert store.cell(run_id, cell, "conf", "v1") == cell_id  # found again on resume
    assert store.rounds_done(cell_id) == {(1, 0)}
    store.add_round(cell_id, 1, 0, {**MEASUREMENT, "errors_total": 99})
    rounds = store.run(run_id)["cells"][0]["rounds"]
    assert len(rounds) == 1 and rounds[0]["measurement"]["errors_total"] == 0


def test_schema_version_mismatch_is_one_line(tmp_path):
    db = tmp_path / "r.db"
    store = Store(str(db))
    with store.engine.begin() as conn:
        conn.exec_driver_sql("UPDATE meta SET schema_version = 99")
    with pytest.raises(StoreError, match="schema version 99") as failed:
        Store(str(db))
    assert "\n" not in str(failed.value)


def test_unreachable_database_is_one_fast_line():
    started = time.monotonic()
    with pytest.raises(StoreError, match="cannot open the results database") as failed:
        Store("postgresql://bench@127.0.0.1:1/none")
    assert "\n" not in str(failed.value) and time.monotonic() - started < 10


def test_unknown_run_lists_recent_ones(tmp_path):
    store = Store(str(tmp_path / "r.db"))
    fill(store)
    with pytest.raises(StoreError, match="no run 7; recent runs: 1"):
        store.run(7)
