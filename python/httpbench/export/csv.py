"""Every level of every cell, one row each, raw numbers (microseconds, bytes, cores)."""

from __future__ import annotations

import csv
import io
from typing import Sequence

from httpbench.report import size_classes, tables
from httpbench.results.model import RunResults


def render(runs: Sequence[RunResults]) -> str:
    records = tables.all_levels(runs).records()
    # A site level's size classes on one line each (the JSON export has them as records).
    classes = [size_classes.text(lv) for run in runs for cell in run.measured for lv in cell.levels]
    out = io.StringIO()
    writer = csv.DictWriter(
        out, fieldnames=[c.key for c in tables.all_levels([]).columns] + ["classes", "flags"], lineterminator="\n"
    )
    writer.writeheader()
    for record, line in zip(records, classes):
        flags = "; ".join(f"{k}: {v}" for k, v in record["flags"].items())
        writer.writerow({**record, "classes": line, "flags": flags})
    return out.getvalue()
