"""The server host of a cluster: the sweep's ServerHost, living on the server-role worker as a Dask
actor, reached through a proxy with the same methods."""

from __future__ import annotations

from typing import Any, Callable, Dict

from httpbench.cluster.errors import SchedulerLost, ServerHostLost
from httpbench.servers.host import Started
from httpbench.servers.verify import Learned

# `answer(call, host)`: the result of `call()`'s future, a call to the server host `host`, or
# ServerHostLost/SchedulerLost when it cannot be had (ClusterLoad.answer).
Answer = Callable[[Callable[[], Any], str], Any]


class RemoteServerHost:
    """ServerHost's interface on its Dask actor: every call waited for, within a limit."""

    def __init__(self, actor, name: str, answer: Answer) -> None:
        self._actor = actor
        self._answer = answer
        self.name = name

    def _call(self, method: str, *args, **kwargs) -> Any:
        return self._answer(lambda: getattr(self._actor, method)(*args, **kwargs), self.name)

    def start(self, *args, **kwargs) -> Started:
        """ServerHost.start, with its arguments, on the server host."""
        return self._call("start", *args, **kwargs)

    def verify(self) -> Dict[str, Learned]:
        return self._call("verify")

    def watch(self) -> dict:
        return self._call("watch")

    def start_window(self) -> None:
        self._call("start_window")

    def end_window(self) -> dict:
        return self._call("end_window")

    def alive(self) -> bool:
        return self._call("alive")

    def perform(self, action: str, renew_certificate: bool = False) -> dict:
        """ServerHost.perform on the server host: an action on its server, verified."""
        return self._call("perform", action, renew_certificate)

    def stop(self) -> None:
        try:
            self._call("stop")
        except (ServerHostLost, SchedulerLost):
            # The server worker is gone (a lost scheduler takes it too), and its host's watchdog
            # has stopped its servers: nothing is left to stop.
            pass
