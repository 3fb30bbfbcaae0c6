"""nghttpd 1.52, from Debian's nghttp2-server: nghttp2's own server, a reference implementation of
HTTP/2 (RFC 9113, HPACK), one event loop per worker thread. It speaks HTTP/2 only: over TLS it
offers only "h2" by ALPN, in cleartext (`--no-tls`) h2c by prior knowledge, so it serves sites
that offer HTTP/2 and nothing else.

Debian ships no configuration for it: its whole configuration is its command line, rendered one
argument per line with comments (`nghttpd.args`) and read back from there, so the stored config
says exactly how it ran. Profile directives are extra arguments, e.g. `--max-concurrent-streams=256`.
"""

from __future__ import annotations

from pathlib import Path
from typing import List, Optional

from httpbench.servers.base import Config, Server, ServerProfile, Site, SiteTLS, read_args

ARGS = "nghttpd.args"


class Nghttpd(Server):
    name = "nghttpd"
    summary = "nghttpd, nghttp2's reference HTTP/2 server, an event loop per thread; HTTP/2 only"
    packages = ("nghttp2-server",)
    program = "/usr/sbin/nghttpd"
    speaks_tls = True  # OpenSSL 3, the key and certificate as arguments
    speaks_http1 = False
    speaks_h2 = True
    speaks_h2c = True

    def tls_refusal(self, tls: Optional[SiteTLS] = None) -> Optional[str]:
        if tls is not None and tls.version:
            # Checked: it sets its own range (1.2 to 1.3) over an OPENSSL_CONF that pins one.
            return (
                f"nghttpd cannot be pinned to TLS {tls.version}: it has no version setting and overrides OpenSSL's; "
                "measure it without a pinned version"
            )
        return None

    def version_args(self) -> List[str]:
        return ["--version"]

    def render(self, site: Site, profile: ServerProfile) -> Config:
        lines = [
            f"# rendered by httpbench for profile {profile.name}",
            f"--address={site.host}",
            f"--htdocs={site.docroot}",
            "# a worker thread per CPU given (nghttpd's default is one, whatever the machine)",
            f"--workers={site.workers}",
        ]
        if profile.name == "tuned":
            lines += [
                "# nghttpd's default, said: 100 streams per connection, the most any plan opens (h2load's -m 100)",
                "--max-concurrent-streams=100",
                "# The windows it advertises bound only request bodies (GETs have none): left at 64 KB.",
                "# Responses go as fast as the client's windows allow, in DATA frames of up to 16 KB.",
                "# No timeouts to set against slow or idle clients: nghttpd has none (docs/servers-defences.md).",
            ]
        if site.tls is None:
            lines += ["# h2c: HTTP/2 by prior knowledge, no TLS", "--no-tls"]
        lines += list(profile.directives)
        lines.append(str(site.port))
        if site.tls is not None:
            lines += [str(site.tls.key), str(site.tls.cert)]
        return Config({ARGS: "\n".join(lines) + "\n"})

    def command(self, site: Site, config_dir: Path) -> List[str]:
        return [self.executable(), *read_args(config_dir / ARGS)]
