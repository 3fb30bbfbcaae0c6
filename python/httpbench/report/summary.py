"""The report's sentences: by how much one cell beat another (report.verdict picks the pairs), as
the 2011 write-up wrote them ("G-WAN serves 2.25 times more requests per second on average than
Cherokee"; "Nginx needs 1.73 times the time of G-WAN to serve the same requests"), what failed,
and what to read with care.

A gap within the noise is a tie, by compare's definition (the 95% interval of the ratio contains
1; with single rounds, under 5%), said as "serves as many requests per second as". A figure the
client limited is a lower bound, said as "at least".
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence, Tuple

from httpbench.judge.honesty import NOISY_CV
from httpbench.judge.stats import LevelStats
from httpbench.plan import protocol
from httpbench.results import compare, h2_compare, tls_cost
from httpbench.results.comparison import Figures, Group, groups
from httpbench.results.model import CellResult, RunResults, levels_text


def cell_name(cell: CellResult, several_runs: bool, group: Optional[Group] = None) -> str:
    """How sentences name a cell; within a comparison, marked when it lacks levels."""
    incomplete = group is not None and group.incomplete(cell)
    return cell.series + (f" (run {cell.run_id})" if several_runs else "") + (" (incomplete)" if incomplete else "")


def saturated(figures: Figures) -> Tuple[int, ...]:
    """The levels at which the client, not the server, set the pace."""
    return tuple(lv.level for lv in figures.flagged.get("client_saturated", ()))


@dataclass(frozen=True)
class Ratio:
    """One figure of the winner against another cell's: their ratio, and whether it is a tie."""

    value: float
    interval: Optional[Tuple[float, float]]

    @classmethod
    def of(cls, value: float, *spreads: Optional[float]) -> "Ratio":
        return cls(value, compare.ratio_interval(value, *spreads))

    @property
    def tie(self) -> bool:
        # Printed as 1.00, "1.00 times more" would read as a win that is none.
        return compare.within_noise(self.value, self.interval) or f"{self.value:.2f}" == "1.00"

    def why_tie(self) -> str:
        """Why a tie that does not print as 1.00 is one, in parentheses."""
        if f"{self.value:.2f}" == "1.00":
            return ""
        if self.interval is None:
            return f" ({self.value:.2f} times: within {NOISY_CV:.0%}, which single rounds cannot tell from noise)"
        low, high = self.interval
        return f" ({self.value:.2f} times: within the noise, its 95% interval {low:.2f} to {high:.2f})"


def ratio_bound(best: Figures, other: Figures) -> str:
    """How a ratio of `best`'s figure to `other`'s bounds the servers' own ("at least "...)."""
    return _bound_when_held(bool(saturated(best)), bool(saturated(other)))


def _bound_when_held(held_best: bool, held_other: bool) -> str:
    """How a ratio of two figures bounds the servers' own: the client held back the numerator only
    (its real lead is larger), the other only (smaller), both (no bound), or neither."""
    return {(True, False): "at least ", (False, True): "at most "}.get((held_best, held_other), "")


def _serves(winner: str, loser: str, ratio: Ratio, bound: str) -> str:
    if ratio.tie:
        return f"{winner} serves {bound}as many requests per second on average as {loser}{ratio.why_tie()}"
    return f"{winner} serves {bound}{ratio.value:.2f} times more requests per second on average than {loser}"


def _needs(loser: str, winner: str, ratio: Ratio, bound: str) -> str:
    if ratio.tie:
        return f"{loser} needs {bound}as much time as {winner} to serve the same requests{ratio.why_tie()}"
    return f"{loser} needs {bound}{ratio.value:.2f} times the time of {winner} to serve the same requests"


def _rates(figures: Figures) -> List[LevelStats]:
    return [lv.rps for lv in figures.levels]


def rps_ratio(best: Figures, other: Figures) -> Ratio:
    """`best`'s mean requests per second against `other`'s, with the interval its rounds allow."""
    return Ratio.of(best.mean_rps / other.mean_rps, compare.spread(_rates(best)), compare.spread(_rates(other)))


def _slowest(best: Figures, other: Figures) -> Tuple[Tuple[int, ...], float, float]:
    """The levels that take most of the two cells' time together (the slowest, until half of
    it), their share of it, and `other`'s time there against `best`'s."""
    theirs = {lv.level: lv for lv in other.levels}
    pairs = [
        (a.level, *(Figures((lv,), f.requests_budget).time_for_same_requests for lv, f in ((a, best), (b, other))))
        for a, b in ((a, theirs[a.level]) for a in best.levels if a.level in theirs)
    ]
    total = sum(t + u for _, t, u in pairs)
    slow, taken = [], 0.0
    for level, t, u in sorted(pairs, key=lambda p: -(p[1] + p[2])):
        if taken >= total / 2:
            break
        slow.append((level, t, u))
        taken += t + u
    return (
        tuple(sorted(level for level, _, _ in slow)),
        taken / total,
        sum(u for _, _, u in slow) / sum(t for _, t, _ in slow),
    )


def _disagree(rps: Ratio, time: Ratio) -> bool:
    """Whether the time tells another story than the requests/s: one a tie and the other not, or,
    the loser behind in both, one's lead over twice the other's. The mean of the levels weighs the
    ones where both are fast, the time the ones where both are slow, so servers far apart at high
    concurrency and close at one connection disagree so."""
    if time.value < 1 and not time.tie:
        return False  # the loser needs less time: said by the levels where it is faster
    if rps.tie or time.tie:
        return rps.tie != time.tie
    leads = rps.value - 1, time.value - 1
    return max(leads) > 2 * min(leads)


def detail(best: Figures, other: Figures, winner: str, loser: str) -> str:
    """The sentence saying by how much `other` lost to the winner or tied it, and when its time
    tells another story than its requests/s, why."""
    rps = rps_ratio(best, other)
    bound = ratio_bound(best, other)
    line = _serves(winner, loser, rps, bound)
    if other.time_for_same_requests and best.time_for_same_requests:
        time = Ratio.of(
            other.time_for_same_requests / best.time_for_same_requests,
            compare.time_spread(_rates(best)),
            compare.time_spread(_rates(other)),
        )
        line += "; " + _needs(loser, winner, time, bound)
        # When the two figures disagree, say where the loser wins, if it wins anywhere.
        winner_rps = {lv.level: lv.rps.mean for lv in best.levels}
        faster = [lv.level for lv in other.levels if lv.rps.mean > winner_rps.get(lv.level, float("inf"))]
        if time.value < 1 and not time.tie and faster:
            line += (
                f" ({loser} is faster at {levels_text(faster)}: the time is a sum over the levels, "
                "so the slowest weigh most)"
            )
        slow, share, there = _slowest(best, other)
        if _disagree(rps, time) and len(slow) < len(best.levels):
            line += (
                f", because the time is a sum over the levels and the slowest weigh most: {share:.0%} of it is "
                f"at {levels_text(slow)}, where both are slowest and {loser} needs {there:.2f} times the time "
                f"of {winner}"
            )
    if saturated(best) and saturated(other):
        line += " (the client set the pace of both at some of these levels, so the ratios may be the client's)"
    return line + "."


def and_text(names: Sequence[str]) -> str:
    """["a", "b", "c"] -> "a, b and c"."""
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def busy_machine(runs: Sequence[RunResults]) -> Optional[str]:
    """How many levels were measured while other processes kept the server or the client waiting
    for a CPU (flag `contended`): said wherever the verdict is, since those figures, and a winner
    drawn from them, may be the machine's."""
    levels = [lv for run in runs for cell in run.measured for lv in cell.levels]
    busy = sum("contended" in lv.flags for lv in levels)
    if not busy:
        return None
    return (
        f"{busy} of {len(levels)} levels were measured on a busy machine (flag contended): other processes "
        "kept the server or the client waiting for a CPU, so their figures, and a winner drawn from them, may "
        "be the machine's; measure again on a quiet one."
    )


def cautions(runs: Sequence[RunResults]) -> List[str]:
    """Failed cells, incomplete ones, and how many levels carry each honesty flag."""
    several = len(runs) > 1
    out = [f"{cell_name(c, several)} ({c.group}) failed: {c.error or c.status}." for r in runs for c in r.failed]
    for group in groups([c for r in runs for c in r.measured]):
        # A failed cell is listed once, above, with its error.
        out += [
            f"{cell_name(c, several)} ({group.name}) is incomplete: {group.incomplete(c)}."
            for c in group.cells
            if c.status != "failed" and group.incomplete(c)
        ]
    counts: Dict[str, int] = {}
    total = 0
    for run in runs:
        for cell in run.measured:
            for lv in cell.levels:
                total += 1
                for kind in lv.flags:
                    counts[kind] = counts.get(kind, 0) + 1
    meaning = {
        "client_saturated": "the client, not the server, may have set the pace",
        "littles_law": "throughput x latency does not match the connections in flight",
        "noisy": f"the rounds disagree by more than {NOISY_CV:.0%}",
        "shared_cpus": "server and client shared CPUs",
        "contended": "other processes kept the server or the client waiting for a CPU",
        "crashed": "the server died during the level: its figures are not the server's, and its cell stopped",
        "server_restarted": "a worker of the server exited during the level and another took its place",
        "not_resumed": "under 95% of the handshakes of a cell named resumed were resumed: it is not ranked as resumed",
        "encoding": "some answers came in another content coding than the cell asked (its figures mix them)",
        "not_encoded": "no answer came in the content coding the cell asked: it is not ranked under that coding",
        "ended_early": "the load ended before its budget (the server stopped answering, or the client's "
        "time limit): its figures cover part of the level, and its cell stopped",
        "errors": "more of its requests than the plan's max_errors were not served (another status, or "
        "failed): its requests per second count only those served",
        "partial": "a client host was lost during the level; the figures are the other hosts'",
        "fewer_hosts": "the level ran on fewer client hosts than the run began with",
    }
    for kind, count in sorted(counts.items()):
        out.append(
            f"{count} of {total} levels are flagged {kind}: {meaning.get(kind, kind)} "
            "(outlined in black on the charts; hover for the reason)."
        )
    return out


def _both_held(a: Figures, b: Figures, what: str) -> str:
    if saturated(a) and saturated(b):
        return f" (the client set the pace of both at some of these levels, so the {what} may be the client's)"
    return ""


def _over(pair: tls_cost.Pair) -> str:
    """The levels a pair is compared on, when one of its cells measured more."""
    if pair.levels == pair.cell.level_numbers == pair.against.level_numbers:
        return ""
    return f", over {levels_text(pair.levels)}, the levels both measured"


def _https_share(cost: tls_cost.Cost, name: str, where: str) -> Optional[str]:
    """With keep-alive: https req/s as a share of http's, the tie and the bounds as in the verdicts."""
    if cost.keep_alive_figures is None:
        return None
    https, http = cost.keep_alive_figures
    share = rps_ratio(https, http)
    bound = ratio_bound(https, http)
    place = f"(keep-alive{where}{_over(cost.keep_alive)})"
    if share.tie:
        line = f"{name} serves {bound}as many requests per second over HTTPS as over HTTP {place}{share.why_tie()}"
    else:
        line = (
            f"{name} serves {bound}{share.value:.2f} times as many requests per second over HTTPS as over HTTP {place}"
        )
    return line + _both_held(https, http, "share") + "."


def _handshakes(cost: tls_cost.Cost, name: str, where: str) -> Optional[str]:
    """Without keep-alive: full handshakes per second, and resumed ones as a multiple of them.
    Each request makes one handshake, so the rates vary from round to round as the requests/s do,
    and their noise is taken from those."""
    full = cost.full_figures
    if full is None:
        return None
    full_rate = tls_cost.handshake_rate(full, "full")
    if full_rate is None:
        return None
    held = "at least " if saturated(full) else ""
    line = f"Without keep-alive, {name} completes {held}{full_rate:,.0f} full TLS handshakes per second"
    for pair in cost.resumed:
        resumed, against = pair.figures(pair.cell), pair.figures(cost.full)
        how = protocol.HANDSHAKES[pair.cell.resumption]
        # The cell's rate is all its handshakes (each connection's first is full), so that a
        # server resuming some of them is not credited only with those.
        rate, base = tls_cost.handshake_rate(resumed, "all"), tls_cost.handshake_rate(against, "full")
        reused = tls_cost.handshake_rate(resumed, "resumed")
        if not reused:
            line += f", none {how} (its server resumed no handshake: every one was full)"
            continue
        if not base:
            line += f", {rate:,.0f} when {how} ({reused:,.0f} of them resumed; no full handshake to compare with)"
            continue
        if "not_resumed" in resumed.flagged:
            # A mix of full and resumed handshakes is no measure of resumption.
            share = f"{reused / rate:.0%}"
            line += f", {rate:,.0f} when {how}, but only {reused:,.0f} of them resumed ({share}): not compared"
            continue
        multiple = Ratio.of(rate / base, compare.spread(_rates(resumed)), compare.spread(_rates(against)))
        bound, held = ratio_bound(resumed, against), "at least " if saturated(resumed) else ""
        # Within parentheses already: the tie's own reason joins them rather than nesting its own.
        why = multiple.why_tie().strip(" ()")
        times = f"as many{', ' + why if why else ''}" if multiple.tie else f"{bound}{multiple.value:.2f} times"
        line += f", {held}{rate:,.0f} when {how} ({reused:,.0f} of them resumed; {times}{_over(pair)})" + _both_held(
            resumed, against, "multiple"
        )
    return line + (f" ({where.lstrip(', ')})" if where else "") + "."


def tls_costs(runs: Sequence[RunResults]) -> List[str]:
    """The cost of TLS per server/profile, in the write-ups' words: "nginx/tuned serves 0.52 times
    as many requests per second over HTTPS as over HTTP (keep-alive)"; "Without keep-alive,
    nginx/tuned completes 1,900 full TLS handshakes per second, 2,202 when resumed by tickets
    (2,200 of them resumed; 1.16 times)". The context is named when the runs hold several."""
    costs = tls_cost.costs([c for r in runs for c in r.measured])
    several_contexts = len({c.context for c in costs}) > 1
    out = []
    for cost in costs:
        cell = (cost.keep_alive and cost.keep_alive.cell) or cost.full
        name = cell_name(cell, len(runs) > 1)
        where = f", {cost.context}" if several_contexts else ""
        out += [line for line in (_https_share(cost, name, where), _handshakes(cost, name, where)) if line]
    return out


def _held(level) -> bool:
    return "client_saturated" in level.flags


def _against_http1(c: h2_compare.Comparison, n: int, point: h2_compare.Point) -> str:
    """One streams count's requests/s as a multiple of HTTP/1.1's, ties and bounds as in the verdicts."""
    base = c.http1
    ratio = Ratio.of(point.rps / base.rps, compare.spread([point.level.rps]), compare.spread([base.level.rps]))
    bound = _bound_when_held(_held(point.level), _held(base.level))
    times = f"{bound}as many" if ratio.tie else f"{bound}{ratio.value:.2f} times as many"
    # Said once, after the first multiple: the others read as its continuation.
    unit = " requests per second" if n == c.http2[0][0] else ""
    notes = [ratio.why_tie().strip(" ()") if ratio.tie else ""] + [
        f"the server granted {point.clamped}" if point.clamped else ""
    ]
    notes.append("the client set the pace of both" if _held(point.level) and _held(base.level) else "")
    said = "; ".join(note for note in notes if note)
    return f"{times}{unit} with {n} stream{'s' if n > 1 else ''}" + (f" ({said})" if said else "")


def h2_gains(runs: Sequence[RunResults]) -> List[str]:
    """HTTP/2 against HTTP/1.1 per server/profile and connection count: "At 10 connections,
    nginx/tuned serves, over h2 rather than HTTPS, as many requests per second with 1 stream,
    2.10 times as many with 10 streams and 2.31 times as many with 100 streams". The context is
    named when the runs hold several."""
    found = h2_compare.comparisons([c for r in runs for c in r.measured])
    several_contexts = len({c.context for c in found}) > 1
    out = []
    for c in found:
        if c.http1 is None or not c.http1.rps:
            continue
        name = cell_name(c.http1.cell, len(runs) > 1)
        where = f" ({c.context})" if several_contexts else ""
        over = "HTTPS" if c.protocol == "h2" else "HTTP/1.1 in cleartext"
        parts = [_against_http1(c, n, point) for n, point in c.http2]
        out.append(
            f"At {c.connections} connection{'s' if c.connections > 1 else ''}{where}, {name} serves, over "
            f"{c.protocol} rather than {over}, {and_text(parts)}."
        )
    return out
