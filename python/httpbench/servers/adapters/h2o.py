"""h2o 2.2, from Debian's h2o: event-driven, one process with N threads. Profile directives are
extra top-level lines of h2o.conf (YAML), e.g. `http1-upgrade-to-http2: OFF`."""

from __future__ import annotations

import os
from pathlib import Path
from typing import List

from httpbench.servers.base import Config, Server, ServerProfile, Site


class H2o(Server):
    name = "h2o"
    summary = "h2o, event-driven, one process with a thread per core"
    packages = ("h2o",)
    program = "/usr/bin/h2o"

    def version_args(self) -> List[str]:
        return ["--version"]

    def render(self, site: Site, profile: ServerProfile) -> Config:
        run = site.run_dir
        if profile.name == "tuned":
            settings = f"""num-threads: {site.workers}                    # a thread per core given (the 2016 write-up)
max-connections: 10000            # default 1024 stops accepting short of the 2016 write-up's 1,000+ connections
http1-request-timeout: 60         # also the keep-alive idle timeout: the 2016 write-up's 60 s (default 10)
file.etag: OFF                    # as nginx's etag off (the 2016 write-up): one header less
file.send-compressed: OFF         # plain files, like every other server (the default too)
compress: OFF                     # and no gzip on the fly (the default too)"""
            log = ""  # no access log: every write-up turned logging off
            status = ""
        else:
            # Debian's h2o.conf (threads: one per online CPU), logs in the run dir.
            settings = 'server-name: "h2o (Debian)"'
            log = f"access-log: {run}/access.log\n"
            status = "\n      /server-status:\n        status: ON"
        listen = f"""listen:
  host: {site.host}
  port: {site.port}"""
        extra = "".join(f"{line}\n" for line in profile.directives)
        return Config(
            {
                "h2o.conf": f"""# rendered by httpbench for profile {profile.name}
{settings}
{_user()}error-log: {run}/error.log
{log}pid-file: {run}/h2o.pid
{listen}
hosts:
  default:
    paths:
      /:
        file.dir: {site.docroot}{status}
{extra}"""
            }
        )

    def command(self, site: Site, config_dir: Path) -> List[str]:
        return [self.executable(), "-c", str(config_dir / "h2o.conf")]


def _user() -> str:
    # As root h2o switches to `user` before writing its pid file and serving; Debian's
    # debian-h2o could enter neither the private run dir nor the document root.
    return "user: root\n" if os.geteuid() == 0 else ""
