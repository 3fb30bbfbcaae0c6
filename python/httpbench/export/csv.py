"""Every level of every cell, one row each, raw numbers (microseconds, bytes, cores)."""

from __future__ import annotations

import csv
import io
from typing import Sequence

from httpbench.report import tables
from httpbench.results.model import RunResults


def render(runs: Sequence[RunResults]) -> str:
    records = tables.all_levels(runs).records()
    out = io.StringIO()
    writer = csv.DictWriter(
        out, fieldnames=[c.key for c in tables.all_levels([]).columns] + ["flags"], lineterminator="\n"
    )
    writer.writeheader()
    for record in records:
        writer.writerow({**record, "flags": "; ".join(f"{k}: {v}" for k, v in record["flags"].items())})
    return out.getvalue()
