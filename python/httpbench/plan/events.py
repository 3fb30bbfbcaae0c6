"""A plan's operations under load (issue 29), read and checked (plan.parse's part): what is done to
each cell's server during each level's load, as production does to it (reloads for certificate
renewals and configuration changes, graceful restarts for upgrades, log reopening every night).
Every mistake is one line, as every other value's.

    [[event]]
    action = "reload"            # reload | graceful-restart | restart | reopen-logs
    at = "2s"                    # from the start of the level's measured load
    every = "2s"                 # then again this often...
    count = 5                    # ...this many times in all (every needs count)
    renew_certificate = true     # reload only: a new certificate written first (HTTPS cells)

    retry_idempotent = true      # a request lost to a close as the client reused its connection
                                 # is retried once on a new one, as browsers do (RFC 9110 9.2.2)
"""

from __future__ import annotations

from typing import Any, Dict, Sequence, Tuple

from httpbench.plan.model import Budget, Event
from httpbench.plan.values import ValueChecks
from httpbench.servers.operations import ACTIONS

KEYS = ("event", "retry_idempotent")
EVENT_KEYS = ("action", "at", "every", "count", "renew_certificate", "group")
# What the level's load needs after its last event: the server's time to finish it (old workers
# gone, new ones serving) and a stretch of load after, read against the stretch before the first.
AFTER_LAST = 1.0


def schedule(events: Sequence[Event]) -> Tuple[Tuple[float, Event], ...]:
    """Every action of `events` with its time, in the order they are due."""
    return tuple(sorted(((t, e) for e in events for t in e.times()), key=lambda pair: pair[0]))


class EventChecks(ValueChecks):
    """The [[event]] list and what it allows with the rest of the plan."""

    def events(
        self, data: Dict[str, Any], client: str, budgets: Tuple[Budget, ...], capacity: bool
    ) -> Tuple[Event, ...]:
        if "event" not in data:
            return ()
        raw = data["event"]
        if not isinstance(raw, list) or not raw:
            self.fail(("event",), 'event must be one or more [[event]] tables with action = "reload" and at = "5s"')
        if client != "engine":
            self.fail(
                ("event",),
                f'events cannot be used with client = "{client}": only the engine counts what an event '
                "costs each request; use the engine",
            )
        if capacity:
            self.fail(("capacity",), "a capacity search has no events yet: drop [capacity] or the [[event]] tables")
        events = tuple(self.event(table, ("event", i)) for i, table in enumerate(raw))
        for budget in budgets:
            if budget.duration is None:
                self.fail(
                    ("budget", "requests"),
                    "events happen during a level's load, which must last long enough to hold them: give "
                    'budget.duration (say "15s") instead of budget.requests',
                )
            for i, event in enumerate(events):
                last = event.times()[-1]
                if last + AFTER_LAST > budget.duration:
                    self.fail(
                        ("event", i, "every" if event.count > 1 else "at"),
                        f"{event.action} at {last:g} s is after the level's end (budget.duration = "
                        f"{budget.duration:g} s, and {AFTER_LAST:g} s of load after the last event): "
                        f"lengthen budget.duration to at least {last + AFTER_LAST:g} s or move the event",
                    )
        return events

    def event(self, table: Any, path: Tuple) -> Event:
        self.keys(table, EVENT_KEYS, path)
        if "action" not in table:
            self.fail(path, f"an event needs action = one of {', '.join(ACTIONS)}")
        action = self.string(table["action"], path + ("action",), ACTIONS)
        if "at" not in table:
            self.fail(path, 'an event needs at = "5s": when it happens, from the start of the level\'s load')
        at = self.duration(table["at"], path + ("at",), zero_ok=True)
        every, count = None, 1
        if "every" in table:
            every = self.duration(table["every"], path + ("every",), zero_ok=False)
            if "count" not in table:
                self.fail(path + ("every",), "every needs count = N, how many times in all (the first at `at`)")
        if "count" in table:
            count = self.integer(table["count"], path + ("count",), 1)
            if count > 1 and every is None:
                self.fail(path + ("count",), f'count = {count} needs every = "2s", the time between them')
        renew = self.boolean(table.get("renew_certificate", False), path + ("renew_certificate",))
        if renew and action != "reload":
            self.fail(
                path + ("renew_certificate",),
                f"renew_certificate is what a reload picks up; {action} with it is not a renewal: use action = "
                '"reload"',
            )
        group = self.string(table.get("group", ""), path + ("group",))
        return Event(action, at, every, count, renew, group)

    def retry_idempotent(self, data: Dict[str, Any], client: str) -> bool:
        if "retry_idempotent" not in data:
            return False
        retry = self.boolean(data["retry_idempotent"], ("retry_idempotent",))
        if retry and client != "engine":
            self.fail(
                ("retry_idempotent",),
                f'retry_idempotent cannot be used with client = "{client}": it is the engine\'s; use the engine',
            )
        return retry
