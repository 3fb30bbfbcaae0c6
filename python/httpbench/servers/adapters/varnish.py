"""Varnish Cache, from Debian's varnish, in front of the nginx adapter (as the 2016 and 2011
write-ups ran it).

Varnish without VCL is configured entirely by its command line, so the rendered "configuration"
is that command line, one argument per line with comments (`varnishd.args`); the command is read
back from it, and the stored config says exactly how varnishd ran. Profile directives are extra
varnishd arguments, e.g. `-p thread_pool_max=1000`.

HTTPS is hitch's, Varnish's own recommended TLS terminator (Varnish speaks no TLS): hitch listens
on the site's port and hands each connection, with a PROXY v2 header as Varnish's docs set it up,
to varnishd on a private loopback port. Both run in one session, hitch its leader, so they are
pinned, watched and stopped as one server; hitch's config (`hitch.conf`) is rendered beside
varnishd's arguments, never /etc/hitch or the system service.
"""

from __future__ import annotations

import os
import shlex
import shutil
import signal
import subprocess
import time
from pathlib import Path
from typing import List, Optional

from httpbench.servers.adapters.nginx import Nginx
from httpbench.servers.base import Config, Server, ServerProfile, Site, SiteTLS, read_args
from httpbench.servers.operations import Operation, command_refusal
from httpbench.servers.own_words import chosen
from httpbench.servers.process import free_port

ARGS = "varnishd.args"
VCL = "default.vcl"
HITCH = "/usr/sbin/hitch"
HITCH_CONF = "hitch.conf"
# Varnish's reload (https://varnish-cache.org/docs/7.1/users-guide/run_cli.html, and Debian's
# varnish.service, whose varnishreload does the same with vcl.load): the VCL compiled anew through
# varnishadm and made active with `vcl.use`, in the running cache process, its connections and
# cached objects kept; a VCL that fails to compile is refused and the old one goes on. The VCL is
# default.vcl, what -b compiles to, passed inline: varnishd reads a VCL file as its unprivileged
# user, who cannot enter the suite's private run directory. Over HTTPS hitch is reloaded with it
# (hitch(8): SIGHUP re-reads its configuration and certificates, new workers taking over from the
# old). Varnish has no graceful restart, and no logs to reopen: it logs to shared memory.
RELOAD = Operation(
    "reload",
    "varnishadm vcl.inline and vcl.use of the suite's VCL (and SIGHUP to hitch over HTTPS)",
    "kept",
    "https://varnish-cache.org/docs/7.1/users-guide/run_cli.html",
    "kept",
)


class Varnish(Server):
    name = "varnish"
    summary = "Varnish Cache, malloc storage, in front of nginx"
    packages = ("varnish", "nginx-light", "hitch")
    program = "/usr/sbin/varnishd"
    speaks_tls = True  # through hitch
    # varnishd's HTTP/2 (feature flag http2): over TLS hitch offers h2 by ALPN and passes the choice
    # on in its PROXY v2 header; in cleartext varnishd takes h2c by prior knowledge.
    speaks_h2 = True
    speaks_h2c = True

    def tls_refusal(self, tls: Optional[SiteTLS] = None) -> Optional[str]:
        if shutil.which(HITCH) is None:
            return (
                "varnish serves HTTPS through hitch, which is not installed; install it with: apt-get install -y hitch"
            )
        return None

    def version_args(self) -> List[str]:
        return ["-V"]

    # tuned passes what its nginx backend (tuned too, on the same site) sent: with
    # http_gzip_support off (below) varnish leaves Accept-Encoding as the client sent it, neither
    # compresses nor decompresses, and keeps one object per coding by nginx's Vary (Varnish docs,
    # users-guide/compression.html).
    tuned_codings = Nginx.tuned_codings
    coding_modules = Nginx.coding_modules

    operations = {**Server.operations, "reload": RELOAD}

    def operate(self, action: str, site: Site, pid: int) -> Optional[str]:
        admin = [shutil.which("varnishadm") or "varnishadm", "-n", str(site.run_dir / "varnish")]
        name = f"reload_{time.time_ns()}"
        refused = _inline(admin, name, (site.run_dir / VCL).read_text())
        refused = refused or command_refusal([*admin, "vcl.use", name])
        if refused is None and site.tls is not None:
            os.kill(pid, signal.SIGHUP)  # hitch leads the session
        return refused

    def backend(self) -> Server:
        return Nginx()

    def render(self, site: Site, profile: ServerProfile) -> Config:
        files = {}
        if site.tls is None:
            listen = site.authority
        else:
            # hitch takes the site's port; varnishd listens where only hitch connects.
            inner = free_port(site.host)
            listen = f"{site.address}:{inner},PROXY"
            files[HITCH_CONF] = render_hitch(site, profile, inner)
        lines = [
            f"# rendered by httpbench for profile {profile.name}",
            f"-a {listen}",
            "# the nginx backend, started first",
            f"-b {site.upstream}",
            "# working directory and shared-memory log in the run dir",
            f"-n {site.run_dir / 'varnish'}",
            "# in memory (the 2011 write-up used a file; the workload files are tiny)",
            "-s malloc,64m",
            "# no -T: varnishd's management interface on a random loopback port, its secret in the",
            "# working directory, both found there by varnishadm -n: how a reload reaches it",
            "# Both profiles: on (the default), varnish asks nginx for gzip, keeps the compressed",
            "# copy and gunzips it for every client that sent no Accept-Encoding; a miss then goes",
            "# out chunked, without Content-Length, and fails verification.",
            "-p http_gzip_support=off",
        ]
        if site.http2:
            lines += ["# HTTP/2 (off by default in Varnish 7.1)", "-p feature=+http2"]
        if profile.name == "tuned":
            workers = site.workers
            lines += [
                "# one pool per core given, as other servers have a worker per core (the 2016 write-up)",
                f"-p thread_pools={workers}",
                "# a thread per in-flight request: start enough for the 2016 write-up's 1,000 connections, so",
                "# none is created during a measured ramp (about 10 MB more resident)",
                f"-p thread_pool_min={max(100, 1000 // workers)}",
                "# Slow clients, from varnishd's parameter reference (varnish-cache.org/docs/7.1/",
                "# reference/varnishd.html). timeout_idle: a connection is idle until its whole request",
                "# header has arrived, so this is both the keep-alive idle time and when a slowloris is",
                "# cut; 10 s (default 5 s) rather than the 2016 write-up's 60 s keep-alive, which would let",
                "# a slowloris hold its connection and session workspace for 60 s",
                "-p timeout_idle=10",
                "# idle_send_timeout: the longest a reader may leave a send stalled (default 60 s)",
                "-p idle_send_timeout=10",
                "# send_timeout: a whole response's time to send (default 600 s): a slow reader of a large",
                "# file is cut after 60 s, which a loopback client never needs",
                "-p send_timeout=60",
                "# the listen backlog of the other tuned servers (default 1024)",
                "-p listen_depth=4096",
            ]
        lines += list(profile.directives)
        return Config({ARGS: "\n".join(lines) + "\n", VCL: render_vcl(site), **files})

    def command(self, site: Site, config_dir: Path) -> List[str]:
        varnishd = [self.executable(), "-F", *read_args(config_dir / ARGS)]
        if site.tls is None:
            return varnishd
        # One session for both: the shell starts varnishd and becomes hitch, so hitch (whose
        # configuration errors are the likelier) is the leader whose exit says the server failed.
        hitch = [HITCH, f"--config={config_dir / HITCH_CONF}"]
        return ["/bin/sh", "-c", f"{shlex.join(varnishd)} & exec {shlex.join(hitch)}"]


def _inline(admin: List[str], name: str, vcl: str) -> Optional[str]:
    """`vcl.inline` of `vcl` as `name`: None once compiled, else varnishd's words. A multi-line
    argument is a here document of the CLI (varnish-cli(7)), sent on varnishadm's standard input,
    whose answers (-p) are "status length" lines: its exit code says nothing of theirs."""
    command = f"vcl.inline {name} << HTTPBENCH_VCL\n{vcl}\nHTTPBENCH_VCL\n"
    try:
        done = subprocess.run([*admin, "-p"], input=command, capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"varnishadm failed: {e}"
    status, _, said = done.stdout.partition("\n")
    if status.split()[:1] == ["200"]:
        return None
    lines = [line.strip() for line in said.splitlines() if line.strip()]
    if lines[:1] == ["Message from VCC-compiler:"]:
        # What it expected and found, up to where: "('<vcl.inline>' Line 9 Pos 1)"
        end = next((i for i, line in enumerate(lines) if line.startswith("(")), len(lines) - 1)
        return " ".join(lines[1 : end + 1])
    return chosen(said or done.stderr) if (said or done.stderr).strip() else f"varnishadm answered {status!r}"


def render_vcl(site: Site) -> str:
    """Debian's default.vcl: the backend alone, Varnish's built-in VCL doing the rest; what -b
    compiles to, and what a reload loads."""
    host, port = site.upstream.rsplit(":", 1)
    return f"""vcl 4.1;

# the nginx backend, started first
backend default {{
    .host = "{host.strip("[]")}";
    .port = "{port}";
}}
"""


def render_hitch(site: Site, profile: ServerProfile, backend_port: int) -> str:
    """hitch.conf: the site's certificate on the site's port, varnishd behind it over PROXY v2."""
    tls = site.tls
    lines = [
        f"# rendered by httpbench for profile {profile.name}: hitch in front of varnishd",
        f'frontend = "[{site.host}]:{site.port}"',
        f'backend = "[{site.host}]:{backend_port}"',
        f'pem-file = {{ cert = "{tls.cert}" private-key = "{tls.key}" }}',
        "# Varnish's docs: hitch passes the client's address to varnishd as a PROXY v2 header",
        "write-proxy-v2 = on",
        "daemon = off",
        "# no OCSP fetching (the suite's certificate names no responder) and nothing under /var/lib",
        f'ocsp-dir = "{site.run_dir}"',
    ]
    if os.geteuid() == 0:
        lines += [
            "# hitch refuses to run its workers as root: Debian's package user, once the key is read",
            'user = "_hitch"',
        ]
    if tls.version:
        lines.append(f"tls-protos = TLSv{tls.version}   # pinned by the site")
    if site.http2:
        lines.append('alpn-protos = "h2, http/1.1"   # Varnish docs: offer h2 first, varnishd speaks it')
    if profile.name == "tuned":
        lines += [
            f"workers = {site.workers}   # hitch's docs: one worker process per core (the default is one)",
            "backlog = 4096   # as the other tuned servers' listen backlog (default 100)",
            "# Tickets resume on any worker (their key is made before the workers fork); Debian's",
            "# build has no shared session cache, so a TLS 1.2 session id resumes only on the worker",
            "# that issued it. Unpinned, hitch speaks 1.2 and 1.3 (its default): 1.3 when offered",
        ]
    return "\n".join(lines) + "\n"
