"""The HTML page: the template filled with sentences, tables and chart specs, and the Vega
bundle inlined so the file opens offline."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Dict, List, Sequence

import jinja2
from markupsafe import Markup

from httpbench import __version__
from httpbench.report import attacks, capacity, operations, php_summary, site_summary, summary, tables, verdict
from httpbench.report.charts import Chart, Measured, ratings, vega
from httpbench.results.model import RunResults

SHORT = {
    "throughput": "Requests/s",
    "latency": "Latency",
    "server_cpu": "CPU",
    "server_memory": "Memory",
    "rps_bars": "Min/mean/max",
    "total_time": "Total time",
    "end_memory": "End memory",
    "rating": "Rating",
    "differences": "Differences",
    "tls_share": "HTTPS share",
    "tls_handshakes": "Handshakes",
    "h2_streams": "Streams",
    "h2_against_http1": "HTTP/1.1 vs h2",
    "php_memory": "PHP memory",
    "php_cpu_per_page": "CPU per page",
    "latency_by_size": "By size",
    "spectrum": "Percentiles",
    "timeline": "Timeline",
    "events": "Events",
    "slow_share": "Answered under attack",
    "slow_p99": "p99 under attack",
    "slow_states": "Slow connections",
    "slow_cut": "Cut after",
    "idle_memory": "Per idle connection",
}


def _script_json(value) -> Markup:
    # "</" would end the <script> element early; "<\/" means the same to JavaScript.
    return Markup(json.dumps(value, allow_nan=False).replace("</", "<\\/"))


def _flags(flags: Dict[str, str]) -> List[dict]:
    return [{"kind": kind, "reason": reason} for kind, reason in sorted(flags.items())]


def _cells(runs: Sequence[RunResults]) -> List[dict]:
    table = tables.cells(runs)
    keys = [c.key for c in table.columns]
    out = []
    cells = [c for r in runs for c in r.cells]
    for cell, raw, shown, flags in zip(cells, table.rows, table.shown(), table.flags):
        row = dict(zip(keys, shown))
        out.append(
            {
                "key": row["cell"] + (f" (run {raw[0]})" if len(runs) > 1 else ""),
                "status": raw[keys.index("status")],
                "error": raw[keys.index("error")],
                "failed": raw[keys.index("status")] == "failed",
                "levels": row["levels"],
                "min": row["rps_min"],
                "mean": row["rps_mean"],
                "max": row["rps_max"],
                "seconds": row["seconds"],
                "tls": tables.tls_words(cell),
                "flags": _flags(flags),
            }
        )
    return out


def _verdicts(runs: Sequence[RunResults]) -> List[dict]:
    """Each group's ranking as a table, its ceiling line and its sentences."""
    out = []
    for v in verdict.verdicts(runs):
        table = v.table(len(runs) > 1)
        out.append(
            {
                "group": v.group.name,
                "header": [c.title for c in table.columns[:-1]],
                "rows": [{"cells": row[:-1], "flags": _flags(flags)} for row, flags in zip(table.shown(), table.flags)],
                "ceiling": v.ceiling,
                "headline": v.headline,
                "details": v.details,
            }
        )
    return out


def _rating(m: Measured, chart: Chart) -> dict:
    """The rating chart's figures as a table, under the chart's title and note."""
    rows = ratings(m)
    contexts = list(dict.fromkeys(r["context"] for r in rows))
    columns = [
        (context, keep_alive)
        for context in contexts
        for keep_alive in (False, True)
        if any(r["context"] == context and r["keep_alive"] == keep_alive for r in rows)
    ]
    by_series: Dict[str, Dict[tuple, dict]] = {}
    for r in rows:
        by_series.setdefault(r["series"], {})[(r["context"], r["keep_alive"])] = r
    return {
        "title": chart.title,
        "note": chart.note,
        "columns": [f"{context}, keep-alive {'on' if ka else 'off'}" for context, ka in columns],
        "rows": [
            {
                "series": series,
                "cells": [
                    {
                        "text": f"{cells[col]['rating']:.0f} ({cells[col]['mean']:,.0f} req/s)",
                        "flags": cells[col]["flags"],
                    }
                    if col in cells
                    else {"text": "-", "flags": ""}
                    for col in columns
                ],
            }
            for series, cells in by_series.items()
        ],
    }


def _level_tables(runs: Sequence[RunResults]) -> List[dict]:
    """Each cell's levels; their flags with the reasons go under the table, which a column of
    them would push past the page's width, and so does what a request (and a TLS cell's
    handshake) cost, in a table of its own."""
    split = len(tables.LEVEL_COLUMNS)
    out = []
    for run in runs:
        for cell in run.measured:
            table = tables.levels(cell)
            rows = list(zip(table.shown(), table.flags))
            titles = [c.title for c in table.columns]
            out.append(
                {
                    "key": cell.key + (f" (run {run.id})" if len(runs) > 1 else ""),
                    "version": cell.server_version,
                    "tls": tables.tls_words(cell),
                    "header": titles[:split],
                    "rows": [{"cells": shown[:split], "flagged": bool(flags)} for shown, flags in rows],
                    "flags": [{"level": shown[0], **flag} for shown, flags in rows for flag in _flags(flags)],
                    "cost_header": titles[:1] + titles[split:],
                    "cost_rows": [shown[:1] + shown[split:] for shown, _ in rows],
                }
            )
    return out


def _table(table: tables.Table) -> dict:
    return {"header": [c.title for c in table.columns], "rows": table.shown()}


def _facts(run: RunResults) -> List[tuple]:
    host = run.host
    placement = host["placement"] or {"server": None, "client": None}
    memory = host["memory_bytes"]
    facts = [
        ("started", f"{str(run.started)[:19]} UTC, ended {str(run.ended or '-')[:19]}"),
        (
            "host",
            f"{_known(host['hostname'])}: {_known(host['cpu_model'])}, {_known(host['cpus'])} CPUs, "
            + (f"{memory / 2**30:.1f} GiB" if memory else "memory unknown"),
        ),
        (
            "system",
            f"{_known(host['distro'])}, kernel {_known(host['kernel'])}, io_uring "
            f"{'on' if host['io_uring_enabled'] else 'off'}, open files {_known(host['nofile_soft'])}",
        ),
        ("CPUs", f"server {_known(placement['server'])}, client {_known(placement['client'])}"),
        ("client", run.client if run.client != "engine" else f"httpbench-load {__version__} (the engine)"),
    ]
    facts += [(f"{server}", version or "version unknown") for server, version in sorted(run.versions.items())]
    return facts


def _known(value) -> str:
    """A fact of the host as shown: "-" where a run stored none."""
    return "-" if value is None else str(value)


def _subtitle(host: dict) -> str:
    return " · ".join(
        str(part)
        for part in (
            host["hostname"],
            host["cpu_model"],
            host["cpus"] and f"{host['cpus']} CPUs",
            host["kernel"] and f"Linux {host['kernel']}",
        )
        if part
    )


def render(m: Measured, charts: Sequence[Chart], bundle: str) -> str:
    """The page of the runs `m` holds, with those of `charts` (its charts) that have something to
    draw, and why the others that say so are missing."""
    runs = m.runs
    missing = [
        {"name": c.name, "title": c.title, "short": SHORT.get(c.name, c.name), "why": c.missing}
        for c in charts
        if not c.drawn and c.missing
    ]
    charts = [c for c in charts if c.drawn]
    rating = next((c for c in charts if c.name == "rating"), None)
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(Path(__file__).parent), autoescape=True, undefined=jinja2.StrictUndefined
    )
    ids = ", ".join(str(r.id) for r in runs)
    plans = ", ".join(dict.fromkeys(r.plan_name for r in runs))
    level_tables = _level_tables(runs)
    cells = _cells(runs)
    return env.get_template("page.html.j2").render(
        version=__version__,
        made=dt.datetime.now().strftime("%Y-%m-%d %H:%M"),
        title=f"httpbench: run{'s' if len(runs) > 1 else ''} {ids} ({plans})",
        subtitle=_subtitle(runs[0].host),
        busy_machine=summary.busy_machine(runs),
        charts=[{"name": c.name, "title": c.title, "note": c.note, "short": SHORT.get(c.name, c.name)} for c in charts],
        missing=missing,
        specs=_script_json({c.name: vega(c.vega_lite) for c in charts}),
        capacities=capacity.rankings(runs),
        verdicts=_verdicts(runs),
        tls_costs=summary.tls_costs(runs),
        h2_gains=summary.h2_gains(runs),
        dynamic_pages=php_summary.dynamic_pages(runs),
        sites=site_summary.sites(runs),
        attacks=attacks.sentences(runs),
        operations=operations.sentences(runs),
        operations_table=_table(operations.table(runs)),
        cautions=summary.cautions(runs),
        cells=cells,
        tls_column=any(c["tls"] for c in cells),
        rating=rating and _rating(m, rating),
        level_tables=level_tables,
        runs=[
            {
                "id": r.id,
                "plan_name": r.plan_name,
                "status": r.status,
                "plan_text": r.plan_text,
                "facts": _facts(r),
                "sysctls": "\n".join(f"{k} = {v}" for k, v in sorted((r.host["sysctls"] or {}).items())),
                "configs": [
                    {"key": c.key, "version": c.server_version, "text": c.config_text or "(none recorded)"}
                    for c in r.cells
                ],
            }
            for r in runs
        ],
        bundle=Markup(bundle),
    )
