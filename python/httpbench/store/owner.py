"""A run's owner: the process measuring it, recorded with the run, so that a run whose process
died without a word is seen as interrupted."""

from __future__ import annotations

import os
import socket
from typing import Optional

from httpbench.observe import procfs


def of_this_process() -> dict:
    """This process, as a run's owner."""
    me = procfs.stat(os.getpid())
    return {
        "owner_host": socket.gethostname(),
        "owner_pid": me.pid,
        "owner_started": me.started,
        "owner_boot": procfs.boot_id(),
    }


def owner_alive(run: dict) -> Optional[bool]:
    """Whether the process that owns `run` still runs: None when that cannot be told here (no
    owner stored, or not its boot: a store of before schema version 3; or it ran on another host)."""
    if run["owner_boot"] is None or run["owner_host"] != socket.gethostname():
        return None
    if run["owner_boot"] != procfs.boot_id():
        return False  # the host booted since: every process it ran then is gone
    process = procfs.stat(run["owner_pid"])
    return process is not None and not process.zombie and process.started == run["owner_started"]


def as_seen(run: dict) -> dict:
    """A stored run with the status it has: one still "running" whose process is gone (killed, or
    its host rebooted) was interrupted, whatever it could not write."""
    if run["status"] == "running" and owner_alive(run) is False:
        return {**run, "status": "interrupted"}
    return run
