"""`httpbench run` for real: a short quick-shaped sweep against nginx and reference, stored and
shown; a sweep killed with SIGKILL and resumed loses and duplicates no round; a resumed run keeps
its CPUs and servers; a plan pinned to TLS 1.2 measures the reference server at it. And the
sweep's cluster logic on scripted loads: the client ceiling when a client host is lost, and each
client host's saturation."""

import re
import shlex
import signal
import sqlite3
import subprocess
import time
from contextlib import closing
from types import SimpleNamespace

import pytest
from conftest import HTTPBENCH, SHORT_CEILING, httpbench, quick_sweep, short_plan
from httpbench.store.database import Store

PLAN = """
name = "tiny"
description = "two servers, three levels, two rounds, 0.3 s each"
servers = ["nginx", "reference"]
profiles = ["tuned"]
keep_alive = [true]
server_cpus = [1]
rounds = 2
warmup = "0.1s"
[[workload]]
kind = "generated"
size = 7
name = "index.html"
[levels]
list = [1, 10, 50]
[budget]
duration = "0.3s"
"""


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
    # The verdict: nginx ranked, the only server a user deploys here; the reference server apart as
    # the client's ceiling, never its rival (no winner between them).
    assert re.search(r"^1 +nginx/tuned +[\d,]+ +100\.0%", done.stdout, re.M), done.stdout
    assert "ceiling (reference/tuned): " in done.stdout and "is fastest" not in done.stdout, done.stdout
    shown = httpbench("show", "1", "--db", str(db))
    assert shown.returncode == 0 and "nginx/tuned" in shown.stdout
    unknown = httpbench("show", "99", "--db", str(db))
    assert unknown.returncode == 2 and len(unknown.stderr.strip().splitlines()) == 1
    listed = httpbench("runs", "--db", str(db))
    assert listed.returncode == 0 and "tiny" in listed.stdout


def until_stored(db, rounds: int, sweep: subprocess.Popen) -> None:
    """Wait (two minutes at most) until `db` has `rounds` rounds stored by `sweep`, still running.
    Polled with sqlite3 alone, read-only: opening the Store each time took longer, on a busy
    host, than the tiny sweep's remaining rounds, and the signal then came after its end."""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and sweep.poll() is None:
        time.sleep(0.05)
        try:
            with closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=0.05)) as c:
                if c.execute("SELECT count(*) FROM rounds").fetchone()[0] >= rounds:
                    return
        except sqlite3.Error:  # the store or its tables not made yet, or locked by a write
            continue
    assert sweep.poll() is None, f"the sweep ended (exit {sweep.returncode}) before {rounds} round(s) were stored"
    raise AssertionError(f"{rounds} round(s) not stored within two minutes")


def test_resume_after_sigkill_loses_and_duplicates_nothing(plan_file, tmp_path):
    db = tmp_path / "results.db"
    sweep = subprocess.Popen(
        [*HTTPBENCH, "run", str(plan_file), "--db", str(db)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    until_stored(db, 3, sweep)
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


def test_a_bad_plan_or_database_is_one_line(tmp_path, plan_file):
    db = tmp_path / "results.db"
    bad = tmp_path / "bad.toml"
    bad.write_text(PLAN.replace("step", "stepp").replace("[levels]\nlist", "[levels]\nlisst"))
    done = httpbench("run", str(bad), "--db", str(db))
    assert done.returncode == 2 and "lisst" in done.stderr and "Traceback" not in done.stderr
    unreachable = httpbench("run", str(plan_file), "--db", "postgresql://127.0.0.1:1/none")
    assert unreachable.returncode == 2 and len(unreachable.stderr.strip().splitlines()) == 1


def interrupted_after_a_round(db, *args, sig=signal.SIGINT, code=130) -> str:
    """`httpbench run *args --db db`, given Ctrl-C (or `sig`) once a round is stored; its stderr.
    It must exit with `code`."""
    sweep = subprocess.Popen(
        [*HTTPBENCH, "run", *args, "--db", str(db)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    until_stored(db, 1, sweep)
    sweep.send_signal(sig)
    _, err = sweep.communicate(timeout=60)
    assert sweep.returncode == code, err[-2000:]
    return err


def test_ctrl_c_saves_and_prints_the_resume_command(plan_file, tmp_path):
    db = tmp_path / "results.db"
    err = interrupted_after_a_round(db, str(plan_file))
    assert f"httpbench run --resume 1 --db {db}" in err.replace("\n", "")
    run, stored = rounds_of(db, 1)
    assert run["status"] == "interrupted" and stored


def test_a_resumed_run_keeps_its_cpus_and_servers(plan_file, tmp_path):
    db = tmp_path / "results.db"
    err = interrupted_after_a_round(db, str(plan_file), "--server-cpus", "1", "--servers", "nginx")
    line = next(line for line in err.splitlines() if "Resume with: " in line)
    resume = shlex.split(line.split("Resume with: ")[1])[1:]
    assert resume == ["run", "--resume", "1", "--db", str(db), "--servers", "nginx"]
    moved = httpbench(*resume, "--server-cpus", "0")
    assert moved.returncode == 2 and "run 1 ran its server on CPU(s) 1" in moved.stderr
    assert len(moved.stderr.strip().splitlines()) == 1, moved.stderr
    done = httpbench(*resume)
    assert done.returncode == 0, done.stderr[-2000:]
    run, rounds = rounds_of(db, 1)
    assert run["status"] == "done" and {key.split("/")[0] for key, _, _ in rounds} == {"nginx"}
    assert len(rounds) == 3 * 2 == len(set(rounds))
    # Every round's engine ran on the CPU the server was not given, before the stop and after.
    assert {tuple(r["measurement"]["spec"]["cpus"]) for c in run["cells"] for r in c["rounds"]} == {(0,)}


# ssl-impact, cut down to nginx and reference, is run through the CLI by test_report_tls's tls_run
# fixture, which fails when any of its cells does.
# So is dynamic, cut down to nginx and apache2-prefork, by test_php_plan's dynamic_run.
@pytest.mark.parametrize(
    "name", ["quick", "seed-2016", "seed-2011", "seed-2010-rounds", "seed-2007-image", "tfb-plaintext"]
)
def test_a_shortened_version_of_each_built_in_plan_runs(name, tmp_path, monkeypatch):
    # The plan as shipped, cut down: two servers it names (or reference), its first two levels kept
    # small, one round, short budgets, the client ceiling as short as the CLI's in the tests.
    # Everything else (workloads, keep-alive, model, client, directives) stays as the plan says.
    import dataclasses

    from httpbench import servers
    from httpbench.placement import Placement
    from httpbench.plan import builtin as plans
    from httpbench.plan.model import Budget, Rounds
    from httpbench.sweep import ceiling
    from httpbench.sweep.sweep import Sweep

    for constant, value in SHORT_CEILING.items():
        monkeypatch.setattr(ceiling, constant, value)

    p = plans.load(name)
    wanted = [s for s in (p.servers or servers.names()) if s in servers.names()][:2] or ["reference"]
    short = dataclasses.replace(
        p,
        servers=tuple(wanted),
        profiles=p.profiles[:1],
        server_cpus=(1,),
        keep_alive=p.keep_alive[:2],
        levels=tuple(min(level, 20) for level in p.levels[:2]),
        rounds=Rounds(1, 1),
        warmup=0.0,
        budget=Budget(requests=200) if p.budget.requests else Budget(duration=0.3),
        budgets=tuple(Budget(requests=min(b.requests, 200)) for b in p.budgets[:2] if b.requests),
    )
    store = Store(str(tmp_path / "r.db"))
    sweep = Sweep(short, store, Placement.choose("0", "1"), only=wanted)
    run_id = sweep.start()
    sweep.run(run_id)
    run = store.run(run_id)
    assert run["status"] == "done" and run["cells"]
    for cell in run["cells"]:
        assert cell["status"] == "done", (cell["key"], cell["error"])
        assert all(r["measurement"]["requests"]["completed"] for r in cell["rounds"])


# ---------------------------------------------------------------- the sweep's cluster logic


class ScriptedCluster:
    """A cluster whose server host is this one and whose levels answer from `loads`, merged
    measurements in the order asked for: the sweep's own logic, without Dask."""

    address = "tls://scripted:8786"

    def __init__(self, loads: list) -> None:
        self.loads = loads

    def server_host_name(self) -> str:
        return "here"

    def on_server_host(self, function, *args):
        return function(*args)

    def server_host(self, cpus):
        return SimpleNamespace(
            start=lambda *args, **kwargs: SimpleNamespace(url="http://127.0.0.1:1/"), stop=lambda: None
        )

    def run(self, spec: dict) -> dict:
        return self.loads.pop(0)


def scripted_sweep(tmp_path, plan_file, loads: list, on_client_loss: str = "continue", notes=None):
    from httpbench.placement import Placement
    from httpbench.plan import builtin as plans
    from httpbench.sweep.sweep import Progress, Sweep

    return Sweep(
        plans.load(str(plan_file)),
        Store(str(tmp_path / "r.db")),
        Placement((1,), (), False),
        cluster=ScriptedCluster(loads),
        on_client_loss=on_client_loss,
        progress=Progress(on_note=(notes if notes is not None else []).append),
    )


HTTP = ("http", True, None, 1)  # the ceiling plain HTTP cells share (target.kind)


def merged(per_second: float, lost=(), busy: float = 0.5) -> dict:
    """A cluster level's merged report, its one client host's busiest thread `busy`."""
    return {"requests": {"per_second": per_second}, "lost_hosts": list(lost), "hosts": [client_host("c1", busy, 0.0)]}


def test_a_plan_pinned_to_tls_1_2_measures_the_reference_server_at_it(tmp_path):
    # The reference server pins the version as the other servers do: its cell is made, its
    # verification sees TLS 1.2 negotiated with a client that offers both, and the load's
    # handshakes are TLS 1.2.
    pinned = '[tls]\nversion = "1.2"\n'
    plan = short_plan(tmp_path, '["reference"]', "4", "requests = 400", extra='protocols = ["https"]', tables=pinned)
    notes: list = []
    sweep = quick_sweep(plan, tmp_path / "r.db", notes)
    assert [(c.server, c.protocol) for c in sweep.cells] == [("reference", "https")], notes
    run_id = sweep.start()
    sweep.run(run_id)
    (cell,) = sweep.store.run(run_id)["cells"]
    assert cell["status"] == "done", cell["error"]
    (measured,) = [r["measurement"] for r in cell["rounds"]]
    assert measured["tls"]["version"] == "1.2" and measured["tls"]["verified"], measured["tls"]
    assert measured["requests"]["completed"] == 400 and measured["errors_total"] == 0


def test_a_client_host_lost_while_measuring_the_ceiling_has_it_measured_again(tmp_path, plan_file):
    from httpbench.sweep.errors import Stopped

    # Two hosts measure 1000 req/s; c2 is lost part-way through the next round; c1 alone does 650
    # at best. The hosts that load the rest of the run are c1's: its ceiling is theirs.
    loads = [merged(1000), merged(400, ["c2"]), merged(600), merged(650), merged(640)]
    notes = []
    assert scripted_sweep(tmp_path, plan_file, loads, notes=notes).measure_ceiling(HTTP) == 650
    assert loads == [] and "client host(s) c2 lost while measuring the client ceiling" in notes[0]
    stopping = scripted_sweep(tmp_path, plan_file, [merged(1000), merged(400, ["c2"])], on_client_loss="stop")
    with pytest.raises(Stopped, match=r"c2 lost while measuring the client ceiling \(--on-client-loss stop\)"):
        stopping.measure_ceiling(HTTP)


def client_host(name: str, busy: float, waiting: float) -> dict:
    """A client host's part of a cluster level: its engine's report, two threads on two CPUs."""
    return {
        "host": name,
        "started_at": 0.0,
        "report": {
            "duration_s": 1.0,
            "requests": {"per_second": 5000.0},
            "host": {"cpus_allowed": [0, 1]},
            "client": {
                "busy_share": busy,
                "waiting_share": waiting,
                "user_s": 0.6,
                "sys_s": 0.3,
                "threads": [{"busy_share": busy, "waiting_share": waiting}, {"busy_share": 0.2, "waiting_share": 0.0}],
            },
        },
    }


def test_one_saturated_client_host_flags_the_level_naming_that_host():
    from httpbench.judge.honesty import cluster_level

    # c1's busiest thread is half busy and waits for its CPU most of the rest; c2 is at ease.
    level = {
        "requests": {"per_second": 10_000.0},
        "hosts": [client_host("c1", 0.5, 0.45), client_host("c2", 0.3, 0.02)],
        "lost_hosts": [],
        "absent_hosts": [],
    }
    (flag,) = [f for f in cluster_level(level, 100_000.0) if f]
    assert flag.kind == "client_saturated"
    assert flag.reason == "client host c1: busiest client thread 50.0% busy and 45.0% waiting for its CPU (> 90%)"
    level["hosts"][0] = client_host("c1", 0.5, 0.02)
    assert [f for f in cluster_level(level, 100_000.0) if f] == []


def test_a_resumed_auto_level_is_judged_with_its_stored_rounds(tmp_path, plan_file):
    # rounds = "auto": level 1 has three stored rounds that agree, so it is done; a resume measures
    # only the levels it lacks (three rounds each here, all alike), not more of level 1.
    plan_file.write_text(
        PLAN.replace("rounds = 2", 'rounds = "auto"\nmax_rounds = 6').replace('warmup = "0.1s"', "warmup = 0")
    )
    sweep = scripted_sweep(tmp_path, plan_file, [])
    host = SimpleNamespace(
        start=lambda *args, **kwargs: SimpleNamespace(url="http://127.0.0.1:1/", config_text="", version="v1"),
        verify=lambda: None,
        watch=lambda: None,
        alive=lambda: True,
        stop=lambda: None,
    )
    sweep.cluster.server_host = lambda cpus: host
    sweep.measure_ceiling = lambda kind: None
    measured = []
    sweep._round = lambda cell, url, host, level: measured.append(level) or stored_round(1000.0)
    sweep.cells = sweep.cells[:1]
    run_id = sweep.start()
    cell_id = sweep.store.cell(run_id, sweep.cells[0], "", "v1")
    for index, rps in enumerate((1000.0, 1001.0, 999.0)):
        sweep.store.add_round(cell_id, 1, index, stored_round(rps))
    sweep.run(run_id)
    assert measured == [10, 10, 10, 50, 50, 50]


def stored_round(per_second: float) -> dict:
    """A round of a cluster's level (the scripted sweep's) that lost no client host."""
    from test_store import measurement

    m = measurement(1, 0)
    m["requests"]["per_second"], m["flags"], m["lost_hosts"] = per_second, [], []
    return m


def test_each_kind_of_connection_has_a_ceiling_of_its_own():
    # A client that opens a connection per request is bounded far below its keep-alive rate: a
    # keep-alive ceiling would never call such a cell client-bound.
    from httpbench.sweep import target

    assert target.kind("http", False, None) != target.kind("http", True, None) == HTTP
    assert target.describe(target.kind("http", False, None)) == " without keep-alive"
    assert target.describe(target.kind("https", True, None)) == " over HTTPS"
    resumed = target.kind("https", False, "tickets")
    assert target.describe(resumed) == " over HTTPS without keep-alive, resumed by tickets"
    # Over HTTP/2 each streams count is a kind: many streams cost the client less per request.
    assert target.kind("h2", True, None, 10) != target.kind("h2", True, None, 100)
    assert target.kind("https", True, None, 10) == target.kind("https", True, None)
    assert target.describe(target.kind("h2", True, None, 10)) == " over H2 with 10 streams per connection"


def test_an_http2_ceiling_is_measured_against_an_h2_server_and_its_spec_asks_for_streams(tmp_path):
    # The reference server speaks no HTTP/2: over h2c the ceiling is measured against the first
    # h2 server installed, the note and the flags name it, and each load asks for the streams.
    from httpbench import servers
    from httpbench.judge import honesty
    from httpbench.servers import ProtocolUnsupported
    from httpbench.sweep import target
    from httpbench.sweep.ceiling import H2_CEILING_SERVERS

    path = tmp_path / "h2c.toml"
    path.write_text(PLAN.replace("keep_alive = [true]", 'keep_alive = [true]\nprotocols = ["h2c"]\nstreams = [10]'))
    with pytest.raises(ProtocolUnsupported, match="^reference offers no cleartext HTTP/2"):
        scripted_sweep(tmp_path, path, [])  # the plan names a server without h2c
    path.write_text(path.read_text().replace('servers = ["nginx", "reference"]', 'servers = ["nginx"]'))
    specs: list = []
    notes: list = []
    # The client was the limit of the ceiling's best round, so it is the client's ceiling.
    loads = [merged(900, busy=0.95), merged(1000, busy=0.96), merged(950, busy=0.5)]
    sweep = scripted_sweep(tmp_path, path, loads, notes=notes)
    sweep.load = lambda spec: specs.append(spec) or sweep.cluster.loads.pop(0)
    assert [(c.server, c.key) for c in sweep.cells] == [("nginx", "nginx/tuned/7B/ka/1cpu/h2c/10streams")]
    kind = target.kind("h2c", True, None, 10)
    offering = [name for name in H2_CEILING_SERVERS if servers.get(name).protocol_refusal("h2c") is None]
    against = next(name for name in offering if name in sweep.installed)
    assert against != "reference"
    assert sweep.measure_ceiling(kind) == 1000 and sweep.ceiling.against[kind] == against
    assert f"against {against} over H2C with 10 streams per connection): 1,000 req/s" in notes[-1]
    assert {(s["http2"], s["streams"]) for s in specs} == {(True, 10)} and "tls" not in specs[0]
    (flag,) = [f for f in honesty.cluster_level(dict(merged(990), hosts=[], absent_hosts=[]), 1000, against) if f]
    assert f"(1,000 req/s against {against})" in flag.reason


def test_on_a_cluster_each_client_host_keeps_the_cells_streams_per_connection():
    # Connections are split over the client hosts as over HTTP/1.1; streams per connection are not.
    from httpbench.load import engine

    spec = {"urls": ["http://127.0.0.1:1/"], "connections": 10, "http2": True, "streams": 100, "stop": {"duration": 1}}
    shares = engine.split_spec(spec, 2)
    assert [(s["connections"], s["http2"], s["streams"]) for s in shares] == [(5, True, 100)] * 2


def test_an_http2_ceiling_its_server_set_the_pace_of_is_no_client_ceiling(tmp_path):
    # Against h2o (the reference server has no HTTP/2) the client's busiest thread was half busy:
    # h2o was the limit, so its throughput is h2o's, and the cells are judged by the client's
    # own figures only; a level at that throughput is not client_saturated.
    from httpbench.sweep import target

    path = tmp_path / "h2c.toml"
    path.write_text(
        PLAN.replace("keep_alive = [true]", 'keep_alive = [true]\nprotocols = ["h2c"]\nstreams = [10]').replace(
            'servers = ["nginx", "reference"]', 'servers = ["nginx"]'
        )
    )
    notes: list = []
    sweep = scripted_sweep(tmp_path, path, [merged(900), merged(1000), merged(950, busy=0.95)], notes=notes)
    kind = target.kind("h2c", True, None, 10)
    against = sweep.ceiling.server("h2c", lambda name: name in sweep.installed and not sweep.refusal(name, "h2c"))
    assert sweep.measure_ceiling(kind) is None and kind not in sweep.ceiling.against
    assert notes[-1] == (
        f"no client ceiling over H2C with 10 streams per connection: {against}, the fastest HTTP/2 server "
        f"here, was the limit of its own ceiling run (1,000 req/s; the client's busiest thread 50.0% busy or waiting "
        "for its CPU), "
        "so the client is judged by its own figures"
    )
