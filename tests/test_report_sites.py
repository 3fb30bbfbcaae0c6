"""Sites in reports: a short assets plan run on nginx (default and tuned) and shown, exported and
reported, its page drawn in the real headless Chromium; bytes/s beside requests/s, the latency of
each size class, and the sentences naming the site, from a run made by hand."""

import csv
import dataclasses
import io
import json

import pytest
from conftest import httpbench, quick_sweep
from httpbench import results
from httpbench.plan.protocol import TlsSettings
from httpbench.report import charts, site_summary, size_classes
from httpbench.store.database import Store
from test_report import draw_offline
from test_store import FakeCell, FakePlan, FakeWorkload, measurement

SITE_PLAN = """
servers = ["nginx"]
profiles = ["default", "tuned"]
requests_per_connection = 5
warmup = "0s"
[[workload]]
kind = "site"
model = "assets"
[levels]
list = [1, 4]
[budget]
requests = 2000
"""


@pytest.fixture(scope="module")
def site_run(tmp_path_factory):
    folder = tmp_path_factory.mktemp("site")
    (folder / "plan.toml").write_text(SITE_PLAN)
    sweep = quick_sweep(folder / "plan.toml", folder / "r.db", [])
    run_id = sweep.start()
    sweep.run(run_id)
    return folder, folder / "r.db", run_id


def test_a_site_run_is_shown_in_80_columns_with_bytes_per_second(site_run):
    _, db, run_id = site_run
    shown = httpbench("show", str(run_id), "--db", str(db))
    assert shown.returncode == 0, shown.stderr
    assert max(len(line) for line in shown.stdout.splitlines()) <= 80, shown.stdout
    assert "bytes/s" in shown.stdout and "MiB/s" in shown.stdout
    assert "Serving the assets site (keep-alive, 1 CPU), nginx/" in shown.stdout


def test_a_site_run_is_exported_with_its_classes(site_run):
    _, db, run_id = site_run
    rows = list(
        csv.DictReader(io.StringIO(httpbench("export", str(run_id), "--db", str(db), "--format", "csv").stdout))
    )
    assert len(rows) == 4 and all(float(r["body_bytes_per_second"]) > 0 for r in rows)
    assert all("requests, p50" in r["classes"] for r in rows)
    document = json.loads(httpbench("export", str(run_id), "--db", str(db), "--format", "json").stdout)
    by_level = {}
    for c in document["classes"]:
        by_level.setdefault((c["cell"], c["level"]), []).append(c)
    assert len(by_level) == 4
    for (cell, level), classes in by_level.items():
        # Every answer of the level in one class: a round's 2,000 requests.
        assert sum(c["requests"] for c in classes) == 2000, (cell, level, classes)
        assert all(c["p99_us"] >= c["p50_us"] > 0 for c in classes if c["requests"])
    markdown = httpbench("export", str(run_id), "--db", str(db), "--format", "markdown").stdout
    assert "### Size classes" in markdown and "| under 1 KB |" in markdown


def test_a_site_run_s_report_draws_latency_by_size_in_chromium(site_run):
    folder, db, run_id = site_run
    page_file = folder / "report.html"
    made = httpbench("report", str(run_id), "--db", str(db), "-o", str(page_file))
    assert made.returncode == 0, made.stderr
    problems, drawn, failed = draw_offline(page_file, folder / "report.png")
    assert problems == [] and failed == 0
    marks = dict(drawn)
    assert marks.get("chart-latency_by_size", 0) > 0, drawn
    page = page_file.read_text()
    assert "Serving the assets site" in page and "body bytes/s" in page


def _classes(p50s) -> list:
    """Three size classes of 500 answers each, their p50s `p50s` and p99s three times those: what
    the engine's merge of a level's rounds gives (from histograms a hand-made round cannot hold)."""
    bounds = [(0, 1023), (1024, 10239), (10240, None)]
    return [
        {"bytes_from": low, "bytes_to": high, "requests": 500, "bytes": 500 * 800,
         "latency": {"p50_us": p50, "p99_us": p50 * 3}}
        for (low, high), p50 in zip(bounds, p50s)
    ]  # fmt: skip


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    store = Store(str(tmp_path_factory.mktemp("sites") / "r.db"))
    run_id = store.start_run(FakePlan(), {}, {})
    p50s = {"nginx": (100, 200, 400), "apache2-event": (110, 210, 1600)}
    for server, rps in (("nginx", 18_000.0), ("apache2-event", 10_000.0)):
        cell = FakeCell(key=f"{server}/tuned/assets/ka/1cpu", server=server, workload=FakeWorkload("assets"))
        cell_id = store.cell(run_id, cell, "", "v1", TlsSettings())
        m = measurement(10, 0)
        m["requests"]["per_second"], m["flags"], m["bytes"]["body"] = rps, [], int(rps * 2.0 * 5000)
        store.add_round(cell_id, 10, 0, m)
        store.finish_cell(cell_id, "done", 1.0, None)
    store.finish_run(run_id, "done")
    run = results.load(store, run_id)
    for cell in run.cells:
        cell.levels[:] = [
            dataclasses.replace(lv, report={**lv.report, "classes": _classes(p50s[cell.server])}) for lv in cell.levels
        ]
    return run


def test_sentences_name_the_site_and_the_class_where_a_pair_differs_most(made):
    assert site_summary.sites([made]) == [
        "Serving the assets site (keep-alive, 1 CPU), nginx/tuned serves 1.80 times as many requests per "
        "second as apache2-event/tuned.",
        "They differ most on answers of 10 KB and over at 10 connections: apache2-event/tuned takes 4.00 times "
        "nginx/tuned's median time (p50 1.60 ms against 400 us, p99 4.80 ms against 1.20 ms).",
    ]
    (cell,) = [c for c in made.cells if c.server == "nginx"]
    assert cell.site and cell.levels[0].body_bytes_per_second == pytest.approx(18_000 * 5000, rel=0.01)
    rows = size_classes.records([made])
    assert [r["class"] for r in rows[:3]] == ["under 1 KB", "1-10 KB", "10 KB and over"]
    chart = size_classes.latency_by_size(charts.Measured([made], charts.Choices()))
    assert chart.drawn and len(chart.vega_lite["data"]["values"]) == 2 * 3 * 2  # cells x classes x p50/p99
    # A flagged level is outlined and says why on hover, as on every chart.
    assert {r["flagged"] for r in chart.vega_lite["data"]["values"]} == {False}
    text = json.dumps(chart.vega_lite)
    assert f'"test": "datum.flagged", "value": "{charts.FLAG_OUTLINE}"' in text and '"field": "flags"' in text
    assert "| `nginx/tuned/assets/ka/1cpu` | 10 | 10 KB and over | 500 | 400 us | 1.20 ms |" in size_classes.markdown(
        [made]
    )


def test_compare_sets_each_size_class_s_answers_and_p99_side_by_side(site_run):
    _, db, run_id = site_run
    compared = httpbench("compare", str(run_id), str(run_id), "--db", str(db))
    assert compared.returncode == 0, compared.stderr
    assert "size classes" in compared.stdout and "p99 ratio" in compared.stdout
    # The run against itself: every class of every level, each p99 the same.
    assert compared.stdout.count(" 1.00") >= 4 * 2, compared.stdout
