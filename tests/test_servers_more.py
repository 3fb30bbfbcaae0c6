"""Adapter-specific tests: the command adapter (any server as a command line), and what the shared
test does not reach in mighttpd2, jetty9 and node: several cores, directives, compression asked
for, unknown paths."""

import http.client
import os
import shlex
import sys
from pathlib import Path

import pytest
from conftest import FILES, make_site
from httpbench import servers
from httpbench.load import engine
from httpbench.servers import ServerFailed, ServerProfile, Site, start, verify
from httpbench.servers.adapters.command import CommandServer
from httpbench.servers.adapters.node import SCRIPT as NODE_STATIC
from httpbench.servers.process import port_is_free, session_pids


@pytest.fixture
def site(tmp_path):
    # Spaces, which command lines and configs must keep whole.
    return make_site(tmp_path, docroot="w w w", run_dir="run dir")


def get(site, path, method="GET", headers=None):
    conn = http.client.HTTPConnection(site.host, site.port, timeout=10)
    try:
        conn.request(method, path, headers=headers or {})
        response = conn.getresponse()
        return response, response.read()
    finally:
        conn.close()


def _load_and_stop(running, site):
    report = engine.run(
        {
            "urls": [site.url + "index.html"],
            "connections": 8,
            "stop": {"duration": 0.5},
            "cpus": [1],
            "expect_length": len(FILES["index.html"]),
        }
    )
    assert report["requests"]["completed"] > 100, report["requests"]
    assert report["errors_total"] == 0, report["errors"]
    running.stop()
    assert session_pids(running.pid) == [], "processes left behind"
    assert port_is_free(site.host, site.port)


# ---- command

PY_HTTP = f"{sys.executable} -m http.server --bind {{host}} {{port}} --directory {{docroot}}"


def test_command_server_is_not_discovered():
    assert "command" not in servers.names()
    assert CommandServer not in servers.ADAPTERS.values()


def test_command_renders_the_filled_command_line(site):
    server = CommandServer("./bin/my-server -p {port} -r {docroot} -w {workers} -l {run_dir}/log", name="mine")
    config = server.render(site, ServerProfile("tuned", directives=("--fast", "--cache 10")))
    assert list(config.files) == ["command.txt"]
    words = server.command(site, _written(config, site.run_dir))
    assert words == [
        os.path.abspath("bin/my-server"),
        "-p",
        str(site.port),
        "-r",
        str(site.docroot),
        "-w",
        "1",
        "-l",
        f"{site.run_dir}/log",
        "--fast",
        "--cache",
        "10",
    ]
    assert server.name == "mine" and not server.installed()
    assert "my-server" in server.install_command()


def _written(config, run_dir):
    run_dir.mkdir(parents=True, exist_ok=True)
    for name, text in config.files.items():
        (run_dir / name).write_text(text)
    return run_dir


def test_command_that_is_not_installed_is_one_clear_line(site):
    with pytest.raises(ServerFailed, match="no-such-server-xyz is not installed"):
        start(CommandServer("no-such-server-xyz --port {port}", name="no-such-server-xyz"), site, ServerProfile())


def test_command_runs_a_real_server_verified_loaded_and_stopped(site):
    server = CommandServer(PY_HTTP)
    assert server.version().startswith("Python 3")
    with start(server, site, ServerProfile()) as running:
        assert shlex.split(running.config.text) == running.process.args  # the config is what ran
        verify(site, FILES, server.name)
        _load_and_stop(running, site)


def test_command_config_file_is_what_runs(site, tmp_path):
    template = tmp_path / "cmd.txt"
    template.write_text(PY_HTTP.replace("{docroot}", "'{docroot}'") + "\n")
    server = CommandServer(f"{sys.executable} -c pass")  # replaced by the profile's file
    with start(server, site, ServerProfile(config_file=template)) as running:
        verify(site, FILES, "python")
        assert "http.server" in running.config.text


def test_command_version_of_a_program_that_serves_instead(tmp_path):
    script = tmp_path / "stubborn-server"
    script.write_text("#!/bin/sh\nsleep 60\n")
    script.chmod(0o755)
    server = CommandServer(f"{script} {{port}}")
    assert server.version() == f"command: {script}"
    assert not [p for p in os.listdir("/proc") if p.isdigit() and _cmdline_has(p, str(script))]


def _cmdline_has(pid, text):
    try:
        return text in Path(f"/proc/{pid}/cmdline").read_text()
    except OSError:
        return False


# ---- node_static.js, run by hand with its flags


def test_node_static_by_its_command_line_flags(site):
    (site.docroot / "sub").mkdir()
    (site.docroot / "sub" / "a.css").write_bytes(b"a{}\n")
    server = CommandServer(f"node {NODE_STATIC} --host {{host}} --port {{port}} --root {{docroot}}", name="node-flags")
    with start(server, site, ServerProfile()):
        verify(site, FILES, server.name, headers={"Accept-Encoding": "gzip"})
        types = {
            path: get(site, path)[0].getheader("Content-Type") for path in ("/", "/100.html", "/test.jpg", "/sub/a.css")
        }
        assert types == {
            "/": "text/html",
            "/100.html": "text/html",
            "/test.jpg": "image/jpeg",
            "/sub/a.css": "text/css",
        }
        assert get(site, "/index.html?x=1")[1] == FILES["index.html"]
        head, body = get(site, "/test.jpg", method="HEAD")
        assert head.status == 200 and body == b"" and head.getheader("Content-Length") == str(len(FILES["test.jpg"]))
        assert get(site, "/nope.html")[0].status == 404
        assert get(site, "/index.html", method="POST")[0].status == 405


# ---- the adapters on two cores, asked for compression, asked for what is not there


@pytest.fixture
def plain_site(site):
    """The site on two cores, its document root at a path without a space (for mighttpd2)."""
    docroot = site.docroot.rename(site.docroot.with_name("www"))
    return Site(docroot=docroot, run_dir=site.run_dir, port=site.port, cpus=(0, 1))


@pytest.mark.parametrize("name", ["mighttpd2", "jetty9", "node"])
def test_tuned_on_two_cores_no_compression_and_404(plain_site, name):
    site = plain_site
    with start(servers.get(name), site, ServerProfile("tuned")) as running:
        for pid in running.pids():
            assert os.sched_getaffinity(pid) == {0, 1}
        verify(site, FILES, name, headers={"Accept-Encoding": "gzip, deflate, br"})
        assert get(site, "/no-such-file.html")[0].status == 404
        if name == "node":  # the cluster: a primary and one worker per core
            assert len(running.pids()) == 3
    assert session_pids(running.pid) == []


def test_mighttpd2_tuned_runtime_cores_and_directives_win(plain_site):
    site = plain_site
    profile = ServerProfile("tuned", directives=("Index_File: 100.html",))
    config = servers.get("mighttpd2").render(site, profile)
    assert config.files["mighty.rts"].split() == ["-N2"]
    assert "Logging: No" in config.files["mighty.conf"]
    with start(servers.get("mighttpd2"), site, profile):
        assert get(site, "/")[1] == FILES["100.html"]


def test_mighttpd2_default_is_one_core_with_logging(plain_site):
    config = servers.get("mighttpd2").render(plain_site, ServerProfile())
    assert config.files["mighty.rts"].strip() == ""
    assert "Logging: Yes" in config.files["mighty.conf"]


def test_mighttpd2_refuses_a_document_root_its_routing_file_cannot_say(site):
    with pytest.raises(ServerFailed, match="cannot serve .*w w w"):
        start(servers.get("mighttpd2"), site, ServerProfile())


def test_jetty9_profiles_and_directives_last(site):
    site = Site(docroot=site.docroot, run_dir=site.run_dir, port=site.port, cpus=(0, 1, 2, 3))
    jetty = servers.get("jetty9")
    default = jetty.render(site, ServerProfile())
    assert "--module=deploy,http,jsp,jstl,websocket,ext,resources" in default.text
    assert "ActiveProcessorCount" not in default.files["jvm.args"]
    tuned = jetty.render(site, ServerProfile("tuned", directives=("jetty.threadPool.maxThreads=99",)))
    ini = tuned.files["base/start.ini"].splitlines()
    assert "jetty.threadPool.minThreads=32" in ini and ini[-1] == "jetty.threadPool.maxThreads=99"
    assert "-XX:ActiveProcessorCount=4" in tuned.files["jvm.args"]
    assert f'<Set name="war">{site.docroot}</Set>' in tuned.files["base/webapps/root.xml"]
    assert jetty.version().startswith("jetty 9.4.")


def test_node_directives_set_server_properties(site):
    profile = ServerProfile("tuned", directives=("headersTimeout=10000", "keepAliveTimeout 1000"))
    with start(servers.get("node"), site, profile) as running:
        assert '"headersTimeout": 10000' in running.config.text
        response, _ = get(site, "/index.html")
        assert response.getheader("Keep-Alive") == "timeout=1"
