"""Exports of stored runs, one module per format, each a `render(runs) -> str` (hyperfine's
exporters as siblings behind one small interface): CSV and JSON carry raw numbers for other
tools, Markdown the tables ready to paste into a post."""

from __future__ import annotations

import importlib
from typing import Sequence

from httpbench.errors import Error
from httpbench.results.model import RunResults

FORMATS = ("csv", "json", "markdown")


def render(runs: Sequence[RunResults], fmt: str) -> str:
    if fmt not in FORMATS:
        raise Error(f"unknown export format {fmt!r}: choose one of {', '.join(FORMATS)}")
    return importlib.import_module(f"{__name__}.{fmt}").render(runs)
