"""The report's sentences on sites, in the write-ups' words: "Serving the assets site
(keep-alive, 1 CPU), nginx/tuned serves 1.80 times as many requests per second as
apache2-event/tuned", and, where the pair's size classes back it, the class where they differ most.

As in the verdicts (report.verdict), only finished cells are ranked, on the levels every one of
them measured; a gap within the noise is a tie, a figure the client limited a bound.
"""

from __future__ import annotations

from typing import List, Optional, Sequence

from httpbench.judge.honesty import NOISY_CV
from httpbench.report import codings
from httpbench.report.size_classes import label
from httpbench.report.summary import cell_name, ratio_bound, rps_ratio
from httpbench.report.tables import duration_text
from httpbench.results.comparison import Group, groups
from httpbench.results.model import CellResult, RunResults

# A class's median from fewer answers than this, in either cell, is too thin to name a difference.
FEWEST_ANSWERS = 100


def _serves(group: Group, best: CellResult, other: CellResult, winner: str, loser: str) -> str:
    a, b = group.figures(best), group.figures(other)
    ratio, bound = rps_ratio(a, b), ratio_bound(a, b)
    # The group's name without the workload the sentence already names: "keep-alive, 1 CPU".
    serving = (
        f"Serving the {best.workload} site ({group.name.removeprefix(best.workload + ', ')}), {winner} serves {bound}"
    )
    sent = codings.clause(best, other, winner, loser)
    if ratio.tie:
        return f"{serving}as many requests per second as {loser}{ratio.why_tie()}{sent}."
    return f"{serving}{ratio.value:.2f} times as many requests per second as {loser}{sent}."


def _p50(size_class: dict) -> float:
    return size_class["latency"]["p50_us"]


def differs_most(group: Group, best: CellResult, other: CellResult, winner: str, loser: str) -> Optional[str]:
    """The size class whose median latency differs most between the two cells at the highest
    level both measured, when both answered it often enough and the gap passes the noise a single
    round may hold; None otherwise."""
    theirs = {lv.level: lv for lv in other.levels}
    level = next((lv for lv in reversed(best.levels) if lv.level in group.levels and lv.level in theirs), None)
    if level is None:
        return None
    pairs = [
        (a, b)
        for a, b in zip(level.classes, theirs[level.level].classes)
        if min(a["requests"], b["requests"]) >= FEWEST_ANSWERS and _p50(a) and _p50(b)
    ]
    if len(pairs) < 2:  # one class is the whole site: nothing to tell apart
        return None
    a, b = max(pairs, key=lambda p: max(_p50(p[1]) / _p50(p[0]), _p50(p[0]) / _p50(p[1])))
    if abs(_p50(b) / _p50(a) - 1) <= NOISY_CV:
        return None
    (slower, slow), (quicker, quick) = sorted([(loser, b), (winner, a)], key=lambda named: -_p50(named[1]))
    return (
        f"They differ most on answers of {label(a)} at {level.level} connections: {slower} takes "
        f"{_p50(slow) / _p50(quick):.2f} times {quicker}'s median time (p50 {duration_text(_p50(slow))} against "
        f"{duration_text(_p50(quick))}, p99 {duration_text(slow['latency']['p99_us'])} against "
        f"{duration_text(quick['latency']['p99_us'])})."
    )


def sites(runs: Sequence[RunResults]) -> List[str]:
    """What each access log's mix kept and left out, then per group of site cells: the
    fastest's requests per second against each other finished cell's, each with the size class
    where the two differ most when the data backs one."""
    several = len(runs) > 1
    out = [
        f"{label}{f' (run {r.id})' if several else ''}: {note}"
        for r in runs
        for label, note in (r.host.get("site_notes") or {}).items()
    ]
    for group in groups([c for r in runs for c in r.measured if c.site]):
        ranked = group.ranked() if group.levels else []
        for other in ranked[1:]:
            winner, loser = cell_name(ranked[0], several, group), cell_name(other, several, group)
            out.append(_serves(group, ranked[0], other, winner, loser))
            most = differs_most(group, ranked[0], other, winner, loser)
            if most:
                out.append(most)
    return out
