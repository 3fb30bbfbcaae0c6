"""Jetty 9.4, from Debian's jetty9, run from start.jar with a private jetty.base in the run
directory: Debian's start.ini and the document root deployed as a web application, served by
Jetty's DefaultServlet as Debian serves its own root webapp."""

from __future__ import annotations

import shutil
import zipfile
from pathlib import Path
from typing import List, Optional

from httpbench.servers.base import Config, Server, ServerProfile, Site, _run_quietly

HOME = Path("/usr/share/jetty9")


class Jetty9(Server):
    name = "jetty9"
    summary = "Jetty 9.4 on the JVM, NIO selectors and a thread pool, static files by DefaultServlet"
    packages = ("jetty9",)
    program = str(HOME / "start.jar")

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
        java = _run_quietly([shutil.which("java"), *self.version_args()]).strip().splitlines()
        return f"jetty {jetty}" + (f" on {java[0]}" if java else "")

    def render(self, site: Site, profile: ServerProfile) -> Config:
        return Config(
            {
                "base/start.ini": render_start_ini(site, profile),
                "base/webapps/root.xml": render_context(site),
                "jvm.args": render_jvm_args(site, profile),
            }
        )

    def command(self, site: Site, config_dir: Path) -> List[str]:
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


def render_start_ini(site: Site, profile: ServerProfile) -> str:
    if profile.name == "tuned":
        threads = max(16, 8 * site.workers)
        settings = f"""# Static files need none of Debian's jsp, jstl, websocket, ext, resources modules.
# No requestlog module: no request log (Debian enables none either).
--module=deploy,http
# the 2016 write-up's keep-alive of 60 s.
jetty.http.idleTimeout=60000
# The listen backlog (0, the default, means the JDK's 50).
jetty.http.acceptQueueSize=4096
# A fixed pool: no threads made or retired during a run; small, because serving a cached file
# never blocks, so more runnable threads than cores would only add context switches.
jetty.threadPool.minThreads={threads}
jetty.threadPool.maxThreads={threads}
jetty.threadPool.idleTimeout=60000
# Do not rescan webapps/ every second while measuring.
jetty.deploy.scanInterval=0
"""
    else:
        settings = """# Debian's /etc/jetty9/start.ini
--module=deploy,http,jsp,jstl,websocket,ext,resources
jetty.http.idleTimeout=30000
jetty.threadPool.minThreads=10
jetty.threadPool.maxThreads=200
jetty.threadPool.idleTimeout=60000
"""
    # start.ini has whole-line comments only; later lines win, so directives (properties, --module=...) go last.
    extra = "".join(f"{line}\n" for line in profile.directives)
    return f"""# rendered by httpbench for profile {profile.name}
jetty.http.host={site.host}
jetty.http.port={site.port}
{settings}{extra}"""


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
