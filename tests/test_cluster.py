"""The benchmark cluster on loopback: certificates, the TLS rule, exact merging, a level split
over two real Dask client workers under mutual TLS against a real nginx, and a client worker
killed mid-level; bad certificate directories and addresses refused with one line. (Several
hosts in network namespaces: see the notes of issue 6.)"""

import os
import signal
import stat
import subprocess
import sys
import time

import pytest

from conftest import free_port, log_lines, stop
from httpbench import cluster, engine
from httpbench.store import Store

SEVEN = b"7 bytes"


def httpbench(*args, timeout=60):
    return subprocess.run([sys.executable, "-m", "httpbench", *args], capture_output=True, text=True, timeout=timeout)


def one_line_error(done: subprocess.CompletedProcess) -> str:
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr[-2000:]
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
    return done.stderr


def test_certificates_are_private_and_signed_by_their_ca(tmp_path):
    from cryptography import x509
    written = cluster.make_certs(tmp_path / "certs")
    assert stat.S_IMODE((tmp_path / "certs").stat().st_mode) == 0o700
    assert {p.name for p in written} == {"ca.pem", "ca-key.pem"} | {f"{n}{s}" for n in cluster.CERT_NAMES
                                                                    for s in (".pem", "-key.pem")}
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
    assert "refusing plain TCP" in one_line_error(httpbench("worker", "--scheduler", "tcp://10.20.30.40:8786",
                                                            "--role", "client"))
    assert "--certs" in one_line_error(httpbench("worker", "--scheduler", "tls://10.20.30.40:8786", "--role", "client"))
    assert "refusing plain TCP" in one_line_error(httpbench("cluster", "scheduler", "--address", "tcp://0.0.0.0:8786"))
    assert "refusing plain TCP" in one_line_error(httpbench("run", "--cluster", "tcp://10.20.30.40:8786",
                                                            "--db", str(tmp_path / "r.db")))
    assert not (tmp_path / "r.db").exists() or Store(str(tmp_path / "r.db")).runs() == []
    listen = httpbench("worker", "--scheduler", "tcp://127.0.0.1:8786", "--role", "client", "--listen", "tcp://0.0.0.0")
    assert "refusing plain TCP for the worker's --listen address tcp://0.0.0.0" in one_line_error(listen)
    certs = tmp_path / "certs"
    cluster.make_certs(certs)
    tcp_with_certs = httpbench("cluster", "scheduler", "--address", "tcp://127.0.0.1:8786", "--certs", str(certs))
    assert "plain TCP but --certs is given" in one_line_error(tcp_with_certs)
    assert "is not tls://HOST:PORT" in one_line_error(httpbench("worker", "--scheduler", "tls://host:port",
                                                                "--role", "client", "--certs", str(certs)))
    cluster.check_address("tcp://127.0.0.1:8786", None)
    cluster.check_address("tcp://[::1]:8786", None)


def test_an_address_without_a_scheme_is_plain_tcp_and_routed():
    assert cluster.check_address("localhost:8786", None) == "tcp://localhost:8786"
    assert cluster._route_address("tcp://localhost:8786") == "127.0.0.1"


def test_a_level_is_split_as_evenly_as_whole_numbers_allow():
    spec = {"urls": ["http://127.0.0.1:1/"], "connections": 10, "threads": 4, "stop": {"requests": 1000}}
    shares = cluster.split_spec(spec, 3)
    assert [s["connections"] for s in shares] == [4, 3, 3]
    assert [s["stop"]["requests"] for s in shares] == [334, 333, 333]
    assert [s["threads"] for s in shares] == [4, 3, 3]
    rated = cluster.split_spec({**spec, "stop": {"duration": 1.0}, "rate": 1000.0}, 4)
    assert sum(s["rate"] for s in rated) == pytest.approx(1000.0) and len(rated) == 4
    assert len(cluster.split_spec({**spec, "connections": 2}, 5)) == 2


def test_merging_adds_counters_and_histograms_exactly(nginx):
    url, _ = nginx({"index.html": SEVEN})
    spec = {"urls": [url + "index.html"], "connections": 4, "stop": {"requests": 3000}}
    reports = [engine.run(spec), engine.run({**spec, "connections": 8})]
    merged = cluster.merge_reports(reports, ["a", "b"])
    assert merged["requests"]["completed"] == 6000 == merged["latency"]["total"]["count"]
    assert merged["status"]["2xx"] == 6000 and merged["errors_total"] == 0
    added = engine.merge_latency([r["latency"]["total"] for r in reports])
    assert merged["latency"]["total"]["p99_us"] == added["p99_us"]
    assert merged["latency"]["total"]["max_us"] == max(r["latency"]["total"]["max_us"] for r in reports)
    assert [h["host"] for h in merged["hosts"]] == ["a", "b"]


@pytest.fixture
def tls_cluster(tmp_path):
    """A scheduler and two client workers on loopback, mutual TLS, each its own process."""
    certs = tmp_path / "certs"
    cluster.make_certs(certs)
    address = f"tls://127.0.0.1:{free_port()}"
    procs = []

    def spawn(*args):
        proc = subprocess.Popen([sys.executable, "-m", "httpbench", *args, "--certs", str(certs)],
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
        procs.append(proc)
        return proc

    spawn("cluster", "scheduler", "--address", address)
    workers = {name: spawn("worker", "--scheduler", address, "--role", "client", "--name", name,
                           "--listen", "tls://127.0.0.1") for name in ("c1", "c2")}
    load = None
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                load = cluster.ClusterLoad(address, certs)
                if len(load.client_workers()) == 2:
                    break
            except cluster.ClusterError:
                pass
            assert time.monotonic() < deadline, "the cluster did not come up"
            time.sleep(0.5)
        yield load, workers, address, certs
    finally:
        if load is not None:
            load.close()
        for proc in procs:
            stop(proc)


def test_a_level_over_two_tls_client_workers_counts_every_request(tls_cluster, nginx):
    load, _, address, _ = tls_cluster
    url, log = nginx({"index.html": SEVEN})
    merged = load.run({"urls": [url + "index.html"], "connections": 6, "stop": {"requests": 5000}})
    assert merged["requests"]["completed"] == 5000 == merged["latency"]["total"]["count"]
    assert sorted(h["host"] for h in merged["hosts"]) == ["c1", "c2"]
    assert [h["report"]["requests"]["completed"] for h in merged["hosts"]] == [2500, 2500]
    # Each host makes one validation request before its load.
    assert len(log_lines(log)) == 5000 + 2
    assert merged["lost_hosts"] == []
    assert 0 <= merged["start_spread_s"] < 1.0
    print(f"start spread of two client workers: {merged['start_spread_s'] * 1000:.1f} ms")


def test_a_plain_client_cannot_join_a_tls_scheduler(tls_cluster):
    _, _, address, _ = tls_cluster
    with pytest.raises(Exception):
        from distributed import Client
        Client(address.replace("tls://", "tcp://"), timeout="3s")


def test_a_client_worker_lost_mid_level_leaves_a_partial_level(tls_cluster, nginx):
    load, workers, _, _ = tls_cluster
    url, _ = nginx({"index.html": SEVEN})
    victim = workers["c2"]

    def kill_soon():
        time.sleep(1.5)
        os.killpg(victim.pid, signal.SIGKILL)

    import threading
    threading.Thread(target=kill_soon, daemon=True).start()
    merged = load.run({"urls": [url + "index.html"], "connections": 4, "stop": {"duration": 3.0}})
    assert merged["lost_hosts"] == ["c2"]
    assert [h["host"] for h in merged["hosts"]] == ["c1"] and merged["requests"]["completed"] > 0
