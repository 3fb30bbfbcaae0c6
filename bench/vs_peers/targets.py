"""The engine's targets, checked on the medians: httpbench-load against wrk (and ab with
keep-alive off), and its own 10,000- against 100-connection level. A missing figure is "n/a"
with the reason, never a verdict."""

from __future__ import annotations

from typing import List, Optional, Sequence, Tuple

from vs_peers.matrix import BASE_CONNS, Scenario, find

Target = Tuple[str, str, str]  # (label, verdict: PASS, FAIL or n/a, ratio or why not)


def ratio(s: Optional[Scenario], tool_a: str, tool_b: str, figure: str) -> Tuple[Optional[float], str]:
    if s is None:
        return None, "scenario not run"
    x, y = s.med(tool_a, figure), s.med(tool_b, figure)
    if x is None:
        return None, f"{tool_a}: {s.why_not(tool_a)}"
    if y is None:
        return None, f"{tool_b}: {s.why_not(tool_b)}"
    return x / y, ""


def verdict(label: str, value: Optional[float], why: str, passes) -> Target:
    if value is None:
        return label, "n/a", why
    return label, "PASS" if passes(value) else "FAIL", f"{value:.2f}"


def at_least(bound: float):
    return lambda value: value >= bound


def at_most(bound: float):
    return lambda value: value <= bound


def targets(levels: Sequence[int], big: int, scenarios: Sequence[Scenario]) -> List[Target]:
    out = []
    against_wrk = [find(scenarios, f"nginx-ka-{c}") for c in [*levels, *([big] if big else [])]]
    against_wrk = [s for s in against_wrk + [find(scenarios, f"nginx-pipe-{BASE_CONNS}")] if s is not None]
    for s in against_wrk:
        out.append(
            verdict(f"{s.key}: req/s httpbench/wrk >= 1.00", *ratio(s, "httpbench", "wrk", "rps"), at_least(1.0))
        )
    for s in against_wrk:
        out.append(
            verdict(
                f"{s.key}: us/req httpbench/wrk <= 0.75", *ratio(s, "httpbench", "wrk", "us_per_req"), at_most(0.75)
            )
        )
    # Where a server outruns one client core, the client sets the pace: the h2o target,
    # and the same against the reference server, which outruns wrk on hosts where h2o does not.
    for key in (f"h2o-ka-{BASE_CONNS}", f"reference-ka-{BASE_CONNS}"):
        s = find(scenarios, key)
        out.append(verdict(f"{key}: req/s httpbench/wrk >= 1.25", *ratio(s, "httpbench", "wrk", "rps"), at_least(1.25)))
        out.append(
            verdict(f"{key}: us/req httpbench/wrk <= 0.75", *ratio(s, "httpbench", "wrk", "us_per_req"), at_most(0.75))
        )
    key = f"nginx-close-{BASE_CONNS}"
    out.append(
        verdict(
            f"{key}: req/s httpbench/ab >= 1.25", *ratio(find(scenarios, key), "httpbench", "ab", "rps"), at_least(1.25)
        )
    )
    if big:
        out.append(
            verdict(
                f"httpbench req/s {big} conns / {BASE_CONNS} conns >= 0.85",
                *level_ratio(scenarios, big),
                at_least(0.85),
            )
        )
    return out


def level_ratio(scenarios: Sequence[Scenario], big: int) -> Tuple[Optional[float], str]:
    """httpbench-load's req/s at `big` connections over its req/s at BASE_CONNS."""
    s_big, s_base = find(scenarios, f"nginx-ka-{big}"), find(scenarios, f"nginx-ka-{BASE_CONNS}")
    if s_big is None or s_base is None:
        return None, f"needs nginx-ka-{big} and nginx-ka-{BASE_CONNS}"
    for s in (s_big, s_base):
        if s.med("httpbench", "rps") is None:
            return None, "httpbench: " + s.why_not("httpbench")
    return s_big.med("httpbench", "rps") / s_base.med("httpbench", "rps"), ""
