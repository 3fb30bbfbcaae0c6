"""Where the server and the client run: which CPUs each may use.

The server's whole process tree is pinned to its CPUs; the client gets the others, so neither
steals the other's cycles unnoticed. Sharing CPUs is refused unless asked for (the 2011
write-up ran both on one machine: allowed, but every result then says so).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Optional, Tuple

from httpbench.errors import Error


class PlacementError(Error):
    """A CPU set that cannot be used; the message says why and what to do."""


def parse_cpus(text: str, flag: str = "--server-cpus") -> Tuple[int, ...]:
    """`0`, `0-3` or `0,2-3` as a sorted tuple of CPU numbers."""
    cpus = set()
    try:
        for part in text.split(","):
            low, dash, high = part.strip().partition("-")
            first, last = int(low), int(high if dash else low)
            if first < 0 or last < first:
                raise ValueError
            cpus.update(range(first, last + 1))
    except ValueError:
        raise PlacementError(f"{flag} {text!r} is not a CPU list such as 0, 0-3 or 0,2-3") from None
    return tuple(sorted(cpus))


@dataclass(frozen=True)
class Placement:
    server: Tuple[int, ...]
    client: Tuple[int, ...]
    shared: bool

    @classmethod
    def choose(
        cls,
        server_cpus: Optional[str],
        client_cpus: Optional[str] = None,
        allow_shared: bool = False,
        available: Optional[Tuple[int, ...]] = None,
        where: str = "this machine",
    ) -> "Placement":
        """By default the server gets the first CPU and the client all the others. `available`:
        the CPUs of the host `where` both run (default: this process's)."""
        available = tuple(sorted(available if available is not None else os.sched_getaffinity(0)))
        server = parse_cpus(server_cpus) if server_cpus else available[:1]
        client = (
            parse_cpus(client_cpus, "--client-cpus") if client_cpus else tuple(c for c in available if c not in server)
        )
        for flag, cpus in (("--server-cpus", server), ("--client-cpus", client)):
            missing = [c for c in cpus if c not in available]
            if missing:
                raise PlacementError(
                    f"{flag} names CPU {missing[0]}, which {where} does not let us use "
                    f"(available: {show_cpus(available)})"
                )
        if not client:
            if not allow_shared:
                raise PlacementError(
                    f"the server takes every CPU ({show_cpus(server)}), leaving none for the client; "
                    "give the server fewer with --server-cpus, or pass --allow-shared-cpus"
                )
            client = server
        overlap = set(server) & set(client)
        if overlap and not allow_shared:
            raise PlacementError(
                f"server and client would share CPU {min(overlap)}; pick separate sets, "
                "or pass --allow-shared-cpus (the results will say they shared)"
            )
        return cls(server, client, bool(overlap))


def show_cpus(cpus: Tuple[int, ...]) -> str:
    """A CPU list as the flags take it: "0,2,3"."""
    return ",".join(map(str, cpus))
