"""Capacity plans: a [capacity] table in place of levels, each cell searched by the engine's
search (one implementation, httpbench._engine.CapacitySearch), its probes stored as rounds at
the level of their offered rate, its capacity as the cell's result; shown, exported and compared.

Ground truth: the testserver's slots mode (K slots held D ms each) carries exactly K/D requests
per second at latency D, so at p99 <= 1.5 D the search finds K/D."""

import json
from dataclasses import replace
from pathlib import Path

import pytest
from conftest import binary, httpbench, quick_sweep, refused_run
from httpbench import results
from httpbench.plan import builtin as plans
from httpbench.plan.model import PlanError
from httpbench.report import capacity as words
from httpbench.results.compare import capacity_change
from httpbench.results.model import CellResult, RunResults
from httpbench.store.database import Store
from test_cluster import loopback_cluster, tls_cluster  # noqa: F401 - fixtures
from test_report import draw_offline

SLOTS, HOLD_MS = 40, 20
KD = SLOTS * 1000 / HOLD_MS  # 2,000 req/s

PLAN = """\
name = "slots-capacity"
servers = ["slots"]
warmup = 0
server_cpus = [1]

[server.slots]
command = "{testserver} --mode slots --slots {slots} --hold-ms {hold} --listen {{host}}:{{port}} --max-seconds 300"

[[workload]]
kind = "file"
path = "seven.txt"

[capacity]
objective = "p99 <= {bound}ms"
precision = "5%"
probe = "1s"
rounds = 1
start = 1000
"""


def slots_plan(folder: Path, arrivals: str = "even") -> Path:
    """A capacity plan of the testserver in slots mode (K/D = 2,000 req/s at 20 ms), searched
    at p99 <= 1.5 D from 1,000 req/s with `arrivals`; its 7-byte answer is the workload file."""
    (folder / "seven.txt").write_bytes(b"x" * 7)
    path = folder / "plan.toml"
    text = PLAN.format(testserver=binary("httpbench-testserver"), slots=SLOTS, hold=HOLD_MS, bound=int(1.5 * HOLD_MS))
    path.write_text(text + f'arrivals = "{arrivals}"\n')
    return path


def error(text: str) -> str:
    with pytest.raises(PlanError) as caught:
        plans.parse(text, "myplan.toml")
    message = str(caught.value)
    assert "\n" not in message and message.startswith("myplan.toml line "), message
    return message


GOOD = PLAN.format(testserver="/bin/true", slots=1, hold=1, bound=10).replace(
    'kind = "file"\npath = "seven.txt"', 'kind = "generated"\nsize = 7'
)


def test_a_capacity_plan_parses_open_loop_without_levels():
    plan = plans.parse(GOOD, "myplan.toml")
    assert plan.model == "open" and plan.levels == ()
    settings = plan.capacity
    assert settings.objective == "p99 <= 10ms" and settings.precision == 0.05
    assert (settings.probe, settings.rounds, settings.start, settings.connections) == (1.0, 1, 1000.0, None)
    assert settings.search().next_rate() == 1000.0
    errors = plans.parse(GOOD.replace("rounds = 1\n", 'rounds = 1\nmax_errors = "1%"\n'), "p.toml")
    assert errors.capacity.objective == "p99 <= 10ms, errors <= 1%"
    assert settings.arrivals == "even"
    poisson = plans.parse(GOOD.replace("rounds = 1\n", 'rounds = 1\narrivals = "poisson"\n'), "p")
    assert poisson.capacity.arrivals == "poisson"


NAME = 'name = "slots-capacity"'


@pytest.mark.parametrize(
    "change, line_with, said",
    [
        (
            ('name = "slots-capacity"', 'name = "x"\nmodel = "closed"'),
            'model = "closed"',
            'model = "closed" cannot be used with [capacity]',
        ),
        (
            ('name = "slots-capacity"', 'name = "x"\nclient = "wrk"'),
            'client = "wrk"',
            'client = "wrk" cannot be used with [capacity]',
        ),
        (
            ('name = "slots-capacity"', 'name = "x"\nclient = "ab"'),
            'client = "ab"',
            "only the engine runs the open-loop",
        ),
        (("[capacity]", "[levels]\nlist = [1]\n[capacity]"), "[levels]", "levels cannot be used with [capacity]"),
        (
            ("[capacity]", '[budget]\nduration = "2s"\n[capacity]'),
            "[budget]",
            "capacity.probe sets each probe's length",
        ),
        ((NAME, NAME + "\npipeline = 8"), "pipeline = 8", "pipeline = 8 cannot be used"),
        (('"p99 <= 10ms"', '"p99<10"'), "objective =", 'capacity.objective: objective term "p99<10" has no bound'),
        (('"p99 <= 10ms"', '"p101 <= 5ms"'), "objective =", '"p101" is no percentile'),
        (('"p99 <= 10ms"', '"p99 <= -1ms"'), "objective =", "is no latency"),
        (('"5%"', '"60%"'), "precision =", "capacity.precision: a precision of 60% cannot bracket a rate"),
        (('"5%"', '"five"'), "precision =", 'capacity.precision must be a percentage like "2%"'),
        (("start = 1000", "start = 1000\nmax_rate = 500"), "start =", "the start rate 1000 is outside"),
        (('"p99 <= 10ms"', '"p99 <= 10ms, errors <= 1%"\nmax_errors = "1%"'), "max_errors", "bound errors twice"),
        (("start = 1000", "start = 1000\nconections = 5"), "conections", "did you mean 'capacity.connections'?"),
        (
            ("start = 1000", 'start = 1000\narrivals = "bursts"'),
            "arrivals",
            'capacity.arrivals = "bursts" is not one of "even", "poisson"',
        ),
    ],
)
def test_capacity_plans_are_refused_in_one_line(change, line_with, said):
    text = GOOD.replace(*change)
    message = error(text)
    assert said in message, message
    line = next(n for n, words in enumerate(text.splitlines(), 1) if line_with in words)
    assert message.startswith(f"myplan.toml line {line}: "), message


def test_run_refuses_a_capacity_plan_whose_objective_does_not_parse(tmp_path):
    plan = slots_plan(tmp_path)
    plan.write_text(plan.read_text().replace('"p99 <= 30ms"', '"p99 < 30ms"'))
    said = refused_run(plan, tmp_path / "r.db")
    assert 'objective term "p99 < 30ms" has no bound' in said and "write it as p99=10ms" in said


def test_a_capacity_plan_finds_the_slots_ground_truth_stores_shows_exports_and_compares(tmp_path):
    plan, db = slots_plan(tmp_path), str(tmp_path / "r.db")
    run = httpbench("run", str(plan), "--db", db, "--server-cpus", "0", "--client-cpus", "1", timeout=240)
    assert run.returncode == 0, run.stderr[-3000:]
    measured = results.load(Store(db, create=False), 1)
    (cell,) = measured.cells
    capacity = cell.capacity
    assert cell.finished and capacity["limited_by"] == "server" and capacity["bound"] is None
    assert 0.9 * KD <= capacity["rate"] <= 1.03 * KD, capacity
    # Each probe is a round at the level of its offered rate, watched as a level's round is.
    stored = [(lv.level, n) for lv in cell.levels for n in lv.rps_values]
    assert len(stored) == len(capacity["probes"])
    assert sorted(lv.level for lv in cell.levels) == sorted({round(p["offered"]) for p in capacity["probes"]})
    assert all(lv.server_cpu_user is not None for lv in cell.levels)
    # The client ceiling is measured in a closed loop, not at a rate: no probe is flagged for it.
    assert not any("client_saturated" in lv.flags for lv in cell.levels)

    shown = httpbench("show", "1", "--db", db)
    assert shown.returncode == 0, shown.stderr
    verdict = f"capacity: {capacity['rate']:,.0f} req/s at p99 <= 30 ms, errors <= 0.1% (p99 there "
    assert verdict in shown.stdout and "broke it at p99" in shown.stdout
    assert shown.stdout.count(" met\n") + shown.stdout.count("not met") >= len(capacity["probes"])
    assert "offered req/s" in shown.stdout and "rank" in shown.stdout
    # Its ranking row's flags column holds flags, not the status of a cell that finished.
    (ranked,) = [line for line in shown.stdout.splitlines() if line.startswith("1 ") and "slots/" in line]
    assert not ranked.rstrip().endswith("done"), ranked
    assert verdict in run.stdout  # the end of `run` says it too

    exported = json.loads(httpbench("export", "1", "--db", db, "--format", "json").stdout)
    (record,) = exported["capacities"]
    assert record["capacity"] == capacity and record["verdict"].startswith(verdict)
    markdown = httpbench("export", "1", "--db", db, "--format", "markdown").stdout
    assert "### Capacity, " in markdown and verdict in markdown

    same = httpbench("compare", "1", "1", "--db", db, "--fail-on-regression", "5%")
    assert same.returncode == 0, same.stderr
    assert "capacity, run 1 against run 1" in same.stdout and "within the noise" in same.stdout

    # The same server with half its slots carries half as much: a regression of its capacity.
    plan.write_text(plan.read_text().replace(f"--slots {SLOTS} ", f"--slots {SLOTS // 2} "))
    halved = httpbench("run", str(plan), "--db", db, "--server-cpus", "0", "--client-cpus", "1", timeout=240)
    assert halved.returncode == 0, halved.stderr[-3000:]
    fell = httpbench("compare", "1", "2", "--db", db, "--fail-on-regression", "5%")
    assert fell.returncode == 1, fell.stdout + fell.stderr
    assert f"regression: {cell.key}: capacity {capacity['rate']:,.0f} -> " in fell.stderr
    assert "less" in fell.stdout

    # The report draws both searches in the real browser: a bar each at its capacity, and every
    # probe's latency against its rate; no level chart draws a capacity cell's probes as levels.
    page_file = tmp_path / "report.html"
    made = httpbench("report", "1", "2", "--db", db, "-o", str(page_file))
    assert made.returncode == 0, made.stderr
    problems, drawn, _ = draw_offline(page_file, tmp_path / "report.png")
    assert not problems, problems
    marks = dict(drawn)
    assert marks["chart-capacity"] > 0 and marks["chart-latency_by_rate"] > 0, drawn
    assert "chart-throughput" not in marks, drawn
    html = page_file.read_text()
    assert "Capacity, " in html and html.count("req/s broke it at p99") >= 2 and "is incomplete" not in html


def capacity_of(rate, high, probes=(), limited_by="server", bound=None):
    return {
        "objective": {"percentiles": [{"percentile": 99.0, "latency_us": 10_000}], "max_error_share": 0.001},
        "rate": rate,
        "interval": {"low": rate, "high": high},
        "limited_by": limited_by,
        "bound": bound,
        "probes": list(probes),
    }


def probe(offered, p99_ms, met, achieved=None, errors=0):
    us = int(p99_ms * 1000)
    return {
        **dict(offered=offered, achieved=achieved or offered, errors=errors, met=met, client_bound=False),
        **dict(p50_us=us // 2, p90_us=us, p99_us=us, p99_9_us=us, connections=10, connections_short=False),
    }


def searched(capacity) -> CellResult:
    return CellResult(
        1, "a/tuned/7B/ka/1cpu", "a", "tuned", "7B", True, 1, "", None, "done", None, 1.0, "", "", [], capacity=capacity
    )


def test_the_verdicts_say_what_the_cli_says():
    met = capacity_of(41_200.0, 42_000.0, [probe(41_200.0, 8.7, True), probe(42_000.0, 31.0, False)])
    assert words.verdict(searched(met)) == (
        "capacity: 41,200 req/s at p99 <= 10 ms, errors <= 0.1% "
        "(p99 there 8.70 ms; 42,000 req/s broke it at p99 31.00 ms)"
    )
    floor = capacity_of(5_000.0, None, [probe(5_000.0, 2.0, True)], limited_by="client")
    said = words.verdict(searched(floor))
    assert said.startswith("capacity: at least 5,000 req/s at p99 <= 10 ms") and said.endswith("(--client-cpus)")
    none = capacity_of(None, None, [probe(20.0, 45.0, False), probe(10.0, 44.0, False)], bound="min_rate")
    assert words.verdict(searched(none)) == "no rate met p99 <= 10 ms, errors <= 0.1%: at 10 req/s, p99 was 44.00 ms"
    slow = capacity_of(None, None, [probe(10.0, 1.0, False, achieved=5.0)], bound="min_rate")
    assert words.verdict(searched(slow)).endswith("p99 was 1.00 ms (sending only 5 req/s)")


def test_compare_judges_a_capacity_by_the_searches_brackets():
    within = capacity_change("c", capacity_of(2000, 2040), capacity_of(1980, 2020))
    assert within.verdict == "within the noise" and not within.regressed(0.05)
    fell = capacity_change("c", capacity_of(2000, 2040), capacity_of(1500, 1530))
    assert fell.verdict == "less" and fell.regressed(0.05) and not fell.regressed(0.3)
    gone = capacity_change("c", capacity_of(2000, 2040), capacity_of(None, None))
    assert gone.verdict == "no rate met" and gone.regressed(0.05)
    # Under another objective, or where one is a floor, the two are no server's capacities to
    # compare: said so, and no regression.
    stricter = capacity_of(500, 520)
    stricter["objective"]["percentiles"][0]["latency_us"] = 1_000
    other = capacity_change("c", capacity_of(2000, 2040), stricter)
    assert other.verdict.startswith("not compared: searched at other objectives (p99 <= 10 ms") and not other.regressed(
        0.05
    )
    floor = capacity_change("c", capacity_of(2000, 2040), capacity_of(1000, 1020, limited_by="client"))
    assert floor.verdict.startswith("not compared: the capacity after is a floor") and not floor.regressed(0.05)


def test_a_search_interrupted_midway_is_searched_again_on_resume(tmp_path):
    plan, db = slots_plan(tmp_path), tmp_path / "r.db"
    plan.write_text(plan.read_text().replace("warmup = 0", 'warmup = "0.2s"'))
    notes: list = []
    sweep = quick_sweep(plan, db, notes)
    run_id = sweep.start()
    load, calls = sweep.load, []

    def interrupted_at_the_third_probe(spec):
        calls.append(spec.get("rate"))
        if len(calls) == 4:
            raise KeyboardInterrupt
        return load(spec)

    sweep.load = interrupted_at_the_third_probe
    with pytest.raises(KeyboardInterrupt):
        sweep.run(run_id)
    # The cell's warm-up loads as hard as it can, as in a closed plan; then the probes' rates.
    assert calls[:2] == [None, 1000.0]
    (cell,) = results.load(Store(str(db)), run_id).cells
    assert cell.status == "interrupted" and len(cell.capacity["probes"]) == 2 and not cell.finished

    again = quick_sweep(plan, db, notes)
    again.run(run_id)
    (cell,) = results.load(Store(str(db)), run_id).cells
    probes = cell.capacity["probes"]
    assert cell.finished and cell.sessions == 2 and cell.capacity["rate"] is not None, notes
    # Searched from its start: the first probes again, and only this search's probes stored.
    assert probes[0]["offered"] == 1000.0
    assert sum(len(lv.rps_values) for lv in cell.levels) == len(probes)

    # A finished search is not searched again.
    done = quick_sweep(plan, db, notes)
    done.load = lambda spec: pytest.fail("a finished search was searched again")
    done.run(run_id)


def test_a_capacity_search_on_a_cluster_splits_each_probe_and_records_the_merged_report(tls_cluster, tmp_path):
    net, _ = tls_cluster
    plan, db = slots_plan(tmp_path, arrivals="poisson"), tmp_path / "r.db"
    done = net.run(str(plan), "--db", str(db), timeout=240)
    assert done.returncode == 0, done.stderr[-3000:]
    (cell,) = results.load(Store(str(db)), 1).cells
    capacity = cell.capacity
    # Loosely: the scheduler, three workers and two engines share this machine's 2 CPUs with the
    # testserver, whose tail then grows (its probes are flagged contended) before K/D.
    assert cell.finished and capacity["bound"] is None and 0.5 * KD <= capacity["rate"] <= 1.03 * KD, capacity
    stored = Store(str(db)).run(1)["cells"][0]["rounds"]
    assert len(stored) == len(capacity["probes"])
    # Every probe was split over both client hosts and merged as a level is; the hosts' Poisson
    # arrivals are streams of their own, not one stream sent twice in step.
    assert all(sorted(h["host"] for h in r["measurement"]["hosts"]) == ["c1", "c2"] for r in stored)
    for r in stored:
        specs = [h["report"]["spec"] for h in r["measurement"]["hosts"]]
        assert {s["arrivals"] for s in specs} == {"poisson"} and len({s["seed"] for s in specs}) == 2, specs


def test_nginx_and_lighttpd_are_searched_through_the_builtin_plan_reported_and_compared(tmp_path):
    """The built-in plan's shape on two real servers, its search cut short (precision 50%, short
    probes): each gets a capacity, stored, shown ranked, drawn in the real browser, compared."""
    text = plans.load("capacity").text.replace('precision = "5%"', 'precision = "50%"')
    plan = tmp_path / "capacity.toml"
    plan.write_text(text.replace('probe = "1s"', 'probe = "0.5s"').replace("start = 4000", "start = 16000"))
    db = str(tmp_path / "r.db")
    run = httpbench(
        "run",
        str(plan),
        "--db",
        db,
        "--servers",
        "nginx,lighttpd",
        "--server-cpus",
        "0",
        "--client-cpus",
        "1",
        timeout=300,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    measured = results.load(Store(db, create=False), 1)
    assert sorted(c.server for c in measured.cells) == ["lighttpd", "nginx"]
    for cell in measured.cells:
        assert cell.finished and cell.capacity["rate"], cell.capacity
    shown = httpbench("show", "1", "--db", db)
    assert shown.returncode == 0 and "capacity, " in shown.stdout and "rank" in shown.stdout, shown.stdout
    assert shown.stdout.count("capacity: ") >= 2
    page_file = tmp_path / "report.html"
    assert httpbench("report", "1", "--db", db, "-o", str(page_file)).returncode == 0
    problems, drawn, _ = draw_offline(page_file, tmp_path / "report.png")
    assert not problems and dict(drawn)["chart-capacity"] > 0, (problems, drawn)
    same = httpbench("compare", "1", "1", "--db", db)
    assert same.returncode == 0 and "capacity, run 1 against run 1" in same.stdout, same.stdout


def test_the_ranking_ties_what_the_brackets_cannot_tell_apart_and_keeps_the_reference_as_ceiling():
    def cell(server, rate, high, limited_by="server"):
        c = searched(capacity_of(rate, high, [probe(rate, 5.0, True)], limited_by=limited_by))
        return replace(c, server=server, key=f"{server}/tuned/7B/ka/1cpu")

    run = RunResults(
        1,
        "capacity",
        "",
        "done",
        None,
        None,
        {},
        [],
        None,
        None,
        cells=[
            cell("nginx", 41_200.0, 42_000.0),
            cell("lighttpd", 40_800.0, 41_600.0),  # its bracket reaches nginx's capacity: a tie
            cell("apache2-event", 12_100.0, 12_400.0),
            cell("reference", 90_000.0, None, limited_by="client"),
        ],
    )
    (s,) = words.standings([run])
    assert [(rank, c.server) for rank, c in s.places] == [("=1", "nginx"), ("=1", "lighttpd"), ("3", "apache2-event")]
    assert s.ceiling.server == "reference" and s.rank(s.ceiling) == "ceiling" and s.share(s.ceiling) == "-"
    assert s.share(s.places[2][1]) == "29.4%"
    # A tie at the top still says how far ahead of the rest it is, against the first cell below
    # for sure.
    assert s.sentence == (
        "nginx/tuned and lighttpd/tuned tie at p99 <= 10 ms, errors <= 0.1%: 41,200 and 40,800 req/s, "
        "within what their searches can tell apart. At p99 <= 10 ms, errors <= 0.1%, nginx/tuned carries "
        "41,200 requests per second, 3.4 times as many as apache2-event/tuned (12,100)"
    )
    apart = replace(run, cells=[run.cells[0], run.cells[2]])
    (s,) = words.standings([apart])
    assert s.sentence == (
        "At p99 <= 10 ms, errors <= 0.1%, nginx/tuned carries 41,200 requests per second, "
        "3.4 times as many as apache2-event/tuned (12,100)"
    )
