"""The bench's report, as text or as Markdown for bench/RESULTS.md: one table per scenario (medians,
spread, errors, the server's and the other processes' CPU, ratios to wrk) and the targets."""

from __future__ import annotations

from typing import List, Sequence, Tuple

from vs_peers.matrix import Scenario
from vs_peers.targets import Target

HEAD = [
    "tool",
    "req/s",
    "client us/req",
    "req/s min-max",
    "errors",
    "server cpu%",
    "others cpu%",
    "req/s / wrk",
    "us/req / wrk",
    "note",
]
LEGEND = (
    "req/s and client us/req are medians over runs; client us/req = the client's own "
    "user+sys CPU / completed requests; errors = max over runs; server cpu% = the server's "
    "CPU over the run (100 = its core saturated); others cpu% = CPU of every other "
    "process on the host meanwhile (noise: high values make the run suspect)."
)


def fmt(value, decimals: int = 0) -> str:
    return "-" if value is None else f"{value:,.{decimals}f}"


def quotient(a, b) -> str:
    return f"{a / b:.2f}" if a and b else "-"


def note(s: Scenario, tool: str) -> str:
    runs = s.runs[tool]
    problems = sorted({run.problem for run in runs if run.problem})
    noisy = sum(run.noisy for run in runs)
    if noisy:
        problems.insert(0, f"{noisy}/{len(runs)} runs noisy")
    if len(s.ok(tool)) < len(runs):
        problems.insert(0, f"{len(s.ok(tool))}/{len(runs)} runs ok")
    return "; ".join(problems)[:200]


def rows(s: Scenario) -> List[List[str]]:
    wrk_rps, wrk_us = s.med("wrk", "rps"), s.med("wrk", "us_per_req")
    out = []
    for tool in s.tools:
        if tool in s.skipped and not s.runs[tool]:
            out.append([tool, "n/a", "", "", "", "", "", "", "", s.skipped[tool]])
            continue
        rps, us, spread = s.med(tool, "rps"), s.med(tool, "us_per_req"), s.spread(tool, "rps")
        errors = max((run.errors or 0 for run in s.ok(tool)), default=None)
        out.append(
            [
                tool,
                fmt(rps),
                fmt(us, 2),
                f"{fmt(spread[0])}-{fmt(spread[1])}" if spread else "-",
                fmt(errors),
                fmt(s.med(tool, "server_pct")),
                fmt(s.med(tool, "others_pct")),
                quotient(rps, wrk_rps),
                quotient(us, wrk_us),
                note(s, tool),
            ]
        )
    return out


Facts = Tuple[str, str, str, Sequence[Tuple[str, str]]]  # (host, command, method, versions)


def text(facts: Facts, scenarios: Sequence[Scenario], targets: Sequence[Target]) -> str:
    host, command, method, versions = facts
    out = [f"host: {host}", f"command: {command}", f"runs: {method}", "versions:"]
    out += [f"  {name:<9} {version}" for name, version in versions]
    out.append(LEGEND)
    for s in scenarios:
        table = [HEAD] + rows(s)
        width = [max(len(row[i]) for row in table) for i in range(len(HEAD) - 1)]
        out += ["", f"== {s.title} =="]
        for row in table:
            cells = [row[0].ljust(width[0])] + [row[i].rjust(width[i]) for i in range(1, len(width))]
            out.append("  " + "  ".join(cells) + ("  " + row[-1] if row[-1] else ""))
    out += ["", "targets (httpbench-load):"]
    out += [f"  [{verdict:<4}] {label:<52} {detail}" for label, verdict, detail in targets]
    return "\n".join(out)


def markdown(facts: Facts, scenarios: Sequence[Scenario], targets: Sequence[Target]) -> str:
    host, command, method, versions = facts
    out = [
        f"Host: {host}  ",
        f"Command: `{command}`  ",
        f"Method: {method}.  ",
        LEGEND + "  ",
        "Versions: " + "; ".join(f"{name}: {version}" for name, version in versions),
    ]
    for s in scenarios:
        out += [
            "",
            f"### {s.title}",
            "",
            "| " + " | ".join(HEAD) + " |",
            "|" + "|".join(["---"] + ["---:"] * (len(HEAD) - 2) + ["---"]) + "|",
        ]
        out += ["| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |" for row in rows(s)]
    out += ["", "### Targets (httpbench-load)", "", "| target | ratio | verdict |", "|---|---:|---|"]
    out += [f"| {label} | {detail.replace('|', chr(92) + '|')} | {verdict} |" for label, verdict, detail in targets]
    return "\n".join(out)
