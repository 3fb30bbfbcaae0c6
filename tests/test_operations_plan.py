"""Plans with operations under load (issue 29): [[event]] tables performed during each level, a
cell's key naming them; every mistake is one line, exit 2, nothing started."""

import pytest
from conftest import SHORT_PLAN, refused_run, short_plan
from httpbench.plan import builtin as plans
from httpbench.plan.events import schedule
from httpbench.plan.model import PlanError

RELOADS = '[[event]]\naction = "reload"\nat = "2s"\nevery = "2s"\ncount = 5\n'


def parse(extra: str, budget: str = 'duration = "12s"', servers: str = '["nginx"]'):
    return plans.parse(SHORT_PLAN.format(servers=servers, levels="10", budget=budget, extra=extra), "p")


def error(extra: str, **kwargs) -> str:
    with pytest.raises(PlanError) as caught:
        parse(extra, **kwargs)
    message = str(caught.value)
    assert "\n" not in message
    return message


def test_events_are_scheduled_and_named_in_the_key_each_action_a_cell_unless_grouped():
    plan = parse("retry_idempotent = true\n" + RELOADS + '[[event]]\naction = "graceful-restart"\nat = "10.5s"\n')
    # Each action its own cell: a server without graceful restarts loses only that cell.
    assert [c.key for c in plan.cells(["nginx"])] == [
        "nginx/default/7B/ka/1cpu/reload@2s+2sx5",
        "nginx/default/7B/ka/1cpu/graceful-restart@10.5s",
    ]
    assert plan.retry_idempotent
    grouped = parse(
        RELOADS.replace("count = 5", "count = 4") + 'group = "operator"\n'
        + '[[event]]\naction = "graceful-restart"\nat = "10.5s"\ngroup = "operator"\n'
    )  # fmt: skip
    (cell,) = grouped.cells(["nginx"])
    assert cell.key == "nginx/default/7B/ka/1cpu/reload@2s+2sx4,graceful-restart@10.5s"
    due = [(t, e.action) for t, e in schedule(cell.events)]
    assert due == [(2.0, "reload"), (4.0, "reload"), (6.0, "reload"), (8.0, "reload"), (10.5, "graceful-restart")]
    # A plan without events keeps its keys as before.
    assert [c.key for c in parse("").cells(["nginx"])] == ["nginx/default/7B/ka/1cpu"]


@pytest.mark.parametrize(
    "extra, budget, says",
    [
        ('[[event]]\naction = "explode"\nat = "1s"\n', None, "action must be one of"),
        ('[[event]]\naction = "reload"\nat = "1s"\nevery = "1s"\n', None, "every needs count"),
        ('[[event]]\naction = "reload"\nat = "1s"\ncount = 3\n', None, 'needs every = "2s"'),
        ('[[event]]\naction = "reload"\n', None, 'an event needs at = "5s"'),
        ('[[event]]\nat = "1s"\n', None, "an event needs action"),
        (RELOADS, "requests = 1000", "give budget.duration"),
        (RELOADS, 'duration = "10s"', "after the level's end"),
        ('[[event]]\naction = "reload"\nat = "30s"\n', None, "after the level's end"),
        ('[[event]]\naction = "restart"\nat = "1s"\nrenew_certificate = true\n', None, 'use action = "reload"'),
        ('client = "ab"\n' + RELOADS, None, 'cannot be used with client = "ab"'),
        ('[[event]]\naction = "reload"\nat = "1s"\nwhen = "now"\n', None, "unknown key"),
    ],
)
def test_bad_input_is_one_line(extra, budget, says):
    message = error(extra, **({"budget": budget} if budget else {}))
    assert says in message, message


def test_a_refused_plan_starts_nothing(tmp_path):
    plan = short_plan(tmp_path, '["nginx"]', "10", 'duration = "3s"', extra=RELOADS)
    assert "after the level's end" in refused_run(plan, tmp_path / "db.sqlite")


def test_keep_alive_by_protocol_spares_the_crossings_a_plan_does_not_want():
    text = SHORT_PLAN.replace("keep_alive = [true]\n", "")
    extra = 'protocols = ["http", "https", "h2"]\nkeep_alive = { http = [true, false], https = [true], h2 = [true] }'
    plan = plans.parse(text.format(servers='["nginx"]', levels="10", budget='duration = "1s"', extra=extra), "p")
    assert [c.key for c in plan.cells(["nginx"])] == [
        "nginx/default/7B/ka/1cpu",
        "nginx/default/7B/close/1cpu",
        "nginx/default/7B/ka/1cpu/https",
        "nginx/default/7B/ka/1cpu/h2/1streams",
    ]
    for table, says in (
        ("{ http = [true] }", "keep_alive has no list for https"),
        ("{ http = [true], https = [true], h2 = [false] }", "keep_alive = false cannot be used with protocols"),
        ("{ http = [true], https = [true], h2 = [true], h2c = [true] }", "h2c is not one of the plan's protocols"),
    ):
        with pytest.raises(PlanError) as caught:
            plans.parse(
                text.format(servers='["nginx"]', levels="10", budget='duration = "1s"',
                            extra=extra.replace(extra.split("keep_alive = ")[1], table)),
                "p",
            )  # fmt: skip
        assert says in str(caught.value), caught.value


def test_events_are_performed_in_order_while_the_load_runs_and_missed_ones_said():
    import time

    from httpbench.plan.model import Event
    from httpbench.sweep import operations

    class Host:
        def __init__(self):
            self.done = []

        def perform(self, action, renew_certificate=False):
            self.done.append((action, renew_certificate))
            return {"action": action, "at": time.time(), "took_s": 0.01, "master": "kept", "ok": True,
                    "problem": None, "workers_replaced": 1, "certificate_renewed": renew_certificate}  # fmt: skip

    host = Host()
    events = (Event("reload", 0.05, 0.05, 2), Event("reload", 0.12, renew_certificate=True), Event("restart", 5.0))
    measurement = operations.during(host, events, True, lambda: time.sleep(0.4) or {"started_at": time.time()})
    assert host.done == [("reload", False), ("reload", False), ("reload", True)]
    done = measurement["operations"]
    assert [(e["action"], e["due_s"], e["ok"]) for e in done] == [
        ("reload", 0.05, True), ("reload", 0.1, True), ("reload", 0.12, True), ("restart", 5.0, False)
    ]  # fmt: skip
    assert done[-1]["problem"] == "not performed: the level's load ended before 5 s" and done[-1]["at"] is None
    # Over plain HTTP a renewal is a reload: no certificate to renew.
    host.done.clear()
    operations.during(host, events[1:2], False, lambda: time.sleep(0.2) or {})
    assert host.done == [("reload", False)]


def test_an_event_the_server_host_cannot_perform_is_recorded_failed_and_the_rest_go_on():
    """A ServerFailed (or a lost server host) from one event must not silently drop the level's
    later events: each is recorded, the failed one with why."""
    import time

    from httpbench.plan.model import Event
    from httpbench.servers import ServerFailed
    from httpbench.sweep import operations

    class Host:
        def perform(self, action, renew_certificate=False):
            if action == "restart":
                raise ServerFailed("nginx did not answer again after its restart")
            return {"action": action, "at": time.time(), "took_s": 0.01, "master": "kept", "ok": True,
                    "problem": None, "workers_replaced": 1, "certificate_renewed": False}  # fmt: skip

    events = (Event("restart", 0.02), Event("reload", 0.05))
    done = operations.during(Host(), events, False, lambda: time.sleep(0.3) or {})["operations"]
    assert [(e["action"], e["ok"]) for e in done] == [("restart", False), ("reload", True)], done
    assert done[0]["problem"] == "nginx did not answer again after its restart" and done[0]["at"] is not None


def test_an_event_window_is_whole_points_from_its_signal_s_and_a_timed_out_action_s_runs_to_its_bound(monkeypatch):
    from httpbench.results import operations

    asked = []

    def window(report, first, last):
        asked.append((first, last))
        return {"requests": 1, "errors": {}, "closed_by_server": 0, "p50_us": 1, "p99_us": 2, "max_us": 3}

    monkeypatch.setattr(operations.engine, "ticks_window", window)
    done = {"action": "reload", "due_s": 5.0, "took_s": 0.2, "master": "kept", "ok": True, "problem": None,
            "workers_replaced": 2, "certificate_renewed": False}  # fmt: skip
    measurement = {
        "ticks": {"interval_ms": 100, "points": []},
        "duration_s": 30.0,
        "started_at": 1000.0,
        "operations": [
            {**done, "at": 1005.03},  # signalled 30 ms into the 5.0 s point: that point is its own
            {**done, "at": 1007.0, "took_s": None, "ok": False, "problem": "not done within 15 s"},
        ],
    }
    first, slow = operations.costs(measurement, 0)
    # The undisturbed stretch, then each event's: the first clipped at the second's signal point.
    assert asked == [(500, 5000), (5000, 5700), (7000, 22500)], asked
    assert first.window.seconds == 0.7 and slow.window.seconds == 15.5


def test_failures_through_events_compare_only_when_as_many_events_were_measured():
    from httpbench.results.events_compare import EventsChange

    assert EventsChange("c", 1, "reload", 0, 41, (0, 0), (5, 5)).verdict == "more failed"
    assert EventsChange("c", 1, "reload", 3, 5, (0, 0), (5, 5)).verdict == "within the noise"
    refused = EventsChange("c", 1, "reload", 41, 0, (0, 0), (5, 0))
    assert refused.verdict == "not compared: 5 events measured against 0" and not refused.regressed
