"""The runs, their cells and every level as one JSON document (schema httpbench-export/1); the
raw rounds, with their histograms, stay in the store."""

from __future__ import annotations

import json
from typing import Sequence

from httpbench.report import capacity, operations, size_classes, tables
from httpbench.results.model import RunResults

SCHEMA = "httpbench-export/1"


def render(runs: Sequence[RunResults]) -> str:
    document = {
        "schema": SCHEMA,
        "runs": [
            {
                "id": r.id,
                "plan": r.plan_name,
                "status": r.status,
                "started": str(r.started),
                "ended": r.ended and str(r.ended),
                "host": r.host,
                "versions": r.versions,
                "plan_text": r.plan_text,
            }
            for r in runs
        ],
        "cells": tables.cells(runs).records(),
        "levels": tables.all_levels(runs).records(),
        # A site cell's levels by size class: requests, bytes and latency p50/p99 of each.
        "classes": size_classes.records(runs),
        # A capacity plan's cells: each one's capacity object, every probe in it, and its verdict.
        "capacities": [capacity.record(cell) for cell in capacity.cells(runs)],
        # A plan's events (operations under load): each one performed, and what it cost the load.
        "events": operations.records(runs),
    }
    return json.dumps(document, indent=2, allow_nan=False) + "\n"
