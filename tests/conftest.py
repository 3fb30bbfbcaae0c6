"""Shared pytest setup. The tests exercise the installed package (`pip install .` first) and the
release binaries (`cargo build --release`), so that what is tested is what users get.

Every server a test starts is its own child, bound to loopback, stopped by PID at teardown.
"""

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
RELEASE = ROOT / "target" / "release"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for_port(port: int, proc: subprocess.Popen, seconds: float = 10.0) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited with {proc.returncode} before listening on {port}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"nothing listens on 127.0.0.1:{port} after {seconds} s")


def stop(proc: subprocess.Popen) -> None:
    """Stop a server we started: politely, then by force, and reap it."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=5)


@contextmanager
def nghttpd(root: Path):
    """nghttpd over h2c serving `root` on 127.0.0.1, granting 4 streams per connection; yields
    its port, and stops it by PID."""
    port = free_port()
    proc = subprocess.Popen(
        ["nghttpd", "--no-tls", "-a", "127.0.0.1", "-m", "4", "-d", str(root), str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_for_port(port, proc)
        yield port
    finally:
        stop(proc)


def stop_group(proc: subprocess.Popen) -> None:
    """Stop a process we started as the leader of a session of its own (start_new_session=True),
    and everything left in its process group: politely, then by force. The leader is reaped last:
    until then its PID, which names the group, cannot be another process's."""
    if proc.returncode is not None:
        return  # reaped already: its PID may be anyone's now
    try:
        os.killpg(proc.pid, signal.SIGTERM)
    except ProcessLookupError:
        pass
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is None:
        time.sleep(0.05)
    try:
        os.killpg(proc.pid, signal.SIGKILL)  # whatever ignored SIGTERM or outlived its leader
    except ProcessLookupError:
        pass
    proc.wait(timeout=5)


# `httpbench` as a user runs it (`python -m httpbench`'s main), but for one cost: a run's client
# ceiling is the best of two 0.3-s loads rather than of three 1-s ones, about 2.5 s saved per kind
# of connection in every run a test makes. The ceiling is still measured, noted and judged against;
# how it is measured is test_sweep's (scripted loads), where these constants do not matter.
SHORT_CEILING = {"CEILING_ROUNDS": 2, "CEILING_SECONDS": 0.3}
HTTPBENCH = [
    sys.executable,
    "-c",
    "import sys\nfrom httpbench.cli import main as cli\nfrom httpbench.sweep import ceiling\n"
    f"vars(ceiling).update({SHORT_CEILING!r})\nsys.exit(cli.main())",
]


def httpbench(*args: str, timeout: float = 300, **kwargs) -> subprocess.CompletedProcess:
    """`httpbench ARGS` (see HTTPBENCH), its output captured as text; `kwargs` go to
    subprocess.run (preexec_fn, say)."""
    return subprocess.run([*HTTPBENCH, *args], capture_output=True, text=True, timeout=timeout, **kwargs)


SPIN = "import time\nend = time.monotonic() + {seconds}\nwhile time.monotonic() < end: pass"


@contextmanager
def spinning(*cpus: int, seconds: float = 120):
    """One CPU-bound process pinned to each of `cpus`: another job using the machine."""
    procs = [
        subprocess.Popen(["taskset", "-c", str(cpu), sys.executable, "-c", SPIN.format(seconds=seconds)])
        for cpu in cpus
    ]
    try:
        yield procs
    finally:
        for proc in procs:
            proc.kill()
            proc.wait()


def binary(name: str) -> Path:
    path = RELEASE / name
    if not path.exists():
        pytest.fail(f"{path} is missing: build it with `cargo build --release --workspace`")
    return path


class Load:
    """Runs httpbench-load as a user would and reads its JSON."""

    def __init__(self) -> None:
        self.path = binary("httpbench-load")

    def __call__(self, *args: str, timeout: float = 60) -> tuple[int, dict | None, str]:
        # Every request may fail: these runs are about where errors land, and exit 3 for too many
        # is tested on its own (test_load_flags).
        argv = [str(self.path), "--json", "--max-errors", "100%", *args]
        done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
        report = json.loads(done.stdout) if done.stdout.strip().startswith("{") else None
        return done.returncode, report, done.stderr


@pytest.fixture
def load() -> Load:
    return Load()


def accounted(r: dict) -> None:
    """Every request sent is completed, failed, or in flight at the end; nothing else. A
    connection that failed before it could carry a request (its connect, or its TLS handshake or
    certificate) counts an attempt, not a failed request."""
    q = r["requests"]
    assert q["sent"] == q["completed"] + q["failed"] + q["in_flight"], q
    attempts = ("connect_refused", "connect_timeout", "source_ports_exhausted", "connect_other")
    attempts += ("tls_handshake", "tls_certificate")
    assert q["failed"] == r["errors_total"] - sum(r["errors"][k] for k in attempts), r["errors"]


class Testservers:
    """Starts the purpose-built server in a mode and returns its base URL: https:// for the
    tls-* modes, which present a certificate of the suite's for the loopback names (`ca` verifies
    it; made once, on the first TLS start). Each server is stopped by PID in `stop`."""

    __test__ = False  # a fixture's helper, though its name starts like a test class

    def __init__(self, folder: Path) -> None:
        self.folder, self.procs, self.certificate = folder, [], None

    @property
    def ca(self) -> Path:
        return self._certificate().ca

    def _certificate(self):
        from httpbench.certificates import make_site_certificate

        if self.certificate is None:
            self.certificate = make_site_certificate(self.folder / "testserver-tls")
        return self.certificate

    def __call__(self, mode: str, *options: str, tls: bool | None = None) -> str:
        """`tls`: the tls-* modes always; the h2-* modes when asked (h2c otherwise)."""
        tls = mode.startswith("tls-") if tls is None else tls
        if tls:
            certificate = self._certificate()
            options = ("--tls-cert", str(certificate.cert), "--tls-key", str(certificate.key), *options)
        proc = subprocess.Popen(
            [
                str(binary("httpbench-testserver")),
                "--listen",
                "127.0.0.1:0",
                "--mode",
                mode,
                "--max-seconds",
                "120",
                *options,
            ],
            stdout=subprocess.PIPE,
            text=True,
        )
        self.procs.append(proc)
        line = proc.stdout.readline().split()
        assert line and line[0] == "listening", f"testserver said {line!r}"
        return f"{'https' if tls else 'http'}://{line[1]}/"

    def stop(self) -> None:
        for proc in self.procs:
            stop(proc)


@pytest.fixture
def testserver(tmp_path):
    """Factory: start the purpose-built server in a mode; returns its base URL (see Testservers)."""
    started = Testservers(tmp_path)
    yield started
    started.stop()


NGINX = shutil.which("nginx") or "/usr/sbin/nginx"


def start_nginx(prefix: Path, http: str) -> subprocess.Popen:
    """nginx in the foreground with one worker and everything it writes under `prefix`, `http`
    inside its http block."""
    conf = prefix / "nginx.conf"
    conf.write_text(f"""
worker_processes 1;
pid {prefix}/nginx.pid;
error_log {prefix}/error.log;
worker_rlimit_nofile 8192;
events {{ worker_connections 4096; }}
http {{
    keepalive_requests 1000000;
    client_body_temp_path {prefix}/body;
    proxy_temp_path {prefix}/proxy;
    fastcgi_temp_path {prefix}/fastcgi;
    uwsgi_temp_path {prefix}/uwsgi;
    scgi_temp_path {prefix}/scgi;
    {http}
}}
""")
    user = "daemon off; user root;" if os.geteuid() == 0 else "daemon off;"
    return subprocess.Popen([NGINX, "-p", str(prefix), "-c", str(conf), "-g", user])


@pytest.fixture
def nginx(tmp_path):
    """Factory: a real nginx from Debian's package, one worker, serving `files` from a private
    prefix; its access log (one line per request, with the connection serial) is returned."""
    if not os.path.exists(NGINX):
        pytest.fail("nginx is not installed: apt-get install -y nginx-light")
    procs = []

    def start(files: dict[str, bytes], access_log: bool = True) -> tuple[str, Path]:
        root = tmp_path / "www"
        root.mkdir(exist_ok=True)
        for name, body in files.items():
            (root / name).write_bytes(body)
        log = tmp_path / "access.log"
        port = free_port()
        log_line = (
            f"log_format conn '$connection $request'; access_log {log} conn;" if access_log else "access_log off;"
        )
        proc = start_nginx(tmp_path, f"{log_line}\n    server {{ listen 127.0.0.1:{port}; root {root}; }}")
        procs.append(proc)
        wait_for_port(port, proc)
        return f"http://127.0.0.1:{port}/", log

    start.procs = procs  # so a test can stop its server mid-run, by PID
    yield start
    for proc in procs:
        stop(proc)


class TlsNginx:
    """A real nginx over TLS (see `tls_nginx`): `url(site)` is an https base URL (`plain_url` one
    over http), `ca` the CA of the suite's certificate, `log` the access log, one line per request:
    connection serial, request line, `$ssl_protocol` and `$ssl_session_reused` (r or .)."""

    def __init__(self, ports: dict[str, int], plain_port: int, ca: Path, log: Path) -> None:
        self.ports, self.plain_url, self.ca, self.log = ports, f"http://127.0.0.1:{plain_port}/", ca, log

    def url(self, site: str = "ok") -> str:
        return f"https://127.0.0.1:{self.ports[site]}/"


@contextmanager
def tls_nginx(
    folder: Path,
    files: dict[str, bytes],
    sites: dict | None = None,
    http2: bool = False,
    keepalive_requests: int | None = None,
):
    """nginx from Debian's package, one worker, serving `files` over TLS 1.2 and 1.3 with the
    suite's certificate for the loopback names (site "ok"), each of `sites` (name: (certificate
    PEM, key PEM)) on a port of its own, and over plain HTTP on one more; session cache and
    tickets on, as the tuned profiles have them; with `http2`, its TLS ports offer h2 by ALPN
    beside HTTP/1.1 (the request line in the log then ends in HTTP/2.0). With `keepalive_requests`,
    every server ends a connection after that many requests: over HTTP/1.1 with `Connection:
    close`, over HTTP/2 (nginx 1.19.7 on; it has no `http2_max_requests` any more) with a GOAWAY.
    Stopped by PID on the way out."""
    from httpbench.certificates import make_site_certificate

    if not os.path.exists(NGINX):
        pytest.fail("nginx is not installed: apt-get install -y nginx-light")
    root = folder / "www"
    root.mkdir(parents=True)
    for name, body in files.items():
        (root / name).write_bytes(body)
    site = make_site_certificate(folder / "certs")
    pairs = {"ok": (site.cert, site.key)}
    for name, (cert, key) in (sites or {}).items():
        pairs[name] = (folder / "certs" / f"{name}.pem", folder / "certs" / f"{name}-key.pem")
        pairs[name][0].write_bytes(cert)
        pairs[name][1].write_bytes(key)
    ports = {name: free_port() for name in pairs}
    plain_port = free_port()
    offers = "ssl http2" if http2 else "ssl"
    # In each server, as the http block's (start_nginx's) cannot be set twice; over HTTP/2 nginx
    # takes the default server's of the port, the only one on each here.
    limit = f"keepalive_requests {keepalive_requests};" if keepalive_requests is not None else ""
    servers = "\n".join(
        f"server {{ listen 127.0.0.1:{ports[name]} {offers}; {limit}"
        f" ssl_certificate {cert}; ssl_certificate_key {key}; }}"
        for name, (cert, key) in pairs.items()
    )
    log = folder / "access.log"
    proc = start_nginx(
        folder,
        f"""log_format tls '$connection $request $ssl_protocol $ssl_session_reused';
    access_log {log} tls;
    root {root};
    ssl_protocols TLSv1.2 TLSv1.3;
    ssl_session_cache shared:SSL:10m;
    ssl_session_tickets on;
    {servers}
    server {{ listen 127.0.0.1:{plain_port}; {limit} }}""",
    )
    try:
        for port in [*ports.values(), plain_port]:
            wait_for_port(port, proc)
        yield TlsNginx(ports, plain_port, site.ca, log)
    finally:
        stop(proc)


# The write-ups' files: the 2016 one's 7-byte index.html, the 2011 one's 100-byte page, the 2007
# one's 25 KB jpg.
FILES = {
    "index.html": b"hello!\n",
    "100.html": (b"<html><body>" + b"x" * 73 + b"</body></html>\n"),
    "test.jpg": bytes((i * 7 + 3) % 256 for i in range(25 * 1024)),
}
SERVER_CPU, CLIENT_CPU = 0, 1


def make_site(base: Path, docroot: str = "www", run_dir: str = "run"):
    """A document root holding FILES and a run directory under `base`, the server on CPU 0."""
    from httpbench import servers
    from httpbench.servers import Site

    root = base / docroot
    root.mkdir()
    for name, body in FILES.items():
        (root / name).write_bytes(body)
    return Site(docroot=root, run_dir=base / run_dir, port=servers.free_port(), cpus=(SERVER_CPU,))


@pytest.fixture(scope="module")
def certificate(tmp_path_factory):
    """A site certificate (ECDSA P-256) and its authority, made once per test module."""
    from httpbench.certificates import make_site_certificate

    return make_site_certificate(tmp_path_factory.mktemp("certificate"))


@pytest.fixture
def site(tmp_path):
    return make_site(tmp_path)


def log_lines(log: Path, expected: int = 0, seconds: float = 10.0) -> list[str]:
    """The access log once nginx has written everything: it writes each line as it goes, so this
    waits (within `seconds`) for `expected` lines and then for the log to stop growing."""
    deadline = time.monotonic() + seconds
    lines, size = [], -1
    while time.monotonic() < deadline:
        text = log.read_text() if log.exists() else ""
        if len(text) == size and len(lines) >= expected:
            break
        lines, size = text.splitlines(), len(text)
        time.sleep(0.1)
    return lines


# A test's figures the reader should see even under `pytest -q` (start spreads): written in a
# section of their own at the end of the run.
MEASURED = pytest.StashKey[list]()


@pytest.fixture
def measured(request):
    """Call with a line to show it at the end of the run, under "measured"."""
    return request.config.stash.setdefault(MEASURED, []).append


def pytest_terminal_summary(terminalreporter, config):
    lines = config.stash.get(MEASURED, [])
    if lines:
        terminalreporter.section("measured")
        for line in lines:
            terminalreporter.write_line(line)


SHORT_PLAN = """
name = "short"
description = "a short run for a test"
servers = {servers}
profiles = ["default"]
keep_alive = [true]
server_cpus = [1]
rounds = 1
warmup = "0s"
{extra}
[[workload]]
kind = "generated"
size = 7
name = "index.html"
[levels]
list = [{levels}]
[budget]
{budget}
"""


def refused_run(plan: Path, db: Path) -> str:
    """`httpbench run PLAN --db DB` for a plan that must be refused as bad input: it exits 2 with
    one line on stderr, which is returned, prints nothing else, stores no run and leaves nothing
    of its session running."""
    from httpbench.servers.process import session_pids
    from httpbench.store.database import Store

    run = subprocess.Popen(
        [sys.executable, "-m", "httpbench", "run", str(plan), "--db", str(db)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
    )  # fmt: skip
    out, err = run.communicate(timeout=120)
    assert run.returncode == 2 and "Traceback" not in err, err[-2000:]
    assert len(err.strip().splitlines()) == 1 and out == "", (out, err)
    assert session_pids(run.pid) == []
    assert not db.exists() or Store(str(db)).runs() == []
    return err


def short_plan(folder: Path, servers: str, levels: str, budget: str, extra: str = "", tables: str = "") -> Path:
    """plan.toml in `folder`: one round per level, no warm-up, the 7-byte index.html, on CPU 1.
    `extra` adds top-level keys, `tables` whole tables (a [server.NAME] one, say)."""
    path = folder / "plan.toml"
    path.write_text(SHORT_PLAN.format(servers=servers, levels=levels, budget=budget, extra=extra) + tables)
    return path


def quick_sweep(plan: Path, db: Path, notes: list):
    """A Sweep of `plan` into the store `db` in this process, server on CPU 0 and client on CPU
    1, its notes appended to `notes`; without the client ceiling, which these tests are not about
    (3 s saved each)."""
    from httpbench.placement import Placement
    from httpbench.plan import builtin as plans
    from httpbench.store.database import Store
    from httpbench.sweep.sweep import Progress, Sweep

    sweep = Sweep(
        plans.load(str(plan)), Store(str(db)), Placement.choose("0", "1"), progress=Progress(on_note=notes.append)
    )
    sweep.measure_ceiling = lambda kind: None
    return sweep


def nginx_plan(folder: Path, levels: str, budget: str) -> tuple[Path, Path]:
    """A short plan of nginx writing its access log into `folder`; the plan and the log."""
    log = folder / "access.log"
    return short_plan(
        folder, '["nginx"]', levels, budget, tables=f'[server.nginx]\ndirectives = ["access_log {log};"]\n'
    ), log


KILL_AFTER_S = 0.3


def kill_in_first_window(sweep, server: str, victim) -> dict:
    """Have `victim(running server)` (a pid of that server's session, or a list of pids: a PHP
    pool's master and children, say) killed with SIGKILL, in that order, KILL_AFTER_S into the
    first measurement window of `server`'s cell; returns what was killed (`pid`, the first,
    `pids`, and `session`, the master's pid) once it is."""
    import threading

    killed: dict = {}
    make_host = sweep.server_host

    def kill(pids):
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass  # a child that exited with its master

    def host_watched():
        host = make_host()
        start_window = host.start_window

        def first_window_kills():
            start_window()
            if host.name == server and not killed:
                chosen = victim(host.running)
                pids = [chosen] if isinstance(chosen, int) else list(chosen)
                killed.update(pid=pids[0], pids=pids, session=host.running.pid)
                timer = threading.Timer(KILL_AFTER_S, kill, (pids,))
                timer.start()
                killed["timer"] = timer

        host.start_window = first_window_kills
        return host

    sweep.server_host = host_watched
    return killed


def installed_or_skip(*names: str) -> None:
    """Skip the test unless every server of `names` is installed here."""
    from httpbench import servers

    missing = [n for n in names if not servers.get(n).installed()]
    if missing:
        pytest.skip(f"{', '.join(missing)} not installed")
