"""What the load is pointed at: a started server's URL and, over TLS, how the engine speaks to it.

A TLS cell's server presents a certificate made for it by an authority of its own; the engine
verifies it against that authority (as a browser would against its roots), so a cell never
measures a server the client could not trust, and the report says it was verified.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Dict, Optional, Tuple

from httpbench.plan.protocol import HANDSHAKES, is_http2, uses_tls
from httpbench.servers.host import Started

# How the load connects, as far as the client's ceiling goes: (protocol, keep-alive, resumption,
# streams). Each kind has a ceiling of its own: a client that opens a connection (and makes a
# handshake) per request is bounded by those, far below what it reaches over kept-alive
# connections, so a keep-alive ceiling would never call a cell without keep-alive client-bound;
# an HTTP/2 connection with 100 streams costs its client less per request than one with 1.
Kind = Tuple[str, bool, Optional[str], int]


def kind(protocol: str, keep_alive: bool, resumption: Optional[str], streams: int = 1) -> Kind:
    return (protocol, keep_alive, resumption if uses_tls(protocol) else None, streams if is_http2(protocol) else 1)


def describe(of: Kind) -> str:
    protocol, keep_alive, resumption, streams = of
    over = f" over {protocol.upper()}" if uses_tls(protocol) or is_http2(protocol) else ""
    if is_http2(protocol):
        over += f" with {streams} stream{'s' if streams > 1 else ''} per connection"
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
    http2: bool = False  # h2 by ALPN over TLS, h2c by prior knowledge without
    # The content coding every request asks (Accept-Encoding); None: no such header.
    encoding: Optional[str] = None
    # With `encoding`, what verification learned each URL path answers (servers.verify.Learned:
    # its coding and length on the wire), by path without its "/": every answer is checked on it.
    answers: Optional[Dict[str, Tuple[str, int]]] = None


def of(started: Started, protocol: str, version: Optional[str], resumption: Optional[str], ca: Path) -> Target:
    """The target of `started`; over TLS, its authority is written to `ca` for the engine.
    Without keep-alive `resumption` says how handshakes are made; with keep-alive (None) each
    connection makes one full handshake, as wrk's and h2load's do."""
    if not uses_tls(protocol):
        return Target(started.url, http2=is_http2(protocol))
    ca.write_text(started.ca)
    tls = {"cacert": str(ca), "version": version, "resumption": resumption or "none"}
    return Target(started.url, tls, is_http2(protocol))
