"""Varnish Cache, from Debian's varnish, in front of the nginx adapter (as the 2016 and 2011
write-ups ran it).

Varnish without VCL is configured entirely by its command line, so the rendered "configuration"
is that command line, one argument per line with comments (`varnishd.args`); the command is read
back from it, and the stored config says exactly how varnishd ran. Profile directives are extra
varnishd arguments, e.g. `-p thread_pool_max=1000`.
"""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import List

from httpbench.servers.adapters.nginx import Nginx
from httpbench.servers.base import Config, Server, ServerProfile, Site

ARGS = "varnishd.args"


class Varnish(Server):
    name = "varnish"
    summary = "Varnish Cache, malloc storage, in front of nginx"
    packages = ("varnish", "nginx-light")
    program = "/usr/sbin/varnishd"

    def version_args(self) -> List[str]:
        return ["-V"]

    def backend(self) -> Server:
        return Nginx()

    def render(self, site: Site, profile: ServerProfile) -> Config:
        listen = site.authority
        lines = [
            f"# rendered by httpbench for profile {profile.name}",
            f"-a {listen}",
            "# the nginx backend, started first",
            f"-b {site.upstream}",
            "# working directory and shared-memory log in the run dir",
            f"-n {site.run_dir / 'varnish'}",
            "# in memory (the 2011 write-up used a file; the workload files are tiny)",
            "-s malloc,64m",
            "# no management port left open",
            "-T none",
            "# Both profiles: on (the default), varnish asks nginx for gzip, keeps the compressed",
            "# copy and gunzips it for every client that sent no Accept-Encoding; a miss then goes",
            "# out chunked, without Content-Length, and fails verification.",
            "-p http_gzip_support=off",
        ]
        if profile.name == "tuned":
            workers = site.workers
            lines += [
                "# one pool per core given, as other servers have a worker per core (the 2016 write-up)",
                f"-p thread_pools={workers}",
                "# a thread per in-flight request: start enough for the 2016 write-up's 1,000 connections, so",
                "# none is created during a measured ramp (about 10 MB more resident)",
                f"-p thread_pool_min={max(100, 1000 // workers)}",
                "# the 2016 write-up's 60 s keep-alive (default 5 s)",
                "-p timeout_idle=60",
                "# the listen backlog of the other tuned servers (default 1024)",
                "-p listen_depth=4096",
            ]
        lines += list(profile.directives)
        return Config({ARGS: "\n".join(lines) + "\n"})

    def command(self, site: Site, config_dir: Path) -> List[str]:
        return [self.executable(), "-F", *read_args(config_dir / ARGS)]


def read_args(path: Path) -> List[str]:
    """The arguments in an args file: shell words, `#` starting a comment."""
    return shlex.split(path.read_text(), comments=True)
