"""`httpbench-load --capacity`: the most traffic a server carries within a latency objective,
against ground truth (the testserver's slots: K slots held D ms carry exactly K/D per second at
latency D), a server that freezes (meets no rate), and the reference server with the client on
one core (the client sets the pace: "at least")."""

import socket
import subprocess
import time

import pytest
from conftest import binary, tls_nginx

# 1,000 req/s at 50 ms: holds long enough that a noisy host's late wake-ups stay inside the
# objective's 25 ms of slack, and probes long enough (2 s) for a rate 1.25% over K/D to queue past it.
SLOTS, HOLD_MS = 50, 50
TRUTH = SLOTS * 1000 / HOLD_MS


def search(load, url: str, *flags: str, timeout: float = 240) -> tuple[int, dict, str]:
    rc, report, err = load(
        "--capacity", f"p99={1.5 * HOLD_MS:g}ms", "--start", "800", "--probe", "2s", *flags, url, timeout=timeout
    )
    assert report is not None, err
    return rc, report, err


@pytest.mark.parametrize("mode, flags", [("slots", ()), ("h2-slots", ("--http2",))], ids=["http1", "h2c"])
def test_the_search_finds_ground_truth_within_three_percent(testserver, load, mode, flags):
    url = testserver(mode, "--slots", str(SLOTS), "--hold-ms", str(HOLD_MS))
    rc, r, err = search(load, url, *flags)
    c = r["capacity"]
    assert rc == 0, err
    assert abs(c["rate"] / TRUTH - 1) <= 0.03, c["probes"]
    assert c["interval"]["low"] == c["rate"] and c["interval"]["high"] > c["rate"], c["interval"]
    assert c["limited_by"] == "server" and c["bound"] is None
    assert c["objective"] == {"percentiles": [{"percentile": 99.0, "latency_us": 75_000}], "max_error_share": 0.001}
    # Confirmed: every probe at the capacity met, and the report's figures are theirs, merged.
    at = [p for p in c["probes"] if p["offered"] == c["rate"]]
    assert len(at) >= 3 and all(p["met"] for p in at), at
    assert r["spec"]["rate"] == c["rate"] and r["spec"]["drain"] is True
    assert r["latency"]["total"]["p99_us"] <= 75_000
    # The probes say what they were: each one's pool is sized for its rate, none short.
    assert all(p["connections"] >= 2 * p["offered"] * 0.075 and not p["connections_short"] for p in c["probes"])
    assert len(c["probes"]) <= 14, [p["offered"] for p in c["probes"]]
    # A live line per probe, out of the way of the JSON.
    lines = err.splitlines()
    assert len(lines) == len(c["probes"]) and lines[0].startswith("probe  1:       800 req/s offered"), err
    assert all(line.endswith((": met", ": not met")) for line in lines), err


def test_poisson_arrivals_take_a_free_connection_rather_than_wait_for_their_own(testserver, load):
    # 25 req/s on a 50 ms server over 8 connections: paced per connection, a gap shorter than an
    # answer held the next request on its busy connection and p99 doubled; handed to whichever
    # connection is free, each request waits for the server only.
    url = testserver("slots", "--slots", "100", "--hold-ms", "50")
    rc, r, err = load("-R", "25", "--arrivals", "poisson", "-c", "8", "-d", "4s", url, timeout=60)
    assert rc == 0, err
    assert r["spec"]["arrivals"] == "poisson" and r["open_loop"]["sent_share"] == 1.0, r["open_loop"]
    total = r["latency"]["total"]
    assert 50_000 <= total["p50_us"] and total["p99_us"] < 1.3 * 50_000, total
    # Random, not even: the seconds hold different counts (the same every run: the gaps are seeded).
    counts = [point["requests"] for point in r["timeseries"]]
    assert len(set(counts)) > 1 and 80 <= sum(counts) <= 120, counts


def test_under_poisson_arrivals_the_same_slots_carry_less_within_the_objective(testserver, load):
    # Random arrivals bunch: near K/D some wait for a slot, and p99 passes 1.5 D before the
    # even schedule's K/D (904 req/s here, against 1,000).
    url = testserver("slots", "--slots", str(SLOTS), "--hold-ms", str(HOLD_MS))
    rc, r, err = search(load, url, "--arrivals", "poisson")
    c = r["capacity"]
    assert rc == 0, err
    assert 0.75 * TRUTH <= c["rate"] <= 1.01 * TRUTH, c["probes"]
    assert c["limited_by"] == "server" and c["bound"] is None
    assert all(p["connections"] >= 2 * p["offered"] * 0.075 and not p["connections_short"] for p in c["probes"])


def test_a_server_that_freezes_meets_no_rate_and_says_so(testserver, load):
    # Frozen 300 ms of every 500: most requests wait, at any rate.
    url = testserver("freeze", "--freeze-ms", "300", "--every-ms", "500")
    rc, r, err = load(
        "--capacity", "p50=20ms", "--start", "400", "--min-rate", "100", "--probe", "1s", url, timeout=120
    )
    c = r["capacity"]
    assert rc == 3, err
    assert c["rate"] is None and c["bound"] == "min_rate" and c["limited_by"] is None
    assert [p["offered"] for p in c["probes"]] == [400.0, 200.0, 100.0]
    assert c["interval"] == {"low": None, "high": 100.0}
    done = subprocess.run(
        [
            str(binary("httpbench-load")),
            "--capacity",
            "p50=20ms",
            "--start",
            "100",
            "--min-rate",
            "100",
            "--probe",
            "1s",
            url,
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 3
    assert done.stdout.splitlines()[-1].startswith(
        "no rate met p50 <= 20 ms, errors <= 0.1%: at 100 req/s, p50 was "
    ), done.stdout


def test_a_search_over_https_without_keep_alive_runs_each_probe_with_its_handshakes(tmp_path, load):
    # Over TLS, each connection's full handshake is part of the load: without keep-alive every
    # request pays one (resumed by tickets after a connection's first), which the probes count.
    # Rates far under nginx's (about 1 ms of its CPU a full handshake): at 2,000 req/s a busy
    # host's nginx fell behind, and no rate was confirmed.
    with tls_nginx(tmp_path / "nginx", {"index.html": b"hello!\n"}) as server:
        rc, r, err = load(
            "--capacity", "p99=50ms", "--start", "200", "--probe", "0.5s", "--precision", "50%", "--rounds", "1",
            "--max-rate", "400", "--no-keepalive", "--cacert", str(server.ca), server.url() + "index.html",
        )  # fmt: skip
    c = r["capacity"]
    assert rc == 0, err
    assert c["rate"] is not None and c["probes"][0]["met"], c["probes"]
    # A handshake per request, give or take the few whose connection opened before the window
    # (a probe that warmed its connections up held them, connected, ahead of it: 83% in CI).
    handshakes = r["tls"]["handshakes_full"] + r["tls"]["handshakes_resumed"]
    assert handshakes >= 0.99 * r["requests"]["completed"] > 0, (r["tls"], r["requests"])
    assert not r["spec"]["warmup_connections"], r["spec"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_a_client_on_one_core_is_the_limit_and_says_at_least(tmp_path, load):
    (tmp_path / "index.html").write_bytes(b"x" * 7)
    port = free_port()
    server = subprocess.Popen(
        [
            "taskset",
            "-c",
            "1",
            str(binary("httpbench-reference")),
            "--root",
            str(tmp_path),
            "--port",
            str(port),
            "--threads",
            "1",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        for _ in range(100):
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", port)) == 0:
                    break
            time.sleep(0.05)
        # Loose enough that the server meets it far beyond what one client core can send.
        rc, r, err = load(
            "--capacity",
            "p99=50ms",
            "--start",
            "30000",
            "--probe",
            "1s",
            "--precision",
            "50%",
            "--rounds",
            "1",
            "--cpus",
            "0",
            f"http://127.0.0.1:{port}/index.html",
            timeout=240,
        )
    finally:
        server.kill()
        server.wait()
    c = r["capacity"]
    assert rc == 0, err
    assert c["limited_by"] == "client", c["probes"]
    assert any(p["client_bound"] for p in c["probes"] if p["offered"] in (c["interval"]["low"], c["interval"]["high"]))


@pytest.mark.parametrize(
    "flags, says",
    [
        (["--capacity", "p99<10"], "write it as p99=10ms"),
        (["--capacity", "p101 <= 5ms"], "use p50, p90, p99 or p99.9"),
        (["--capacity", "p99=-5ms"], "write a positive time"),
        (["--capacity", "p99=10ms", "-R", "1000"], "--capacity with -R: the search chooses each probe's rate; drop -R"),
        (["--capacity", "p99=10ms", "-n", "1000"], "--capacity with -n"),
        (["--capacity", "p99=10ms", "--pipeline", "4"], "--capacity with --pipeline"),
        (["--capacity", "p99=10ms", "--precision", "0%"], "precision of 0%"),
        (["--capacity", "p99=10ms", "--precision", "60%"], "at most 50%"),
        (["--capacity", "p99=10ms", "--start", "5"], "the start rate 5 is outside the rates searched"),
        (["--precision", "2%"], "--precision sets the capacity search, which runs with --capacity OBJECTIVE only"),
        (["--capacity", "p99=10ms", "--probe", "9999999999999999h"], "is no time a probe can last"),
        (["--arrivals", "poisson"], "--arrivals poisson paces an open loop: give -R RATE or --capacity"),
    ],
)
def test_bad_capacity_input_is_one_line_and_exit_2(flags, says):
    done = subprocess.run(
        [str(binary("httpbench-load")), *flags, "http://127.0.0.1:1/"], capture_output=True, text=True, timeout=30
    )
    assert done.returncode == 2, done
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and says in lines[0] and not done.stdout, done.stderr
