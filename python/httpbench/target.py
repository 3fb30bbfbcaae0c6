"""What the load is pointed at: a started server's URL and, over TLS, how the engine speaks to it.

A TLS cell's server presents a certificate made for it by an authority of its own; the engine
verifies it against that authority (as a browser would against its roots), so a cell never
measures a server the client could not trust, and the report says it was verified.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Optional, Tuple

from httpbench.protocol import HANDSHAKES, uses_tls
from httpbench.servers.host import Started

# How the load connects, as far as the client's ceiling goes: (protocol, keep-alive, resumption).
# Each kind has a ceiling of its own: a client that opens a connection (and makes a handshake) per
# request is bounded by those, far below what it reaches over kept-alive connections, so a
# keep-alive ceiling would never call a cell without keep-alive client-bound.
Kind = Tuple[str, bool, Optional[str]]


def kind(protocol: str, keep_alive: bool, resumption: Optional[str]) -> Kind:
    return (protocol, keep_alive, resumption if uses_tls(protocol) else None)


def describe(of: Kind) -> str:
    protocol, keep_alive, resumption = of
    over = f" over {protocol.upper()}" if uses_tls(protocol) else ""
    if keep_alive:
        return over
    handshakes = f", {HANDSHAKES[resumption or 'none']}" if uses_tls(protocol) else ""
    return f"{over} without keep-alive{handshakes}"


@dataclass(frozen=True)
class Target:
    url: str
    # The engine spec's `tls`: the authority to verify against, the version to offer, and how
    # handshakes after a connection's first are made. None over plain HTTP.
    tls: Optional[dict] = None


def of(started: Started, protocol: str, version: Optional[str], resumption: Optional[str], ca: Path) -> Target:
    """The target of `started`; over TLS, its authority is written to `ca` for the engine.
    Without keep-alive `resumption` says how handshakes are made; with keep-alive (None) each
    connection makes one full handshake, as wrk's and h2load's do."""
    if not uses_tls(protocol):
        return Target(started.url)
    ca.write_text(started.ca)
    return Target(started.url, {"cacert": str(ca), "version": version, "resumption": resumption or "none"})
