"""Several hosts for real: network namespaces made here (a switch namespace with a bridge, veth
pairs, private addresses inside the namespaces only), a scheduler with the controller, a server
host and two client hosts, all under mutual TLS. A short sweep against nginx on the server host:
both clients contribute, the access log counts exactly the merged requests, the start spread is
measured, nothing but Dask's own TLS ports listens beyond loopback, and a client host killed
mid-level leaves a partial level. Everything is torn down, and namespaces a killed earlier run
left behind are deleted first."""

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import HTTPBENCH, nginx_plan, stop_group
from httpbench import cluster
from httpbench.load import engine
from httpbench.store.database import Store

SUBNET = "10.231.{}.{}"
HOSTS = {"sched": 1, "srv": 2, "c1": 3, "c2": 4}
# Namespaces are named PREFIX<pid of the test process>-<host>.
PREFIX = "hbcl"


def sh(*args, check=True):
    return subprocess.run(args, capture_output=True, text=True, check=check, timeout=30)


def clear_stale_namespaces() -> None:
    """Delete the namespaces of earlier runs of this file whose test process is gone."""
    for line in sh("ip", "netns", "list").stdout.splitlines():
        found = re.match(rf"({PREFIX}(\d+)-\S+)", line)
        if found and not os.path.exists(f"/proc/{found.group(2)}"):
            sh("ip", "netns", "del", found.group(1), check=False)


# Run in the scheduler's namespace: the names of the workers registered, once all of argv[3:] are.
REGISTERED = """
import sys, time
from pathlib import Path
from httpbench import cluster
deadline = time.monotonic() + 90
names = set()
while not set(sys.argv[3:]) <= names and time.monotonic() < deadline:
    try:
        load = cluster.ClusterLoad(sys.argv[1], Path(sys.argv[2]))
        names = {str(w.get("name")) for w in load.client.scheduler_info(n_workers=-1)["workers"].values()}
        load.close()
    except cluster.ClusterError:
        pass
    time.sleep(0.3)
print(" ".join(sorted(names)))
"""


class Network:
    """Namespaces named after this test process, so parallel runs and leftovers never collide."""

    def __init__(self) -> None:
        tag = f"{PREFIX}{os.getpid()}"
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
            sh(
                "ip",
                "-n",
                sw,
                "link",
                "add",
                f"p-{host}",
                "type",
                "veth",
                "peer",
                "name",
                "eth0",
                "netns",
                self.ns[host],
            )
            sh("ip", "-n", sw, "link", "set", f"p-{host}", "master", "br0", "up")
            sh("ip", "-n", self.ns[host], "addr", "add", f"{self.ip(host)}/24", "dev", "eth0")
            sh("ip", "-n", self.ns[host], "link", "set", "eth0", "up")
            sh("ip", "-n", self.ns[host], "link", "set", "lo", "up")

    def spawn(self, host: str, *args, log: Path) -> subprocess.Popen:
        with open(log, "w") as out:  # the process has its own copy
            proc = subprocess.Popen(
                ["ip", "netns", "exec", self.ns[host], sys.executable, "-m", "httpbench", *args],
                stdout=out,
                stderr=subprocess.STDOUT,
                text=True,
                start_new_session=True,
            )
        self.procs.append(proc)
        return proc

    def run(self, host: str, *args, timeout=300) -> subprocess.CompletedProcess:
        return self.python(host, *HTTPBENCH[1:], *args, timeout=timeout)

    def python(self, host: str, *args, timeout=300) -> subprocess.CompletedProcess:
        return subprocess.run(
            ["ip", "netns", "exec", self.ns[host], sys.executable, *args],
            capture_output=True,
            text=True,
            timeout=timeout,
        )

    def listening(self, host: str) -> set:
        """The TCP addresses listening in `host`'s namespace, beyond loopback."""
        lines = sh("ip", "netns", "exec", self.ns[host], "ss", "-Hltn").stdout.splitlines()
        return {line.split()[3] for line in lines if not line.split()[3].startswith(("127.", "[::1]"))}

    def down(self) -> None:
        for proc in reversed(self.procs):
            stop_group(proc)
        for ns in self.ns.values():
            sh("ip", "netns", "del", ns, check=False)


@pytest.fixture
def hosts(tmp_path):
    if sh("ip", "netns", "list", check=False).returncode != 0:
        pytest.fail("ip netns is unavailable: apt-get install -y iproute2 (make test-deps does), and run as root")
    clear_stale_namespaces()
    net = Network()
    certs = tmp_path / "certs"
    cluster.make_certs(certs)
    try:
        net.up()
        scheduler = f"tls://{net.ip('sched')}:8786"
        net.spawn(
            "sched",
            "cluster",
            "scheduler",
            "--address",
            scheduler,
            "--certs",
            str(certs),
            log=tmp_path / "scheduler.log",
        )
        workers = {
            "srv": net.spawn(
                "srv",
                "worker",
                "--scheduler",
                scheduler,
                "--role",
                "server",
                "--certs",
                str(certs),
                "--name",
                "srv",
                log=tmp_path / "srv.log",
            )
        }
        for name in ("c1", "c2"):
            workers[name] = net.spawn(
                name,
                "worker",
                "--scheduler",
                scheduler,
                "--role",
                "client",
                "--certs",
                str(certs),
                "--name",
                name,
                log=tmp_path / f"{name}.log",
            )
        registered = net.python("sched", "-c", REGISTERED, scheduler, str(certs), *workers, timeout=120)
        logs = {name: (tmp_path / f"{name}.log").read_text()[-800:] for name in ["scheduler", *workers]}
        assert registered.stdout.split() == sorted(workers), (registered.stdout, registered.stderr[-1000:], logs)
        yield net, scheduler, certs, workers
    finally:
        net.down()
        assert not any(ns in sh("ip", "netns", "list").stdout for ns in net.ns.values())


def test_a_sweep_from_two_client_hosts_counts_every_request(hosts, tmp_path, measured):
    net, scheduler, certs, _ = hosts
    db = tmp_path / "results.db"
    plan, log = nginx_plan(tmp_path, "4, 10", "requests = 4000")
    done = net.run(
        "sched", "run", str(plan), "--cluster", scheduler, "--certs", str(certs), "--db", str(db), "--server-cpus", "1"
    )
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
        assert m["lost_hosts"] == [] and m["client_hosts"] == ["c1", "c2"]
        # The server host's window crossed Dask whole, how busy that machine was included.
        assert m["server"]["server_waiting_share"] is not None and m["server"]["others_cpu_cores"] is not None
        # The server ran on its own host, at its own address.
        assert all(h["report"]["spec"]["urls"][0].startswith(f"http://{net.ip('srv')}:") for h in m["hosts"])
    # The engine's requests in nginx's log: every measured request plus one validation per host and
    # level, and the one request on each connection that warmed it up before its level's window.
    lines = [line for line in log.read_text().splitlines() if "httpbench/" in line]
    warmed = sum(h["report"]["spec"]["connections"] for m in measurements for h in m["hosts"])
    assert warmed == 4 + 10
    assert len(lines) == sum(m["requests"]["completed"] for m in measurements) + 2 * len(measurements) + warmed
    assert {line.split()[0] for line in lines} == {net.ip("c1"), net.ip("c2")}
    for m in measurements:
        added = engine.merge_latency([h["report"]["latency"]["total"] for h in m["hosts"]])
        assert {k: m["latency"]["total"][k] for k in ("count", "p50_us", "p99_us", "p99_9_us", "max_us")} == {
            k: added[k] for k in ("count", "p50_us", "p99_us", "p99_9_us", "max_us")
        }
    spreads = ", ".join(f"{m['start_spread_s'] * 1000:.1f} ms" for m in measurements)
    measured(f"start spread of the two client hosts in network namespaces, per level: {spreads}")
    assert all(0 <= m["start_spread_s"] < 1.0 for m in measurements), f"start spreads {spreads}"
    # The servers' facts are the server host's, and Dask serves no HTTP beyond loopback.
    # What a resume needs, beside where the load came from.
    assert run["host"]["cluster"] == {
        "scheduler": scheduler,
        "server_host": "srv",
        "certs": str(certs),
        "on_client_loss": "continue",
    }
    assert net.listening("sched") == {f"{net.ip('sched')}:8786"}
    for host in ("srv", "c1", "c2"):
        (address,) = net.listening(host)
        assert address.startswith(f"{net.ip(host)}:"), net.listening(host)


def sweep_killing(net, scheduler, certs, tmp_path, victim: subprocess.Popen, exit_code: int = 0) -> str:
    """Run a one-level sweep and SIGKILL `victim` (a worker) once the load flows; its stderr. The
    run exits `exit_code`: 1 when the loss fails the cell."""
    plan, log = nginx_plan(tmp_path, "8", 'duration = "4s"')
    sweep = subprocess.Popen(
        [
            "ip",
            "netns",
            "exec",
            net.ns["sched"],
            *HTTPBENCH,
            "run",
            str(plan),
            "--cluster",
            scheduler,
            "--certs",
            str(certs),
            "--db",
            str(tmp_path / "results.db"),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 60
        while not (log.exists() and log.stat().st_size > 100_000):
            assert time.monotonic() < deadline and sweep.poll() is None
            time.sleep(0.1)
        os.killpg(victim.pid, signal.SIGKILL)
        _, err = sweep.communicate(timeout=180)
    finally:
        if sweep.poll() is None:
            sweep.kill()
    assert sweep.returncode == exit_code, err[-3000:]
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
    err = sweep_killing(net, scheduler, certs, tmp_path, workers["srv"], exit_code=1)
    assert "1 of 1 cells did not finish" in err and "httpbench run --resume 1" in err
    run = Store(str(tmp_path / "results.db")).run(1)
    (cell,) = run["cells"]
    assert run["status"] == "cells failed" and cell["status"] == "failed"
    assert "server host srv was lost" in cell["error"]
    # The worker's watchdog stopped its nginx with it.
    deadline = time.monotonic() + 10
    while sh("ip", "netns", "pids", net.ns["srv"]).stdout.split():
        assert time.monotonic() < deadline, sh("ip", "netns", "pids", net.ns["srv"]).stdout
        time.sleep(0.2)
