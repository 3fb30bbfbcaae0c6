"""The client's ceiling: what the client itself can do for each kind of connection a sweep's cells
make (target.kind), measured at the start of a run against a server that should outrun it, so
that a level near it is known to be the client's, not the server's (honesty.client_saturated).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Dict, List, Optional

from httpbench import honesty, servers, target
from httpbench.plan import Cell
from httpbench.protocol import is_http2, uses_tls
from httpbench.servers import ServerProfile

if TYPE_CHECKING:
    from httpbench.sweep import Sweep

# The ceiling is the best of a few short measurements: other load on the machine can only
# lower it, so the best is the closest to what the client can do.
CEILING_ROUNDS = 3
CEILING_SECONDS = 1.0
# Over HTTP/2 the ceiling is measured against the first of these installed that offers it: the
# reference server once it does (it has no HTTP/2 yet), else the fastest servers over HTTP/1.1 on
# this kind of machine, nghttpd as nghttp2's own. On its one CPU such a server may well be slower
# than the client, so its ceiling counts only when the client was the limit of its run.
H2_CEILING_SERVERS = ("reference", "h2o", "nginx", "nghttpd")


# Here rather than in the sweep, which raises it too, because the sweep imports this module: the
# ceiling is the first thing a run measures, so the first that may stop it. `httpbench.sweep`
# exports it as its own.
class Stopped(Exception):
    """The run stopped before its end, its measured rounds all stored: a client host was lost
    under --on-client-loss stop, none is left, or the scheduler was lost. `httpbench run
    --resume` goes on from there."""


def kind_of(cell: Cell) -> target.Kind:
    """The kind of connection `cell` makes, which has a ceiling of its own."""
    return target.kind(cell.protocol, cell.keep_alive, cell.resumption, cell.streams)


class ClientCeiling:
    """A sweep's client ceilings, by kind of connection, measured with the sweep's own servers,
    loads and specs at `connections` connections."""

    def __init__(self, sweep: "Sweep", connections: int) -> None:
        self.sweep = sweep
        self.connections = connections
        # The client's ceiling for each kind of connection measured (None: it has none).
        self.rps: Dict[target.Kind, Optional[float]] = {}
        # The server each ceiling was measured against, for the flags that cite it.
        self.against: Dict[target.Kind, str] = {}

    def measure(self, kind: target.Kind) -> Optional[float]:
        """The clients' throughput against the reference server (on the server's host) for this
        `kind` of connection: no server measured here can be told apart from the client above it.
        Over HTTP/2 it is measured against the first of H2_CEILING_SERVERS that can serve it (None
        when none is installed), and is the client's only if the client was the limit of its best
        round: else it is that server's capacity, and there is no ceiling (None).
        On a cluster it is the throughput of the client hosts that go on to load the run: a host
        lost meanwhile starts the measurement again without it (or stops the run, under
        --on-client-loss stop)."""
        protocol, keep_alive, resumption, streams = kind
        against = self.server(protocol)
        if against is None:
            return None
        host = self.sweep.server_host()
        # A PHP workload's pages as plain files: the client's ceiling is for answers of that size,
        # and the reference server runs no PHP.
        workload = self.sweep.plan.workloads[0].as_files()
        try:
            tls = self.sweep.plan.tls if uses_tls(protocol) else None
            started = host.start(
                servers.get(against), ServerProfile("tuned"), workload, 1, tls, http2=is_http2(protocol)
            )
            to = self.sweep.target_of(started, protocol, resumption, "ceiling")
            spec = self.sweep.spec(to, workload, self.connections, {"duration": CEILING_SECONDS}, keep_alive, streams)
            rounds: List[dict] = []
            while len(rounds) < CEILING_ROUNDS:
                measurement = self.sweep.load(spec)
                lost = self.sweep.lost_hosts(measurement)
                if lost and self.sweep.on_client_loss == "stop":
                    raise Stopped(
                        f"client host(s) {', '.join(lost)} lost while measuring the client ceiling "
                        "(--on-client-loss stop)"
                    )
                if lost:
                    self.sweep.progress.on_note(
                        f"client host(s) {', '.join(lost)} lost while measuring the client "
                        "ceiling: measuring it again without them"
                    )
                    rounds = []
                else:
                    rounds.append(measurement)
        finally:
            host.stop()
        best = max(rounds, key=lambda m: m["requests"]["per_second"] or 0.0)
        ceiling = best["requests"]["per_second"] or 0.0
        if against != "reference" and not self._client_set_pace(best):
            self.sweep.progress.on_note(
                f"no client ceiling{target.describe(kind)}: {against}, the fastest HTTP/2 server here, was the "
                f"limit of its own ceiling run ({ceiling:,.0f} req/s; the client's busiest thread "
                f"{honesty.busiest_share(best) or 0.0:.1%} busy or waiting for its CPU), so the client is judged "
                "by its own figures"
            )
            return None
        self.rps[kind], self.against[kind] = ceiling, against
        self.sweep.progress.on_note(
            f"client ceiling (engine against {'the reference server' if against == 'reference' else against}"
            f"{target.describe(kind)}): {ceiling:,.0f} req/s"
        )
        return ceiling

    def _client_set_pace(self, measurement: dict) -> bool:
        """Whether the client was the limit of one load by its own figures (on a cluster, a client
        host's): only then is its throughput against a server other than the reference the
        client's ceiling, not that server's capacity."""
        if self.sweep.cluster:
            return any(honesty.client_host_saturated(part["host"], part["report"]) for part in measurement["hosts"])
        return honesty.client_saturated([measurement], None, len(self.sweep.placement.client)) is not None

    def server(self, protocol: str) -> Optional[str]:
        """The server a ceiling over `protocol` is measured against; None when none is installed."""
        candidates = ("reference",) if not is_http2(protocol) else H2_CEILING_SERVERS
        return next(
            (
                name
                for name in candidates
                if name in servers.names() and name in self.sweep.installed and not self.sweep.refusal(name, protocol)
            ),
            None,
        )
