"""nginx + PHP-FPM for real: the suite's own pool started before nginx, both pinned, in both
profiles, the three PHP workloads verified byte for byte against the answers httpbench.plan.dynamic
computes in Python (so the real PHP's output is checked to equal them), loaded by the engine, a
ground truth of the whole chain (php-wait queueing behind a pool of 5), the pool killed in the
middle of a level, and bad input: a script failing with a PHP error, php-fpm not installed.

One nginx + pool start per profile, shared by the module's tests (module-scoped)."""

import http.client
import os
from dataclasses import replace

import pytest
from conftest import CLIENT_CPU, SERVER_CPU, kill_in_first_window, quick_sweep
from httpbench import results, servers
from httpbench.load import engine
from httpbench.observe.monitor import Monitor
from httpbench.plan.dynamic import PHP_KINDS, page, php_workload
from httpbench.plan.workload import Workload
from httpbench.report import summary
from httpbench.results import comparison
from httpbench.servers import PHPUnsupported, ServerProfile, Site, php, php_install, start, verify
from httpbench.servers.host import ServerHost
from httpbench.servers.process import session_pids

WORKLOADS = [php_workload(kind) for kind in PHP_KINDS]
ANSWERS = {path: answer for work in WORKLOADS for path, answer in work.file_map().items()}


@pytest.fixture(scope="module")
def php_nginx(tmp_path_factory):
    """Factory: nginx + its PHP-FPM pool in `profile`, every PHP workload's script in the
    docroot, started on first use and shared; all stopped, by PID, when the module ends."""
    started = {}

    def get(profile: str):
        if profile not in started:
            # A short base: the pool's Unix socket path must fit in 107 bytes.
            base = tmp_path_factory.mktemp(f"php-{profile}")
            (base / "www").mkdir()
            for work in WORKLOADS:
                work.write(base / "www")
            site = Site(base / "www", base / "run", servers.free_port(), cpus=(SERVER_CPU,), php="php-page")
            started[profile] = start(servers.get("nginx"), site, ServerProfile(profile))
        return started[profile]

    yield get
    for running in started.values():
        running.stop()


def _load(url: str, connections: int, seconds: float) -> dict:
    return engine.run({"urls": [url], "connections": connections, "stop": {"duration": seconds}, "cpus": [CLIENT_CPU]})


@pytest.mark.parametrize("profile", ["default", "tuned"])
def test_nginx_serves_the_php_workloads_verified_byte_for_byte(php_nginx, profile):
    running = php_nginx(profile)
    site, pool = running.site, running.php
    assert pool is not None and site.php_socket.is_socket()
    for pid in running.pids() + pool.pids():
        assert os.sched_getaffinity(pid) == {SERVER_CPU}, f"pid {pid} is not pinned"
    # default: Debian's pm = dynamic, 2 children at start; tuned: pm = static, 4 per CPU.
    assert len(pool.pids()) == (1 + 2 if profile == "default" else 1 + 4)
    # The real PHP's output equals what httpbench.plan.dynamic computed, byte for byte.
    verify(site, ANSWERS, "nginx")
    # PHP does not know its length before it is printed: nginx sends the page chunked.
    conn = http.client.HTTPConnection(site.host, site.port, timeout=10)
    conn.request("GET", "/page.php")
    response = conn.getresponse()
    assert response.getheader("Transfer-Encoding") == "chunked" and response.read() == page()
    conn.close()
    report = _load(site.url + "hello.php", 4, 0.5)
    assert report["requests"]["completed"] > 50 and report["errors_total"] == 0, report["errors"]
    assert "pm = static" in pool.config.text if profile == "tuned" else "pm = dynamic" in pool.config.text


# The default pool: Debian's pm = dynamic starts 2 children and adds one a second while none is
# idle (pm.min_spare_servers = 1), up to pm.max_children = 5.
POOL = 5
WAIT_S = 0.010
CONNECTIONS = 20


def test_php_wait_queues_behind_the_pool_ground_truth(php_nginx, measured):
    # Closed loop, 20 connections on a pool of at most 5 children that each wait 10 ms: once the
    # pool has grown to 5, 5 / 10 ms = 500 pages/s, and each request waits its turn behind
    # 20 / 5 = 4 others: a p50 of 4 x 10 ms. A sanity check of the whole chain (nginx, FastCGI,
    # the pool, the engine), not a timing test: 30% either way.
    running = php_nginx("default")
    children_at_start = len(running.php.pids()) - 1  # 2, or 3 if an earlier test's load grew it
    report = _load(running.site.url + "wait.php", CONNECTIONS, 4.2)
    assert report["errors_total"] == 0, report["errors"]
    assert len(running.php.pids()) == 1 + POOL, "the pool did not grow to pm.max_children"
    seconds = [(p["requests"], p["p50_us"]) for p in report["timeseries"]]
    grown_rps, grown_p50_us = seconds[3]  # from its fourth second on the pool is whole
    measured(f"php-wait, nginx + PHP-FPM default pool, {CONNECTIONS} connections: (req/s, p50 us) by second {seconds}")
    assert 0.7 * POOL / WAIT_S <= grown_rps <= 1.3 * POOL / WAIT_S, seconds
    assert 0.7 * CONNECTIONS / POOL * WAIT_S * 1e6 <= grown_p50_us <= 1.5 * CONNECTIONS / POOL * WAIT_S * 1e6, seconds
    # Fewer children at first: the same connections queued longer behind them.
    assert children_at_start < POOL
    assert seconds[0][1] > 1.1 * grown_p50_us and seconds[0][0] < grown_rps, seconds


def test_the_monitor_counts_the_pool_as_the_server_and_shows_it_apart(php_nginx):
    running = php_nginx("tuned")
    monitor = Monitor(running)
    try:
        with monitor.window() as watched:
            _load(running.site.url + "page.php", 8, 0.5)
    finally:
        monitor.stop()
    window = watched.window
    assert not window.crashed, window.events
    assert window.php_processes_max == 1 + 4 and window.processes_max == window.php_processes_max + 2
    # The pool renders the pages: most of the pair's CPU, inside the totals.
    assert 0 < window.php_cpu_cores < window.cpu_cores
    assert 0 < window.php_rss_mean_bytes < window.rss_mean_bytes
    assert 0 < window.php_pss_mean_bytes < window.pss_mean_bytes
    assert window.php_pss_mean_bytes <= window.php_pss_peak_bytes <= window.pss_peak_bytes


KILL_PLAN = """
name = "php-kill"
servers = ["nginx"]
profiles = ["default", "tuned"]
server_cpus = [1]
rounds = 1
warmup = "0s"
[[workload]]
kind = "php-wait"
[levels]
list = [10, 20]
[budget]
duration = "1s"
"""


def test_a_pool_killed_mid_level_counts_5xx_flags_the_level_and_the_sweep_goes_on(tmp_path):
    plan = tmp_path / "plan.toml"
    plan.write_text(KILL_PLAN)
    notes: list = []
    sweep = quick_sweep(plan, tmp_path / "r.db", notes)
    # The pool's master and its children, by PID, 0.3 s into the first level of the first cell.
    killed = kill_in_first_window(sweep, "nginx", lambda running: [running.php.pid, *running.php.pids()])
    run_id = sweep.start()
    sweep.run(run_id)
    killed["timer"].join()
    assert session_pids(killed["pid"]) == [] and session_pids(killed["session"]) == [], "left behind"
    run = sweep.store.run(run_id)
    dead, alive = run["cells"]
    # nginx answered 502 once its pool was gone: counted, the level flagged, the cell stopped.
    (round_,) = dead["rounds"]
    measurement = round_["measurement"]
    assert measurement["status"]["2xx"] > 0 and measurement["status"]["5xx"] > 0, measurement["status"]
    flags = {f["kind"]: f["reason"] for f in measurement["flags"]}
    assert "PHP-FPM pool" in flags.get("crashed", "") and str(killed["pid"]) in flags["crashed"], flags
    assert dead["status"] == "failed" and "level 10" in dead["error"] and "PHP-FPM" in dead["error"], dead["error"]
    assert any("PHP-FPM" in note for note in notes), notes
    # The sweep went on: the next cell, on a fresh server and pool, measured every level.
    assert alive["status"] == "done" and [r["level"] for r in alive["rounds"]] == [10, 20], alive["error"]
    assert all(r["measurement"]["status"]["5xx"] == r["measurement"]["errors_total"] == 0 for r in alive["rounds"])
    # The level served by a dead pool is never ranked.
    measured = results.load(sweep.store, run_id)
    ranked = [cell for group in comparison.groups(measured.measured) for cell in group.ranked()]
    assert [cell.profile for cell in ranked if cell.server == "nginx"] in ([], ["tuned"])
    assert any("flagged crashed" in line for line in summary.cautions([measured]))


BROKEN = Workload("broken", (("broken.php", b"<?php\nno_such_function();\n"),), ("/broken.php",), php="php-hello")


def test_a_script_failing_with_a_php_error_fails_verification_in_phps_words():
    host = ServerHost((SERVER_CPU,))
    try:
        started = host.start(servers.get("nginx"), ServerProfile("default"), BROKEN, 1)
        running = host.running
        # The pool's configuration and version are stored with the server's.
        assert "[www]" in started.config_text and "PHP 8" in started.version
        with pytest.raises(servers.VerificationFailed) as failed:
            host.verify()
    finally:
        host.stop()
    message = str(failed.value)
    assert "\n" not in message and "status 500" in message, message
    assert message.endswith(
        "PHP Fatal error:  Uncaught Error: Call to undefined function no_such_function() in "
        f"{running.site.docroot}/broken.php:2"
    ), message
    assert session_pids(running.pid) == [] and session_pids(running.php.pid) == []


def test_a_server_that_sends_the_scripts_source_fails_verification_saying_so(tmp_path):
    # nginx for a site without PHP serves page.php as a file: its source, which verification
    # of the PHP workload names as such.
    work = php_workload("php-page")
    (tmp_path / "www").mkdir()
    work.write(tmp_path / "www")
    site = Site(tmp_path / "www", tmp_path / "run", servers.free_port(), cpus=(SERVER_CPU,))
    with start(servers.get("nginx"), site, ServerProfile("tuned")):
        with pytest.raises(servers.VerificationFailed, match="the script's own source, not its output"):
            verify(replace(site, php=work.php), work.file_map(), "nginx")


def test_php_fpm_missing_is_refused_naming_the_install_command(monkeypatch, tmp_path):
    monkeypatch.setattr(php_install, "FPM", str(tmp_path / "php-fpm8.2"))
    refusal = servers.get("nginx").php_refusal()
    assert refusal == (
        f"PHP-FPM is not installed ({tmp_path}/php-fpm8.2 is missing); "
        "install it with: apt-get install -y php8.2-fpm php8.2-opcache"
    )
    site = Site(tmp_path, tmp_path / "run", servers.free_port(), php="php-hello")
    with pytest.raises(PHPUnsupported, match="apt-get install -y php8.2-fpm php8.2-opcache"):
        start(servers.get("nginx"), site, ServerProfile())
    assert not site.run_dir.exists(), "something was started"
    monkeypatch.setattr(php_install, "MOD_PHP", tmp_path / "libphp8.2.so")
    assert php_install.missing("module").endswith("install it with: apt-get install -y libapache2-mod-php8.2")


def test_a_pool_that_fails_to_start_says_why_in_php_fpms_words_and_leaves_nothing(monkeypatch, tmp_path):
    rendered = php.pool_conf
    monkeypatch.setattr(php, "pool_conf", lambda site, profile: rendered(site, profile) + "pm.bogus = 3\n")
    (tmp_path / "www").mkdir()
    site = Site(tmp_path / "www", tmp_path / "run", servers.free_port(), cpus=(SERVER_CPU,), php="php-hello")
    with pytest.raises(servers.ServerFailed) as failed:
        start(servers.get("nginx"), site, ServerProfile())
    message = str(failed.value)
    assert message.startswith("PHP-FPM exited with code 78 at start: ") and "\n" not in message, message
    assert "unknown entry 'pm.bogus'" in message and "rendered php-fpm.conf: 'pm.bogus = 3'" in message, message
    assert not (site.run_dir / "server.log").exists(), "nginx was started without its pool"
    assert not [pid for pid in os.listdir("/proc") if pid.isdigit() and _runs_in(pid, site.run_dir)]


def _runs_in(pid: str, run_dir) -> bool:
    try:
        return str(run_dir) in open(f"/proc/{pid}/cmdline").read()
    except OSError:
        return False


def test_a_server_that_cannot_run_php_names_those_that_can(tmp_path):
    refusal = servers.php_refusal(servers.get("nghttpd"))
    assert refusal.startswith("nghttpd cannot run PHP in httpbench; choose a server that can: ") and "nginx" in refusal
    site = Site(tmp_path, tmp_path / "run", servers.free_port(), php="php-hello", http2=True)
    with pytest.raises(PHPUnsupported, match="nghttpd cannot run PHP"):
        start(servers.get("nghttpd"), site, ServerProfile())


def test_a_plan_names_php_workloads_by_kind_and_their_pages_serve_as_files_for_the_ceiling(tmp_path):
    from httpbench.plan import builtin as plans
    from httpbench.plan.model import PlanError

    plan = tmp_path / "plan.toml"
    plan.write_text(KILL_PLAN.replace('kind = "php-wait"', 'kind = "php-wait"\n[[workload]]\nkind = "php-page"'))
    work = plans.load(str(plan)).workloads
    assert [(w.label, w.php, w.paths) for w in work] == [
        ("php-wait", "php-wait", ("/wait.php",)),
        ("php-page", "php-page", ("/page.php",)),
    ]
    # The client ceiling's reference server runs no PHP: it serves the same answers as files.
    files = work[1].as_files()
    assert files.php is None and dict(files.files) == files.file_map() == {"page.php": page()}
    plan.write_text(KILL_PLAN.replace('kind = "php-wait"', 'kind = "php-wait"\nsize = 7'))
    with pytest.raises(PlanError, match="workload.size does not apply to kind = 'php-wait', which takes no other key"):
        plans.load(str(plan))


def test_stopping_leaves_no_php_fpm_nor_nginx_behind(php_nginx):
    for profile in ("default", "tuned"):
        running = php_nginx(profile)
        running.stop()
        assert session_pids(running.pid) == [] and session_pids(running.php.pid) == []
        assert not running.site.php_socket.exists() or _refused(running.site.php_socket)


def _refused(path) -> bool:
    import socket

    with socket.socket(socket.AF_UNIX) as probe:
        try:
            probe.connect(str(path))
        except OSError:
            return True
    return False
