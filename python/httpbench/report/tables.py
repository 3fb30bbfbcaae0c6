"""The report's tables, defined once: raw values for CSV and JSON, the same values formatted for
the HTML page, Markdown and the terminal.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Sequence

from httpbench.plan.protocol import HANDSHAKES, is_http2, uses_tls
from httpbench.results import hostile
from httpbench.results.comparison import Group, groups
from httpbench.results.model import CellResult, RunResults, levels_text
from httpbench.servers.adapters.reference import Reference


def count_text(v) -> str:
    return "-" if v is None else f"{v:,.0f}"


def duration_text(v) -> str:
    """A duration in microseconds as the tables print it: "850 us", "1.25 ms", or "-"."""
    return "-" if v is None else (f"{v / 1000:,.2f} ms" if v >= 1000 else f"{v:,.0f} us")


def _cores(v) -> str:
    return "-" if v is None else f"{v:.2f}"


def mib_text(v) -> str:
    """A size in bytes as the tables print it, in MiB, or "-" when not measured."""
    return "-" if not v else f"{v / 2**20:,.1f} MiB"


def mib_per_second_text(v) -> str:
    """Bytes per second as the tables print them, in MiB/s, or "-" when not measured."""
    return "-" if v is None else f"{v / 2**20:,.1f} MiB/s"


def _share(v) -> str:
    return "-" if v is None else f"{v:.0%}"


def _percent(v) -> str:
    return "-" if v is None else f"{v:.1%}"


def _seconds(v) -> str:
    return "-" if v is None else f"{v:,.1f} s"


def _plain(v) -> str:
    return "-" if v is None or v == "" else str(v)


def _interval(v) -> str:
    return "-" if v is None or (isinstance(v, float) and math.isnan(v)) else f"±{v:,.0f}"


@dataclass(frozen=True)
class Column:
    key: str  # field name in CSV and JSON
    title: str  # heading where it is shown
    show: Callable[[Any], str] = _plain


@dataclass
class Table:
    columns: List[Column]
    rows: List[List[Any]] = field(default_factory=list)
    flags: List[Dict[str, str]] = field(default_factory=list)  # per row: kind -> reason

    def add(self, values: Sequence[Any], flags: Optional[Dict[str, str]] = None) -> None:
        assert len(values) == len(self.columns)
        self.rows.append(list(values))
        self.flags.append(dict(flags or {}))

    def records(self) -> List[Dict[str, Any]]:
        """Raw values by column key, flags included: what CSV and JSON write."""
        return [
            {**{c.key: _finite(v) for c, v in zip(self.columns, row)}, "flags": flags}
            for row, flags in zip(self.rows, self.flags)
        ]

    def shown(self) -> List[List[str]]:
        return [[c.show(v) for c, v in zip(self.columns, row)] for row in self.rows]


def _finite(v):
    return None if isinstance(v, float) and not math.isfinite(v) else v


LEVEL_COLUMNS = [
    Column("level", "level"),
    Column("rounds", "rounds"),
    Column("rps_mean", "req/s mean", count_text),
    Column("rps_ci95", "95% interval", _interval),
    Column("rps_median", "median", count_text),
    Column("rps_min", "min", count_text),
    Column("rps_max", "max", count_text),
    Column("p50_us", "p50", duration_text),
    Column("p99_us", "p99", duration_text),
    Column("p99_9_us", "p99.9", duration_text),
    Column("errors", "errors", count_text),
    Column("non_2xx", "non-2xx", count_text),
    Column("server_cpu_user", "server CPU user", _cores),
    Column("server_cpu_sys", "system", _cores),
    Column("server_memory_bytes", "server memory", mib_text),
    Column("client_busy", "client busy", _share),
]
# What a request costs the server, which TLS raises even where the client sets the pace.
COST_COLUMNS = [Column("server_cpu_per_request_us", "server CPU per request", duration_text)]
# A TLS cell's levels have these too; the exports have them for every cell (empty for plain HTTP),
# and the handshakes' counts, which the cost of TLS shows per second.
TLS_LEVEL_COLUMNS = [
    Column("tls_handshake_p50_us", "handshake p50", duration_text),
    Column("tls_handshake_p99_us", "handshake p99", duration_text),
]
HANDSHAKE_COLUMNS = [
    Column("handshakes_full", "full handshakes", count_text),
    Column("handshakes_resumed", "resumed", count_text),
]
# An HTTP/2 level's counters (the engine report's `h2`, added over its rounds).
H2_LEVEL_COLUMNS = [
    Column("h2_streams_granted", "streams granted"),
    Column("h2_goaways", "GOAWAYs"),
    Column("h2_refused_streams", "refused streams"),
    Column("h2_resets", "resets"),
]
# A level's answers by content coding (the engine's `encodings`, added over its rounds): shown for
# a cell that asked a coding, exported for every cell.
ENCODING_LEVEL_COLUMNS = [
    Column("codings_sent", "codings sent"),
    Column("body_wire_bytes", "bodies on the wire", mib_text),
    Column("body_decoded_bytes", "decoded", mib_text),
    Column("wire_share", "wire / decoded", _percent),
]
# A PHP cell's PHP-FPM pool apart from the server's figures, which include it (the exports have
# these for every cell, empty without a pool).
PHP_LEVEL_COLUMNS = [
    Column("php_memory_bytes", "PHP memory", mib_text),
    Column("php_cpu_cores", "PHP CPU", _cores),
    Column("php_processes", "PHP processes", count_text),
]
# A site cell's: the response bodies' bytes per second beside its requests/s, as received (compressed
# where the server compressed); the exports have it for every cell.
BYTES_COLUMNS = [Column("body_bytes_per_second", "body bytes/s", mib_per_second_text)]
CELL_COLUMNS = [
    Column("run", "run"),
    Column("cell", "cell"),
    Column("server", "server"),
    Column("profile", "profile"),
    Column("workload", "workload"),
    Column("keep_alive", "keep-alive"),
    Column("cpus", "CPUs"),
    Column("budget", "budget"),
    Column("protocol", "protocol"),
    Column("tls_version", "TLS version"),
    Column("tls_key", "key type"),
    Column("resumption", "resumption"),
    Column("streams", "streams"),
    Column("encoding", "coding asked"),
    Column("idle_connections", "idle connections", count_text),
    Column("slow_mode", "slow clients' mode"),
    Column("slow_clients", "slow clients", count_text),
]
# Clients beside the load that are not a benchmark (results.hostile): the normal clients' share
# served and requests/s against the same level without slow clients, the slow connections the
# server cut and when, and what the idle ones cost its memory; the exports have them for every
# cell, empty without them.
HOSTILE_LEVEL_COLUMNS = [
    Column("succeeded_share", "succeeded", _percent),
    Column("rps_share_unattacked", "req/s of unattacked", _percent),
    Column("slow_cut", "slow cut", count_text),
    Column("slow_cut_after_p50_ms", "cut after p50 (ms)", count_text),
    Column("slow_cut_after_max_ms", "max (ms)", count_text),
    Column("idle_held", "idle held", count_text),
    Column("idle_closed_by_server", "idle closed by server", count_text),
    Column("idle_memory_bytes", "idle memory", mib_text),
    Column("idle_bytes_per_connection", "bytes per idle connection", count_text),
    Column("server_processes", "server processes", count_text),
    Column("server_threads", "server threads", count_text),
]


def _cell_values(cell: CellResult) -> list:
    return [
        cell.run_id,
        cell.key,
        cell.server,
        cell.profile,
        cell.workload,
        cell.keep_alive,
        cell.cpus,
        cell.budget,
        cell.protocol,
        cell.tls_version_used,
        cell.tls_key,
        cell.resumption,
        cell.streams,
        cell.encoding,
        cell.idle or None,
        cell.slow,
        cell.slow_clients or None,
    ]


def _hostile_values(cell: CellResult, lv, cells: Sequence[CellResult]) -> list:
    slow, idle = hostile.level_figures(cell, cells, lv)
    p50, most = slow.cut_after_ms if slow else (None, None)
    return [
        lv.succeeded_share,
        slow and slow.rps_share,
        slow and slow.cut,
        p50,
        most,
        idle and idle.held,
        idle and idle.closed_by_server,
        idle and idle.memory_bytes,
        idle and idle.bytes_per_connection,
        lv.server_processes,
        lv.server_threads,
    ]


def _level_values(lv) -> list:
    s, lat = lv.rps, lv.latency
    return [
        lv.level,
        s.n,
        s.mean,
        s.ci95,
        s.median,
        s.min,
        s.max,
        lat.p50_us,
        lat.p99_us,
        lat.p99_9_us,
        lv.errors,
        lv.non_2xx,
        lv.server_cpu_user,
        lv.server_cpu_sys,
        lv.server_memory_bytes,
        lv.client_busy,
    ]


def tls_words(cell: CellResult) -> str:
    """How a TLS cell spoke TLS, in words ("TLS 1.3 (negotiated), ecdsa-p256, resumed by
    tickets"); "" for plain HTTP."""
    if not uses_tls(cell.protocol):
        return ""
    version = cell.tls_version_used
    words = [f"TLS {version}" + ("" if cell.tls_version or not version else " (negotiated)"), cell.tls_key or "-"]
    return ", ".join(words + ([HANDSHAKES[cell.resumption]] if cell.resumption else []))


def _tls_values(lv) -> list:
    handshake = lv.handshake
    return [handshake and handshake.p50_us, handshake and handshake.p99_us]


def _h2_values(lv) -> list:
    resets = "; ".join(f"{name} {count}" for name, count in sorted(lv.resets.items()))
    return [lv.streams_granted, lv.goaways, lv.refused_streams, resets or None]


def codings_sent(lv) -> Optional[str]:
    """The share of a level's answers in each coding, most first: "br 62%; identity 38%"."""
    counts = sorted(((e["answers"], name) for name, e in lv.encodings.items() if e["answers"]), reverse=True)
    total = sum(n for n, _ in counts)
    return "; ".join(f"{name} {n / total:.0%}" for n, name in counts) or None


def _encoding_values(lv) -> list:
    wire, decoded = lv.body_bytes("bytes"), lv.body_bytes("decoded_bytes")
    return [codings_sent(lv), wire, decoded, wire / decoded if wire is not None and decoded else None]


def _php_values(lv) -> list:
    return [lv.php_memory_bytes, lv.php_cpu_cores, lv.php_processes]


def levels(cell: CellResult, cells: Sequence[CellResult] = ()) -> Table:
    """Every level of one cell, with what a request cost the server; a TLS cell's with its
    handshakes' latency, an HTTP/2 cell's with its streams granted, GOAWAYs and resets, a PHP
    cell's with its PHP-FPM pool's memory, CPU and processes, a cell that asked a content coding
    with the codings sent and their bytes on the wire against decoded, a site cell's with its
    bytes/s; with `cells` (its run's), an attacked cell's with its figures under the attack."""
    tls, h2, php, coded = uses_tls(cell.protocol), is_http2(cell.protocol), cell.php is not None, bool(cell.encoding)
    attacked = bool(cells) and bool(cell.idle or cell.slow)
    table = Table(
        LEVEL_COLUMNS
        + COST_COLUMNS
        + (TLS_LEVEL_COLUMNS if tls else [])
        + (H2_LEVEL_COLUMNS if h2 else [])
        + (PHP_LEVEL_COLUMNS if php else [])
        + (ENCODING_LEVEL_COLUMNS if coded else [])
        + (BYTES_COLUMNS if cell.site else [])
        + (HOSTILE_LEVEL_COLUMNS if attacked else [])
    )
    for lv in cell.levels:
        values = _level_values(lv) + [lv.server_cpu_per_request_us]
        values += (_tls_values(lv) if tls else []) + (_h2_values(lv) if h2 else [])
        values += (_php_values(lv) if php else []) + (_encoding_values(lv) if coded else [])
        values += [lv.body_bytes_per_second] if cell.site else []
        values += _hostile_values(cell, lv, cells) if attacked else []
        table.add(values, lv.flags)
    return table


def all_levels(runs: Sequence[RunResults]) -> Table:
    """Every level of every cell in one long table: the CSV export."""
    table = Table(
        CELL_COLUMNS
        + LEVEL_COLUMNS
        + COST_COLUMNS
        + TLS_LEVEL_COLUMNS
        + HANDSHAKE_COLUMNS
        + H2_LEVEL_COLUMNS
        + PHP_LEVEL_COLUMNS
        + ENCODING_LEVEL_COLUMNS
        + BYTES_COLUMNS
        + HOSTILE_LEVEL_COLUMNS
    )
    for run in runs:
        for cell in run.measured:
            for lv in cell.levels:
                handshakes = [lv.handshakes_full, lv.handshakes_resumed]
                cost = [lv.server_cpu_per_request_us]
                table.add(
                    _cell_values(cell)
                    + _level_values(lv)
                    + cost
                    + _tls_values(lv)
                    + handshakes
                    + _h2_values(lv)
                    + _php_values(lv)
                    + _encoding_values(lv)
                    + [lv.body_bytes_per_second]
                    + _hostile_values(cell, lv, run.measured),
                    lv.flags,
                )
    return table


def cells(runs: Sequence[RunResults]) -> Table:
    """One row per cell, failed ones included: status, the spread of its requests/s on the levels
    its group is compared on, its time."""
    table = Table(
        CELL_COLUMNS
        + [
            Column("status", "status"),
            Column("error", "error"),
            Column("levels", "levels"),
            Column("rps_min", "req/s min", count_text),
            Column("rps_mean", "mean", count_text),
            Column("rps_max", "max", count_text),
            Column("seconds", "cell time", _seconds),
        ]
    )
    group_of = {id(c): g for g in groups([c for r in runs for c in r.measured]) for c in g.cells}
    for run in runs:
        for cell in run.cells:
            group = group_of.get(id(cell))  # None: nothing measured
            figures = group and group.figures(cell)
            table.add(
                _cell_values(cell)
                + [
                    cell.status,
                    cell.error,
                    len(cell.levels),
                    figures and figures.min_rps,
                    figures and figures.mean_rps,
                    figures and figures.max_rps,
                    cell.seconds,
                ],
                group and group.flags(cell),
            )
    return table


def comparison(group: Group, several_runs: bool) -> Table:
    """hyperfine's table for one group: the mean of the level means, how noisy the rounds were,
    the slowest and fastest round, and each cell's mean relative to the fastest's (1.00: a slower
    cell's is below 1, as a ratio of requests/s reads; the reference server's, the client's
    ceiling, may be above), ready to paste under a post."""
    # The reference server is the client's ceiling, not a contender: listed last, and no 1.00.
    ranked = sorted(group.ranked(), key=lambda c: c.server == Reference.name)

    def name(cell: CellResult) -> str:
        return cell.series + (f" (run {cell.run_id})" if several_runs else "")

    fastest = group.figures(ranked[0]).mean_rps if ranked else None  # a deployable server's, if any
    table = Table(
        [
            Column("series", "server/profile"),
            Column("rps_mean", "mean req/s", count_text),
            Column("noise", "round-to-round CV", _percent),
            Column("rps_min", "min", count_text),
            Column("rps_max", "max", count_text),
            Column("relative", f"req/s relative to {name(ranked[0])}" if ranked else "relative", lambda v: f"{v:.2f}"),
        ]
    )
    for cell in ranked:
        figures = group.figures(cell)
        flags = {kind: f"at {levels_text([lv.level for lv in flagged])}" for kind, flagged in figures.flagged.items()}
        why = group.incomplete(cell)
        if why:
            flags["incomplete"] = f"({why})"
        table.add(
            [name(cell), figures.mean_rps, figures.noise, figures.min_rps, figures.max_rps, figures.mean_rps / fastest],
            flags,
        )
    return table
