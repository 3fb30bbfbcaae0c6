"""The client's ceiling: what the client itself can do for each kind of connection a sweep's cells
make (target.kind), measured at the start of a run against a server that should outrun it, so
that a level near it is known to be the client's, not the server's (honesty.client_saturated).
The sweep runs the rounds; the ceiling picks their server and keeps the best of them.
"""

from __future__ import annotations

from typing import Callable, Dict, Optional, Sequence

from httpbench import servers
from httpbench.judge import honesty
from httpbench.plan.model import Cell
from httpbench.plan.protocol import is_http2
from httpbench.sweep import target

# The ceiling is the best of a few short measurements: other load on the machine can only
# lower it, so the best is the closest to what the client can do.
CEILING_ROUNDS = 3
CEILING_SECONDS = 1.0
# Over HTTP/2 the ceiling is measured against the first of these installed that offers it: the
# reference server once it does (it has no HTTP/2 yet), else the fastest servers over HTTP/1.1 on
# this kind of machine, nghttpd as nghttp2's own. On its one CPU such a server may well be slower
# than the client, so its ceiling counts only when the client was the limit of its run.
H2_CEILING_SERVERS = ("reference", "h2o", "nginx", "nghttpd")


def kind_of(cell: Cell) -> target.Kind:
    """The kind of connection `cell` makes, which has a ceiling of its own."""
    return target.kind(cell.protocol, cell.keep_alive, cell.resumption, cell.streams)


class ClientCeiling:
    """A sweep's client ceilings, by kind of connection: the server each is measured against, and
    the best of the rounds the sweep ran there (`take`)."""

    def __init__(self) -> None:
        # The client's ceiling for each kind of connection measured (None: it has none).
        self.rps: Dict[target.Kind, Optional[float]] = {}
        # The server each ceiling was measured against, for the flags that cite it.
        self.against: Dict[target.Kind, str] = {}

    @staticmethod
    def server(protocol: str, usable: Callable[[str], bool]) -> Optional[str]:
        """The server a ceiling over `protocol` is measured against, of those `usable` (installed
        where the servers run, and able to serve `protocol` as the plan asks); None when none is.
        No server measured here can be told apart from the client above the reference server;
        it has no HTTP/2, so over HTTP/2 the first of H2_CEILING_SERVERS stands in."""
        candidates = ("reference",) if not is_http2(protocol) else H2_CEILING_SERVERS
        return next((name for name in candidates if name in servers.names() and usable(name)), None)

    def take(self, kind: target.Kind, against: str, rounds: Sequence[dict], cluster: bool, client_cpus: int) -> str:
        """Keeps the best of `rounds` (measured against `against`) as the client's ceiling for
        `kind`, and says what was kept. Against a server other than the reference it is the
        client's only if the client was the limit of that round: else it is that server's
        capacity, and there is no ceiling. `cluster`: the rounds' loads came from client hosts;
        `client_cpus`: else the CPUs the client had."""
        best = max(rounds, key=lambda m: m["requests"]["per_second"] or 0.0)
        ceiling = best["requests"]["per_second"] or 0.0
        if against != "reference" and not _client_set_pace(best, cluster, client_cpus):
            return (
                f"no client ceiling{target.describe(kind)}: {against}, the fastest HTTP/2 server here, was the "
                f"limit of its own ceiling run ({ceiling:,.0f} req/s; the client's busiest thread "
                f"{honesty.busiest_share(best) or 0.0:.1%} busy or waiting for its CPU), so the client is judged "
                "by its own figures"
            )
        self.rps[kind], self.against[kind] = ceiling, against
        return (
            f"client ceiling (engine against {'the reference server' if against == 'reference' else against}"
            f"{target.describe(kind)}): {ceiling:,.0f} req/s"
        )


def _client_set_pace(measurement: dict, cluster: bool, client_cpus: int) -> bool:
    """Whether the client was the limit of one load by its own figures (on a cluster, a client
    host's)."""
    if cluster:
        return any(honesty.client_host_saturated(part["host"], part["report"]) for part in measurement["hosts"])
    return honesty.client_saturated([measurement], None, client_cpus) is not None
