"""A plan's protocols, its [tls] table and its `streams` axis checked (plan.parse's part for
httpbench.plan.protocol), each mistake one line as every other value's (httpbench.plan.values)."""

from __future__ import annotations

from typing import Any, Dict, Optional, Tuple

from httpbench.certificates import KEY_TYPES
from httpbench.plan.protocol import ENCODINGS, PROTOCOLS, RESUMPTIONS, TLS_VERSIONS, TlsSettings, is_http2, uses_tls
from httpbench.plan.values import ValueChecks

TLS_KEYS = ("version", "key", "resumption")


class ProtocolChecks(ValueChecks):
    """The protocol axis and what it allows with the rest of the plan."""

    def protocols(self, data: Dict[str, Any]) -> Tuple[str, ...]:
        return self.array(data.get("protocols", ["http"]), ("protocols",), lambda v, p: self.string(v, p, PROTOCOLS))

    def keep_alive(self, data: Dict[str, Any], protocols: Tuple[str, ...]) -> Dict[str, Tuple[bool, ...]]:
        """keep_alive by protocol: one list for every protocol (`keep_alive = [true, false]`), or a
        table of lists by protocol (`keep_alive = { http = [true, false], https = [true] }`), which
        spares a plan the crossings it does not want (HTTPS without keep-alive, say)."""
        raw = data.get("keep_alive", [True])
        if not isinstance(raw, dict):
            both = self.array(raw, ("keep_alive",), self.boolean)
            return {protocol: both for protocol in protocols}
        for protocol in raw:
            if protocol not in protocols:
                self.fail(
                    ("keep_alive", protocol),
                    f"keep_alive.{protocol}: {protocol} is not one of the plan's protocols ({', '.join(protocols)})",
                )
        missing = [p for p in protocols if p not in raw]
        if missing:
            self.fail(("keep_alive",), f"keep_alive has no list for {missing[0]}: add {missing[0]} = [true]")
        return {p: self.array(raw[p], ("keep_alive", p), self.boolean) for p in protocols}

    def streams(
        self, data: Dict[str, Any], protocols: Tuple[str, ...], keep_alive: Dict[str, Tuple[bool, ...]], pipeline: int
    ) -> Tuple[int, ...]:
        """The `streams` axis, and what HTTP/2 cells allow: many streams replace pipelining, and a
        connection that carries them is kept open."""
        streams = self.array(
            data.get("streams", [1]), ("streams",), lambda v, p: self.integer(v, p, 1), allow_scalar=True
        )
        http2 = [p for p in protocols if is_http2(p)]
        if max(streams) > 1 and not http2:
            self.fail(
                ("streams",),
                f'streams = {max(streams)} needs an HTTP/2 protocol: add "h2" or "h2c" to protocols, or remove streams',
            )
        if http2 and pipeline > 1:
            self.fail(
                ("pipeline",),
                f'pipeline = {pipeline} cannot be used with protocols = "{http2[0]}": HTTP/2 sends requests '
                "side by side on streams; give streams instead",
            )
        if any(False in keep_alive[p] for p in http2):
            self.fail(
                ("keep_alive",),
                f'keep_alive = false cannot be used with protocols = "{http2[0]}": an HTTP/2 connection '
                "carries many requests; measure keep_alive = false in a plan without h2 or h2c",
            )
        return streams

    def encodings(self, data: Dict[str, Any], client: str) -> Tuple[Optional[str], ...]:
        """The accept_encoding axis: the codings asked, a cell each; (None,) without the key."""
        if "accept_encoding" not in data:
            return (None,)
        path = ("accept_encoding",)
        encodings = self.array(
            data["accept_encoding"], path, lambda v, p: self.string(v, p, ENCODINGS), allow_scalar=True
        )
        if client != "engine":
            self.fail(
                path,
                f'accept_encoding cannot be used with client = "{client}": only the engine checks each '
                "answer's coding and counts the codings sent; use the engine",
            )
        return encodings

    def tls(self, table: Any, protocols: Tuple[str, ...], client: str) -> TlsSettings:
        """The [tls] table, for the plan's TLS cells."""
        self.keys(table, TLS_KEYS, ("tls",))
        if table and not any(uses_tls(p) for p in protocols):
            self.fail(("tls",), '[tls] applies to TLS cells only: add "https" or "h2" to protocols, or remove [tls]')
        special = [p for p in protocols if uses_tls(p) or is_http2(p)]
        if client != "engine" and special:
            self.fail(
                ("protocols",),
                f'protocols = "{special[0]}" needs client = "engine": {client} cells over {special[0]} are not made',
            )
        version = table.get("version")
        if version is not None:
            version = self.string(version, ("tls", "version"), TLS_VERSIONS)
        key = self.string(table.get("key", "ecdsa-p256"), ("tls", "key"), KEY_TYPES)
        resumption = self.array(
            table.get("resumption", ["none"]),
            ("tls", "resumption"),
            lambda v, p: self.string(v, p, RESUMPTIONS),
            allow_scalar=True,
        )
        if "ids" in resumption and version != "1.2":
            self.fail(
                ("tls", "resumption"),
                'tls.resumption = "ids" needs tls.version = "1.2": TLS 1.3 resumes with tickets only',
            )
        return TlsSettings(version, key, resumption)
