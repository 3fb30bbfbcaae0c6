"""The servers under test: one adapter per server behind `Server` (base.py), started and stopped
by `process.py`, verified by `verify.py`; `registry.py` names them all (`ADAPTERS`) and which run PHP.
"""

from __future__ import annotations

from httpbench.servers.base import (
    PROFILES,
    TLS_VERSIONS,
    Config,
    EncodingUnsupported,
    PHPUnsupported,
    ProtocolUnsupported,
    Server,
    ServerProfile,
    Site,
    SiteTLS,
    TLSUnsupported,
)
from httpbench.servers.process import RunningServer, ServerFailed, free_port, start
from httpbench.servers.registry import ADAPTERS, UnknownServer, get, names, php_refusal
from httpbench.servers.verify import VerificationFailed, verify

__all__ = [
    "ADAPTERS",
    "PROFILES",
    "EncodingUnsupported",
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
    "php_refusal",
    "start",
    "verify",
]
