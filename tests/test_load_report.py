"""Python's typed view of the load report: generated from the engine's types, documented field by
field, and filled in for a report stored by an older version."""

import importlib.util
import io
import json
import re
import sqlite3
from pathlib import Path

from httpbench import _engine, export, results
from httpbench.cli import console
from httpbench.load import fields as report_fields
from httpbench.load import report as load_report
from httpbench.report import output
from httpbench.store.database import Store
from rich.console import Console
from test_store import FakeCell, FakePlan

ROOT = Path(__file__).resolve().parent.parent
SCHEMA_DOC = ROOT / "docs" / "json-schema.md"


def generator():
    spec = importlib.util.spec_from_file_location("report_fields_generator", ROOT / "tools" / "report_fields.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_generated_view_is_what_the_engines_types_give():
    """Fails when a report type changed and `make generate` was not run (or the file was edited)."""
    wanted = generator().render(json.loads(_engine.report_schema()))
    assert Path(report_fields.__file__).read_text() == wanted, "run `make generate` and commit the result"


def field_paths(schema: dict):
    """(path, field, parent type) of every field of the report, objects' fields under their path."""
    types = {schema["title"]: schema, **schema["$defs"]}

    def object_of(node):
        refs = [node] + node.get("anyOf", []) + ([node["items"]] if "items" in node else [])
        for ref in refs:
            name = ref.get("$ref", "").rpartition("/")[2]
            if name and "properties" in types[name]:
                return name
        return None

    def walk(name, prefix):
        for field, prop in types[name]["properties"].items():
            path = f"{prefix}{field}"
            yield path, field, name
            nested = object_of(prop)
            if nested:
                yield from walk(nested, f"{path}.")

    return list(walk(schema["title"], ""))


def doc_passages() -> list:
    """The schema doc's table rows and paragraphs, each with the heading it is under."""
    passages, heading = [], ""
    for block in re.split(r"\n\s*\n", SCHEMA_DOC.read_text()):
        for part in block.splitlines() if block.lstrip().startswith("|") else [block]:
            if part.startswith("#"):
                heading = part
            passages.append(f"{heading}\n{part}")
    return passages


def documented(path: str, field: str, parent_type: str, passages: list) -> bool:
    """`path` is named in the doc, or its field is named where its parent is: the parent's row, or
    a passage on the parent's type ("A **summary** is `count`, ...", the table under
    "## `spec` (LoadSpec)")."""
    parent = path.rpartition(".")[0]
    for text in passages:
        if f"`{path}`" in text or f"`{path}." in text:  # named, or its fields are
            return True
        on_its_type = f"**{parent_type.lower()}**" in text.lower() or f"({parent_type})" in text
        parent_named = parent and (f"`{parent}`" in text or on_its_type)
        if parent_named and f"`{field}`" in text:
            return True
    return False


def test_every_field_of_the_report_is_in_the_schema_doc():
    passages = doc_passages()
    schema = json.loads(_engine.report_schema())
    missing = [path for path, field, parent in field_paths(schema) if not documented(path, field, parent, passages)]
    assert not missing, f"add these fields of the report to docs/json-schema.md: {', '.join(missing)}"


def test_the_doc_check_sees_a_field_that_is_not_there():
    """The check above would fail for a field named nowhere, or named only under another parent."""
    passages = doc_passages()
    assert documented("requests.in_flight", "in_flight", "Requests", passages)
    assert documented("latency.total.p99_us", "p99_us", "Summary", passages)
    assert documented("spec.expect_length", "expect_length", "LoadSpec", passages)
    assert documented("tls.version", "version", "Tls", passages)
    assert not documented("latency.h2_stream", "h2_stream", "LatencyReport", passages)
    assert not documented("h3.goaways", "goaways", "H3", passages)
    assert not documented("requests.abandoned", "abandoned", "Requests", passages)


def older_report() -> dict:
    """A report as an early version stored it: without `started_at`, the validation's `sent`, the
    in-flight ages, the client's waits and handling delay, the service latency and host facts, and
    a client tool's empty object stored as null."""
    total = {"count": 3, "min_us": 10, "mean_us": 20.0, "max_us": 30, "p50_us": 20, "p99_us": 30, "hdr": None}
    return {
        "schema": "httpbench-load/1",
        "engine": {"version": "0.0.1", "io": "epoll"},
        "spec": {"urls": ["http://127.0.0.1:1/"], "connections": 2},
        "validation": {"status": 200, "body_bytes": 7, "ok": True, "problem": None},
        "duration_s": 1.0,
        "requests": {"sent": 3, "completed": 3, "failed": 0, "in_flight": 0, "per_second": 3.0},
        "open_loop": None,
        "status": {"1xx": 0, "2xx": 3, "3xx": 0, "4xx": 0, "5xx": 0, "other": 0},
        "errors": {"timeout": 0},
        "errors_total": 0,
        "bytes": {"head": 1, "body": 2, "read": 3, "written": 4},
        "connections": {"opened": 2, "server_closes": 0},
        "latency": {"total": total, "first_byte": None, "connect": total},
        "timeseries": [{"second": 0, "requests": 3, "errors": 0}],
        "client": {"threads": [{"cpu": 0, "user_s": 0.1, "sys_s": 0.1, "wall_s": 1.0, "busy_share": 0.2}]},
        "aborted": None,
        "tool_extra": {"kept": True},
    }


def test_a_report_stored_by_an_older_version_reads_in_the_current_shape():
    report = load_report.filled(older_report())
    assert report["started_at"] is None and report["host"]["cpus_allowed"] is None
    assert report["validation"]["sent"] is True  # what the engine reads for it: those always validated
    assert report["requests"]["in_flight_age_mean_us"] is None and report["requests"]["sent"] == 3
    assert report["client"]["waiting_share"] is None and report["client"]["threads"][0]["waiting_share"] is None
    assert all(v is None for v in report["latency"]["service"].values())
    assert report["latency"]["first_byte"]["p50_us"] is None  # null where an object belongs: a blank one
    assert report["latency"]["total"]["p75_us"] is None and report["latency"]["total"]["p50_us"] == 20
    assert report["timeseries"][0]["p99_us"] is None
    assert report["spec"]["connections"] == 2 and report["spec"]["keep_alive"] is True  # the spec's defaults
    assert report["protocol"] == "http/1.1" and report["h2"] is None  # from before HTTP/2
    assert report["tool_extra"] == {"kept": True}
    # Every field of every object this version knows is there.
    lists = ("client.threads.", "timeseries.", "classes.")
    may_lack = ("open_loop.", "tls.", "h2.", "capacity.", "client.hostile_thread.")
    may_lack += ("slow_clients.", "idle_connections.", "ticks.")
    for path, _, _ in field_paths(json.loads(_engine.report_schema())):
        if path.startswith(lists + may_lack):
            continue  # lists, checked above, and objects the report may lack (tls: null over http)
        node = report
        for key in path.split("."):
            assert key in node, path
            node = node[key]


def test_results_read_a_round_stored_by_an_older_version():
    """A round as an early sweep stored it, with a monitor window of fewer fields and no flags."""
    old = {**older_report(), "server": {"duration_s": 1.0, "rss_peak_bytes": 1 << 20, "cpu_user_cores": 0.5}}
    level = results._level(1, [load_report.stored_round(old)])
    assert level.rps_values == (3.0,) and level.completed == 3 and level.flags == {}
    assert level.server_memory_bytes == 1 << 20 and level.server_cpu_sys is None
    assert level.latency.p50_us == 20 and not level.latency.exact


def test_a_run_stored_by_an_older_version_is_shown_reported_and_exported(tmp_path):
    """Rounds as an early sweep stored them, from before protocols, TLS and its handshakes, HTTP/2
    and the service latency, read back through the store as `show`, `report` and `export` read
    them."""
    db = tmp_path / "old.db"
    store = Store(str(db))
    run_id = store.start_run(FakePlan(), {"kernel": "6.1", "cpus": 2}, {"nginx": "nginx/1.22.1"})
    cell_id = store.cell(run_id, FakeCell(key="nginx/tuned/7B/ka/1cpu"), "", "nginx/1.22.1")
    old = {**older_report(), "server": {"duration_s": 1.0, "rss_peak_bytes": 1 << 20, "cpu_user_cores": 0.5}}
    for level in (1, 10):
        store.add_round(cell_id, level, 0, load_report.stored_round(old))
    store.finish_cell(cell_id, "done", 1.0, None)
    store.finish_run(run_id, "done")
    store.engine.dispose()
    # What the early version wrote, not what this one would.
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE rounds SET measurement = ?", (json.dumps(old),))
    conn.close()

    run = results.load(Store(str(db), create=False), run_id)
    (cell,) = run.cells
    assert [lv.rps_values for lv in cell.levels] == [(3.0,), (3.0,)] and cell.protocol == "http"
    out = Console(file=io.StringIO(), width=200, color_system=None)
    console.show(run, str(db), out)
    assert "nginx/tuned/7B/ka/1cpu" in out.file.getvalue()
    assert output.write_html([run], tmp_path / "old.html").stat().st_size > 0
    for fmt in ("csv", "json", "markdown"):
        assert "nginx" in export.render([run], fmt), fmt


def test_a_tool_report_starts_with_every_field_unknown():
    report = load_report.tool_report("ab")
    assert report["client"]["tool"] == "ab" and report["schema"] == load_report.SCHEMA
    assert report["requests"]["completed"] is None and report["latency"]["connect"]["p50_us"] is None
    assert load_report.filled(report) == report


def test_a_runs_host_stored_by_an_older_version_reads_in_the_current_shape():
    host = load_report.stored_host({"hostname": "h", "cpus": 2, "kernel": "6.1"})
    assert (host["hostname"], host["placement"], host["cluster"], host["nofile_soft"]) == ("h", None, None, None)
    assert set(host) == set(report_fields.HostFacts.__annotations__) | {"placement", "cluster"}


def test_the_view_has_exactly_the_fields_of_a_real_report(nginx):
    """The schema the view is generated from and what serde writes agree, at every depth: the
    engine's own report needs no filling in."""
    url, _ = nginx({"index.html": b"1234567"})
    spec = {"urls": [url + "index.html"], "connections": 2, "stop": {"requests": 20}, "rate": 1000.0}
    raw = json.loads(_engine.run(json.dumps(spec)))
    assert load_report.filled(raw) == raw

    def same_fields(value: dict, kind, path: str) -> None:
        assert set(value) == set(kind.__annotations__), path
        for name, (shape, of, _) in load_report._fields(kind).items():
            items = [value[name]] if shape in ("object", "maybe") else value[name] if shape == "list" else []
            for item in items:
                if item is not None:
                    same_fields(item, of, f"{path}.{name}")

    same_fields(raw, report_fields.Report, "report")
    assert raw["open_loop"] is not None and raw["timeseries"] and raw["client"]["threads"]
