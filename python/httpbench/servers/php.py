"""PHP for a site that runs it: the php.ini every PHP of the suite reads (PHP-FPM's pool, mod_php
inside apache2), and the PHP-FPM pool the suite starts for a server that passes `.php` requests
to it over FastCGI (`Server.runs_php == "fastcgi"`).

Everything is rendered into the site's run directory (`Site.php_dir`): never /etc/php nor
Debian's php8.2-fpm service. PHP_INI_SCAN_DIR is set empty so Debian's conf.d is not read either;
the extensions a workload needs are loaded by our php.ini (opcache; the rest is built in).

The pool is started by `httpbench.servers.process.start` as a server of its own (its own session,
pinned to the site's CPUs, known to the watchdog), before the server and stopped after it. Its
processes count as the server's in the monitor, which also shows them apart.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Dict, List, Optional

from httpbench.servers.base import Config, Server, ServerProfile, Site
from httpbench.servers.php_install import FPM, FPM_PACKAGES

# The pool's files in Site.php_dir, named relative to the run directory as Config files are.
POOL_CONF = "php/php-fpm.conf"
PHP_INI = "php/php.ini"
POOL_LOG = "php/fpm.log"

# Tuned pool sizes, children per CPU given to the site.
# CPU-bound scripts (php-hello, php-page): a child is busy only while it computes, and waits on
# its FastCGI connection while the server reads and sends the answer; a few per CPU keep every CPU
# busy without the context switches and memory of hundreds.
CPU_BOUND_CHILDREN_PER_CPU = 4
# php-wait: a child sleeps 10 ms per request, so P children cap throughput at P / 10 ms. One CPU
# serves a few thousand such short pages a second here; 64 children (6,400 pages/s of waiting)
# keep that cap above what the CPU can do, so the CPU, not the pool, is what a tuned run measures.
WAITING_CHILDREN_PER_CPU = 64


def children(site: Site, profile: ServerProfile) -> int:
    """The pool's pm.max_children: Debian's 5 in default; sized to the CPUs and the workload in
    tuned."""
    if profile.name != "tuned":
        return 5
    per_cpu = WAITING_CHILDREN_PER_CPU if site.php == "php-wait" else CPU_BOUND_CHILDREN_PER_CPU
    return per_cpu * site.workers


def php_ini(site: Site, profile: ServerProfile) -> str:
    """php.ini for `site` in `profile`: Debian's production php.ini values that matter to a page
    being served (the rest are PHP's built-in defaults, the same), with errors logged to
    `site.php_log`; tuned adds what PHP's opcache documentation recommends for production."""
    tuned = ""
    if profile.name == "tuned":
        tuned = """
; tuned: the scripts never change during a run, so opcache need not stat each one per request
; (PHP's documentation: "recommended ... in production")
opcache.validate_timestamps = 0
; cache the paths PHP resolves for as long as a run lasts (default 120 s)
realpath_cache_ttl = 3600
"""
    return f"""; rendered by httpbench for profile {profile.name}: Debian's production php.ini where it matters
engine = On
short_open_tag = Off
output_buffering = 4096
implicit_flush = Off
zlib.output_compression = Off
expose_php = Off
max_execution_time = 30
memory_limit = 128M
error_reporting = E_ALL & ~E_DEPRECATED & ~E_STRICT
display_errors = Off
display_startup_errors = Off
log_errors = On
; a failing script's own words, which verification shows
error_log = {site.php_log}
variables_order = "GPCS"
request_order = "GP"
register_argc_argv = Off
default_charset = "UTF-8"
zend.assertions = -1
zend.exception_ignore_args = On
; Debian's conf.d/10-opcache.ini (not read here: PHP_INI_SCAN_DIR is empty): opcache on, no JIT
zend_extension = opcache
opcache.enable = 1
opcache.jit = off
{tuned}"""


def pool_conf(site: Site, profile: ServerProfile) -> str:
    """php-fpm.conf: the global section and one pool, listening on `site.php_socket`."""
    run = site.php_dir
    # php-fpm refuses to run a pool as root without -R; the pool then needs `user` (root, like
    # the servers the suite starts as root), and it reads the private run directory as they do.
    user = "user = root\ngroup = root\n" if os.geteuid() == 0 else ""
    if profile.name == "tuned":
        pool = f"""; tuned: a fixed pool, sized to the CPUs and the workload: no child forked or
; killed while a level is measured (pm = dynamic adds one a second as load grows)
pm = static
pm.max_children = {children(site, profile)}
; as many connections waiting for a free child as the server may send (default 511): past the
; backlog the server's connect fails and it answers 502
listen.backlog = 4096
"""
    else:
        pool = f"""; Debian's www.conf pool
pm = dynamic
pm.max_children = {children(site, profile)}
pm.start_servers = 2
pm.min_spare_servers = 1
pm.max_spare_servers = 3
"""
    return f"""; rendered by httpbench for profile {profile.name}: the suite's own PHP-FPM pool
[global]
pid = {run / "fpm.pid"}
; the master's messages go to its output, the file a failed start is explained from (php/fpm.log)
error_log = /proc/self/fd/2
daemonize = no
[www]
{user}listen = {site.php_socket}
; the server's workers connect whatever user they run as; the run directory is private anyway
listen.mode = 0666
{pool}"""


class PhpFpm(Server):
    """The PHP-FPM pool of a site, started like a server (not an adapter a plan names)."""

    name = "php-fpm"
    summary = "PHP-FPM, a FastCGI pool of PHP processes"
    packages = FPM_PACKAGES
    program = FPM

    def version(self) -> Optional[str]:
        """ "PHP 8.2.36 (fpm-fcgi)": its version line without the build date."""
        line = super().version()
        return line.split(" (built:", 1)[0] if line else None

    def render(self, site: Site, profile: ServerProfile) -> Config:
        return Config({POOL_CONF: pool_conf(site, profile), PHP_INI: php_ini(site, profile)})

    def command(self, site: Site, config_dir: Path) -> List[str]:
        command = [self.executable(), "--nodaemonize", "--fpm-config", str(config_dir / POOL_CONF)]
        command += ["-c", str(config_dir / PHP_INI)]
        return command + (["--allow-to-run-as-root"] if os.geteuid() == 0 else [])

    def environment(self, site: Site) -> Dict[str, str]:
        # Empty: no scan of Debian's conf.d, whose opcache line would load it twice.
        return {"PHP_INI_SCAN_DIR": ""}
