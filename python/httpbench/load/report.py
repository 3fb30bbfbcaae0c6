"""The load report (schema httpbench-load/1, docs/json-schema.md) as Python sees it: one typed view.

The engine defines the report (crates/engine/src/report.rs); its fields reach Python through
httpbench.load.fields, generated from those types (tools/report_fields.py). Here the view gets
its two ways in: `blank`, a report with every value None, which a client tool's parser fills in
with what the tool measures; and `filled`, which brings a report of any version to the current
shape. Every report entering Python passes one of them (the engine's, a cluster's merged level, a
client host's, a tool's, a round read back from the store), so readers index fields directly: a
field this version knows is never missing, and a value nobody measured is None, never 0.
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import typing
from typing import Any, Dict, List, Optional, Tuple, TypedDict

from httpbench.load.fields import DEFAULTS, Client, HostFacts, Report, Summary
from httpbench.observe.monitor import Window

SCHEMA = "httpbench-load/1"


class ToolClient(Client):
    """A client tool's `client`: its name, version and command line, and its process's wall time
    and threads, which its rusage (`user_s`, `sys_s`) covers."""

    tool: str
    version: Optional[str]
    argv: Optional[List[str]]
    wall_s: Optional[float]
    thread_count: Optional[int]


class HostPart(TypedDict):
    """One client host's part of a cluster's level: its own report, without `started_at`."""

    host: str
    started_at: float
    report: dict


class LevelReport(Report):
    """A cluster's level: its hosts' reports merged, with the level's spec; `host` and
    `started_at` are each host's, under `hosts`."""

    hosts: List[HostPart]
    start_spread_s: float
    client_hosts: List[str]
    lost_hosts: List[str]
    absent_hosts: List[str]


def blank(kind: type = Report) -> dict:
    """A `kind` (a TypedDict of load.fields) with every value None and every object it always
    has there, blank in turn."""
    return {name: blank(of) if shape == "object" else None for name, (shape, of, _) in _fields(kind).items()}


def filled(value: dict, kind: type = Report) -> dict:
    """`value`, a `kind` of any version, in this version's shape: a field it lacks becomes what the
    engine reads for it (`Validation.sent`'s true, a spec's defaults) or None, and an object it
    lacks, or holds as null, a blank one, at any depth (a client tool's report of before had
    null for the objects it left empty). What it holds that is no field of `kind` (a tool's own
    groups, a cluster's hosts, a round's flags) stays as it is."""
    out = dict(value)
    for name, (shape, of, default) in _fields(kind).items():
        if shape == "object" and out.get(name) is None:
            out[name] = blank(of)
        elif name not in out:
            out[name] = copy.deepcopy(default)
        elif shape in ("object", "maybe") and isinstance(out[name], dict):
            out[name] = filled(out[name], of)
        elif shape == "list" and isinstance(out[name], list):
            out[name] = [filled(item, of) if isinstance(item, dict) else item for item in out[name]]
    return out


@functools.lru_cache(maxsize=None)
def _fields(kind: type) -> Dict[str, Tuple[str, Optional[type], Any]]:
    """Each field of `kind`: how it is filled in ("object", an object the report always has;
    "maybe", one that may be None; "list", a list of objects; "value", anything else), the object
    type, and the engine's default."""
    defaults = DEFAULTS.get(kind.__name__, {})
    return {name: (*_shape(annotation), defaults.get(name)) for name, annotation in kind.__annotations__.items()}


def _shape(annotation) -> Tuple[str, Optional[type]]:
    if _is_object(annotation):
        return "object", annotation
    (inner,) = [a for a in typing.get_args(annotation) if a is not type(None)] or [None]
    if _is_object(inner):
        return "maybe", inner
    if typing.get_origin(inner) is list and _is_object(typing.get_args(inner)[0]):
        return "list", typing.get_args(inner)[0]
    return "value", None


def _is_object(annotation) -> bool:
    """A TypedDict of load.fields (typing.is_typeddict is Python 3.10's)."""
    return isinstance(annotation, type) and issubclass(annotation, dict) and hasattr(annotation, "__total__")


# What a sweep stores with a report as a round (docs/json-schema.md, "A stored round"), for a round
# stored before it did.
_ROUND_DEFAULTS = {"flags": [], "server": None}


def _window_default(field: dataclasses.Field):
    if field.default_factory is not dataclasses.MISSING:
        return field.default_factory()
    return None if field.default is dataclasses.MISSING else field.default


_WINDOW_DEFAULTS = {f.name: _window_default(f) for f in dataclasses.fields(Window)}


def stored_round(measurement: dict) -> dict:
    """A round as the store holds it (the report, its `flags` and the server's monitor `window`),
    in this version's shape: the report `filled`, and a field of the round or of its window it
    lacks None or its default."""
    out = {**copy.deepcopy(_ROUND_DEFAULTS), **filled(measurement)}
    if out["server"] is not None:
        out["server"] = {**copy.deepcopy(_WINDOW_DEFAULTS), **out["server"]}
    return out


def stored_host(host: dict) -> dict:
    """A run's host as the store holds it, in this version's shape: the server host's facts (the
    report's HostFacts, filled in), where the sweep placed server and client (`placement`), and on
    a cluster what a resume must be told (`cluster`); None where a run of before lacks them."""
    return {"placement": None, "cluster": None, **filled(host or {}, HostFacts)}


def summary(**given: Optional[float]) -> Summary:
    """A latency summary with only the fields a tool gives set."""
    extra = set(given) - set(Summary.__annotations__)
    assert not extra, extra
    return Summary(**{**blank(Summary), **given})


def tool_report(tool: str) -> Report:
    """A client tool's report, for its parser to fill in: every value None, so what the tool does
    not measure stays so (its engine, spec, validation and host facts among them)."""
    report = blank()
    report.update(schema=SCHEMA, errors={})
    report["client"]["tool"] = tool
    return report
