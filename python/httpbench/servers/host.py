"""The host a cell's server runs on: start the server there, verify it, watch it one monitor
window per round, stop it.

The sweep uses a ServerHost in its own process, or, with a cluster, the same class as a Dask actor
on the server-role worker, so the server is started, pinned, verified, watched and stopped on its
own host by the same code. The functions below answer, on that host, what a run checks and stores
about it: its CPUs, its installed servers, its facts and their versions.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

from httpbench.certificates import LOOPBACK_NAMES, Authority, make_site_certificate
from httpbench.load import engine
from httpbench.observe.monitor import Monitor
from httpbench.servers import operate
from httpbench.servers.base import Config, Server, ServerProfile, Site, SiteTLS
from httpbench.servers.process import RunningServer, free_port, start
from httpbench.servers.registry import php_refusal
from httpbench.servers.verify import Learned, verify


@dataclass(frozen=True)
class Started:
    url: str
    config_text: str
    version: str
    # Over HTTPS, the suite's authority (PEM text) that signed the server's certificate: what a
    # client, here or on another host, verifies the server against.
    ca: Optional[str] = None


# As the address of a ServerHost made as a Dask actor: listen where the worker itself is reached.
WORKER_ADDRESS = "worker"


class ServerHost:
    def __init__(self, cpus: Sequence[int], address: Optional[str] = None) -> None:
        """`cpus`: this host's CPUs for servers (a cell takes the first ones it needs);
        `address`: where servers listen: None for loopback, or WORKER_ADDRESS."""
        self.cpus = tuple(cpus)
        if address == WORKER_ADDRESS:
            from urllib.parse import urlsplit

            from distributed import get_worker

            address = urlsplit(get_worker().address).hostname
        self.address = address or "127.0.0.1"
        self.base: Optional[Path] = None
        self.running: Optional[RunningServer] = None
        self.monitor: Optional[Monitor] = None
        self.files: dict = {}
        self.name = ""
        # Over HTTPS, the authority that signed the server's certificate: a renewal's is signed
        # by it too, so clients that trust it go on trusting the server.
        self.authority: Optional[Authority] = None

    def start(
        self,
        adapter: Server,
        profile: ServerProfile,
        workload,
        cpus: int,
        tls=None,
        http2: bool = False,
        encoding: Optional[str] = None,
    ) -> Started:
        """Start `adapter` on a fresh document root and run directory; over HTTPS when `tls` (a
        plan's protocol.TlsSettings) is given, with a certificate of its key type made here for
        this host's address, pinned to its version if it has one; offering HTTP/2 when `http2`
        (by ALPN with `tls`, else h2c by prior knowledge); every request asking `encoding`
        ("gzip", "br", "identity"; None: no Accept-Encoding)."""
        self.stop()
        self.base = Path(tempfile.mkdtemp(prefix=f"httpbench-{adapter.name}-"))
        # A user's site is served where it is (read only, never copied); any other is written
        # into a document root of this cell's own.
        docroot = workload.root
        precompressed = workload.precompressed(encoding)
        if docroot is None:
            docroot = self.base / "www"
            docroot.mkdir()
            workload.write(docroot, precompressed)
        self.files, self.name = workload.file_map(), adapter.name
        site_tls = None
        if tls is not None:
            self.authority = Authority.new()
            site_tls = SiteTLS.of(self._certificate(tls.key), tls.version)
        site = Site(
            docroot=docroot,
            run_dir=self.base / "run",
            port=free_port(self.address),
            host=self.address,
            cpus=self.cpus[:cpus],
            tls=site_tls,
            http2=http2,
            php=workload.php,
            encoding=encoding,
            precompressed=precompressed,
        )
        self.running = start(adapter, site, profile)
        ca = site_tls.ca.read_text() if site_tls else None
        config, version = self.running.config, adapter.version() or ""
        pool = self.running.php
        if pool is not None:
            # What served the pages is the pair: both configurations stored, both versions named.
            config = Config({**config.files, **pool.config.files})
            version = f"{version} + {pool.server.version() or pool.server.name}"
        return Started(site.url, config.text, version, ca)

    def _certificate(self, key_type: str):
        """The server's certificate, for this host's addresses, in the cell's run directory."""
        names = tuple(dict.fromkeys((*LOOPBACK_NAMES, self.address)))
        return make_site_certificate(self.base / "tls", key_type, names, self.authority)

    def perform(self, action: str, renew_certificate: bool = False) -> dict:
        """Perform `action` (operations.ACTIONS) on the running server by its documented means and
        return once it is verified done, or its bound passed: operations.Performed as a dict. With
        `renew_certificate` (HTTPS), a new certificate is written at the same paths first, and
        the server must serve it after. The monitor, if watching, is told the span: what the
        action does to the server's processes is never a crash or a restart to flag."""
        tls = self.running.site.tls
        if renew_certificate and tls is None:
            raise ValueError("renew_certificate asks an HTTPS site; this one serves HTTP")
        renew = (lambda: self._certificate(tls.key_type)) if renew_certificate else None
        probe = next(iter(self.files.items()))
        done = operate.perform(self.running, action, probe, self.monitor, renew)
        return asdict(done)

    def break_config(self) -> None:
        """For tests only: a line the server cannot parse added to its configuration, so the next
        reload is refused (operate.break_config)."""
        operate.break_config(self.running)

    def verify(self) -> Dict[str, Learned]:
        """What each file came in (servers.verify.Learned), by URL path without its "/"."""
        return verify(self.running.site, self.files, self.name)

    def watch(self) -> dict:
        """Start watching the server's processes; returns its idle baseline window."""
        self.monitor = Monitor(self.running)
        return asdict(self.monitor.baseline())

    def start_window(self) -> None:
        self.monitor.start_window()

    def end_window(self) -> dict:
        return asdict(self.monitor.end_window())

    def alive(self) -> bool:
        """The server, and its PHP pool if it has one, without which it serves no page."""
        running = self.running
        return running is not None and running.alive() and (running.php is None or running.php.alive())

    def stop(self) -> None:
        """Stop what this host started, if anything; safe to call twice."""
        if self.monitor is not None:
            self.monitor.stop()
            self.monitor = None
        if self.running is not None:
            self.running.stop()
            self.running = None
        if self.base is not None:
            shutil.rmtree(self.base, ignore_errors=True)
            self.base = None


def usable_cpus() -> Tuple[int, ...]:
    """The CPUs this host lets servers be pinned to."""
    return tuple(sorted(os.sched_getaffinity(0)))


def installed(adapters: Sequence[Server]) -> List[str]:
    """The names of the servers in `adapters` this host can run."""
    return [adapter.name for adapter in adapters if adapter.installed()]


def facts(adapters: Sequence[Server]) -> Tuple[dict, Dict[str, Optional[str]]]:
    """This host's facts, and the version of each server in `adapters`."""
    return engine.host_facts(), {adapter.name: adapter.version() for adapter in adapters}


def php_refusals(adapters: Sequence[Server]) -> Dict[str, Optional[str]]:
    """Why each server in `adapters` cannot run PHP on this host (registry.php_refusal), by name;
    None for those that can."""
    return {adapter.name: php_refusal(adapter) for adapter in adapters}
