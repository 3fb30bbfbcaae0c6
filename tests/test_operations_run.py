"""Operations under load through a plan, against real servers on loopback (issue 29): nginx
reloaded under an open loop keeps serving, each reload verified (master kept, old workers gone,
answers verified after), its cost read from the engine's 100 ms series; apache2-event's graceful
restart and restart, each counted as it happened (the measurement decides which loses requests,
the test only that each is counted); a level through planned events is never flagged crashed,
server_restarted or ended_early; a server without an action is refused in one line."""

import json

from conftest import httpbench, installed_or_skip, quick_sweep, refused_run, short_plan
from httpbench.report import operations as said
from httpbench.results.operations import by_action
from test_report import draw_offline

OPEN = 'model = "open"\n'


def _run(tmp_path, plan):
    notes: list = []
    sweep = quick_sweep(plan, tmp_path / "db.sqlite", notes)
    run = sweep.run(sweep.start())
    assert run.status == "done", (notes, [(c.key, c.error) for c in run.cells])
    return run


def test_nginx_reloads_under_load_are_verified_and_cost_what_the_fine_series_says(tmp_path, measured):
    installed_or_skip("nginx")
    events = '[[event]]\naction = "reload"\nat = "1s"\nevery = "1s"\ncount = 3\n'
    plan = short_plan(tmp_path, '["nginx"]', "500", 'duration = "5s"', extra=OPEN + events)
    run, db = _run(tmp_path, plan), str(tmp_path / "db.sqlite")
    (cell,) = run.cells
    assert cell.key == "nginx/default/7B/ka/1cpu/reload@1s+1sx3" and cell.events
    (level,) = cell.levels
    assert not {"crashed", "server_restarted", "ended_early"} & set(level.flags), level.flags
    (reloads,) = by_action(level.operations)
    assert reloads.performed == 3 and not reloads.failed_events
    for event in reloads.events:
        assert event.ok and event.master == "kept" and event.workers_replaced >= 1, event
        assert event.took_s is not None and event.window is not None and event.window.requests > 0, event
        measured(f"nginx reload: took {event.took_s:.3f} s, failed {event.failed}, retryable {event.retryable}")
    # Ten points a second, the rounds' whole load.
    assert 45 <= len(level.fine_series) <= 55, len(level.fine_series)
    (sentence,) = said.sentences([run])
    assert sentence.startswith("Through 3 reloads at 500 requests/s (7B, keep-alive, 1 CPU"), sentence
    assert "nginx/default failed" in sentence, sentence
    # show and the exports say it; the page draws the timeline with its events in Chromium.
    shown = httpbench("show", "1", "--db", db)
    assert shown.returncode == 0 and "Through 3 reloads" in " ".join(shown.stdout.split()), shown.stderr
    exported = httpbench("export", "1", "--db", db, "--format", "json")
    events = json.loads(exported.stdout)["events"]
    assert [e["action"] for e in events] == ["reload"] * 3 and all(e["ok"] for e in events), events
    page = tmp_path / "report.html"
    made = httpbench("report", "1", "--db", db, "-o", str(page))
    assert made.returncode == 0, made.stderr
    problems, drawn, failed = draw_offline(page, tmp_path / "report.png")
    assert problems == [] and failed == 0 and dict(drawn).get("chart-events", 0) > 0, drawn
    assert '<h3 id="operations">Operations under load</h3>' in page.read_text()


def test_apache2_graceful_and_full_restarts_are_each_counted_as_they_happened(tmp_path, measured):
    installed_or_skip("apache2-event")
    # One group: both in one level, one after the other.
    events = (
        '[[event]]\naction = "graceful-restart"\nat = "1s"\ngroup = "both"\n'
        '[[event]]\naction = "restart"\nat = "2.5s"\ngroup = "both"\n'
    )
    plan = short_plan(tmp_path, '["apache2-event"]', "300", 'duration = "4s"', extra=OPEN + events)
    run = _run(tmp_path, plan)
    (level,) = run.cells[0].levels
    assert not {"crashed", "server_restarted", "ended_early"} & set(level.flags), level.flags
    graceful, restart = by_action(level.operations)
    assert graceful.action == "graceful-restart" and graceful.events[0].master == "kept" and graceful.events[0].ok
    assert restart.action == "restart" and restart.events[0].master == "replaced" and restart.events[0].ok
    # Whatever each lost is counted in its own window, and the load went on to its end.
    for summary in (graceful, restart):
        measured(f"apache2-event {summary.action}: failed {summary.failed_requests}, retryable {summary.retryable}")
    assert level.report["duration_s"] >= 3.9


def test_a_server_without_the_action_named_by_the_plan_is_refused_in_one_line(tmp_path):
    # The reference server has no documented reload: it is ours, and restarted only by the suite.
    events = '[[event]]\naction = "reload"\nat = "1s"\n'
    plan = short_plan(tmp_path, '["reference"]', "100", 'duration = "3s"', extra=OPEN + events)
    assert "reload" in refused_run(plan, tmp_path / "db.sqlite")
