"""The servers the bench measures against, through the package's adapters on a ServerHost: a
private temp dir, the whole process tree pinned, verified before any load, one monitor window
per client run, and stopped (with everything it started) by the package's process handling."""

from __future__ import annotations

from pathlib import Path
from typing import Sequence, Tuple

from httpbench import servers
from httpbench.plan import workload
from httpbench.plan.protocol import TlsSettings
from httpbench.servers import ServerProfile
from httpbench.servers.host import ServerHost

WORKLOAD = workload.generated(7)  # a 7-byte index.html
NGINX_CONF = Path(__file__).with_name("nginx.conf")
# The key issue 14's figures were measured with; the adapters make the certificate and its CA.
TLS_KEY = "ecdsa-p256"
# nginx's server block over https: the suite's certificate, TLS 1.3 only (as issue 14's figures),
# tickets on (nginx's default, said): the resumed scenario resumes with them, stateless, so the
# one worker needs no session cache. {cert} and {key} are the adapter's to fill in.
TLS_LINES = """        ssl_certificate {cert};
        ssl_certificate_key {key};
        ssl_protocols TLSv1.3;
        ssl_session_tickets on;
"""


def profile(name: str, https: bool, http2: bool, workdir: str) -> ServerProfile:
    """nginx runs the bench's own configuration (nginx.conf says why), written into `workdir`
    for http or https, with HTTP/2 on its listen line if `http2`; h2o and the reference server
    their tuned profiles (one thread per server CPU, no access log)."""
    if name != "nginx":
        return ServerProfile("tuned")
    conf = Path(workdir) / f"nginx-{'https' if https else 'http'}{'-h2' if http2 else ''}.conf"
    listen = (" ssl" if https else "") + (" http2" if http2 else "")
    template = NGINX_CONF.read_text()
    conf.write_text(template.replace("{ssl}", listen).replace("{tls}", TLS_LINES if https else ""))
    return ServerProfile("tuned", config_file=conf)


def start(name: str, cpus: Sequence[int], https: bool, workdir: str, http2: bool = False) -> Tuple[ServerHost, str]:
    """Start, verify and watch server `name` pinned to `cpus`, over https with a certificate of
    its own when `https`, offering HTTP/2 (h2 by ALPN, or h2c) when `http2`; the host and the URL
    to load. Raises ServerFailed or VerificationFailed with the server's own words."""
    host = ServerHost(cpus)
    try:
        tls = TlsSettings(key=TLS_KEY) if https else None
        started = host.start(servers.get(name), profile(name, https, http2, workdir), WORKLOAD, len(cpus), tls, http2)
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
