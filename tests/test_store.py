"""The results store on SQLite and on a real PostgreSQL server started by the test."""

import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

import psycopg
import pytest
from conftest import free_port
from httpbench.load.report import stored_round
from httpbench.plan.model import Budget
from httpbench.plan.protocol import TlsSettings
from httpbench.store import schema
from httpbench.store.database import Store, StoreError

PG_BIN = Path("/usr/lib/postgresql/15/bin")

# Real histograms from an engine run against the reference server (V2 compressed, base64): the
# store must keep them byte for byte, since merging runs means decoding and adding them.
HDR_TOTAL = (
    "HISTFAAAAhV4nC1QTWgTURB+73uT2d1s1jRJ80vSv1SwBhqotooEelCpCoKICD17E0Tw2oMIgRYJUi0FkRK1J/FQRFBRPBTpwVvF"
    "Qwlag1QPKiIeFIJ46LzdLrx982bm+5kpN5cySuGOij6zd+vwsTSvpn9HiUp86NSxxsUn+h9uxrYTWwMLo3/Kt9I7/f+zzerK2Kup"
    "17X1idalzl2s3jbtDWy8xdq154fXjt47/vXk0+kf9c54c2RhqDf4oPSrvFPoZbv9rfT7VC/1ONjyF+M/nQ/OG16PdWMtatNn884s"
    "mm208U13dFev6hXd1o/05QuNc2fOj0wdPNEYHz1QnijkSqV9Azm33JcoJHIqgXQfwC6XSMWVS0QKgAKBmI2NFNNehmFcE5fAcEwO"
    "MjDkCELa2NalFYIRAgMPEY/9pOjBQZIM5QWn4EPwtqgoYEfCIKFQB3sSpqhOjvRbgmFU8VJL0kcSeUnBEXsO5uALi4qUApZbcKhw"
    "HpOIsBYi4SHGVQSo0X6OemztkxZ5a+i7RoofahHxLfcsv9DSLFPxF00zMlyGPAxClGv80bqbl5jnEOpNogaPjmBMwIoMD7OPKygK"
    "tSN1j5PSk0cldHI6nNfHLLLyJwu3psmTVeK6KAby4qrFCUKEZaMzKPIyZLqiSFjwDS37faatU+ko0qYlCndwFvfDkSgQV/IK8Ne1"
    "ew+NyFl2wZvWJXYB37FbRQ=="
)
HDR_CONNECT = "HISTFAAAACF4nJNpmSzMwMDAzAABMJoRzJnczmD/ASKwl5EDAFNGBGA="


@dataclass(frozen=True)
class FakePlan:
    name: str = "tiny"
    text: str = 'name = "tiny"\n[levels]\nlist = [1, 10]\n'


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
    budget: Optional[Budget] = None
    protocol: str = "http"
    resumption: Optional[str] = None
    streams: int = 1
    encoding: Optional[str] = None
    idle: int = 0
    slow: Optional[str] = None
    slow_clients: int = 0
    events_label: str = ""


def summary(p50: int, hdr: str) -> dict:
    return {
        "count": 176049,
        "min_us": 15,
        "mean_us": 44.92793483632398,
        "stdev_us": 154.59999970366633,
        "max_us": 20127,
        "p50_us": p50,
        "p75_us": 44,
        "p90_us": 52,
        "p99_us": 74,
        "p99_9_us": 931,
        "p99_99_us": 5739,
        "hdr": hdr,
    }


def measurement(level: int, index: int) -> dict:
    """One round as the sweep stores it: the engine's report (httpbench-load/1), the server's
    monitor window and the flags."""
    rps = 88024.5 + level * 10 + index
    return {
        "schema": "httpbench-load/1",
        "engine": {"version": "0.1.0", "io": "io_uring"},
        "spec": {"urls": ["http://127.0.0.1:18089/index.html"], "connections": level, "stop": {"duration": 2.0}},
        "validation": {"status": 200, "body_bytes": 7, "ok": True, "problem": None},
        "duration_s": 2.0,
        "requests": {"sent": 176053, "completed": 176049, "failed": 0, "in_flight": 4, "per_second": rps},
        "open_loop": None,
        "status": {"1xx": 0, "2xx": 176049, "3xx": 0, "4xx": 0, "5xx": 0, "other": 0},
        "errors": {"connect_refused": 0, "timeout": 0, "reset": index},
        "errors_total": index,
        "bytes": {"head": 15492312, "body": 1232343, "read": 16724655, "written": 16372650},
        "connections": {"opened": level, "server_closes": 0},
        "latency": {
            "total": summary(39, HDR_TOTAL),
            "service": summary(39, HDR_TOTAL),
            "first_byte": summary(38, HDR_TOTAL),
            "connect": summary(95, HDR_CONNECT),
        },
        "timeseries": [{"second": s, "requests": 88000 + s, "errors": 0, "p50_us": 39, "p99_us": 74} for s in range(2)],
        "client": {
            "threads": [{"cpu": 1, "user_s": 0.138627, "sys_s": 0.798828, "wall_s": 2.0, "busy_share": 0.4687275}],
            "user_s": 0.138627,
            "sys_s": 0.798828,
            "busy_share": 0.4687275,
            "cpu_us_per_request": 5.32,
        },
        "aborted": None,
        "server": {
            "duration_s": 2.01,
            "samples": 20,
            "rss_peak_bytes": 1 << 22,
            "pss_mean_bytes": None,
            "cpu_user_cores": 0.31,
            "idle_share": float("nan"),
        },  # NaN: JSON has none, stored as null
        "flags": [{"kind": "littles_law", "reason": "1 connections, throughput x latency says 3.9"}],
    }


def fill(store: Store) -> int:
    run_id = store.start_run(FakePlan(), {"kernel": "6.18", "cpus": 2}, {"nginx": "nginx/1.22.1"})
    for key in ("nginx/tuned/7B/ka/1cpu", "reference/tuned/7B/ka/1cpu"):
        cell_id = store.cell(run_id, FakeCell(key=key, server=key.split("/")[0]), "worker_processes 1;\n", "v1")
        for level in (1, 10):
            for index in (0, 1):
                store.add_round(cell_id, level, index, measurement(level, index))
        store.finish_cell(cell_id, "done", 1.5, None)
    store.finish_run(run_id, "done")
    return run_id


class Postgres:
    """A private PostgreSQL server; each test gets a database of its own."""

    def __init__(self, port: int) -> None:
        self.port, self.made = port, 0

    def database(self) -> str:
        self.made += 1
        with psycopg.connect(
            host="127.0.0.1", port=self.port, user="bench", dbname="postgres", autocommit=True
        ) as conn:
            conn.execute(f"CREATE DATABASE t{self.made}")
        return f"postgresql://bench@127.0.0.1:{self.port}/t{self.made}"


@pytest.fixture(scope="module")
def postgres():
    """initdb into a directory of /tmp owned by postgres (pytest's tmp_path is under a 0700 root
    directory), then postgres itself as our child (Popen's user=: PostgreSQL refuses root, and a
    wrapper like runuser would turn our SIGINT into SIGTERM, a shutdown that waits for clients).
    Unix socket in that directory, TCP on loopback only, no fsync (its data is thrown away: what
    the tests read back, other connections see without it); SIGQUIT (immediate shutdown, no
    checkpoint to write) by PID at the end."""
    if not (PG_BIN / "postgres").exists():
        pytest.fail("PostgreSQL is not installed: apt-get install -y postgresql (make deps does)")
    base = Path(tempfile.mkdtemp(prefix="httpbench-pg-", dir="/tmp"))
    as_postgres = {"user": "postgres", "group": "postgres", "extra_groups": [], "cwd": base}
    shutil.chown(base, "postgres", "postgres")
    server = None
    try:
        subprocess.run(
            [
                PG_BIN / "initdb",
                "-D",
                base / "data",
                "-A",
                "trust",
                "-U",
                "bench",
                "-E",
                "UTF8",
                "--no-locale",
                "--no-sync",
            ],
            check=True,
            capture_output=True,
            **as_postgres,
        )
        port = free_port()
        server = subprocess.Popen(
            [PG_BIN / "postgres", "-D", base / "data", "-k", base, "-p", str(port)]
            + ["-c", "listen_addresses=127.0.0.1", "-c", "fsync=off"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            **as_postgres,
        )
        deadline = time.monotonic() + 30
        while True:
            try:
                psycopg.connect(host="127.0.0.1", port=port, user="bench", dbname="postgres", connect_timeout=1).close()
                break
            except psycopg.OperationalError:
                if time.monotonic() > deadline or server.poll() is not None:
                    raise
                time.sleep(0.05)
        yield Postgres(port)
    finally:
        if server is not None and server.poll() is None:
            server.send_signal(signal.SIGQUIT)
            try:
                server.wait(timeout=20)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait()
        shutil.rmtree(base, ignore_errors=True)


@pytest.fixture(params=["sqlite", "postgresql"])
def db(request, tmp_path) -> str:
    """An empty database: an SQLite path, or a fresh database on the private server."""
    if request.param == "sqlite":
        return str(tmp_path / "results.db")
    return request.getfixturevalue("postgres").database()


def without_times(run: dict) -> dict:
    return {k: v for k, v in run.items() if k not in ("started", "ended")}


def test_sqlite_and_postgresql_read_back_identically(tmp_path, postgres):
    lite, pg = Store(str(tmp_path / "r.db")), Store(postgres.database())
    a, b = lite.run(fill(lite)), pg.run(fill(pg))
    assert without_times(a) == without_times(b)
    assert a["status"] == "done" and a["ended"] >= a["started"]
    assert [len(c["rounds"]) for c in a["cells"]] == [4, 4]
    stored = a["cells"][0]["rounds"][3]
    assert (stored["level"], stored["round"]) == (10, 1)
    # Read back in this version's shape (the round above lacks fields added since), else as stored.
    assert stored["measurement"] == stored_round(
        {**measurement(10, 1), "server": {**measurement(10, 1)["server"], "idle_share": None}}
    )
    read = stored["measurement"]
    assert read["client"]["waiting_share"] is None and read["server"]["crashed"] is False
    assert stored["measurement"]["latency"]["total"]["hdr"] == HDR_TOTAL


def test_resume_sees_what_is_stored_and_never_duplicates(db):
    store = Store(db)
    run_id = store.start_run(FakePlan(), {}, {})
    cell = FakeCell(key="nginx/tuned/7B/ka/1cpu")
    cell_id = store.cell(run_id, cell, "conf", "v1")
    store.add_round(cell_id, 1, 0, measurement(1, 0))
    store.add_round(cell_id, 10, 0, measurement(10, 0))

    resumed = Store(db)  # as `httpbench run --resume` would
    assert resumed.cell(run_id, cell, "conf", "v1") == cell_id
    assert resumed.rounds_done(cell_id) == {(1, 0), (10, 0)}
    resumed.add_round(cell_id, 1, 0, {**measurement(1, 0), "errors_total": 99})  # ignored: the first stays
    resumed.add_round(cell_id, 1, 1, measurement(1, 1))
    rounds = resumed.run(run_id)["cells"][0]["rounds"]
    assert [(r["level"], r["round"]) for r in rounds] == [(1, 0), (1, 1), (10, 0)]
    assert rounds[0]["measurement"]["errors_total"] == 0
    with pytest.raises(Exception):  # a round of a cell that does not exist is a bug, not a duplicate
        resumed.add_round(cell_id + 100, 1, 0, measurement(1, 0))


def test_a_round_that_stopped_its_cell_is_measured_again_in_its_place(db):
    store = Store(db)
    run_id = store.start_run(FakePlan(), {}, {})
    cell_id = store.cell(run_id, FakeCell(key="nginx/tuned/7B/ka/1cpu"), "conf", "v1")
    store.add_round(cell_id, 1, 0, measurement(1, 0))
    died = measurement(10, 0)
    died["flags"] = [{"kind": "crashed", "reason": "nginx (pid 7) died during the window"}]
    store.add_round(cell_id, 10, 0, died)
    # A resume owes the round the server died in, and stores the new one in its place.
    assert store.rounds_done(cell_id) == {(1, 0), (10, 0)}
    assert store.rounds_done(cell_id, redo={"crashed", "ended_early"}) == {(1, 0)}
    store.add_round(cell_id, 10, 0, {**measurement(10, 0), "errors_total": 5}, replace=True)
    rounds = store.run(run_id)["cells"][0]["rounds"]
    assert [(r["level"], r["round"]) for r in rounds] == [(1, 0), (10, 0)]
    assert rounds[1]["measurement"]["errors_total"] == 5
    assert "crashed" not in {f["kind"] for f in rounds[1]["measurement"]["flags"]}


def test_schema_version_mismatch_is_one_line(db):
    with Store(db).engine.begin() as conn:
        conn.exec_driver_sql("UPDATE meta SET schema_version = 99")
    with pytest.raises(
        StoreError, match=rf"schema version 99, this httpbench writes version {schema.SCHEMA_VERSION}; use another --db"
    ) as failed:
        Store(db)
    assert "\n" not in str(failed.value)


def older_store(db: str, version: int, keys=("nginx/tuned/7B/ka/1cpu",), **run) -> None:
    """A store as httpbench wrote it in schema `version`: today's tables without the columns
    added since, holding a run (with `run`'s columns) whose cells have `keys`, each a round."""
    from httpbench.store import database as store
    from sqlalchemy import MetaData, Table, create_engine, insert

    added = {
        (c.table.name, c.name) for since in range(version + 1, schema.SCHEMA_VERSION + 1) for c in schema.ADDED[since]
    }
    old = MetaData()
    for table in schema.metadata.sorted_tables:
        Table(table.name, old, *[c._copy() for c in table.columns if (table.name, c.name) not in added])
    engine = create_engine(store.url_of(db), json_serializer=store._dumps)
    with engine.begin() as conn:
        old.create_all(conn)
        conn.execute(insert(old.tables["meta"]).values(schema_version=version))
        run_id = conn.execute(
            insert(old.tables["runs"]).values(
                **{
                    "plan_name": "tiny",
                    "plan_text": FakePlan.text,
                    "host": {},
                    "versions": {},
                    "started": store._now(),
                    **run,
                }
            )
        ).inserted_primary_key[0]
        for key in keys:
            cell_id = conn.execute(
                insert(old.tables["cells"]).values(
                    run_id=run_id,
                    key=key,
                    server="nginx",
                    profile="tuned",
                    workload="7B",
                    keep_alive=True,
                    cpus=1,
                    config_text="",
                    server_version="v1",
                    seconds=2.5,
                    status="interrupted",
                )
            ).inserted_primary_key[0]
            conn.execute(
                insert(old.tables["rounds"]).values(cell_id=cell_id, level=1, round=0, measurement=measurement(1, 0))
            )
    engine.dispose()


def version_1_store(db: str) -> None:
    """Before schema version 2: a run left "running" by a process that is gone (no owner then)."""
    older_store(db, 1, status="running")


def test_a_version_1_store_is_migrated_and_keeps_its_runs(db):
    version_1_store(db)
    store = Store(db)  # `run` migrates (a command that only reads does not)
    assert schema_version(db) == schema.SCHEMA_VERSION
    old = store.run(1)
    assert old["status"] == "running" and old["owner_pid"] is None  # whose process it was is unknown
    assert [len(c["rounds"]) for c in old["cells"]] == [1] and old["cells"][0]["sessions"] is None
    store.claim(1)  # resumed
    assert store.run(1)["owner_pid"] == os.getpid() and store.run(1)["status"] == "running"
    cell = FakeCell(key="nginx/tuned/7B/ka/1cpu")
    assert store.cell(1, cell, "", "v1") == 1 and store.run(1)["cells"][0]["sessions"] == 2
    store.finish_cell(1, "done", 1.0, None)
    assert store.run(1)["cells"][0]["seconds"] == 3.5
    assert store.run(fill(store))["owner_pid"] == os.getpid()
    Store(db, create=False)  # opened again: nothing left to migrate


def test_a_version_3_store_gets_each_cells_budget_from_its_key(db):
    # Schema version 3 kept a cell's own budget (its plan swept several) only in its key.
    older_store(
        db,
        3,
        keys=("nginx/tuned/7B/ka/1cpu/n100", "nginx/tuned/7B/ka/1cpu/0.5s", "nginx/tuned/7B/ka/1cpu"),
        status="done",
        owner_host="h",
        owner_pid=1,
        owner_started=1.0,
        owner_boot="b",
        plan_text=TWO_BUDGETS,
    )
    from httpbench import results

    # Read as it is (a command that only reads), then migrated (`run`): the same budgets.
    for create, version in ((False, 3), (True, schema.SCHEMA_VERSION)):
        store = Store(db, create=create)
        assert schema_version(db) == version
        stored = store.run(1)
        assert [(c["budget_requests"], c["budget_seconds"]) for c in stored["cells"]] == [
            (100, None),
            (None, 0.5),
            (None, None),
        ]
        run = results.of_run(stored)
        assert [(c.budget, c.requests_budget) for c in run.cells] == [("n100", 100), ("0.5s", None), ("", 100)]
    # A cell stored now keeps its budget in those columns, whatever its key says.
    cell_id = store.cell(1, FakeCell(key="nginx/tuned/7B/ka/1cpu/x", budget=Budget(requests=1000)), "", "v1")
    assert [c["budget_requests"] for c in store.run(1)["cells"] if c["id"] == cell_id] == [1000]


def test_a_version_4_store_reads_its_cells_as_plain_http(db):
    # Version 5 added a cell's protocol: everything stored before it was measured over http.
    older_store(db, 4, status="done", owner_host="h", owner_pid=1, owner_started=1.0, owner_boot="b")
    from httpbench import results

    for create, version in ((False, 4), (True, schema.SCHEMA_VERSION)):
        store = Store(db, create=create)
        assert schema_version(db) == version
        (cell,) = results.of_run(store.run(1)).cells
        assert (cell.protocol, cell.resumption, cell.group) == ("http", None, "7B, keep-alive, 1 CPU")
    # A TLS cell stored now keeps how it was spoken to, and its group says so.
    tls = FakeCell(
        key="nginx/tuned/7B/close/1cpu/https/tickets", keep_alive=False, protocol="https", resumption="tickets"
    )
    store.cell(1, tls, "", "v1", TlsSettings(version="1.3", resumption=("tickets",)))
    stored = results.of_run(store.run(1)).cells[-1]
    assert (stored.protocol, stored.tls_key, stored.tls_version, stored.resumption) == (
        "https",
        "ecdsa-p256",
        "1.3",
        "tickets",
    )
    assert stored.group == "7B, HTTPS (TLS 1.3, ecdsa-p256), no keep-alive, resumed by tickets, 1 CPU"


def test_a_version_5_store_reads_its_cells_with_one_stream_each(db):
    # Version 6 added a cell's streams per connection: before it every cell was HTTP/1.1.
    older_store(
        db,
        5,
        keys=("nginx/tuned/7B/ka/1cpu", "nginx/tuned/7B/ka/1cpu/https"),
        status="interrupted",
        owner_host="h",
        owner_pid=1,
        owner_started=1.0,
        owner_boot="b",
    )
    from httpbench import results

    for create, version in ((False, 5), (True, schema.SCHEMA_VERSION)):
        store = Store(db, create=create)
        assert schema_version(db) == version
        assert [c["streams"] for c in store.run(1)["cells"]] == [1, 1]
    # An HTTP/2 cell stored now is found again by its key on resume, its streams kept.
    h2 = FakeCell(key="nginx/tuned/7B/ka/1cpu/h2/10streams", protocol="h2", streams=10)
    cell_id = store.cell(1, h2, "", "v1", TlsSettings())
    assert store.cell(1, h2, "", "v1", TlsSettings()) == cell_id
    stored = results.of_run(store.run(1)).cells[-1]
    assert (stored.protocol, stored.streams, stored.sessions) == ("h2", 10, 2)
    assert stored.group == "7B, H2 (TLS negotiated, ecdsa-p256), keep-alive, 10 streams per connection, 1 CPU"


TWO_BUDGETS = """name = "tiny"
[[workload]]
size = 7
[levels]
list = [1]
[budget]
requests = [100, 1000]
"""


def schema_version(db: str) -> int:
    """The version `db` says it is in, read past Store."""
    from httpbench.store import database as store
    from sqlalchemy import create_engine

    engine = create_engine(store.url_of(db))
    with engine.connect() as conn:
        version = conn.exec_driver_sql("SELECT schema_version FROM meta").scalar()
    engine.dispose()
    return version


def test_reading_an_older_store_leaves_it_as_it_was(db):
    """runs, show, report and export only read: they read an older store as it is, the columns
    added since absent, so a read-only file or a database role that may only read can be shown.
    Only `run` migrates it."""
    version_1_store(db)
    store = Store(db, create=False)
    old = store.run(1)
    assert old["owner_pid"] is None and old["cells"][0]["sessions"] is None
    assert [len(c["rounds"]) for c in old["cells"]] == [1]
    assert [(r["id"], r["status"], r["cells"]) for r in store.runs()] == [(1, "running", 1)]
    assert schema_version(db) == 1


def test_a_role_that_may_only_read_can_show_an_older_store(postgres):
    url = postgres.database()
    version_1_store(url)
    reader = f"reader{postgres.made}"
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f"CREATE ROLE {reader} LOGIN")
        conn.execute(f"GRANT SELECT ON ALL TABLES IN SCHEMA public TO {reader}")
    store = Store(url.replace("bench@", f"{reader}@"), create=False)
    assert [len(c["rounds"]) for c in store.run(1)["cells"]] == [1]


def test_runs_opening_an_older_store_at_once_migrate_it_once(db):
    """Several `httpbench run` started together on an old store: one migrates it, the others
    wait and find it done (they used to add the same columns again: "duplicate column"). The
    test holds the table the migration alters while they start, so that all of them are at the
    migration when it lets go."""

    version_1_store(db)
    code = "import sys\nfrom httpbench.store.database import Store\nStore(sys.argv[1])"
    with holding_runs(db):
        runs = [subprocess.Popen([sys.executable, "-c", code, db], stderr=subprocess.PIPE, text=True) for _ in range(3)]
        time.sleep(2.5)  # under SQLite's 5 s wait for a lock
    errors = [run.communicate(timeout=60)[1] for run in runs]
    assert [run.returncode for run in runs] == [0] * 3, errors
    assert schema_version(db) == schema.SCHEMA_VERSION


@contextmanager
def holding_runs(db: str):
    """Hold a lock that keeps anyone else from altering the runs table, in a transaction of
    this process, until the block ends."""
    if "://" not in db:
        conn = sqlite3.connect(db, isolation_level=None)
        conn.execute("BEGIN IMMEDIATE")
        try:
            yield
        finally:
            conn.rollback()
            conn.close()
        return
    with psycopg.connect(db) as conn:
        conn.execute("LOCK TABLE runs IN ACCESS EXCLUSIVE MODE")
        yield
        conn.rollback()


def test_a_runs_owner_is_its_start_in_ticks_of_this_boot(tmp_path):
    """A start time in seconds since the epoch moves when the wall clock is stepped (the kernel's
    btime moves with it), which would show a live run as interrupted and let a second --resume
    in: the owner's start is kept in clock ticks after the boot, with the boot's id."""
    from httpbench.observe import procfs
    from httpbench.store import owner

    store = Store(str(tmp_path / "r.db"))
    run = store.run(store.start_run(FakePlan(), {}, {}))
    assert (run["owner_started"], run["owner_boot"]) == (procfs.stat(os.getpid()).started, procfs.boot_id())
    assert owner.owner_alive(run) is True and owner.as_seen(run)["status"] == "running"
    rebooted = {**run, "owner_boot": "an earlier boot"}  # the same pid and ticks name another process
    assert owner.owner_alive(rebooted) is False and owner.as_seen(rebooted)["status"] == "interrupted"


def test_unreachable_database_is_one_fast_line():
    started = time.monotonic()
    with pytest.raises(StoreError, match="cannot open the results database .*127.0.0.1:1.*server running") as failed:
        Store("postgresql://bench:secret@127.0.0.1:1/none")
    message = str(failed.value)
    assert "\n" not in message and "secret" not in message and time.monotonic() - started < 5


def test_a_writer_killed_mid_run_loses_nothing_it_committed(db):
    """kill -9 a process writing rounds as fast as it can: every round it reported committed is
    there, whole, and the database opens as before (SQLite rolls back its hot journal)."""
    writer = subprocess.Popen(
        [sys.executable, "-c", WRITER, db, json.dumps(measurement(1, 0))], stdout=subprocess.PIPE, text=True
    )
    try:
        run_id, cell_id = map(int, writer.stdout.readline().split())
        committed = [int(writer.stdout.readline()) for _ in range(30)]
        os.kill(writer.pid, signal.SIGKILL)
    finally:
        writer.kill()
        writer.wait()
    store = Store(db)
    done = store.rounds_done(cell_id)
    assert {(1, i) for i in committed} <= done
    assert done == {(1, i) for i in range(len(done))}  # no gap, nothing torn
    rounds = store.run(run_id)["cells"][0]["rounds"]
    assert all(r["measurement"] == rounds[0]["measurement"] for r in rounds)
    assert rounds[0]["measurement"]["latency"]["total"]["hdr"] == HDR_TOTAL


# The writer of the crash test: prints each round's index once add_round has returned (committed).
WRITER = """
import json, sys
from types import SimpleNamespace as NS
from httpbench.store.database import Store
store = Store(sys.argv[1])
m = json.loads(sys.argv[2])
run_id = store.start_run(NS(name="crash", text=""), {}, {})
cell_id = store.cell(run_id, NS(key="nginx/tuned/7B/ka/1cpu", server="nginx", profile="tuned",
                                workload=NS(label="7B"), keep_alive=True, cpus=1, budget=None, protocol="http",
                                resumption=None, streams=1, encoding=None, idle=0, slow=None,
                                slow_clients=0, events_label=""), "", "v1")
print(run_id, cell_id, flush=True)
for index in range(10**6):
    store.add_round(cell_id, 1, index, m)
    print(index, flush=True)
"""


def test_default_sqlite_directory_is_created_and_unknown_runs_named(tmp_path):
    store = Store(str(tmp_path / "httpbench-results" / "results.db"))
    assert (tmp_path / "httpbench-results" / "results.db").exists()
    fill(store)
    assert [r["plan_name"] for r in store.runs()] == ["tiny"] and store.runs()[0]["cells"] == 2
    with pytest.raises(StoreError, match="no run 7; recent runs: 1"):
        store.run(7)
