"""What can go wrong, for the user to fix, and what is a bug.

Every error the user can fix (a plan, a server, the engine's refusal, a store, a cluster...) is an
`Error`: the command line shows it as one line and exits 2. Anything else is a bug: a traceback and
exit 1.
"""

from typing import Optional


class Error(Exception):
    """Something the user can fix; the message says what is wrong and what to do, in one line."""


class EngineError(Error):
    """The engine refused a spec, or could not start or go on.

    `kind` says why, as the engine's `ErrorKind` in snake case ("too_few_requests",
    "validation_failed", "unreachable", "open_files", ...), and `fields` holds its figures, so a
    caller can word the remedy in its own terms (`engine.in_plan_terms` does for a plan). Raised
    by the engine module itself, and again on a cluster's controller from a client host's report.
    """

    def __init__(self, message: str, kind: str = "other", fields: Optional[dict] = None) -> None:
        super().__init__(message)
        self.kind = kind
        self.fields = dict(fields or {})

    def __reduce__(self):
        return type(self), (str(self), self.kind, self.fields)


class EnginePanicked(Exception):
    """A panic in the engine: a bug, not bad input. The interpreter goes on; a sweep records the
    cell as failed and measures the next one."""
