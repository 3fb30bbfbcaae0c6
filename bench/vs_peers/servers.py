"""The servers the bench measures against, through the package's adapters on a ServerHost: a
private temp dir, the whole process tree pinned, verified before any load, one monitor window
per client run, and stopped (with everything it started) by the package's process handling."""

from __future__ import annotations

from pathlib import Path
from typing import Sequence, Tuple

from httpbench import servers, workload
from httpbench.servers import ServerProfile
from httpbench.servers.host import ServerHost

WORKLOAD = workload.generated(7)  # a 7-byte index.html
NGINX_CONF = Path(__file__).with_name("nginx.conf")


def profile(name: str) -> ServerProfile:
    """nginx runs the bench's own configuration (nginx.conf says why); h2o and the reference
    server their tuned profiles (one thread per server CPU, no access log)."""
    return ServerProfile("tuned", config_file=NGINX_CONF if name == "nginx" else None)


def start(name: str, cpus: Sequence[int]) -> Tuple[ServerHost, str]:
    """Start, verify and watch server `name` pinned to `cpus`; the host and the URL to load.
    Raises ServerFailed or VerificationFailed with the server's own words."""
    host = ServerHost(cpus)
    try:
        started = host.start(servers.get(name), profile(name), WORKLOAD, len(cpus))
        host.verify()
        host.watch()
    except BaseException:
        host.stop()
        raise
    return host, started.url + WORKLOAD.paths[0].lstrip("/")


def installed(name: str) -> bool:
    return servers.get(name).installed()


def install_hint(name: str) -> str:
    return servers.get(name).install_command()


def version(name: str) -> str:
    return servers.get(name).version() or "missing"
