"""Where every server process is forked from: one thread that lives as long as the suite.

A server is started with a parent-death signal (prctl PR_SET_PDEATHSIG), so that the kernel kills
it if the suite dies first. That signal follows the *thread* that forked it, not the process
(prctl(2)): a server restarted from a thread that then ended (a level's events are performed from a
thread of their own, a cluster's server host from its actor's pool) was killed with that thread,
in the middle of the level. So every fork happens here, whatever thread asks for it.
"""

from __future__ import annotations

import queue
import threading
from concurrent.futures import Future
from typing import Callable, Optional, TypeVar

T = TypeVar("T")

_asked: "queue.SimpleQueue" = queue.SimpleQueue()
_thread: Optional[threading.Thread] = None
_starting = threading.Lock()


def launch(fork: Callable[[], T]) -> T:
    """`fork()`'s result, `fork` run on the launcher thread; what it raises is raised here."""
    global _thread
    with _starting:
        if _thread is None:
            # A daemon: it ends with the process, after the suite's exit handlers stopped its servers.
            _thread = threading.Thread(target=_serve, name="httpbench-launcher", daemon=True)
            _thread.start()
    done: Future = Future()
    _asked.put((fork, done))
    return done.result()


def _serve() -> None:
    while True:
        fork, done = _asked.get()
        try:
            done.set_result(fork())
        except BaseException as e:  # handed to the asking thread, which raises it
            done.set_exception(e)
