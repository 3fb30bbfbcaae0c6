"""Slow and idle clients through a plan and into the report (issue 28), one run against real
apache2-event, tuned, whose defences the plan sets short so the levels stay short: mod_reqtimeout
cuts a request header after 2 s (4 s at most, for 500 bytes a second, which a slowloris never
sends) and KeepAliveTimeout closes an idle keep-alive connection after 1 s. The cut_after
figures read within those limits; the idle connections are seen closed by the server, and
when; the page draws the attack charts in the real Chromium; show, the exports and compare carry
the figures, an attacked cell never ranked or compared against one without its attack."""

import csv
import io
from dataclasses import replace

import pytest
from conftest import httpbench, quick_sweep, short_plan
from httpbench import servers
from httpbench.report import verdict
from httpbench.results import hostile
from test_report import draw_offline

SLOW, IDLE = 40, 40
HEADER_S, HEADER_MAX_S, KEEPALIVE_S = 2, 4, 1
# What the server's own timers may add on a loaded machine (this one shared, at loads of 10):
# apache checks its timeouts from a listener thread, not at the instant. Still well short of the
# tuned profile's own 10 s and Debian's 20 s.
SLACK_S = 4.0
DEFENCES = (
    '[server.apache2-event]\ndirectives = ["RequestReadTimeout handshake=2 '
    f'header={HEADER_S}-{HEADER_MAX_S},MinRate=500", "KeepAliveTimeout {KEEPALIVE_S}"]\n'
)


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    if not servers.get("apache2-event").installed():
        pytest.skip("apache2-event is not installed")
    folder = tmp_path_factory.mktemp("hostile-report")
    plan = short_plan(
        folder,
        '["apache2-event"]',
        "5",
        'duration = "4s"',
        extra=f'attacks = [[0, "none"], [0, "headers"], [{IDLE}, "none"]]\nslow_clients = {SLOW}',
        tables=DEFENCES,
    )
    plan.write_text(plan.read_text().replace('profiles = ["default"]', 'profiles = ["tuned"]'))
    notes: list = []
    db = folder / "db.sqlite"
    sweep = quick_sweep(plan, db, notes)
    measured = sweep.run(sweep.start())
    assert measured.status == "done", (notes, [(c.key, c.error) for c in measured.cells])
    return measured, db, folder


def _cell(run, suffix):
    return next(c for c in run.cells if c.key.endswith(suffix))


def test_mod_reqtimeout_cuts_slowloris_within_its_configured_time(run, measured):
    measured_run, _, _ = run
    attacked = _cell(measured_run, f"/slowloris-{SLOW}")
    (f,) = hostile.slow_figures(attacked, measured_run.cells)
    p50, most = f.cut_after_ms
    measured(f"apache2-event/tuned, header={HEADER_S}-{HEADER_MAX_S}: cut {f.cut} after {p50} ms (median), {most} max")
    assert f.cut > 0, f.level.slow_clients
    # Never before the header's first limit; never past its extension, which 500 bytes a second
    # would earn and a slowloris does not send.
    assert HEADER_S * 1000 * 0.9 <= p50 <= most <= (HEADER_MAX_S + SLACK_S) * 1000, f.level.slow_clients
    assert f.unattacked is not None


def test_idle_connections_closed_at_the_keepalive_timeout_are_seen_closed(run, measured):
    measured_run, _, _ = run
    (f,) = hostile.idle_figures(_cell(measured_run, f"/idle-{IDLE}"), measured_run.cells)
    idle = f.level.idle_connections
    measured(f"apache2-event/tuned, KeepAliveTimeout {KEEPALIVE_S}: {idle['closed_by_server']} of {IDLE} closed")
    assert idle["closed_by_server"] > 0 and f.held < IDLE, idle
    after = idle["closed_after_ms"]
    assert KEEPALIVE_S * 1000 * 0.9 <= after["p50"] <= (KEEPALIVE_S + SLACK_S) * 1000, idle


def test_the_page_draws_the_attack_charts_and_the_figures_are_carried(run):
    measured_run, db, folder = run
    page = folder / "report.html"
    made = httpbench("report", str(measured_run.id), "--db", str(db), "-o", str(page))
    assert made.returncode == 0, made.stderr
    problems, drawn, _ = draw_offline(page, folder / "report.png")
    marks = dict(drawn)
    assert problems == [], problems
    for chart in ("slow_share", "slow_p99", "slow_states", "slow_cut"):
        assert marks.get(f"chart-{chart}", 0) > 0, drawn
    # Every idle connection closed before the level's end: no cost per connection to draw
    # (test_hostile_run draws nginx's, which holds them).
    assert "chart-idle_memory" not in marks, drawn

    shown = httpbench("show", str(measured_run.id), "--db", str(db))
    said = " ".join(shown.stdout.split())
    assert f"With {SLOW} slowloris connections open" in said and "and cut " in said, shown.stdout
    assert f"{IDLE} idle connections beside apache2-event/tuned's load, none held at its end" in said, said
    assert f"it closed {IDLE} of them after" in said, said
    # Each attacked cell's levels with their figures under the attack.
    assert "cut p50 ms" in said and "bytes each" in said, shown.stdout

    exported = httpbench("export", str(measured_run.id), "--db", str(db), "--format", "csv")
    rows = {r["cell"]: r for r in csv.DictReader(io.StringIO(exported.stdout))}
    slow = rows[_cell(measured_run, f"/slowloris-{SLOW}").key]
    level = _cell(measured_run, f"/slowloris-{SLOW}").levels[0]
    assert float(slow["slow_cut_after_p50_ms"]) > 0, slow
    assert float(slow["succeeded_share"]) == pytest.approx(level.succeeded_share), slow
    assert float(rows[_cell(measured_run, f"/idle-{IDLE}").key]["idle_closed_by_server"]) > 0

    compared = httpbench("compare", str(measured_run.id), str(measured_run.id), "--db", str(db))
    assert compared.returncode == 0, compared.stderr
    out = " ".join(compared.stdout.split())
    assert "slow and idle clients (side by side, no verdict)" in out and "slow connections cut" in out, out


def test_a_cell_under_attack_is_never_ranked_or_compared_against_one_without(run):
    measured_run, _, _ = run
    for v in verdict.verdicts([measured_run]):
        assert len({(c.idle, c.slow) for c in v.group.cells}) == 1, v.group.name
    # compare matches cells by key, which names the attack: a run whose only cell is the plain one
    # sets nothing beside the attacked cells.
    plain = [c for c in measured_run.cells if not (c.idle or c.slow)]
    assert hostile.attack_changes(measured_run, replace(measured_run, cells=plain)) == []
    assert {c.cell for c in hostile.attack_changes(measured_run, measured_run)} == {
        c.key for c in measured_run.cells if c.idle or c.slow
    }
