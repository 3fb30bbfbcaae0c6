"""Errors are never speed: a server that answers most requests 503, quickly, ranks below one that
serves the page more slowly, and its levels are flagged `errors` with the share and its kind.

Both servers are the test server behind the plan's command adapter, serving the same 7 bytes:
`slots` (2 slots of 1 ms: at most 2,000 pages per second) against `status` shedding load (the
page for every 1,000th request of a connection, its first included, which the suite's check and
the engine's validation request get; 503 at full speed for the others: one in 1,000 keeps what it
serves far under 2,000 a second on a fast machine too). Counted by completed answers, the
shedding one would win by far."""

import pytest
from conftest import binary, quick_sweep, short_plan
from httpbench import results
from httpbench.judge import honesty
from httpbench.load import engine
from httpbench.report import summary
from httpbench.results import comparison

TESTSERVER = binary("httpbench-testserver")
SERVERS = f"""
[server.serving]
command = "{TESTSERVER} --listen {{host}}:{{port}} --mode slots --slots 2 --hold-ms 1 --body-bytes 7"
[server.shedding]
command = "{TESTSERVER} --listen {{host}}:{{port}} --mode status --status 503 --ok-every 1000 --body-bytes 7"
"""


def test_a_server_answering_503_quickly_ranks_below_one_that_serves_the_page(tmp_path):
    (tmp_path / "page").write_bytes(b"x" * 7)
    plan = short_plan(
        tmp_path,
        '["serving", "shedding"]',
        "10",
        'duration = "0.5s"',
        extra='max_errors = "5%"',
        tables=SERVERS,
    ).read_text()
    # The page the test server answers, so that the suite's check of each server passes.
    plan = plan.replace('kind = "generated"\nsize = 7\nname = "index.html"', 'kind = "file"\npath = "page"')
    (tmp_path / "plan.toml").write_text(plan)
    notes: list = []
    sweep = quick_sweep(tmp_path / "plan.toml", tmp_path / "r.db", notes)
    run_id = sweep.start()
    sweep.run(run_id)
    measured = results.load(sweep.store, run_id)
    (group,) = comparison.groups(measured.measured)
    by_server = {c.server: c for c in group.cells}
    serving, shedding = by_server["serving"].levels[0], by_server["shedding"].levels[0]
    # Completed answers would rank them the other way round.
    assert shedding.report["requests"]["per_second"] > serving.report["requests"]["per_second"], (shedding, serving)
    assert [c.server for c in group.ranked()] == ["serving", "shedding"]
    assert shedding.rps.mean < serving.rps.mean
    assert shedding.rps.mean == pytest.approx(shedding.report["requests"]["succeeded_per_second"])
    # Flagged with its share and kind; the serving server is not.
    share = engine.goodput(shedding.report).error_share
    assert 0.9 < share < 1
    assert shedding.flags["errors"] == f"shedding answered {share:.1%} of requests with 503 at 10 connections"
    assert "errors" not in serving.flags
    assert any("flagged errors" in line for line in summary.cautions([measured])), summary.cautions([measured])


def test_a_client_that_cannot_tell_2xx_from_3xx_is_judged_on_what_it_counts():
    # wrk counts 4xx and 5xx answers only ("Non-2xx or 3xx"): its share of errors is a lower bound.
    wrk = engine.merge_reports(
        None,
        [
            {
                "duration_s": 1.0,
                "requests": {"completed": 100, "per_second": 100.0, "succeeded": None},
                "status": {"non_2xx_3xx": 20},
                "errors": {"timeout": 2},
                "errors_total": 2,
                "client": {"tool": "wrk"},
            }
        ],
        "sequential",
    )
    assert engine.goodput(wrk) == (None, None)
    report = {**wrk, "status": {**wrk["status"], "non_2xx_3xx": 20}, "client": {**wrk["client"], "tool": "wrk"}}
    flag = honesty.errors(report, 0.01, "nginx", "10 connections")
    assert flag.reason == (
        "nginx did not serve at least 21.6% of requests at 10 connections (max_errors 1.0%): "
        "19.6% with a 4xx or 5xx status and 2.0% failed"
    ), flag.reason
    # h2load counts its status classes: any 2xx it served, exactly.
    h2load = {**report, "status": {"2xx": 90, "5xx": 10}, "errors": {}, "errors_total": 0, "requests": {
        **report["requests"], "completed": 100}}  # fmt: skip
    assert engine.goodput(h2load) == (90, 0.1)
    assert honesty.errors(h2load, 0.01, "nginx", "10 connections").reason == (
        "nginx answered 10.0% of requests with 5xx at 10 connections"
    )
    assert honesty.errors(h2load, 0.1, "nginx", "10 connections") is None
