"""Operators' actions on real servers (issue 29): each performed by its server's documented means
and verified to have happened as that server promises, a refused one reported in the server's
words, and none of them taken by the monitor for a crash or a worker restart."""

import os
import signal
import time

import pytest
from httpbench import servers
from httpbench.judge import honesty
from httpbench.plan.dynamic import php_workload
from httpbench.plan.protocol import TlsSettings
from httpbench.plan.workload import generated
from httpbench.servers import ServerProfile
from httpbench.servers.base import ServerFailed
from httpbench.servers.host import ServerHost, usable_cpus
from httpbench.servers.operations import ACTIONS

# Two workers where the server has workers: a reload must replace every one of them.
CPUS = usable_cpus()[:2]


@pytest.fixture(scope="module")
def hosts():
    """`hosts(name)`: a ServerHost running `name` (tuned, watched by a monitor), started once for
    the module; `https` serves it over HTTPS, and another `key` gets a server of its own (one whose
    configuration a test breaks)."""
    started = {}

    def host(name: str, https: bool = False, key: str = "") -> ServerHost:
        if (name, https, key) not in started:
            running = ServerHost(CPUS)
            started[name, https, key] = running
            tls = TlsSettings() if https else None
            running.start(servers.get(name), ServerProfile("tuned"), generated(7), len(CPUS), tls)
            running.watch()
        return started[name, https, key]

    yield host
    for running in started.values():
        running.stop()


def flags(window: dict) -> list:
    """The honesty flags a round measured in `window` would get for its server."""
    m = {"server": window, "errors_total": 0, "aborted": None}
    return [flag.kind for flag in (honesty.crashed(m), honesty.server_restarted(m), honesty.ended_early(m)) if flag]


def workers(host: ServerHost) -> set:
    return set(host.running.pids()) - {host.running.pid}


@pytest.mark.parametrize("name", ["nginx", "apache2-event", "lighttpd", "caddy", "h2o", "varnish"])
def test_a_reload_keeps_the_master_replaces_the_workers_and_is_verified_after(hosts, name):
    host = hosts(name)
    master, before = host.running.pid, workers(host)
    host.start_window()
    done = host.perform("reload")
    window = host.end_window()
    assert done["ok"] and done["problem"] is None, done
    assert done["master"] == "kept" and host.running.pid == master
    assert done["took_s"] is not None and done["at"] <= time.time()
    if host.running.server.operations["reload"].workers == "replaced":
        # Every worker from before is gone (caddy is one process: it has none to replace).
        assert not before & workers(host) and done["workers_replaced"] == len(before)
        assert (name == "caddy") == (not before)
    else:
        # varnish's new VCL runs in the cache process it had.
        assert before and before <= workers(host) and done["workers_replaced"] == 0
    host.verify()
    # What the reload did is the window's planned figures, flagged neither crash nor restart.
    assert window["planned_workers_exited"] >= done["workers_replaced"] and window["workers_exited"] == 0
    assert not window["crashed"] and not flags(window), window


def test_apache2s_graceful_restart_and_restart_are_each_counted_as_they_happened(hosts):
    host = hosts("apache2-event")
    host.start_window()
    master, before = host.running.pid, workers(host)
    graceful = host.perform("graceful-restart")
    assert graceful["ok"] and graceful["master"] == "kept" and host.running.pid == master
    assert graceful["workers_replaced"] == len(before) > 0 and not before & workers(host)
    before = workers(host)
    restart = host.perform("restart")
    assert restart["ok"] and restart["master"] == "replaced" and host.running.pid != master
    assert restart["workers_replaced"] == len(before)
    host.verify()
    window = host.end_window()
    assert not window["crashed"] and not flags(window), window
    assert window["planned_workers_exited"] >= 2 * len(before)


def test_a_restart_performed_from_a_thread_that_then_ends_leaves_the_server_running(hosts):
    """The sweep performs a level's events from a thread of their own, and a cluster's server host
    from its actor's threads: a server the kernel killed when the thread that restarted it ended
    (its parent-death signal follows the thread) died in every level after a restart."""
    import threading

    host = hosts("nginx", key="restarted from a thread")
    done: dict = {}
    worker = threading.Thread(target=lambda: done.update(host.perform("restart")))
    worker.start()
    worker.join()
    assert done["ok"] and done["master"] == "replaced", done
    time.sleep(0.3)
    assert host.running.alive(), host.running.log_tail()
    host.verify()


def test_lighttpd_restarts_gracefully_in_the_same_process(hosts):
    host = hosts("lighttpd")
    master, before = host.running.pid, workers(host)
    done = host.perform("graceful-restart")
    assert done["ok"] and done["master"] == "kept" and host.running.pid == master, done
    assert len(before) == 2 and not before & workers(host)
    host.verify()


def test_nginx_reopens_its_logs_with_its_workers_kept(hosts):
    host = hosts("nginx")
    log = host.running.site.run_dir / "error.log"
    before = workers(host)
    done = host.perform("reopen-logs")
    assert done["ok"] and done["master"] == "kept" and done["workers_replaced"] == 0, done
    # Rotated as logrotate does: moved aside, and opened anew by the server.
    assert log.exists() and log.with_name("error.log.1").exists() and workers(host) == before


def test_a_restart_is_followed_by_the_monitor_and_a_later_crash_still_flagged(hosts):
    host = hosts("nginx")
    host.start_window()
    master = host.running.pid
    done = host.perform("restart")
    assert done["ok"] and done["master"] == "replaced" and host.running.pid != master, done
    host.verify()
    window = host.end_window()
    assert not window["crashed"] and not flags(window), window
    # The new master's worker killed, unplanned, once the restart has settled: flagged as it was
    # before any restart.
    from httpbench.observe.monitor import SETTLE_S

    time.sleep(SETTLE_S)
    host.start_window()
    os.kill(min(workers(host)), signal.SIGKILL)
    deadline = time.monotonic() + 10
    while len(workers(host)) < len(CPUS) and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.3)  # the monitor's samples (100 ms) see the replacement
    window = host.end_window()
    assert flags(window) == ["server_restarted"] and not window["planned_events"], window


def test_a_php_sites_pool_is_reloaded_with_its_server():
    host = ServerHost(CPUS)
    try:
        host.start(servers.get("nginx"), ServerProfile("tuned"), php_workload("php-hello"), len(CPUS))
        pool = host.running.php
        children = set(pool.pids()) - {pool.pid}
        done = host.perform("reload")
        # php-fpm's USR2: the pool's master kept, its children replaced with the server's workers.
        assert done["ok"] and pool.alive() and not children & set(pool.pids()), done
        assert done["workers_replaced"] >= len(children) + len(CPUS)
        host.verify()
    finally:
        host.stop()


@pytest.mark.parametrize("name", ["nginx", "caddy"])
def test_an_https_reload_serves_the_renewed_certificate(hosts, name):
    host = hosts(name, https=True)
    tls = host.running.site.tls
    old = tls.cert.read_bytes()
    done = host.perform("reload", renew_certificate=True)
    assert done["ok"] and done["certificate_renewed"], done
    # A new certificate at the same paths, signed by the same authority, verified as served.
    assert tls.cert.read_bytes() != old
    host.verify()


@pytest.mark.parametrize(
    "name, words",
    [
        ("nginx", '[emerg] unknown directive "httpbench-broken-on-purpose"'),
        ("apache2-event", "Invalid command 'httpbench-broken-on-purpose'"),
        ("lighttpd", "parser failed"),
        ("caddy", "Syntax error"),
        ("varnish", "Found: 'httpbench-broken-on-purpose'"),
    ],
)
def test_a_reload_of_a_broken_configuration_is_reported_failed_in_the_servers_words(hosts, name, words):
    host = hosts(name, key="broken")
    master, before = host.running.pid, workers(host)
    host.break_config()
    done = host.perform("reload")
    assert not done["ok"] and done["took_s"] is None and not done["certificate_renewed"], done
    said = done["problem"].replace(f"{master}#{master}: ", "")  # nginx's pid#thread
    assert words in said and "\n" not in said, said
    # Still serving, on its old configuration, with the workers it had.
    assert done["master"] == "kept" and host.running.pid == master and workers(host) == before
    host.verify()


def test_an_action_a_server_lacks_is_refused_in_one_line(hosts):
    host = hosts("caddy")
    with pytest.raises(ServerFailed, match=r"^caddy has no reopen-logs in httpbench; it has restart, reload$"):
        host.perform("reopen-logs")
    assert {action for name in servers.names() for action in servers.get(name).operations} <= set(ACTIONS)


def test_a_cluster_server_host_performs_on_its_actor():
    from httpbench.cluster.server_host import RemoteServerHost

    class Actor:
        def perform(self, action, renew_certificate):
            return {"action": action, "certificate_renewed": renew_certificate}

    remote = RemoteServerHost(Actor(), "srv", lambda call, host: call())
    assert remote.perform("reload", True) == {"action": "reload", "certificate_renewed": True}
