"""The benchmark cluster on loopback: certificates, the TLS rule and bad addresses, exact merging,
and real Dask workers under mutual TLS against a real nginx. One scheduler serves the module,
with a server worker (pinned to CPU 1, and alone in finding `fakeserver` on its PATH) and client
workers c1 and c2; a test that kills a worker (or the scheduler) gets it back before the next one.
Covered: a level split over two hosts, mutual TLS (clients without the CA's certificate refused),
a scheduler or worker that cannot start, a long level, a host lost before the barrier or
mid-level, a host whose engine fails stopping the others, and whole runs: one going on after a
loss with the later levels flagged, one stopping with the resume command, one losing its
scheduler, facts and checks taken on the server host, client tools refused. (Hosts in network
namespaces: test_cluster_hosts.py.)"""

import os
import shlex
import shutil
import signal
import socket
import ssl
import stat
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path

import pytest
from conftest import HTTPBENCH, free_port, httpbench, log_lines, nginx_plan, short_plan, stop_group, tls_nginx
from httpbench import cluster
from httpbench.cluster import client_host, daemons
from httpbench.cluster.server_host import RemoteServerHost
from httpbench.load import engine
from httpbench.store.database import Store

SEVEN = b"7 bytes"
HOSTS = ("c1", "c2", "srv")


def one_line_error(done: subprocess.CompletedProcess) -> str:
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr[-2000:]
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
    return done.stderr


def test_certificates_are_private_and_signed_by_their_ca(tmp_path):
    from cryptography import x509

    written = cluster.make_certs(tmp_path / "certs")
    assert stat.S_IMODE((tmp_path / "certs").stat().st_mode) == 0o700
    assert {p.name for p in written} == {"ca.pem", "ca-key.pem"} | {
        f"{n}{s}" for n in cluster.CERT_NAMES for s in (".pem", "-key.pem")
    }
    assert all(stat.S_IMODE(p.stat().st_mode) == 0o600 for p in written)
    ca = x509.load_pem_x509_certificate((tmp_path / "certs" / "ca.pem").read_bytes())
    for name in cluster.CERT_NAMES:
        cert = x509.load_pem_x509_certificate((tmp_path / "certs" / f"{name}.pem").read_bytes())
        cert.verify_directly_issued_by(ca)


def test_certificates_go_only_into_a_new_or_empty_directory(tmp_path):
    a_file = tmp_path / "hostname"
    a_file.write_text("x")
    assert "is not a directory" in one_line_error(httpbench("cluster", "certs", str(a_file)))
    made = tmp_path / "certs"
    cluster.make_certs(made)
    ca = (made / "ca.pem").read_bytes()
    assert "is not empty" in one_line_error(httpbench("cluster", "certs", str(made)))
    assert (made / "ca.pem").read_bytes() == ca
    # A directory holding other things keeps its mode, even when --force writes into it.
    shared = tmp_path / "shared"
    shared.mkdir(mode=0o755)
    (shared / "notes.txt").write_text("mine")
    assert "is not empty" in one_line_error(httpbench("cluster", "certs", str(shared)))
    forced = httpbench("cluster", "certs", str(shared), "--force")
    assert forced.returncode == 0, forced.stderr
    assert stat.S_IMODE(shared.stat().st_mode) == 0o755 and (shared / "notes.txt").read_text() == "mine"
    assert stat.S_IMODE((shared / "ca-key.pem").stat().st_mode) == 0o600
    empty = tmp_path / "empty"
    empty.mkdir(mode=0o755)
    assert httpbench("cluster", "certs", str(empty)).returncode == 0
    assert stat.S_IMODE(empty.stat().st_mode) == 0o700


def test_plain_tcp_beyond_loopback_and_bad_addresses_are_refused(tmp_path):
    assert "refusing plain TCP" in one_line_error(
        httpbench("worker", "--scheduler", "tcp://10.20.30.40:8786", "--role", "client")
    )
    assert "--certs" in one_line_error(httpbench("worker", "--scheduler", "tls://10.20.30.40:8786", "--role", "client"))
    assert "refusing plain TCP" in one_line_error(httpbench("cluster", "scheduler", "--address", "tcp://0.0.0.0:8786"))
    assert "refusing plain TCP" in one_line_error(
        httpbench("run", "--cluster", "tcp://10.20.30.40:8786", "--db", str(tmp_path / "r.db"))
    )
    assert not (tmp_path / "r.db").exists() or Store(str(tmp_path / "r.db")).runs() == []
    listen = httpbench("worker", "--scheduler", "tcp://127.0.0.1:8786", "--role", "client", "--listen", "tcp://0.0.0.0")
    assert "refusing plain TCP for the worker's --listen address tcp://0.0.0.0" in one_line_error(listen)
    certs = tmp_path / "certs"
    cluster.make_certs(certs)
    tcp_with_certs = httpbench("cluster", "scheduler", "--address", "tcp://127.0.0.1:8786", "--certs", str(certs))
    assert "plain TCP but --certs is given" in one_line_error(tcp_with_certs)
    assert "is not tls://HOST:PORT" in one_line_error(
        httpbench("worker", "--scheduler", "tls://host:port", "--role", "client", "--certs", str(certs))
    )
    cluster.check_address("tcp://127.0.0.1:8786", None)
    cluster.check_address("tcp://[::1]:8786", None)


def test_an_address_without_a_scheme_is_plain_tcp_and_routed():
    assert cluster.check_address("localhost:8786", None) == "tcp://localhost:8786"
    assert daemons.route_address("tcp://localhost:8786") == "127.0.0.1"
    assert daemons.listen_address("tcp://localhost:8786") == "tcp://127.0.0.1"
    # A worker's IPv6 address is bracketed, or Dask would read its last group as a port.
    assert daemons.listen_address("tcp://[::1]:8786") == "tcp://[::1]"


def test_a_level_is_split_as_evenly_as_whole_numbers_allow():
    spec = {"urls": ["http://127.0.0.1:1/"], "connections": 10, "stop": {"requests": 1000}}
    shares = engine.split_spec(spec, 3)
    assert [s["connections"] for s in shares] == [4, 3, 3]
    assert [s["stop"]["requests"] for s in shares] == [334, 333, 333]
    # The rest of the spec is the level's.
    assert all(s["urls"] == spec["urls"] for s in shares)
    rated = engine.split_spec({**spec, "stop": {"duration": 1.0}, "rate": 1000.0}, 4)
    assert sum(s["rate"] for s in rated) == pytest.approx(1000.0) and len(rated) == 4
    assert len(engine.split_spec({**spec, "connections": 2}, 5)) == 2
    # A budget smaller than the hosts: no host gets 0 requests (the engine refuses that).
    assert [s["stop"] for s in engine.split_spec({**spec, "connections": 1, "stop": {"requests": 1}}, 3)] == [
        {"requests": 1}
    ]
    assert [s["stop"] for s in engine.split_spec({**spec, "connections": 2, "stop": {"requests": 2}}, 3)] == [
        {"requests": 1},
        {"requests": 1},
    ]


def test_merging_adds_counters_and_histograms_exactly(nginx):
    url, _ = nginx({"index.html": SEVEN})
    spec = {"urls": [url + "index.html"], "connections": 4, "stop": {"requests": 3000}}
    reports = [engine.run(spec), engine.run({**spec, "connections": 8})]
    level = {**spec, "connections": 12, "stop": {"requests": 6000}}
    merged = cluster.merge_hosts(reports, ["a", "b"], level)
    # The level's spec at the top, each host's share and load start under `hosts`.
    assert "host" not in merged and "started_at" not in merged and merged["spec"] == as_read(level)
    assert [h["report"]["spec"]["connections"] for h in merged["hosts"]] == [4, 8]
    assert [h["started_at"] for h in merged["hosts"]] == [r["started_at"] for r in reports]
    assert merged["requests"]["completed"] == 6000 == merged["latency"]["total"]["count"]
    assert merged["status"]["2xx"] == 6000 and merged["errors_total"] == 0
    added = engine.merge_latency([r["latency"]["total"] for r in reports])
    assert merged["latency"]["total"]["p99_us"] == added["p99_us"]
    assert merged["latency"]["total"]["max_us"] == max(r["latency"]["total"]["max_us"] for r in reports)
    assert [h["host"] for h in merged["hosts"]] == ["a", "b"]
    # The engine's handling delay, a mean per response, weighted by each host's responses.
    weighted = sum(r["client"]["handling_delay_us"] * r["requests"]["completed"] for r in reports) / 6000
    assert merged["client"]["handling_delay_us"] == pytest.approx(weighted)
    # Requests unanswered at the end: their mean wait weighted by how many, and the longest.
    for r, (n, mean, most) in zip(reports, [(2, 100.0, 150.0), (6, 300.0, 900.0)]):
        r["requests"].update(in_flight=n, in_flight_age_mean_us=mean, in_flight_age_max_us=most)
    reports[1]["aborted"] = "stopped on request before the end"
    merged = cluster.merge_hosts(reports, ["a", "b"], level)
    assert merged["requests"]["in_flight"] == 8
    assert merged["requests"]["in_flight_age_mean_us"] == pytest.approx(250.0)
    assert merged["requests"]["in_flight_age_max_us"] == 900.0
    assert merged["aborted"] == "b: stopped on request before the end"


def as_read(spec: dict) -> dict:
    """`spec` as the engine reads it, what it leaves out at its defaults: a report's spec."""
    [whole] = engine.split_spec(spec, 1)
    return whole


def assert_is_the_engines_merge(level: dict) -> None:
    """A cluster's level is `Report::merge` of its hosts' reports, but for what is the level's
    (its spec) or each host's (facts, load start, reason to abort, named after the host)."""
    hosts = [{**h["report"], "started_at": h["started_at"]} for h in level["hosts"]]
    direct = engine.merge_reports(level["spec"], hosts)
    own = {
        "spec",
        "host",
        "started_at",
        "aborted",
        "hosts",
        "client_hosts",
        "lost_hosts",
        "absent_hosts",
        "start_spread_s",
    }
    assert {k: v for k, v in level.items() if k not in own} == {k: v for k, v in direct.items() if k not in own}


class StopEvent:
    """A level's `stop` Event for an engine process run here: set from the start, or never."""

    def __init__(self, is_set: bool) -> None:
        self.is_set = lambda: is_set


def engine_process_running(code: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)


def test_an_engine_process_that_prints_no_report_or_will_not_stop_is_dealt_with(monkeypatch):
    with engine_process_running("print('Segmentation fault')") as garbled:
        with pytest.raises(cluster.ClusterError, match="on c1 printed no report but: 'Segmentation fault'"):
            client_host.report_of(garbled, StopEvent(False), "c1")
    # An engine that ignores its stop is killed, not waited for.
    monkeypatch.setattr(client_host, "ENGINE_STOP_TIMEOUT_S", 0.5)
    with engine_process_running(
        "import signal, time; signal.signal(signal.SIGINT, signal.SIG_IGN); time.sleep(60)"
    ) as stuck:
        started = time.monotonic()
        assert client_host.report_of(stuck, StopEvent(True), "c1") is None
        assert stuck.wait(timeout=5) == -signal.SIGKILL and time.monotonic() - started < 5


def failing_with(error: Exception):
    """A cluster's `answer` whose every call to the server host fails with `error`."""

    def answer(call, host):
        raise error

    return answer


def test_stopping_a_lost_server_host_is_skipped_but_a_server_that_will_not_stop_is_not():
    from httpbench.servers import ServerFailed

    RemoteServerHost(None, "srv", failing_with(cluster.ServerHostLost("the server host srv was lost"))).stop()
    RemoteServerHost(None, "srv", failing_with(cluster.SchedulerLost("lost the scheduler"))).stop()
    with pytest.raises(ServerFailed, match="nginx would not stop"):
        RemoteServerHost(None, "srv", failing_with(ServerFailed("nginx would not stop"))).stop()


def test_dask_is_not_imported_without_cluster(tmp_path):
    plan = short_plan(tmp_path, '["reference"]', "1", "requests = 200")
    code = (
        "import sys\n"
        "from httpbench.cli import main as cli\n"
        "from httpbench.sweep import ceiling\n"
        "ceiling.CEILING_ROUNDS, ceiling.CEILING_SECONDS = 1, 0.2   # shortened: only the imports matter\n"
        f"code = cli.main(['run', {str(plan)!r}, '--db', {str(tmp_path / 'r.db')!r}])\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('dask', 'distributed')), code)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.stdout.strip().splitlines()[-1] == "[] 0", done.stdout[-1000:] + done.stderr[-2000:]


# ---------------------------------------------------------------- a real cluster on loopback

FAKE_SERVER = """#!/bin/sh
# A server only the server host has: its version, or a static server on {{port}} {{host}} {{docroot}}.
if [ "$1" = "--version" ]; then echo "fakeserver 1.0"; exit 0; fi
exec {python} -m http.server "$1" --bind "$2" --directory "$3"
"""


class LoopbackCluster:
    """A scheduler and workers on loopback under mutual TLS, each its own session; the server
    worker runs on CPU 1 only and has `bin/` (holding `fakeserver`) on its PATH."""

    def __init__(self, base: Path) -> None:
        self.base = base
        self.certs = base / "certs"
        cluster.make_certs(self.certs)
        self.address = f"tls://127.0.0.1:{free_port()}"
        self.bin = base / "bin"
        self.bin.mkdir()
        fake = self.bin / "fakeserver"
        fake.write_text(FAKE_SERVER.format(python=shlex.quote(sys.executable)))
        fake.chmod(0o755)
        self.procs = {}
        self.scheduler()

    def scheduler(self) -> subprocess.Popen:
        return self.spawn("scheduler", "cluster", "scheduler", "--address", self.address)

    def spawn(self, name: str, *args, **popen) -> subprocess.Popen:
        with open(self.base / f"{name}.log", "a") as log:
            proc = subprocess.Popen(
                [sys.executable, "-m", "httpbench", *args, "--certs", str(self.certs)],
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                **popen,
            )
        self.procs[name] = proc
        return proc

    def worker(self, name: str, role: str = "client", **popen) -> subprocess.Popen:
        return self.spawn(
            name,
            "worker",
            "--scheduler",
            self.address,
            "--role",
            role,
            "--name",
            name,
            "--listen",
            "tls://127.0.0.1",
            **popen,
        )

    def names(self, load: cluster.ClusterLoad) -> set:
        return {str(w.get("name")) for w in load.client.scheduler_info(n_workers=-1)["workers"].values()}

    def ensure(self) -> None:
        """The scheduler and every worker of HOSTS up and registered, and no other: the one a test
        killed is back (all of them, after the scheduler)."""
        if self.procs["scheduler"].poll() is not None:
            for proc in self.procs.values():
                stop_group(proc)  # the workers close on losing the scheduler; this reaps them
            self.scheduler()
        for name in HOSTS:
            if name not in self.procs or self.procs[name].poll() is not None:
                if name in self.procs:
                    stop_group(self.procs[name])
                if name == "srv":
                    self.worker(
                        name,
                        "server",
                        env={**os.environ, "PATH": f"{self.bin}:{os.environ['PATH']}"},
                        preexec_fn=lambda: os.sched_setaffinity(0, {1}),
                    )
                else:
                    self.worker(name)
        deadline = time.monotonic() + 60
        load = None
        try:
            while True:
                try:
                    load = load or cluster.ClusterLoad(self.address, self.certs)
                    if self.names(load) == set(HOSTS):
                        return
                except cluster.ClusterError:
                    pass
                assert time.monotonic() < deadline, {n: (self.base / f"{n}.log").read_text()[-500:] for n in self.procs}
                time.sleep(0.3)
        finally:
            if load is not None:
                load.close()

    def down(self) -> None:
        for proc in reversed(list(self.procs.values())):
            stop_group(proc)

    def run(self, *args, timeout=180) -> subprocess.CompletedProcess:
        return httpbench("run", *args, "--cluster", self.address, "--certs", str(self.certs), timeout=timeout)


@pytest.fixture(scope="module")
def loopback_cluster(tmp_path_factory):
    if len(os.sched_getaffinity(0)) < 2 or 1 not in os.sched_getaffinity(0):
        pytest.fail("the cluster tests pin the server worker to CPU 1: run them where CPUs 0 and 1 are usable")
    net = LoopbackCluster(tmp_path_factory.mktemp("cluster"))
    try:
        yield net
    finally:
        net.down()


@pytest.fixture
def tls_cluster(loopback_cluster):
    """The module's cluster with every worker up, and a ClusterLoad of this test's own."""
    loopback_cluster.ensure()
    load = cluster.ClusterLoad(loopback_cluster.address, loopback_cluster.certs)
    try:
        yield loopback_cluster, load
    finally:
        load.close()


def kill_when(log: Path, victim: subprocess.Popen, size: int = 50_000) -> threading.Thread:
    """SIGKILL `victim`'s whole group once the access log shows the load flowing."""

    def watch():
        deadline = time.monotonic() + 60
        while not (log.exists() and log.stat().st_size > size) and time.monotonic() < deadline:
            time.sleep(0.02)
        os.killpg(victim.pid, signal.SIGKILL)

    thread = threading.Thread(target=watch, daemon=True)
    thread.start()
    return thread


def test_a_level_over_two_tls_client_workers_counts_every_request(tls_cluster, nginx, measured):
    _, load = tls_cluster
    url, log = nginx({"index.html": SEVEN})
    level = {"urls": [url + "index.html"], "connections": 6, "stop": {"requests": 5000}}
    merged = load.run(level)
    assert merged["requests"]["completed"] == 5000 == merged["latency"]["total"]["count"]
    assert [h["host"] for h in merged["hosts"]] == ["c1", "c2"] == merged["client_hosts"]
    assert [h["report"]["requests"]["completed"] for h in merged["hosts"]] == [2500, 2500]
    assert_is_the_engines_merge(merged)
    # The stored spec is the level's; each host's, its share with its own engine threads.
    assert merged["spec"] == as_read(level)
    assert [h["report"]["spec"]["connections"] for h in merged["hosts"]] == [3, 3]
    threads = min(len(os.sched_getaffinity(0)), 3)
    assert [h["report"]["spec"]["threads"] for h in merged["hosts"]] == [threads, threads]
    # Each host makes one validation request before its load.
    assert len(log_lines(log, 5000 + 2)) == 5000 + 2
    assert merged["lost_hosts"] == [] and merged["absent_hosts"] == []
    spread = merged["start_spread_s"]
    starts = [h["started_at"] for h in merged["hosts"]]
    measured(f"start spread of two client workers on loopback: {spread * 1000:.1f} ms")
    assert 0 <= spread < 1.0 and spread == max(starts) - min(starts), f"start spread {spread * 1000:.1f} ms"


def test_a_tls_level_over_two_client_workers_merges_its_handshakes_exactly(tls_cluster, tmp_path):
    # Without keep-alive, a handshake per request: each host verifies nginx against the CA's text
    # it was handed, and the level's handshake counts and histogram are the sum of the hosts'.
    _, load = tls_cluster
    with tls_nginx(tmp_path / "nginx", {"index.html": SEVEN}) as server:
        level = {
            "urls": [server.url() + "index.html"], "connections": 4, "keep_alive": False,
            "stop": {"requests": 400}, "tls": {"cacert": str(server.ca)},
        }  # fmt: skip
        merged = load.run(level)
        lines = log_lines(server.log, 400 + 2)
    assert merged["requests"]["completed"] == 400 and merged["errors_total"] == 0
    assert_is_the_engines_merge(merged)
    hosts = [h["report"]["tls"] for h in merged["hosts"]]
    assert len(hosts) == 2 and all(tls["verified"] and tls["version"] == "1.3" for tls in hosts), hosts
    tls = merged["tls"]
    for count in ("handshakes_full", "handshakes_resumed"):
        assert tls[count] == sum(h[count] for h in hosts), (count, tls, hosts)
    assert tls["handshakes_resumed"] > 0 and tls["verified"]
    handshakes = [h["report"]["latency"]["tls_handshake"]["count"] for h in merged["hosts"]]
    assert merged["latency"]["tls_handshake"]["count"] == sum(handshakes) > 0
    # Each host's validation request, then the level's requests, every one over TLS.
    assert len(lines) == 400 + 2 and {line.split()[4] for line in lines} == {"TLSv1.3"}


def test_a_keep_alive_tls_level_over_two_client_workers_opens_its_connections_before_its_window(tls_cluster, tmp_path):
    # As the sweep passes it for every keep-alive level: each host warms its own connections up,
    # and its share of the request budget is counted after.
    _, load = tls_cluster
    with tls_nginx(tmp_path / "nginx", {"index.html": SEVEN}) as server:
        level = {
            "urls": [server.url() + "index.html"], "connections": 10, "warmup_connections": True,
            "stop": {"requests": 400}, "tls": {"cacert": str(server.ca)},
        }  # fmt: skip
        merged = load.run(level)
    assert merged["requests"]["completed"] == 400 and merged["errors_total"] == 0
    assert [h["report"]["spec"]["warmup_connections"] for h in merged["hosts"]] == [True, True]
    tls, opened = merged["tls"], merged["connections"]["opened"]
    assert tls["handshakes_full"] + tls["handshakes_resumed"] == opened == 0, (tls, merged["connections"])


def test_an_h2_level_over_two_client_workers_splits_connections_not_streams_and_merges_exactly(
    tls_cluster, tmp_path, measured
):
    # nginx ends each connection with a GOAWAY after 100 requests, so every host meets GOAWAYs
    # and opens connections again mid-level (streams refused above a GOAWAY's last id too, as
    # timing has it: not counted on).
    _, load = tls_cluster
    with tls_nginx(tmp_path / "nginx", {"index.html": SEVEN}, http2=True, keepalive_requests=100) as server:
        level = {
            "urls": [server.url() + "index.html"], "connections": 4, "http2": True, "streams": 10,
            "stop": {"requests": 2000}, "tls": {"cacert": str(server.ca)},
        }  # fmt: skip
        merged = load.run(level)
        lines = log_lines(server.log, 2000 + 2)
    reports = [r["report"] for r in merged["hosts"]]
    # Every request answered once: what a GOAWAY refused went again on the next connection, and
    # nothing twice (each host's validation request, then the level's, each in the log once).
    assert merged["requests"]["completed"] == 2000 == merged["latency"]["total"]["count"]
    assert merged["errors_total"] == 0 and merged["requests"]["failed"] == 0 and merged["status"]["2xx"] == 2000
    assert [[r["requests"][k] for k in ("sent", "completed", "failed", "in_flight")] for r in reports] == [
        [1000, 1000, 0, 0]
    ] * 2
    assert len(lines) == 2000 + 2 and {line.split()[3] for line in lines} == {"HTTP/2.0"}
    # Each host takes its share of the connections, each connection the level's streams.
    assert merged["spec"] == as_read(level)
    shares = [r["spec"] for r in reports]
    assert [(s["connections"], s["http2"], s["streams"]) for s in shares] == [(2, True, 10)] * 2
    assert merged["protocol"] == "h2" and [r["protocol"] for r in reports] == ["h2", "h2"]
    assert_is_the_engines_merge(merged)
    # What Report::merge promises of the h2 object: the level's streams per connection (not the
    # hosts' added), the smallest grant (nginx's default 128 to both), every counter added.
    h2, hosts = merged["h2"], [r["h2"] for r in reports]
    assert h2["streams_requested"] == 10 and [h["streams_requested"] for h in hosts] == [10, 10]
    assert h2["streams_granted"] == 128 and [h["streams_granted"] for h in hosts] == [128, 128]
    assert all(h["goaways"] > 0 and h["frame_bytes"] > 0 for h in hosts), hosts
    for count in ("goaways", "refused_streams", "frame_bytes"):
        assert h2[count] == sum(h[count] for h in hosts), (count, h2, hosts)
    codes = {code for h in hosts for code in h["resets"]}
    assert h2["resets"] == {code: sum(h["resets"].get(code, 0) for h in hosts) for code in codes}
    # nginx kept its limit, so each host's 1000 requests took at least 10 connections.
    serials = Counter(line.split()[0] for line in lines)
    assert max(serials.values()) <= 100, serials.most_common(3)
    opened = [r["connections"]["opened"] for r in reports]
    assert all(n >= 1000 // 100 for n in opened) and merged["connections"]["opened"] == sum(opened), opened
    # Every connection in the log is a host's validation connection (one each, outside the
    # measurement) or one the host counted: it carried a request, so its connect completed while
    # measuring. Not equal (in about half the runs here): one opened after a GOAWAY while requests
    # were left (those it refused went back to the host's budget) may find them taken by the
    # host's other connection before its handshake ends, and carry none.
    measured(f"h2, a GOAWAY every 100 requests: {sum(opened)} connections opened, {len(serials) - 2} in nginx's log")
    assert 2 + 2000 // 100 <= len(serials) <= sum(opened) + 2, (len(serials), opened)


def test_a_plain_client_cannot_join_a_tls_scheduler(tls_cluster):
    from distributed import Client

    net, _ = tls_cluster
    # The TLS scheduler drops the plain handshake (or it times out): a connection error either way.
    with pytest.raises(OSError, match="Connection reset|Timed out"):
        Client(net.address.replace("tls://", "tcp://"), timeout="3s")


def scheduler_answer(address: str, ca: Path, cert: Path = None) -> str:
    """What the scheduler at `address` does with a TLS client that trusts the cluster's CA and
    presents `cert` (with its key beside it), or no certificate: "answered" (its first bytes
    came), or the TLS alert it refused the client with."""
    context = ssl.create_default_context(cafile=str(ca))
    context.check_hostname = False
    if cert:
        context.load_cert_chain(cert, cert.with_name(cert.stem + "-key.pem"))
    host, port = address.removeprefix("tls://").rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=10) as raw, context.wrap_socket(raw) as tls:
        try:
            tls.recv(1)  # TLS 1.3: the server judges the client's certificate after the handshake
            return "answered"
        except ssl.SSLError as e:
            return e.reason


def test_the_scheduler_refuses_clients_without_a_certificate_of_its_ca(tls_cluster, tmp_path):
    net, _ = tls_cluster
    other = tmp_path / "other"
    cluster.make_certs(other)
    # Each client trusts the cluster's CA, so only the scheduler's check of the client can refuse.
    assert scheduler_answer(net.address, net.certs / "ca.pem", net.certs / "client.pem") == "answered"
    # Every CA made here has the same name: the scheduler takes its own for the issuer, and the
    # signature does not verify (a CA of another name would be unknown).
    assert scheduler_answer(net.address, net.certs / "ca.pem", other / "client.pem") in (
        "TLSV1_ALERT_DECRYPT_ERROR",
        "TLSV1_ALERT_UNKNOWN_CA",
    )
    assert scheduler_answer(net.address, net.certs / "ca.pem") == "TLSV13_ALERT_CERTIFICATE_REQUIRED"


def test_a_scheduler_or_worker_that_cannot_start_says_why_in_one_line(tls_cluster, tmp_path):
    net, _ = tls_cluster
    taken = httpbench("cluster", "scheduler", "--address", net.address, "--certs", str(net.certs))
    assert f"the scheduler at {net.address} could not start: Address already in use" in one_line_error(taken)
    # 192.0.2.0/24 is for documentation: no interface here has it.
    elsewhere = httpbench(
        "worker",
        "--scheduler",
        net.address,
        "--role",
        "client",
        "--certs",
        str(net.certs),
        "--listen",
        "tls://192.0.2.1",
    )
    assert "the worker listening at tls://192.0.2.1 could not start: Cannot assign requested address" in one_line_error(
        elsewhere
    )
    # Certificates of another CA: the worker says so at once, rather than retry forever.
    other = tmp_path / "other"
    cluster.make_certs(other)
    stranger = httpbench(
        "worker",
        "--scheduler",
        net.address,
        "--role",
        "client",
        "--certs",
        str(other),
        "--listen",
        "tls://127.0.0.1",
        timeout=30,
    )
    error = one_line_error(stranger)
    assert f"cannot join the scheduler {net.address}: " in error and "certificate verify failed" in error
    assert f"{other} holds certificates made with the scheduler's CA" in error


def test_a_level_longer_than_the_wait_for_readiness_is_not_a_loss(tls_cluster, nginx, monkeypatch):
    _, load = tls_cluster
    url, _ = nginx({"index.html": SEVEN})
    # Before, a level with a request budget had twice this wait to finish; now nothing but a
    # worker leaving the cluster ends a level early. The wait is cut short, but left long enough
    # for a busy 2-core machine to start the engines.
    monkeypatch.setattr(client_host, "READY_TIMEOUT_S", 10.0)
    merged = load.run({"urls": [url + "index.html"], "connections": 4, "rate": 1000.0, "stop": {"requests": 25000}})
    assert merged["lost_hosts"] == [] and merged["requests"]["completed"] == 25000
    assert merged["duration_s"] > 2 * client_host.READY_TIMEOUT_S


def test_a_client_lost_before_the_barrier_leaves_a_partial_level(tls_cluster, nginx):
    net, load = tls_cluster
    url, log = nginx({"index.html": SEVEN})
    victim = net.procs["c2"]
    # Frozen, c2 cannot get ready; killed, it leaves the cluster while c1 waits at the barrier.
    os.killpg(victim.pid, signal.SIGSTOP)
    threading.Timer(1.0, os.killpg, (victim.pid, signal.SIGKILL)).start()
    merged = load.run({"urls": [url + "index.html"], "connections": 4, "stop": {"requests": 2000}})
    assert merged["client_hosts"] == ["c1", "c2"] and merged["lost_hosts"] == ["c2"]
    assert [h["host"] for h in merged["hosts"]] == ["c1"]
    assert merged["requests"]["completed"] == 1000 and len(log_lines(log, 1000 + 1)) == 1000 + 1


def test_a_client_worker_lost_mid_level_leaves_a_partial_level(tls_cluster, nginx):
    net, load = tls_cluster
    url, log = nginx({"index.html": SEVEN})
    killer = kill_when(log, net.procs["c2"])
    started = time.monotonic()
    merged = load.run({"urls": [url + "index.html"], "connections": 4, "stop": {"duration": 4.0}})
    killer.join()
    assert merged["lost_hosts"] == ["c2"] and merged["client_hosts"] == ["c1", "c2"]
    assert [h["host"] for h in merged["hosts"]] == ["c1"] and merged["requests"]["completed"] > 0
    assert time.monotonic() - started < 15


def test_a_host_whose_engine_fails_stops_the_others(tls_cluster, nginx):
    import resource

    net, load = tls_cluster
    url, log = nginx({"index.html": SEVEN})
    # A third client host allowed 128 open files: 200 connections are too many for it alone.
    narrow = net.worker("narrow", preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (128, 128)))
    try:
        deadline = time.monotonic() + 60
        while "narrow" not in net.names(load):
            assert time.monotonic() < deadline and narrow.poll() is None
            time.sleep(0.3)
        started = time.monotonic()
        with pytest.raises(engine.EngineError, match="open files") as refused:
            load.run({"urls": [url + "index.html"], "connections": 600, "stop": {"duration": 30.0}})
        # The host's refusal keeps its kind, for the sweep to word in the plan's terms.
        assert refused.value.kind == "open_files" and refused.value.fields["connections"] == 200
        assert time.monotonic() - started < 15
        # c1's and c2's engines were stopped, not left to load for their 30 s: the log stops
        # growing well before that.
        log_lines(log, seconds=10)
        size = log.stat().st_size
        time.sleep(1.0)
        assert log.stat().st_size == size
        assert time.monotonic() - started < 25
    finally:
        stop_group(narrow)
    net.ensure()
    # Nothing queues behind a stopped engine: the next level starts at once.
    merged = load.run({"urls": [url + "index.html"], "connections": 2, "stop": {"requests": 200}})
    assert merged["requests"]["completed"] == 200 and merged["lost_hosts"] == []


def levels_of(db: Path) -> tuple:
    run = Store(str(db)).run(1)
    (cell,) = run["cells"]
    return run, cell, {r["level"]: r["measurement"] for r in cell["rounds"]}


def test_a_run_goes_on_after_losing_a_client_host_and_flags_the_levels_after(tls_cluster, tmp_path):
    net, _ = tls_cluster
    plan, log = nginx_plan(tmp_path, "4, 8", 'duration = "3s"')
    killer = kill_when(log, net.procs["c2"])
    done = net.run(str(plan), "--db", str(tmp_path / "r.db"))
    killer.join()
    assert done.returncode == 0, done.stderr[-3000:]
    run, cell, levels = levels_of(tmp_path / "r.db")
    assert run["status"] == "done" and cell["status"] == "done"
    lost = levels[4]
    assert lost["lost_hosts"] == ["c2"] and [h["host"] for h in lost["hosts"]] == ["c1"]
    assert any(f["kind"] == "partial" and "c2" in f["reason"] for f in lost["flags"])
    after = levels[8]
    assert after["client_hosts"] == ["c1"] and after["absent_hosts"] == ["c2"] and after["lost_hosts"] == []
    assert any(f["kind"] == "fewer_hosts" and "c2" in f["reason"] for f in after["flags"]), after["flags"]


def test_on_client_loss_stop_stores_the_level_and_says_how_to_resume(tls_cluster, tmp_path):
    net, _ = tls_cluster
    plan, log = nginx_plan(tmp_path, "4, 8", 'duration = "3s"')
    db = tmp_path / "r.db"
    killer = kill_when(log, net.procs["c2"])
    done = net.run(str(plan), "--db", str(db), "--on-client-loss", "stop")
    killer.join()
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr[-3000:]
    assert "client host(s) c2 lost at level 4" in done.stderr and "report: " in done.stderr
    resume = resume_command(done.stderr)
    assert resume[-6:] == ["--cluster", net.address, "--certs", str(net.certs), "--on-client-loss", "stop"]
    run, cell, levels = levels_of(db)
    assert run["status"] == "stopped" and cell["status"] == "stopped" and "c2" in cell["error"]
    assert list(levels) == [4] and levels[4]["lost_hosts"] == ["c2"]
    assert any(f["kind"] == "partial" for f in levels[4]["flags"])
    # The command printed finishes the run once the host is back.
    net.ensure()
    resumed = subprocess.run(resume, capture_output=True, text=True, timeout=180)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    run, cell, levels = levels_of(db)
    assert run["status"] == "done" and cell["status"] == "done" and list(levels) == [4, 8]
    assert [h["host"] for h in levels[8]["hosts"]] == ["c1", "c2"]


def resume_command(stderr: str) -> list:
    """The command a stopped run printed to resume it, ready for subprocess."""
    line = next(line for line in stderr.splitlines() if "Resume with: " in line)
    return [*HTTPBENCH, *shlex.split(line.split("Resume with: ")[1])[1:]]


def stored_levels(db: Path) -> list:
    """The levels run 1 of `db` has stored so far, while a sweep writes it."""
    from httpbench.store.database import StoreError

    try:
        return [r["level"] for c in Store(str(db)).run(1)["cells"] for r in c["rounds"]] if db.exists() else []
    except StoreError:  # the run is not there yet
        return []


def test_losing_the_scheduler_stops_the_run_with_every_round_stored(tls_cluster, tmp_path):
    net, _ = tls_cluster
    plan, log = nginx_plan(tmp_path, "4, 8", 'duration = "3s"')
    db = tmp_path / "r.db"
    sweep = subprocess.Popen(
        [
            *HTTPBENCH,
            "run",
            str(plan),
            "--db",
            str(db),
            "--cluster",
            net.address,
            "--certs",
            str(net.certs),
        ],
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        # Level 4 stored, level 8's load flowing: then the scheduler goes.
        deadline = time.monotonic() + 120
        while not stored_levels(db):
            assert time.monotonic() < deadline and sweep.poll() is None
            time.sleep(0.2)
        flowing = log.stat().st_size + 50_000
        while log.stat().st_size < flowing:
            assert time.monotonic() < deadline and sweep.poll() is None
            time.sleep(0.02)
        os.killpg(net.procs["scheduler"].pid, signal.SIGKILL)
        _, err = sweep.communicate(timeout=120)
    finally:
        if sweep.poll() is None:
            sweep.kill()
            sweep.wait()
    assert sweep.returncode == 1 and "Traceback" not in err, err[-3000:]
    assert f"lost the scheduler {net.address}" in err and "report: " in err
    run, cell, levels = levels_of(db)
    assert run["status"] == "stopped" and cell["status"] == "stopped" and "lost the scheduler" in cell["error"]
    assert list(levels) == [4] and levels[4]["requests"]["completed"] > 0
    # The workers stop too, each saying why.
    for name in HOSTS:
        assert net.procs[name].wait(timeout=60) == 1
        said = (net.base / f"{name}.log").read_text().splitlines()[-1]
        assert (
            said == f"httpbench: lost the scheduler {net.address}, so this worker stopped; start it again once "
            "the scheduler is back"
        ), said
    # Started again, the cluster finishes the run with the command printed.
    net.ensure()
    resumed = subprocess.run(resume_command(err), capture_output=True, text=True, timeout=180)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    run, cell, levels = levels_of(db)
    assert run["status"] == "done" and cell["status"] == "done" and list(levels) == [4, 8]


# A worker's last word stands in for distributed's objects torn down after it, against a scheduler
# already gone: here an object whose finalizer raises at exit, as one of theirs printed a bare
# TimeoutError after the worker's line in CI.
_NOISY_WORKER = """
import sys
from httpbench.cli import main as cli
from httpbench.cluster import daemons

class Noisy:
    def __del__(self):
        raise TimeoutError

async def served(*args):
    pass

daemons._serve_worker = served
noisy = Noisy()
sys.exit(cli.main(["worker", "--scheduler", "tcp://127.0.0.1:9", "--role", "client"]))
"""


def test_a_stopped_workers_last_line_says_why_whatever_its_teardown_prints():
    done = subprocess.run([sys.executable, "-c", _NOISY_WORKER], capture_output=True, text=True, timeout=60)
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr.splitlines() == [
        "httpbench: lost the scheduler tcp://127.0.0.1:9, so this worker stopped; start it again once the "
        "scheduler is back"
    ]


def test_the_server_host_has_its_own_cpus_servers_and_facts(tls_cluster, tmp_path):
    net, _ = tls_cluster
    assert shutil.which("fakeserver") is None  # only the server host has it
    plan = short_plan(
        tmp_path,
        '["fake"]',
        "1",
        "requests = 50",
        tables='[server.fake]\ncommand = "fakeserver {port} {host} {docroot}"\n',
    )
    refused = net.run(str(plan), "--db", str(tmp_path / "r.db"), "--server-cpus", "0")
    assert "CPU 0, which the server host srv does not let us use (available: 1)" in one_line_error(refused)
    done = net.run(str(plan), "--db", str(tmp_path / "r.db"))
    assert done.returncode == 0, done.stderr[-3000:]
    run, cell, levels = levels_of(tmp_path / "r.db")
    assert cell["status"] == "done", cell["error"]
    assert run["versions"] == {"fake": "fakeserver 1.0"}
    assert run["host"]["cpus_allowed"] == [1] and run["host"]["placement"]["server"] == [1]
    assert run["host"]["cluster"] == {
        "scheduler": net.address,
        "server_host": "srv",
        "certs": str(net.certs),
        "on_client_loss": "continue",
    }
    assert levels[1]["requests"]["completed"] == 50


def test_a_plan_driving_ab_or_wrk_is_refused_on_a_cluster(tls_cluster, tmp_path):
    net, _ = tls_cluster
    plan = short_plan(tmp_path, '["nginx"]', "1", 'duration = "1s"', extra='client = "wrk"')
    refused = net.run(str(plan), "--db", str(tmp_path / "r.db"))
    assert 'uses client = "wrk", which runs on one host' in one_line_error(refused)
    assert Store(str(tmp_path / "r.db")).runs() == []
