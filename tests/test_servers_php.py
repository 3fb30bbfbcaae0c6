"""PHP behind every server that runs it but nginx (php-core's tests have nginx): apache2-prefork
with mod_php, apache2-worker and apache2-event, lighttpd, caddy and h2o with the suite's PHP-FPM
pool. Each is started once per profile with the three workloads' scripts in its document root,
verified byte for byte, loaded by the engine, and stopped leaving none of its processes, nor the
pool's; a failing script fails verification in PHP's own words through each. Behind TLS (nginx
too): h2 by ALPN through PHP-FPM, HTTPS/1.1 with mod_php, verified and loaded. A failure right
after the server is launched leaves none of its processes. Then what needs no start: which
adapters run PHP, and the command adapter's placeholder."""

import subprocess
from dataclasses import replace
from pathlib import Path

import pytest
from conftest import CLIENT_CPU, SERVER_CPU, free_port
from httpbench import servers
from httpbench.load import engine
from httpbench.observe.procfs import session_pids
from httpbench.plan.dynamic import PHP_KINDS, php_workload
from httpbench.servers import ServerProfile, Site, SiteTLS, VerificationFailed, process, start, verify
from httpbench.servers.adapters.command import CommandServer
from httpbench.servers.base import fill

SERVERS = ("apache2-prefork", "apache2-worker", "apache2-event", "lighttpd", "caddy", "h2o")
CELLS = [(name, profile) for name in SERVERS for profile in ("default", "tuned")]
# The site's kind only sizes the tuned pool: php-wait's is the largest (children per CPU).
SITE_KIND = {"default": "php-hello", "tuned": "php-wait"}
WORKLOADS = [php_workload(kind) for kind in PHP_KINDS]
ANSWERS = {url: body for workload in WORKLOADS for url, body in workload.file_map().items()}


def _php_site(base: Path, profile: str) -> Site:
    docroot = base / "www"
    docroot.mkdir()
    for workload in WORKLOADS:
        workload.write(docroot)
    (docroot / "broken.php").write_text("<?php\nno_such_function();\n")
    return Site(docroot, base / "run", free_port(), cpus=(SERVER_CPU,), php=SITE_KIND[profile])


def _maps_mod_php(pid: int) -> bool:
    try:
        return "libphp8.2.so" in Path(f"/proc/{pid}/maps").read_text()
    except OSError:
        return False


@pytest.mark.parametrize("name, profile", CELLS, ids=["-".join(cell) for cell in CELLS])
def test_server_runs_php_verifies_serves_load_and_leaves_nothing(tmp_path, name, profile):
    adapter = servers.get(name)
    site = _php_site(tmp_path, profile)
    with start(adapter, site, ServerProfile(profile)) as running:
        pool = running.php
        if adapter.runs_php == "module":
            assert pool is None
            assert any(_maps_mod_php(pid) for pid in running.pids()), "no apache process has mod_php loaded"
        else:
            assert pool is not None and pool.alive() and len(pool.pids()) > 1, "no PHP-FPM master and children"
        sessions = [running.pid] + ([pool.pid] if pool else [])
        verify(site, ANSWERS, name)
        # PHP's error log is written (by www-data, for mod_php) and read back by verification.
        with pytest.raises(VerificationFailed) as failed:
            verify(site, {"broken.php": b""}, name)
        assert str(failed.value).endswith(f"no_such_function() in {site.docroot}/broken.php:2"), str(failed.value)
        report = engine.run(
            {
                "urls": [site.url + url for url in ANSWERS],
                "connections": 4,
                "stop": {"requests": 300},
                "cpus": [CLIENT_CPU],
            }
        )
        assert report["errors_total"] == 0, report["errors"]
        assert report["status"]["2xx"] == report["requests"]["completed"] == 300, report["status"]
    left = {sid: session_pids(sid) for sid in sessions}
    assert not any(left.values()), f"left running after stop: {left}"


# PHP behind TLS: h2 by ALPN through PHP-FPM (nginx, h2o), HTTPS/1.1 with mod_php (prefork, which
# mod_http2 does not work with); a profile each (prefork's tuned one forks 1,024 children).
TLS_CELLS = [("nginx", "h2", "tuned"), ("h2o", "h2", "default"), ("apache2-prefork", "https", "default")]


@pytest.fixture(scope="module", params=TLS_CELLS, ids=["-".join(cell) for cell in TLS_CELLS])
def php_over_tls(request, tmp_path_factory, certificate):
    name, protocol, profile = request.param
    site = replace(
        _php_site(tmp_path_factory.mktemp(name), profile), tls=SiteTLS.of(certificate), http2=protocol == "h2"
    )
    with start(servers.get(name), site, ServerProfile(profile)) as running:
        yield running


def test_php_over_tls_verifies_byte_for_byte_and_serves_load(php_over_tls):
    site, name = php_over_tls.site, php_over_tls.server.name
    verify(site, ANSWERS, name)  # over h2 where the site offers it
    report = engine.run(
        {
            "urls": [site.url + url for url in ANSWERS],
            "connections": 4,
            "http2": site.http2,
            "streams": 4 if site.http2 else 1,
            "tls": {"cacert": str(site.tls.ca)},
            "stop": {"duration": 0.5},
            "cpus": [CLIENT_CPU],
        }
    )
    assert report["protocol"] == report["tls"]["alpn"] == ("h2" if site.http2 else "http/1.1"), report["tls"]
    assert report["errors_total"] == 0, report["errors"]
    assert report["status"]["2xx"] == report["requests"]["completed"] > 0, report["status"]


def test_a_failure_right_after_the_server_is_launched_stops_it_and_its_pool_even_when_a_stop_fails(
    tmp_path, monkeypatch, capsys
):
    launched = []
    launch = process._launch

    def launch_then_fail(*args, **kwargs):
        running = launch(*args, **kwargs)
        launched.append(running)
        if running.log.name == "server.log":  # stopped first, before its pool
            stop = running.stop

            def stop_then_fail(grace=5.0):
                stop(grace)
                raise subprocess.TimeoutExpired("server", grace)

            # Its stop works, then raises, as one whose process outlives its wait would.
            running.stop = stop_then_fail
            raise RuntimeError("the step after launching the server failed")
        return running

    monkeypatch.setattr(process, "_launch", launch_then_fail)
    # The cause, not the failed stop's exception.
    with pytest.raises(RuntimeError, match="the step after"):
        start(servers.get("lighttpd"), _php_site(tmp_path, "default"), ServerProfile())
    left = {running.log.name: session_pids(running.pid) for running in launched}
    for running in launched:
        process.RunningServer.stop(running, grace=1.0)
    assert len(left) == 2 and not any(left.values()), f"left running: {left}"
    assert "httpbench: could not stop lighttpd (pid " in capsys.readouterr().err


def test_command_with_a_php_socket_gets_the_pool(tmp_path):
    # lighttpd as "any other server": its config (written here) takes the socket from the command line.
    site = _php_site(tmp_path, "default")
    conf = tmp_path / "lighttpd.conf"
    conf.write_text(f"""server.document-root = "{site.docroot}"
server.bind = "{site.host}"
server.port = {site.port}
server.errorlog = "{tmp_path}/error.log"
server.modules = ( "mod_fastcgi", "mod_staticfile" )
fastcgi.server = ( ".php" => (( "socket" => env.PHP_SOCKET )) )
""")
    adapter = CommandServer(f"env PHP_SOCKET={{php_socket}} /usr/sbin/lighttpd -D -f {conf}", name="mine")
    with start(adapter, site, ServerProfile()) as running:
        assert running.php is not None and running.php.alive()
        assert f"PHP_SOCKET={site.php_socket} " in running.config.text
        verify(site, ANSWERS, "mine")
    assert not session_pids(running.pid) and not session_pids(running.php.pid)


def test_exactly_the_servers_that_can_run_php_say_how():
    runs = {name: adapter.runs_php for name, adapter in servers.ADAPTERS.items() if adapter.runs_php}
    assert runs == {
        "nginx": "fastcgi",
        "apache2-prefork": "module",
        "apache2-worker": "fastcgi",
        "apache2-event": "fastcgi",
        "lighttpd": "fastcgi",
        "caddy": "fastcgi",
        "h2o": "fastcgi",
    }
    for name in set(servers.ADAPTERS) - set(runs):
        refusal = servers.php_refusal(servers.get(name))
        assert refusal and "\n" not in refusal and "lighttpd" in refusal, (name, refusal)


def test_command_runs_php_only_with_its_socket_placeholder(tmp_path):
    site = Site(tmp_path / "www", tmp_path / "run", 8080, php="php-hello")
    with_socket = CommandServer("/usr/bin/myserver --port {port} --fastcgi unix:{php_socket}")
    assert with_socket.runs_php == "fastcgi"
    assert fill("--fastcgi unix:{php_socket}", site) == f"--fastcgi unix:{site.php_socket}"
    assert with_socket.render(site, ServerProfile()).text.split()[-1] == f"unix:{site.php_socket}"
    without = CommandServer("/usr/bin/myserver --port {port}")
    assert without.runs_php is None
    refusal = without.php_refusal()
    assert "has no {php_socket} placeholder" in refusal and "\n" not in refusal
    # A site without PHP fills the placeholder with nothing, as {cert} without TLS.
    assert fill("{php_socket}", replace(site, php=None)) == ""
