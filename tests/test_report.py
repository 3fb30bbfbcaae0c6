"""Reports of a real stored run: the HTML page in a real headless Chromium with the network off,
the PNG/SVG charts, the exports, `compare` on a run and on a doctored copy, and bad input."""

import copy
import csv
import io
import json
import subprocess
import sys
from pathlib import Path

import pytest

from httpbench import results
from httpbench.report import Choices, charts
from httpbench.store import Store

PLAN = """
name = "report-test"
description = "two servers, keep-alive on and off, two levels, two rounds"
servers = ["nginx", "reference"]
profiles = ["tuned"]
keep_alive = [true, false]
server_cpus = [1]
rounds = 2
warmup = "0.2s"
[[workload]]
kind = "generated"
size = 7
name = "index.html"
[levels]
list = [1, 20]
[budget]
duration = "0.4s"
"""
CHROMIUM = "/usr/bin/chromium"
# As the machine's probe starts it: no sandbox as root, nothing phoning home.
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def httpbench(*args, timeout=300):
    return subprocess.run([sys.executable, "-m", "httpbench", *args], capture_output=True, text=True, timeout=timeout)


@pytest.fixture(scope="module")
def stored(tmp_path_factory):
    """A short real sweep (nginx and reference), run through the CLI: (database path, run id, its stderr)."""
    base = tmp_path_factory.mktemp("report")
    plan = base / "plan.toml"
    plan.write_text(PLAN)
    db = base / "results.db"
    done = httpbench("run", str(plan), "--db", str(db))
    assert done.returncode == 0, done.stderr[-2000:]
    return db, 1, done.stderr


def copy_run(db: Path, run_id: int, throughput_scale: float, failed_cell: bool = False) -> int:
    """Store a copy of a run with every round's requests/s scaled (a doctored run), optionally
    with one more cell that failed before measuring."""
    store = Store(str(db))
    run = store.run(run_id)
    plan = type("Plan", (), {"name": run["plan_name"], "text": run["plan_text"]})
    new_id = store.start_run(plan, run["host"], run["versions"])
    for cell in run["cells"]:
        shape = type("Cell", (), {"key": cell["key"], "server": cell["server"], "profile": cell["profile"],
                                  "workload": type("W", (), {"label": cell["workload"]}), "keep_alive": cell["keep_alive"],
                                  "cpus": cell["cpus"]})
        cell_id = store.cell(new_id, shape, cell["config_text"], cell["server_version"])
        for r in cell["rounds"]:
            m = copy.deepcopy(r["measurement"])
            m["requests"]["per_second"] *= throughput_scale
            store.add_round(cell_id, r["level"], r["round"], m)
        store.finish_cell(cell_id, cell["status"], cell["seconds"], cell["error"])
    if failed_cell:
        shape.key, shape.server = "lighttpd/tuned/7B/ka/1cpu", "lighttpd"
        cell_id = store.cell(new_id, shape, "", "lighttpd/1.4")
        store.finish_cell(cell_id, "failed", 1.0, "lighttpd did not start: port in use")
    store.finish_run(new_id, "done")
    return new_id


def test_a_run_ends_with_its_report(stored):
    db, run_id, stderr = stored
    path = db.parent / f"report-run-{run_id}.html"
    assert f"report: {path}" in stderr
    assert path.stat().st_size > 500_000   # the Vega bundle is inlined: no CDN


def test_the_page_draws_every_chart_offline_in_chromium(stored, tmp_path):
    sync_api = pytest.importorskip("playwright.sync_api")
    assert Path(CHROMIUM).exists(), "Chromium is missing: apt-get install -y chromium (make test-deps does)"
    db, run_id, _ = stored
    page_file = tmp_path / "report.html"
    made = httpbench("report", str(run_id), "--db", str(db), "-o", str(page_file))
    assert made.returncode == 0, made.stderr
    names = [c.name for c in charts.all_charts([results.load(Store(str(db)), run_id)])]
    assert {"throughput", "latency", "server_cpu", "server_memory", "rps_bars", "total_time", "end_memory",
            "rating", "differences", "spectrum", "timeline"} <= set(names)
    problems = []
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            context = browser.new_context(offline=True, viewport={"width": 1400, "height": 900})
            # Anything but the file itself is a dependency the page must not have.
            context.route(lambda url: not url.startswith(("file:", "data:", "blob:")),
                          lambda route: (problems.append(f"request to {route.request.url}"), route.abort()))
            page = context.new_page()
            page.on("console", lambda m: m.type in ("error", "warning") and problems.append(f"console {m.type}: {m.text}"))
            page.on("pageerror", lambda e: problems.append(f"page error: {e}"))
            page.goto(page_file.as_uri())
            page.wait_for_function(
                "[...document.querySelectorAll('.chart')].every(c => c.querySelector('svg.marks'))", timeout=60_000)
            drawn = page.eval_on_selector_all(
                ".chart", "els => els.map(e => [e.id, e.querySelectorAll('svg.marks path, svg.marks line').length])")
            shot = tmp_path / "report.png"
            page.screenshot(path=str(shot), full_page=True)
            failed = page.eval_on_selector_all("tr.failed", "rows => rows.length")
        finally:
            browser.close()
    assert problems == []
    assert sorted(name.removeprefix("chart-") for name, _ in drawn) == sorted(names)
    assert all(marks > 5 for _, marks in drawn), drawn
    assert shot.stat().st_size > 50_000
    assert failed == 0


def _quantity_encodings(node, path=()):
    """Every positional encoding in a Vega-Lite spec, with where it is."""
    if isinstance(node, dict):
        encoding = node.get("encoding")
        if isinstance(encoding, dict):
            for channel in ("x", "y"):
                if isinstance(encoding.get(channel), dict) and encoding[channel].get("type") == "quantitative":
                    yield path + (channel,), encoding[channel]
        for key, value in node.items():
            if key != "encoding":
                yield from _quantity_encodings(value, path + (key,))
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from _quantity_encodings(value, path + (i,))


def test_every_quantity_axis_starts_at_zero(stored):
    db, run_id, _ = stored
    checked = 0
    for chart in charts.all_charts([results.load(Store(str(db)), run_id)]):
        for where, enc in _quantity_encodings(chart.spec.to_dict()):
            scale = enc.get("scale") or {}
            if scale.get("type") == "log":
                continue   # the spectrum's percentile axis: a position, not a quantity
            if "title" in enc:   # a drawn axis (layers that only reuse a field inherit it)
                assert scale.get("zero") is True, (chart.name, where, enc)
                assert "domain" not in scale or min(scale["domain"]) <= 0, (chart.name, where, enc)
                checked += 1
    assert checked >= 11


def test_png_and_svg_charts_are_written_and_not_blank(stored, tmp_path):
    from PIL import Image
    db, run_id, _ = stored
    made = httpbench("plot", str(run_id), "--db", str(db), "--format", "png", "-o", str(tmp_path / "png"))
    assert made.returncode == 0, made.stderr
    pngs = sorted((tmp_path / "png").glob("*.png"))
    assert len(pngs) >= 11
    for png in pngs:
        with Image.open(png) as image:
            image.load()
            colours = image.convert("RGB").getcolors(maxcolors=1 << 20)
            assert image.width > 300 and image.height > 200 and len(colours) > 20, png.name
    made = httpbench("plot", str(run_id), "--db", str(db), "--format", "svg", "-o", str(tmp_path / "svg"))
    assert made.returncode == 0, made.stderr
    for svg in (tmp_path / "svg").glob("*.svg"):
        assert svg.read_text().lstrip().startswith("<svg") and "<path" in svg.read_text()


def test_exports(stored):
    db, run_id, _ = stored
    run = results.load(Store(str(db)), run_id)
    levels = sum(len(c.levels) for c in run.measured)
    out = httpbench("export", str(run_id), "--db", str(db), "--format", "csv")
    rows = list(csv.DictReader(io.StringIO(out.stdout)))
    assert out.returncode == 0 and len(rows) == levels == 2 * 2 * 2
    assert all(float(r["rps_mean"]) > 0 and r["p99_us"] for r in rows)
    out = httpbench("export", str(run_id), "--db", str(db), "--format", "json")
    document = json.loads(out.stdout)
    assert document["schema"] == "httpbench-export/1" and len(document["levels"]) == levels
    out = httpbench("export", str(run_id), "--db", str(db), "--format", "markdown")
    assert "| `reference/tuned`" in out.stdout and "| relative |" in out.stdout and "times more" in out.stdout


def test_compare_finds_no_regression_against_itself_and_one_against_a_slower_copy(stored):
    db, run_id, _ = stored
    same = httpbench("compare", str(run_id), str(run_id), "--db", str(db), "--fail-on-regression", "5%")
    assert same.returncode == 0, same.stdout + same.stderr
    assert "0 faster, 0 slower" in same.stdout and "regression:" not in same.stderr
    slower = copy_run(db, run_id, 0.8)
    worse = httpbench("compare", str(run_id), str(slower), "--db", str(db), "--fail-on-regression", "5%")
    assert worse.returncode == 1, worse.stdout + worse.stderr
    assert "regression:" in worse.stderr and "-20.0%" in worse.stderr
    # Without the flag it only reports.
    assert httpbench("compare", str(run_id), str(slower), "--db", str(db)).returncode == 0


def test_a_run_with_a_failed_cell_still_renders_and_shows_it(stored, tmp_path):
    db, run_id, _ = stored
    with_failure = copy_run(db, run_id, 1.0, failed_cell=True)
    page = tmp_path / "failed.html"
    made = httpbench("report", str(with_failure), "--db", str(db), "-o", str(page))
    assert made.returncode == 0, made.stderr
    text = page.read_text()
    assert "lighttpd did not start: port in use" in text and 'class="failed"' in text


def test_bad_input_is_one_line(stored, tmp_path):
    db, run_id, _ = stored
    unknown = httpbench("report", "999", "--db", str(db))
    assert unknown.returncode == 2 and unknown.stderr.count("\n") == 1
    assert "there is no run 999; recent runs:" in unknown.stderr and str(run_id) in unknown.stderr
    store = Store(str(db))
    empty = store.start_run(type("Plan", (), {"name": "empty", "text": PLAN}), {}, {})
    store.finish_run(empty, "failed")
    nothing = httpbench("report", str(empty), "--db", str(db), "-o", str(tmp_path / "x.html"))
    assert nothing.returncode == 2 and "nothing to chart" in nothing.stderr and "Traceback" not in nothing.stderr
    assert not (tmp_path / "x.html").exists()
    bad = httpbench("compare", str(run_id), str(run_id), "--db", str(db), "--fail-on-regression", "lots")
    assert bad.returncode == 2 and "like 5%" in bad.stderr


def test_chart_choices(stored):
    db, run_id, _ = stored
    run = results.load(Store(str(db)), run_id)
    chosen = {c.name: c for c in charts.all_charts([run], Choices(baseline="nginx", level=1))}
    assert "at 1 connections" in chosen["spectrum"].title
    rows = charts.ratings(charts.Measured([run], Choices(baseline="nginx")))
    assert {r["baseline"] for r in rows} == {"nginx/tuned"}
    assert all(abs(r["rating"] - 100) < 1e-9 for r in rows if r["series"] == "nginx/tuned")
