"""A plan's TOML text read and checked completely (plan.parse), every mistake one line that
names the file, the line and the key:

    myplan.toml line 12: levels.step must be more than 0, got -10

tomllib gives no positions, so `_Lines` finds them by scanning the text for table headers and
`key =` lines.
"""

from __future__ import annotations

import difflib
import json
import re
import sys
from pathlib import Path
from typing import Any, Dict, List, NoReturn, Optional, Sequence, Tuple

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.9/3.10 only
    import tomli as tomllib

from httpbench import workload as workloads
from httpbench.plan import Budget, Plan, PlanError, Rounds
from httpbench.servers.base import PROFILES
from httpbench.workload import Workload, WorkloadError

CLIENTS = ("engine", "ab", "wrk", "h2load")
MODELS = ("closed", "open")
KINDS = ("generated", "file", "docroot")

TOP_KEYS = (
    "name",
    "description",
    "notes",
    "servers",
    "profiles",
    "keep_alive",
    "server_cpus",
    "rounds",
    "max_rounds",
    "client",
    "model",
    "pipeline",
    "warmup",
    "baseline",
    "workload",
    "levels",
    "budget",
    "server",
    "allow_errors",
)
LEVEL_KEYS = ("from", "to", "step", "list")
BUDGET_KEYS = ("requests", "duration")
WORKLOAD_KEYS = {"generated": ("kind", "size", "name"), "file": ("kind", "path"), "docroot": ("kind", "path", "urls")}
SERVER_KEYS = ("directives", "config_file", "command")


def read(text: str, source: str, base_dir: Optional[Path] = None) -> Plan:
    """plan.parse: a plan from its TOML `text`, every mistake a PlanError naming its line."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        message = str(e)
        at = re.search(r"\s*\(at line (\d+), column \d+\)$", message)
        line = at.group(1) if at else str(max(1, text.count("\n")))
        raise PlanError(f"{source} line {line}: not valid TOML: {message[: at.start()] if at else message}") from None
    return _Parser(source, text, Path(base_dir) if base_dir else Path(".")).plan(data)


_DURATION = re.compile(r"^\s*(\d+(?:\.\d*)?|\.\d+)\s*(ms|s|m|h)?\s*$")
_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, None: 1.0}


def parse_duration(value: Any) -> Optional[float]:
    """ "2s", "500ms", "1m", "1h", "1.5" or a number: seconds; None if it is none of those."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    match = _DURATION.match(value) if isinstance(value, str) else None
    return float(match.group(1)) * _UNITS[match.group(2)] if match else None


def _show(value: Any) -> str:
    """A value as it would be written in TOML."""
    try:
        return json.dumps(value)
    except (TypeError, ValueError):
        return str(value)


def _name(path: Tuple) -> str:
    """("workload", 1, "size") -> "workload.size": the line says which workload."""
    return ".".join(str(part) for part in path if not isinstance(part, int))


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


class _Parser:
    def __init__(self, source: str, text: str, base_dir: Path) -> None:
        self.source = source
        self.text = text
        self.base_dir = base_dir
        self.lines = _Lines(text)

    def fail(self, path: Tuple, message: str) -> NoReturn:
        raise PlanError(f"{self.source} line {self.lines.find(path)}: {message}")

    # -- small checks, each naming the key --

    def keys(self, table: Any, allowed: Sequence[str], path: Tuple) -> Dict[str, Any]:
        if not isinstance(table, dict):
            self.fail(path, f"{_name(path)} must be a table, got {_show(table)}")
        for key in table:
            if key not in allowed:
                close = difflib.get_close_matches(key, allowed, n=1, cutoff=0.6)
                hint = (
                    f"did you mean {_name(path + (close[0],))!r}?"
                    if close
                    else f"known keys here: {', '.join(allowed) or 'none'}"
                )
                self.fail(path + (key,), f"unknown key {_name(path + (key,))!r}; {hint}")
        return table

    def integer(self, value: Any, path: Tuple, minimum: int) -> int:
        if not _is_int(value):
            self.fail(path, f"{_name(path)} must be a whole number, got {_show(value)}")
        if value < minimum:
            what = "more than 0" if minimum == 1 else f"at least {minimum}"
            self.fail(path, f"{_name(path)} must be {what}, got {value}")
        return value

    def string(self, value: Any, path: Tuple, choices: Sequence[str] = ()) -> str:
        if not isinstance(value, str):
            self.fail(path, f"{_name(path)} must be a string, got {_show(value)}")
        if choices and value not in choices:
            close = difflib.get_close_matches(value, choices, n=1, cutoff=0.6)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            self.fail(path, f"{_name(path)} must be one of {', '.join(map(repr, choices))}, got {value!r}{hint}")
        return value

    def duration(self, value: Any, path: Tuple, zero_ok: bool) -> float:
        seconds = parse_duration(value)
        if seconds is None:
            self.fail(
                path,
                f'{_name(path)} must be a duration like "2s", "500ms", "1m" or a number of seconds, got {_show(value)}',
            )
        if seconds < 0 or seconds == 0 and not zero_ok:
            self.fail(path, f"{_name(path)} must be more than 0 s, got {_show(value)}")
        return seconds

    def array(self, value: Any, path: Tuple, item, allow_scalar: bool = False) -> Tuple:
        """A non-empty list without repeats, each item checked by `item(value, path)`."""
        if allow_scalar and not isinstance(value, list):
            value = [value]
        if not isinstance(value, list) or not value:
            self.fail(path, f"{_name(path)} must be a non-empty list, got {_show(value)}")
        items = tuple(item(v, path) for v in value)
        for i, v in enumerate(items):
            if v in items[:i]:
                self.fail(path, f"{_name(path)} has {_show(value[i])} twice")
        return items

    def boolean(self, value: Any, path: Tuple) -> bool:
        if not isinstance(value, bool):
            self.fail(path, f"{_name(path)} must be true or false, got {_show(value)}")
        return value

    def file_path(self, value: Any, path: Tuple) -> Path:
        full = self.base_dir / self.string(value, path)
        if not full.exists():
            self.fail(path, f"{_name(path)}: no such file or directory: {full}")
        return full.resolve()

    # -- the plan --

    def plan(self, data: Dict[str, Any]) -> Plan:
        from httpbench import servers as adapters

        self.keys(data, TOP_KEYS, ())
        default_name = Path(self.source).stem if self.source.endswith(".toml") else "plan"
        name = self.string(data.get("name", default_name), ("name",))
        if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*", name):
            self.fail(("name",), f"name must be letters, digits, '.', '_' or '-', got {name!r}")
        description = self.string(data.get("description", ""), ("description",))
        notes = self.string(data.get("notes", ""), ("notes",))

        # [server.NAME]: directives, config files and command servers; a command server is
        # known by its table, so it is read before `servers` is checked.
        known = set(adapters.names()) | {"reference"}
        directives: Dict[str, Tuple[str, ...]] = {}
        config_files: Dict[str, str] = {}
        commands: Dict[str, str] = {}
        tables = data.get("server", {})
        if not isinstance(tables, dict):
            self.fail(("server",), "server must be tables like [server.nginx], got " + _show(tables))
        for server, table in tables.items():
            path = ("server", server)
            self.keys(table, SERVER_KEYS, path)
            if "command" in table:
                if server in known:
                    self.fail(
                        path + ("command",),
                        f"server.{server}.command: {server} is a built-in adapter; "
                        "give your command server another name",
                    )
                commands[server] = self.string(table["command"], path + ("command",))
                if not commands[server].strip():
                    self.fail(path + ("command",), f"server.{server}.command is empty")
        known |= set(commands)
        for server, table in tables.items():
            path = ("server", server)
            if server not in known:
                self.unknown_server(server, path, known)
            if "directives" in table:
                directives[server] = tuple(
                    self.string(v, path + ("directives",))
                    for v in self.list_of(table["directives"], path + ("directives",))
                )
            if "config_file" in table:
                config_files[server] = str(self.file_path(table["config_file"], path + ("config_file",)))

        servers = None
        if "servers" in data:
            servers = self.array(data["servers"], ("servers",), self.string)
            for server in servers:
                if server not in known:
                    self.unknown_server(server, ("servers",), known)
        baseline = None
        if "baseline" in data:
            baseline = self.string(data["baseline"], ("baseline",))
            if baseline not in (servers or known):
                self.fail(
                    ("baseline",),
                    f"baseline {baseline!r} is not one of the plan's servers ({', '.join(servers or sorted(known))})",
                )

        profiles = self.array(data.get("profiles", ["tuned"]), ("profiles",), lambda v, p: self.string(v, p, PROFILES))
        keep_alive = self.array(data.get("keep_alive", [True]), ("keep_alive",), self.boolean)
        server_cpus = self.array(data.get("server_cpus", [1]), ("server_cpus",), lambda v, p: self.integer(v, p, 1))
        client = self.string(data.get("client", "engine"), ("client",), CLIENTS)
        model = self.string(data.get("model", "closed"), ("model",), MODELS)
        pipeline = self.integer(data.get("pipeline", 1), ("pipeline",), 1)
        warmup = self.duration(data.get("warmup", 1.0), ("warmup",), zero_ok=True)
        allow_errors = self.boolean(data.get("allow_errors", False), ("allow_errors",))
        rounds = data.get("rounds", 1)
        if rounds != "auto":
            if not _is_int(rounds):
                self.fail(("rounds",), f'rounds must be a whole number or "auto", got {_show(rounds)}')
            self.integer(rounds, ("rounds",), 1)
        most = self.integer(data.get("max_rounds", 10), ("max_rounds",), 2 if rounds == "auto" else 1)

        if "workload" not in data:
            self.fail(("workload",), "workload is missing: add at least one [[workload]] table")
        raw = data["workload"]
        if not isinstance(raw, list) or not raw:
            self.fail(("workload",), "workload must be one or more [[workload]] tables")
        loads = tuple(self.workload(w, ("workload", i)) for i, w in enumerate(raw))
        for i, work in enumerate(loads):
            if any(work.label == other.label for other in loads[:i]):
                self.fail(("workload", i), f"workload {work.label!r} appears twice")

        if "levels" not in data:
            self.fail(("levels",), "levels is missing: add [levels] with list = [...] or from, to and step")
        levels = self.levels(data["levels"], model)
        if "budget" not in data:
            self.fail(("budget",), 'budget is missing: add [budget] with requests = N or duration = "2s"')
        budgets = self.budgets(data["budget"])

        self.combinations(client, model, pipeline, keep_alive, loads, levels, budgets)
        return Plan(
            name=name,
            description=description,
            notes=notes,
            servers=servers,
            profiles=profiles,
            workloads=loads,
            keep_alive=keep_alive,
            server_cpus=server_cpus,
            levels=levels,
            rounds=Rounds(None if rounds == "auto" else rounds, most),
            budget=budgets[0],
            model=model,
            pipeline=pipeline,
            warmup=warmup,
            client=client,
            directives=directives,
            config_files=config_files,
            text=self.text,
            budgets=budgets,
            baseline=baseline,
            commands=commands,
            source=self.source,
            allow_errors=allow_errors,
        )

    def list_of(self, value: Any, path: Tuple) -> list:
        if not isinstance(value, list):
            self.fail(path, f"{_name(path)} must be a list, got {_show(value)}")
        return value

    def unknown_server(self, server: str, path: Tuple, known: set) -> NoReturn:
        close = difflib.get_close_matches(server, sorted(known), n=1, cutoff=0.6)
        hint = f"did you mean {close[0]!r}? " if close else ""
        self.fail(
            path,
            f"{_name(path)}: unknown server {server!r}; {hint}known servers: {', '.join(sorted(known))} "
            '(or declare a command server with [server.NAME] command = "...")',
        )

    def workload(self, table: Any, path: Tuple) -> Workload:
        if not isinstance(table, dict):
            self.fail(path, f"workload must be a table, got {_show(table)}")
        kind = self.string(table.get("kind", "generated"), path + ("kind",), KINDS)
        for key in table:
            if key not in WORKLOAD_KEYS[kind] and any(key in keys for keys in WORKLOAD_KEYS.values()):
                self.fail(
                    path + (key,),
                    f"workload.{key} does not apply to kind = {kind!r}, which takes "
                    f"{', '.join(WORKLOAD_KEYS[kind][1:])}",
                )
        self.keys(table, WORKLOAD_KEYS[kind], path)
        try:
            if kind == "generated":
                if "size" not in table:
                    self.fail(path, "workload.size is missing: a generated file needs its size in bytes")
                size = self.integer(table["size"], path + ("size",), 0)
                return workloads.generated(size, self.string(table.get("name", "index.html"), path + ("name",)))
            if "path" not in table:
                self.fail(path, f"workload.path is missing: a {kind} workload needs one")
            where = self.file_path(table["path"], path + ("path",))
            if kind == "file":
                return workloads.file(where)
            urls = self.array(table.get("urls"), path + ("urls",), self.string)
            return workloads.docroot(where, urls)
        except WorkloadError as e:
            key = {"generated": "name", "file": "path", "docroot": "urls"}[kind]
            self.fail(path + (key,), f"workload.{key}: {e}")

    def levels(self, table: Any, model: str) -> Tuple[int, ...]:
        path = ("levels",)
        self.keys(table, LEVEL_KEYS, path)
        ranged = [k for k in ("from", "to", "step") if k in table]
        if "list" in table and ranged:
            self.fail(path + (ranged[0],), f"levels.{ranged[0]}: give either levels.list or from/to/step, not both")
        if "list" in table:
            values = self.array(table["list"], path + ("list",), lambda v, p: self.integer(v, p, 0))
            key = "list"
        else:
            for k in ("to", "step"):
                if k not in table:
                    self.fail(path, f"levels.{k} is missing: give levels.list, or from, to and step (like ab.c)")
            start = self.integer(table.get("from", 0), path + ("from",), 0)
            stop = self.integer(table["to"], path + ("to",), 0)
            step = self.integer(table["step"], path + ("step",), 1)
            if stop < start:
                self.fail(path + ("to",), f"levels.to must be at least levels.from ({start}), got {stop}")
            values = tuple(range(start, stop + 1, step))
            key = "from"
        if model == "open" and 0 in values:
            self.fail(
                path + (key,),
                f"levels.{key} includes 0, but in the open model levels are rates in req/s and 0 is not a rate",
            )
        # ab.c's convention: 0 means 1 (a first level of one connection), so 0, 10, 20 -> 1, 10, 20.
        levels = tuple(dict.fromkeys(max(1, v) for v in values))
        if key == "list" and len(levels) < len(values):
            self.fail(path + ("list",), "levels.list has 0 and 1, which are the same level (0 means 1)")
        return levels

    def budgets(self, table: Any) -> Tuple[Budget, ...]:
        path = ("budget",)
        self.keys(table, BUDGET_KEYS, path)
        given = [k for k in BUDGET_KEYS if k in table]
        if len(given) != 1:
            # point at whichever of the two comes second in the file
            second = max((path + (k,) for k in given), key=self.lines.find, default=path)
            self.fail(second, "budget must have exactly one of requests (like -n) or duration")
        key = given[0]
        # A list sweeps budgets: one cell each (the 2007 write-up ran -n 100, 1000 and 10000 at
        # every -c).
        if key == "requests":
            values = self.array(table[key], path + (key,), lambda v, p: self.integer(v, p, 1), allow_scalar=True)
            return tuple(Budget(requests=v) for v in values)
        values = self.array(
            table[key], path + (key,), lambda v, p: self.duration(v, p, zero_ok=False), allow_scalar=True
        )
        return tuple(Budget(duration=v) for v in values)

    def combinations(
        self,
        client: str,
        model: str,
        pipeline: int,
        keep_alive: Tuple[bool, ...],
        loads: Tuple[Workload, ...],
        levels: Tuple[int, ...],
        budgets: Tuple[Budget, ...],
    ) -> None:
        """What each part allows alone but not together."""
        if client != "engine":
            if model == "open":
                self.fail(("model",), f'model = "open" needs client = "engine": {client} runs a closed loop only')
            if pipeline > 1 and client == "ab":
                self.fail(
                    ("pipeline",),
                    f'pipeline = {pipeline} cannot be used with client = "ab": ab sends one '
                    "request at a time per connection (use wrk, h2load or the engine)",
                )
            if False in keep_alive and client in ("wrk", "h2load"):
                self.fail(
                    ("keep_alive",),
                    f'keep_alive = false cannot be used with client = "{client}": it keeps '
                    "connections open (use ab or the engine)",
                )
            if client == "wrk" and budgets[0].requests is not None:
                self.fail(
                    ("budget", "requests"),
                    'budget.requests cannot be used with client = "wrk": wrk has no '
                    "request count (-n); give budget.duration",
                )
            for i, work in enumerate(loads):
                if len(work.paths) > 1:
                    self.fail(
                        ("workload", i),
                        f"workload {work.label!r} has {len(work.paths)} URLs but {client} "
                        "requests one: use the engine, or one URL",
                    )
        fewest = min((b.requests for b in budgets if b.requests is not None), default=None)
        if fewest is not None:
            if model == "closed" and fewest < max(levels):
                self.fail(
                    ("budget", "requests"),
                    f"budget.requests = {fewest} is less than the level of {max(levels)} "
                    "connections: each connection needs at least one request",
                )
            if model == "open" and fewest < max(levels):
                self.fail(
                    ("budget", "requests"),
                    f"budget.requests = {fewest} is less than the rate of {max(levels)} "
                    "req/s: each level needs at least one second of load",
                )


# ---- where a key is ---------------------------------------------------------------------------


class _Lines:
    """Line numbers of a TOML text's tables and keys, found by scanning it: `[levels]` is
    ("levels",), the second `[[workload]]` is ("workload", 1), `step = 10` in [levels] is
    ("levels", "step"). Multi-line strings and arrays are skipped, so a line of `notes` that
    looks like `key = value` is not taken for a key."""

    _HEADER = re.compile(r"^\s*(\[\[?)\s*(.+?)\s*\]\]?\s*(?:#.*)?$")
    _KEY = re.compile(
        r"^\s*((?:[A-Za-z0-9_-]+|\"[^\"]*\"|'[^']*')(?:\s*\.\s*(?:[A-Za-z0-9_-]+|\"[^\"]*\"|'[^']*'))*)\s*="
    )

    def __init__(self, text: str) -> None:
        self.where: Dict[Tuple, int] = {}
        table: Tuple = ()
        arrays: Dict[Tuple, int] = {}
        self.open_string: Optional[str] = None
        self.depth = 0
        for number, line in enumerate(text.splitlines(), start=1):
            rest = line
            if self.open_string:
                end = line.find(self.open_string)
                if end < 0:
                    continue
                rest, self.open_string = line[end + 3 :], None
            elif self.depth == 0:
                header = self._HEADER.match(line)
                key = self._KEY.match(line)
                if header and not key:
                    parts = tuple(_split_key(header.group(2)))
                    if header.group(1) == "[[":
                        arrays[parts] = arrays.get(parts, -1) + 1
                        table = parts + (arrays[parts],)
                    else:
                        table = parts
                    self.where.setdefault(table, number)
                    continue
                if key:
                    self.where.setdefault(table + tuple(_split_key(key.group(1))), number)
                    rest = line[key.end() :]
            self._scan(rest)

    def _scan(self, fragment: str) -> None:
        """Follow strings, comments and brackets through the rest of a line."""
        i = 0
        while i < len(fragment):
            c = fragment[i]
            if c == "#":
                return
            if fragment.startswith(('"""', "'''"), i):
                delimiter = fragment[i : i + 3]
                end = fragment.find(delimiter, i + 3)
                if end < 0:
                    self.open_string = delimiter
                    return
                i = end + 3
                continue
            if c in "\"'":
                i += 1
                while i < len(fragment) and fragment[i] != c:
                    i += 2 if c == '"' and fragment[i] == "\\" else 1
            elif c in "[{":
                self.depth += 1
            elif c in "]}":
                self.depth = max(0, self.depth - 1)
            i += 1

    def find(self, path: Tuple) -> int:
        """The line of `path`, or of the nearest enclosing table or key that is written down
        (an inline table, or a missing key's table); line 1 for what is not there at all."""
        path = tuple(path)
        while path:
            if path in self.where:
                return self.where[path]
            path = path[:-1]
        return 1


def _split_key(text: str) -> List[str]:
    """`server."my server".directives` -> ["server", "my server", "directives"]."""
    return [part.strip().strip("\"'") for part in re.findall(r"\"[^\"]*\"|'[^']*'|[^.]+", text)]


def line_of(text: str, path: Tuple) -> int:
    """The line of `text` that sets the key at `path`."""
    return _Lines(text).find(path)
