"""What a server's operators do to it while it serves: reload its configuration, restart it
gracefully or fully, have it reopen its logs. Each adapter names the actions its server has
(`Server.operations`) and performs each by the server's own documented means (`Server.operate`);
httpbench.servers.operate performs one on a running server and verifies it happened
(docs/servers-operations.md has the table).
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from typing import Dict, Optional, Sequence

from httpbench.servers.own_words import chosen

ACTIONS = ("reload", "graceful-restart", "restart", "reopen-logs")


@dataclass(frozen=True)
class Operation:
    """An action as one server performs it."""

    action: str
    means: str  # one line: the signal or command, e.g. "SIGHUP to the master (nginx -s reload)"
    master: str  # "kept" | "replaced": what the action does to the server's main process
    doc: str  # the documentation it follows
    # "replaced" | "kept": whether the action ends the workers running before it (a server of one
    # process has none: nothing to wait for either way)
    workers: str = "replaced"

    def __post_init__(self) -> None:
        if self.action not in ACTIONS:
            raise ValueError(f"action {self.action!r} is not one of {', '.join(ACTIONS)}")


@dataclass
class Performed:
    """One action performed on a running server, as verified."""

    action: str
    # time.time() when the signal was sent or the command started (a configuration test first,
    # for a server whose documented means tests it: apache2 -k graceful, lighttpd -tt, h2o -t)
    at: float
    # From the signal to the old workers gone (and the logs reopened, for reopen-logs) and the
    # server answering again; None when that was not seen within the bound.
    took_s: Optional[float]
    master: str  # "kept" | "replaced", as observed
    ok: bool
    problem: Optional[str]  # one line, the server's own words when it has any
    workers_replaced: int  # workers there before the action that had gone at its end
    certificate_renewed: bool  # a new certificate asked for, and served after the action


# Every server can be stopped and started again on its port from the same configuration: the
# suite does it itself (httpbench.servers.operate), as an init system's restart does.
RESTART = Operation(
    "restart",
    "SIGTERM to the master, then the same command again on the same port",
    "replaced",
    "the server's stop signal (as the suite stops every server), then its start",
)


def command_refusal(command: Sequence[str], environment: Optional[Dict[str, str]] = None) -> Optional[str]:
    """Run an operator's command (a configuration test, a reload through a control program) in
    the server's `environment`; None when it succeeded, else its own last words, one line."""
    try:
        env = {**os.environ, **(environment or {})}
        done = subprocess.run(list(command), capture_output=True, text=True, timeout=10, env=env)
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"{command[0]} failed: {e}"
    if done.returncode == 0:
        return None
    said = done.stderr + done.stdout
    return chosen(said) if said.strip() else f"{command[0]} exited with code {done.returncode}"
