"""The bench's report, as text or as Markdown for bench/RESULTS.md: one table per scenario (medians,
spread, errors, the server's and the other processes' CPU, ratios to wrk) and the targets."""

from __future__ import annotations

from typing import List, Optional, Sequence, Tuple

from vs_peers.idle import FEW, RATE, Idle
from vs_peers.matrix import Scenario
from vs_peers.targets import Target

LEGEND = (
    "req/s and client us/req are medians over runs; client us/req = the client's own "
    "user+sys CPU / completed requests; errors = max over runs; client cpu% = the client's CPU "
    "over its run (100 = its core saturated, less: it waited for the server or for a CPU that "
    "others held); server cpu% = the server's CPU over the run (100 = its core saturated); "
    "others cpu% = CPU of every other process on the host meanwhile (noise: high values make "
    "the run suspect). Over https: handshakes full/resumed = httpbench-load's own counts "
    "(median run); without keep-alive client us/handshake = the client's CPU / handshakes, a "
    "peer's one per request (wrk, ab and oha cannot resume); no client verifies the certificate "
    "chain (httpbench-load and oha --insecure), all speak TLS 1.3."
)
IDLE_HEAD = ["scheme", f"RSS at {FEW}", "RSS at N", "N", "KiB per connection", "note"]


def head(s: Scenario) -> List[str]:
    columns = ["tool", "req/s", "client us/req", "req/s min-max", "errors"]
    if s.https:
        columns.append("handshakes full/resumed")
        if s.mode == "close":
            columns.append("client us/handshake")
    columns += ["client cpu%", "server cpu%", "others cpu%", f"req/s / {s.baseline}", f"us/req / {s.baseline}", "note"]
    return columns


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


def handshakes(s: Scenario, tool: str) -> str:
    """The full/resumed counts of the run with the median req/s (an even count: the upper)."""
    runs = sorted((run for run in s.ok(tool) if run.handshakes_full is not None), key=lambda run: run.rps)
    if not runs:
        return "-"
    run = runs[len(runs) // 2]
    return f"{run.handshakes_full:,}/{run.handshakes_resumed:,}"


def rows(s: Scenario) -> List[List[str]]:
    base_rps, base_us = s.med(s.baseline, "rps"), s.med(s.baseline, "us_per_req")
    width = len(head(s))
    out = []
    for tool in s.tools:
        if tool in s.skipped and not s.runs[tool]:
            out.append([tool, "n/a"] + [""] * (width - 3) + [s.skipped[tool]])
            continue
        rps, us, spread = s.med(tool, "rps"), s.med(tool, "us_per_req"), s.spread(tool, "rps")
        errors = max((run.errors or 0 for run in s.ok(tool)), default=None)
        row = [tool, fmt(rps), fmt(us, 2), f"{fmt(spread[0])}-{fmt(spread[1])}" if spread else "-", fmt(errors)]
        if s.https:
            row.append(handshakes(s, tool))
            if s.mode == "close":
                row.append(fmt(s.med(tool, "us_per_handshake"), 1))
        row += [fmt(s.med(tool, "client_pct")), fmt(s.med(tool, "server_pct")), fmt(s.med(tool, "others_pct"))]
        out.append(row + [quotient(rps, base_rps), quotient(us, base_us), note(s, tool)])
    return out


def idle_rows(idles: Sequence[Idle]) -> List[List[str]]:
    def kib(value: Optional[int]) -> str:
        return "-" if value is None else f"{value:,} KiB"

    return [
        [row.scheme, kib(row.rss_few_kib), kib(row.rss_many_kib), f"{row.connections:,}"]
        + [fmt(row.kib_per_connection, 1), row.problem or ""]
        for row in idles
    ]


IDLE_TITLE = (
    f"httpbench-load's memory per idle connection: RSS with N keep-alive connections to nginx minus "
    f"RSS with {FEW}, open loop at {RATE} req/s"
)


Facts = Tuple[str, str, str, Sequence[Tuple[str, str]]]  # (host, command, method, versions)


def text_table(title: str, table: List[List[str]]) -> List[str]:
    width = [max(len(row[i]) for row in table) for i in range(len(table[0]) - 1)]
    out = ["", f"== {title} =="]
    for row in table:
        cells = [row[0].ljust(width[0])] + [row[i].rjust(width[i]) for i in range(1, len(width))]
        out.append("  " + "  ".join(cells) + ("  " + row[-1] if row[-1] else ""))
    return out


def markdown_table(title: str, table: List[List[str]]) -> List[str]:
    columns = len(table[0])
    out = ["", f"### {title}", "", "| " + " | ".join(table[0]) + " |"]
    out.append("|" + "|".join(["---"] + ["---:"] * (columns - 2) + ["---"]) + "|")
    return out + ["| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |" for row in table[1:]]


def text(facts: Facts, scenarios: Sequence[Scenario], idles: Sequence[Idle], targets: Sequence[Target]) -> str:
    host, command, method, versions = facts
    out = [f"host: {host}", f"command: {command}", f"runs: {method}", "versions:"]
    out += [f"  {name:<9} {version}" for name, version in versions]
    out.append(LEGEND)
    for s in scenarios:
        out += text_table(s.title, [head(s)] + rows(s))
    if idles:
        out += text_table(IDLE_TITLE, [IDLE_HEAD] + idle_rows(idles))
    out += ["", "targets (httpbench-load):"]
    out += [f"  [{verdict:<4}] {label:<52} {detail}" for label, verdict, detail in targets]
    return "\n".join(out)


def markdown(facts: Facts, scenarios: Sequence[Scenario], idles: Sequence[Idle], targets: Sequence[Target]) -> str:
    host, command, method, versions = facts
    out = [
        f"Host: {host}  ",
        f"Command: `{command}`  ",
        f"Method: {method}.  ",
        LEGEND + "  ",
        "Versions: " + "; ".join(f"{name}: {version}" for name, version in versions),
    ]
    for s in scenarios:
        out += markdown_table(s.title, [head(s)] + rows(s))
    if idles:
        out += markdown_table(IDLE_TITLE, [IDLE_HEAD] + idle_rows(idles))
    out += ["", "### Targets (httpbench-load)", "", "| target | ratio | verdict |", "|---|---:|---|"]
    out += [f"| {label} | {detail.replace('|', chr(92) + '|')} | {verdict} |" for label, verdict, detail in targets]
    return "\n".join(out)
