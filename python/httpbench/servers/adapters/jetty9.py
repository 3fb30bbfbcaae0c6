"""Jetty 9.4, from Debian's jetty9, run from start.jar with a private jetty.base in the run
directory: Debian's start.ini and the document root deployed as a web application, served by
Jetty's DefaultServlet as Debian serves its own root webapp.

HTTPS: Jetty's ssl and https modules in place of http, the site's certificate and key converted
to the PKCS#12 keystore Jetty 9.4 reads (it reads no PEM), made in the run directory at start."""

from __future__ import annotations

import shutil
import zipfile
from pathlib import Path
from typing import List, Optional

from httpbench.certificates import write_private
from httpbench.servers.base import Config, Server, ServerProfile, Site, SiteTLS, run_quietly

HOME = Path("/usr/share/jetty9")
KEYSTORE = "keystore.p12"
PINNED_VERSION_XML = "etc/tls-version.xml"
SLOW_CLIENTS_XML = "etc/slow-clients.xml"
# The keystore holds the suite's throwaway key; Jetty insists on a password for it.
KEYSTORE_PASSWORD = "httpbench"


class Jetty9(Server):
    name = "jetty9"
    summary = "Jetty 9.4 on the JVM, NIO selectors and a thread pool, static files by DefaultServlet"
    packages = ("jetty9",)
    program = str(HOME / "start.jar")
    speaks_tls = True  # the JDK's TLS (JSSE), with Jetty's ssl module
    # Jetty's http2 module (h2 by ALPN, the JDK's own ALPN since Java 9) beside https, and its
    # http2c module (prior knowledge beside HTTP/1.1) on the http connector
    speaks_h2 = True
    speaks_h2c = True

    def installed(self) -> bool:
        return super().installed() and shutil.which("java") is not None

    def version_args(self) -> List[str]:
        return ["-version"]  # java's own; Jetty's version is read from start.jar's manifest

    def version(self) -> Optional[str]:
        if not self.installed():
            return None
        try:
            with zipfile.ZipFile(self.program) as jar:
                manifest = jar.read("META-INF/MANIFEST.MF").decode(errors="replace")
        except (OSError, KeyError, zipfile.BadZipFile):
            return None
        jetty = next(
            (
                line.split(":", 1)[1].strip()
                for line in manifest.splitlines()
                if line.startswith("Implementation-Version:")
            ),
            "unknown",
        )
        java = run_quietly([shutil.which("java"), *self.version_args()]).strip().splitlines()
        return f"jetty {jetty}" + (f" on {java[0]}" if java else "")

    def render(self, site: Site, profile: ServerProfile) -> Config:
        files = {
            "base/start.ini": render_start_ini(site, profile),
            "base/webapps/root.xml": render_context(site),
            "jvm.args": render_jvm_args(site, profile),
        }
        if site.tls is not None and site.tls.version:
            files[f"base/{PINNED_VERSION_XML}"] = render_pinned_version(site.tls.version)
        if profile.name == "tuned":
            files[f"base/{SLOW_CLIENTS_XML}"] = SLOW_CLIENTS
        return Config(files)

    def command(self, site: Site, config_dir: Path) -> List[str]:
        if site.tls is not None:
            write_keystore(site.tls, config_dir / KEYSTORE)
        # JVM options come from an argument file rather than start.ini's --exec, which would fork
        # a second JVM and leave the first one idling beside the server.
        return [
            shutil.which("java"),
            f"@{config_dir / 'jvm.args'}",
            "-jar",
            self.program,
            f"jetty.home={HOME}",
            f"jetty.base={config_dir / 'base'}",
        ]


def write_keystore(tls: SiteTLS, path: Path) -> None:
    """The site's key and certificate as a PKCS#12 keystore, readable by its owner only."""
    from cryptography.hazmat.primitives.serialization import BestAvailableEncryption, load_pem_private_key, pkcs12
    from cryptography.x509 import load_pem_x509_certificate

    key = load_pem_private_key(tls.key.read_bytes(), None)
    cert = load_pem_x509_certificate(tls.cert.read_bytes())
    encryption = BestAvailableEncryption(KEYSTORE_PASSWORD.encode())
    write_private(path, pkcs12.serialize_key_and_certificates(b"server", key, cert, None, encryption))


def render_start_ini(site: Site, profile: ServerProfile) -> str:
    # Over HTTPS the ssl connector takes the http one's place, and its properties' prefix.
    connector = "ssl" if site.tls else "http"
    modules = "ssl,https" if site.tls else "http"
    if site.http2:
        modules += ",http2" if site.tls else ",http2c"
    if profile.name == "tuned":
        threads = max(16, 8 * site.workers)
        settings = f"""# Static files need none of Debian's jsp, jstl, websocket, ext, resources modules.
# No requestlog module: no request log (Debian enables none either).
--module=deploy,{modules}
# the 2016 write-up's keep-alive of 60 s. Also Jetty's limit on a client that stalls (its docs: the
# time without progress, reset by every byte either way), so a trickle is never cut by it; Jetty's
# selectors hold no thread for a connection still sending its header (docs/servers-defences.md).
jetty.{connector}.idleTimeout=60000
# A trickled body and a slow reader: minimum data rates ({SLOW_CLIENTS_XML}).
{SLOW_CLIENTS_XML}
# The listen backlog (0, the default, means the JDK's 50).
jetty.{connector}.acceptQueueSize=4096
# A fixed pool: no threads made or retired during a run; small, because serving a cached file
# never blocks, so more runnable threads than cores would only add context switches.
jetty.threadPool.minThreads={threads}
jetty.threadPool.maxThreads={threads}
jetty.threadPool.idleTimeout=60000
# Do not rescan webapps/ every second while measuring.
jetty.deploy.scanInterval=0
"""
    else:
        settings = f"""# Debian's /etc/jetty9/start.ini
--module=deploy,{modules},jsp,jstl,websocket,ext,resources
jetty.{connector}.idleTimeout=30000
jetty.threadPool.minThreads=10
jetty.threadPool.maxThreads=200
jetty.threadPool.idleTimeout=60000
"""
    if site.http2 and profile.name == "tuned":
        h2, streams = ("http2", 128) if site.tls else ("http2c", 1024)
        settings += f"""# Jetty's HTTP/2 defaults, said, already suit a static load: {streams} streams per connection,
# above the plans' 100, and receive windows that bound only request bodies (GETs have none).
# Its rate control counts pings and bad frames, not requests: 128 a second is left as it is.
jetty.{h2}.maxConcurrentStreams={streams}
"""
    # start.ini has whole-line comments only; later lines win, so directives (properties, --module=...) go last.
    extra = "".join(f"{line}\n" for line in profile.directives)
    return f"""# rendered by httpbench for profile {profile.name}
jetty.{connector}.host={site.host}
jetty.{connector}.port={site.port}
{settings}{_tls(site, profile)}{extra}"""


def _tls(site: Site, profile: ServerProfile) -> str:
    """The ssl module's keystore (made by write_keystore), and a pinned version as an XML file of
    its own (Jetty 9.4 has no property for it)."""
    if site.tls is None:
        return ""
    keystore = site.run_dir / KEYSTORE
    text = f"""# the site's certificate, as the PKCS#12 keystore httpbench writes at start
jetty.sslContext.keyStoreType=PKCS12
jetty.sslContext.keyStoreAbsolutePath={keystore}
jetty.sslContext.keyStorePassword={KEYSTORE_PASSWORD}
jetty.sslContext.keyManagerPassword={KEYSTORE_PASSWORD}
# no client certificates are asked for, but Jetty opens a trust store all the same
jetty.sslContext.trustStoreType=PKCS12
jetty.sslContext.trustStoreAbsolutePath={keystore}
jetty.sslContext.trustStorePassword={KEYSTORE_PASSWORD}
"""
    if site.tls.version:
        text += f"# pinned by the site: TLS {site.tls.version} only\n{PINNED_VERSION_XML}\n"
    if profile.name == "tuned":
        text += """# The JDK's session cache (20,480 sessions for 24 h) and its TLS 1.3 tickets already outlast
# any run, and 1.3 wins whenever the client offers it: nothing to change for throughput.
"""
    return text


# HttpConfiguration's minimum data rates (Jetty 9.4's javadoc, setMinRequestDataRate and
# setMinResponseDataRate; no start property sets them): a request body, or a response, that moves
# slower than 500 bytes a second on average ends its connection, as apache's mod_reqtimeout MinRate.
SLOW_CLIENTS = """<?xml version="1.0"?>
<!DOCTYPE Configure PUBLIC "-//Jetty//Configure//EN" "https://jetty.org/configure_9_3.dtd">
<!-- tuned: the connectors' HttpConfiguration (jetty.xml's httpConfig) cuts a client whose request
     body or response moves slower than 500 bytes a second on average. -->
<Configure id="httpConfig" class="org.eclipse.jetty.server.HttpConfiguration">
  <Set name="minRequestDataRate">500</Set>
  <Set name="minResponseDataRate">500</Set>
</Configure>
"""


def render_pinned_version(version: str) -> str:
    return f"""<?xml version="1.0"?>
<!DOCTYPE Configure PUBLIC "-//Jetty//Configure//EN" "https://jetty.org/configure_9_3.dtd">
<!-- The ssl module's context factory (jetty-ssl-context.xml), held to the site's pinned version. -->
<Configure id="sslContextFactory" class="org.eclipse.jetty.util.ssl.SslContextFactory$Server">
  <Set name="IncludeProtocols"><Array type="String"><Item>TLSv{version}</Item></Array></Set>
</Configure>
"""


def render_context(site: Site) -> str:
    return f"""<?xml version="1.0"?>
<!DOCTYPE Configure PUBLIC "-//Jetty//Configure//EN" "https://jetty.org/configure_9_3.dtd">
<!-- The document root as the root web application; its DefaultServlet comes from webdefault.xml. -->
<Configure class="org.eclipse.jetty.webapp.WebAppContext">
  <Set name="contextPath">/</Set>
  <Set name="war">{site.docroot}</Set>
</Configure>
"""


def render_jvm_args(site: Site, profile: ServerProfile) -> str:
    text = f"""# rendered by httpbench for profile {profile.name}; java reads this file (@argfile)
-Djava.awt.headless=true          # Debian's JAVA_OPTS
"-Djava.io.tmpdir={site.run_dir}"   # start.jar's and the webapp's temporary files stay in the run directory
"""

    if profile.name == "tuned":
        text += f"""-XX:ActiveProcessorCount={site.workers}   # GC, JIT and Jetty's selectors sized to the cores given
-XX:+UseParallelGC                # the throughput collector, at any core count (alone, the JVM picks Serial)
-Xms512m                          # a fixed heap: no resizing while measuring
-Xmx512m
"""
    return text
