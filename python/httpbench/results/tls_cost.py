"""The cost of TLS, per server and profile: the cells of a run that differ only by protocol (and,
without keep-alive, by how their handshakes are made) set side by side, on the levels both
measured. With keep-alive, https against http; without it, handshakes resumed against full ones.

Only finished cells take part, as in every comparison (results.comparison): a cell whose server
died is no figure to divide by.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence, Tuple

from httpbench.plan.protocol import is_http2, uses_tls
from httpbench.results.comparison import Figures
from httpbench.results.model import CellResult


@dataclass(frozen=True)
class Pair:
    """A TLS cell and the cell it is measured against (its server's plain HTTP cell with
    keep-alive, or its full handshakes against resumed ones), on the levels both measured."""

    cell: CellResult
    against: CellResult

    @property
    def levels(self) -> Tuple[int, ...]:
        return tuple(sorted(set(self.cell.level_numbers) & set(self.against.level_numbers)))

    def figures(self, cell: CellResult) -> Figures:
        """`cell`'s (one of the two) figures on the levels both measured."""
        return Figures(tuple(lv for lv in cell.levels if lv.level in self.levels), None)


def handshake_rate(figures: Figures, which: str) -> Optional[float]:
    """Handshakes per second ("full", "resumed" or "all"), the mean of the levels' (as
    requests/s are)."""
    rates = [lv.handshakes_per_second(which) for lv in figures.levels]
    return statistics.fmean(rates) if rates and None not in rates else None


@dataclass(frozen=True)
class Cost:
    """One server/profile's cost of TLS in one context (workload, CPUs, TLS version and key)."""

    series: str
    run_id: int
    context: str
    keep_alive: Optional[Pair]  # https against http, both with keep-alive
    full: Optional[CellResult]  # without keep-alive, every handshake full
    resumed: Tuple[Pair, ...]  # without keep-alive, resumed (by tickets or IDs) against full

    @property
    def shown(self) -> bool:
        return self.keep_alive_figures is not None or self.full is not None

    @property
    def keep_alive_figures(self) -> Optional[Tuple[Figures, Figures]]:
        """The https and the http cell's figures with keep-alive, on the levels both measured;
        None without both, or without an http throughput to divide by."""
        pair = self.keep_alive
        if not pair or not pair.levels:
            return None
        https, http = pair.figures(pair.cell), pair.figures(pair.against)
        return (https, http) if http.mean_rps and https.mean_rps is not None else None

    @property
    def full_figures(self) -> Optional[Figures]:
        """The full handshakes' cell's figures: on the levels the (first) resumed cell measured
        too, so that the rates said side by side are of the same levels."""
        if self.full is None:
            return None
        return self.resumed[0].figures(self.full) if self.resumed else Figures(tuple(self.full.levels), None)


def _context(cell: CellResult) -> str:
    """The cell's context without its keep-alive and handshakes, in words."""
    words = [cell.workload, f"{cell.cpus} CPU"] + ([f"{cell.encoding} asked"] if cell.encoding else [])
    if uses_tls(cell.protocol):
        words += [f"TLS {cell.tls_version_used or 'negotiated'}", cell.tls_key or "key unknown"]
    return ", ".join(words + ([cell.budget] if cell.budget else []))


def _place(cell: CellResult) -> tuple:
    """What a TLS cell and the http cell it is set against share (the coding asked too: answers in
    other codings are other work)."""
    return (cell.run_id, cell.server, cell.profile, cell.workload, cell.cpus, cell.budget, cell.encoding)


def costs(cells: Sequence[CellResult]) -> List[Cost]:
    """The cost of TLS of every server/profile with a finished TLS cell, in the order measured."""
    # HTTP/1.1's: an HTTP/2 cell differs from the http one by more than TLS (h2_compare's).
    finished = [c for c in cells if c.finished and c.levels and not is_http2(c.protocol)]
    http = {_place(c): c for c in finished if not uses_tls(c.protocol) and c.keep_alive}
    by_context: Dict[tuple, Dict[str, List[CellResult]]] = {}
    for cell in finished:
        if uses_tls(cell.protocol):
            kind = "keep_alive" if cell.keep_alive else (cell.resumption or "none")
            key = (*_place(cell), cell.protocol, cell.tls_key, cell.tls_version)
            by_context.setdefault(key, {}).setdefault(kind, []).append(cell)
    out = []
    for key, kinds in by_context.items():
        first = next(iter(kinds.values()))[0]
        plain = http.get(_place(first))
        https = kinds.get("keep_alive", [None])[0]
        full = kinds.get("none", [None])[0]
        resumed = tuple(
            Pair(c, full) for kind, cells in kinds.items() if kind not in ("keep_alive", "none") for c in cells
        )
        cost = Cost(
            series=first.series,
            run_id=first.run_id,
            context=_context(first),
            keep_alive=Pair(https, plain) if https and plain else None,
            full=full,
            resumed=resumed if full else (),
        )
        if cost.shown:
            out.append(cost)
    return out
