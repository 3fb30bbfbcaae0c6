"""HTTP/2 in reports, from a stored run made by hand (what the sweep stores for an h2 plan): the
summary's sentences set h2 against https at the same connections, ties and the streams a server
granted said; the two charts' data; the exports carry protocol, streams and the h2 counters. And
the built-in h2 plan, shortened, run for real and its charts drawn in the real Chromium."""

import csv
import io
import json
import re
from importlib import resources

import pytest
from httpbench import results
from httpbench.plan.protocol import TlsSettings
from httpbench.report import charts, h2_bars, summary
from httpbench.store.database import Store
from test_report import draw_offline, httpbench
from test_store import FakeCell, FakePlan, measurement

# req/s by (server, protocol, streams) at 10 and 100 connections; lighttpd grants 8 streams.
RPS = {
    ("nginx", "https", 1): (40_000, 40_000),
    ("nginx", "h2", 1): (40_500, 38_000),
    ("nginx", "h2", 10): (80_000, 90_000),
    ("lighttpd", "https", 1): (30_000, 30_000),
    ("lighttpd", "h2", 1): (20_000, 20_000),
    ("lighttpd", "h2", 10): (45_000, 50_000),
}
GRANTED = {"nginx": 128, "lighttpd": 8}
# The client set the pace of nginx's h2 cell with 1 stream at 10 connections, not of its https twin.
HELD = {("nginx", "h2", 1, 10)}


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    store = Store(str(tmp_path_factory.mktemp("h2") / "r.db"))
    run_id = store.start_run(FakePlan(), {}, {})
    for (server, protocol, streams), rates in RPS.items():
        key = f"{server}/tuned/7B/ka/1cpu/{protocol}" + (f"/{streams}streams" if protocol == "h2" else "")
        cell = FakeCell(key=key, server=server, protocol=protocol, streams=streams)
        cell_id = store.cell(run_id, cell, "", "v1", TlsSettings())
        for level, rps in zip((10, 100), rates):
            m = measurement(level, 0)
            m["requests"]["per_second"], m["flags"] = float(rps), []
            if (server, protocol, streams, level) in HELD:
                m["flags"] = [{"kind": "client_saturated", "reason": "busiest client thread 95.0% busy (> 90%)"}]
            if protocol == "h2":
                granted = min(streams, GRANTED[server])
                m["h2"] = {"streams_requested": streams, "streams_granted": granted, "goaways": 1,
                           "resets": {"CANCEL": 2}, "refused_streams": 0, "frame_bytes": 900}  # fmt: skip
            store.add_round(cell_id, level, 0, m)
        store.finish_cell(cell_id, "done", 1.0, None)
    store.finish_run(run_id, "done")
    return results.load(store, run_id)


def test_sentences_set_h2_against_https_at_the_same_connections(run):
    # A tie held by the client on the h2 side only keeps its bound, as the verdicts' do.
    lines = summary.h2_gains([run])
    assert lines[0] == (
        "At 10 connections, nginx/tuned serves, over h2 rather than HTTPS, at least as many requests per second "
        "with 1 stream (1.01 times: within 5%, which single rounds cannot tell from noise) and 2.00 times as many "
        "with 10 streams."
    )
    assert "lighttpd/tuned serves, over h2 rather than HTTPS, 0.67 times as many requests per second" in lines[2]
    assert "1.67 times as many with 10 streams (the server granted 8)." in lines[3]
    assert len(lines) == 4  # two servers x two connection counts
    assert summary.tls_costs([run]) == []  # no http cell: no cost of TLS, and h2 is not one


def test_charts_draw_streams_and_http1_beside_h2_per_connection_count(run):
    assert h2_bars.streams in charts.BUILDERS and h2_bars.http1_beside in charts.BUILDERS
    m = charts.Measured([run], charts.Choices())
    drawn = {c.name: c for c in (h2_bars.streams(m), h2_bars.http1_beside(m))}
    streams = drawn["h2_streams"].vega_lite["data"]["values"]
    assert {(r["series"], r["streams"], r["group"]) for r in streams if r["rps"] == 50_000} == {
        ("lighttpd/tuned", 10, "H2, 7B, 1 CPU, 100 connections")
    }
    assert {r["granted"] for r in streams if r["series"] == "lighttpd/tuned" and r["streams"] == 10} == {
        "8 (server's limit)"
    }
    beside = drawn["h2_against_http1"].vega_lite["data"]["values"]
    assert [r["kind"] for r in beside[:3]] == ["HTTP/1.1 over TLS", "h2, 1 stream", "h2, 10 streams"]
    assert len(beside) == 2 * 2 * 3  # servers x connection counts x (https, h2 x 2)


def test_exports_carry_protocol_streams_and_h2_counters(run):
    from httpbench.export import csv as csv_export
    from httpbench.export import json as json_export
    from httpbench.export import markdown

    rows = list(csv.DictReader(io.StringIO(csv_export.render([run]))))
    h2 = [r for r in rows if r["cell"] == "lighttpd/tuned/7B/ka/1cpu/h2/10streams"]
    assert [(r["protocol"], r["streams"], r["h2_streams_granted"], r["h2_resets"]) for r in h2] == [
        ("h2", "10", "8", "CANCEL 2")
    ] * 2
    document = json.loads(json_export.render([run]))
    assert {(c["protocol"], c["streams"]) for c in document["cells"]} == {("https", 1), ("h2", 1), ("h2", 10)}
    assert "### HTTP/2 against HTTP/1.1" in markdown.render([run])


H2_PLAN = (
    resources.files("httpbench")
    .joinpath("plan/plans/h2.toml")
    .read_text()
    .replace('name = "h2"', 'name = "h2-short"')
    .replace('profiles = ["tuned"]', 'servers = ["nginx"]\nprofiles = ["tuned"]')
    .replace("streams = [1, 10, 100]", "streams = [10]")
    .replace("list = [1, 10, 100]", "list = [1, 10]")
    .replace('duration = "1s"', 'duration = "0.5s"')
    .replace('warmup = "0.5s"', 'warmup = "0.1s"')
)


def test_a_shortened_h2_plan_runs_and_its_charts_are_drawn_in_chromium(tmp_path):
    # The engine's own HTTP/2 client against real nginx: https and h2 with 10 streams, at two
    # connection counts; the ceiling over h2 measured against an h2 server, not the reference one.
    assert 'servers = ["nginx"]' in H2_PLAN and "streams = [10]" in H2_PLAN
    plan = tmp_path / "h2-short.toml"
    plan.write_text(H2_PLAN)
    db = tmp_path / "results.db"
    done = httpbench("run", str(plan), "--db", str(db))
    assert done.returncode == 0, done.stderr[-2000:]
    # Measured against h2o: the client's ceiling, or none when h2o was the limit of that run.
    assert re.search(r"client ceiling (\(engine against h2o )?over H2 with 10 streams per connection", done.stderr)
    run = results.load(Store(str(db)), 1)
    assert [(c.protocol, c.streams, c.status) for c in run.cells] == [("https", 1, "done"), ("h2", 10, "done")]
    rounds = [r["measurement"] for c in Store(str(db)).run(1)["cells"] for r in c["rounds"]]
    assert [(m["protocol"], m["h2"] and m["h2"]["streams_requested"]) for m in rounds] == [
        ("http/1.1", None),
        ("http/1.1", None),
        ("h2", 10),
        ("h2", 10),
    ]
    page_file = tmp_path / "report.html"
    made = httpbench("report", "1", "--db", str(db), "-o", str(page_file))
    assert made.returncode == 0, made.stderr
    problems, drawn, _ = draw_offline(page_file, tmp_path / "report.png")
    marks = dict(drawn)
    assert problems == [] and marks["chart-h2_streams"] >= 2 and marks["chart-h2_against_http1"] >= 4, drawn
    assert "At 10 connections, nginx/tuned serves, over h2 rather than HTTPS," in page_file.read_text()
