"""Reports of a real ssl-impact run, shortened to nginx and reference with tiny budgets: the cost
of TLS in `show`, the page's summary and its two charts drawn in the real headless Chromium, TLS
columns in the tables and exports; the sentences worked on doctored copies of it."""

import csv
import io
import json
import re
from importlib import resources

import pytest
from httpbench import results
from httpbench.cli import console
from httpbench.report import charts, output, summary
from httpbench.store.database import Store
from rich.console import Console
from test_report import axes_from_zero, copy_run, draw_offline, httpbench, legend_hides_every_mark

PLAN = (
    resources.files("httpbench")
    .joinpath("plan/plans/ssl-impact.toml")
    .read_text()
    .replace('name = "ssl-impact"', 'name = "ssl-impact-short"')
    .replace('profiles = ["tuned"]', 'servers = ["nginx", "reference"]\nprofiles = ["tuned"]')
    .replace("list = [1, 10, 100, 500]", "list = [1, 10]")
    .replace('duration = "1s"', 'duration = "0.3s"')
    .replace('warmup = "0.2s"', 'warmup = "0.1s"')
)
TLS_CHARTS = {"tls_share", "tls_handshakes"}


@pytest.fixture(scope="module")
def tls_run(tmp_path_factory):
    """The shortened ssl-impact plan run through the CLI: (database path, run id)."""
    base = tmp_path_factory.mktemp("report-tls")
    assert "list = [1, 10]" in PLAN and 'servers = ["nginx", "reference"]' in PLAN
    plan = base / "ssl-impact-short.toml"
    plan.write_text(PLAN)
    db = base / "results.db"
    done = httpbench("run", str(plan), "--db", str(db))
    assert done.returncode == 0, done.stderr[-2000:]
    return db, 1


def _load(db, run_id):
    return results.load(Store(str(db)), run_id)


def _is(kind: str, key: str) -> bool:
    """Which of ssl-impact's cells a key is: http or https with keep-alive, or https without it
    with full or resumed handshakes."""
    ends = {"http": "/ka/1cpu", "https": "/ka/1cpu/https", "full": "/https/none", "resumed": "/https/tickets"}
    return key.endswith(ends[kind])


def _doctor(https=0.52, full=1900, resumed=2200, held=None, resumed_full=1):
    """Every round of every server: http with keep-alive at 10,000 requests/s, https at `https`
    times that; without keep-alive `full` full handshakes per second, and `resumed` resumed ones
    where tickets were offered (beside `resumed_full` full ones a round: more than 1 flags the
    round not_resumed); the stored flags dropped, client_saturated raised on the cells `held`
    names (kinds of _is)."""

    def doctor(key, level, index, m):
        m["duration_s"] = 0.5
        m["flags"] = []
        if _is("http", key):
            m["requests"]["per_second"] = 10_000
        if _is("https", key):
            m["requests"]["per_second"] = 10_000 * https
        if _is("full", key):
            m["tls"].update(handshakes_full=full // 2, handshakes_resumed=0)
        if _is("resumed", key):
            m["tls"].update(handshakes_full=resumed_full, handshakes_resumed=resumed // 2)
            if resumed_full > 1:
                m["flags"] = [{"kind": "not_resumed", "reason": "resumed under 95%"}]
        if held and any(_is(kind, key) for kind in held) and level == 10:
            m["flags"] = [{"kind": "client_saturated", "reason": "busiest client thread 97% busy (> 90%)"}]

    return doctor


def test_an_ssl_impact_run_draws_its_cost_of_tls_in_chromium(tls_run, tmp_path):
    db, run_id = tls_run
    page_file = tmp_path / "report.html"
    made = httpbench("report", str(run_id), "--db", str(db), "-o", str(page_file))
    assert made.returncode == 0, made.stderr
    drawn_charts = charts.all_charts([_load(db, run_id)])
    names = {c.name for c in drawn_charts}
    assert TLS_CHARTS <= names
    legend_hides_every_mark(drawn_charts)
    assert axes_from_zero([c for c in drawn_charts if c.name in TLS_CHARTS]) == 2
    fit = {}

    def tables_fit(page):
        """At 1,024 pixels, every level table and the one under it (a TLS cell's with its handshakes) in its card."""
        page.set_viewport_size({"width": 1024, "height": 800})
        page.eval_on_selector_all("details", "all => all.forEach(d => d.open = true)")
        fit["tables"] = page.eval_on_selector_all(
            "details:has(table)",
            """all => all.map(d => [d.querySelector('summary').textContent,
                [...d.querySelectorAll('table')].every(t => t.getBoundingClientRect().right
                    <= d.closest('section').getBoundingClientRect().right)])""",
        )

    problems, drawn, _ = draw_offline(page_file, tmp_path / "report.png", tables_fit)
    assert problems == []
    assert sorted(name.removeprefix("chart-") for name, _ in drawn) == sorted(names)
    marks = dict(drawn)
    assert marks["chart-tls_share"] >= 2 and marks["chart-tls_handshakes"] >= 4, drawn
    assert len(fit["tables"]) == 10 and all(inside for _, inside in fit["tables"]), fit
    text = page_file.read_text()
    assert '<h3 id="tls-cost">Cost of TLS</h3>' in text
    assert "nginx/tuned serves" in text and "as over HTTP (keep-alive" in text
    assert "Without keep-alive, nginx/tuned completes" in text and "resumed by tickets" in text
    assert "<th>handshake p50</th>" in text and "<th>server CPU per request</th>" in text
    assert "TLS 1.3 (negotiated), ecdsa-p256, resumed by tickets" in text


def test_cost_of_tls_sentences_say_the_share_and_the_handshakes(tls_run):
    db, run_id = tls_run
    run = _load(db, copy_run(db, run_id, doctor=_doctor()))
    assert summary.tls_costs([run]) == [
        line
        for server in ("nginx/tuned", "reference/tuned")
        for line in (
            f"{server} serves 0.52 times as many requests per second over HTTPS as over HTTP (keep-alive).",
            f"Without keep-alive, {server} completes 1,900 full TLS handshakes per second, 2,202 when resumed "
            "by tickets (2,200 of them resumed; 1.16 times).",
        )
    ]
    rows = {c.name: c.spec.to_dict()["data"]["values"] for c in charts.all_charts([run]) if c.name in TLS_CHARTS}
    assert sorted(round(r["share"], 6) for r in rows["tls_share"]) == [0.52, 0.52]
    assert sorted((r["kind"], round(r["rate"])) for r in rows["tls_handshakes"]) == [
        ("full handshakes", 1900),
        ("full handshakes", 1900),
        ("resumed by tickets", 2202),
        ("resumed by tickets", 2202),
    ]


def test_a_share_within_the_noise_is_as_many_and_a_client_bound_share_a_bound(tls_run):
    db, run_id = tls_run
    store = Store(str(db))

    def first(copied):
        return summary.tls_costs([results.load(store, copied)])[:2]

    share, handshakes = first(copy_run(db, run_id, doctor=_doctor(https=0.98, resumed=1950)))
    noise = "(0.98 times: within 5%, which single rounds cannot tell from noise)"
    assert share == f"nginx/tuned serves as many requests per second over HTTPS as over HTTP (keep-alive) {noise}."
    assert handshakes.endswith(
        "1,952 when resumed by tickets (1,950 of them resumed; as many, 1.03 times: within 5%, which single rounds "
        "cannot tell from noise)."
    )
    # The client held back the https cell: the share is a lower bound; the http one: an upper bound.
    share, handshakes = first(copy_run(db, run_id, doctor=_doctor(held=("https", "full"))))
    assert share.startswith("nginx/tuned serves at least 0.52 times as many requests per second over HTTPS")
    assert handshakes.startswith("Without keep-alive, nginx/tuned completes at least 1,900 full TLS handshakes")
    assert handshakes.endswith("2,202 when resumed by tickets (2,200 of them resumed; at most 1.16 times).")
    share, _ = first(copy_run(db, run_id, doctor=_doctor(held=("http",))))
    assert share.startswith("nginx/tuned serves at most 0.52 times as many")
    share, _ = first(copy_run(db, run_id, doctor=_doctor(held=("http", "https"))))
    assert share.endswith(
        "(keep-alive) (the client set the pace of both at some of these levels, so the share may be the client's)."
    )
    # A cell that resumed under 95% of its handshakes is a mix: not compared as resumed.
    _, handshakes = first(copy_run(db, run_id, doctor=_doctor(resumed=1468, resumed_full=367)))
    assert handshakes.endswith(", 2,202 when resumed by tickets, but only 1,468 of them resumed (67%): not compared.")
    # A server that resumes nothing offered tickets says so, rather than a multiple of 0.
    _, handshakes = first(copy_run(db, run_id, doctor=_doctor(resumed=0)))
    assert handshakes.endswith(", none resumed by tickets (its server resumed no handshake: every one was full).")


def test_the_cost_of_tls_is_drawn_only_with_both_protocols(tls_run):
    db, run_id = tls_run
    store = Store(str(db))
    plain = results.load(store, copy_run(db, run_id, keep=lambda key, level, index: "/https" not in key))
    every = {c.name: c for c in charts.every_chart(charts.Measured([plain], charts.Choices()))}
    assert not any(every[name].drawn or every[name].missing for name in TLS_CHARTS)
    assert summary.tls_costs([plain]) == [] and "Cost of TLS" not in output.html([plain])
    https = results.load(store, copy_run(db, run_id, keep=lambda key, level, index: "/https" in key))
    every = {c.name: c for c in charts.every_chart(charts.Measured([https], charts.Choices()))}
    assert not every["tls_share"].drawn and every["tls_share"].missing == (
        "Not drawn: no server has both an http and an https cell with keep-alive that finished, to set side by side."
    )
    assert every["tls_handshakes"].drawn  # its full and resumed handshakes need no http cell


def test_tls_levels_carry_handshake_latency_counts_version_and_cpu_per_request(tls_run):
    db, run_id = tls_run
    run = _load(db, run_id)
    stored = {c["key"]: c for c in Store(str(db)).run(run_id)["cells"]}
    for cell in run.measured:
        rounds = {r["level"]: r["measurement"] for r in stored[cell.key]["rounds"]}
        for lv in cell.levels:
            m = rounds[lv.level]
            assert lv.server_cpu_per_request_us == pytest.approx(
                (lv.server_cpu_user + lv.server_cpu_sys) / lv.rps.mean * 1e6
            )
            if cell.protocol == "http":
                assert lv.handshake is None and lv.handshakes_full is None and lv.tls_versions == ()
                continue
            assert lv.tls_versions == ("1.3",) and lv.handshake.exact
            assert (lv.handshakes_full, lv.handshakes_resumed) == (
                m["tls"]["handshakes_full"],
                m["tls"]["handshakes_resumed"],
            )
            # One round: its own (none when it made no handshake, as a keep-alive level need not).
            timed = m["latency"]["tls_handshake"]
            assert lv.handshake.p50_us == (timed["p50_us"] if timed["count"] else None)
        assert cell.tls_version_used == (None if cell.protocol == "http" else "1.3")
    # Resumed cells resumed: the counts say so.
    resumed = [c for c in run.measured if c.resumption == "tickets"]
    assert resumed and all(sum(lv.handshakes_resumed for lv in c.levels) > 0 for c in resumed)


def test_show_prints_the_cost_of_tls_and_fits_tls_levels_in_80_columns(tls_run):
    db, run_id = tls_run
    shown = httpbench("show", str(run_id), "--db", str(db))
    assert shown.returncode == 0, shown.stderr
    assert "\ncost of TLS:\n  nginx/tuned serves " in shown.stdout
    assert "  Without keep-alive, reference/tuned completes " in shown.stdout
    out = Console(width=80, file=io.StringIO(), record=True)
    console.levels(_load(db, run_id), out)
    text = out.export_text()
    # The key, the version and the TLS words each on a line of their own.
    assert "nginx/tuned/7B/close/1cpu/https/tickets\nnginx version: nginx/" in re.sub(r" +\n", "\n", text)
    assert "TLS 1.3 (negotiated), ecdsa-p256, resumed by tickets" in " ".join(text.split())
    assert "TLS p50" in text and "CPU/req" in text  # the handshakes' latency, what a request cost
    assert max(len(line) for line in text.splitlines()) <= 80


def test_exports_name_protocol_tls_version_key_and_resumption(tls_run):
    db, run_id = tls_run
    out = httpbench("export", str(run_id), "--db", str(db), "--format", "csv")
    assert out.returncode == 0, out.stderr
    rows = list(csv.DictReader(io.StringIO(out.stdout)))
    assert len(rows) == 10 * 2
    for row in rows:
        https = row["protocol"] == "https"
        assert row["protocol"] in ("http", "https") and row["server_cpu_per_request_us"]
        assert (row["tls_version"], row["tls_key"]) == (("1.3", "ecdsa-p256") if https else ("", ""))
        if not https or row["keep_alive"] == "True":
            assert row["resumption"] == ""
        assert bool(row["handshakes_full"]) == https
        # A keep-alive level opens its connections before its window: it times only the
        # handshakes of connections nginx closed (after 1,000 requests each) and were opened again.
        made = https and int(row["handshakes_full"]) + int(row["handshakes_resumed"]) > 0
        assert bool(row["tls_handshake_p50_us"]) == made, row
    assert {r["resumption"] for r in rows if r["protocol"] == "https" and r["keep_alive"] == "False"} == {
        "none",
        "tickets",
    }
    document = json.loads(httpbench("export", str(run_id), "--db", str(db), "--format", "json").stdout)
    cells = {c["cell"]: c for c in document["cells"]}
    ticket = cells["nginx/tuned/7B/close/1cpu/https/tickets"]
    assert (ticket["protocol"], ticket["tls_version"], ticket["tls_key"], ticket["resumption"]) == (
        "https",
        "1.3",
        "ecdsa-p256",
        "tickets",
    )
    assert cells["nginx/tuned/7B/ka/1cpu"]["protocol"] == "http" and cells["nginx/tuned/7B/ka/1cpu"]["tls_key"] is None
    markdown = httpbench("export", str(run_id), "--db", str(db), "--format", "markdown").stdout
    assert "### 7B, HTTPS (TLS negotiated, ecdsa-p256), no keep-alive, resumed by tickets, 1 CPU" in markdown
    assert "### Cost of TLS\n\n- nginx/tuned serves " in markdown


def test_a_servers_http_and_https_levels_are_never_one_line(tls_run):
    """The charts against concurrency have a panel per protocol, keep-alive and handshakes: one
    with both would join a server's http and https levels into one zigzag line."""
    db, run_id = tls_run
    (throughput,) = [c for c in charts.all_charts([_load(db, run_id)]) if c.name == "throughput"]
    rows = throughput.spec.to_dict()["data"]["values"]
    points = [(r["series"], r["context"], r["cpus"], r["level"]) for r in rows]
    assert len(points) == len(set(points)) == 10 * 2
    assert {r["context"] for r in rows} == {
        "7B, keep-alive",
        "7B, no keep-alive",
        "7B, HTTPS (TLS negotiated, ecdsa-p256), keep-alive",
        "7B, HTTPS (TLS negotiated, ecdsa-p256), no keep-alive, full handshakes",
        "7B, HTTPS (TLS negotiated, ecdsa-p256), no keep-alive, resumed by tickets",
    }
