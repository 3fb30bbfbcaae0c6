"""The servers under test: one adapter per server behind `Server` (base.py), started and stopped
by `process.py`, verified by `verify.py`.

`ADAPTERS` maps each name a plan or the command line may use to its adapter class.
"""

from __future__ import annotations

import importlib
import pkgutil
from typing import Dict, List, Type

from httpbench.errors import Error
from httpbench.servers import adapters
from httpbench.servers.base import (
    PROFILES,
    TLS_VERSIONS,
    Config,
    PHPUnsupported,
    ProtocolUnsupported,
    Server,
    ServerProfile,
    Site,
    SiteTLS,
    TLSUnsupported,
)
from httpbench.servers.process import RunningServer, ServerFailed, free_port, start
from httpbench.servers.verify import VerificationFailed, verify


def _discover() -> Dict[str, Type[Server]]:
    found: Dict[str, Type[Server]] = {}
    for module in pkgutil.iter_modules(adapters.__path__):
        namespace = importlib.import_module(f"{adapters.__name__}.{module.name}")
        for value in vars(namespace).values():
            if isinstance(value, type) and issubclass(value, Server) and "name" in vars(value):
                found[value.name] = value
    return found


ADAPTERS: Dict[str, Type[Server]] = _discover()


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


__all__ = [
    "ADAPTERS",
    "PROFILES",
    "PHPUnsupported",
    "ProtocolUnsupported",
    "Config",
    "RunningServer",
    "Server",
    "ServerFailed",
    "ServerProfile",
    "Site",
    "SiteTLS",
    "TLS_VERSIONS",
    "TLSUnsupported",
    "UnknownServer",
    "VerificationFailed",
    "free_port",
    "get",
    "names",
    "start",
    "verify",
]
