"""The suite's own static server (crates/reference), shipped inside the package: the target when
nothing else is installed, and the client's ceiling (whatever it does per core bounds what the
client can measure on the same machine)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import List, Optional

from httpbench import __version__
from httpbench.servers.base import Config, Server, ServerProfile, Site


class Reference(Server):
    name = "reference"
    summary = "httpbench's own server: files in memory, one pinned epoll loop per core"
    packages = ()
    program = sys.executable
    speaks_tls = True  # rustls, so the client's ceiling can be measured over TLS too
    # No HTTP/2 (speaks_h2 stays False): it serves HTTP/1.1 only, so over h2 the client's ceiling
    # is measured against another server, and a site offering h2 is refused in one line.

    def installed(self) -> bool:
        return True

    def install_command(self) -> str:
        return "nothing to install: it ships with httpbench"

    def version(self) -> Optional[str]:
        return f"httpbench-reference {__version__}"

    def render(self, site: Site, profile: ServerProfile) -> Config:
        # Both profiles are the same server: it has nothing to tune, and its own default is one
        # event loop per CPU it may run on, which is what tuned asks for.
        return Config(
            {
                "reference.conf": f"""# rendered by httpbench for profile {profile.name}
# httpbench-reference {__version__}: every file under root read into memory at start, responses
# prebuilt (Content-Type, Content-Length, Connection; no Date, no compression), HTTP/1.1
# keep-alive and pipelining, one epoll loop per thread on its own SO_REUSEPORT listener.
root = {site.docroot}
host = {site.host}
port = {site.port}
threads = {site.workers}    # one per CPU given, each loop pinned to one
{_tls(site)}"""
            }
        )

    def command(self, site: Site, config_dir: Path) -> List[str]:
        return [
            sys.executable,
            "-m",
            "httpbench.servers.reference_main",
            "--root",
            str(site.docroot),
            "--host",
            site.host,
            "--port",
            str(site.port),
            "--threads",
            str(site.workers),
            *(["--tls-cert", str(site.tls.cert), "--tls-key", str(site.tls.key)] if site.tls else []),
            *(["--tls-version", site.tls.version] if site.tls and site.tls.version else []),
        ]


def _tls(site: Site) -> str:
    if site.tls is None:
        return ""
    versions = f"TLS {site.tls.version} only, as pinned" if site.tls.version else "TLS 1.3 and 1.2"
    return f"""tls_cert = {site.tls.cert}    # HTTPS by rustls, {versions}, with its defaults
tls_key = {site.tls.key}
"""
