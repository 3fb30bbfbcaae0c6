"""What `httpbench run`, `runs` and `show` print: a live progress display while a sweep runs,
and a summary of a stored run in the spirit of hyperfine (who won each comparison, by how much).

Everything shown comes from the store: `show` and the end of `run` print the same thing.
"""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path
from typing import Dict, Iterable, List, Optional, Tuple

from rich import box
from rich.console import Console
from rich.padding import Padding
from rich.progress import BarColumn, TextColumn, TimeElapsedColumn, TimeRemainingColumn
from rich.progress import Progress as Bar
from rich.table import Column, Table
from rich.text import Text

from httpbench.cli import capacity
from httpbench.errors import Error
from httpbench.plan.model import Rounds
from httpbench.report import attacks, operations, php_summary, site_summary, size_classes, tables
from httpbench.report import summary as report_summary
from httpbench.report import verdict as report_verdict
from httpbench.results import hostile
from httpbench.results.class_compare import class_changes
from httpbench.results.model import RunResults
from httpbench.store.database import url_of
from httpbench.sweep.session import Session, resume_command
from httpbench.sweep.sweep import Progress

console = Console(stderr=True)

# What a terminal shows of each level (80 columns hold them); the report and exports have the rest.
LEVEL_COLUMNS = ["level", "rounds", "rps_mean", "rps_ci95", "p50_us", "p99_us", "errors", "server_cpu_user"]
# A TLS cell's: its handshakes' latency, and what a request cost the server (TLS's cost shows
# there even where the client set the pace), in the room of the 95% interval and errors, which
# its summary under the table still names.
TLS_LEVEL_COLUMNS = [
    "level",
    "rounds",
    "rps_mean",
    "p50_us",
    "p99_us",
    "tls_handshake_p50_us",
    "tls_handshake_p99_us",
    "server_cpu_per_request_us",
]
# A PHP cell's: what a page cost the server, and its memory with PHP-FPM's share in brackets, in
# the room of the 95% interval and the CPU in cores.
# A cell that asked a content coding: the codings its answers came in, and their bodies' bytes on
# the wire against decoded, in the room of the 95% interval and the server's CPU.
CODED_LEVEL_COLUMNS = ["level", "rounds", "rps_mean", "p50_us", "p99_us", "errors", "codings_sent", "wire_share"]
PHP_LEVEL_COLUMNS = [
    "level",
    "rounds",
    "rps_mean",
    "p50_us",
    "p99_us",
    "errors",
    "server_cpu_per_request_us",
    "server_memory_bytes",
]
# A site cell's: its bodies' bytes per second in the room of the CPU in cores.
SITE_LEVEL_COLUMNS = [*LEVEL_COLUMNS[:-1], "body_bytes_per_second"]
# An attacked cell's: the normal clients' share answered and latency, the slow connections cut
# and after how long, the idle ones held, closed and their memory each (the req/s against the
# level without the attack is said in the summary, judged against the noise, never bare here).
ATTACKED_LEVEL_COLUMNS = ["level", "rounds", "rps_mean", "succeeded_share", "p99_us"]
SLOW_LEVEL_COLUMNS = [*ATTACKED_LEVEL_COLUMNS, "slow_cut", "slow_cut_after_p50_ms", "slow_cut_after_max_ms"]
IDLE_LEVEL_COLUMNS = [*ATTACKED_LEVEL_COLUMNS, "idle_held", "idle_closed_by_server", "idle_bytes_per_connection"]
# The report's headings, shorter where its own would push a level table past 80 columns.
SHORT_HEADINGS = {
    "rps_ci95": "±95%",
    "server_cpu_user": "CPU user",
    "tls_handshake_p50_us": "TLS p50",
    "succeeded_share": "answered",
    "slow_cut_after_p50_ms": "cut p50 ms",
    "slow_cut_after_max_ms": "max ms",
    "idle_closed_by_server": "closed",
    "idle_bytes_per_connection": "bytes each",
    "tls_handshake_p99_us": "TLS p99",
    "server_cpu_per_request_us": "CPU/req",
    "body_bytes_per_second": "bytes/s",
}


class _Stdout(Console):
    def on_broken_pipe(self) -> None:
        # rich would exit 1; the command ends as Unix tools do when their reader leaves (cli.main).
        self.quiet = True
        raise BrokenPipeError()


def _stdout(piped: int = 80) -> Console:
    # Piped, a run's tables and sentences fit 80 columns as they do on a terminal of that width
    # (not a COLUMNS that readline may have exported to the parent's children); `compare` and
    # `runs` have wider tables, which keep `piped` columns rather than cut a cell.
    return _Stdout(width=None if sys.stdout.isatty() else piped)


def _saying(out: Console):
    """How sentences are printed: shown as written, never read as rich markup (a failed cell's
    error holds the server's own words); an indented one keeps its indent where it wraps."""

    def say(text: str, style: str = "", indent: int = 0) -> None:
        out.print(Padding(Text(text), (0, 0, 0, indent)) if indent else Text(text), style=style)

    return say


def live_progress(
    total_rounds: int, stored_rounds: int = 0, rounds: Optional[Rounds] = None, per_cell: Optional[int] = None
):
    """A progress bar over every round of the run, the rounds stored before a resume counted as
    done, naming the current cell and level and the last round's requests/s; returns (the rich
    context, the sweep's Progress hooks). `total_rounds` counts each level's fewest `rounds`: a
    level that takes more (rounds = "auto") adds them as they come. `per_cell`: a capacity
    search's probes, which are as many as it needs: what is left is re-estimated at each cell, and
    the bar ends at what the searches took."""
    # The words are shown as written ("[client_saturated]" is no style), and cut to fit the line
    # (a level's flags make them long), never the count.
    words = TextColumn(
        "{task.description}",
        markup=False,
        table_column=Column(max_width=max(20, console.width - 50), no_wrap=True, overflow="ellipsis"),
    )
    bar = Bar(
        words,
        BarColumn(bar_width=15),
        TextColumn("{task.completed}/{task.total} rounds"),
        TimeElapsedColumn(),
        TextColumn("ETA"),
        TimeRemainingColumn(),
        console=console,
    )
    task = bar.add_task("starting", total=total_rounds, completed=stored_rounds)
    state = {"cell": ""}

    def on_cell(index, total, cell):
        state["cell"] = f"cell {index + 1}/{total} {cell.key}"
        bar.update(task, description=state["cell"])
        if per_cell is not None:
            bar.update(task, total=bar.tasks[task].completed + (total - index) * per_cell)

    def on_finished():
        if per_cell is not None:
            bar.update(task, total=bar.tasks[task].completed)

    def on_round(cell, level, index, m):
        if rounds is not None and index >= rounds.fewest:
            bar.update(task, total=bar.tasks[task].total + 1)
        rps = m["requests"]["per_second"] or 0
        flags = ", ".join(f["kind"] for f in m["flags"])
        bar.update(
            task,
            advance=1,
            description=f"{state['cell']} level {level}: {rps:,.0f} req/s" + (f" [{flags}]" if flags else ""),
        )

    def on_note(text):
        bar.console.print(text, markup=False)  # a failed cell's note holds the server's own words

    return bar, Progress(on_cell=on_cell, on_round=on_round, on_note=on_note, on_finished=on_finished)


def _rich(title: str, headings: List[str], rows: Iterable[List[str]]) -> Table:
    """A table that fits a terminal: no rules between columns, and a cell too wide wraps, never
    cut to "..."."""
    # Text, not str: stored words (a server's version, an error) are shown as written, never read
    # as rich markup ("[emerg]" would vanish, "[/x]" would raise).
    out = Table(
        title=Text(title),
        title_justify="left",
        box=box.SIMPLE_HEAD,
        padding=(0, 1, 0, 0),
        pad_edge=False,
        show_edge=False,
    )
    for n, heading in enumerate(headings):
        words = (n == 0 and heading != "level") or heading in ("status", "server/profile", "flags")
        out.add_column(Text(heading), justify="left" if words else "right", overflow="fold")
    for row in rows:
        out.add_row(*map(Text, row))
    return out


def _columns(table: tables.Table, keys: List[str]) -> Tuple[List[str], List[List[str]]]:
    """The headings (SHORT_HEADINGS's where it has one) and shown rows of `table`'s columns
    `keys`, in that order."""
    index = {c.key: n for n, c in enumerate(table.columns)}
    headings = [SHORT_HEADINGS.get(k, table.columns[index[k]].title) for k in keys]
    return headings, [[row[index[k]] for k in keys] for row in table.shown()]


def _flags(out: Console, flagged: Iterable[Tuple[str, Dict[str, str]]]) -> None:
    """Under a table, each flag of its rows with its reason: what to read with care, and why."""
    say = _saying(out)
    for label, flags in flagged:
        for kind, reason in flags.items():
            say(f"{label}: {kind}: {reason}", indent=2)


def show(run: RunResults, db: str, out: Optional[Console] = None) -> None:
    """`httpbench show`: every level of every cell, then the summary."""
    out = out or _stdout()
    levels(run, out)
    summary(run, out)
    # A run stored "done" by an older httpbench may hold a cell that did not finish.
    status = "cells failed" if run.status == "done" and run.unfinished else run.status
    hint = _resume_hint(run.id, status, db, run.host)
    if hint:
        out.print(Text(hint), soft_wrap=True)  # whole, for the command to be copied


def _resume_hint(run_id: int, status: str, db: str, host: dict) -> Optional[str]:
    """How to go on with a run that ended without finishing; None for one that finished, or is
    still running."""
    command = resume_command(run_id, db, host)
    if status in ("interrupted", "stopped", "failed"):
        return f"run {run_id} is {status}; resume with: {command}"
    if status == "cells failed":
        return f"run {run_id} has cells that did not finish; try them again with: {command}"
    return None


def summary(run: RunResults, out: Optional[Console] = None) -> None:
    """Print a stored run: per group its cells ranked, the client's ceiling apart, then the
    sentences for the pairs that matter."""
    out = out or _stdout()
    say = _saying(out)
    say(f"run {run.id}: plan {run.plan_name} ({run.status})")
    # A capacity cell's levels are the rates its search chose: ranked by its capacity, apart.
    run, searched = capacity.split(run)
    for verdict in report_verdict.verdicts([run]):
        table = verdict.table(several_runs=False)
        if table.rows:
            out.print(_rich(verdict.group.name, [c.title for c in table.columns], table.shown()))
        else:
            say(f"{verdict.group.name}: no server to rank")
        if verdict.ceiling:
            say(verdict.ceiling)
        _flags(out, [(row[1], flags) for row, flags in zip(table.shown(), table.flags)])
        if verdict.headline:
            say(verdict.headline)
        for line in verdict.details:
            say(line, indent=2)
    capacity.summary(replace(run, cells=searched), out, _rich)
    for cell in run.failed:
        say(f"{cell.key} failed: {cell.error}", style="red")
    for title, lines in (
        ("cost of TLS:", report_summary.tls_costs([run])),
        ("HTTP/2 against HTTP/1.1:", report_summary.h2_gains([run])),
        ("dynamic pages (PHP):", php_summary.dynamic_pages([run])),
        ("sites:", site_summary.sites([run])),
        ("slow and idle clients:", attacks.sentences([run])),
        ("operations under load:", operations.sentences([run])),
    ):
        if lines:
            say(title)
            for line in lines:
                say(line, indent=2)
    busy = report_summary.busy_machine([run])
    if busy:
        say(busy, style="red")


def levels(run: RunResults, out: Console) -> None:
    """Every level of every cell: the statistics of its rounds, latency, the server's CPU and
    memory, and under it the honesty flags with their reasons."""
    for cell in run.measured:
        if cell.capacity is not None:
            capacity.probes(cell, out, _rich)
            continue
        table = tables.levels(cell, run.measured)
        tls = tables.tls_words(cell)
        # The status when it is not plain "done" (a resumed cell's time adds up its sessions), and
        # the version on a line of its own: a long one (jetty's names its JVM) would wrap the key.
        status = cell.status + (", resumed" if cell.sessions > 1 else "")
        key = cell.key + (f" ({status})" if status != "done" else "")
        title = "\n".join(filter(None, [key, cell.server_version, tls]))
        if cell.php:
            headings, rows = _columns(table, PHP_LEVEL_COLUMNS)
            headings[-1] = "MiB (PHP's)"
            for row, (pool,) in zip(rows, _columns(table, ["php_memory_bytes"])[1]):
                row[-1] = row[-1].removesuffix(" MiB") + (f" ({pool.removesuffix(' MiB')})" if pool != "-" else "")
            out.print(_rich(title, headings, rows))
        elif cell.idle or cell.slow:
            out.print(_rich(title, *_columns(table, SLOW_LEVEL_COLUMNS if cell.slow else IDLE_LEVEL_COLUMNS)))
        elif cell.encoding:
            out.print(_rich(title, *_columns(table, CODED_LEVEL_COLUMNS)))
        else:
            keys = TLS_LEVEL_COLUMNS if tls else SITE_LEVEL_COLUMNS if cell.site else LEVEL_COLUMNS
            out.print(_rich(title, *_columns(table, keys)))
        _flags(out, [(f"level {lv.level}", flags) for lv, flags in zip(cell.levels, table.flags)])


def _class_comparison(cmp, out: Console) -> None:
    """Site cells' size classes in both runs: answers and p99, no verdict (one histogram each)."""
    rows = [
        [
            c.cell,
            str(c.level),
            size_classes.label(c.before),
            f"{c.before['requests']:,}",
            f"{c.after['requests']:,}",
            tables.duration_text(size_classes.percentile(c.before, "p99_us")),
            tables.duration_text(size_classes.percentile(c.after, "p99_us")),
            "-" if c.p99_ratio is None else f"{c.p99_ratio:.2f}",
        ]
        for c in class_changes(cmp)
    ]
    if rows:
        a, b = cmp.before.id, cmp.after.id
        headings = [
            "cell",
            "level",
            "body size",
            f"run {a} answers",
            f"run {b}",
            f"run {a} p99",
            f"run {b}",
            "p99 ratio",
        ]
        out.print(_rich("size classes", headings, rows))


def comparison(cmp, threshold: Optional[float]) -> int:
    """Print a comparison of two runs; returns 1 when `threshold` is given and a level regressed
    beyond it or run B lacks a cell or level of run A (missing or failed), else 0."""
    out = _stdout(piped=160)
    table = Table(title=f"run {cmp.after.id} against run {cmp.before.id}", title_justify="left")
    for column in (
        "cell",
        "level",
        f"run {cmp.before.id} req/s",
        f"run {cmp.after.id} req/s",
        "ratio",
        "95% interval",
        "verdict",
    ):
        table.add_column(column, justify="left" if column in ("cell", "verdict") else "right")
    for c in cmp.changes:
        style = {"faster": "green", "slower": "red"}.get(c.verdict, "")
        table.add_row(
            Text(c.cell),
            str(c.level),
            f"{c.before.mean:,.0f}",
            f"{c.after.mean:,.0f}",
            f"{c.ratio:.3f}",
            "-" if c.interval is None else f"{c.interval[0]:.3f} to {c.interval[1]:.3f}",
            Text(c.verdict, style=style),
        )
    out.print(table)
    _class_comparison(cmp, out)
    capacity.comparison(cmp, out, _rich)
    for e in cmp.events:
        retryable = f" ({e.retryable[0]:,} -> {e.retryable[1]:,} retryable)" if any(e.retryable) else ""
        out.print(
            f"{e.cell} at level {e.level:,}, through its {e.action} events: {e.before:,} -> {e.after:,} requests "
            f"failed{retryable}: {e.verdict}",
            style={"more failed": "red", "fewer failed": "green"}.get(e.verdict, ""),
            markup=False,
        )
    under_attack = attacks.comparison(hostile.attack_changes(cmp.before, cmp.after))
    if under_attack:
        headings = ["cell", "level", "under attack", f"run {cmp.before.id}", f"run {cmp.after.id}"]
        out.print(_rich("slow and idle clients (side by side, no verdict)", headings, under_attack))
    counts = {v: sum(1 for c in cmp.changes if c.verdict == v) for v in ("faster", "slower", "within the noise")}
    out.print(
        f"{len(cmp.changes)} levels compared: {counts['faster']} faster, {counts['slower']} slower, "
        f"{counts['within the noise']} within the noise."
    )
    for gap in cmp.missing:
        out.print(f"missing: {gap}", style="red", markup=False)
    for key in cmp.only_after:
        out.print(f"{key}: only in run {cmp.after.id}", markup=False)
    if not cmp.changes and not cmp.capacities:
        out.print("no cell and level was measured in both runs: nothing to compare")
    if threshold is None:
        return 0
    fallen = capacity.regressions(cmp, threshold)
    regressed = cmp.regressions(threshold)
    for c in regressed:
        print(
            f"regression: {c.cell} at {c.level} connections: {c.ratio - 1:+.1%} requests/s "
            f"({c.before.mean:,.0f} -> {c.after.mean:,.0f}), beyond the noise",
            file=sys.stderr,
        )
    for gap in cmp.missing:
        print(f"regression: {gap}", file=sys.stderr)
    failing = [e for e in cmp.events if e.regressed]
    for e in failing:
        print(f"regression: {e.cell} at level {e.level:,}: {e.before:,} -> {e.after:,} requests failed through its "
              f"{e.action} events, beyond the noise", file=sys.stderr)  # fmt: skip
    if regressed or fallen or cmp.missing or failing:
        return 1
    print(
        f"no level fell by more than {threshold:.0%} beyond the noise, and run {cmp.after.id} has every cell "
        f"and level of run {cmp.before.id}",
        file=sys.stderr,
    )
    return 0


def runs_table(runs: List[dict], db: str) -> None:
    """The stored runs, and how to resume each one that did not finish."""
    out = _stdout(piped=160)
    out.print(
        _rich(
            "stored runs",
            ["run", "plan", "status", "started", "ended", "cells"],
            (
                [
                    str(r["id"]),
                    r["plan_name"],
                    r["status"],
                    str(r["started"])[:19],
                    str(r["ended"] or "")[:19],
                    str(r["cells"]),
                ]
                for r in runs
            ),
        )
    )
    for r in runs:
        hint = _resume_hint(r["id"], r["status"], db, r["host"])
        if hint:
            out.print(hint, markup=False)


def run(session: Session) -> int:
    """`httpbench run`: a session's sweep with a live display, then the summary. Returns the exit
    code: 0 done (or nothing left to resume), 1 cells that did not finish, a run stopped for a
    lost client host or failed once stored (the client ceiling not measured, the disk full), 130
    interrupted by Ctrl-C and 143 by SIGTERM (all resumable)."""
    if session.finished:
        print(
            f"run {session.run_id} is finished: every round is stored; 'httpbench show {session.run_id}' prints "
            f"it, 'httpbench report {session.run_id}' writes its report",
            file=sys.stderr,
        )
        return 0
    with session:
        bar, progress = live_progress(
            session.rounds_total,
            session.rounds_stored,
            session.plan.rounds,
            session.probes_per_search,
        )
        command = session.resume_command()
        try:
            with bar:
                stopped = session.measure(progress)
        except KeyboardInterrupt as e:
            # Plain print: the command must stay on one line, to be copied.
            print(f"interrupted; every finished round is stored. Resume with: {command}", file=sys.stderr)
            return getattr(e, "exit_code", 130)
        except (Error, OSError) as e:
            # Once the run is stored, this is a run that failed (stored so), not bad input.
            reason = f"{e.filename}: {e.strerror}" if isinstance(e, OSError) and e.filename else str(e)
            print(
                f"httpbench: run {session.run_id} failed: {reason}; every finished round is stored. "
                f"Resume with: {command}",
                file=sys.stderr,
            )
            return 1
    if stopped:
        print(f"stopped: {stopped}; every finished round is stored. Resume with: {command}", file=sys.stderr)
    measured = session.results()
    summary(measured)
    write_report(measured, session.db)
    if measured.unfinished and not stopped:
        # After everything is stored and shown: a run with cells that did not finish is no success.
        print(
            f"{len(measured.unfinished)} of {len(measured.cells)} cells did not finish (listed above); every "
            f"finished round is stored. Try them again with: {command}",
            file=sys.stderr,
        )
    return 1 if stopped or measured.unfinished else 0


def report_path(db: str, run_ids: List[int]) -> Path:
    """Where a run's report goes by default: next to an SQLite database (a path or an sqlite:///
    URL), else (PostgreSQL) in httpbench-results/ of the current directory."""
    url = url_of(db, create=False)
    sqlite_file = url.database if url.drivername.startswith("sqlite") else None
    folder = Path(sqlite_file).parent if sqlite_file not in (None, "", ":memory:") else Path("httpbench-results")
    return folder / f"report-run-{'-'.join(map(str, run_ids))}.html"


def write_report(measured: RunResults, db: str) -> None:
    """The report at the end of `httpbench run`. The run is stored whatever happens here, so a
    report that cannot be written is a warning, never the run's exit status."""
    from httpbench.report import output

    try:
        path = output.write_html([measured], report_path(db, [measured.id]))
    except output.NothingToChart as e:
        console.print(str(e), markup=False)
        return
    except Exception as e:  # noqa: BLE001 - any failure of the report; the measurements are safe
        reason = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        print(
            f"httpbench: warning: run {measured.id} is stored but its report failed ({reason}); retry with: "
            f"httpbench report {measured.id} --db {db}",
            file=sys.stderr,
        )
        return
    print(f"report: {path}", file=sys.stderr)
