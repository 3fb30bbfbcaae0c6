"""Levels measure what their name says: a keep-alive level's window holds requests, not its
connects and TLS handshakes (the engine's warm-up of the connections, passed by the sweep), and a
cell named "resumed by tickets" is ranked so only where its handshakes resumed. The ssl-impact
plan shortened to its HTTPS cells on nginx, lighttpd and h2o, swept in this process; a TLS nginx
loaded by the engine alone for 1 s and 4 s. Every load targets 127.0.0.1, bounded by its plan's
budget or -d and a subprocess timeout."""

import json
import subprocess
from importlib import resources

import pytest
from conftest import binary, quick_sweep, tls_nginx
from httpbench import results, servers
from httpbench.report.verdict import verdicts
from httpbench.results.comparison import groups

SERVERS = ["nginx", "lighttpd", "h2o"]
PLAN = (
    resources.files("httpbench")
    .joinpath("plan/plans/ssl-impact.toml")
    .read_text()
    .replace('name = "ssl-impact"', 'name = "ssl-impact-warmed"')
    .replace('profiles = ["tuned"]', f'servers = {json.dumps(SERVERS)}\nprofiles = ["tuned"]')
    .replace('protocols = ["http", "https"]', 'protocols = ["https"]')
    .replace("list = [1, 10, 100, 500]", "list = [10, 100]")
    .replace('duration = "1s"', 'duration = "0.5s"')
    .replace('warmup = "0.2s"', 'warmup = "0.1s"')
)


@pytest.fixture(scope="module")
def swept(tmp_path_factory):
    """The shortened plan swept: (the sweep, its run id)."""
    missing = [name for name in SERVERS if not servers.get(name).installed()]
    if missing:
        pytest.fail(f"{', '.join(missing)} not installed: {servers.get(missing[0]).install_command()}")
    base = tmp_path_factory.mktemp("levels-warmed")
    plan = base / "plan.toml"
    plan.write_text(PLAN)
    assert "list = [10, 100]" in PLAN and 'protocols = ["https"]' in PLAN
    notes: list = []
    sweep = quick_sweep(plan, base / "r.db", notes)
    run_id = sweep.start()
    sweep.run(run_id)
    return sweep, run_id


def _cells(swept):
    sweep, run_id = swept
    cells = sweep.store.run(run_id)["cells"]
    assert {c["status"] for c in cells} == {"done"}, [(c["key"], c["error"]) for c in cells]
    return cells


def test_every_keep_alive_round_was_measured_after_its_connections_were_open(swept):
    kept_alive = [c for c in _cells(swept) if c["keep_alive"]]
    assert len(kept_alive) == len(SERVERS)
    for cell in kept_alive:
        for r in cell["rounds"]:
            m = r["measurement"]
            assert m["spec"]["warmup_connections"], cell["key"]
            tls, c = m["tls"], m["connections"]
            # No handshake inside the window but for a connection the server closed (nginx
            # after 1,000 requests on one): opened again, and so shaken hands again.
            handshakes = tls["handshakes_full"] + tls["handshakes_resumed"]
            assert handshakes <= c["opened"] <= c["server_closes"], (cell["key"], r["level"], tls, c)


def test_without_keep_alive_full_handshakes_stay_inside_the_window(swept):
    full = [c for c in _cells(swept) if not c["keep_alive"] and c["key"].endswith("/none")]
    assert len(full) == len(SERVERS)
    for cell in full:
        for r in cell["rounds"]:
            m = r["measurement"]
            assert not m["spec"]["warmup_connections"], cell["key"]
            assert m["tls"]["handshakes_full"] >= m["requests"]["completed"] > 0, (cell["key"], m["tls"])


def test_a_cell_resumed_under_95_percent_is_flagged_and_not_ranked_as_resumed(swept):
    sweep, run_id = swept
    resumed = {c["key"].split("/")[0]: c for c in _cells(swept) if c["key"].endswith("/tickets")}
    assert set(resumed) == set(SERVERS)
    for server, cell in resumed.items():
        for r in cell["rounds"]:
            m = r["measurement"]
            assert m["spec"]["warmup_connections"], cell["key"]
            # The first wave's full handshakes were the warm-up's.
            tls, flags = m["tls"], {f["kind"]: f["reason"] for f in m["flags"]}
            share = tls["handshakes_resumed"] / (tls["handshakes_full"] + tls["handshakes_resumed"])
            if server == "nginx":
                # nginx sends a new ticket with every resumed handshake: every one resumes.
                assert share >= 0.95 and "not_resumed" not in flags, (r["level"], tls, flags)
            elif r["level"] == 10:
                # lighttpd and h2o send two tickets per full handshake and none on a resumed one:
                # used once each, two handshakes in three resume (0.66-0.69 here).
                assert share < 0.9 and "not_resumed" in flags, (server, tls, flags)
                assert f"{tls['handshakes_resumed']:,} of" in flags["not_resumed"], flags
    run = results.load(sweep.store, run_id)
    (group,) = [g for g in groups(run.measured) if all(c.resumption == "tickets" for c in g.cells)]
    assert [c.server for c in group.ranked()] == ["nginx"]
    lighttpd = next(c for c in group.cells if c.server == "lighttpd")
    assert "so it is not ranked as resumed by tickets" in group.incomplete(lighttpd)
    # The verdict's ranking table agrees: nginx alone is ranked, the others listed unranked.
    (verdict,) = [v for v in verdicts([run]) if v.group.name == group.name]
    assert [p.cell.server for p in verdict.places] == ["nginx"], verdict.places
    assert sorted(c.server for c in verdict.unranked) == ["h2o", "lighttpd"]


def _rps(server, seconds: str) -> float:
    done = subprocess.run(
        [
            str(binary("httpbench-load")), "--json", "--cacert", str(server.ca), "-c", "100", "-d", seconds,
            "--warmup-connections", "--cpus", "1", server.url() + "index.html",
        ],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    r = json.loads(done.stdout)
    assert r["tls"]["handshakes_full"] == 0, r["tls"]
    return r["requests"]["per_second"]


def test_a_one_second_tls_keep_alive_level_reads_as_a_four_second_one(tmp_path):
    # Before the warm-up, 1-second runs at 100 connections read 28.0-28.8k req/s against
    # 35.6-36.4k for 4-second ones here: the handshakes were measured. Interleaved, best of two
    # each, compared loosely: the machine is shared.
    with tls_nginx(tmp_path / "nginx", {"index.html": b"hello!\n"}) as server:
        runs = {seconds: [] for seconds in ("1s", "4s")}
        for _ in range(2):
            for seconds, rps in runs.items():
                rps.append(_rps(server, seconds))
    short, long = max(runs["1s"]), max(runs["4s"])
    assert abs(short / long - 1) < 0.25, runs
