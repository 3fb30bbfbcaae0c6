"""Every server adapter, for real: started in both profiles with its process tree pinned,
verified on a 7-byte, a 100-byte and a 25 KB file, loaded by the engine, and stopped leaving no
process behind. Adapters are found by discovery, so a new adapter is tested by being written."""

import os
import socket
import subprocess
from dataclasses import replace

import pytest
from conftest import CLIENT_CPU, FILES, SERVER_CPU
from httpbench import servers
from httpbench.load import engine
from httpbench.servers import ServerFailed, ServerProfile, Site, catalog, php_install, start, verify
from httpbench.servers.process import port_is_free, session_pids


def _require(adapter):
    if not adapter.installed():
        pytest.fail(f"{adapter.name} is not installed: {adapter.install_command()}")


# nghttpd speaks HTTP/2 only: test_servers_h2.py starts it.
HTTP1_SERVERS = [name for name in servers.names() if servers.get(name).speaks_http1]


@pytest.mark.parametrize("profile", ["default", "tuned"])
@pytest.mark.parametrize("name", HTTP1_SERVERS)
def test_adapter_serves_verified_pinned_load_and_stops_clean(site, name, profile):
    adapter = servers.get(name)
    _require(adapter)
    with start(adapter, site, ServerProfile(profile)) as running:
        pids = running.pids()
        assert pids, "no server process"
        for pid in pids:
            assert os.sched_getaffinity(pid) == {SERVER_CPU}, f"pid {pid} is not pinned"
        verify(site, FILES, name)
        report = engine.run(
            {
                "urls": [site.url + "index.html"],
                "connections": 8,
                "stop": {"duration": 0.5},
                "cpus": [CLIENT_CPU],
                "expect_length": len(FILES["index.html"]),
            }
        )
        assert report["requests"]["completed"] > 100, report["requests"]
        assert report["errors_total"] == 0, report["errors"]
        if profile == "tuned":
            # The plans' 1,000-connection storms wait in the listen queue, not in SYN retries.
            assert _listen_backlog(site.port) >= 4096
            # What served here had its limits on slow clients (docs/servers-defences.md).
            assert TUNED_DEFENCES.get(name, "") in running.config.text
        assert running.config.text.strip()
        assert adapter.version()
    assert session_pids(running.pid) == [], "processes left behind"
    assert running.backend is None or session_pids(running.backend.pid) == []
    assert port_is_free(site.host, site.port)  # for the next server (TIME_WAIT aside)


# One line of each tuned config's limits on slow clients; reference has none to set.
TUNED_DEFENCES = {
    **{name: "RequestReadTimeout handshake=10 header=10-20" for name in servers.names() if name.startswith("apache2")},
    "caddy": "read_header 10s",
    "h2o": "http1-request-timeout: 10",
    "jetty9": '<Set name="minRequestDataRate">500</Set>',
    "lighttpd": "server.max-read-idle = 10",
    "mighttpd2": "Connection_Timeout: 10",
    "nginx": "client_header_timeout 10s;",
    "node": '"headersTimeout": 10000',
    "trafficserver": "CONFIG proxy.config.http.transaction_no_activity_timeout_in INT 10",
    "varnish": "-p timeout_idle=10",
}


def _listen_backlog(port: int) -> int:
    """The backlog of the socket listening on `port`, as the kernel reports it (Send-Q)."""
    listening = subprocess.run(["ss", "-ltnH", f"sport = :{port}"], capture_output=True, text=True, check=True).stdout
    return min(int(line.split()[2]) for line in listening.splitlines())


def test_unknown_server_lists_the_known_ones():
    with pytest.raises(servers.UnknownServer, match="known servers: .*nginx"):
        servers.get("ngnix")


def test_port_in_use_is_one_clear_line(site):
    with socket.socket() as s:
        s.bind((site.host, site.port))
        s.listen()
        with pytest.raises(ServerFailed, match=f"port {site.port} .* in use"):
            start(servers.get("nginx"), site, ServerProfile("tuned"))


def test_rejected_config_shows_the_servers_error_and_the_line(site):
    profile = ServerProfile("tuned", directives=("no_such_directive on;",))
    with pytest.raises(ServerFailed) as failed:
        start(servers.get("nginx"), site, profile)
    message = str(failed.value)
    assert "no_such_directive" in message and "\n" not in message
    assert not [p for p in os.listdir("/proc") if p.isdigit() and _is_nginx_of(p, site)]


def _is_nginx_of(pid, site):
    try:
        return str(site.run_dir) in open(f"/proc/{pid}/cmdline").read()
    except OSError:
        return False


def test_missing_document_root_is_refused(site, tmp_path):
    missing = Site(docroot=tmp_path / "nope", run_dir=site.run_dir, port=site.port)
    with pytest.raises(ServerFailed, match="does not exist"):
        start(servers.get("nginx"), missing, ServerProfile())


def test_server_that_compresses_fails_verification(site):
    profile = ServerProfile("tuned", directives=("gzip on; gzip_min_length 1; gzip_types *;",))
    with start(servers.get("nginx"), site, profile):
        with pytest.raises(servers.VerificationFailed, match="compressed"):
            verify(site, FILES, "nginx", headers={"Accept-Encoding": "gzip"})
        # Asked identity, it sends identity; asked gzip, its gzip decodes to the file's bytes.
        assert set(verify(replace(site, encoding="identity"), FILES, "nginx").values()) == {
            ("identity", len(body)) for body in FILES.values()
        }
        learned = verify(replace(site, encoding="gzip"), FILES, "nginx")
        assert {coding for coding, _ in learned.values()} == {"gzip"}
        # nginx has no br of its own: asked br it sends identity, which is no failure here.
        learned = verify(replace(site, encoding="br"), FILES, "nginx")
        assert learned == {name: ("identity", len(body)) for name, body in FILES.items()}


def _httpbench(*args):
    import subprocess
    import sys

    return subprocess.run([sys.executable, "-m", "httpbench", *args], capture_output=True, text=True, timeout=120)


def test_servers_command_lists_adapters_with_state_and_version():
    done = _httpbench("servers")
    assert done.returncode == 0, done.stderr
    rows = {line.split()[0]: line for line in done.stdout.splitlines()}
    assert set(rows) == set(servers.names())
    assert "installed" in rows["nginx"] and "nginx/" in rows["nginx"]
    # What each runs PHP with, and whether that is installed.
    assert "  php-fpm8.2 installed  " in rows["nginx"] and "  mod_php installed  " in rows["apache2-prefork"]
    assert "  no PHP  " in rows["varnish"]


def test_servers_command_says_how_to_install_a_missing_php(monkeypatch, tmp_path, capsys):
    monkeypatch.setattr(php_install, "MOD_PHP", tmp_path / "libphp8.2.so")
    assert catalog.show() == 0
    rows = {line.split()[0]: line for line in capsys.readouterr().out.splitlines()}
    assert "  mod_php missing, install: apt-get install -y libapache2-mod-php8.2  " in rows["apache2-prefork"]


@pytest.mark.parametrize(
    "args,says",
    [
        (["servers", "install", "ngnix"], "known servers"),
        (["servers", "install"], "name the servers"),
        (["servers", "frob"], "invalid choice"),
    ],
)
def test_servers_command_bad_input_is_one_line(args, says):
    done = _httpbench(*args)
    assert done.returncode == 2 and says in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and "Traceback" not in done.stderr


def test_servers_die_with_a_killed_suite(site):
    # A suite process that starts nginx, with its PHP-FPM pool (a session of its own), and is then
    # SIGKILLed: nothing of nginx nor of the pool may survive.
    import signal
    import subprocess
    import sys
    import time

    code = (
        "import sys, pathlib\n"
        "from httpbench import servers\n"
        "from httpbench.servers import Site, ServerProfile\n"
        f"site = Site(docroot=pathlib.Path({str(site.docroot)!r}), run_dir=pathlib.Path({str(site.run_dir)!r}),"
        f" port={site.port}, cpus=(0,), php='php-hello')\n"
        "running = servers.start(servers.get('nginx'), site, ServerProfile('default'))\n"
        "print(running.pid, running.php.pid, flush=True)\n"
        "import time; time.sleep(60)\n"
    )
    suite = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    sid, pool = map(int, suite.stdout.readline().split())
    assert len(session_pids(sid)) >= 2 and len(session_pids(pool)) >= 2  # masters and workers
    suite.send_signal(signal.SIGKILL)
    suite.wait()
    deadline = time.monotonic() + 5
    while (session_pids(sid) or session_pids(pool)) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert session_pids(sid) == [] and session_pids(pool) == []
