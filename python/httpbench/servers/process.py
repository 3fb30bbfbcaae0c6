"""Running a server under test: a private run directory, the whole process tree pinned, a
readiness check, and a stop that leaves nothing behind, even after Ctrl-C or a crash.

A site that runs PHP through FastCGI gets the suite's PHP-FPM pool (httpbench.servers.php) first,
started the same way in a session of its own, and stopped after the server.

Servers run in the foreground as session leaders, so their workers share a session and a
process group: stopping is one signal to the group, and a leftover is found by its session id.
Should the suite die without cleaning up (SIGKILL, a crash of the interpreter), a watchdog
process it started kills every server session it was told of: it learns them through a pipe
and acts when the pipe closes, which the kernel does however the suite ends. (PR_SET_PDEATHSIG
alone is not enough: it reaches only the leader, and nginx's workers outlive their master.)
"""

from __future__ import annotations

import atexit
import ctypes
import http.client
import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import List, Optional, Set

from httpbench.observe.procfs import session_pids
from httpbench.servers.base import (
    Config,
    EncodingUnsupported,
    PHPUnsupported,
    ProtocolUnsupported,
    Server,
    ServerFailed,
    ServerProfile,
    Site,
    TLSUnsupported,
    fill,
)
from httpbench.servers.launcher import launch
from httpbench.servers.own_words import last_word
from httpbench.servers.php import POOL_LOG, PhpFpm
from httpbench.servers.verify import CLOSED, connection, h2_probe

_PR_SET_PDEATHSIG = 1
_running: Set["RunningServer"] = set()


def _family(host: str) -> int:
    return socket.AF_INET6 if ":" in host else socket.AF_INET


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket(_family(host)) as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def port_is_free(host: str, port: int) -> bool:
    """Whether a server could listen there (with SO_REUSEADDR, as servers do)."""
    with socket.socket(_family(host)) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
        except OSError:
            return False
    return True


@dataclass(eq=False)
class RunningServer:
    server: Server
    site: Site
    profile: ServerProfile
    config: Config
    process: subprocess.Popen
    log: Path
    backend: Optional["RunningServer"] = None
    # The site's PHP-FPM pool, when the server passes PHP to one (its own session).
    php: Optional["RunningServer"] = None

    @property
    def pid(self) -> int:
        return self.process.pid

    def pids(self) -> List[int]:
        return session_pids(self.process.pid)

    def alive(self) -> bool:
        return self.process.poll() is None

    def log_tail(self, lines: int = 20) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    def stop(self, grace: float = 5.0) -> None:
        """Stop gracefully, then kill whatever is left of the session; the backend and the PHP
        pool after it."""
        try:
            self._stop_session(grace)
        finally:
            try:
                if self.backend is not None:
                    self.backend.stop(grace)
            finally:
                if self.php is not None:
                    self.php.stop(grace)

    def restart(self, ready_timeout: float = 20.0) -> None:
        """An operator's restart: the server's session stopped, and its command run again with the
        same configuration on the same port (its backend and PHP pool kept); ServerFailed, with
        its own words, when it does not answer again."""
        self._stop_session(grace=5.0)
        self.process = _spawn(self.server, self.site, self.log, append=True)
        _running.add(self)
        _wait_ready(self, ready_timeout)

    def _stop_session(self, grace: float) -> None:
        if self.alive():
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=grace)
            except subprocess.TimeoutExpired:
                pass
        for _ in range(50):
            left = self.pids()
            if not left:
                break
            for pid in left:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            time.sleep(0.05)
        if self.process.poll() is None:
            self.process.wait(timeout=5)
        # Only once it is gone: one that would not die stays the watchdog's, killed when
        # httpbench ends, and is tried again at exit.
        if self in _running:
            _running.discard(self)
            _tell_watchdog(f"-{self.process.pid}")

    def __enter__(self) -> "RunningServer":
        return self

    def __exit__(self, *exc) -> None:
        self.stop()


# Reads session ids from stdin ("+sid" started, "-sid" stopped); at end of input the suite is
# gone, and it kills what is still registered.
_WATCHDOG = """
import os, signal, sys
live = set()
for line in sys.stdin:
    (live.add if line[0] == "+" else live.discard)(int(line[1:]))
for sid in live:
    try:
        os.killpg(sid, signal.SIGKILL)
    except OSError:
        pass
"""
_watchdog: Optional[subprocess.Popen] = None


def _tell_watchdog(message: str) -> None:
    global _watchdog
    if _watchdog is None or _watchdog.poll() is not None:
        import sys

        # Its own session, so a Ctrl-C aimed at the suite's process group does not end it early.
        _watchdog = subprocess.Popen(
            [sys.executable, "-c", _WATCHDOG], stdin=subprocess.PIPE, text=True, start_new_session=True
        )
    _watchdog.stdin.write(message + "\n")
    _watchdog.stdin.flush()


def _stop_all() -> None:
    _stop_each(list(_running), grace=2.0)


def _stop_each(runnings: List[RunningServer], grace: float) -> None:
    """Stop each of `runnings`, in order, even when one before it fails to stop; say which did."""
    for running in runnings:
        try:
            running.stop(grace=grace)
        except Exception as e:
            print(
                f"httpbench: could not stop {running.server.name} (pid {running.process.pid}): {e}; the "
                "watchdog kills it when httpbench ends",
                file=sys.stderr,
            )


atexit.register(_stop_all)


def _child_setup(cpus) -> None:
    """In the server's process, between fork and exec: pin it (its workers inherit the mask) and
    have the kernel kill it if the suite dies first."""
    if cpus:
        os.sched_setaffinity(0, cpus)
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


def render(server: Server, site: Site, profile: ServerProfile) -> Config:
    if profile.config_file is not None:
        try:
            template = Path(profile.config_file).read_text()
        except OSError as e:
            raise ServerFailed(f"cannot read the config file {profile.config_file}: {e.strerror}") from None
        first = server.render(site, profile)
        return Config({first.main: fill(template, site), **{k: v for k, v in first.files.items() if k != first.main}})
    return server.render(site, profile)


def start(server: Server, site: Site, profile: ServerProfile, ready_timeout: float = 20.0) -> RunningServer:
    """Start `server` for `site` and return once it answers HTTP (HTTPS when the site has TLS, an
    HTTP/2 connection when it offers h2); first its backend, for a server in front of one, and its
    PHP-FPM pool, for a site that runs PHP through FastCGI."""
    # Every process this call starts, the backend's too, as soon as it runs: whatever fails after,
    # they are stopped.
    launched: List[RunningServer] = []
    try:
        return _start(server, site, profile, ready_timeout, launched)
    except BaseException:
        # The server first, then its pool, then its backend (stopping one twice does nothing), and
        # the cause, not a failure to stop, is what is raised.
        _stop_each(launched[::-1], grace=1.0)
        raise


def _start(
    server: Server, site: Site, profile: ServerProfile, ready_timeout: float, launched: List[RunningServer]
) -> RunningServer:
    # First: installing a server that cannot serve HTTPS or HTTP/2 as asked would not help.
    if site.tls is not None:
        refusal = server.tls_refusal(site.tls)
        if refusal is not None:
            raise TLSUnsupported(refusal)
    refusal = server.protocol_refusal(site.protocol)
    if refusal is not None:
        raise ProtocolUnsupported(refusal)
    if site.php is not None:
        refusal = server.php_refusal()
        if refusal is not None:
            raise PHPUnsupported(refusal)
    refusal = server.encoding_refusal(site, profile)
    if refusal is not None:
        raise EncodingUnsupported(refusal)
    if not server.installed():
        raise ServerFailed(f"{server.name} is not installed; install it with: {server.install_command()}")
    if not site.docroot.is_dir():
        raise ServerFailed(f"document root {site.docroot} does not exist; create it or name another")
    if not port_is_free(site.host, site.port):
        raise ServerFailed(f"port {site.port} on {site.host} is in use; choose another port or stop what listens there")
    backend = pool = None
    origin = server.backend()
    if origin is not None:
        backend_site = replace(
            site, run_dir=site.run_dir / "backend", port=free_port(site.host), upstream=None, tls=None, http2=False
        )
        # The origin gets the profile's name only: directives and a config file are the front's.
        backend = _start(origin, backend_site, ServerProfile(profile.name), ready_timeout, launched)
        # The authority, so an IPv6 origin is bracketed ("[::1]:port") as varnish and ATS need.
        site = replace(site, upstream=backend_site.authority)
    if site.php is not None and server.runs_php == "fastcgi":
        pool = _start_pool(site, profile, ready_timeout, launched)
    running = _launch(server, site, profile, render(server, site, profile), "server.log", launched)
    running.backend, running.php = backend, pool
    _wait_ready(running, ready_timeout)
    return running


def _launch(
    server: Server, site: Site, profile: ServerProfile, config: Config, log_name: str, launched: List[RunningServer]
) -> RunningServer:
    """Write `config` into the run directory and run `server` in a session of its own, pinned,
    its output into `log_name`, the watchdog told; added to `launched` as soon as it runs."""
    site.run_dir.mkdir(parents=True, exist_ok=True)
    for name, text in config.files.items():
        (site.run_dir / name).parent.mkdir(parents=True, exist_ok=True)
        (site.run_dir / name).write_text(text)
    log = site.run_dir / log_name
    log.parent.mkdir(parents=True, exist_ok=True)
    process = _spawn(server, site, log)
    running = RunningServer(server, site, profile, config, process, log)
    launched.append(running)
    _running.add(running)
    return running


def _spawn(server: Server, site: Site, log: Path, append: bool = False) -> subprocess.Popen:
    """Run `server`'s command in a session of its own, pinned, its output into `log`, the
    watchdog told. Forked by the launcher's thread, which outlives whichever thread asks."""
    with open(log, "ab" if append else "wb") as out:
        process = launch(
            lambda: subprocess.Popen(
                server.command(site, site.run_dir),
                cwd=site.run_dir,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                env={**os.environ, **server.environment(site)},
                preexec_fn=lambda: _child_setup(site.cpus),
            )
        )
    _tell_watchdog(f"+{process.pid}")
    return process


# sockaddr_un's sun_path holds 108 bytes, the terminating NUL included.
_UNIX_PATH_MAX = 107


def _start_pool(site: Site, profile: ServerProfile, timeout: float, launched: List[RunningServer]) -> RunningServer:
    """The site's PHP-FPM pool, once its socket accepts connections; `start` stops it if this fails."""
    socket_path = str(site.php_socket)
    if len(socket_path.encode()) > _UNIX_PATH_MAX:
        raise ServerFailed(
            f"PHP-FPM's socket path {socket_path} is {len(socket_path.encode())} bytes, more than a Unix "
            f"socket's {_UNIX_PATH_MAX}; give the server a run directory with a shorter path"
        )
    fpm = PhpFpm()
    pool = _launch(fpm, site, profile, fpm.render(site, profile), POOL_LOG, launched)
    deadline = time.monotonic() + timeout
    while True:
        code = pool.process.poll()
        if code is not None:
            raise ServerFailed(f"PHP-FPM exited with code {code} at start: {last_word(pool, first=True)}")
        with socket.socket(socket.AF_UNIX) as probe:
            try:
                probe.connect(socket_path)
                return pool
            except OSError:
                pass
        if time.monotonic() > deadline:
            raise ServerFailed(
                f"PHP-FPM did not listen on {socket_path} within {timeout:.0f} s: {last_word(pool, first=True)}"
            )
        time.sleep(0.05)


def _wait_ready(running: RunningServer, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    site = running.site
    while True:
        code = running.process.poll()
        if code is not None:
            raise ServerFailed(f"{running.server.name} exited with code {code} at start: {last_word(running)}")
        try:
            if _answers(site):
                return
        except (OSError, http.client.HTTPException):
            pass
        if time.monotonic() > deadline:
            raise ServerFailed(
                f"{running.server.name} did not answer on {site.url} within {timeout:.0f} s: {last_word(running)}"
            )
        time.sleep(0.05)


def _answers(site: Site) -> bool:
    """Whether the server answers a request (a site offering HTTP/2: an HTTP/2 connection, which
    some servers, nghttpd or nginx's h2c, accept in place of HTTP/1.1). Over TLS, any certificate
    and version will do here, and any protocol spoken back: verify() judges them."""
    if site.http2:
        with h2_probe(site, timeout=1, check_tls=False) as (spoken, _):
            return spoken != CLOSED
    conn = connection(site, timeout=1, check_tls=False)
    try:
        conn.request("GET", "/")
        conn.getresponse().read()
    finally:
        conn.close()
    return True
