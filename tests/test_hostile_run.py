"""Slow and idle clients through a plan, against real servers on loopback (issue 28):
apache2-prefork/default, whose 150 processes slowloris holds, starves its normal clients and
nginx/default does not; idle connections held beside nginx's load cost it memory, measured per
connection. Each level is stored as measured, its cell goes on, and show says so in words."""

from conftest import httpbench, installed_or_skip, quick_sweep, short_plan
from httpbench import results
from httpbench.report import attacks
from httpbench.results import hostile
from httpbench.store.database import Store
from test_report import draw_offline

# More slowloris clients than apache2-prefork's MaxRequestWorkers (150, as shipped): each holds a
# process until mod_reqtimeout cuts it (20 s and more as shipped), longer than a level here.
SLOWLORIS = 300
IDLE = 5000


def _run(tmp_path, plan):
    notes: list = []
    db = tmp_path / "db.sqlite"
    sweep = quick_sweep(plan, db, notes)
    run_id = sweep.start()
    measured = sweep.run(run_id)
    assert measured.status == "done", (notes, [(c.key, c.error) for c in measured.cells])
    return measured, db, run_id


def test_slowloris_starves_apache2_prefork_and_not_nginx(tmp_path, measured):
    installed_or_skip("apache2-prefork", "nginx")
    plan = short_plan(
        tmp_path,
        '["apache2-prefork", "nginx"]',
        "10",
        'duration = "2s"',
        extra=f'slow = ["none", "headers", "read"]\nslow_clients = {SLOWLORIS}',
    )
    run, db, run_id = _run(tmp_path, plan)
    cells = {c.key: c for c in run.cells}
    attacked = {c.server: c for c in cells.values() if c.slow == "headers"}
    assert {c.key for c in attacked.values()} == {
        f"{s}/default/7B/ka/1cpu/slowloris-{SLOWLORIS}" for s in ("apache2-prefork", "nginx")
    }
    figures = {s: hostile.slow_figures(c, run.cells)[0] for s, c in attacked.items()}
    for server, f in figures.items():
        slow = f.level.slow_clients
        assert slow["mode"] == "headers" and slow["connections"] == SLOWLORIS, slow
        assert f.unattacked is not None and f.unattacked.succeeded_share == 1.0, server
        # Starving the load is a finding: stored as measured, never a cell stopped.
        assert "ended_early" not in f.level.flags and attacked[server].finished
        measured(f"{server} slowloris succeeded share: {f.level.succeeded_share}")
        measured(f"{server} slowloris req/s share: {f.rps_share}")
    assert figures["apache2-prefork"].level.succeeded_share < 0.5
    assert figures["nginx"].level.succeeded_share == 1.0
    # Never ranked against a cell without the attack: groups of their own.
    assert attacked["nginx"].group != cells["nginx/default/7B/ka/1cpu"].group

    shown = httpbench("show", str(run_id), "--db", str(db))
    assert shown.returncode == 0, shown.stderr
    said = " ".join(shown.stdout.split())
    assert f"With {SLOWLORIS} slowloris connections open" in said, shown.stdout
    assert "nginx/default answered all of them" in said, shown.stdout
    # Slow readers read the 16 MB file served beside the workload: held, never read whole.
    reader = cells[f"nginx/default/7B/ka/1cpu/slow-read-{SLOWLORIS}"].levels[0].slow_clients
    assert reader["mode"] == "read" and reader["held"] == SLOWLORIS and reader["answered"] == 0, reader
    exported = httpbench("export", str(run_id), "--db", str(db), "--format", "csv")
    assert exported.returncode == 0 and "slow_cut" in exported.stdout.splitlines()[0], exported.stderr


def test_idle_connections_cost_nginx_memory_per_connection(tmp_path, measured):
    installed_or_skip("nginx")
    # Tuned: nginx as shipped takes 768 connections a worker (worker_connections), fewer than
    # these, and is seen refusing the rest.
    plan = short_plan(tmp_path, '["nginx"]', "10", 'duration = "1s"', extra=f"idle_connections = [0, {IDLE}]")
    plan.write_text(plan.read_text().replace('profiles = ["default"]', 'profiles = ["tuned"]'))
    run, db, run_id = _run(tmp_path, plan)
    beside = next(c for c in run.cells if c.idle)
    assert beside.key.endswith(f"/idle-{IDLE}")
    f = hostile.idle_figures(beside, run.cells)[0]
    assert f.alone is not None and f.held > IDLE * 0.9, f.level.idle_connections
    # nginx documents about 250 bytes per inactive keep-alive connection (10,000 take 2.5 MB);
    # the PSS of its worker also counts the connection's buffers, so the figure is reported only.
    measured(
        f"nginx/tuned, {f.held:,} idle connections: {f.memory_bytes:,} bytes of PSS, "
        f"{f.bytes_per_connection:,.0f} bytes each (nginx documents ~250), closed by the server {f.closed_by_server}"
    )
    assert f.memory_bytes is not None and f.memory_bytes > 0
    (said,) = attacks.idle_connections([run])
    assert said.startswith(f"{IDLE:,} idle connections cost nginx/tuned ") and "closed none of them" in said, said
    stored = results.load(Store(str(tmp_path / "db.sqlite")), run.id)
    assert [c.idle for c in stored.cells] == [0, IDLE]
    # The report draws its memory per idle connection, in the real Chromium.
    page = tmp_path / "report.html"
    made = httpbench("report", str(run_id), "--db", str(db), "-o", str(page))
    assert made.returncode == 0, made.stderr
    problems, drawn, _ = draw_offline(page, tmp_path / "report.png")
    assert problems == [] and dict(drawn).get("chart-idle_memory", 0) > 0, (problems, drawn)
