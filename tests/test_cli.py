"""The `httpbench` command line as a user meets it: a damaged store, `show` at 80 columns, output
piped into `head`, a run stopped by SIGTERM or kill -9 and resumed, a finished run resumed, bad
--servers, where reports land, the help texts, and `httpbench-load` installed beside `httpbench`."""

import io
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import HTTPBENCH, ROOT, binary, httpbench, short_plan
from httpbench import results
from httpbench.cli import console
from httpbench.cli import main as cli
from httpbench.plan.protocol import TlsSettings
from httpbench.store.database import Store
from rich.console import Console
from test_store import FakeCell, FakePlan, fill, measurement
from test_sweep import PLAN, interrupted_after_a_round, rounds_of, until_stored


def one_line_error(done: subprocess.CompletedProcess) -> bool:
    return done.returncode == 2 and done.stderr.count("\n") == 1 and "Traceback" not in done.stderr


@pytest.fixture
def filled(tmp_path) -> Path:
    """An SQLite store holding three runs of two cells (test_store's fill)."""
    db = tmp_path / "results.db"
    store = Store(str(db))
    for _ in range(3):
        fill(store)
    store.engine.dispose()
    return db


@pytest.fixture
def reference_plan(tmp_path) -> Path:
    path = tmp_path / "tiny.toml"
    path.write_text(PLAN.replace('servers = ["nginx", "reference"]', 'servers = ["reference"]'))
    return path


def damage(db: Path, table: str) -> None:
    """Garbage over the root page of `table`'s b-tree, as a failing disk would leave it."""
    conn = sqlite3.connect(db)
    root = conn.execute("SELECT rootpage FROM sqlite_master WHERE name = ?", (table,)).fetchone()[0]
    size = conn.execute("PRAGMA page_size").fetchone()[0]
    conn.close()
    with open(db, "r+b") as f:
        f.seek((root - 1) * size)
        f.write(bytes(range(256)) * (size // 256))


@pytest.mark.parametrize("table", ["runs", "rounds"])
def test_a_damaged_store_is_one_line_and_run_refuses_it_before_measuring(filled, tmp_path, table):
    damage(filled, table)
    plan = short_plan(tmp_path, '["reference"]', "1", 'duration = "0.2s"')
    for args in (
        ["runs"],
        ["show", "1"],
        ["report", "1", "-o", str(tmp_path / "r.html")],
        ["export", "1"],
        ["compare", "1", "2"],
        ["run", str(plan)],
        ["run", "--resume", "1"],
    ):
        done = httpbench(*args, "--db", str(filled))
        if args == ["runs"] and table == "rounds":
            assert done.returncode == 0, done.stderr  # the list of runs does not read rounds
            continue
        # For `run`, one line with exit 2 is the refusal before measuring (Store.check): a run
        # of `plan` on damaged rounds would print its client ceiling, then fail with exit 1.
        assert one_line_error(done), (args, done.returncode, done.stderr[-3000:])
        assert "results database" in done.stderr and "sqlite3" in done.stderr, done.stderr


def test_outputs_that_cannot_be_written_are_one_line(filled, tmp_path):
    taken = tmp_path / "charts"
    taken.write_text("a file, not a folder")
    done = httpbench("plot", "1", "--db", str(filled), "-o", str(taken))
    assert one_line_error(done) and "is a file" in done.stderr, done.stderr
    done = httpbench("export", "1", "--db", str(filled), "-o", str(tmp_path))
    assert one_line_error(done) and done.stderr == f"httpbench: {tmp_path}: Is a directory\n", done.stderr


def long_run(db: Path) -> results.RunResults:
    """A run with the widest figures a terminal must hold: long cell keys, millions of requests/s,
    long latencies, flags with long reasons, and a TLS cell with its handshakes' columns."""
    store = Store(str(db))
    run_id = store.start_run(FakePlan(), {}, {})
    tls_key = "trafficserver/default/25KB/close/16cpu/https/tickets"
    for key in ("trafficserver/default/25KB/close/16cpu", "apache2-prefork/default/25KB/close/16cpu", tls_key):
        https = dict(protocol="https", resumption="tickets") if key == tls_key else {}
        tls = TlsSettings(key="rsa-4096") if https else None
        cell = FakeCell(key=key, server=key.split("/")[0], profile="default", **https)
        cell_id = store.cell(run_id, cell, "", "v1", tls)
        for level in (1, 10000):
            for index in (0, 1):
                m = measurement(level, index)
                if https:
                    m["tls"] = {"version": "1.3", "handshakes_full": 12, "handshakes_resumed": 123_456_789}
                    m["latency"]["tls_handshake"] = m["latency"]["total"]
                m["requests"]["per_second"] = 12_345_678.9 + index * 1_000_000
                m["flags"].append(
                    {
                        "kind": "client_saturated",
                        "reason": "busiest client thread 95.0% busy and 3.0% waiting for its CPU (> 90%)",
                    }
                )
                store.add_round(cell_id, level, index, m)
        store.finish_cell(cell_id, "done", 12345.6, None)
    store.finish_run(run_id, "done")
    return results.load(store, run_id)


@pytest.mark.parametrize("width", [80, 120, 160])
def test_show_fits_the_terminal_with_every_flag_and_reason_under_the_table(tmp_path, width):
    out = Console(file=io.StringIO(), width=width, color_system=None)
    console.show(long_run(tmp_path / "results.db"), str(tmp_path / "results.db"), out)
    text = out.file.getvalue()
    assert "…" not in text and "..." not in text, text
    lines = text.splitlines()
    assert max(map(len, lines)) <= width
    # Nothing folded either: the longest heading word and figures stay whole on a line.
    for whole in ("±95%", "12,345,679", "100.0%", "trafficserver/default"):
        assert any(whole in line for line in lines), (whole, text)
    assert any("trafficserver/default" in line and "%" in line for line in lines), text  # a ranked row, unfolded
    words = " ".join(text.split())
    assert "13,345,679" in words
    assert (
        "level 10000: client_saturated: busiest client thread 95.0% busy and 3.0% waiting for its CPU (> 90%)" in words
    ), text
    assert "littles_law: 1 connections, throughput x latency says 3.9" in words
    # The version and the TLS words on lines of their own under the key, the handshakes' columns.
    assert "16cpu/https/tickets v1 TLS 1.3 (negotiated), rsa-4096, resumed by tickets" in words
    assert "TLS p50" in words and "TLS p99" in words


def test_show_piped_into_head_exits_quietly(filled):
    done = subprocess.run(
        f'{sys.executable} -m httpbench show 1 --db {filled} | head -1; echo "${{PIPESTATUS[0]}}" >&2',
        shell=True,
        executable="/bin/bash",
        capture_output=True,
        text=True,
        timeout=60,
    )
    # Like any Unix tool whose reader left: no message, the status of SIGPIPE (128 + 13).
    assert done.stderr == "141\n", done.stderr


def test_reports_go_next_to_the_database_for_a_path_and_an_sqlite_url(filled, tmp_path):
    for db in (str(filled), f"sqlite:///{filled}"):
        assert console.report_path(db, [3]) == filled.parent / "report-run-3.html"
    done = httpbench("report", "1", "--db", f"sqlite:///{filled}")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == str(filled.parent / "report-run-1.html")
    assert (filled.parent / "report-run-1.html").exists()


def test_an_empty_servers_list_is_refused(reference_plan, tmp_path):
    for given in ("", ",", " , "):
        done = httpbench("run", str(reference_plan), "--db", str(tmp_path / "r.db"), "--servers", given)
        assert one_line_error(done) and "--servers" in done.stderr, done.stderr
    assert not (tmp_path / "r.db").exists()


def test_every_subcommand_help_shows_examples_and_every_db_is_explained():
    parser = cli._parser()
    commands = parser._subparsers._group_actions[0].choices
    pending = [(name, sub) for name, sub in commands.items() if name != "load"]  # load's help is the engine's
    assert len(pending) >= 12
    while pending:
        name, sub = pending.pop()
        text = sub.format_help()
        assert "examples:\n  httpbench " in text, f"httpbench {name} --help has no examples"
        for action in sub._actions:
            if "--db" in action.option_strings:
                assert action.help and "SQLite" in action.help, name
            if action.__class__.__name__ == "_SubParsersAction":
                pending += [(f"{name} {child}", p) for child, p in action.choices.items()]


def test_make_installs_httpbench_load_beside_httpbench(tmp_path):
    binary("httpbench-load")
    done = subprocess.run(
        ["make", "-s", "-C", str(ROOT), "install-load", f"BINDIR={tmp_path}"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    version = subprocess.run([str(tmp_path / "httpbench-load"), "--version"], capture_output=True, text=True)
    assert version.returncode == 0 and "httpbench-load" in version.stdout
    # By default, into the folder pip put `httpbench` in: on PATH wherever `httpbench` is.
    shown = subprocess.run(["make", "-s", "-n", "-C", str(ROOT), "install-load"], capture_output=True, text=True)
    import sysconfig

    assert sysconfig.get_path("scripts") in shown.stdout, shown.stdout


def test_sigterm_is_ctrl_c_and_a_resume_counts_what_was_stored(reference_plan, tmp_path):
    db = tmp_path / "results.db"
    err = interrupted_after_a_round(db, str(reference_plan), sig=signal.SIGTERM, code=143)
    assert f"interrupted; every finished round is stored. Resume with: httpbench run --resume 1 --db {db}" in err
    run, stored = rounds_of(db, 1)
    assert run["status"] == "interrupted" and run["cells"][0]["status"] == "interrupted" and stored
    done = httpbench("run", "--resume", "1", "--db", str(db))
    assert done.returncode == 0, done.stderr[-2000:]
    # The bar counts the rounds stored before as done: it ends full, not at what this session measured.
    assert "6/6 rounds" in done.stderr, done.stderr[-2000:]
    assert "resumed" in httpbench("show", "1", "--db", str(db)).stdout
    again = httpbench("run", "--resume", "1", "--db", str(db))
    assert again.returncode == 0 and "client ceiling" not in again.stderr
    assert "run 1 is finished: every round is stored; 'httpbench show 1" in again.stderr, again.stderr


def test_a_run_killed_with_sigkill_is_listed_as_interrupted_with_its_resume_command(reference_plan, tmp_path):
    db = tmp_path / "results.db"
    # Rounds long enough to be listed while it runs: it is killed after the first.
    reference_plan.write_text(reference_plan.read_text().replace('duration = "0.3s"', 'duration = "3s"'))
    sweep = subprocess.Popen(
        [*HTTPBENCH, "run", str(reference_plan), "--db", str(db)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        until_stored(db, 1, sweep)
        listed = httpbench("runs", "--db", str(db))
        assert "running" in listed.stdout and "interrupted" not in listed.stdout, listed.stdout
        twice = httpbench("run", "--resume", "1", "--db", str(db))
        assert one_line_error(twice) and f"still being measured, by process {sweep.pid}" in twice.stderr
    finally:
        sweep.send_signal(signal.SIGKILL)
        sweep.wait()
    assert Store(str(db)).run(1)["status"] == "interrupted"
    listed = httpbench("runs", "--db", str(db))
    assert "interrupted" in listed.stdout and "running" not in listed.stdout, listed.stdout
    assert f"httpbench run --resume 1 --db {db}" in listed.stdout.replace("\n", ""), listed.stdout
    assert "(interrupted)" in httpbench("show", "1", "--db", str(db)).stdout


def test_stored_words_are_shown_as_written_and_a_run_with_failed_cells_says_how_to_resume(tmp_path):
    # nginx's own words: rich would drop "[emerg]" as a style and raise on "[/x]" as a closing tag.
    db = tmp_path / "results.db"
    store = Store(str(db))
    run_id = fill(store)
    cell_id = store.cell(run_id, FakeCell(key="nginx/default/7B/ka/1cpu", profile="default"), "", "nginx/[1.22]")
    error = "nginx: [emerg] bind() to 127.0.0.1:8080 failed (98: Address already in use) [/x]"
    store.finish_cell(cell_id, "failed", 0.1, error)
    store.finish_run(run_id, "cells failed")
    store.engine.dispose()
    shown = httpbench("show", str(run_id), "--db", str(db))
    assert shown.returncode == 0 and "Traceback" not in shown.stderr, shown.stderr[-2000:]
    assert f"nginx/default/7B/ka/1cpu failed: {error}" in " ".join(shown.stdout.split()), shown.stdout
    resume = f"httpbench run --resume {run_id} --db {db}"
    assert f"has cells that did not finish; try them again with: {resume}" in shown.stdout.replace("\n", "")
    listed = httpbench("runs", "--db", str(db))
    assert listed.returncode == 0 and resume in listed.stdout.replace("\n", ""), listed.stdout


def test_the_live_display_shows_notes_and_flags_as_written(monkeypatch):
    # A failed cell's note carries the server's words; a round's flags are shown in brackets.
    out = Console(file=io.StringIO(), width=200, color_system=None)
    monkeypatch.setattr(console, "console", out)
    bar, progress = console.live_progress(2)
    cell = FakeCell(key="nginx/tuned/7B/ka/1cpu")
    progress.on_cell(0, 1, cell)
    progress.on_round(
        cell,
        1,
        0,
        {"requests": {"per_second": 5.0}, "flags": [{"kind": "client_saturated", "reason": "busiest thread 95% busy"}]},
    )
    progress.on_note("nginx/tuned/7B/ka/1cpu: nginx: [emerg] bind() failed [/x]")
    out.print(bar.get_renderable())
    shown = out.file.getvalue()
    assert "nginx: [emerg] bind() failed [/x]" in shown and "level 1: 5 req/s [client_saturated]" in shown, shown
