"""The report's sentences: who won each comparison and by how much, as 002 wrote them ("G-WAN
serves 2.25 times more requests per second on average than Cherokee"; "Nginx needs 1.73 times
the time of G-WAN to serve the same requests"), what failed, and what to read with care.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence

from httpbench.honesty import NOISY_CV
from httpbench.results import CellResult, Group, RunResults, groups, levels_text


def _name(cell: CellResult, several_runs: bool, group: Optional[Group] = None) -> str:
    """How sentences name a cell; within a comparison, marked when it lacks levels."""
    incomplete = group is not None and group.incomplete(cell)
    return cell.series + (f" (run {cell.run_id})" if several_runs else "") + (" (incomplete)" if incomplete else "")


def _tied(ratio: float) -> bool:
    """A ratio the sentences would print as 1.00: "1.00 times more" reads as a win that is none."""
    return f"{ratio:.2f}" == "1.00"


def _serves(winner: str, loser: str, ratio: float) -> str:
    if _tied(ratio):
        return f"{winner} serves as many requests per second on average as {loser}"
    return f"{winner} serves {ratio:.2f} times more requests per second on average than {loser}"


def _needs(loser: str, winner: str, ratio: float) -> str:
    if _tied(ratio):
        return f"{loser} needs as much time as {winner} to serve the same requests"
    return f"{loser} needs {ratio:.2f} times the time of {winner} to serve the same requests"


@dataclass(frozen=True)
class Verdict:
    group: str
    headline: str         # the winner and its throughput
    details: List[str]    # the winner against each other cell


def winners(runs: Sequence[RunResults]) -> List[Verdict]:
    """Per group with two or more cells: a headline naming the winner, and one line for each
    other cell with the winner's throughput ratio and the other's time ratio, all on the levels
    every cell of the group measured."""
    several = len(runs) > 1
    out = []
    for group in groups([c for r in runs for c in r.measured]):
        ranked = group.ranked()
        if len(ranked) < 2:
            continue
        best, winner = group.figures(ranked[0]), _name(ranked[0], several, group)
        details = []
        for cell in ranked[1:]:
            other, loser = group.figures(cell), _name(cell, several, group)
            line = _serves(winner, loser, best.mean_rps / other.mean_rps)
            if other.time_for_same_requests and best.time_for_same_requests:
                ratio = other.time_for_same_requests / best.time_for_same_requests
                line += "; " + _needs(loser, winner, ratio)
                # When the two figures disagree, say where the loser wins, if it wins anywhere.
                winner_rps = {lv.level: lv.rps.mean for lv in best.levels}
                faster = [lv.level for lv in other.levels if lv.rps.mean > winner_rps.get(lv.level, float("inf"))]
                if ratio < 1 and not _tied(ratio) and faster:
                    line += (f" ({loser} is faster at {levels_text(faster)}: the time is a sum over the levels, "
                             "so the slowest weigh most)")
            details.append(line + ".")
        over = (f"{levels_text(group.levels)}, the levels every cell measured"
                if group.levels != group.every_level else "every level")
        out.append(Verdict(group.name, f"{winner} is fastest, {best.mean_rps:,.0f} requests/s on average over {over}.",
                           details))
    return out


def busy_machine(runs: Sequence[RunResults]) -> Optional[str]:
    """How many levels were measured while other processes kept the server or the client waiting
    for a CPU (flag `contended`): said wherever the verdict is, since those figures, and a winner
    drawn from them, may be the machine's."""
    levels = [lv for run in runs for cell in run.measured for lv in cell.levels]
    busy = sum("contended" in lv.flags for lv in levels)
    if not busy:
        return None
    return (f"{busy} of {len(levels)} levels were measured on a busy machine (flag contended): other processes "
            "kept the server or the client waiting for a CPU, so their figures, and a winner drawn from them, may "
            "be the machine's; measure again on a quiet one.")


def cautions(runs: Sequence[RunResults]) -> List[str]:
    """Failed cells, incomplete ones, and how many levels carry each honesty flag."""
    several = len(runs) > 1
    out = [f"{_name(c, several)} ({c.group}) failed: {c.error or c.status}." for r in runs for c in r.failed]
    for group in groups([c for r in runs for c in r.measured]):
        out += [f"{_name(c, several)} ({group.name}) is incomplete: {group.incomplete(c)}."
                for c in group.cells if group.incomplete(c)]
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
               "noisy": f"the rounds disagree by more than {NOISY_CV:.0%}",
               "shared_cpus": "server and client shared CPUs",
               "contended": "other processes kept the server or the client waiting for a CPU",
               "crashed": "the server died during the level: its figures are not the server's, and its cell stopped",
               "server_restarted": "a worker of the server exited during the level and another took its place",
               "partial": "a client host was lost during the level; the figures are the other hosts'",
               "fewer_hosts": "the level ran on fewer client hosts than the run began with"}
    for kind, count in sorted(counts.items()):
        out.append(f"{count} of {total} levels are flagged {kind}: {meaning.get(kind, kind)} "
                   "(outlined in black on the charts; hover for the reason).")
    return out
