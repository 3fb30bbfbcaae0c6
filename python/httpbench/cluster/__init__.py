"""Load from several client hosts, on Dask distributed.

Every host runs a Dask worker started by `httpbench worker` with its role as a Dask resource
(`client` or `server`); a scheduler runs anywhere (`httpbench cluster scheduler`): `daemons`.
Workers run whatever the scheduler sends them, so the cluster is TLS with mutual authentication
(a CA made by `httpbench cluster certs`: `certs`) whenever any address is not loopback; plain TCP
is accepted on loopback only (`security`).

A level is split over the client workers (connections, rate and request budget divided as evenly
as whole numbers allow, by the engine); every engine waits at a barrier and starts when all are
ready, and each returns its report with its HdrHistograms, which the engine's merge adds exactly
(`controller`). Each host's engine runs in a process of its own, so that a failed or abandoned
level can stop it (`client_host`). The server host's ServerHost is a Dask actor (`server_host`).
"""

from httpbench.cluster.certs import CERT_NAMES, make_certs
from httpbench.cluster.controller import ClusterLoad, merge_hosts
from httpbench.cluster.daemons import ROLES, run_scheduler, run_worker
from httpbench.cluster.errors import ClusterDown, ClusterError, NoClientHost, SchedulerLost, ServerHostLost
from httpbench.cluster.security import check_address

__all__ = [
    "CERT_NAMES",
    "ROLES",
    "ClusterDown",
    "ClusterError",
    "ClusterLoad",
    "NoClientHost",
    "SchedulerLost",
    "ServerHostLost",
    "check_address",
    "make_certs",
    "merge_hosts",
    "run_scheduler",
    "run_worker",
]
