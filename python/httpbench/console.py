"""What `httpbench run`, `runs` and `show` print: a live progress display while a sweep runs,
and a summary of a stored run in the spirit of hyperfine (who won each comparison, by how much).

Everything shown comes from the store: `show` and the end of `run` print the same thing.
"""

from __future__ import annotations

import sys
from collections import defaultdict
from typing import Dict, List, Optional

from rich.console import Console
from rich.progress import BarColumn, Progress as Bar, TextColumn, TimeElapsedColumn, TimeRemainingColumn
from rich.table import Table

from httpbench.stats import LevelStats
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


def _levels(cell: dict) -> Dict[int, List[dict]]:
    levels: Dict[int, List[dict]] = defaultdict(list)
    for r in cell["rounds"]:
        levels[r["level"]].append(r["measurement"])
    return dict(sorted(levels.items()))


def _mean_rps(cell: dict) -> Optional[float]:
    """A cell's figure of merit: requests/s averaged over every level and round (002's average)."""
    values = [m["requests"]["per_second"] for ms in _levels(cell).values() for m in ms]
    return sum(values) / len(values) if values else None


def summary(run: dict) -> None:
    """Print a stored run: one table of every cell, then who won each comparison."""
    out = _stdout()
    table = Table(title=f"run {run['id']}: plan {run['plan_name']} ({run['status']})")
    for column in ("cell", "levels", "req/s min", "mean", "max", "p99 at top level", "flags", "time"):
        table.add_column(column, justify="left" if column in ("cell", "flags") else "right")
    for cell in run["cells"]:
        levels = _levels(cell)
        if cell["status"] == "failed" or not levels:
            table.add_row(cell["key"], "-", "-", "-", "-", "-", f"[red]{cell['status']}: {cell.get('error') or ''}", "-")
            continue
        stats = LevelStats.of([m["requests"]["per_second"] for ms in levels.values() for m in ms])
        top = levels[max(levels)]
        p99 = max((m["latency"]["total"]["p99_us"] or 0) for m in top) if top[0].get("latency") else None
        flags = sorted({f["kind"] for ms in levels.values() for m in ms for f in m.get("flags", [])})
        flags += [f"noisy@{level}" for level, ms in levels.items() if len(ms) > 1 and
                  LevelStats.of([m["requests"]["per_second"] for m in ms]).cv > 0.05]
        table.add_row(cell["key"], str(len(levels)), f"{stats.min:,.0f}", f"{stats.mean:,.0f}", f"{stats.max:,.0f}",
                      f"{p99 / 1000:.2f} ms" if p99 else "-", ", ".join(flags), f"{cell['seconds'] or 0:.0f} s")
    out.print(table)
    for sentence in verdicts(run):
        out.print(sentence)


def levels(run: dict) -> None:
    """Every level of every cell: the statistics of its rounds, latency, the server's CPU and
    memory, and the honesty flags with their reasons."""
    out = _stdout()
    for cell in run["cells"]:
        by_level = _levels(cell)
        if not by_level:
            continue
        table = Table(title=f"{cell['key']} ({cell['server_version']})", title_justify="left")
        for column in ("level", "rounds", "req/s mean", "±95%", "median", "stdev", "min", "max", "p50", "p99",
                       "errors", "server CPU", "server RSS", "flags"):
            table.add_column(column, justify="left" if column == "flags" else "right")
        for level, ms in by_level.items():
            st = LevelStats.of([m["requests"]["per_second"] for m in ms])
            last = ms[-1]
            total = (last.get("latency") or {}).get("total") or {}
            server = last.get("server") or {}
            cpu = server.get("cpu_user_cores", 0) + server.get("cpu_sys_cores", 0) if server else None
            flags = {f["kind"]: f["reason"] for m in ms for f in m.get("flags", [])}
            if st.n > 1 and st.cv > 0.05:
                flags["noisy"] = f"rounds vary by {st.cv:.1%} (coefficient of variation)"
            table.add_row(
                str(level), str(st.n), f"{st.mean:,.0f}", "-" if st.n < 2 else f"{st.ci95:,.0f}", f"{st.median:,.0f}",
                f"{st.stdev:,.0f}", f"{st.min:,.0f}", f"{st.max:,.0f}",
                _us(total.get("p50_us")), _us(total.get("p99_us")), str(sum(m.get("errors_total") or 0 for m in ms)),
                "-" if cpu is None else f"{cpu:.2f} cores", _mib(server.get("rss_peak_bytes")),
                "; ".join(f"{k}: {v}" for k, v in flags.items()))
        out.print(table)


def _us(v) -> str:
    return "-" if v is None else (f"{v / 1000:.2f} ms" if v >= 1000 else f"{v} us")


def _mib(v) -> str:
    return "-" if not v else f"{v / 2**20:.1f} MiB"


def verdicts(run: dict) -> List[str]:
    """Within each group of cells that differ only by server and profile, the winner and its
    ratio to each other one, as 002 put it."""
    groups: Dict[tuple, List[tuple]] = defaultdict(list)
    for cell in run["cells"]:
        mean = _mean_rps(cell)
        if mean:
            groups[(cell["workload"], cell["keep_alive"], cell["cpus"])].append((mean, f"{cell['server']}/{cell['profile']}"))
    sentences = []
    for (workload, keep_alive, cpus), entries in groups.items():
        if len(entries) < 2:
            continue
        entries.sort(reverse=True)
        (best, winner), rest = entries[0], entries[1:]
        others = ", ".join(f"{best / mean:.2f}x {name}" for mean, name in rest)
        sentences.append(f"{workload}, {'keep-alive' if keep_alive else 'no keep-alive'}, {cpus} CPU: "
                         f"{winner} served {best:,.0f} req/s on average, {others}")
    return sentences


def runs_table(runs: List[dict]) -> None:
    table = Table(title="stored runs")
    for column in ("run", "plan", "status", "started", "ended", "cells"):
        table.add_column(column)
    for r in runs:
        table.add_row(str(r["id"]), r["plan_name"], r["status"], str(r["started"])[:19], str(r["ended"] or "")[:19],
                      str(r.get("cells", "")))
    _stdout().print(table)


def run_plan(plan_name: Optional[str], only: Optional[List[str]], server_cpus: Optional[str],
             client_cpus: Optional[str], allow_shared: bool, db: str, resume: Optional[int]) -> int:
    """`httpbench run`: sweep a plan (or finish an interrupted run) with a live display, then
    print the summary. Returns the exit code: 0 done, 130 interrupted (resumable)."""
    from httpbench import plan as plans
    from httpbench.placement import Placement
    from httpbench.store import Store
    from httpbench.sweep import Sweep

    store = Store(db)
    if resume is not None:
        stored = store.run(resume)  # StoreError (one line) for an unknown run
        chosen = plans.parse(stored["plan_text"], f"run {resume}")
    else:
        chosen = plans.load(plan_name or "quick")
    sweep = Sweep(chosen, store, Placement.choose(server_cpus, client_cpus, allow_shared), only)
    run_id = resume if resume is not None else sweep.start()
    per_cell = len(chosen.levels) * (chosen.rounds if isinstance(chosen.rounds, int) else 3)
    bar, sweep.progress = live_progress(len(sweep.cells) * per_cell)
    try:
        with bar:
            sweep.run(run_id)
    except KeyboardInterrupt:
        # Plain print: the command must stay on one line, to be copied.
        print(f"interrupted; every finished round is stored. Resume with: "
              f"httpbench run --resume {run_id} --db {db}", file=sys.stderr)
        return 130
    summary(store.run(run_id))
    return 0
