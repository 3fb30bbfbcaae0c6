"""The report's sentences: who won each comparison and by how much, as 002 wrote them ("G-WAN
serves 2.25 times more requests per second on average than Cherokee"; "Nginx needs 1.73 times
the time of G-WAN to serve the same requests"), what failed, and what to read with care.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, List, Sequence

from httpbench.results import CellResult, RunResults, groups


def _name(cell: CellResult, several_runs: bool) -> str:
    return cell.series + (f" (run {cell.run_id})" if several_runs else "")


@dataclass(frozen=True)
class Verdict:
    group: str
    headline: str         # the winner and its throughput
    details: List[str]    # the winner against each other cell


def winners(runs: Sequence[RunResults]) -> List[Verdict]:
    """Per group with two or more cells: a headline naming the winner, and one line for each
    other cell with the winner's throughput ratio and the other's time ratio."""
    several = len(runs) > 1
    out = []
    for group, cells in groups([c for r in runs for c in r.measured]).items():
        cells = sorted((c for c in cells if c.mean_rps), key=lambda c: -c.mean_rps)
        if len(cells) < 2:
            continue
        best, winner = cells[0], _name(cells[0], several)
        details = []
        for cell in cells[1:]:
            line = f"{winner} serves {best.mean_rps / cell.mean_rps:.2f} times more requests per second than {_name(cell, several)}"
            if cell.time_for_same_requests and best.time_for_same_requests:
                line += (f"; {_name(cell, several)} needs {cell.time_for_same_requests / best.time_for_same_requests:.2f} "
                         f"times the time of {winner} to serve the same requests")
            details.append(line + ".")
        out.append(Verdict(group, f"{winner} is fastest, {best.mean_rps:,.0f} requests/s on average over every level.",
                           details))
    return out


def cautions(runs: Sequence[RunResults]) -> List[str]:
    """Failed cells, and how many levels carry each honesty flag."""
    several = len(runs) > 1
    out = [f"{_name(c, several)} ({c.group}) failed: {c.error or c.status}." for r in runs for c in r.failed]
    counts: Dict[str, int] = {}
    total = 0
    for run in runs:
        for cell in run.measured:
            for lv in cell.levels:
                total += 1
                for kind in lv.flags:
                    counts[kind] = counts.get(kind, 0) + 1
    meaning = {"client_saturated": "the client, not the server, may have set the pace",
               "littles_law": "throughput x latency does not match the connections in flight",
               "noisy": "the rounds disagree by more than 5%",
               "shared_cpus": "server and client shared CPUs"}
    for kind, count in sorted(counts.items()):
        out.append(f"{count} of {total} levels are flagged {kind}: {meaning.get(kind, kind)} "
                   "(ringed in red on the charts; hover for the reason).")
    return out
