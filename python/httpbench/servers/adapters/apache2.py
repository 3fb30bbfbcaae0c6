"""Apache httpd 2.4 from Debian's apache2, once per MPM: prefork, worker and event (all three ship
in apache2-bin as loadable modules, so one binary and one renderer serve the three adapters).

Privileges: apache refuses `User root` (unless built with BIG_SECURITY_HOLE), and its workers,
run as www-data, could not reach a document root under a private 0700 directory (pytest's are).
So when the suite is root, apache is started as www-data with one capability, CAP_DAC_READ_SEARCH
(read and traverse any path, as nginx's `user root` workers can), and the run directory is given
to www-data so it can write its pid file and logs there. Nothing outside the run directory changes.
The capability also lets mod_php read the scripts and its php.ini; PHP's own directory in the run
directory (its error log) is given to www-data too.

PHP: prefork runs it inside its own processes (mod_php, the classic LAMP: Debian's libphp8.2 is
built without thread safety, so it loads only beside prefork); worker and event hand `.php` to the
suite's PHP-FPM pool through mod_proxy_fcgi, as Debian's php8.2-fpm package configures apache.
"""

from __future__ import annotations

import math
import os
import shutil
from pathlib import Path
from typing import ClassVar, Dict, List, Optional

from httpbench.servers.adapters.apache2_control import ApacheControl
from httpbench.servers.base import Config, Server, ServerProfile, Site
from httpbench.servers.php import PHP_INI, php_ini
from httpbench.servers.php_install import MOD_PHP

MODULES = "/usr/lib/apache2/modules"
STOCK = "/etc/apache2/mods-available"
RUN_USER = "www-data"

# What Debian enables on install (/etc/apache2/mods-enabled), the MPM aside, and which of those
# have a stock .conf file there; the default profile loads and includes exactly these.
DEBIAN_MODULES = (
    "access_compat",
    "alias",
    "auth_basic",
    "authn_core",
    "authn_file",
    "authz_core",
    "authz_host",
    "authz_user",
    "autoindex",
    "deflate",
    "dir",
    "env",
    "filter",
    "mime",
    "negotiation",
    "reqtimeout",
    "setenvif",
    "status",
)
DEBIAN_MODULE_CONFS = (
    "alias",
    "autoindex",
    "deflate",
    "dir",
    "mime",
    "negotiation",
    "reqtimeout",
    "setenvif",
    "status",
)
# Debian's mpm_*.conf values.
DEBIAN_MPM = {
    "prefork": "StartServers 5\nMinSpareServers 5\nMaxSpareServers 10\nMaxRequestWorkers 150\nMaxConnectionsPerChild 0",
    "worker": "StartServers 2\nMinSpareThreads 25\nMaxSpareThreads 75\nThreadLimit 64\nThreadsPerChild 25\n"
    "MaxRequestWorkers 150\nMaxConnectionsPerChild 0",
}
DEBIAN_MPM["event"] = DEBIAN_MPM["worker"]

# Tuned's limits on slow clients, as the "Denial of Service" part of apache's security tips advises
# (https://httpd.apache.org/docs/2.4/misc/security_tips.html#dos): a slowloris or a stalled body
# holds a process (prefork) or a thread (worker, and event too until the request is read) as long
# as apache lets it. 10 s is hundreds of times what a request on loopback takes
# (docs/servers-defences.md has every server's).
DEFENCES = """# mod_reqtimeout (https://httpd.apache.org/docs/2.4/mod/mod_reqtimeout.html), which Debian's default
# enables with header=20-40,MinRate=500 body=10,MinRate=500: the whole request header within 10 s,
# extended by 1 s per 500 bytes received up to 20 s (a slowloris is cut at 10 s, answered 408),
# a body's first byte within 10 s and then 500 bytes a second (a trickled body is cut too), and a
# TLS handshake within 10 s
RequestReadTimeout handshake=10 header=10-20,MinRate=500 body=10,MinRate=500
# Timeout (core docs; apache's own default 60 s, Debian's 300 s): the longest wait for a packet
# from the client, or for the client to take a full send buffer (a reader that stopped reading);
# 30 s, as mod_proxy_fcgi's wait for PHP also is, far above any workload's answer time
Timeout 30"""

# Tuned: connections apache can hold at once. Every MPM gives each open connection a process
# (prefork) or a thread (worker; event while a request is in flight), so this must cover the
# largest concurrency run; the 2016 write-up went to 1,000. Beyond it connections wait in the
# listen queue.
TUNED_CONNECTIONS = 1024


class _Apache(ApacheControl, Server):
    mpm: ClassVar[str]
    packages = ("apache2",)
    program = "/usr/sbin/apache2"
    speaks_tls = True  # mod_ssl ships in apache2-bin, loaded from the rendered config
    # mod_http2 ships there too: h2 by ALPN beside mod_ssl, h2c by prior knowledge without it
    speaks_h2 = True
    speaks_h2c = True
    # worker and event: the suite's PHP-FPM pool through mod_proxy_fcgi; prefork runs mod_php
    runs_php = "fastcgi"
    tuned_codings = ("br", "gzip")  # the precompressed-file recipe of mod_brotli's docs (below)

    def render(self, site: Site, profile: ServerProfile) -> Config:
        files = {"apache2.conf": render_conf(site, profile, self.mpm)}
        if site.php and self.runs_php == "module":
            files[PHP_INI] = php_ini(site, profile)  # mod_php's PHPIniDir; the pool writes its own
        return Config(files)

    def command(self, site: Site, config_dir: Path) -> List[str]:
        # FOREGROUND: neither detach nor start a new session, so the framework's session holds
        # every child.
        apache = [*self._control(config_dir), "-DFOREGROUND"]
        if os.geteuid() != 0:
            return apache  # not root: apache keeps the suite's user and changes nothing
        shutil.chown(config_dir, RUN_USER, RUN_USER)  # pid file and logs (see the module doc)
        if site.php and self.runs_php == "module":
            shutil.chown(site.php_dir, RUN_USER, RUN_USER)  # mod_php's error log
        # --pdeathsig keep: a change of user clears the parent-death signal the framework set.
        return [
            "setpriv",
            f"--reuid={RUN_USER}",
            f"--regid={RUN_USER}",
            "--clear-groups",
            "--inh-caps=+dac_read_search",
            "--ambient-caps=+dac_read_search",
            "--pdeathsig=keep",
            "--",
            *apache,
        ]


class ApachePrefork(_Apache):
    name = "apache2-prefork"
    summary = "Apache httpd, prefork MPM: one process per connection"
    mpm = "prefork"
    speaks_h2 = False
    speaks_h2c = False
    runs_php = "module"

    def environment(self, site: Site) -> Dict[str, str]:
        # PHP would read Debian's /etc/php/8.2/apache2/conf.d after the suite's php.ini; empty,
        # it reads no directory: the rendered php.ini is the whole of PHP's configuration.
        return {"PHP_INI_SCAN_DIR": ""} if site.php else {}

    def protocol_refusal(self, protocol: str) -> Optional[str]:
        if protocol in ("h2", "h2c"):
            # mod_http2 runs streams on threads of the connection's process; under prefork it
            # logs AH10034 and leaves HTTP/2 off.
            return (
                "apache2-prefork cannot offer HTTP/2: mod_http2 does not work with the prefork MPM; "
                "measure apache2-event or apache2-worker over h2"
            )
        return super().protocol_refusal(protocol)


class ApacheWorker(_Apache):
    name = "apache2-worker"
    summary = "Apache httpd, worker MPM: processes of threads, one thread per connection"
    mpm = "worker"


class ApacheEvent(_Apache):
    name = "apache2-event"
    summary = "Apache httpd, event MPM: threads, idle keep-alive connections parked with a listener"
    mpm = "event"


def render_conf(site: Site, profile: ServerProfile, mpm: str) -> str:
    # Apache has no end-of-line comments: every comment is a line of its own above its directive.
    run = site.run_dir
    host = site.address
    mpm_module = f"LoadModule mpm_{mpm}_module {MODULES}/mod_mpm_{mpm}.so\n"
    if profile.name == "tuned":
        modules = mpm_module + "".join(
            f"LoadModule {m}_module {MODULES}/mod_{m}.so\n" for m in ("authz_core", "dir", "mime", "reqtimeout")
        )
        body = f"""{_tuned_mpm(mpm, site.workers)}
# the 2016 write-up's keep-alive settings; KeepAliveTimeout is also how long an idle client holds
# its connection, and its process or thread too but under event, which parks idle connections
KeepAlive On
KeepAliveTimeout 60
MaxKeepAliveRequests 1024
{DEFENCES}
# the 2016 write-up: sendfile does not pay for tiny files (Off is also apache's own default)
EnableSendfile Off
# as nginx's tuned backlog: a connection storm waits in the queue instead of failing
ListenBacklog 4096
# no CustomLog: every write-up turned access logging off
# Content-Type from the system's table, as Debian's mime.conf has it
TypesConfig /etc/mime.types
DirectoryIndex index.html
<Directory />
    # no .htaccess lookups along every path
    AllowOverride None
    Require all denied
</Directory>
<Directory "{site.docroot}">
    Require all granted
</Directory>"""
    else:
        # Debian's apache2.conf with its enabled modules, conf-enabled and 000-default site, minus
        # what would touch the system: pid, logs and runtime files go to the run directory.
        modules = (
            mpm_module
            + "".join(f"LoadModule {m}_module {MODULES}/mod_{m}.so\n" for m in DEBIAN_MODULES)
            + "".join(f"Include {STOCK}/{m}.conf\n" for m in DEBIAN_MODULE_CONFS)
        )
        body = f"""{DEBIAN_MPM[mpm]}
Timeout 300
KeepAlive On
MaxKeepAliveRequests 100
KeepAliveTimeout 5
HostnameLookups Off
ServerTokens OS
ServerSignature On
TraceEnable Off
<Directory />
    Options FollowSymLinks
    AllowOverride None
    Require all denied
</Directory>
<Directory "{site.docroot}">
    Options Indexes FollowSymLinks
    AllowOverride None
    Require all granted
</Directory>
AccessFileName .htaccess
<FilesMatch "^\\.ht">
    Require all denied
</FilesMatch>
LogFormat "%h %l %u %t \\"%r\\" %>s %O \\"%{{Referer}}i\\" \\"%{{User-Agent}}i\\"" combined
CustomLog "{run}/access.log" combined"""
    extra = "".join(f"{line}\n" for line in profile.directives)
    tls = _tls(site, profile) + _h2(site, profile) + _precompressed(site, profile)
    php = _php(site, profile, mpm)
    return f"""# rendered by httpbench for profile {profile.name}, {mpm} MPM
ServerRoot "{run}"
DefaultRuntimeDir "{run}"
PidFile "{run}/apache2.pid"
Mutex file:{run} default
ErrorLog "{run}/error.log"
LogLevel warn
Listen {host}:{site.port}
# any name will do: with one, apache skips looking up this machine's at start (warning AH00558)
ServerName localhost
DocumentRoot "{site.docroot}"
{modules}{body}
{php}{tls}{extra}"""


def _precompressed(site: Site, profile: ServerProfile) -> str:
    """tuned, for a cell asking a coding: the "Serving pre-compressed content" recipe of mod_brotli's
    docs (https://httpd.apache.org/docs/2.4/mod/mod_brotli.html, mod_deflate's has the same for
    gzip), for every file with a copy rather than only .css and .js: a request whose
    Accept-Encoding names br (else gzip) is rewritten to name.br (name.gz) when that exists.
    Instead of the recipe's T= per type, mod_mime takes the type from the name's first extension
    once .br and .gz carry an encoding and no type of their own (mime.types maps .gz to
    application/gzip). Server context, not <Directory>: no per-directory rewrite per request."""
    if profile.name != "tuned" or site.encoding not in _Apache.tuned_codings:
        return ""
    rules = "".join(
        f"""RewriteCond "%{{HTTP:Accept-Encoding}}" "{coding}"
RewriteCond "%{{DOCUMENT_ROOT}}%{{REQUEST_URI}}{suffix}" -s
RewriteRule "^(.+)$" "$1{suffix}" [PT,L,E=precompressed:1]
"""
        for coding, suffix in (("br", ".br"), ("gzip", ".gz"))
    )
    return f"""LoadModule rewrite_module {MODULES}/mod_rewrite.so
LoadModule headers_module {MODULES}/mod_headers.so
RemoveType .gz .br
AddEncoding br .br
AddEncoding gzip .gz
RewriteEngine On
{rules}# the recipe's Vary: a cache keeps the coded and plain answers apart
Header append Vary Accept-Encoding env=precompressed
"""


def _php(site: Site, profile: ServerProfile, mpm: str) -> str:
    """`.php` through PHP for a PHP site: mod_php under prefork, the suite's PHP-FPM pool through
    mod_proxy_fcgi under worker and event."""
    if not site.php:
        return ""
    if mpm == "prefork":
        text = f"""# mod_php (Debian's php8.2.load), reading the suite's php.ini: never /etc/php
LoadModule php_module {MOD_PHP}
PHPIniDir "{site.php_dir}"
"""
        if profile.name == "tuned":
            return (
                text
                + """<FilesMatch "\\.php$">
    SetHandler application/x-httpd-php
</FilesMatch>
DirectoryIndex index.php
# MaxRequestWorkers stays as above with PHP: a keep-alive connection holds its process, so fewer
# would leave connections waiting unserved. Memory allows it: children fork after PHP and opcache
# start, sharing their pages; a child's own is what its requests used (about 0.15 MB of PSS on
# average after php-page load, measured on this kind of machine: 1,024 children cost ~150 MB).
"""
            )
        # Debian's php8.2.conf as a2enmod php8.2 enables it (dir.conf already lists index.php)
        return text + f"Include {STOCK}/php8.2.conf\n"
    handler = f'SetHandler "proxy:unix:{site.php_socket}|fcgi://localhost"'
    text = f"""# the suite's PHP-FPM pool through mod_proxy_fcgi, on its Unix socket
LoadModule proxy_module {MODULES}/mod_proxy.so
LoadModule proxy_fcgi_module {MODULES}/mod_proxy_fcgi.so
"""
    if profile.name == "tuned":
        return (
            text
            + f"""<FilesMatch "\\.php$">
    {handler}
</FilesMatch>
DirectoryIndex index.php
# No connection reuse to the pool (enablereuse, off by default for FastCGI): a PHP-FPM child
# serves one kept connection until it closes, so requests sent on the others wait in the pool's
# queue meanwhile (php-wait, 64 clients, 4 children: 4 clients served, 60 starved for a whole
# 3-s run); a Unix socket connect costs microseconds.
"""
        )
    # Debian's conf-available/php8.2-fpm.conf (a2enconf php8.2-fpm), its socket the suite's pool
    return (
        text
        + f"""<IfModule setenvif_module>
SetEnvIfNoCase ^Authorization$ "(.+)" HTTP_AUTHORIZATION=$1
</IfModule>
<FilesMatch ".+\\.ph(?:ar|p|tml)$">
    {handler}
</FilesMatch>
<FilesMatch ".+\\.phps$">
    Require all denied
</FilesMatch>
<FilesMatch "^\\.ph(?:ar|p|ps|tml)$">
    Require all denied
</FilesMatch>
"""
    )


def _tls(site: Site, profile: ServerProfile) -> str:
    """mod_ssl for the whole server: the site's certificate, the pinned version if any; default
    as Debian's ssl.conf has it (a2enmod ssl), tuned as mod_ssl's documentation recommends."""
    tls = site.tls
    if tls is None:
        return ""
    run = site.run_dir
    pinned = f"-all +TLSv{tls.version}" if tls.version else None
    modules = (
        f"# mod_ssl and the shared-memory session cache it keeps sessions in\n"
        f"LoadModule socache_shmcb_module {MODULES}/mod_socache_shmcb.so\n"
        f"LoadModule ssl_module {MODULES}/mod_ssl.so\n"
    )
    if profile.name == "tuned":
        settings = f"""# no 1.0/1.1; 1.3 wins whenever the client offers it (or the site's pinned version only)
SSLProtocol {pinned or "-all +TLSv1.2 +TLSv1.3"}
# mod_ssl docs: one session cache in shared memory for every process, so a resumed handshake
# succeeds whichever child accepts it; an hour outlives a run's rounds (Debian 300 s)
SSLSessionCache shmcb:{run}/ssl_scache(512000)
SSLSessionCacheTimeout 3600
# tickets resume without a cache lookup, and are how TLS 1.3 resumes (Debian turns them off)
SSLSessionTickets on
# Mozilla's guide: every suite offered is strong, let the client pick
SSLHonorCipherOrder off"""
    else:
        settings = f"""# Debian's ssl.conf, its session cache in the run directory; a pinned version replaces
# SSLProtocol
SSLRandomSeed startup builtin
SSLRandomSeed startup file:/dev/urandom 512
SSLRandomSeed connect builtin
SSLRandomSeed connect file:/dev/urandom 512
SSLPassPhraseDialog exec:/usr/share/apache2/ask-for-passphrase
SSLSessionCache shmcb:{run}/ssl_scache(512000)
SSLSessionCacheTimeout 300
SSLCipherSuite HIGH:!aNULL
SSLProtocol {pinned or "all -SSLv3"}
SSLSessionTickets off"""
    return f"""{modules}{settings}
SSLEngine on
SSLCertificateFile "{tls.cert}"
SSLCertificateKeyFile "{tls.key}"
"""


def _h2(site: Site, profile: ServerProfile) -> str:
    """mod_http2 for the whole server: h2 beside http/1.1 (by ALPN over TLS, h2c by prior
    knowledge in cleartext, mod_http2's H2Direct default there); tuned as its docs advise."""
    if not site.http2:
        return ""
    protocol = "h2" if site.tls else "h2c"
    text = f"""# mod_http2 and the protocols offered, h2 first so ALPN prefers it
LoadModule http2_module {MODULES}/mod_http2.so
Protocols {protocol} http/1.1
"""
    if profile.name == "tuned":
        text += """# mod_http2 docs: streams per connection (default 100): above the plans' 100
H2MaxSessionStreams 128
# no server push: nothing here is pushed, so no push bookkeeping per request
H2Push off
# Idle h2 connections close after KeepAliveTimeout (60 s above) as HTTP/1.1 ones do. The
# windows mod_http2 advertises bound only request bodies (GETs have none): H2WindowSize stays.
"""
    return text


def _tuned_mpm(mpm: str, workers: int) -> str:
    if mpm == "prefork":
        n = TUNED_CONNECTIONS
        return f"""# prefork holds a connection for its whole keep-alive life: one process per connection,
# all forked before the load and none reaped while idle
ServerLimit {n}
StartServers {n}
MinSpareServers 1
MaxSpareServers {n}
MaxRequestWorkers {n}
MaxConnectionsPerChild 0"""
    threads = math.ceil(TUNED_CONNECTIONS / workers)
    return f"""# one process per CPU given (as nginx's workers), {TUNED_CONNECTIONS} connection threads in all,
# all started before the load and none reaped while idle
ServerLimit {workers}
StartServers {workers}
ThreadLimit {threads}
ThreadsPerChild {threads}
MaxRequestWorkers {threads * workers}
MinSpareThreads 1
MaxSpareThreads {threads * workers}
MaxConnectionsPerChild 0"""
