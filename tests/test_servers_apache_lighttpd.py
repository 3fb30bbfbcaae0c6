"""The apache2 (prefork, worker, event) and lighttpd adapters: what each profile renders, that the
servers accept it, and how apache is run (as www-data, with one capability)."""

import os
import subprocess
from pathlib import Path

import pytest
from httpbench import servers
from httpbench.servers import ServerProfile, Site
from httpbench.servers.adapters import apache2

APACHES = ("apache2-prefork", "apache2-worker", "apache2-event")
CAP_DAC_READ_SEARCH = 1 << 2


def _site(tmp_path, cpus=(0,)):
    (tmp_path / "www").mkdir(exist_ok=True)
    (tmp_path / "run").mkdir(exist_ok=True)
    return Site(docroot=tmp_path / "www", run_dir=tmp_path / "run", port=8080, cpus=cpus)


def _conf(name, site, profile="default", directives=()):
    return servers.get(name).render(site, ServerProfile(profile, directives=directives)).text


def _lines(text):
    return {line.split("#")[0].strip() for line in text.splitlines()} - {""}


@pytest.mark.parametrize("name", APACHES)
def test_apache_default_is_debians(tmp_path, name):
    mpm = name.split("-")[1]
    lines = _lines(_conf(name, _site(tmp_path)))
    assert {
        "KeepAlive On",
        "MaxKeepAliveRequests 100",
        "KeepAliveTimeout 5",
        "Timeout 300",
        "MaxRequestWorkers 150",
        "Include /etc/apache2/mods-available/deflate.conf",
        "Include /etc/apache2/mods-available/status.conf",
        f"LoadModule mpm_{mpm}_module /usr/lib/apache2/modules/mod_mpm_{mpm}.so",
        f'CustomLog "{tmp_path}/run/access.log" combined',
    } <= lines
    assert ("StartServers 5" if mpm == "prefork" else "ThreadsPerChild 25") in lines


@pytest.mark.parametrize("name", APACHES)
@pytest.mark.parametrize("cpus", [(0,), (0, 1), (0, 1, 2)])
def test_apache_tuned_keeps_connections_and_logs_nothing(tmp_path, name, cpus):
    lines = _lines(_conf(name, _site(tmp_path, cpus), "tuned"))
    assert {"KeepAlive On", "KeepAliveTimeout 60", "MaxKeepAliveRequests 1024", "EnableSendfile Off"} <= lines
    # the slow-client limits of docs/servers-defences.md
    assert {"RequestReadTimeout handshake=10 header=10-20,MinRate=500 body=10,MinRate=500", "Timeout 30"} <= lines
    assert not [line for line in lines if line.startswith(("CustomLog", "Include"))]
    assert {line.split()[1].split("_")[0] for line in lines if line.startswith("LoadModule")} == {
        "mpm",
        "authz",
        "dir",
        "mime",
        "reqtimeout",
    }
    value = {
        line.split()[0]: int(line.split()[1]) for line in lines if len(line.split()) == 2 and line.split()[1].isdigit()
    }
    # every open connection has its own process or thread, and none is forked or reaped under load
    assert value["MaxRequestWorkers"] >= apache2.TUNED_CONNECTIONS
    if name == "apache2-prefork":
        assert value["StartServers"] == value["MaxSpareServers"] == value["MaxRequestWorkers"]
    else:
        assert value["ServerLimit"] == value["StartServers"] == len(cpus)
        assert value["ThreadsPerChild"] * len(cpus) == value["MaxRequestWorkers"] == value["MaxSpareThreads"]


def test_lighttpd_default_is_debians(tmp_path):
    lines = _lines(_conf("lighttpd", _site(tmp_path)))
    assert 'index-file.names = ( "index.php", "index.html" )' in lines
    assert 'server.modules += ( "mod_dirlisting", "mod_staticfile" )' in lines
    assert f'server.errorlog = "{tmp_path}/run/error.log"' in lines
    # no keep-alive, worker, access-log or user settings: lighttpd's and Debian's defaults stand
    keys = {line.split("=")[0].strip() for line in lines}
    assert not keys & {
        "server.max-keep-alive-idle",
        "server.max-keep-alive-requests",
        "server.max-read-idle",
        "server.max-write-idle",
        "server.max-worker",
        "accesslog.filename",
        "server.username",
    }


@pytest.mark.parametrize("cpus", [(0,), (0, 1)])
def test_lighttpd_tuned(tmp_path, cpus):
    lines = _lines(_conf("lighttpd", _site(tmp_path, cpus), "tuned"))
    assert {
        "server.max-keep-alive-idle = 60",
        "server.max-keep-alive-requests = 1024",
        "server.max-fds = 20000",
        "server.max-connections = 10000",
        "server.max-read-idle = 10",
        "server.max-write-idle = 10",
    } <= lines
    # server.max-worker is discouraged by lighttpd's docs: only when there are CPUs to spread over
    assert [line for line in lines if line.startswith("server.max-worker")] == (
        ["server.max-worker = 2"] if len(cpus) == 2 else []
    )


@pytest.mark.parametrize("name", APACHES + ("lighttpd",))
def test_directives_come_last(tmp_path, name):
    text = _conf(name, _site(tmp_path), "tuned", directives=("# first extra", "# second extra"))
    assert text.rstrip().splitlines()[-2:] == ["# first extra", "# second extra"]


@pytest.mark.parametrize("profile", ["default", "tuned"])
@pytest.mark.parametrize("name", APACHES + ("lighttpd",))
def test_server_accepts_rendered_config(tmp_path, name, profile):
    """The server's own syntax check, for two CPUs too (max-worker, several apache processes)."""
    site = _site(tmp_path, (0, 1))
    adapter = servers.get(name)
    conf = adapter.render(site, ServerProfile(profile))
    (site.run_dir / conf.main).write_text(conf.text)
    check = ["-t"] if name.startswith("apache2") else ["-tt"]
    done = subprocess.run(
        [adapter.executable(), *check, "-f", str(site.run_dir / conf.main)], capture_output=True, text=True, timeout=30
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_apache_stock_files_exist():
    """The default profile loads Debian's stock module files; a missing one fails loudly at start,
    and this says which."""
    missing = [
        p
        for p in (
            [f"{apache2.MODULES}/mod_{m}.so" for m in apache2.DEBIAN_MODULES]
            + [f"{apache2.STOCK}/{m}.conf" for m in apache2.DEBIAN_MODULE_CONFS]
        )
        if not Path(p).is_file()
    ]
    assert not missing


@pytest.mark.skipif(os.geteuid() != 0, reason="only root changes user")
def test_apache_runs_as_www_data_with_one_capability(tmp_path):
    """Under pytest's 0700 directories: www-data reads the docroot through CAP_DAC_READ_SEARCH."""
    site = _site(tmp_path)
    (site.docroot / "index.html").write_bytes(b"hello!\n")
    site = Site(site.docroot, site.run_dir, servers.free_port(), cpus=(0,))
    with servers.start(servers.get("apache2-worker"), site, ServerProfile()) as running:
        servers.verify(site, {"index.html": b"hello!\n"}, "apache2-worker")
        for pid in running.pids():
            status = dict(line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines())
            assert status["Uid"].split() == ["33"] * 4, f"pid {pid} is not www-data"
            assert int(status["CapEff"], 16) == CAP_DAC_READ_SEARCH


def test_apache_rejected_directive_names_the_rendered_line(tmp_path):
    from httpbench import servers
    from httpbench.servers import ServerFailed, ServerProfile, Site

    docroot = tmp_path / "www"
    docroot.mkdir()
    site = Site(docroot=docroot, run_dir=tmp_path / "run", port=servers.free_port(), cpus=(0,))
    with pytest.raises(ServerFailed) as failed:
        servers.start(servers.get("apache2-event"), site, ServerProfile("tuned", directives=("NoSuchDirective on",)))
    assert "NoSuchDirective" in str(failed.value) and "rendered" in str(failed.value)
