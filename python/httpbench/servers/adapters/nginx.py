"""nginx, from Debian's nginx-light (or nginx-core, nginx-full)."""

from __future__ import annotations

import signal
from pathlib import Path
from typing import List, Tuple

from httpbench.servers.base import Config, Server, ServerProfile, Site
from httpbench.servers.operations import Operation

BROTLI_STATIC = "/usr/lib/nginx/modules/ngx_http_brotli_static_module.so"
CONTROL = "https://nginx.org/en/docs/control.html"


class Nginx(Server):
    name = "nginx"
    summary = "nginx, event-driven, one master and N workers"
    packages = ("nginx-light", "libnginx-mod-http-brotli-static")
    program = "/usr/sbin/nginx"
    speaks_tls = True  # Debian builds every flavour with http_ssl_module
    # and http_v2_module: `listen ... ssl http2` offers h2 by ALPN; `listen ... http2` without ssl
    # is h2c by prior knowledge only (nginx 1.22 then answers no HTTP/1.1 on that port).
    speaks_h2 = True
    speaks_h2c = True
    runs_php = "fastcgi"  # the LEMP stack: `.php` requests to the suite's PHP-FPM pool
    # gzip_static (built into every Debian flavour) and brotli_static (Debian's
    # libnginx-mod-http-brotli-static): the copies beside the files, never compressed on the fly.
    tuned_codings = ("gzip", "br")
    coding_modules = {"br": (BROTLI_STATIC, "libnginx-mod-http-brotli-static")}
    # nginx's control signals (CONTROL): HUP re-reads the configuration, starts new workers and
    # has the old ones finish their requests and exit; a configuration the master refuses is
    # logged ([emerg]) and the old workers go on. USR1 reopens the log files, workers kept. No
    # graceful-restart: its "upgrading executable on the fly" (USR2) is ignored by a master whose
    # parent never changed (src/os/unix/ngx_process.c), as one run in the foreground never has.
    operations = {
        **Server.operations,
        "reload": Operation("reload", "SIGHUP to the master (nginx -s reload)", "kept", CONTROL),
        "reopen-logs": Operation("reopen-logs", "SIGUSR1 to the master (nginx -s reopen)", "kept", CONTROL, "kept"),
    }
    signals = {"reload": signal.SIGHUP, "reopen-logs": signal.SIGUSR1}

    def version_args(self) -> List[str]:
        return ["-v"]

    def render(self, site: Site, profile: ServerProfile) -> Config:
        return Config({"nginx.conf": render_conf(site, profile)})

    def command(self, site: Site, config_dir: Path) -> List[str]:
        # -e: nginx opens its built-in error log path before reading the config otherwise.
        return [
            self.executable(),
            "-p",
            str(config_dir),
            "-c",
            str(config_dir / "nginx.conf"),
            "-e",
            str(config_dir / "error.log"),
            "-g",
            "daemon off;",
        ]

    def logs(self, site: Site) -> Tuple[Path, ...]:
        return (site.run_dir / "error.log", site.run_dir / "access.log")


def render_conf(site: Site, profile: ServerProfile) -> str:
    run = site.run_dir
    listen = site.authority + (" ssl" if site.tls else "") + (" http2" if site.http2 else "")
    tls = _tls(site, profile) + _h2(site, profile) + _php(site, profile) + _static(site, profile)
    if profile.name == "tuned":
        main = f"""worker_processes {site.workers};              # one worker per core given (the 2016 write-up)
worker_rlimit_nofile 20000;               # connections are descriptors; 20,000 is the hard limit here
events {{
    worker_connections 10000;
    accept_mutex off;                     # with reuseport each worker has its own queue (the 2016 write-up)
    multi_accept on;                      # drain the accept queue at once under connection storms
}}"""
        http = f"""    access_log off;                       # every write-up turned logging off
    sendfile off;                         # costs 30% on tiny files (the 2016 write-up, measured here too)
    tcp_nopush off;
    tcp_nodelay on;
    keepalive_timeout 60s;                # the 2016 write-up's keep-alive settings (an idle client: 60 s)
    keepalive_requests 1024;
{_defences()}    open_file_cache max=100;              # the 2016 write-up: no open/stat per request
    etag off;                             # the 2016 write-up: one header less to compute and send
    server {{
        listen {listen} reuseport deferred backlog=4096;   # the 2016 write-up; deferred: accept once data arrived
        root {site.docroot};
{tls}    }}"""
    else:
        # Debian's nginx.conf, minus what would touch the system: its own pid, logs and temp dirs.
        main = """worker_processes auto;
events {
    worker_connections 768;
}"""
        http = f"""    sendfile on;
    tcp_nopush on;
    types_hash_max_size 2048;
    access_log {run}/access.log;
    gzip on;
    server {{
        listen {listen};
        root {site.docroot};
        index index.html index.htm;
{tls}    }}"""
    extra = "".join(f"    {line}\n" for line in profile.directives)
    return f"""# rendered by httpbench for profile {profile.name}
{_load_brotli(site, profile)}pid {run}/nginx.pid;
error_log {run}/error.log;
{"user root;" if _root() else ""}
{main}
http {{
    include /etc/nginx/mime.types;
    default_type application/octet-stream;
    client_body_temp_path {run}/client_body;
    proxy_temp_path {run}/proxy;
    fastcgi_temp_path {run}/fastcgi;
    uwsgi_temp_path {run}/uwsgi;
    scgi_temp_path {run}/scgi;
{http}
{extra}}}
"""


def _defences() -> str:
    """tuned's limits on slow clients, from ngx_http_core_module's docs
    (https://nginx.org/en/docs/http/ngx_http_core_module.html); each default is 60 s. 10 s is
    hundreds of times what a request on loopback takes, so only a stalled or trickling client meets
    it (docs/servers-defences.md)."""
    lines = [
        "# client_header_timeout: the whole request header must arrive within it, else 408 and close",
        "# (slowloris; for HTTP/2 too since 1.19.7, which made http2_recv_timeout obsolete)",
        "client_header_timeout 10s;",
        "# client_body_timeout: longest wait between two reads of a request body (a body stalled, not",
        "# one trickled: nginx has no minimum rate)",
        "client_body_timeout 10s;",
        "# send_timeout: longest wait between two writes of a response (a reader that stopped reading)",
        "send_timeout 10s;",
        "# reset_timedout_connection: a timed-out connection is reset, not closed, so its socket",
        "# buffers are freed at once instead of lingering in FIN_WAIT with unsent data",
        "reset_timedout_connection on;",
    ]
    return "".join(f"    {line}\n" for line in lines)


def _tls(site: Site, profile: ServerProfile) -> str:
    """The server block's TLS lines: the site's certificate, the pinned version if any, and in
    tuned what nginx's documentation recommends for throughput."""
    tls = site.tls
    if tls is None:
        return ""
    versions = " ".join(f"TLSv{v}" for v in sorted(tls.versions()))
    lines = [f"ssl_certificate {tls.cert};", f"ssl_certificate_key {tls.key};"]
    if profile.name == "tuned":
        why = "pinned by the site" if tls.version else "no 1.0/1.1; 1.3 wins whenever the client offers it"
        lines += [
            f"ssl_protocols {versions};  # {why}",
            "# nginx docs: one cache for all workers (about 40,000 sessions), so a resumed handshake",
            "# succeeds whichever worker accepts it (default: none); sessions outlive a run's rounds",
            "ssl_session_cache shared:SSL:10m;",
            "ssl_session_timeout 1h;",
            "ssl_session_tickets on;             # 1.3 resumption, stateless 1.2 resumption (the default, said)",
            "# nginx docs: small records for small responses; with the default 16k a client waits for a",
            "# whole record before it can read the first byte of a large response",
            "ssl_buffer_size 4k;",
            "ssl_prefer_server_ciphers off;      # Mozilla's guide: all suites offered are strong, let the client pick",
        ]
    else:
        # Debian's nginx.conf (its http block, here with the certificate): 1.0 and 1.1 are listed
        # but refused by OpenSSL 3's default security level; a pinned version replaces the list.
        debian = "TLSv1 TLSv1.1 TLSv1.2 TLSv1.3"
        lines += [f"ssl_protocols {f'TLSv{tls.version}' if tls.version else debian};", "ssl_prefer_server_ciphers on;"]
    return "".join(f"        {line}\n" for line in lines)


def _serves_copies(site: Site, profile: ServerProfile) -> bool:
    """Whether tuned serves this cell's coding from the copies: only a cell asking one renders
    the lines, so an identity cell pays no extra open() per request looking for a `.gz`."""
    return profile.name == "tuned" and site.encoding in Nginx.tuned_codings


def _load_brotli(site: Site, profile: ServerProfile) -> str:
    return f"load_module {BROTLI_STATIC};\n" if _serves_copies(site, profile) else ""


def _static(site: Site, profile: ServerProfile) -> str:
    """The server block's precompressed-file lines in tuned: ngx_http_gzip_static_module's docs
    (https://nginx.org/en/docs/http/ngx_http_gzip_static_module.html) serve `name.gz` to a client
    that accepts gzip, google/ngx_brotli's README `brotli_static on` serves `name.br` to one that
    accepts br; gzip_vary adds the Vary: Accept-Encoding its docs say a cache needs."""
    if not _serves_copies(site, profile):
        return ""
    lines = ["gzip_static on;", "brotli_static on;", "gzip_vary on;"]
    return "".join(f"        {line}\n" for line in lines)


def _h2(site: Site, profile: ServerProfile) -> str:
    """The server block's HTTP/2 lines in tuned, from ngx_http_v2_module's documentation; the
    default profile keeps nginx's own values."""
    if not site.http2 or profile.name != "tuned":
        return ""
    lines = [
        "http2_max_concurrent_streams 128;   # nginx's default, said: above the plans' 100 streams per connection",
        "# nginx docs: larger chunks, less framing overhead; 16k is the largest DATA frame the client",
        "# accepts without a SETTINGS_MAX_FRAME_SIZE of its own (default 8k: a 25 KB file in 4 frames)",
        "http2_chunk_size 16k;",
        "# an h2 connection carries all its streams' requests, and nginx ends it with GOAWAY after",
        "# keepalive_requests of them: 1,024 would be ten rounds of 100 streams (nginx 1.19.7+)",
        "keepalive_requests 100000;",
        "# the windows nginx advertises bound only request bodies (GETs have none): left as they are",
    ]
    return "".join(f"        {line}\n" for line in lines)


# What Debian's /etc/nginx/fastcgi_params (with snippets/fastcgi-php.conf's SCRIPT_FILENAME) tells
# PHP of a request, rendered here so the whole configuration is in the stored text.
_FASTCGI_PARAMS = (
    ("SCRIPT_FILENAME", "$document_root$fastcgi_script_name"),
    ("QUERY_STRING", "$query_string"),
    ("REQUEST_METHOD", "$request_method"),
    ("CONTENT_TYPE", "$content_type"),
    ("CONTENT_LENGTH", "$content_length"),
    ("SCRIPT_NAME", "$fastcgi_script_name"),
    ("REQUEST_URI", "$request_uri"),
    ("DOCUMENT_URI", "$document_uri"),
    ("DOCUMENT_ROOT", "$document_root"),
    ("SERVER_PROTOCOL", "$server_protocol"),
    ("REQUEST_SCHEME", "$scheme"),
    ("HTTPS", "$https if_not_empty"),
    ("GATEWAY_INTERFACE", "CGI/1.1"),
    ("SERVER_SOFTWARE", "nginx/$nginx_version"),
    ("REMOTE_ADDR", "$remote_addr"),
    ("REMOTE_PORT", "$remote_port"),
    ("SERVER_ADDR", "$server_addr"),
    ("SERVER_PORT", "$server_port"),
    ("SERVER_NAME", "$server_name"),
    ("REDIRECT_STATUS", "200"),  # PHP built with force-cgi-redirect wants it
)


def _php(site: Site, profile: ServerProfile) -> str:
    """The server block's PHP location, for a site that runs PHP: `.php` requests passed to the
    suite's PHP-FPM pool over its Unix socket, one FastCGI connection per request (nginx's
    default, in both profiles: an FPM child serves one connection at a time, so connections
    nginx kept open would hold children idle while requests queue for them)."""
    if site.php_socket is None:
        return ""
    lines = ["location ~ \\.php$ {", f"    fastcgi_pass unix:{site.php_socket};"]
    lines += [f"    fastcgi_param {name} {value};" for name, value in _FASTCGI_PARAMS]
    lines.append("}")
    return "".join(f"        {line}\n" for line in lines)


def _root() -> bool:
    import os

    return os.geteuid() == 0
