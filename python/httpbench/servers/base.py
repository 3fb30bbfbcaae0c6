"""What a server adapter is: one small interface every server under test implements.

An adapter knows four things about its server: whether it is installed (and its version), how
to render its configuration for a profile, the command that runs it in the foreground, and
(rarely) which other server it fronts. Starting, pinning, readiness, stopping and cleaning up
are the same for every server and live in `httpbench.servers.process`.
"""

from __future__ import annotations

import shutil
import subprocess
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar, Dict, List, Optional, Tuple

PROFILES = ("default", "tuned")


@dataclass(frozen=True)
class ServerProfile:
    """How a server is configured. `default`: the distribution's out-of-the-box settings,
    changed only where the suite must (port, document root, pid and log paths); `tuned`: what the
    write-ups and the server's own documentation recommend for small static files."""

    name: str = "default"
    # Extra configuration lines, added where the adapter says (e.g. nginx's http block).
    directives: Tuple[str, ...] = ()
    # A whole configuration file replacing the rendered one; `{port}`, `{host}`, `{docroot}`,
    # `{run_dir}`, `{workers}` and `{upstream}` (a fronted origin's host:port) are filled in.
    config_file: Optional[Path] = None

    def __post_init__(self) -> None:
        if self.name not in PROFILES:
            raise ValueError(f"profile {self.name!r} is not one of {', '.join(PROFILES)}")


@dataclass(frozen=True)
class Site:
    """Where and how one server instance runs."""

    docroot: Path
    run_dir: Path
    port: int
    host: str = "127.0.0.1"
    # CPUs the whole process tree is pinned to; tuned profiles use one worker per CPU.
    cpus: Tuple[int, ...] = ()
    # For a server that fronts another (varnish, trafficserver): the origin's "host:port".
    upstream: Optional[str] = None

    @property
    def workers(self) -> int:
        return max(1, len(self.cpus))

    @property
    def address(self) -> str:
        """The host as URLs and most configs write it: an IPv6 address in brackets."""
        return f"[{self.host}]" if ":" in self.host else self.host

    @property
    def authority(self) -> str:
        return f"{self.address}:{self.port}"

    @property
    def url(self) -> str:
        return f"http://{self.authority}/"


@dataclass
class Config:
    """A rendered configuration: files to write into the run directory, the main one first.
    Its text is stored with every result."""

    files: Dict[str, str] = field(default_factory=dict)

    @property
    def main(self) -> str:
        return next(iter(self.files))

    @property
    def text(self) -> str:
        if len(self.files) == 1:
            return next(iter(self.files.values()))
        return "\n".join(f"# ---- {name}\n{text}" for name, text in self.files.items())


class Server(ABC):
    """One server under test, as Debian packages it."""

    name: ClassVar[str]
    summary: ClassVar[str]
    # Debian packages that install it; `httpbench servers install NAME` installs these.
    packages: ClassVar[Tuple[str, ...]] = ()
    # The program to look for on PATH (or an absolute path) to tell whether it is installed.
    program: ClassVar[str]

    def executable(self) -> Optional[str]:
        return shutil.which(self.program) or (self.program if Path(self.program).is_file() else None)

    def installed(self) -> bool:
        return self.executable() is not None

    def install_command(self) -> str:
        return "apt-get install -y " + " ".join(self.packages)

    def version(self) -> Optional[str]:
        """The server's own version line, or None when it is not installed."""
        exe = self.executable()
        if exe is None:
            return None
        out = _run_quietly([exe, *self.version_args()])
        return out.strip().splitlines()[0] if out.strip() else None

    def version_args(self) -> List[str]:
        return ["-v"]

    @abstractmethod
    def render(self, site: Site, profile: ServerProfile) -> Config:
        """The configuration files for `site` in `profile`."""

    @abstractmethod
    def command(self, site: Site, config_dir: Path) -> List[str]:
        """The command that runs the server in the foreground with the rendered configuration
        (already written into `config_dir`)."""

    def backend(self) -> Optional["Server"]:
        """A server this one fronts (a cache in front of an origin), started first on its own
        port; None for a server that serves files itself."""
        return None

    def environment(self, site: Site) -> Dict[str, str]:
        """Extra environment variables for the server's process."""
        return {}


def _run_quietly(cmd: List[str]) -> str:
    """Output of a short command (a version query), stdout and stderr together."""
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return (done.stdout or "") + (done.stderr or "")


def fill(template: str, site: Site) -> str:
    """A user's whole config file with the site's values put in."""
    return (
        template.replace("{port}", str(site.port))
        .replace("{host}", site.host)
        .replace("{docroot}", str(site.docroot))
        .replace("{run_dir}", str(site.run_dir))
        .replace("{workers}", str(site.workers))
        .replace("{upstream}", site.upstream or "")
    )
