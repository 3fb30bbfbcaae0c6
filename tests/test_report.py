"""Reports of a real stored run: the HTML page in a real headless Chromium with the network off,
the PNG/SVG charts, the exports, `compare` on a run and on doctored copies (slower, short of a
cell, failed partway), a single-level run, and bad input."""

import copy
import csv
import io
import json
import math
import re
import statistics
from pathlib import Path
from typing import Optional

import pytest
from conftest import httpbench
from httpbench import results
from httpbench.judge import honesty
from httpbench.judge.stats import LevelStats
from httpbench.load import engine
from httpbench.report import charts, output, summary, verdict
from httpbench.report.charts import Choices
from httpbench.results import compare, comparison
from httpbench.store.database import Store

# Four rounds: the 95% interval of a ratio of two 4-round means is about 2.2 times the rounds'
# coefficient of variation wide (t = 3.18), so a 20% drop stays beyond the noise on a busy host.
PLAN = """
name = "report-test"
description = "two servers, keep-alive on and off, two levels, four rounds"
servers = ["nginx", "reference"]
profiles = ["tuned"]
keep_alive = [true, false]
server_cpus = [1]
rounds = 4
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
SINGLE_LEVEL = (
    PLAN.replace('name = "report-test"', 'name = "single-level"')
    .replace("keep_alive = [true, false]", "keep_alive = [true]")
    .replace("rounds = 4", "rounds = 3")
    .replace("list = [1, 20]", "list = [8]")
)
# The same plan counting requests: a copy of a run under it is a run under another budget.
COUNTED = PLAN.replace('duration = "0.4s"', "requests = 20000")
KEEP_ALIVE, CLOSE = "reference/tuned/7B/ka/1cpu", "nginx/tuned/7B/close/1cpu"
# Copies that rank two cells name the reference server lighttpd (copy_run's `servers`).
AS_LIGHTTPD = {"reference": "lighttpd"}
LIGHTTPD_KEEP_ALIVE = "lighttpd/tuned/7B/ka/1cpu"
# Every chart a report has, written out here rather than taken from the code, so that one lost
# from the code fails the tests.
EVERY_CHART = {
    "throughput",
    "latency",
    "server_cpu",
    "server_memory",
    "rps_bars",
    "total_time",
    "end_memory",
    "rating",
    "differences",
    "spectrum",
    "timeline",
}
CHROMIUM = "/usr/bin/chromium"
# As the machine's probe starts it: no sandbox as root, nothing phoning home.
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


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


def copy_run(
    db: Path,
    run_id: int,
    throughput_scale: float = 1.0,
    failed_cell: bool = False,
    keep=lambda key, level, index: True,
    failure=None,
    doctor=None,
    plan_text=None,
    servers=None,
    versions=None,
) -> int:
    """Store a copy of a run (a doctored run): every round's requests/s scaled, only the rounds
    `keep(cell key, level, round)` picks (a cell left with none is not copied), the cell
    `failure` = (key, error) marked failed, each copied measurement passed to `doctor(cell key,
    level, round, measurement)` to edit, with `failed_cell` one more cell that failed before
    measuring, `plan_text` stored as its plan instead of the run's, and the servers `servers` names
    (old -> new) renamed: the reference server is the client's ceiling, never ranked, so a copy
    that ranks two cells names it as another server; `versions` (server -> version, by the new
    names) stored as their cells' server version."""
    store = Store(str(db))
    run = store.run(run_id)
    plan = type("Plan", (), {"name": run["plan_name"], "text": plan_text or run["plan_text"]})
    new_id = store.start_run(plan, run["host"], run["versions"])
    for cell in run["cells"]:
        rounds = [r for r in cell["rounds"] if keep(cell["key"], r["level"], r["round"])]
        if not rounds:
            continue
        server = (servers or {}).get(cell["server"], cell["server"])
        shape = type(
            "Cell",
            (),
            {
                "key": server + cell["key"].removeprefix(cell["server"]),
                "server": server,
                "profile": cell["profile"],
                "workload": type("W", (), {"label": cell["workload"]}),
                "keep_alive": cell["keep_alive"],
                "cpus": cell["cpus"],
                "budget": None,
                "protocol": cell["protocol"],
                "resumption": cell["resumption"],
                "streams": cell["streams"],
                "encoding": cell["encoding"],
                "idle": cell["idle_connections"] or 0,
                "slow": cell["slow_mode"],
                "slow_clients": cell["slow_clients"] or 0,
                "events_label": cell["events"] or "",
            },
        )
        tls = cell["tls_key"] and type("Tls", (), {"key": cell["tls_key"], "version": cell["tls_version"]})
        version = (versions or {}).get(server, cell["server_version"])
        cell_id = store.cell(new_id, shape, cell["config_text"], version, tls)
        for r in rounds:
            m = copy.deepcopy(r["measurement"])
            m["requests"]["per_second"] *= throughput_scale
            if doctor:
                doctor(cell["key"], r["level"], r["round"], m)
            store.add_round(cell_id, r["level"], r["round"], m)
        failed = failure and failure[0] == cell["key"]
        store.finish_cell(
            cell_id, "failed" if failed else cell["status"], cell["seconds"], failure[1] if failed else cell["error"]
        )
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
    assert path.stat().st_size > 500_000  # the Vega bundle is inlined: no CDN


# Whether every mark of a chart (its series read from the label Vega gives it) and every legend
# entry shows `hidden` (series -> hidden): a hidden series' marks at opacity 0, its entry faded.
SHOWS = """({chart, hidden}) => {
    const marks = [...document.querySelectorAll(chart + ' g.role-mark > [aria-label]')];
    const entries = [...document.querySelectorAll(chart + ' .role-legend-label text')];
    const series = e => (/(?:series|server\\/profile): ([^;]+)/.exec(e.getAttribute('aria-label')) || [])[1];
    return marks.length > 0 && entries.length === Object.keys(hidden).length
        && marks.every(e => (e.getAttribute('opacity') === '0') === hidden[series(e)])
        && entries.every(e => (e.getAttribute('opacity') !== '1') === hidden[e.textContent]);
}"""
MARKS = """chart => [...document.querySelectorAll(chart + ' g.role-mark > [aria-label]')]
    .map(e => [e.getAttribute('aria-label'), e.getAttribute('opacity')])"""
LEGEND = """chart => [...document.querySelectorAll(chart + ' .role-legend-label text')]
    .map(e => [e.textContent, e.getAttribute('opacity')])"""


def _expect_hidden(page, chart: str, hidden: dict) -> None:
    """Wait, 10 s at most, until the chart shows `hidden`: every mark of a hidden series
    invisible, every other one visible, and the legend agreeing."""
    from playwright.sync_api import TimeoutError as Timeout

    try:
        page.wait_for_function(SHOWS, arg={"chart": chart, "hidden": hidden}, timeout=10_000)
    except Timeout:
        pytest.fail(
            f"{chart} never showed {hidden}: marks {page.evaluate(MARKS, chart)}, legend {page.evaluate(LEGEND, chart)}"
        )


def draw_offline(page_file: Path, shot: Path, act=lambda page: None) -> tuple:
    """Open a report page in the real headless Chromium with the network off, wait until every
    chart is drawn, screenshot it and `act(page)` on it: (problems: requests, console errors and
    warnings, page errors; [chart element id, marks drawn]; rows of failed cells)."""
    from playwright import sync_api  # in the test extras: missing, this test fails rather than skips

    assert Path(CHROMIUM).exists(), "Chromium is missing: apt-get install -y chromium (make test-deps does)"
    problems = []
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            context = browser.new_context(offline=True, viewport={"width": 1400, "height": 900})
            # Anything but the file itself is a dependency the page must not have.
            context.route(
                lambda url: not url.startswith(("file:", "data:", "blob:")),
                lambda route: (problems.append(f"request to {route.request.url}"), route.abort()),
            )
            page = context.new_page()
            page.on(
                "console", lambda m: m.type in ("error", "warning") and problems.append(f"console {m.type}: {m.text}")
            )
            page.on("pageerror", lambda e: problems.append(f"page error: {e}"))
            page.goto(page_file.as_uri())
            page.wait_for_function(
                "[...document.querySelectorAll('.chart')].every(c => c.querySelector('svg.marks'))", timeout=60_000
            )
            drawn = page.eval_on_selector_all(
                ".chart", "els => els.map(e => [e.id, e.querySelectorAll('svg.marks path, svg.marks line').length])"
            )
            page.screenshot(path=str(shot), full_page=True)
            failed = page.eval_on_selector_all("tr.failed", "rows => rows.length")
            act(page)
        finally:
            browser.close()
    return problems, drawn, failed


def test_the_page_draws_every_chart_offline_in_chromium(stored, tmp_path):
    db, run_id, _ = stored
    page_file = tmp_path / "report.html"
    made = httpbench("report", str(run_id), "--db", str(db), "-o", str(page_file))
    assert made.returncode == 0, made.stderr
    names = [c.name for c in charts.all_charts([results.load(Store(str(db)), run_id)])]
    assert EVERY_CHART <= set(names)

    def legend(page):
        """A click hides that series, shift-click another too, a double-click shows all."""
        chart = "#chart-throughput"

        def entry(name):
            return page.locator(f"{chart} .role-legend-label text", has_text=name).first

        _expect_hidden(page, chart, {"nginx/tuned": False, "reference/tuned": False})
        entry("nginx/tuned").click()
        _expect_hidden(page, chart, {"nginx/tuned": True, "reference/tuned": False})
        entry("reference/tuned").click(modifiers=["Shift"])
        _expect_hidden(page, chart, {"nginx/tuned": True, "reference/tuned": True})
        entry("nginx/tuned").dblclick()
        _expect_hidden(page, chart, {"nginx/tuned": False, "reference/tuned": False})

    shot = tmp_path / "report.png"
    problems, drawn, failed = draw_offline(page_file, shot, legend)
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


def axes_from_zero(drawn) -> int:
    """Check that every quantity axis of the `drawn` charts starts at 0; how many were checked."""
    checked = 0
    for chart in drawn:
        for where, enc in _quantity_encodings(chart.spec.to_dict()):
            scale = enc.get("scale") or {}
            if scale.get("type") == "log":
                continue  # the spectrum's percentile axis: a position, not a quantity
            if "title" in enc:  # a drawn axis (layers that only reuse a field inherit it)
                assert scale.get("zero") is True, (chart.name, where, enc)
                assert "domain" not in scale or min(scale["domain"]) <= 0, (chart.name, where, enc)
                checked += 1
    return checked


def test_every_quantity_axis_starts_at_zero(stored):
    db, run_id, _ = stored
    assert axes_from_zero(charts.all_charts([results.load(Store(str(db)), run_id)])) >= 11


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
    assert "| `reference/tuned`" in out.stdout and " | req/s relative to " in out.stdout
    # nginx is the one server ranked; the reference server is the client's ceiling, never "fastest".
    assert "ceiling (reference/tuned): " in out.stdout and "reference/tuned is fastest" not in out.stdout


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


def _nodes(node):
    """Every object in a Vega-Lite spec."""
    if isinstance(node, dict):
        yield node
        node = list(node.values())
    if isinstance(node, list):
        for value in node:
            yield from _nodes(value)


def legend_hides_every_mark(drawn) -> None:
    """The spec of each of the `drawn` charts: the selection is the series clicked in the legend;
    an empty one hides nothing; every mark of a series (line, band, dot, bar, whisker) goes to
    opacity 0 when it is selected; the legend fades the selected entries and a double-click
    clears the selection."""
    for chart in drawn:
        spec = chart.spec.to_dict()
        (selection,) = [n for n in _nodes(spec) if n.get("name") == charts.HIDDEN and "select" in n]
        assert selection["select"] == {"type": "point", "fields": ["series"]} and selection["bind"] == "legend"
        opacities = [n["encoding"]["opacity"] for n in _nodes(spec) if "opacity" in (n.get("encoding") or {})]
        marks = [n for n in _nodes(spec) if "mark" in n and "datum" not in n.get("encoding", {}).get("y", {})]
        assert len(opacities) == len(marks), chart.name  # every mark but a reference line (the rating's 100)
        for opacity in opacities:
            assert opacity["condition"] == {"param": charts.HIDDEN, "empty": False, "value": 0.0}, (chart.name, opacity)
            assert opacity["value"] > 0, (chart.name, opacity)
        compiled = charts.vega(spec)
        (legend,) = [g for g in compiled["legends"] if "color" in (g.get("fill"), g.get("stroke"))]
        for part in ("symbols", "labels"):
            faded, shown = legend["encode"][part]["update"]["opacity"]
            assert faded["test"].startswith(f'length(data("{charts.HIDDEN}_store")) && ') and faded["value"] < 1
            assert shown == {"value": 1}
        (clicked,) = [s for s in compiled["signals"] if s["name"] == f"{charts.HIDDEN}_series_legend"]
        assert {"events": [{"source": "view", "type": "dblclick"}], "update": "null", "force": True} in clicked["on"]


def test_the_legend_selection_holds_the_hidden_series(stored):
    db, run_id, _ = stored
    legend_hides_every_mark(charts.all_charts([results.load(Store(str(db)), run_id)]))


def test_a_flagged_level_is_marked_on_every_chart(stored):
    db, run_id, _ = stored

    def flag(key, level, index, m):
        if (key, level) == (KEEP_ALIVE, 20):
            m["flags"] = [*m.get("flags", []), {"kind": "doctored", "reason": "the client set the pace"}]

    doctored = copy_run(db, run_id, doctor=flag)
    run = results.load(Store(str(db)), doctored)
    marked = set()
    for chart in charts.all_charts([run]):
        spec = chart.spec.to_dict()
        rows = spec["data"]["values"]
        flagged = [r for r in rows if r.get("flagged")]
        if any("doctored: " in r["flags"] and "the client set the pace" in r["flags"] for r in flagged):
            marked.add(chart.name)
        text = json.dumps(spec)
        assert f'"test": "datum.flagged", "value": "{charts.FLAG_OUTLINE}"' in text, chart.name  # outlined
        assert '"field": "flags"' in text, chart.name  # and said on hover
    assert any("flagged doctored" in c and "(outlined in black on the charts" in c for c in summary.cautions([run]))
    assert marked == EVERY_CHART


def test_a_cells_mean_is_the_mean_of_its_level_means(stored):
    db, run_id, _ = stored
    # Level 20 keeps one round, level 1 all four: averaging rounds would weigh level 1 four times.
    uneven = copy_run(db, run_id, keep=lambda key, level, index: level == 1 or index == 0)
    run = results.load(Store(str(db)), uneven)
    for group in comparison.groups(run.measured):
        for cell in group.cells:
            figures = group.figures(cell)
            level_means = [lv.rps.mean for lv in cell.levels]
            assert figures.mean_rps == pytest.approx(statistics.fmean(level_means))
            assert figures.mean_rps != pytest.approx(statistics.fmean(v for lv in cell.levels for v in lv.rps_values))
            assert figures.noise == pytest.approx(cell.levels[0].rps.cv)  # the one level with rounds to compare
    markdown = httpbench("export", str(uneven), "--db", str(db), "--format", "markdown").stdout
    assert "| round-to-round CV |" in markdown and "σ" not in markdown


def keep_alive_group(db: Path, run_id: int, key: str = KEEP_ALIVE) -> tuple:
    """The run read back, and its keep-alive group (the one holding `key`)."""
    run = results.load(Store(str(db)), run_id)
    (group,) = [g for g in comparison.groups(run.measured) if any(c.key == key for c in g.cells)]
    return run, group


def shown_every_way(db: Path, run_id: int, copied: int, page: Path) -> tuple:
    """`show`, the Markdown export and the report page of the run `copied`, having checked that
    `compare` against `run_id` counts what it lacks as a regression."""
    shown = httpbench("show", str(copied), "--db", str(db))
    assert shown.returncode == 0, shown.stderr
    markdown = httpbench("export", str(copied), "--db", str(db), "--format", "markdown").stdout
    made = httpbench("report", str(copied), "--db", str(db), "-o", str(page))
    assert made.returncode == 0, made.stderr
    worse = httpbench("compare", str(run_id), str(copied), "--db", str(db), "--fail-on-regression", "5%")
    assert worse.returncode == 1, worse.stdout + worse.stderr
    return shown.stdout, markdown, page.read_text()


def test_a_cell_short_of_levels_is_compared_on_the_levels_all_measured(stored, tmp_path):
    db, run_id, _ = stored
    # A finished cell without level 20, as a run under another plan would have it.
    short = copy_run(db, run_id, keep=lambda key, level, index: key != KEEP_ALIVE or level == 1, servers=AS_LIGHTTPD)
    _, group = keep_alive_group(db, short, LIGHTTPD_KEEP_ALIVE)
    assert group.levels == (1,) and group.every_level == (1, 20)
    cells = {c.key: c for c in group.cells}
    assert group.incomplete(cells[LIGHTTPD_KEEP_ALIVE]).startswith("measured level 1 of levels 1, 20")
    assert group.incomplete(cells["nginx/tuned/7B/ka/1cpu"]) is None
    # Its total time is not the shorter for having fewer levels: both are taken at level 1.
    for cell in group.cells:
        assert group.figures(cell).time_for_same_requests == pytest.approx(
            comparison.SAME_REQUESTS / cell.levels[0].rps.mean
        )
    shown, markdown, page = shown_every_way(db, run_id, short, tmp_path / "short.html")
    said = " ".join(shown.split())  # its sentences wrapped at 80 columns
    assert "incomplete" in said and "on average over level 1, the levels every cell measured" in said
    assert "`lighttpd/tuned` ⚑" in markdown and "incomplete (measured level 1 of levels 1, 20" in markdown
    assert "Requests/s over level 1:" in markdown and "lighttpd/tuned (incomplete)" in markdown
    assert "is incomplete: measured level 1 of levels 1, 20" in page


def test_a_cell_that_failed_partway_is_shown_incomplete_and_never_ranked(stored, tmp_path):
    db, run_id, _ = stored
    error = "reference died during level 20: server (pid 4242) died during the window"
    partial = copy_run(
        db, run_id, keep=lambda key, level, index: key != KEEP_ALIVE or level == 1, failure=(KEEP_ALIVE, error)
    )
    run, group = keep_alive_group(db, partial)
    # The finished cells set the levels compared on; the failed one is shown, not ranked.
    assert group.levels == group.every_level == (1, 20)
    cells = {c.key: c for c in group.cells}
    assert [c.key for c in group.ranked()] == ["nginx/tuned/7B/ka/1cpu"]
    assert group.incomplete(cells[KEEP_ALIVE]) == (
        "its cell failed (measured level 1 of levels 1, 20), so it is not ranked"
    )
    assert "incomplete" in group.flags(cells[KEEP_ALIVE])
    # Its group ranks nginx alone, the reference apart as the ceiling: no winner to name.
    (ranked,) = [v for v in verdict.verdicts([run]) if v.group.name == group.name]
    assert ranked.headline is None and [p.name for p in ranked.places] == ["nginx/tuned"]
    assert [c.key for c in ranked.unranked] == [KEEP_ALIVE]
    shown, markdown, page = shown_every_way(db, run_id, partial, tmp_path / "partial.html")
    said = " ".join(shown.split())  # wrapped at 80 columns
    assert error in said and "so it is not ranked" in said
    assert "reference/tuned (incomplete)" not in said  # no sentence ranks it
    # Its group's table ranks the finished cell only; the cautions under it name the failed one.
    table = markdown.split("### " + group.name)[1].split("###")[0].split("\n>")[0]
    assert "`nginx/tuned`" in table and "`reference/tuned`" not in table
    assert "so it is not ranked" in page
    # Listed once among the cautions, with its error.
    assert [c for c in summary.cautions([run]) if "reference/tuned" in c] == [
        f"reference/tuned ({group.name}) failed: {error}."
    ]


def test_a_cell_done_but_holding_the_level_its_server_died_in_is_no_result_anywhere(stored, tmp_path):
    """A cell stored "done" that still holds the round its server died in (an older httpbench
    resumed it so): it did not finish, so the run is no whole result, compare counts it missing,
    and the ratings neither take it as their 100 nor rate it."""
    db, run_id, _ = stored

    def died_at_20(key, level, index, m):
        if key == KEEP_ALIVE and level == 20:
            m["flags"] = [*m["flags"], {"kind": "crashed", "reason": "reference (pid 4242) died during the window"}]

    stopped = copy_run(db, run_id, doctor=died_at_20)
    run = results.load(Store(str(db)), stopped)
    cell = next(c for c in run.cells if c.key == KEEP_ALIVE)
    assert cell.status == "done" and not cell.finished and run.unfinished == [cell]
    guarded = httpbench("compare", str(run_id), str(stopped), "--db", str(db), "--fail-on-regression", "50%")
    assert guarded.returncode == 1, guarded.stdout + guarded.stderr
    assert (
        f"regression: {KEEP_ALIVE}: did not finish in run {stopped} (its server died during level 20); "
        "every level measured"
    ) in guarded.stderr, guarded.stderr
    # Level 20 of the dead server is no figure to compare; level 1, measured before it died, is.
    compared = compare.compare(results.load(Store(str(db)), run_id), run)
    assert {c.level for c in compared.changes if c.cell == KEEP_ALIVE} == {1}
    shown = httpbench("show", str(stopped), "--db", str(db))
    assert f"try them again with: httpbench run --resume {stopped} --db {db}" in shown.stdout.replace("\n", "")
    # Asked for as the baseline, it stands aside for the group's first finished cell, and is not rated.
    measured = charts.Measured([run], Choices(baseline="reference"))
    rows = charts.ratings(measured)
    ka = next(g for g in measured.groups if cell in g.cells)
    assert ka not in measured.rated_groups and {r["group"] for r in rows} == {g.name for g in measured.rated_groups}
    assert all(r["baseline"] == "reference/tuned" for r in rows) and len(rows) == 2
    drawn = {c.name: c for c in charts.all_charts([run], Choices(baseline="reference"))}
    assert f"Left out, as their cells did not finish: reference/tuned ({ka.name})." in drawn["rating"].note
    differences = drawn["differences"].spec.to_dict()["data"]["values"]
    assert differences and all(r["group"] != ka.name for r in differences)


def test_compare_counts_a_cell_missing_in_run_b_as_a_regression(stored):
    db, run_id, _ = stored
    short = copy_run(db, run_id, keep=lambda key, level, index: key != CLOSE)
    listed = httpbench("compare", str(run_id), str(short), "--db", str(db))
    assert listed.returncode == 0 and f"missing: {CLOSE}: not in run {short}" in listed.stdout
    guarded = httpbench("compare", str(run_id), str(short), "--db", str(db), "--fail-on-regression", "5%")
    assert guarded.returncode == 1, guarded.stdout + guarded.stderr
    assert f"regression: {CLOSE}: not in run {short}" in guarded.stderr
    # The other way round, a cell only B has is no regression.
    assert httpbench("compare", str(short), str(run_id), "--db", str(db), "--fail-on-regression", "50%").returncode == 0


def test_a_baseline_or_level_the_run_lacks_is_refused(stored, tmp_path):
    db, run_id, _ = stored
    for command in ("report", "plot"):
        out = tmp_path / command
        wrong = httpbench(command, str(run_id), "--db", str(db), "-o", str(out), "--baseline", "lighttpd")
        assert wrong.returncode == 2 and wrong.stderr.count("\n") == 1, wrong.stderr
        assert (
            "--baseline lighttpd is not a server of run 1: choose one of nginx, nginx/tuned, reference" in wrong.stderr
        )
        wrong = httpbench(command, str(run_id), "--db", str(db), "-o", str(out), "--level", "5")
        assert wrong.returncode == 2 and wrong.stderr.count("\n") == 1, wrong.stderr
        assert "--level 5 was not measured in run 1: choose one of 1, 20" in wrong.stderr
        assert not out.exists()


def test_reading_commands_refuse_a_database_that_does_not_exist(tmp_path):
    db = tmp_path / "nowhere" / "results.db"
    for args in (
        ["report", "1"],
        ["plot", "1", "-o", str(tmp_path / "png")],
        ["export", "1"],
        ["compare", "1", "2"],
        ["show", "1"],
        ["runs"],
    ):
        done = httpbench(*args, "--db", str(db))
        assert (
            done.returncode == 2
            and done.stderr
            == f"httpbench: no database at {db}: 'httpbench run' makes one; give --db the file or URL it wrote\n"
        ), (args, done.stderr)
    assert not db.parent.exists()


def _time_of(group: comparison.Group, key: str) -> float:
    return group.figures(next(c for c in group.cells if c.key == key)).time_for_same_requests


def test_several_runs_under_different_plans_compare_their_times_at_the_rates(stored, tmp_path):
    """A copy of the run whose plan counts requests, reported with the run: their cells share
    groups, and a measured time of 20,000 requests against one derived for 100,000 would make
    the same throughput look 2.5 times faster; both are derived from the rates instead."""
    db, run_id, _ = stored
    counted = copy_run(db, run_id, plan_text=COUNTED)
    store = Store(str(db))
    runs = [results.load(store, run_id), results.load(store, counted)]
    for group in comparison.groups([c for r in runs for c in r.measured]):
        assert len(group.cells) == 4 and group.requests_budget is None
        for cell in group.cells:
            assert group.figures(cell).time_for_same_requests == pytest.approx(
                sum(comparison.SAME_REQUESTS / lv.rps.mean for lv in cell.levels)
            )
    for said in verdict.verdicts(runs):
        fastest = said.places[0].cell.series
        original, copy_ = f"{fastest} (run {run_id})", f"{fastest} (run {counted})"
        # A clause may follow: the client set the pace of both, as it would any run's copy.
        assert any(
            d.startswith(
                f"{original} serves as many requests per second on average as {copy_}; {copy_} needs "
                f"as much time as {original} to serve the same requests"
            )
            for d in said.details
        ), said.details
    (total,) = [c for c in charts.all_charts(runs) if c.name == "total_time"]
    assert total.note.startswith("The cells did not all serve one requests budget")
    page = tmp_path / "two-plans.html"
    made = httpbench("report", str(run_id), str(counted), "--db", str(db), "-o", str(page))
    assert made.returncode == 0, made.stderr
    text = page.read_text()
    assert f"nginx/tuned (run {counted})" in text and "as many requests per second on average as" in text
    markdown = httpbench("export", str(run_id), str(counted), "--db", str(db), "--format", "markdown").stdout
    assert f"`reference/tuned (run {counted})`" in markdown and "needs as much time as" in markdown
    # Alone, the copy's groups share its budget: their time is measured, a round's per level.
    (alone,) = [c for c in charts.all_charts([runs[1]]) if c.name == "total_time"]
    assert alone.note.startswith("Measured: the wall time of a round of each level")
    for group in comparison.groups(runs[1].measured):
        assert group.requests_budget == 20000
        for cell in group.cells:
            assert _time_of(group, cell.key) == pytest.approx(sum(lv.duration_s / lv.rps.n for lv in cell.levels))


def test_a_loser_that_needs_less_time_is_explained(stored):
    # nginx is faster at level 1 (20,000 against 10,000 req/s), reference at level 20 (60,000
    # against 30,000): reference wins the mean throughput, nginx the time for the same requests.
    rates = {("nginx", 1): 20_000, ("nginx", 20): 30_000, ("reference", 1): 10_000, ("reference", 20): 60_000}

    def doctor(key, level, index, m):
        m["requests"]["per_second"] = rates[key.split("/")[0], level]
        m["flags"] = []  # a client-saturated level of the real run would make the ratios bounds ("at least")

    db, run_id, _ = stored
    crossed = copy_run(db, run_id, doctor=doctor, servers=AS_LIGHTTPD)
    (said, _) = verdict.verdicts([results.load(Store(str(db)), crossed)])
    assert said.details[0] == (
        "lighttpd/tuned serves 1.40 times more requests per second on average than nginx/tuned; nginx/tuned "
        "needs 0.71 times the time of lighttpd/tuned to serve the same requests (nginx/tuned is faster at "
        "level 1: the time is a sum over the levels, so the slowest weigh most)."
    )


def test_a_measured_total_time_is_a_rounds_so_fewer_rounds_are_not_faster(stored):
    db, run_id, _ = stored
    store = Store(str(db))
    every = results.load(store, copy_run(db, run_id, plan_text=COUNTED))
    # Level 20 of one cell keeps one of its four rounds, as a level cut short or rounds = "auto" would.
    uneven = results.load(
        store,
        copy_run(
            db, run_id, plan_text=COUNTED, keep=lambda key, level, index: key != KEEP_ALIVE or level == 1 or index == 0
        ),
    )
    (short,) = [g for g in comparison.groups(uneven.measured) if any(c.key == KEEP_ALIVE for c in g.cells)]
    (whole,) = [g for g in comparison.groups(every.measured) if any(c.key == KEEP_ALIVE for c in g.cells)]
    assert [lv.rps.n for c in short.cells if c.key == KEEP_ALIVE for lv in c.levels] == [4, 1]
    # Summing the rounds' wall times made it 0.62 times as long (four rounds and one against eight).
    assert _time_of(short, KEEP_ALIVE) == pytest.approx(_time_of(whole, KEEP_ALIVE), rel=0.15)


def test_a_baseline_without_a_cell_in_a_group_falls_back_to_its_first_and_says_so(stored, tmp_path):
    db, run_id, _ = stored
    reference_only = lambda key, level, index: key.startswith("reference/")  # noqa: E731
    rated = copy_run(
        db, run_id, keep=reference_only, plan_text=PLAN.replace("rounds = 4", 'rounds = 4\nbaseline = "nginx"')
    )
    faster = copy_run(db, run_id, 1.1, keep=reference_only)
    store = Store(str(db))
    runs = [results.load(store, rated), results.load(store, faster)]
    assert runs[0].baseline == "nginx"
    # Alone, a cell per group: nothing to rate, rather than a lone bar at 100.
    assert not {"rating", "differences"} & {c.name for c in charts.all_charts(runs[:1])}
    stand_in = f"reference/tuned (run {rated})"
    rows = charts.ratings(charts.Measured(runs, Choices()))
    assert {r["baseline"] for r in rows} == {stand_in} and len(rows) == 4
    assert sorted(round(r["rating"]) for r in rows) == [100, 100, 110, 110]
    drawn = {c.name: c for c in charts.all_charts(runs)}
    for group in comparison.groups([c for r in runs for c in r.measured]):
        for name in ("rating", "differences"):
            assert (
                f"nginx has no measured cell in {group.name}, so that group's baseline is its first finished "
                f"cell, {stand_in}."
            ) in drawn[name].note, drawn[name].note
    page = tmp_path / "fallback.html"
    made = httpbench("report", str(rated), str(faster), "--db", str(db), "-o", str(page))
    assert made.returncode == 0, made.stderr
    assert page.read_text().count("nginx has no measured cell in") == 3 * 2  # both charts' notes and the table's


def test_vega_refuses_a_compiled_spec_whose_legend_toggle_it_cannot_patch(stored, monkeypatch):
    """vega() patches Vega-Lite's internal names: a version that renames them must fail here,
    not ship a legend that fades the shown series."""
    db, run_id, _ = stored
    spec = charts.all_charts([results.load(Store(str(db)), run_id)])[0].spec.to_dict()
    compile_vega = charts.vl_convert.vegalite_to_vega

    def signal_renamed(vega_lite):
        compiled = compile_vega(vega_lite)
        for signal in compiled["signals"]:
            signal["name"] = signal["name"].replace("_series_legend", "_legend")
        return compiled

    def legend_plain(vega_lite):
        compiled = compile_vega(vega_lite)
        for legend in compiled["legends"]:
            legend.pop("encode", None)
        return compiled

    monkeypatch.setattr(charts.vl_convert, "vegalite_to_vega", signal_renamed)
    with pytest.raises(charts.LegendToggleLost, match="without the signal hidden_series_legend: charts.vega must"):
        charts.vega(spec)
    monkeypatch.setattr(charts.vl_convert, "vegalite_to_vega", legend_plain)
    with pytest.raises(
        charts.LegendToggleLost,
        match="without the opacity rule of the legend's symbols or the opacity rule of the legend's labels",
    ):
        charts.vega(spec)


def test_compare_with_one_round_per_level_calls_a_change_within_5_percent_noise(stored):
    """The quick plan's default, one round per level, gives no interval: a change within
    honesty.NOISY_CV is noise, a larger one is not."""
    db, run_id, _ = stored
    first = lambda key, level, index: index == 0  # noqa: E731
    before = copy_run(db, run_id, keep=first)
    store = Store(str(db))
    assert honesty.NOISY_CV == 0.05
    for scale, verdicts in ((0.97, {"within the noise"}), (0.8, {"slower"})):
        after = copy_run(db, run_id, scale, keep=first)
        changes = compare.compare(results.load(store, before), results.load(store, after)).changes
        assert len(changes) == 8 and all(c.interval is None for c in changes)
        assert {c.verdict for c in changes} == verdicts
        guarded = httpbench("compare", str(before), str(after), "--db", str(db), "--fail-on-regression", "2%")
        if scale == 0.97:  # 3% lower, beyond 2%, but within the noise of one round
            assert guarded.returncode == 0 and "8 within the noise" in guarded.stdout, guarded.stdout + guarded.stderr
        else:
            assert guarded.returncode == 1 and guarded.stderr.count("-20.0% requests/s") == 8, guarded.stderr


def test_a_level_where_every_request_failed_has_no_latency(stored, tmp_path):
    db, run_id, _ = stored

    def every_request_failed(key, level, index, m):
        if (key, level) == (KEEP_ALIVE, 20):
            m["requests"].update(completed=0, per_second=0.0)
            m["errors"], m["errors_total"] = {"timeout": 20}, 20
            m["latency"]["total"] = engine.merge_latency([])  # an empty histogram, as the engine stores it

    failing = copy_run(db, run_id, doctor=every_request_failed)
    run = results.load(Store(str(db)), failing)
    level = next(c for c in run.measured if c.key == KEEP_ALIVE).levels[-1]
    assert level.level == 20 and level.latency.p50_us is None and level.latency.summaries == ()
    drawn = {c.name: c for c in charts.all_charts([run], Choices(level=20))}
    assert drawn["latency"].note == "Percentiles of all rounds' histograms added together."
    drawn_levels = {(r["series"], r["context"], r["level"]) for r in drawn["latency"].spec.to_dict()["data"]["values"]}
    assert ("reference/tuned", "7B, keep-alive", 20) not in drawn_levels and len(drawn_levels) == 4 * 2 - 1
    spectra = {(r["series"], r["context"]) for r in drawn["spectrum"].spec.to_dict()["data"]["values"]}
    assert len(spectra) == 3 and ("reference/tuned", "7B, keep-alive, 1 CPU, 20 connections") not in spectra
    page = tmp_path / "failing.html"
    made = httpbench("report", str(failing), "--db", str(db), "-o", str(page), "--level", "20")
    assert made.returncode == 0, made.stderr


def test_noisy_levels_are_explained_with_the_threshold_that_flags_them(stored):
    db, run_id, _ = stored

    def spread(key, level, index, m):
        if (key, level) == (KEEP_ALIVE, 20):
            m["requests"]["per_second"] *= (0.8, 1.2)[index % 2]

    run = results.load(Store(str(db)), copy_run(db, run_id, doctor=spread))
    (caution,) = [c for c in summary.cautions([run]) if "flagged noisy" in c]
    assert f"flagged noisy: the rounds disagree by more than {honesty.NOISY_CV:.0%} (" in caution


@pytest.fixture(scope="module")
def single_level(tmp_path_factory):
    """A real sweep of one level (nginx and reference, three rounds) whose report cannot be
    written: a directory stands where it would go. (database path, the run's result)."""
    base = tmp_path_factory.mktemp("single")
    plan = base / "plan.toml"
    plan.write_text(SINGLE_LEVEL)
    (base / "report-run-1.html").mkdir()
    return base / "results.db", httpbench("run", str(plan), "--db", str(base / "results.db"))


def test_a_report_that_fails_after_a_run_is_a_warning(single_level):
    db, done = single_level
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr[-2000:]
    (warning,) = [line for line in done.stderr.splitlines() if "report failed" in line]
    assert warning.startswith("httpbench: warning: run 1 is stored but its report failed (")
    assert warning.endswith(f"; retry with: httpbench report 1 --db {db}")
    assert len(Store(str(db)).run(1)["cells"]) == 2


def test_a_single_level_run_reports(single_level, tmp_path):
    db, _ = single_level
    page = tmp_path / "single.html"
    made = httpbench("report", "1", "--db", str(db), "-o", str(page))
    assert made.returncode == 0, made.stderr
    names = {c.name for c in charts.all_charts([results.load(Store(str(db)), 1)])}
    assert {"throughput", "rps_bars", "total_time", "end_memory", "rating", "spectrum", "timeline"} <= names
    markdown = httpbench("export", "1", "--db", str(db), "--format", "markdown").stdout
    # nginx is ranked alone, against the reference server's ceiling: no winner, a ceiling line.
    assert "Requests/s over level 8:" in markdown and "\nceiling (reference/tuned): " in markdown
    rows = list(csv.DictReader(io.StringIO(httpbench("export", "1", "--db", str(db), "--format", "csv").stdout)))
    assert [(r["level"], r["rounds"]) for r in rows] == [("8", "3"), ("8", "3")]


def _rates(nginx: float, spread: float = 0.0, flag: Optional[dict] = None, flag_level: int = 20):
    """A doctor for copy_run: the other server's rounds at 10,000 requests/s and nginx's at `nginx` times
    that at every level, the rounds `spread` above and below in turn (an even count averages to
    it); the stored flags dropped, `flag` raised on nginx's `flag_level`."""

    def doctor(key, level, index, m):
        rate = 10_000 * (nginx if key.startswith("nginx/") else 1)
        m["requests"]["per_second"] = rate * (1 + spread * (-1) ** index)
        m["flags"] = [flag] if flag and key.startswith("nginx/") and level == flag_level else []

    return doctor


def first_round(key, level, index):
    return index == 0


def test_a_gap_within_the_noise_of_single_rounds_is_a_tie(stored):
    """One round per level (the quick plan's) gives no interval: under 5% there is no winner."""
    db, run_id, _ = stored
    store = Store(str(db))
    close = results.load(store, copy_run(db, run_id, keep=first_round, servers=AS_LIGHTTPD, doctor=_rates(1.01)))
    for said in verdict.verdicts([close]):
        assert said.headline == (
            "nginx/tuned and lighttpd/tuned tie, about 10,100 requests/s on average over "
            "every level: nginx/tuned serves as many requests per second on average as "
            "lighttpd/tuned."
        )
        noise = "(1.01 times: within 5%, which single rounds cannot tell from noise)"
        assert said.details == [
            f"nginx/tuned serves as many requests per second on average as lighttpd/tuned "
            f"{noise}; lighttpd/tuned needs as much time as nginx/tuned to serve the same "
            f"requests {noise}."
        ]
    apart = results.load(store, copy_run(db, run_id, keep=first_round, servers=AS_LIGHTTPD, doctor=_rates(1.06)))
    for said in verdict.verdicts([apart]):
        assert said.headline == "nginx/tuned is fastest, 10,600 requests/s on average over every level."
        assert said.details == [
            "nginx/tuned serves 1.06 times more requests per second on average than "
            "lighttpd/tuned; lighttpd/tuned needs 1.06 times the time of nginx/tuned to "
            "serve the same requests."
        ]


def test_the_spread_of_several_levels_adds_their_intervals_in_quadrature():
    """Worked by hand from compare's formula: the relative half-width of a sum over levels whose
    terms are weight(mean) is hypot(weight(mean) * ci95 / mean over the levels) / sum of weights,
    the weight the mean itself for requests/s and 1 / mean for the time."""

    def level(mean: float, ci95: float) -> LevelStats:
        return LevelStats(n=4, min=mean, mean=mean, max=mean, median=mean, stdev=0.0, ci95=ci95, cv=0.0)

    # Both 10% off: the two weightings give one figure, sqrt(10**2 + 30**2) / 400.
    even = [level(100, 10), level(300, 30)]
    assert compare.spread(even) == pytest.approx(math.hypot(10, 30) / 400)
    assert compare.time_spread(even) == pytest.approx(math.hypot(10 / 100**2, 30 / 300**2) / (1 / 100 + 1 / 300))
    # 10% and 20% off: the requests/s weigh the level of 300 three times, the time the level of 100.
    uneven = [level(100, 10), level(300, 60)]
    assert compare.spread(uneven) == pytest.approx(math.sqrt(10**2 + 60**2) / 400)  # 0.1521
    assert compare.time_spread(uneven) == pytest.approx(math.hypot(0.1 / 100, 0.2 / 300) / (4 / 300))  # 0.0901
    # A level of one round gives no interval, so the sum has none.
    assert compare.spread([level(100, 10), LevelStats.of([300])]) is None


def test_a_gap_whose_95_percent_interval_contains_1_is_a_tie_as_compare_says(stored):
    """With rounds, the tie is compare's: the ratio's 95% interval, from the levels' intervals."""
    db, run_id, _ = stored
    store = Store(str(db))
    for spread, tie in ((0.10, True), (0.005, False)):
        run = results.load(store, copy_run(db, run_id, servers=AS_LIGHTTPD, doctor=_rates(1.03, spread)))
        for group, said in zip(comparison.groups(run.measured), verdict.verdicts([run])):
            nginx, reference = (group.figures(c) for c in group.ranked())
            ratio = nginx.mean_rps / reference.mean_rps
            rates = [[lv.rps for lv in f.levels] for f in (nginx, reference)]
            interval = compare.ratio_interval(ratio, *map(compare.spread, rates))
            assert ratio == pytest.approx(1.03) and compare.within_noise(ratio, interval) is tie
            if tie:
                assert said.headline.startswith("nginx/tuned and lighttpd/tuned tie, about 10,300 requests/s")
                assert (
                    f"(1.03 times: within the noise, its 95% interval {interval[0]:.2f} to {interval[1]:.2f})"
                    in said.details[0]
                )
            else:
                assert said.headline == "nginx/tuned is fastest, 10,300 requests/s on average over every level."


def test_a_winner_the_client_held_back_wins_by_at_least(stored):
    db, run_id, _ = stored
    store = Store(str(db))
    held = {"kind": "client_saturated", "reason": "the busiest client thread was 97% busy (> 90%)"}
    ahead = results.load(
        store, copy_run(db, run_id, keep=first_round, servers=AS_LIGHTTPD, doctor=_rates(1.10, flag=held))
    )
    for said in verdict.verdicts([ahead]):
        assert said.headline == (
            "nginx/tuned is fastest, at least 11,000 requests/s on average over every level; "
            "the client, not the server, set nginx/tuned's pace at level 20, so it may be "
            "faster still."
        )
        assert said.details == [
            "nginx/tuned serves at least 1.10 times more requests per second on average than "
            "lighttpd/tuned; lighttpd/tuned needs at least 1.10 times the time of "
            "nginx/tuned to serve the same requests."
        ]
    even = results.load(
        store, copy_run(db, run_id, keep=first_round, servers=AS_LIGHTTPD, doctor=_rates(1.01, flag=held))
    )
    for said in verdict.verdicts([even]):
        assert said.headline.startswith(
            "nginx/tuned and lighttpd/tuned tie, at least 10,100 requests/s on average "
            "over every level: nginx/tuned serves at least as many requests per second"
        )


def test_the_markdown_ratio_says_what_it_divides_and_the_fastest_is_1(stored):
    db, run_id, _ = stored
    apart = copy_run(db, run_id, keep=first_round, doctor=_rates(1.10))
    markdown = httpbench("export", str(apart), "--db", str(db), "--format", "markdown").stdout
    assert (
        markdown.count(
            "| server/profile | mean req/s | round-to-round CV | min | max | req/s relative to nginx/tuned |"
        )
        == 2
    )
    assert markdown.count("| `nginx/tuned` | 11,000 | - | 11,000 | 11,000 | 1.00 |") == 2
    assert markdown.count("| `reference/tuned` | 10,000 | - | 10,000 | 10,000 | 0.91 |") == 2


def test_rating_and_differences_name_their_baseline_and_what_was_measured(stored):
    db, run_id, _ = stored
    store = Store(str(db))
    both = {c.name: c for c in charts.all_charts([results.load(store, run_id)])}
    assert both["rating"].title == "Rating: nginx/tuned = 100, keep-alive on and off side by side"
    assert both["differences"].title == "Difference to nginx/tuned at each level"
    keep_alive = results.load(store, copy_run(db, run_id, keep=lambda key, level, index: "/ka/" in key))
    drawn = {c.name: c for c in charts.all_charts([keep_alive])}
    assert drawn["rating"].title == "Rating: nginx/tuned = 100"
    assert "rating (nginx/tuned = 100)" in json.dumps(drawn["rating"].spec.to_dict())
    assert "difference to nginx/tuned (%)" in json.dumps(drawn["differences"].spec.to_dict())
    page = output.html([keep_alive])
    assert (
        "relative to nginx/tuned in the same workload and CPU count, as the 2010 LiteSpeed write-up rated "
        "servers." in page
    )
    assert "side by side" not in page


def test_a_timeline_of_too_few_seconds_is_left_out_and_says_why(stored):
    """A level of one round of 1 s (the quick plan's) records a second or two: a dot, no line."""
    db, run_id, _ = stored
    store = Store(str(db))
    single = results.load(store, copy_run(db, run_id, keep=first_round))
    assert "timeline" not in {c.name for c in charts.all_charts([single])}
    (timeline,) = [c for c in charts.every_chart(charts.Measured([single], Choices())) if c.name == "timeline"]
    assert timeline.missing.startswith("Not drawn for nginx/tuned (7B, keep-alive, 1 CPU, 20 connections); ")
    assert timeline.missing.endswith(
        ": fewer than 3 seconds of the level were recorded, all rounds together, "
        "which draw a dot, not a line; longer levels or more rounds give one."
    )
    page = output.html([single])
    assert f'<p class="note">{timeline.missing}</p>' in page and 'href="#timeline"' in page
    # Cells with enough seconds are drawn; the others are named under the chart.
    nginx_rounds = results.load(
        store, copy_run(db, run_id, keep=lambda key, level, index: "nginx" in key or index == 0)
    )
    (drawn,) = [c for c in charts.all_charts([nginx_rounds]) if c.name == "timeline"]
    assert {r["series"] for r in drawn.spec.to_dict()["data"]["values"]} == {"nginx/tuned"}
    assert "Not drawn for reference/tuned (7B, keep-alive, 1 CPU, 20 connections); reference/tuned" in drawn.note


def test_every_level_table_fits_the_page_with_its_flags_in_chromium(stored, tmp_path):
    """The per-level tables of a page 1,024 pixels wide: no sideways scrolling, and each flag's
    kind and reason in view (a last column of them was pushed out of sight)."""
    from playwright import sync_api

    db, run_id, _ = stored
    reason = "the busiest client thread was 97% busy (> 90%): the client, not the server, may have set the pace"
    flagged = copy_run(db, run_id, doctor=_rates(1.1, flag={"kind": "client_saturated", "reason": reason}))
    page_file = tmp_path / "flags.html"
    page_file.write_text(output.html([results.load(Store(str(db)), flagged)]))
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = browser.new_context(offline=True, viewport={"width": 1024, "height": 800}).new_page()
            page.goto(page_file.as_uri())
            page.eval_on_selector_all("details", "all => all.forEach(d => d.open = true)")
            # Per cell's table: where it ends, where its card ends, and where each text showing
            # the flag's kind or reason ends (a tooltip is not shown).
            tables = page.eval_on_selector_all(
                "details:has(table)",
                """(all, reason) => all.map(d => {
                const card = d.closest('section').getBoundingClientRect().right;
                const walker = document.createTreeWalker(d, NodeFilter.SHOW_TEXT);
                const shown = {kind: [], reason: []};
                while (walker.nextNode()) {
                    const range = document.createRange();
                    range.selectNodeContents(walker.currentNode);
                    const text = walker.currentNode.textContent;
                    for (const [part, value] of [['kind', 'client_saturated'], ['reason', reason]])
                        if (text.includes(value)) shown[part].push(range.getBoundingClientRect().right <= card);
                }
                return {table: d.querySelector('table').getBoundingClientRect().right, card, ...shown};
            })""",
                reason,
            )
        finally:
            browser.close()
    assert len(tables) == 4
    for table in tables:
        assert table["table"] <= table["card"], table
    # nginx's two cells are flagged at level 20, reference's are not.
    assert [(t["kind"], t["reason"]) for t in tables] == [([True], [True])] * 2 + [([], [])] * 2, tables


JETTY_VERSION = 'jetty 9.4.57.v20241219 on openjdk version "17.0.15" 2025-04-15'


def test_show_piped_fits_its_tables_in_80_columns_with_a_long_version(stored):
    """`show | cat`: every line within 80 columns (the level tables were 85), the version on a line
    of its own under the cell's key (jetty's long one wrapped the title)."""
    db, run_id, _ = stored
    jetty = copy_run(db, run_id, servers={"nginx": "jetty9"}, versions={"jetty9": JETTY_VERSION})
    shown = httpbench("show", str(jetty), "--db", str(db))
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()
    assert max(map(len, lines)) <= 80, [line for line in lines if len(line) > 80]
    assert sum(line.strip() == JETTY_VERSION for line in lines) == 2, shown.stdout  # both jetty cells
    assert any(line.strip() == "jetty9/tuned/7B/ka/1cpu" for line in lines), shown.stdout
    assert any(re.match(r"^1 +jetty9/tuned +[\d,]+ +100\.0%", line) for line in lines), shown.stdout


def test_the_reference_server_is_the_ceiling_never_the_fastest(stored, tmp_path):
    """Three times nginx's throughput, the reference server still ranks nowhere: it is printed as
    the client's ceiling, and "fastest" names the best server a user can deploy."""
    db, run_id, _ = stored

    def fast_reference(key, level, index, m):
        m["requests"]["per_second"] = 30_000 if key.startswith("reference/") else 10_000
        m["flags"] = []

    def slow(key, level, index, m):
        m["requests"]["per_second"], m["flags"] = 5_000, []

    ahead = copy_run(db, run_id, keep=first_round, doctor=fast_reference)
    slower = copy_run(db, run_id, keep=first_round, doctor=slow, servers={"nginx": "lighttpd"})
    store = Store(str(db))
    runs = [results.load(store, ahead), results.load(store, slower)]
    for said in verdict.verdicts(runs):
        assert [p.cell.server for p in said.places] == ["nginx", "lighttpd"]
        assert said.places[0].rank == 1 and said.places[0].share == 1.0
        assert said.headline.startswith(f"nginx/tuned (run {ahead}) is fastest, 10,000 requests/s")
        assert said.ceiling == f"ceiling (reference/tuned (run {ahead})): 30,000 req/s, the client's limit, not ranked"
        assert not any("reference" in line for line in [said.headline, *said.details])
        assert all(row[0] != "-" for row in said.table(True).shown())
    shown = httpbench("show", str(ahead), "--db", str(db)).stdout
    assert shown.count("ceiling (reference/tuned): 30,000 req/s, the client's limit, not ranked") == 2, shown
    assert "is fastest" not in shown and "reference/tuned serves" not in shown  # one server ranked: no winner
    page = tmp_path / "ceiling.html"
    assert httpbench("report", str(ahead), "--db", str(db), "-o", str(page)).returncode == 0
    assert page.read_text().count('<p class="ceiling">ceiling (reference/tuned): 30,000 req/s') == 2


def test_ties_share_a_rank_in_the_table(stored):
    """The ranks come from the tie arithmetic of the sentences: a gap within the noise of single
    rounds (under 5%) shares the rank, printed "=1", with the shares as TechEmpower prints them."""
    db, run_id, _ = stored
    store = Store(str(db))
    close = copy_run(db, run_id, keep=first_round, servers=AS_LIGHTTPD, doctor=_rates(1.01))
    apart = copy_run(db, run_id, keep=first_round, servers=AS_LIGHTTPD, doctor=_rates(1.06))
    for said in verdict.verdicts([results.load(store, close)]):
        assert [(p.rank, p.tied) for p in said.places] == [(1, True), (1, True)]
        assert [row[:4] for row in said.table(False).shown()] == [
            ["=1", "nginx/tuned", "10,100", "100.0%"],
            ["=1", "lighttpd/tuned", "10,000", "99.0%"],
        ]
    for said in verdict.verdicts([results.load(store, apart)]):
        assert [(p.rank, p.tied) for p in said.places] == [(1, False), (2, False)]
        assert [row[:4] for row in said.table(False).shown()] == [
            ["1", "nginx/tuned", "10,600", "100.0%"],
            ["2", "lighttpd/tuned", "10,000", "94.3%"],
        ]
    shown = httpbench("show", str(close), "--db", str(db)).stdout
    assert len(re.findall(r"^=1 +(nginx|lighttpd)/tuned ", shown, re.M)) == 4, shown


def test_ratios_that_disagree_say_why(stored):
    """Far apart at 20 connections and close at 1, the mean requests/s and the time tell two
    stories (the dynamic plan's "1.92 times more" against "1.08 times the time"): the sentence says
    the time is dominated by the level where both are slow, rather than print both bare."""
    rates = {("nginx", 1): 1_000, ("nginx", 20): 40_000, ("reference", 1): 950, ("reference", 20): 20_000}

    def doctor(key, level, index, m):
        m["requests"]["per_second"] = rates[key.split("/")[0], level]
        m["flags"] = []

    db, run_id, _ = stored
    apart = copy_run(db, run_id, keep=first_round, doctor=doctor, servers=AS_LIGHTTPD)
    for said in verdict.verdicts([results.load(Store(str(db)), apart)]):
        assert said.details == [
            "nginx/tuned serves 1.96 times more requests per second on average than lighttpd/tuned; "
            "lighttpd/tuned needs 1.08 times the time of nginx/tuned to serve the same requests, because the "
            "time is a sum over the levels and the slowest weigh most: 96% of it is at level 1, where both are "
            "slowest and lighttpd/tuned needs 1.05 times the time of nginx/tuned."
        ]


def test_sentences_only_for_the_best_against_the_next_and_the_baseline(stored):
    """Four servers ranked (two copies, renamed), the plan's baseline nginx third: two sentences,
    the best against the next and against the baseline, none for the others."""
    db, run_id, _ = stored

    def rates(nginx: int, reference: int):
        def doctor(key, level, index, m):
            m["requests"]["per_second"] = nginx if key.startswith("nginx/") else reference
            m["flags"] = []

        return doctor

    plan = PLAN.replace("rounds = 4", 'rounds = 4\nbaseline = "nginx"')
    first = copy_run(db, run_id, keep=first_round, doctor=rates(10_000, 40_000), servers=AS_LIGHTTPD, plan_text=plan)
    renamed = {"nginx": "h2o", "reference": "apache2-event"}
    second = copy_run(db, run_id, keep=first_round, doctor=rates(30_000, 5_000), servers=renamed, plan_text=plan)
    store = Store(str(db))
    for said in verdict.verdicts([results.load(store, first), results.load(store, second)]):
        assert [(p.rank, p.cell.server) for p in said.places] == [
            (1, "lighttpd"),
            (2, "h2o"),
            (3, "nginx"),
            (4, "apache2-event"),
        ]
        assert [row[3] for row in said.table(True).shown()] == ["100.0%", "75.0%", "25.0%", "12.5%"]
        assert said.details == [
            f"lighttpd/tuned (run {first}) serves 1.33 times more requests per second on average than "
            f"h2o/tuned (run {second}); h2o/tuned (run {second}) needs 1.33 times the time of lighttpd/tuned "
            f"(run {first}) to serve the same requests.",
            f"lighttpd/tuned (run {first}) serves 4.00 times more requests per second on average than "
            f"nginx/tuned (run {first}); nginx/tuned (run {first}) needs 4.00 times the time of lighttpd/tuned "
            f"(run {first}) to serve the same requests.",
        ]
