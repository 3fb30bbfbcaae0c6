"""The protocol a cell is measured over, and its TLS settings.

Cleartext HTTP/1.1 is what the write-ups measured; HTTPS is what their readers asked for ("the
impact of SSL on each of these servers", 2016). The axis is a list of names so that HTTP/2 (h2
over TLS, h2c in cleartext) and HTTP/3 join it as names, not as new plan keys.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Tuple

from httpbench.certificates import KEY_TYPES
from httpbench.servers.base import TLS_VERSIONS

# "h2" is HTTP/2 over TLS, agreed by ALPN; "h2c" is HTTP/2 in cleartext, by prior knowledge.
PROTOCOLS = ("http", "https", "h2", "h2c")
# How a connection after the first makes its handshake: in full, or resumed from a TLS 1.3
# ticket or a TLS 1.2 session ID. Resumed handshakes cost servers 5-10x less than full ones,
# which is what a cell without keep-alive mostly measures.
RESUMPTIONS = ("none", "tickets", "ids")
# The content codings a plan's accept_encoding may ask, one cell each: what verification decodes
# (identity asks for no coding, and a server that compresses all the same fails verification).
ENCODINGS = ("identity", "gzip", "br")
# A TLS cell without keep-alive, by the handshakes its connections make, in words.
HANDSHAKES = {"none": "full handshakes", "tickets": "resumed by tickets", "ids": "resumed by session IDs"}


def warms_connections(keep_alive: bool, resumption: Optional[str]) -> bool:
    """Whether a level's load opens its connections before its measured window (the engine's
    `warmup_connections`): with keep-alive a level measures requests, not connects and TLS
    handshakes; a cell resumed by tickets or IDs measures resumed handshakes, not the full ones
    that give its connections their first sessions. Otherwise a connection per request is what
    is measured, its setup included."""
    return keep_alive or resumption not in (None, "none")


def uses_tls(protocol: str) -> bool:
    return protocol in ("https", "h2")


def is_http2(protocol: str) -> bool:
    """Whether `protocol`'s connections carry many streams at once (the plan's `streams`)."""
    return protocol in ("h2", "h2c")


def http1_twin(protocol: str) -> str:
    """The HTTP/1.1 protocol an HTTP/2 one is set against: "https" for h2, "http" for h2c."""
    return {"h2": "https", "h2c": "http"}.get(protocol, protocol)


def scheme(protocol: str) -> str:
    return "https" if uses_tls(protocol) else "http"


@dataclass(frozen=True)
class TlsSettings:
    """A plan's `[tls]` table, for its TLS cells."""

    # None: whatever the server and the client negotiate (TLS 1.3 with every server here).
    version: Optional[str] = None
    key: str = "ecdsa-p256"
    # One cell per value for TLS cells without keep-alive (with keep-alive, each connection
    # makes one handshake, and resumption changes nothing worth a cell).
    resumption: Tuple[str, ...] = ("none",)

    def __post_init__(self) -> None:
        if self.version not in (None, *TLS_VERSIONS):
            raise ValueError(f"unknown TLS version {self.version!r}")
        if self.key not in KEY_TYPES:
            raise ValueError(f"unknown key type {self.key!r}")
        if not self.resumption or any(r not in RESUMPTIONS for r in self.resumption):
            raise ValueError(f"unknown resumption in {self.resumption!r}")
