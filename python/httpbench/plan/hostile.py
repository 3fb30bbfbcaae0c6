"""A plan's clients that are not a benchmark (issue 28), read and checked (plan.parse's part):
idle keep-alive connections held beside the load, and slow clients attacking it, each an axis
whose cells multiply with the others'. Every mistake is one line, as every other value's.

    idle_connections = [0, 5000]          # a cell each; 0: none
    idle_ping = "5s"                      # a request on each that often; default: never
    slow = ["none", "headers", "body", "read"]
    slow_clients = 300
    slow_interval = "10s"                 # the engine's defaults otherwise (docs/json-schema.md)
    slow_chunk_bytes = 24
    slow_window_bytes = 4096
    slow_content_length = 4096
    slow_hold = "600s"

or, in place of idle_connections and slow, the cells as whole (idle connections, slow mode)
pairs, when crossing the two axes would measure more than the plan needs:

    attacks = [[0, "none"], [0, "headers"], [5000, "none"]]
"""

from __future__ import annotations

from typing import Any, Dict, Optional, Tuple

from httpbench.plan.model import SlowSettings
from httpbench.plan.values import ValueChecks, show
from httpbench.plan.workload import Workload

KEYS = (
    "attacks",
    "idle_connections",
    "idle_ping",
    "slow",
    "slow_clients",
    "slow_interval",
    "slow_chunk_bytes",
    "slow_window_bytes",
    "slow_content_length",
    "slow_hold",
)
SLOW_MODES = ("none", "headers", "body", "read")
# A slow read needs an answer larger than the socket buffers on both sides can swallow (the
# issue: at least 16 MB), served from a file the suite writes beside the cell's own.
SLOW_READ_FILE = "httpbench-slow-read.bin"
SLOW_READ_BYTES = 16 << 20


class HostileChecks(ValueChecks):
    """The idle and slow clients' keys and what they allow with the rest of the plan."""

    def pairs(self, data: Dict[str, Any]) -> Tuple[Dict[str, Any], Optional[Tuple[Tuple[int, Optional[str]], ...]]]:
        """The attacks key's (idle connections, slow mode) pairs, a cell each, and `data` with
        the idle_connections and slow axes they span for `idle` and `slow` to check (whose
        lines are the attacks key's); None and `data` itself without the key."""
        if "attacks" not in data:
            return data, None
        for key in ("idle_connections", "slow"):
            if key in data:
                self.fail((key,), f"attacks lists the cells' idle connections and slow modes: drop {key}, or attacks")

        def pair(value: Any, path: Tuple) -> Tuple[int, str]:
            if not (isinstance(value, list) and len(value) == 2):
                self.fail(
                    path,
                    'attacks lists [idle connections, slow mode] pairs, like [[0, "none"], [5000, "none"]], '
                    f"got {show(value)}",
                )
            return self.integer(value[0], path, 0), self.string(value[1], path, SLOW_MODES)

        pairs = self.array(data["attacks"], ("attacks",), pair)
        for key in ("idle_connections", "slow"):
            self.lines.where[(key,)] = self.lines.find(("attacks",))
        counts, modes = sorted({i for i, _ in pairs}), list(dict.fromkeys(m for _, m in pairs))
        axes = {**data, "idle_connections": counts, "slow": modes}
        return axes, tuple((idle, None if mode == "none" else mode) for idle, mode in pairs)

    def idle(self, data: Dict[str, Any], client: str, keep_alive: Tuple[bool, ...]) -> Tuple[int, ...]:
        """The idle_connections axis ((0,) without the key)."""
        path = ("idle_connections",)
        if path[0] not in data:
            if "idle_ping" in data:
                self.fail(("idle_ping",), "idle_ping keeps idle connections alive: add idle_connections = N")
            return (0,)
        counts = self.array(data[path[0]], path, lambda v, p: self.integer(v, p, 0), allow_scalar=True)
        if max(counts) == 0:
            return counts
        self.engine_only(path, client)
        if False in keep_alive:
            self.fail(
                path,
                "idle_connections are keep-alive connections, but keep_alive has false: measure "
                "keep_alive = false in a plan without idle_connections",
            )
        return counts

    def idle_ping(self, data: Dict[str, Any]) -> Optional[float]:
        if "idle_ping" not in data:
            return None
        return self.duration(data["idle_ping"], ("idle_ping",), zero_ok=False)

    def slow(
        self, data: Dict[str, Any], client: str, loads: Tuple[Workload, ...]
    ) -> Tuple[Tuple[Optional[str], ...], int, SlowSettings]:
        """The slow axis (None: the cell without slow clients), how many each attacked cell has,
        and their settings."""
        settings = [key for key in KEYS[5:] if key in data]
        if "slow" not in data:
            for key in ("slow_clients", *settings):
                if key in data:
                    self.fail((key,), f'{key} sets the slow clients: add slow = ["none", "headers"] (or body, read)')
            return (None,), 0, SlowSettings()
        path = ("slow",)
        modes = self.array(data["slow"], path, lambda v, p: self.string(v, p, SLOW_MODES), allow_scalar=True)
        axis = tuple(None if mode == "none" else mode for mode in modes)
        if axis == (None,):
            return axis, 0, SlowSettings()
        self.engine_only(path, client)
        if "slow_clients" not in data:
            self.fail(path, f"slow = {modes[-1]!r} needs slow_clients = N, the connections each attacked cell opens")
        clients = self.integer(data["slow_clients"], ("slow_clients",), 1)
        if "read" in axis:
            for i, work in enumerate(loads):
                if work.root is not None:
                    self.fail(
                        ("workload", i),
                        f'slow = "read" reads a {SLOW_READ_BYTES >> 20} MB file written into the server\'s '
                        f"document root, but {work.label} is served where it is: drop read or use another workload",
                    )

        def seconds(key: str) -> Optional[float]:
            return self.duration(data[key], (key,), zero_ok=False) if key in data else None

        def count(key: str) -> Optional[int]:
            return self.integer(data[key], (key,), 1) if key in data else None

        return (
            axis,
            clients,
            SlowSettings(
                seconds("slow_interval"),
                count("slow_chunk_bytes"),
                count("slow_window_bytes"),
                count("slow_content_length"),
                seconds("slow_hold"),
            ),
        )

    def engine_only(self, path: Tuple, client: str) -> None:
        if client != "engine":
            self.fail(
                path,
                f'{path[0]} cannot be used with client = "{client}": only the engine holds such '
                "connections beside its load; use the engine",
            )
