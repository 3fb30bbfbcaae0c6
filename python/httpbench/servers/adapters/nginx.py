"""nginx, from Debian's nginx-light (or nginx-core, nginx-full)."""

from __future__ import annotations

from pathlib import Path
from typing import List

from httpbench.servers.base import Config, Server, ServerProfile, Site


class Nginx(Server):
    name = "nginx"
    summary = "nginx, event-driven, one master and N workers"
    packages = ("nginx-light",)
    program = "/usr/sbin/nginx"

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


def render_conf(site: Site, profile: ServerProfile) -> str:
    run = site.run_dir
    listen = site.authority
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
    keepalive_timeout 60s;                # the 2016 write-up's keep-alive settings
    keepalive_requests 1024;
    open_file_cache max=100;              # the 2016 write-up: no open/stat per request
    etag off;                             # the 2016 write-up: one header less to compute and send
    server {{
        listen {listen} reuseport deferred backlog=4096;   # the 2016 write-up; deferred: accept once data arrived
        root {site.docroot};
    }}"""
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
    }}"""
    extra = "".join(f"    {line}\n" for line in profile.directives)
    return f"""# rendered by httpbench for profile {profile.name}
pid {run}/nginx.pid;
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


def _root() -> bool:
    import os

    return os.geteuid() == 0
