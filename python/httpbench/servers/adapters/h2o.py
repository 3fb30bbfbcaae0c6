"""h2o 2.2, from Debian's h2o: event-driven, one process with N threads, under start_server (master
mode, as Debian runs it). Profile directives are extra top-level lines of h2o.conf (YAML), e.g.
`http1-upgrade-to-http2: OFF`."""

from __future__ import annotations

import os
import signal
from pathlib import Path
from typing import Dict, List, Optional, Tuple

from httpbench.servers.base import OPENSSL_CONF, Config, Server, ServerProfile, Site, pinned_openssl_conf
from httpbench.servers.operations import Operation, command_refusal

# h2o's graceful restart (h2o(8), -m master: "Users may send SIGHUP to the master process to
# reconfigure or upgrade the server"): in master mode h2o runs under start_server, which on SIGHUP
# starts a new h2o on the listening sockets it holds and has the old one finish its connections
# (SIGTERM: a graceful shutdown) and exit; start_server itself (the master) is
# kept. Debian's h2o.service runs h2o so (-m master) and reloads it so. The suite tests the
# configuration first (h2o -t), as a new h2o that fails to start would leave the old one serving
# with its refusal only in the error log.
GRACEFUL = Operation("reload", "h2o -t with the suite's config, then SIGHUP to start_server", "kept", "h2o(8)")


class H2o(Server):
    name = "h2o"
    summary = "h2o, event-driven, one process with a thread per core"
    packages = ("h2o",)
    program = "/usr/bin/h2o"
    speaks_tls = True  # Debian's h2o links OpenSSL 3
    # h2o offers h2 by ALPN on every TLS listener and takes h2c by prior knowledge on every
    # cleartext one, in both profiles: nothing to turn on.
    speaks_h2 = True
    speaks_h2c = True
    runs_php = "fastcgi"
    tuned_codings = ("br", "gzip")  # file.send-compressed: name.br, else name.gz
    # No reopen-logs: h2o has no signal for it (its access-log directive pipes to a rotating logger:
    # https://h2o.examp1e.net/configure/access_log_directives.html).
    operations = {
        **Server.operations,
        "reload": GRACEFUL,
        "graceful-restart": Operation("graceful-restart", GRACEFUL.means, "kept", GRACEFUL.doc),
    }

    def operate(self, action: str, site: Site, pid: int) -> Optional[str]:
        refused = command_refusal(
            [self.executable(), "-t", "-c", str(site.run_dir / "h2o.conf")], self.environment(site)
        )
        if refused is None:
            os.kill(pid, signal.SIGHUP)
        return refused

    def logs(self, site: Site) -> Tuple[Path, ...]:
        return (site.run_dir / "error.log",)

    def version_args(self) -> List[str]:
        return ["--version"]

    def render(self, site: Site, profile: ServerProfile) -> Config:
        run = site.run_dir
        if profile.name == "tuned":
            settings = f"""num-threads: {site.workers}                    # a thread per core given (the 2016 write-up)
max-connections: 10000            # default 1024 stops accepting short of the 2016 write-up's 1,000+ connections
# http1-request-timeout (https://h2o.examp1e.net/configure/base_directives.html, h2o 2.2 has no
# other HTTP/1 timeout): one timer from the end of a response to the whole next request header, so
# both how long an idle keep-alive client is kept and when a slowloris is cut. h2o's own 10 s,
# said, rather than the 2016 write-up's 60 s keep-alive, which would let a slowloris hold 60 s
http1-request-timeout: 10
file.etag: OFF                    # as nginx's etag off (the 2016 write-up): one header less
{_send_compressed(site)}
compress: OFF                     # and no gzip on the fly (the default too)"""
            if site.http2:
                settings += """
http2-idle-timeout: 60            # the 2016 write-up's 60 s keep-alive, for h2 connections (default 10)
http2-max-concurrent-requests-per-connection: 100   # the default, said: the plans' most streams (h2load -m 100)
# h2o's other HTTP/2 settings are already what its docs advise for throughput: no server push
# (none configured), its window for request bodies (GETs have none), 16 KB DATA frames"""
            log = ""  # no access log: every write-up turned logging off
            status = ""
        else:
            # Debian's h2o.conf (threads: one per online CPU), logs in the run dir.
            settings = 'server-name: "h2o (Debian)"'
            log = f"access-log: {run}/access.log\n"
            status = "\n      /server-status:\n        status: ON"
        listen = f"""listen:
  host: {site.host}
  port: {site.port}{_listen_tls(site)}"""
        extra = "".join(f"{line}\n" for line in profile.directives)
        # h2o 2.2's max-version cannot cap OpenSSL 3 below 1.3: a pinned version is OpenSSL's.
        pinned = {OPENSSL_CONF: pinned_openssl_conf(site.tls.version)} if site.tls and site.tls.version else {}
        return Config(
            {
                "h2o.conf": f"""# rendered by httpbench for profile {profile.name}
{settings}
{_tls_settings(site, profile)}{_user()}error-log: {run}/error.log
{log}pid-file: {run}/h2o.pid
{listen}
hosts:
  default:
    paths:
      /:
        file.dir: {site.docroot}{_php(site)}{status}
{extra}""",
                **pinned,
            }
        )

    def command(self, site: Site, config_dir: Path) -> List[str]:
        # master mode, as Debian's h2o.service runs it: start_server leads, h2o is its one child,
        # replaced on SIGHUP (a graceful restart; in worker mode SIGHUP ends h2o)
        return [self.executable(), "-c", str(config_dir / "h2o.conf"), "-m", "master"]

    def environment(self, site: Site) -> Dict[str, str]:
        return {"OPENSSL_CONF": str(site.run_dir / OPENSSL_CONF)} if site.tls and site.tls.version else {}


def _php(site: Site) -> str:
    """`.php` to the suite's PHP-FPM pool, the same in both profiles (h2o's docs' way, as its
    fastcgi.spawn would do with a pool of its own)."""
    if not site.php:
        return ""
    return f"""
        # no fastcgi.timeout.keepalive (0, h2o's default: a connection per request): a PHP-FPM
        # child serves one kept connection until it closes, so requests sent on the others wait
        # in the pool's queue meanwhile (php-wait, 64 clients, 4 children: 4 clients served, 60
        # starved for a whole 3-s run); a Unix socket connect costs microseconds
        file.custom-handler:
          extension: .php
          fastcgi.connect:
            port: {site.php_socket}
            type: unix
        file.index: [ 'index.php', 'index.html' ]"""


def _send_compressed(site: Site) -> str:
    """tuned: h2o's docs (https://h2o.examp1e.net/configure/file_directives.html) serve a file's
    precompressed name.br or name.gz, whichever the client accepts (br first), when
    file.send-compressed is ON: on for a cell asking a coding, off (one stat less) otherwise."""
    if site.encoding in H2o.tuned_codings:
        return "file.send-compressed: ON          # the suite's name.br and name.gz copies"
    return "file.send-compressed: OFF         # plain files, like every other server (the default too)"


def _listen_tls(site: Site) -> str:
    """The listener's `ssl` block: the site's certificate, the pinned version if any."""
    tls = site.tls
    if tls is None:
        return ""
    text = f"""
  ssl:
    certificate-file: {tls.cert}
    key-file: {tls.key}"""
    return text


def _tls_settings(site: Site, profile: ServerProfile) -> str:
    if site.tls is None or profile.name != "tuned":
        return ""
    # h2o's defaults already are what its docs recommend on one host: resumption by session id
    # and by ticket, 1.3 whenever the client offers it. Said, so the stored config shows it.
    # (Debian builds it without neverbleed, the key-isolating process that costs an IPC per full
    # handshake, so there is nothing to turn off there.)
    return """ssl-session-resumption:
  mode: all                       # session ids and tickets both (the default)
  cache-store: internal           # one cache in the process, shared by its threads (the default)
  lifetime: 3600                  # sessions outlive a run's rounds (the default)
"""


def _user() -> str:
    # As root h2o switches to `user` before writing its pid file and serving; Debian's
    # debian-h2o could enter neither the private run dir nor the document root.
    return "user: root\n" if os.geteuid() == 0 else ""
