"""lighttpd, from Debian's lighttpd.

It runs as root (no server.username), as nginx's adapter does (`user root;`). Debian's config
drops to www-data, but lighttpd serves files from the very process that drops privileges, and
www-data can neither traverse a document root under a private 0700 directory (pytest's are) nor
open its error log in a root-owned run directory, which makes lighttpd exit at start. Unlike
apache, lighttpd accepts running as root, so no other arrangement is needed.

PHP: `.php` goes to the suite's PHP-FPM pool by mod_fastcgi, on its Unix socket, as Debian's
15-fastcgi-php-fpm.conf sends it to the system's pool.
"""

from __future__ import annotations

import os
import signal
from pathlib import Path
from typing import List, Optional, Tuple

from httpbench.servers.base import Config, Server, ServerProfile, Site, SiteTLS
from httpbench.servers.operations import Operation, command_refusal

OPENSSL_MODULE = "/usr/lib/lighttpd/mod_openssl.so"
DEFLATE_MODULE = "/usr/lib/lighttpd/mod_deflate.so"  # lighttpd loads none it cannot find, silently
# lighttpd's signals (doc/initscripts.txt, lighttpd 1.4.46 and later): USR1 reloads gracefully,
# serving the connections it has and then re-reading the configuration, in the same main process
# (new workers with server.max-worker); HUP re-opens the log files only. Debian's lighttpd.service
# tests the configuration first (lighttpd -tt), as the suite does.
SIGNALS = "https://git.lighttpd.net/lighttpd/lighttpd1.4/src/branch/master/doc/initscripts.txt"
GRACEFUL = Operation("reload", "lighttpd -tt with the suite's config, then SIGUSR1 to lighttpd", "kept", SIGNALS)


class Lighttpd(Server):
    name = "lighttpd"
    summary = "lighttpd, one event-driven process (or N with server.max-worker)"
    packages = ("lighttpd", "lighttpd-mod-openssl", "lighttpd-mod-deflate")
    program = "/usr/sbin/lighttpd"
    speaks_tls = True
    # HTTP/2 is on by default since lighttpd 1.4.59 (server.h2proto): h2 by ALPN beside
    # http/1.1 over TLS, and h2c (server.h2c) by prior knowledge in cleartext.
    speaks_h2 = True
    speaks_h2c = True
    runs_php = "fastcgi"
    # mod_deflate (Debian's 1.4.69 is built with zlib and brotli) compresses each text file once,
    # into its cache, whether or not the suite wrote copies: lighttpd reads no sidecar files.
    tuned_codings = ("br", "gzip")
    codings_from_copies = False
    coding_modules = {coding: (DEFLATE_MODULE, "lighttpd-mod-deflate") for coding in tuned_codings}
    operations = {
        **Server.operations,
        "reload": GRACEFUL,
        # lighttpd's own name for its reload (https://blog.lighttpd.net/articles/2005/09/02/graceful-restart/)
        "graceful-restart": Operation("graceful-restart", GRACEFUL.means, "kept", SIGNALS),
        "reopen-logs": Operation("reopen-logs", "SIGHUP to lighttpd", "kept", SIGNALS, "kept"),
    }

    def operate(self, action: str, site: Site, pid: int) -> Optional[str]:
        if action != "reopen-logs":
            refused = command_refusal([self.executable(), "-tt", "-f", str(site.run_dir / "lighttpd.conf")])
            if refused is not None:
                return refused
        os.kill(pid, signal.SIGHUP if action == "reopen-logs" else signal.SIGUSR1)
        return None

    def logs(self, site: Site) -> Tuple[Path, ...]:
        return (site.run_dir / "error.log",)

    def tls_refusal(self, tls: Optional[SiteTLS] = None) -> Optional[str]:
        if not Path(OPENSSL_MODULE).is_file():
            return (
                "lighttpd serves HTTPS with mod_openssl, which is not installed; "
                "install it with: apt-get install -y lighttpd-mod-openssl"
            )
        return None

    def render(self, site: Site, profile: ServerProfile) -> Config:
        return Config({"lighttpd.conf": render_conf(site, profile)})

    def command(self, site: Site, config_dir: Path) -> List[str]:
        return [self.executable(), "-D", "-f", str(config_dir / "lighttpd.conf")]  # -D: no daemon


def render_conf(site: Site, profile: ServerProfile) -> str:
    run = site.run_dir
    if profile.name == "tuned":
        # lighttpd's docs discourage server.max-worker (one process is rarely the bottleneck, and
        # mod_status and caches become per process); the 2016 write-up set it to the CPU count, so it is set
        # only when there is more than one CPU to use.
        workers = (
            f"server.max-worker = {site.workers}              # one process per CPU given (the 2016 write-up)\n"
            if site.workers > 1
            else ""
        )
        # mod_fastcgi before mod_staticfile, which would otherwise send a script's source
        fastcgi = '"mod_fastcgi", ' if site.php else ""
        body = f"""server.modules = ( "mod_indexfile", {fastcgi}"mod_staticfile" )
{workers}server.max-fds = 20000              # connections are descriptors; 20,000 is the hard limit here
server.max-connections = 10000      # lighttpd's ceiling is max-fds / 2 (default about 1365)
server.listen-backlog = 4096        # as nginx's tuned backlog: a connection storm waits, not fails
server.max-keep-alive-idle = 60     # the 2016 write-up's keep-alive settings; also how long an idle client holds on
server.max-keep-alive-requests = 1024
# Slow clients, from lighttpd's docs (https://redmine.lighttpd.net/projects/lighttpd/wiki/Docs_ConfigurationOptions,
# server.max-read-idle and server.max-write-idle): each is the longest silence between two reads
# (a request stalled, default 60 s) or two writes (a reader that stopped reading, default 360 s).
# lighttpd has no limit on a whole request's time: a client trickling a byte now and then is never
# cut, but holds only a descriptor and a few KB, never a process. 10 s is hundreds of times what a
# request on loopback takes (docs/servers-defences.md)
server.max-read-idle = 10
server.max-write-idle = 10
# no access log: every write-up turned it off (Debian's default has none either)
# server.network-backend stays sendfile: lighttpd already reads a response body under 16 KB into
# memory and sends it with the headers in one write; sendfile serves only larger files (the 25 KB
# one), where it is the cheaper way
index-file.names = ( "index.html" )"""
    else:
        # Debian's /etc/lighttpd/lighttpd.conf and its conf-enabled, minus what would touch the
        # system: pid, logs and uploads go to the run directory. Not included: use-ipv6.pl (a
        # listener on [::]; the suite binds one address) and server.username/groupname (see above).
        body = """server.modules = ( "mod_indexfile", "mod_access", "mod_alias", "mod_redirect" )
server.feature-flags += ("server.h2proto" => "enable")
server.feature-flags += ("server.h2c" => "enable")
server.feature-flags += ("server.graceful-shutdown-timeout" => 5)
server.http-parseopts = (
  "header-strict" => "enable",
  "host-strict" => "enable",
  "host-normalize" => "enable",
  "url-normalize-unreserved" => "enable",
  "url-normalize-required" => "enable",
  "url-ctrls-reject" => "enable",
  "url-path-2f-decode" => "enable",
  "url-path-dotseg-remove" => "enable",
)
index-file.names = ( "index.php", "index.html" )
url.access-deny = ( "~", ".inc" )
static-file.exclude-extensions = ( ".php", ".pl", ".fcgi" )
alias.url += ( "/javascript" => "/usr/share/javascript" )
server.modules += ( "mod_dirlisting", "mod_staticfile" )"""
    host = site.address
    tls = _php(site, profile) + _tls(site, profile) + _h2(site, profile) + _deflate(site, profile)
    # Added last; to change a setting made above, use := (lighttpd refuses a second =).
    extra = "".join(f"{line}\n" for line in profile.directives)
    return f"""# rendered by httpbench for profile {profile.name}
server.document-root = "{site.docroot}"
server.upload-dirs = ( "{run}" )
server.errorlog = "{run}/error.log"
server.pid-file = "{run}/lighttpd.pid"
server.bind = "{host}"
server.port = {site.port}
include_shell "/usr/share/lighttpd/create-mime.conf.pl"
{body}
{tls}{extra}"""


def _deflate(site: Site, profile: ServerProfile) -> str:
    """tuned, for a cell asking a coding: mod_deflate as its docs recommend for static files
    (https://redmine.lighttpd.net/projects/lighttpd/wiki/Mod_deflate): text types only, and a
    cache directory so each file is compressed once, then served from the cache as a file."""
    if profile.name != "tuned" or site.encoding not in Lighttpd.tuned_codings:
        return ""
    return f"""server.modules += ( "mod_deflate" )
deflate.cache-dir = "{site.run_dir}/deflate"
deflate.allowed-encodings = ( "br", "gzip" )
deflate.mimetypes = ( "text/", "application/javascript", "application/json", "image/svg+xml" )
"""


def _php(site: Site, profile: ServerProfile) -> str:
    """mod_fastcgi to the suite's PHP-FPM pool for a PHP site."""
    if not site.php:
        return ""
    if profile.name == "tuned":
        return f"""index-file.names += ( "index.php" )
# The suite's pool, started before lighttpd (no bin-path: lighttpd neither spawns nor watches it).
# No keep-alive to it: lighttpd's mod_fastcgi opens a connection per request and has no setting
# to keep one; on a Unix socket a connect costs microseconds.
fastcgi.server = ( ".php" => (( "socket" => "{site.php_socket}" )) )
"""
    # Debian's 15-fastcgi-php-fpm.conf (lighty-enable-mod fastcgi-php-fpm), its socket the suite's pool
    return f"""server.modules += ( "mod_fastcgi" )
fastcgi.server += ( ".php" =>
  ((
    "socket" => "{site.php_socket}",
    "broken-scriptfilename" => "enable"
  ))
)
"""


def _h2(site: Site, profile: ServerProfile) -> str:
    """Tuned's HTTP/2 lines (the default profile has Debian's feature flags, which enable it)."""
    if not site.http2 or profile.name != "tuned":
        return ""
    return """# HTTP/2 (on by default since 1.4.59, said): h2 by ALPN over TLS, h2c by prior knowledge
server.feature-flags += ( "server.h2proto" => "enable", "server.h2c" => "enable" )
# lighttpd allows 8 concurrent streams per connection, with no setting to raise it: a client
# asking for more gets 8 (its SETTINGS_MAX_CONCURRENT_STREAMS), as the report's h2 figures say.
# Its windows bound only request bodies (GETs have none).
"""


def _tls(site: Site, profile: ServerProfile) -> str:
    """mod_openssl on the one listener: the site's certificate, the pinned version if any."""
    tls = site.tls
    if tls is None:
        return ""
    lines = [
        'server.modules += ( "mod_openssl" )',
        'ssl.engine = "enable"',
        f'ssl.pemfile = "{tls.cert}"',
        f'ssl.privkey = "{tls.key}"',
    ]
    if tls.version:
        lines.append(
            f'ssl.openssl.ssl-conf-cmd = ( "MinProtocol" => "TLSv{tls.version}", "MaxProtocol" => "TLSv{tls.version}" )'
            "   # pinned by the site"
        )
    if profile.name == "tuned":
        if not tls.version:
            lines.append("# TLS 1.2 and 1.3 (lighttpd's own minimum is 1.2): 1.3 wins whenever the client offers it.")
        lines += [
            "# Session tickets stay on, with lighttpd's own hourly key rotation (its docs prefer them).",
            "# lighttpd keeps no session cache unless asked: turn it on so TLS 1.2 clients resuming by",
            "# session id resume too (one cache per process with server.max-worker: an id resumes only on",
            "# the process that issued it, where a ticket resumes on any)",
            'server.feature-flags += ( "ssl.session-cache" => "enable" )',
        ]
    return "".join(f"{line}\n" for line in lines)
