"""A plan's TOML text read and checked completely (plan.parse), every mistake one line that
names the file, the line and the key:

    myplan.toml line 12: levels.step must be more than 0, got -10

Each value is checked by httpbench.plan.values, which finds its line with httpbench.plan.lines;
the protocols, [tls] and streams by httpbench.plan.protocols.
"""

from __future__ import annotations

import difflib
import math
import os
import re
import sys
from pathlib import Path
from typing import Any, Dict, NoReturn, Optional, Tuple

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.9/3.10 only
    import tomli as tomllib

from httpbench.plan import capacity as capacities
from httpbench.plan import events as planned
from httpbench.plan import hostile
from httpbench.plan import workload as workloads
from httpbench.plan.dynamic import PHP_KINDS, php_workload
from httpbench.plan.model import Budget, Plan, PlanError, Rounds
from httpbench.plan.protocols import ProtocolChecks
from httpbench.plan.values import is_int, key_name, show
from httpbench.plan.workload import Workload, WorkloadError
from httpbench.servers.base import PROFILES
from httpbench.site import ORDERS, SiteError
from httpbench.site.docroot import served_in_place
from httpbench.site.models import MODELS as SITE_MODELS
from httpbench.site.models import model as site_model

CLIENTS = ("engine", "ab", "wrk", "h2load")
MODELS = ("closed", "open")
KINDS = ("generated", "file", "docroot", "site", *PHP_KINDS)

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
    "expect_status",
    "max_errors",
    "protocols",
    "tls",
    "streams",
    "capacity",
    "requests_per_connection",
    "accept_encoding",
    *hostile.KEYS,
    *planned.KEYS,
)
LEVEL_KEYS = ("from", "to", "step", "list")
BUDGET_KEYS = ("requests", "duration")
WORKLOAD_KEYS = {
    "generated": ("kind", "size", "name"),
    "file": ("kind", "path"),
    # urls requested in turn, or the mix of an access log (httpbench.site.access_log)
    "docroot": ("kind", "path", "urls", "access_log", "order", "speed"),
    "site": ("kind", "model", "directories"),
    # a PHP script and its answer (httpbench.plan.dynamic), labelled with its kind
    **{kind: ("kind",) for kind in PHP_KINDS},
}
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


class _Parser(ProtocolChecks, hostile.HostileChecks, planned.EventChecks):
    """The plan itself: its keys, the servers and workloads it names, its levels and budgets, and
    what they allow together."""

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
            self.fail(("server",), "server must be tables like [server.nginx], got " + show(tables))
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
        protocols = self.protocols(data)
        keep_alive_by = self.keep_alive(data, protocols)
        # Every keep-alive setting of any protocol: what the checks of other keys read.
        keep_alive = tuple(dict.fromkeys(ka for kas in keep_alive_by.values() for ka in kas))
        server_cpus = self.array(data.get("server_cpus", [1]), ("server_cpus",), lambda v, p: self.integer(v, p, 1))
        client = self.string(data.get("client", "engine"), ("client",), CLIENTS)
        # A capacity search offers rates: its plan is open loop unless it says otherwise (refused).
        model = self.string(data.get("model", "open" if "capacity" in data else "closed"), ("model",), MODELS)
        pipeline = self.integer(data.get("pipeline", 1), ("pipeline",), 1)
        warmup = self.duration(data.get("warmup", 1.0), ("warmup",), zero_ok=True)
        allow_errors = self.boolean(data.get("allow_errors", False), ("allow_errors",))
        expect_status = self.statuses(data, client)
        max_errors = self.share(data.get("max_errors", "1%"), ("max_errors",))
        rounds = data.get("rounds", 1)
        if rounds != "auto":
            if not is_int(rounds):
                self.fail(("rounds",), f'rounds must be a whole number or "auto", got {show(rounds)}')
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

        self.timed_pace(loads, model, "capacity" in data)
        capacity = None
        if "capacity" in data:
            capacity = capacities.read(self, data, data.get("model"), client, pipeline)
            levels, budgets = (), (Budget(duration=capacity.probe or 3.0),)
        else:
            if "levels" not in data:
                self.fail(("levels",), "levels is missing: add [levels] with list = [...] or from, to and step")
            levels = self.levels(data["levels"], model)
            if "budget" not in data:
                self.fail(("budget",), 'budget is missing: add [budget] with requests = N or duration = "2s"')
            budgets = self.budgets(data["budget"])
            self.combinations(client, model, pipeline, keep_alive, loads, levels, budgets)
        per_connection = self.requests_per_connection(data, client, keep_alive)
        tls = self.tls(data.get("tls", {}), protocols, client)
        streams = self.streams(data, protocols, keep_alive_by, pipeline)
        encodings = self.encodings(data, client)
        axes, pairs = self.pairs(data)
        idle = self.idle(axes, client, keep_alive)
        slow, slow_clients, slow_settings = self.slow(axes, client, loads)
        if (max(idle) or slow_clients) and capacity:
            self.fail(("capacity",), "a capacity search has no idle or slow clients yet: drop [capacity] or them")
        events = self.events(data, client, budgets, capacity is not None)
        return Plan(
            name=name,
            description=description,
            notes=notes,
            servers=servers,
            profiles=profiles,
            workloads=loads,
            keep_alive=keep_alive,
            keep_alive_by=keep_alive_by if isinstance(data.get("keep_alive"), dict) else {},
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
            expect_status=expect_status,
            max_errors=max_errors,
            protocols=protocols,
            tls=tls,
            streams=streams,
            capacity=capacity,
            requests_per_connection=per_connection,
            encodings=encodings,
            idle_connections=idle,
            idle_ping=self.idle_ping(data),
            slow=slow,
            slow_clients=slow_clients,
            slow_settings=slow_settings,
            events=events,
            retry_idempotent=self.retry_idempotent(data, client),
            attack_pairs=pairs,
        )

    def requests_per_connection(self, data: Dict[str, Any], client: str, keep_alive: Tuple[bool, ...]) -> Optional[int]:
        """How many requests a keep-alive connection makes before it closes; None: no limit."""
        if "requests_per_connection" not in data:
            return None
        path = ("requests_per_connection",)
        count = self.integer(data["requests_per_connection"], path, 1)
        if client != "engine":
            self.fail(path, f'requests_per_connection cannot be used with client = "{client}": use the engine')
        if True not in keep_alive:
            self.fail(
                path,
                "requests_per_connection applies to keep-alive connections, but keep_alive is false: "
                "add true to keep_alive or drop requests_per_connection",
            )
        return count

    def statuses(self, data: Dict[str, Any], client: str) -> Tuple[int, ...]:
        """`expect_status`: the statuses that count as served (none: any 2xx). The client tools
        count statuses by class only, so they cannot be told another."""
        if "expect_status" not in data:
            return ()
        path = ("expect_status",)
        statuses = self.array(data["expect_status"], path, lambda v, p: self.integer(v, p, 100), allow_scalar=True)
        if max(statuses) > 599:
            self.fail(path, f"expect_status must hold HTTP statuses from 100 to 599, got {max(statuses)}")
        if client != "engine":
            self.fail(
                path,
                f'expect_status cannot be used with client = "{client}": it counts statuses by class only '
                "(ab its non-2xx, wrk its 4xx and 5xx); use the engine",
            )
        return statuses

    def list_of(self, value: Any, path: Tuple) -> list:
        if not isinstance(value, list):
            self.fail(path, f"{key_name(path)} must be a list, got {show(value)}")
        return value

    def unknown_server(self, server: str, path: Tuple, known: set) -> NoReturn:
        close = difflib.get_close_matches(server, sorted(known), n=1, cutoff=0.6)
        hint = f"did you mean {close[0]!r}? " if close else ""
        self.fail(
            path,
            f"{key_name(path)}: unknown server {server!r}; {hint}known servers: {', '.join(sorted(known))} "
            '(or declare a command server with [server.NAME] command = "...")',
        )

    def workload(self, table: Any, path: Tuple) -> Workload:
        if not isinstance(table, dict):
            self.fail(path, f"workload must be a table, got {show(table)}")
        kind = self.string(table.get("kind", "generated"), path + ("kind",), KINDS)
        for key in table:
            if key not in WORKLOAD_KEYS[kind] and any(key in keys for keys in WORKLOAD_KEYS.values()):
                self.fail(
                    path + (key,),
                    f"workload.{key} does not apply to kind = {kind!r}, which takes "
                    f"{', '.join(WORKLOAD_KEYS[kind][1:]) or 'no other key'}",
                )
        self.keys(table, WORKLOAD_KEYS[kind], path)
        try:
            if kind == "generated":
                if "size" not in table:
                    self.fail(path, "workload.size is missing: a generated file needs its size in bytes")
                size = self.integer(table["size"], path + ("size",), 0)
                return workloads.generated(size, self.string(table.get("name", "index.html"), path + ("name",)))
            if kind in PHP_KINDS:
                return php_workload(kind)
            if kind == "site":
                return self.site(table, path)
            if "path" not in table:
                self.fail(path, f"workload.path is missing: a {kind} workload needs one")
            where = self.file_path(table["path"], path + ("path",))
            if kind == "file":
                return workloads.file(where)
            if "access_log" in table or "urls" not in table:
                return self.served_in_place(table, path, where)
            for key in ("order", "speed"):
                if key in table:
                    self.fail(path + (key,), f"workload.{key} orders an access log's requests; with urls, drop {key}")
            urls = self.array(table.get("urls"), path + ("urls",), self.string)
            return workloads.docroot(where, urls)
        except WorkloadError as e:
            key = {"generated": "name", "file": "path", "docroot": "urls"}[kind]
            self.fail(path + (key,), f"workload.{key}: {e}")

    def site(self, table: Dict[str, Any], path: Tuple) -> Workload:
        """kind = "site": a built-in model (httpbench.site.models)."""
        if "model" not in table:
            self.fail(path, f"workload.model is missing: a site workload names one of {', '.join(SITE_MODELS)}")
        name = self.string(table["model"], path + ("model",), SITE_MODELS)
        if "directories" in table and name != "specweb99":
            self.fail(path + ("directories",), f'workload.directories sizes model = "specweb99" only, not {name!r}')
        directories = self.integer(table.get("directories", 10), path + ("directories",), 1)
        return workloads.site(site_model(name, directories))

    def served_in_place(self, table: Dict[str, Any], path: Tuple, root: Path) -> Workload:
        """kind = "docroot" with access_log: the user's directory served where it is, the mix
        from its log."""
        if "urls" in table:
            self.fail(path + ("access_log",), "workload.access_log: give either urls or access_log, not both")
        if "access_log" not in table:
            self.fail(path, "workload.urls or workload.access_log is missing: a docroot workload needs one")
        if not root.is_dir() or not os.access(root, os.R_OK | os.X_OK):
            self.fail(path + ("path",), f"workload.path: cannot read the document root {root}: name a readable one")
        log = self.file_path(table["access_log"], path + ("access_log",))
        order = self.string(table.get("order", "weighted"), path + ("order",), ORDERS)
        speed = 1.0
        if "speed" in table:
            if order != "timed":
                self.fail(path + ("speed",), f'workload.speed applies to order = "timed" only, not {order!r}')
            speed = table["speed"]
            if isinstance(speed, bool) or not isinstance(speed, (int, float)) or not 0 < speed < math.inf:
                self.fail(path + ("speed",), f"workload.speed must be a finite number more than 0, got {show(speed)}")
        try:
            return workloads.site(served_in_place(root, log, order, float(speed)))
        except SiteError as e:
            self.fail(path + ("access_log",), f"workload.access_log: {e}")

    def timed_pace(self, loads: Tuple[Workload, ...], model: str, capacity: bool) -> None:
        """A timed log sets its own pace (its times, sped up): its levels are connections to carry
        it, so a rate, of the open model or of a capacity search, has no place beside it."""
        pace = 'workload.order = "timed" sends at the log\'s own pace'
        for work in loads:
            if work.site is None or work.site.mix.order != "timed":
                continue
            if capacity:
                self.fail(
                    ("capacity",),
                    f'a capacity search offers rates, but {pace}; drop [capacity] or use order = "replay"',
                )
            if model == "open":
                self.fail(
                    ("model",), f'model = "open" sets rates, but {pace} (levels are its connections); use "closed"'
                )

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
