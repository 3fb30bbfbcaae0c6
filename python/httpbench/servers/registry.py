"""Which servers the suite knows: every adapter by the name a plan or the command line uses, and
which of them can run PHP."""

from __future__ import annotations

from typing import Dict, List, Optional, Type

from httpbench.errors import Error
from httpbench.servers.adapters.apache2 import ApacheEvent, ApachePrefork, ApacheWorker
from httpbench.servers.adapters.caddy import Caddy
from httpbench.servers.adapters.h2o import H2o
from httpbench.servers.adapters.jetty9 import Jetty9
from httpbench.servers.adapters.lighttpd import Lighttpd
from httpbench.servers.adapters.mighttpd2 import Mighttpd2
from httpbench.servers.adapters.nghttpd import Nghttpd
from httpbench.servers.adapters.nginx import Nginx
from httpbench.servers.adapters.node import Node
from httpbench.servers.adapters.reference import Reference
from httpbench.servers.adapters.trafficserver import TrafficServer
from httpbench.servers.adapters.varnish import Varnish
from httpbench.servers.base import Server

ADAPTERS: Dict[str, Type[Server]] = {
    adapter.name: adapter
    for adapter in (
        ApachePrefork,
        ApacheWorker,
        ApacheEvent,
        Caddy,
        H2o,
        Jetty9,
        Lighttpd,
        Mighttpd2,
        Nghttpd,
        Nginx,
        Node,
        Reference,
        TrafficServer,
        Varnish,
    )
}


class UnknownServer(Error):
    pass


def get(name: str) -> Server:
    """The adapter called `name`; an unknown name lists the known ones."""
    try:
        return ADAPTERS[name]()
    except KeyError:
        raise UnknownServer(f"unknown server {name!r}; known servers: {', '.join(names())}") from None


def names() -> List[str]:
    return sorted(ADAPTERS)


def php_refusal(server: Server) -> Optional[str]:
    """None when `server` can run PHP here, else one line saying why not and what to do: the
    servers that can, or the command that installs the PHP it runs."""
    refusal = server.php_refusal()
    # A plan's own command server says what its command lacks; a built-in one names the others.
    if refusal is not None and server.runs_php is None and type(server) in ADAPTERS.values():
        able = sorted(name for name, adapter in ADAPTERS.items() if adapter.runs_php)
        return f"{refusal}; choose a server that can: {', '.join(able)}"
    return refusal
