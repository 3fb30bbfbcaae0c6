"""Caddy 2.6, from Debian's caddy: Go, one process, goroutine per connection. Profile directives
are extra lines in the site block of the Caddyfile, e.g. `header -Server`."""

from __future__ import annotations

from pathlib import Path
from typing import Dict, List, Optional, Tuple

from httpbench.servers.base import Config, Server, ServerProfile, Site
from httpbench.servers.operations import Operation, command_refusal

# Caddy's reload (https://caddyserver.com/docs/command-line#caddy-reload): the configuration file
# adapted and posted to the running Caddy's admin endpoint, which starts the new configuration's
# servers and stops the old ones gracefully, in the same process; a configuration it refuses
# leaves the old one running. --force reloads an unchanged file too (a renewed certificate, or a
# reload on a schedule), as Debian's caddy.service does. Caddy has no signal for it, nor for
# reopening logs (https://caddyserver.com/docs/command-line#signals: its logs roll themselves).
RELOAD = "https://caddyserver.com/docs/command-line#caddy-reload"
ADMIN_SOCKET = "admin.sock"


class Caddy(Server):
    name = "caddy"
    summary = "Caddy, Go, goroutine per connection"
    packages = ("caddy",)
    program = "/usr/bin/caddy"
    speaks_tls = True  # with the suite's certificate from files: no ACME, no certificate storage
    # Over TLS Caddy offers h2 by ALPN by default; h2c by prior knowledge once `protocols` lists it.
    speaks_h2 = True
    speaks_h2c = True
    runs_php = "fastcgi"
    tuned_codings = ("br", "gzip")  # file_server's precompressed sidecar files
    operations = {
        **Server.operations,
        "reload": Operation("reload", "caddy reload --force through its admin socket", "kept", RELOAD),
    }

    def operate(self, action: str, site: Site, pid: int) -> Optional[str]:
        config = ["--config", str(site.run_dir / "Caddyfile"), "--adapter", "caddyfile"]
        address = ["--address", f"unix/{site.run_dir / ADMIN_SOCKET}"]
        return command_refusal([self.executable(), "reload", *config, *address, "--force"], self.environment(site))

    def version_args(self) -> List[str]:
        return ["version"]

    def render(self, site: Site, profile: ServerProfile) -> Config:
        settings = []
        if profile.name == "tuned":
            settings += [
                "# Go's http.Server timeouts, as Caddy's global options name them",
                "# (https://caddyserver.com/docs/caddyfile/options#timeouts); 10 s is hundreds of times",
                "# what a request on loopback takes (docs/servers-defences.md)",
                "timeouts {",
                "\t# the whole request header within 10 s (slowloris; default none)",
                "\tread_header 10s",
                "\t# the whole request, body included, within 10 s (a trickled body; default none)",
                "\tread_body 10s",
                "\t# a response written within 30 s from its request's end (a slow reader; default none)",
                "\twrite 30s",
                "\t# the 2016 write-up's 60 s keep-alive (default 5 min): how long an idle client holds on",
                "\tidle 60s",
                "}",
            ]
            if site.http2:
                settings += [
                    "# Caddy 2.6 has no HTTP/2 settings of its own: Go's server allows 250 streams per",
                    "# connection (above the plans' 100), and its windows bound only request bodies",
                ]
        if site.http2 and site.tls is None:
            settings += ["# h2c by prior knowledge beside HTTP/1.1 (Caddy's default is h1 h2 h3)", "protocols h1 h2c"]
        servers = ""
        if settings:
            servers = "\n\tservers {\n" + "".join(f"\t\t{line}\n" for line in settings) + "\t}"
        # Caddy writes no access log without a `log` directive, and compresses nothing without
        # `encode`: both profiles serve plain files and log only its own start and stop.
        extra = "".join(f"\t{line}\n" for line in profile.directives)
        scheme, tls = _tls(site, profile)
        php = _php(site)
        return Config(
            {
                "Caddyfile": f"""# rendered by httpbench for profile {profile.name}
{{
	# the admin endpoint on a Unix socket of the run directory, not :2019: what `caddy reload`
	# posts to; no certificates to fetch or store, no redirects: HTTPS, if any, is the site's
	# own certificate only
	admin unix/{site.run_dir / ADMIN_SOCKET}
	auto_https off{servers}
}}

# Debian's Caddyfile: a file server, nothing else
{scheme}://:{site.port} {{
	bind {site.host}
	root * {site.docroot}
{php}	file_server{_precompressed(site, profile)}
{tls}{extra}}}
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


def _precompressed(site: Site, profile: ServerProfile) -> str:
    """tuned, for a cell asking a coding: file_server serves the sidecar files beside each file
    (https://caddyserver.com/docs/caddyfile/directives/file_server, `precompressed br gzip`: the
    order is the preference when a client accepts both), never compressing on the fly."""
    if profile.name != "tuned" or site.encoding not in Caddy.tuned_codings:
        return ""
    return " {\n\t\t# the suite's name.br and name.gz copies, br first\n\t\tprecompressed br gzip\n\t}"


def _php(site: Site) -> str:
    """`.php` to the suite's PHP-FPM pool, the same in both profiles: php_fastcgi as Caddy's docs
    give it, which has no settings that matter here."""
    if not site.php:
        return ""
    return (
        "\t# the suite's PHP-FPM pool. php_fastcgi also sends a path naming no file to /index.php (a\n"
        "\t# front controller): the workloads' URLs name their scripts, so each runs as named\n"
        f"\tphp_fastcgi unix/{site.php_socket}\n"
    )


def _tls(site: Site, profile: ServerProfile) -> Tuple[str, str]:
    """The site address's scheme and its `tls` directive: the site's certificate from files, the
    pinned version if any."""
    tls = site.tls
    if tls is None:
        return "http", ""
    versions = tls.versions()
    text = f"\ttls {tls.cert} {tls.key} {{\n\t\tprotocols tls{min(versions)} tls{max(versions)}\n"
    if profile.name == "tuned":
        text += (
            "\t\t# Caddy's defaults already are what its docs recommend for throughput: session tickets\n"
            "\t\t# (keys rotated every 12 h), X25519 first, and unpinned, 1.3 whenever the client offers it\n"
        )
    return "https", text + "\t}\n"
