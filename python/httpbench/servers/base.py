"""What a server adapter is: one small interface every server under test implements.

An adapter knows four things about its server: whether it is installed (and its version), how
to render its configuration for a profile, the command that runs it in the foreground, and
(rarely) which other server it fronts. Starting, pinning, readiness, stopping and cleaning up
are the same for every server and live in `httpbench.servers.process`.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar, Dict, List, Optional, Tuple

from httpbench.certificates import KEY_TYPES, SiteCertificate
from httpbench.errors import Error
from httpbench.servers import php_install
from httpbench.servers.operations import RESTART, Operation

PROFILES = ("default", "tuned")
# The TLS versions a site may pin; None leaves the choice to the server (and the client).
TLS_VERSIONS = ("1.2", "1.3")


@dataclass(frozen=True)
class ServerProfile:
    """How a server is configured. `default`: the distribution's out-of-the-box settings,
    changed only where the suite must (port, document root, pid and log paths); `tuned`: what the
    write-ups and the server's own documentation recommend for small static files."""

    name: str = "default"
    # Extra configuration lines, added where the adapter says (e.g. nginx's http block).
    directives: Tuple[str, ...] = ()
    # A whole configuration file replacing the rendered one; `{port}`, `{host}`, `{docroot}`,
    # `{run_dir}`, `{workers}`, `{upstream}` (a fronted origin's host:port), for HTTPS `{cert}`,
    # `{key}` and `{ca}`, and for PHP `{php_socket}` (the PHP-FPM pool's) are filled in.
    config_file: Optional[Path] = None

    def __post_init__(self) -> None:
        if self.name not in PROFILES:
            raise ValueError(f"profile {self.name!r} is not one of {', '.join(PROFILES)}")


class ServerFailed(Error):
    """A server could not be started, or did not come up; the message is one line saying what
    went wrong (with the server's own words when it has any) and what to do."""


class TLSUnsupported(ServerFailed):
    """HTTPS asked of a server that cannot serve it as asked (the server, its key type or its
    TLS version, or a missing terminator); the message says why and what to do, in one line.
    A ServerFailed, so a sweep that meets one records the cell as failed and goes on."""


class ProtocolUnsupported(ServerFailed):
    """HTTP/2 asked of a server that cannot offer it as asked (at all, or in cleartext as h2c); the
    message says why and what to do, in one line. A ServerFailed, as TLSUnsupported is."""


class EncodingUnsupported(ServerFailed):
    """A content coding asked of a server whose profile cannot serve it (a tuned profile that
    would answer identity under br's name); the message says why and what to do, in one line."""


class PHPUnsupported(ServerFailed):
    """A PHP workload asked of a server that cannot run PHP, or whose PHP is not installed; the
    message says why and what to do, in one line. A ServerFailed, as TLSUnsupported is."""


@dataclass(frozen=True)
class SiteTLS:
    """HTTPS for a site: the server presents `cert` (with `key`, of `key_type`), signed by the
    suite's authority `ca`, and speaks only `version` when one is pinned (a plan measuring 1.2
    against 1.3), else what its profile allows."""

    cert: Path
    key: Path
    ca: Path
    key_type: str = "ecdsa-p256"
    version: Optional[str] = None

    def __post_init__(self) -> None:
        if self.version is not None and self.version not in TLS_VERSIONS:
            raise TLSUnsupported(f"TLS version {self.version!r} is not one of {', '.join(TLS_VERSIONS)}")
        if self.key_type not in KEY_TYPES:
            raise TLSUnsupported(f"tls.key = {self.key_type!r} is not a key type; use one of {', '.join(KEY_TYPES)}")

    @classmethod
    def of(cls, certificate: SiteCertificate, version: Optional[str] = None) -> "SiteTLS":
        return cls(certificate.cert, certificate.key, certificate.ca, certificate.key_type, version)

    def versions(self) -> Tuple[str, ...]:
        """The versions the server may speak: the pinned one, else both (1.3 first)."""
        return (self.version,) if self.version else ("1.3", "1.2")


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
    # HTTPS when set; a fronted origin stays plain HTTP on loopback.
    tls: Optional[SiteTLS] = None
    # Offer HTTP/2: by ALPN beside http/1.1 when the site has TLS, else h2c by prior knowledge.
    http2: bool = False
    # The workload's PHP kind ("php-wait", say): the site runs `.php` files through PHP.
    php: Optional[str] = None
    # The content coding every request of the cell asks for ("gzip", "br", "identity"); None
    # sends no Accept-Encoding, as every plan did before encodings were an axis.
    encoding: Optional[str] = None
    # Whether the docroot holds precompressed copies beside its files (name.gz, name.br), as the
    # suite writes them for its generated workloads; a user's docroot served in place has none.
    precompressed: bool = False

    @property
    def php_dir(self) -> Path:
        """Where the site's PHP keeps its own files: php.ini, the pool's config, socket and logs."""
        return self.run_dir / "php"

    @property
    def php_socket(self) -> Optional[Path]:
        """The Unix socket the suite's PHP-FPM pool listens on, when the site runs PHP."""
        return self.php_dir / "fpm.sock" if self.php else None

    @property
    def php_log(self) -> Path:
        """PHP's error log (php.ini's error_log): a failing script's own words."""
        return self.php_dir / "error.log"

    @property
    def protocol(self) -> str:
        """What the site serves, as a plan names it: "h2", "h2c", "https" or "http"."""
        if self.http2:
            return "h2" if self.tls else "h2c"
        return "https" if self.tls else "http"

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
        return f"{'https' if self.tls else 'http'}://{self.authority}/"


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
    # Whether the adapter renders HTTPS for a site with `tls`; `tls_refusal` says why not.
    speaks_tls: ClassVar[bool] = False
    # Which HTTP versions the adapter serves: HTTP/1.1; HTTP/2 for a site with `http2`, over TLS
    # by ALPN (`speaks_h2`), in cleartext by prior knowledge (`speaks_h2c`). `protocol_refusal`
    # says why not.
    speaks_http1: ClassVar[bool] = True
    speaks_h2: ClassVar[bool] = False
    speaks_h2c: ClassVar[bool] = False
    # How the adapter runs PHP for a site with `php`: "fastcgi" (`.php` requests go to a PHP-FPM
    # pool on `site.php_socket`, which the suite starts before the server), "module" (PHP inside
    # the server's own processes: mod_php), or None (it cannot). `php_refusal` says why not.
    runs_php: ClassVar[Optional[str]] = None
    # The content codings the tuned profile serves ("gzip", "br"), as its documentation
    # recommends (docs/encodings.md); a cell asking another is refused (encoding_refusal).
    tuned_codings: ClassVar[Tuple[str, ...]] = ()
    # Whether tuned serves them only from the copies the suite writes beside a generated
    # site's files (Site.precompressed), rather than compressing on the fly.
    codings_from_copies: ClassVar[bool] = True
    # coding -> (the module file tuned loads to serve it, the Debian package that installs it)
    coding_modules: ClassVar[Dict[str, Tuple[str, str]]] = {}
    # The operators' actions the server has (operations.ACTIONS), each performed by `operate`;
    # "restart" is the suite's own stop and start. A server lacks an action it has no entry for.
    operations: ClassVar[Dict[str, Operation]] = {"restart": RESTART}
    # The actions `operate` performs by a signal to the server's main process alone.
    signals: ClassVar[Dict[str, int]] = {}

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
        out = run_quietly([exe, *self.version_args()])
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

    def tls_refusal(self, tls: Optional[SiteTLS] = None) -> Optional[str]:
        """None when this server can serve HTTPS as `tls` asks (or at all, without `tls`), else one
        line saying why not and what to do (an adapter whose server needs more for TLS than for
        HTTP names what is missing)."""
        if not self.speaks_tls:
            return (
                f"{self.name} cannot serve HTTPS in httpbench; measure it over http, or choose a server that speaks TLS"
            )
        return None

    def protocol_refusal(self, protocol: str) -> Optional[str]:
        """None when this server can serve `protocol` (a Site.protocol: "http", "https", "h2" or
        "h2c"; whether it can do TLS as asked is tls_refusal's), else one line saying why not and
        what to do."""
        if protocol == "h2" and not self.speaks_h2:
            return f"{self.name} cannot offer HTTP/2 in httpbench; measure it over https, or choose a server with h2"
        if protocol == "h2c" and not self.speaks_h2c:
            other = "over h2 (with TLS)" if self.speaks_h2 else "over http"
            return f"{self.name} offers no cleartext HTTP/2 (h2c); measure it {other}, or choose a server with h2c"
        if protocol in ("http", "https") and not self.speaks_http1:
            return f"{self.name} speaks only HTTP/2; measure it over h2 or h2c"
        return None

    def php_refusal(self) -> Optional[str]:
        """None when this server can run PHP here, else one line saying why not and what to do:
        the command that installs the PHP it runs (servers.registry.php_refusal adds, for a server
        that runs none, the servers that can)."""
        if self.runs_php is None:
            return f"{self.name} cannot run PHP in httpbench"
        return php_install.missing(self.runs_php)

    def encoding_refusal(self, site: Site, profile: ServerProfile) -> Optional[str]:
        """None when this server, in `profile`, serves the coding `site.encoding` asks for (or
        no coding is asked), else one line saying why not and what to do. The default profile
        is never refused: it measures what the server does out of the box, whatever it sends."""
        if site.encoding in (None, "identity") or profile.name == "default":
            return None
        where, ask = f"{self.name}/{profile.name}", "ask identity, or measure its default profile"
        if site.encoding not in self.tuned_codings:
            return f"{where} cannot serve {site.encoding} in httpbench; {ask}"
        if self.codings_from_copies and not site.precompressed:
            copies = f"precompressed copies (name{'.br' if site.encoding == 'br' else '.gz'})"
            return f"{where} serves {site.encoding} only from {copies}, which a docroot served in place has not; {ask}"
        module, package = self.coding_modules.get(site.encoding, ("", ""))
        if module and not Path(module).is_file():
            install = f"install it with: apt-get install -y {package}"
            return f"{where} serves {site.encoding} with {package}, which is not installed; {install}"
        return None

    def backend(self) -> Optional["Server"]:
        """A server this one fronts (a cache in front of an origin), started first on its own
        port; None for a server that serves files itself."""
        return None

    def environment(self, site: Site) -> Dict[str, str]:
        """Extra environment variables for the server's process."""
        return {}

    def operate(self, action: str, site: Site, pid: int) -> Optional[str]:
        """Perform `action` (one of `operations` but "restart") on the server running for `site`,
        its main process `pid`, by its documented means: None once the signal is sent or the
        command done, else the server's own words refusing it (a configuration it found broken)."""
        os.kill(pid, self.signals[action])
        return None

    def logs(self, site: Site) -> Tuple[Path, ...]:
        """The log files the server writes in its run directory, its error log first: what
        reopen-logs rotates, and where a signalled server says it refused an action."""
        return ()


def run_quietly(cmd: List[str]) -> str:
    """Output of a short command (a version query), stdout and stderr together."""
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return (done.stdout or "") + (done.stderr or "")


# The name of the file `pinned_openssl_conf` is written to in the run directory.
OPENSSL_CONF = "openssl.cnf"


def pinned_openssl_conf(version: str) -> str:
    """An OpenSSL configuration (for OPENSSL_CONF) restricting every TLS context the process makes
    to one version: how a server without a working version setting of its own is pinned."""
    return f"""# rendered by httpbench: OpenSSL speaks TLS {version} only in this process (OPENSSL_CONF)
openssl_conf = openssl_init
[openssl_init]
ssl_conf = ssl_sect
[ssl_sect]
system_default = system_default_sect
[system_default_sect]
MinProtocol = TLSv{version}
MaxProtocol = TLSv{version}
"""


def read_args(path: Path) -> List[str]:
    """The arguments in an args file (a server configured by its command line alone): shell
    words, `#` starting a comment."""
    return shlex.split(path.read_text(), comments=True)


def fill(template: str, site: Site) -> str:
    """A user's whole config file (or command line) with the site's values put in; `{cert}`,
    `{key}` and `{ca}` are the site's certificate files when it serves HTTPS, `{php_socket}` the
    PHP-FPM pool's Unix socket when it runs PHP."""
    tls = site.tls
    return (
        template.replace("{port}", str(site.port))
        .replace("{host}", site.host)
        .replace("{docroot}", str(site.docroot))
        .replace("{run_dir}", str(site.run_dir))
        .replace("{workers}", str(site.workers))
        .replace("{upstream}", site.upstream or "")
        .replace("{cert}", str(tls.cert) if tls else "")
        .replace("{key}", str(tls.key) if tls else "")
        .replace("{ca}", str(tls.ca) if tls else "")
        .replace("{php_socket}", str(site.php_socket or ""))
    )
