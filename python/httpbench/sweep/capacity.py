"""A capacity plan's cell: the engine's search (`httpbench._engine.CapacitySearch`, the one
`httpbench-load --capacity` drives) asks for a rate, the sweep runs a probe at it as it runs a
level's round (the server's monitor window around it, the round's honesty flags; on a cluster
split over the client hosts and merged), stores it as a round of the level of its offered rate,
and tells the search its report, until the search is done. What the search found so far is
stored with the cell after each probe.

A search is not resumed halfway, since the rates it asks for depend on every probe before: a cell
interrupted mid-search is searched again from its start by `--resume` (store.search_again), and a
cell whose search finished is not searched again.
"""

from __future__ import annotations

import json
from collections import Counter
from typing import TYPE_CHECKING

from httpbench.plan.capacity import level_of
from httpbench.plan.model import Cell
from httpbench.servers.host import ServerHost
from httpbench.sweep.errors import Stopped
from httpbench.sweep.target import Target

if TYPE_CHECKING:
    from httpbench.sweep.sweep import Sweep

# The base spec's connections: enough that the engine gets its threads (engine.with_threads);
# each probe then has the pool its rate needs (the search's probe_spec).
BASE_CONNECTIONS = 50


def search(sweep: "Sweep", cell: Cell, cell_id: int, to: Target, host: ServerHost) -> None:
    """Search `cell`'s capacity on its running server (`to`, `host`), each probe stored as it
    ends; raises as a level's round does when the server dies or a load ends early."""
    settings = sweep.plan.capacity
    sweep.store.search_again(cell_id)
    found = settings.search()
    cell_spec = sweep.spec(
        to, cell.workload, BASE_CONNECTIONS, {"duration": settings.probe or 3.0}, cell.keep_alive, cell.streams
    )
    base = json.dumps({**cell_spec, "arrivals": settings.arrivals})
    probes: Counter = Counter()  # rounds stored at each level
    rate = found.next_rate()
    while rate is not None:
        spec = json.loads(found.probe_spec(base, rate, settings.connections))
        level = level_of(rate)
        measurement = sweep.measure(cell, host, level, lambda: sweep.load(spec))
        index = probes[level]
        probes[level] += 1
        sweep.store.add_round(cell_id, level, index, measurement, replace=True)
        sweep.progress.on_round(cell, level, index, measurement)
        lost = sweep.lost_hosts(measurement)
        if lost and sweep.on_client_loss == "stop":
            raise Stopped(
                f"client host(s) {', '.join(lost)} lost in the probe at {rate:,.0f} req/s, stored as partial "
                "(--on-client-loss stop)"
            )
        sweep.server_whole(cell, level, measurement)
        if lost:
            # A probe some client hosts left offered less than its rate: it judges nothing, and
            # the same rate is probed again from the hosts that are left.
            sweep.progress.on_note(
                f"{cell.key}: client host(s) {', '.join(lost)} lost; probing {rate:,.0f} req/s again"
            )
            continue
        found.record(json.dumps(measurement))
        sweep.store.set_capacity(cell_id, json.loads(found.capacity()))
        rate = found.next_rate()
