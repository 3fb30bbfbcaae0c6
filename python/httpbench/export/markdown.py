"""hyperfine-style Markdown: per group of comparable cells, the mean requests/s, how noisy the
rounds were, min, max and each server's requests/s relative to the fastest's, with the verdict
sentences, and the cost of TLS where a run has both protocols; ready to paste under a post."""

from __future__ import annotations

from typing import List, Sequence

from httpbench.report import (
    attacks,
    capacity,
    operations,
    php_summary,
    site_summary,
    size_classes,
    summary,
    tables,
    verdict,
)
from httpbench.results.comparison import groups
from httpbench.results.model import RunResults, levels_text


def _row(cells: Sequence[str]) -> str:
    return "| " + " | ".join(cells) + " |"


def render(runs: Sequence[RunResults]) -> str:
    lines: List[str] = capacity.markdown(runs)
    verdicts = {v.group.name: v for v in verdict.verdicts(runs)}
    # A capacity cell's levels are the rates its search chose: no levels to compare cells on.
    for group in groups([c for r in runs for c in r.measured if c.capacity is None]):
        table = tables.comparison(group, len(runs) > 1)
        lines += [f"### {group.name}", ""]
        if not table.rows:
            lines += ["Its cells share no level with a throughput to compare.", ""]
            continue
        lines.append(_row([c.title for c in table.columns]))
        lines.append(_row([":---"] + ["---:"] * (len(table.columns) - 1)))
        for shown, flags in zip(table.shown(), table.flags):
            shown[0] = f"`{shown[0]}`"
            if flags:
                shown[0] += " ⚑ " + ", ".join(f"{kind} {where}" for kind, where in flags.items())
            lines.append(_row(shown))
        lines += [
            "",
            f"Requests/s over {levels_text(group.levels)}: the mean of the level means, the slowest "
            "and fastest round; round-to-round CV is how much a level's rounds differ (their "
            "coefficient of variation, averaged over the levels); the last column divides each mean by "
            "the fastest's.",
        ]
        said = verdicts[group.name]
        if said.ceiling:
            lines += ["", said.ceiling]
        if said.headline:
            lines += ["", said.headline] + [f"- {d}" for d in said.details]
        lines.append("")
    costs = summary.tls_costs(runs)
    if costs:
        lines += ["### Cost of TLS", ""] + [f"- {line}" for line in costs] + [""]
    gains = summary.h2_gains(runs)
    if gains:
        lines += ["### HTTP/2 against HTTP/1.1", ""] + [f"- {line}" for line in gains] + [""]
    pages = php_summary.dynamic_pages(runs)
    if pages:
        lines += ["### Dynamic pages (PHP)", ""] + [f"- {line}" for line in pages] + [""]
    sites = site_summary.sites(runs)
    if sites:
        lines += ["### Sites", ""] + [f"- {line}" for line in sites] + [""]
    hostile = attacks.sentences(runs)
    if hostile:
        lines += ["### Slow and idle clients", ""] + [f"- {line}" for line in hostile] + [""]
    performed = operations.sentences(runs)
    if performed:
        lines += ["### Operations under load", ""] + [f"- {line}" for line in performed] + [""]
    lines += size_classes.markdown(runs)
    for caution in summary.cautions(runs):
        lines.append(f"> {caution}")
    return "\n".join(lines).rstrip() + "\n"
