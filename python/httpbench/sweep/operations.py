"""A level's planned events performed on its server while the load runs (issue 29).

The load runs in the sweep's thread; its events are performed from a thread of their own, each at
its time from the moment the load is started, through the server host (its adapter's documented
means; `ServerHost.perform` verifies each happened). What was performed is the round's
`operations`, the suite's record of its events, named apart from the monitor's `server.events`
(the processes it saw come and go). The engine is told to count what an event costs its requests
rather than give up on a server that restarts (`keep_going`), and to keep a fine series of them
(`tick_ms`), which is what an event's window is read from (results.operations).
"""

from __future__ import annotations

import threading
import time
from typing import Callable, List, Sequence

from httpbench.errors import Error
from httpbench.plan.events import schedule
from httpbench.plan.model import Event

# The engine's fine series, in milliseconds a point: ten points a second, so a reload's few
# hundred milliseconds show (the per-second `timeseries` blurs them into the seconds around).
TICK_MS = 100


def spec(events: Sequence[Event], retry_idempotent: bool) -> dict:
    """What the engine's spec gains for a level with `events` (nothing without them). No warm-up
    of the level's connections: the events are timed from the load's start, and the measured
    window must start there too (the cell's warm-up has warmed the server)."""
    if not events:
        return {"retry_idempotent": True} if retry_idempotent else {}
    return {"tick_ms": TICK_MS, "keep_going": True, "retry_idempotent": retry_idempotent, "warmup_connections": False}


def during(host, events: Sequence[Event], tls: bool, load: Callable[[], dict]) -> dict:
    """`load()`'s report with `operations`: each of `events` performed on `host`'s server at its
    time, in order (one that would start after the load has ended is recorded as not performed).
    `tls`: the cell is served over HTTPS, so a reload that renews the certificate writes one."""
    performed: List[dict] = []
    ended = threading.Event()
    started = time.monotonic()

    def perform() -> None:
        for due, event in schedule(events):
            if ended.wait(max(0.0, started + due - time.monotonic())):
                performed.append(_missed(event, due))
                continue
            at = time.time()
            try:
                done = host.perform(event.action, renew_certificate=event.renew_certificate and tls)
            except Error as e:  # the server, or its host, could not: the event failed, the rest go on
                done = {**_missed(event, due), "at": at, "problem": str(e)}
            performed.append({**done, "due_s": due})

    worker = threading.Thread(target=perform, name="httpbench-events", daemon=True)
    worker.start()
    try:
        measurement = load()
    finally:
        ended.set()
        # A perform in progress is bounded by the server host (its verification's time limit).
        worker.join()
    measurement["operations"] = performed
    return measurement


def _missed(event: Event, due: float) -> dict:
    """An event the load ended before (or that could not be performed): none of its figures, and
    why."""
    return {
        "action": event.action,
        "due_s": due,
        "at": None,
        "took_s": None,
        "master": None,
        "ok": False,
        "problem": f"not performed: the level's load ended before {due:g} s",
        "workers_replaced": 0,
        "certificate_renewed": False,
    }
