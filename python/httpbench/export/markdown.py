"""hyperfine-style Markdown: per group of comparable cells, mean ± σ, min, max and each server
relative to the fastest, with the verdict sentences; ready to paste under a post."""

from __future__ import annotations

from typing import List, Sequence

from httpbench.report import summary, tables
from httpbench.results import RunResults


def _row(cells: Sequence[str]) -> str:
    return "| " + " | ".join(cells) + " |"


def render(runs: Sequence[RunResults]) -> str:
    lines: List[str] = []
    verdicts = {v.group: v for v in summary.winners(runs)}
    for group, table in tables.comparisons(runs).items():
        lines += [f"### {group}", ""]
        lines.append(_row([c.title for c in table.columns]))
        lines.append(_row([":---"] + ["---:"] * (len(table.columns) - 1)))
        for shown, flags in zip(table.shown(), table.flags):
            shown[0] = f"`{shown[0]}`"
            if flags:
                shown[0] += " ⚑ " + ", ".join(f"{kind} {where}" for kind, where in flags.items())
            lines.append(_row(shown))
        if group in verdicts:
            lines += ["", verdicts[group].headline] + [f"- {d}" for d in verdicts[group].details]
        lines.append("")
    for caution in summary.cautions(runs):
        lines.append(f"> {caution}")
    return "\n".join(lines).rstrip() + "\n"
