"""Caddy 2.6, from Debian's caddy: Go, one process, goroutine per connection. Profile directives
are extra lines in the site block of the Caddyfile, e.g. `header -Server`."""

from __future__ import annotations

from pathlib import Path
from typing import Dict, List

from httpbench.servers.base import Config, Server, ServerProfile, Site


class Caddy(Server):
    name = "caddy"
    summary = "Caddy, Go, goroutine per connection"
    packages = ("caddy",)
    program = "/usr/bin/caddy"

    def version_args(self) -> List[str]:
        return ["version"]

    def render(self, site: Site, profile: ServerProfile) -> Config:
        servers = ""
        if profile.name == "tuned":
            servers = """
	# the 2016 write-up's 60 s keep-alive (default 5 min)
	servers {
		timeouts {
			idle 60s
		}
	}"""
        # Caddy writes no access log without a `log` directive, and compresses nothing without
        # `encode`: both profiles serve plain files and log only its own start and stop.
        extra = "".join(f"\t{line}\n" for line in profile.directives)
        return Config(
            {
                "Caddyfile": f"""# rendered by httpbench for profile {profile.name}
{{
	# no admin endpoint on :2019; plain HTTP, no certificates to fetch or store
	admin off
	auto_https off{servers}
}}

# Debian's Caddyfile: a file server, nothing else
http://:{site.port} {{
	bind {site.host}
	root * {site.docroot}
	file_server
{extra}}}
"""
            }
        )

    def command(self, site: Site, config_dir: Path) -> List[str]:
        return [self.executable(), "run", "--config", str(config_dir / "Caddyfile"), "--adapter", "caddyfile"]

    def environment(self, site: Site) -> Dict[str, str]:
        run = site.run_dir
        # Caddy keeps its data (certificates, autosave.json) under these; keep them in the run dir.
        env = {"HOME": str(run), "XDG_DATA_HOME": str(run / "data"), "XDG_CONFIG_HOME": str(run / "config")}
        if site.cpus:
            # One OS thread running Go code per core given. Go already picks this from the CPU
            # affinity mask, so default is unchanged; said here so the stored setting is explicit.
            env["GOMAXPROCS"] = str(len(site.cpus))
        return env
