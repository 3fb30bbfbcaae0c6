"""Exports of stored runs, one module per format, each a `render(runs) -> str` (hyperfine's
exporters as siblings behind one small interface): CSV and JSON carry raw numbers for other
tools, Markdown the tables ready to paste into a post."""

from __future__ import annotations

from typing import Callable, Dict, Sequence

from httpbench.errors import Error
from httpbench.export import csv, json, markdown
from httpbench.results.model import RunResults

FORMATS: Dict[str, Callable[[Sequence[RunResults]], str]] = {
    "csv": csv.render,
    "json": json.render,
    "markdown": markdown.render,
}


def render(runs: Sequence[RunResults], fmt: str) -> str:
    if fmt not in FORMATS:
        raise Error(f"unknown export format {fmt!r}: choose one of {', '.join(FORMATS)}")
    return FORMATS[fmt](runs)
