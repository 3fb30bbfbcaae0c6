"""Several hosts for real: network namespaces made here (a switch namespace with a bridge, veth
pairs, private addresses inside the namespaces only), a scheduler with the controller, a server
host and two client hosts, all under mutual TLS. A short sweep against nginx on the server host:
both clients contribute, the access log counts exactly the merged requests, the start spread is
measured, and a client host killed mid-level leaves a partial level. Everything is torn down."""

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import stop
from httpbench import cluster, engine
from httpbench.store import Store

SUBNET = "10.231.{}.{}"
HOSTS = {"sched": 1, "srv": 2, "c1": 3, "c2": 4}


def sh(*args, check=True):
    return subprocess.run(args, capture_output=True, text=True, check=check, timeout=30)


class Network:
    """Namespaces named after this test process, so parallel runs and leftovers never collide."""

    def __init__(self) -> None:
        tag = f"hb{os.getpid() % 100000}"
        self.third = os.getpid() % 200 + 20
        self.ns = {name: f"{tag}-{name}" for name in ["sw", *HOSTS]}
        self.procs = []

    def ip(self, host: str) -> str:
        return SUBNET.format(self.third, HOSTS[host])

    def up(self) -> None:
        for ns in self.ns.values():
            sh("ip", "netns", "add", ns)
        sw = self.ns["sw"]
        sh("ip", "-n", sw, "link", "add", "br0", "type", "bridge")
        sh("ip", "-n", sw, "link", "set", "br0", "up")
        for host in HOSTS:
            # Both ends are made inside namespaces: nothing appears in the machine's own network.
            sh("ip", "-n", sw, "link", "add", f"p-{host}", "type", "veth", "peer", "name", "eth0",
               "netns", self.ns[host])
            sh("ip", "-n", sw, "link", "set", f"p-{host}", "master", "br0", "up")
            sh("ip", "-n", self.ns[host], "addr", "add", f"{self.ip(host)}/24", "dev", "eth0")
            sh("ip", "-n", self.ns[host], "link", "set", "eth0", "up")
            sh("ip", "-n", self.ns[host], "link", "set", "lo", "up")

    def spawn(self, host: str, *args, log: Path) -> subprocess.Popen:
        out = open(log, "w")
        proc = subprocess.Popen(["ip", "netns", "exec", self.ns[host], sys.executable, "-m", "httpbench", *args],
                                stdout=out, stderr=subprocess.STDOUT, text=True, start_new_session=True)
        self.procs.append(proc)
        return proc

    def run(self, host: str, *args, timeout=300) -> subprocess.CompletedProcess:
        return subprocess.run(["ip", "netns", "exec", self.ns[host], sys.executable, "-m", "httpbench", *args],
                              capture_output=True, text=True, timeout=timeout)

    def down(self) -> None:
        for proc in reversed(self.procs):
            stop(proc)
        for ns in self.ns.values():
            sh("ip", "netns", "del", ns, check=False)


@pytest.fixture
def hosts(tmp_path):
    if sh("ip", "netns", "list", check=False).returncode != 0:
        pytest.fail("ip netns is unavailable: apt-get install -y iproute2 (make test-deps does), and run as root")
    net = Network()
    certs = tmp_path / "certs"
    cluster.make_certs(certs)
    try:
        net.up()
        scheduler = f"tls://{net.ip('sched')}:8786"
        net.spawn("sched", "cluster", "scheduler", "--address", scheduler, "--certs", str(certs),
                  log=tmp_path / "scheduler.log")
        workers = {"srv": net.spawn("srv", "worker", "--scheduler", scheduler, "--role", "server", "--certs",
                                    str(certs), "--name", "srv", log=tmp_path / "srv.log")}
        for name in ("c1", "c2"):
            workers[name] = net.spawn(name, "worker", "--scheduler", scheduler, "--role", "client", "--certs",
                                      str(certs), "--name", name, log=tmp_path / f"{name}.log")
        deadline = time.monotonic() + 90
        logs = {name: tmp_path / f"{name}.log" for name in workers}
        while not all("worker " in p.read_text() for p in logs.values()):
            assert time.monotonic() < deadline, {n: p.read_text()[-500:] for n, p in logs.items()}
            assert all(w.poll() is None for w in workers.values()), {n: p.read_text()[-800:] for n, p in logs.items()}
            time.sleep(0.3)
        yield net, scheduler, certs, workers
    finally:
        net.down()
        assert not any(ns in sh("ip", "netns", "list").stdout for ns in net.ns.values())


def plan_file(tmp_path: Path, log: Path, budget: str, levels: str) -> Path:
    path = tmp_path / "plan.toml"
    path.write_text(f"""
name = "hosts"
description = "nginx on the server host, load from two client hosts"
servers = ["nginx"]
profiles = ["default"]
keep_alive = [true]
server_cpus = [1]
rounds = 1
warmup = "0s"
[[workload]]
kind = "generated"
size = 7
name = "index.html"
[levels]
list = [{levels}]
[budget]
{budget}
[server.nginx]
directives = ["access_log {log};"]
""")
    return path


def test_a_sweep_from_two_client_hosts_counts_every_request(hosts, tmp_path):
    net, scheduler, certs, _ = hosts
    log = tmp_path / "access.log"
    db = tmp_path / "results.db"
    plan = plan_file(tmp_path, log, "requests = 4000", "4, 10")
    done = net.run("sched", "run", str(plan), "--cluster", scheduler, "--certs", str(certs), "--db", str(db),
                   "--server-cpus", "1")
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    run = Store(str(db)).run(1)
    (cell,) = run["cells"]
    assert cell["status"] == "done", cell["error"]
    measurements = [r["measurement"] for r in cell["rounds"]]
    assert len(measurements) == 2
    for m in measurements:
        assert sorted(h["host"] for h in m["hosts"]) == ["c1", "c2"]
        assert all(h["report"]["requests"]["completed"] > 0 for h in m["hosts"])
        assert m["requests"]["completed"] == 4000 == m["latency"]["total"]["count"]
        assert m["lost_hosts"] == [] and 0 <= m["start_spread_s"] < 1.0
        # The server ran on its own host, at its own address.
        assert all(h["report"]["spec"]["urls"][0].startswith(f"http://{net.ip('srv')}:") for h in m["hosts"])
    # The engine's requests in nginx's log: every measured request plus one validation per host and level.
    lines = [line for line in log.read_text().splitlines() if "httpbench/" in line]
    assert len(lines) == sum(m["requests"]["completed"] for m in measurements) + 2 * len(measurements)
    assert {line.split()[0] for line in lines} == {net.ip("c1"), net.ip("c2")}
    for m in measurements:
        added = engine.merge_latency([h["report"]["latency"]["total"] for h in m["hosts"]])
        assert {k: m["latency"]["total"][k] for k in ("count", "p50_us", "p99_us", "p99_9_us", "max_us")} == \
               {k: added[k] for k in ("count", "p50_us", "p99_us", "p99_9_us", "max_us")}
    spreads = [m["start_spread_s"] * 1000 for m in measurements]
    print(f"start spread of the two client hosts: {', '.join(f'{s:.1f} ms' for s in spreads)}")


def sweep_killing(net, scheduler, certs, tmp_path, victim: subprocess.Popen) -> str:
    """Run a one-level sweep and SIGKILL `victim` (a worker) once the load flows; its stderr."""
    plan = plan_file(tmp_path, tmp_path / "access.log", 'duration = "4s"', "8")
    sweep = subprocess.Popen(["ip", "netns", "exec", net.ns["sched"], sys.executable, "-m", "httpbench", "run",
                              str(plan), "--cluster", scheduler, "--certs", str(certs), "--db",
                              str(tmp_path / "results.db")], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        log = tmp_path / "access.log"
        deadline = time.monotonic() + 60
        while not (log.exists() and log.stat().st_size > 100_000):
            assert time.monotonic() < deadline and sweep.poll() is None
            time.sleep(0.1)
        os.killpg(victim.pid, signal.SIGKILL)
        _, err = sweep.communicate(timeout=180)
    finally:
        if sweep.poll() is None:
            sweep.kill()
    assert sweep.returncode == 0, err[-3000:]
    return err


def test_a_client_host_killed_mid_level_leaves_a_partial_level(hosts, tmp_path):
    net, scheduler, certs, workers = hosts
    err = sweep_killing(net, scheduler, certs, tmp_path, workers["c2"])
    (cell,) = Store(str(tmp_path / "results.db")).run(1)["cells"]
    (round_,) = cell["rounds"]
    m = round_["measurement"]
    assert m["lost_hosts"] == ["c2"] and [h["host"] for h in m["hosts"]] == ["c1"]
    assert m["requests"]["completed"] > 0
    assert any(f["kind"] == "partial" and "c2" in f["reason"] for f in m["flags"])
    assert re.search(r"report: .*\.html", err)


def test_losing_the_server_host_fails_the_cell_cleanly(hosts, tmp_path):
    net, scheduler, certs, workers = hosts
    sweep_killing(net, scheduler, certs, tmp_path, workers["srv"])
    run = Store(str(tmp_path / "results.db")).run(1)
    (cell,) = run["cells"]
    assert run["status"] == "done" and cell["status"] == "failed"
    assert "server host srv was lost" in cell["error"]
    # The worker's watchdog stopped its nginx with it.
    deadline = time.monotonic() + 10
    while sh("ip", "netns", "pids", net.ns["srv"]).stdout.split():
        assert time.monotonic() < deadline, sh("ip", "netns", "pids", net.ns["srv"]).stdout
        time.sleep(0.2)
