"""What `httpbench run`, `runs` and `show` print: a live progress display while a sweep runs,
and a summary of a stored run in the spirit of hyperfine (who won each comparison, by how much).

Everything shown comes from the store: `show` and the end of `run` print the same thing.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import List, Optional

from rich.console import Console
from rich.progress import BarColumn, Progress as Bar, TextColumn, TimeElapsedColumn, TimeRemainingColumn
from rich.table import Table

from httpbench import results
from httpbench.report import summary as report_summary, tables
from httpbench.results import RunResults
from httpbench.sweep import Progress

console = Console(stderr=True)


def _stdout() -> Console:
    # Piped output keeps whole rows rather than rich's 80-column default.
    return Console(width=None if sys.stdout.isatty() else 160)


def live_progress(total_rounds: int):
    """A progress bar over every round of the run, naming the current cell and level and the
    last round's requests/s; returns (the rich context, the sweep's Progress hooks)."""
    bar = Bar(TextColumn("{task.description}"), BarColumn(), TextColumn("{task.completed}/{task.total} rounds"),
              TimeElapsedColumn(), TextColumn("ETA"), TimeRemainingColumn(), console=console)
    task = bar.add_task("starting", total=total_rounds)
    state = {"cell": ""}

    def on_cell(index, total, cell):
        state["cell"] = f"cell {index + 1}/{total} {cell.key}"
        bar.update(task, description=state["cell"])

    def on_round(cell, level, index, m):
        rps = m["requests"]["per_second"] or 0
        flags = ", ".join(f["kind"] for f in m.get("flags", []))
        bar.update(task, advance=1, description=f"{state['cell']} level {level}: {rps:,.0f} req/s"
                   + (f" [{flags}]" if flags else ""))

    def on_note(text):
        bar.console.print(text)

    return bar, Progress(on_cell=on_cell, on_round=on_round, on_note=on_note)


def _rich(table: tables.Table, title: str, columns: Optional[List[str]] = None) -> Table:
    """A report table in the terminal; `columns` picks and orders them by key."""
    keys = columns or [c.key for c in table.columns]
    index = {c.key: n for n, c in enumerate(table.columns)}
    out = Table(title=title, title_justify="left")
    for key in keys:
        out.add_column(table.columns[index[key]].title, justify="left" if key in ("cell", "status") else "right")
    out.add_column("flags")
    for shown, flags in zip(table.shown(), table.flags):
        out.add_row(*[shown[index[key]] for key in keys], "; ".join(flags))
    return out


def summary(run: RunResults) -> None:
    """Print a stored run: one table of every cell, then who won each comparison."""
    out = _stdout()
    out.print(_rich(tables.cells([run]), f"run {run.id}: plan {run.plan_name} ({run.status})",
                    ["cell", "status", "levels", "rps_min", "rps_mean", "rps_max", "seconds"]))
    for cell in run.failed:
        out.print(f"[red]{cell.key} failed: {cell.error}")
    for verdict in report_summary.winners([run]):
        out.print(f"{verdict.group}: {verdict.headline}")
        for line in verdict.details:
            out.print(f"  {line}")


def levels(run: RunResults) -> None:
    """Every level of every cell: the statistics of its rounds, latency, the server's CPU and
    memory, and the honesty flags with their reasons."""
    out = _stdout()
    for cell in run.measured:
        out.print(_rich(tables.levels(cell), f"{cell.key} ({cell.server_version})"))


def comparison(cmp, threshold: Optional[float]) -> int:
    """Print a comparison of two runs; returns 1 when `threshold` is given and a level regressed
    beyond it or run B lacks a cell or level of run A (missing or failed), else 0."""
    out = _stdout()
    table = Table(title=f"run {cmp.after.id} against run {cmp.before.id}", title_justify="left")
    for column in ("cell", "level", f"run {cmp.before.id} req/s", f"run {cmp.after.id} req/s", "ratio",
                   "95% interval", "verdict"):
        table.add_column(column, justify="left" if column in ("cell", "verdict") else "right")
    for c in cmp.changes:
        style = {"faster": "green", "slower": "red"}.get(c.verdict, "")
        table.add_row(c.cell, str(c.level), f"{c.before.mean:,.0f}", f"{c.after.mean:,.0f}", f"{c.ratio:.3f}",
                      "-" if c.interval is None else f"{c.interval[0]:.3f} to {c.interval[1]:.3f}",
                      f"[{style}]{c.verdict}" if style else c.verdict)
    out.print(table)
    counts = {v: sum(1 for c in cmp.changes if c.verdict == v) for v in ("faster", "slower", "within the noise")}
    out.print(f"{len(cmp.changes)} levels compared: {counts['faster']} faster, {counts['slower']} slower, "
              f"{counts['within the noise']} within the noise.")
    for gap in cmp.missing:
        out.print(f"missing: {gap}", style="red", markup=False)
    for key in cmp.only_after:
        out.print(f"{key}: only in run {cmp.after.id}")
    if not cmp.changes:
        out.print("no cell and level was measured in both runs: nothing to compare")
    if threshold is None:
        return 0
    regressed = cmp.regressions(threshold)
    for c in regressed:
        print(f"regression: {c.cell} at {c.level} connections: {c.ratio - 1:+.1%} requests/s "
              f"({c.before.mean:,.0f} -> {c.after.mean:,.0f}), beyond the noise", file=sys.stderr)
    for gap in cmp.missing:
        print(f"regression: {gap}", file=sys.stderr)
    if regressed or cmp.missing:
        return 1
    print(f"no level fell by more than {threshold:.0%} beyond the noise, and run {cmp.after.id} has every cell "
          f"and level of run {cmp.before.id}", file=sys.stderr)
    return 0


def runs_table(runs: List[dict]) -> None:
    table = Table(title="stored runs")
    for column in ("run", "plan", "status", "started", "ended", "cells"):
        table.add_column(column)
    for r in runs:
        table.add_row(str(r["id"]), r["plan_name"], r["status"], str(r["started"])[:19], str(r["ended"] or "")[:19],
                      str(r.get("cells", "")))
    _stdout().print(table)


def run_plan(plan_name: Optional[str], only: Optional[List[str]], server_cpus: Optional[str],
             client_cpus: Optional[str], allow_shared: bool, db: str, resume: Optional[int],
             cluster_address: Optional[str] = None, certs: Optional[Path] = None,
             on_client_loss: str = "continue") -> int:
    """`httpbench run`: sweep a plan (or finish an interrupted run) with a live display, then
    print the summary. Returns the exit code: 0 done, 1 stopped for a lost client host, 130
    interrupted (both resumable)."""
    from httpbench import plan as plans
    from httpbench.placement import Placement
    from httpbench.store import Store
    from httpbench.sweep import Stopped, Sweep

    store = Store(db)
    if resume is not None:
        stored = store.run(resume)  # StoreError (one line) for an unknown run
        chosen = plans.parse(stored["plan_text"], f"run {resume}")
        placed = stored["host"].get("placement")
        if placed:
            # The rest of a run is placed as its start was, whatever the resume command says.
            server_cpus = _placed_as_stored(resume, placed, "server", server_cpus)
            if not cluster_address:
                client_cpus = _placed_as_stored(resume, placed, "client", client_cpus)
                allow_shared = allow_shared or placed["shared"]
    else:
        chosen = plans.load(plan_name or "quick")
    cluster = None
    if cluster_address:
        # Nothing of Dask is imported or started without --cluster.
        from httpbench.cluster import ClusterLoad
        cluster = ClusterLoad(cluster_address, certs)
    placement = cluster.placement(server_cpus) if cluster else Placement.choose(server_cpus, client_cpus, allow_shared)
    sweep = Sweep(chosen, store, placement, only, cluster=cluster, on_client_loss=on_client_loss)
    run_id = resume if resume is not None else sweep.start()
    per_cell = len(chosen.levels) * (chosen.rounds if isinstance(chosen.rounds, int) else 3)
    bar, sweep.progress = live_progress(len(sweep.cells) * per_cell)
    resume_command = f"httpbench run --resume {run_id} --db {db}" + (f" --servers {','.join(only)}" if only else "")
    if cluster_address:
        # Resumed without them, the rest of the run would be measured from this host alone.
        resume_command += f" --cluster {cluster_address}" + (f" --certs {certs}" if certs else "") + \
            (" --on-client-loss stop" if on_client_loss == "stop" else "")
    code = 0
    try:
        with bar:
            sweep.run(run_id)
    except KeyboardInterrupt:
        # Plain print: the command must stay on one line, to be copied.
        print(f"interrupted; every finished round is stored. Resume with: {resume_command}", file=sys.stderr)
        return 130
    except Stopped as e:
        print(f"stopped: {e}; every finished round is stored. Resume with: {resume_command}", file=sys.stderr)
        code = 1
    finally:
        if cluster is not None:
            cluster.close()
    measured = results.load(store, run_id)
    summary(measured)
    write_report(measured, db)
    return code


def _placed_as_stored(run_id: int, placed: dict, part: str, given: Optional[str]) -> str:
    """The CPUs run `run_id` gave its `part` ("server" or "client"), as a CPU list; other CPUs
    asked for are refused: rounds measured on other CPUs would not compare with the run's first."""
    from httpbench.placement import PlacementError, parse_cpus, show_cpus
    stored = show_cpus(placed[part])
    if given and parse_cpus(given, f"--{part}-cpus") != tuple(placed[part]):
        raise PlacementError(f"run {run_id} ran its {part} on CPU(s) {stored}: resume it on the same ones "
                             f"(drop --{part}-cpus)")
    return stored


def report_path(db: str, run_ids: List[int]) -> Path:
    """Where a run's report goes by default: next to an SQLite database, else in the current directory."""
    folder = Path(db).parent if "://" not in db else Path("httpbench-results")
    return folder / f"report-run-{'-'.join(map(str, run_ids))}.html"


def write_report(measured: RunResults, db: str) -> None:
    """The report at the end of `httpbench run`. The run is stored whatever happens here, so a
    report that cannot be written is a warning, never the run's exit status."""
    from httpbench import report
    try:
        path = report.write_html([measured], report_path(db, [measured.id]))
    except report.NothingToChart as e:
        console.print(str(e))
        return
    except Exception as e:  # noqa: BLE001 - any failure of the report; the measurements are safe
        reason = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        print(f"httpbench: warning: run {measured.id} is stored but its report failed ({reason}); retry with: "
              f"httpbench report {measured.id} --db {db}", file=sys.stderr)
        return
    print(f"report: {path}", file=sys.stderr)
