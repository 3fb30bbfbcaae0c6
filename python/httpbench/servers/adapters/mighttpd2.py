"""Mighttpd2 4.0, from Debian's mighttpd2: a Haskell server on warp, one process whose threads run
on as many cores as GHC's runtime is given (`+RTS -N`; version 4 has no Worker_Processes)."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from typing import List, Optional

from httpbench.servers.base import Config, Server, ServerProfile, Site, SiteTLS
from httpbench.servers.process import ServerFailed


class Mighttpd2(Server):
    name = "mighttpd2"
    summary = "Mighttpd2 (Haskell, warp), one process, GHC threads on N cores"
    packages = ("mighttpd2",)
    program = "/usr/bin/mighty"
    # warp answers the HTTP/2 preface on a cleartext connection: h2c by prior knowledge, in both
    # profiles (checked on Debian 12's 4.0.2); h2 would need the TLS its build lacks.
    speaks_h2c = True

    def protocol_refusal(self, protocol: str) -> Optional[str]:
        if protocol == "h2":
            return "Debian's mighttpd2 is built without TLS, so it offers no h2 by ALPN; measure it over h2c"
        return super().protocol_refusal(protocol)

    def tls_refusal(self, tls: Optional[SiteTLS] = None) -> Optional[str]:
        # Checked on Debian 12's 4.0.2: with Service: 1 and the Tls_* settings, mighty stops at
        # start with "never reach" (src/Server.hs), the branch of a build without its tls flag.
        return (
            "Debian's mighttpd2 is built without TLS (asked for HTTPS, mighty stops with 'never reach'); "
            "measure it over http, or run a mighty built with its tls flag through the command adapter"
        )

    def version(self) -> Optional[str]:
        # mighty has no version option (with no arguments it serves the cwd on port 8080) and says
        # its version only in the Server header: ask the package database instead.
        if self.executable() is None:
            return None
        try:
            out = subprocess.run(
                ["dpkg-query", "-W", "-f=${Version}", "mighttpd2"], capture_output=True, text=True, timeout=20
            ).stdout.strip()
        except (OSError, subprocess.TimeoutExpired):
            out = ""
        return f"mighttpd2 {out}" if out else "mighttpd2 (not from a Debian package)"

    def render(self, site: Site, profile: ServerProfile) -> Config:
        if re.search(r"[\s,\[\]]", str(site.docroot)):
            # The routing file's grammar has no quoting: a path ends at a space, comma or bracket.
            raise ServerFailed(
                f"mighttpd2 cannot serve {site.docroot}: its routing file takes no path "
                "with spaces, commas or brackets; use another document root"
            )
        # GHC's runtime uses one core unless told: tuned gives it one capability per core (the 2016 write-up).
        # The runtime options are a file of their own because command() does not see the profile.
        rts = f"-N{site.workers}" if profile.name == "tuned" else ""
        return Config(
            {
                "mighty.conf": render_conf(site, profile),
                "mighty.route": f"# rendered by httpbench\n[*]\n/ -> {site.docroot}/\n",
                "mighty.rts": rts + "\n",
            }
        )

    def command(self, site: Site, config_dir: Path) -> List[str]:
        rts = (config_dir / "mighty.rts").read_text().split()
        return [
            self.executable(),
            str(config_dir / "mighty.conf"),
            str(config_dir / "mighty.route"),
            *(["+RTS", *rts, "-RTS"] if rts else []),
        ]


def render_conf(site: Site, profile: ServerProfile) -> str:
    # mighty takes the first line naming a field, so directives go first to override what follows.
    extra = "".join(f"{line}\n" for line in profile.directives)
    # Upstream's example.conf (Debian ships none), with what the suite must change: the foreground
    # (Debug_Mode, which also sends the access log to stdout, the suite's server.log), the address,
    # and files kept in the run directory, named relative to it (mighty's working directory)
    # because a value ends at the first space.
    conf = f"""# rendered by httpbench for profile {profile.name}
{extra}Port: {site.port}
Host: {site.host}
Debug_Mode: Yes
User: root
Group: root
Pid_File: mighty.pid
Report_File: mighty_report
Log_File: log
Index_File: index.html
{_connection_timeout(profile)}
Fd_Cache_Duration: 10
Logging: {"No  # every write-up turned logging off" if profile.name == "tuned" else "Yes"}
"""
    return conf


def _connection_timeout(profile: ServerProfile) -> str:
    """warp's one timeout (mighty's Connection_Timeout, example.conf's 30 s in default): warp's
    timeout manager sweeps every Connection_Timeout seconds and cuts a connection that stayed quiet
    from one sweep to the next, so after one to two periods; a trickle does not count as speech,
    since warp's slowloris guard (Network.Wai.Handler.Warp's setSlowlorisSize, 2048 bytes) resets
    the timer only for reads of that size. It is also the keep-alive idle time. tuned: 10 s, so a
    slowloris is cut within 20 s (measured: 20 s, default 60 s; bench/RESULTS.md, issue 28)."""
    if profile.name != "tuned":
        return "Connection_Timeout: 30"
    return "Connection_Timeout: 10  # a slowloris, and an idle keep-alive client, cut after 10-20 s (warp's timeout)"
