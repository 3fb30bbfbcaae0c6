"""The load engine against real servers: exact counts, ground truth, faults and bad input.

Every load here targets 127.0.0.1 and is bounded by -n or -d and by a subprocess timeout.
"""

import collections
import threading
import time

import pytest
from conftest import accounted, free_port, log_lines, stop

SEVEN = b"hello!\n"


@pytest.mark.parametrize("io", ["io-uring", "epoll"])
def test_exactly_n_requests_reach_nginx(nginx, load, io):
    url, log = nginx({"index.html": SEVEN})
    rc, r, err = load("-n", "100000", "-c", "50", "--io", io, url + "index.html")
    assert rc == 0, err
    lines = log_lines(log, 100000 + 1)
    # One validation request, then exactly -n.
    assert len(lines) == 100000 + 1
    assert r["validation"]["sent"] and r["validation"]["ok"]
    assert r["requests"]["sent"] == r["requests"]["completed"] == 100000
    assert r["status"]["2xx"] == 100000 and r["errors_total"] == 0
    assert r["bytes"]["body"] == 100000 * len(SEVEN)
    assert r["engine"]["io"] == io.replace("-", "_")
    accounted(r)
    # Without the validation request the server sees exactly -n, not one more.
    rc, r, err = load("-n", "20000", "-c", "50", "--io", io, "--no-validate", url + "index.html")
    assert rc == 0, err
    assert len(log_lines(log, 100001 + 20000)) == 100001 + 20000
    assert not r["validation"]["sent"] and r["validation"]["problem"] is None
    assert r["requests"]["sent"] == r["status"]["2xx"] == 20000
    accounted(r)


def test_pipelined_n_is_exact_too(nginx, load):
    url, log = nginx({"index.html": SEVEN})
    rc, r, err = load("-n", "20001", "-c", "7", "--pipeline", "16", url + "index.html")
    assert rc == 0, err
    assert len(log_lines(log)) == 20001 + 1
    assert r["requests"]["completed"] == 20001


def test_keepalive_off_opens_one_connection_per_request(nginx, load):
    url, log = nginx({"index.html": SEVEN})
    rc, r, err = load("-n", "3000", "-c", "10", "--no-keepalive", url + "index.html")
    assert rc == 0, err
    per_connection = collections.Counter(line.split()[0] for line in log_lines(log))
    assert sum(per_connection.values()) == 3000 + 1
    assert set(per_connection.values()) == {1}
    # Reconnects made just before the budget ran out carry no request: at most one per connection.
    assert 3000 <= r["connections"]["opened"] <= 3000 + 10


def test_requests_per_connection_and_url_round_robin(nginx, load, tmp_path):
    url, log = nginx({"a.html": b"a", "b.html": b"bb"})
    urls = tmp_path / "urls.txt"
    urls.write_text(f"{url}a.html\n# a comment\n\n{url}b.html\n")
    rc, r, err = load("-n", "1000", "-c", "4", "--requests-per-connection", "10", "--urls-from-file", str(urls))
    assert rc == 0, err
    lines = log_lines(log)[1:]
    paths = collections.Counter(line.split()[2] for line in lines)
    # Each connection walks the list round robin and draws requests from the shared budget as it
    # goes, so a connection ending on an odd count leaves the split off by one: at most 4 here.
    assert set(paths) == {"/a.html", "/b.html"} and sum(paths.values()) == 1000
    assert abs(paths["/a.html"] - paths["/b.html"]) <= 4, paths
    per_connection = collections.Counter(line.split()[0] for line in lines).values()
    # Each connection carries 10, except the last of each of the 4 when the budget runs out.
    assert max(per_connection) == 10 and sum(n < 10 for n in per_connection) <= 4
    assert r["bytes"]["body"] == paths["/a.html"] * 1 + paths["/b.html"] * 2


def test_http10_and_head(nginx, load):
    url, log = nginx({"index.html": SEVEN})
    rc, r, err = load("-n", "200", "-c", "2", "--http1.0", "-m", "HEAD", url + "index.html")
    assert rc == 0, err
    assert all(line.endswith("HEAD /index.html HTTP/1.0") for line in log_lines(log))
    assert r["requests"]["completed"] == 200 and r["bytes"]["body"] == 0


def test_closed_loop_matches_ground_truth(testserver, load):
    # K slots held D ms each: throughput K/D once connections >= K, latency D below K. D is
    # long enough that a noisy host's late wake-ups (a few ms seen in CI) stay inside 5%.
    slots, hold_ms = 8, 50
    url = testserver("slots", "--slots", str(slots), "--hold-ms", str(hold_ms))
    rc, r, err = load("-c", "16", "-d", "4s", "--warmup", "0.5s", url)
    assert rc == 0, err
    expected = slots * 1000 / hold_ms
    assert abs(r["requests"]["per_second"] / expected - 1) < 0.03, r["requests"]
    rc, r, err = load("-c", "4", "-d", "3s", url)
    assert rc == 0, err
    assert abs(r["latency"]["total"]["p50_us"] / (hold_ms * 1000) - 1) < 0.05, r["latency"]["total"]
    accounted(r)


def test_gathered_wakeups_keep_latency_and_throughput(testserver, load):
    # 32 connections on 64 slots held 40 +- 20 ms: the server is never the bottleneck and its
    # responses come back out of step, so the engine gathers them before it wakes (a quarter of
    # the connections, for at most 1/16 of the mean latency). Latency is the kernel's arrival
    # time, so it stays D; gathering may only start a connection's next request later, by at
    # most 1/16 of its latency: by Little's law, throughput x latency >= 32 x 16/17.
    hold_ms = 40
    url = testserver("slots", "--slots", "64", "--hold-ms", str(hold_ms), "--spread-ms", "20")
    rc, r, err = load("-c", "32", "-d", "4s", "--warmup", "0.5s", url)
    assert rc == 0, err
    total = r["latency"]["total"]
    assert abs(total["mean_us"] / (hold_ms * 1000) - 1) < 0.05, total
    in_service = r["requests"]["per_second"] * total["mean_us"] / 1e6
    assert in_service / 32 > 0.92, (r["requests"], total)
    accounted(r)


def test_open_loop_corrects_coordinated_omission(testserver, load):
    # The server freezes 1 s every 3 s. Two connections at 200 req/s: each freeze holds up 2
    # requests in service but 200 by schedule, so only the corrected p99 shows it.
    url = testserver("freeze", "--freeze-ms", "1000", "--every-ms", "3000")
    rc, r, err = load("-c", "2", "-R", "200", "-d", "7s", "--timeout", "5s", url)
    assert rc == 0, err
    total, service = r["latency"]["total"], r["latency"]["service"]
    assert total["p99_us"] > 500_000, total
    assert service["p99_us"] < 100_000, service
    assert r["open_loop"]["target_rate"] == 200
    assert r["timeseries"] and max(p["p99_us"] for p in r["timeseries"]) > 500_000
    accounted(r)


@pytest.mark.parametrize("io", ["io-uring", "epoll"])
def test_open_loop_sends_on_schedule(nginx, load, io):
    # A server that is never the bottleneck: each request goes at its set time, so the corrected
    # latency is the service latency plus the send's lateness. One that waited for the next 10 ms
    # tick instead of its own time would be late by about 5 ms on average (measured over io_uring:
    # 4.8-5.0 ms at 150-1,000 req/s). On schedule: 0.05-0.07 ms over io_uring, 0.6 ms over epoll,
    # whose timeouts are whole milliseconds.
    url, _ = nginx({"index.html": SEVEN}, access_log=False)
    rc, r, err = load("-c", "1", "-R", "333", "-d", "2s", "--io", io, url)
    assert rc == 0, err
    assert r["engine"]["io"] == io.replace("-", "_")
    total, service = r["latency"]["total"], r["latency"]["service"]
    assert total["mean_us"] - service["mean_us"] < 2500, (total, service)
    assert not r["open_loop"]["fell_short"], r["open_loop"]


def test_open_loop_reports_falling_short(testserver, load):
    url = testserver("slots", "--slots", "1", "--hold-ms", "10")  # at most 100 req/s
    rc, r, err = load("-c", "1", "-R", "400", "-d", "2s", url)
    assert rc == 0, err
    assert r["open_loop"]["fell_short"] and r["open_loop"]["behind_schedule"] > 100


@pytest.mark.parametrize(
    "mode,errors",
    [
        ("reset", {"reset"}),
        ("garbage", {"protocol"}),
        ("short-body", {"length_mismatch"}),
        ("stall", {"timeout"}),
    ],
)
def test_faults_land_in_their_error_class(testserver, load, mode, errors):
    url = testserver(mode)
    rc, r, err = load("-c", "4", "-d", "2s", "--timeout", "0.5s", "--allow-errors", url, timeout=15)
    assert rc == 0, err
    assert r["validation"]["ok"] is False
    found = {k for k, v in r["errors"].items() if v > 0}
    assert found == errors, r["errors"]
    assert r["requests"]["completed"] == 0
    assert r["duration_s"] < 2.5
    accounted(r)
    if mode == "stall":
        # A timed-out request stays in the latencies, at no less than the timeout.
        assert r["latency"]["total"]["count"] == r["errors"]["timeout"] > 0
        # (min_us is the floor of its histogram bucket: 3 significant digits, 256 us wide here.)
        assert r["latency"]["total"]["min_us"] >= 500_000 - 256


@pytest.mark.parametrize("io", ["io-uring", "epoll"])
def test_a_body_cut_short_by_the_close_fails_at_once(testserver, load, io):
    # The server's FIN comes right behind the body's last bytes, often in the same readiness
    # edge: each request fails when the connection ends, not when its 5 s timeout would.
    url = testserver("short-body")
    rc, r, err = load("-c", "2", "-d", "300ms", "--timeout", "5s", "--no-validate", "--io", io, url)
    assert rc == 0, err
    assert r["errors"]["length_mismatch"] > 2 and r["errors"]["timeout"] == 0, r["errors"]
    accounted(r)


def test_requests_unanswered_at_the_end_say_how_long_they_waited(testserver, load):
    # The server reads each request and never answers: each connection's one request is still in
    # flight at the end (wrk forgets those), sent when the load began a second before.
    url = testserver("stall")
    rc, r, err = load("-c", "4", "-d", "1s", "--timeout", "2s", "--allow-errors", url, timeout=15)
    assert rc == 0, err
    q = r["requests"]
    assert q["completed"] == 0 and q["in_flight"] == 4
    assert 0.9e6 <= q["in_flight_age_mean_us"] <= q["in_flight_age_max_us"] <= 1.1e6, q


@pytest.mark.parametrize("io", ["io-uring", "epoll"])
def test_connects_that_hang_are_connect_timeouts(testserver, load, io):
    # After answering the validation request the server accepts nothing more and its backlog is
    # full, so the kernel drops every SYN: each connect hangs until --connect-timeout.
    url = testserver("deaf")
    started = time.monotonic()
    rc, r, err = load(
        "-c",
        "8",
        "-d",
        "1.5s",
        "--connect-timeout",
        "0.3s",
        "--timeout",
        "0.5s",
        "--allow-errors",
        "--io",
        io,
        url,
        timeout=20,
    )
    assert rc == 0, err
    assert time.monotonic() - started < 10
    # 8 connections over 1.5 s, each attempt 0.3 s: about 40 attempts, all but the one the
    # backlog took timing out.
    assert 20 <= r["errors"]["connect_timeout"] <= 45, r["errors"]
    assert r["requests"]["completed"] == 0
    accounted(r)


def test_fault_without_allow_errors_is_refused_before_load(testserver, load):
    url = testserver("garbage")
    rc, r, err = load("-c", "4", "-d", "2s", url)
    assert rc == 2 and r is None
    assert len(err.splitlines()) == 1 and "--allow-errors" in err


def test_without_validation_nothing_is_checked_before_the_load(testserver, load):
    # A wrong answer is measured instead of refused, each response in its error class ...
    rc, r, err = load("-c", "4", "-d", "300ms", "--no-validate", testserver("garbage"), timeout=15)
    assert rc == 0, err
    assert r["validation"] == {"sent": False, "status": 0, "body_bytes": 0, "ok": False, "problem": None}
    assert r["errors"]["protocol"] > 0 and r["requests"]["completed"] == 0
    accounted(r)
    # ... and a server that is not there ends the run early, with what it measured, instead of
    # being refused up front.
    started = time.monotonic()
    rc, r, err = load("-n", "100", "-c", "4", "--no-validate", f"http://127.0.0.1:{free_port()}/", timeout=20)
    assert rc == 1 and "refused" in r["aborted"], err
    assert r["requests"]["sent"] == 0 and r["errors"]["connect_refused"] > 0
    assert time.monotonic() - started < 10


def test_server_closing_after_each_response_is_followed(testserver, load):
    url = testserver("close-each")
    rc, r, err = load("-n", "2000", "-c", "8", url)
    assert rc == 0, err
    assert r["requests"]["completed"] == 2000 and r["errors_total"] == 0
    assert r["connections"]["server_closes"] >= 1990
    assert r["connections"]["opened"] >= 1990


def test_client_closes_even_when_the_server_ignores_connection_close(testserver, load):
    url = testserver("ignore-close")
    rc, r, err = load("-n", "500", "-c", "5", "--no-keepalive", url, timeout=20)
    assert rc == 0, err
    assert r["requests"]["completed"] == 500 and 500 <= r["connections"]["opened"] <= 505


def test_chunked_bodies_are_counted_after_dechunking(testserver, load):
    url = testserver("chunked", "--body-bytes", "100")
    rc, r, err = load("-n", "300", "-c", "3", "--expect-length", "100", url)
    assert rc == 0, err
    assert r["requests"]["completed"] == 300 and r["bytes"]["body"] == 300 * 100


def test_expected_body_and_length_are_checked(nginx, load, tmp_path):
    url, _ = nginx({"index.html": SEVEN})
    good, bad = tmp_path / "good", tmp_path / "bad"
    good.write_bytes(SEVEN)
    bad.write_bytes(b"hello?\n")
    assert load("-n", "10", "-c", "1", "--expect-body", str(good), url + "index.html")[0] == 0
    rc, _, err = load("-n", "10", "-c", "1", "--expect-body", str(bad), url + "index.html")
    assert rc == 2 and "differs" in err and len(err.splitlines()) == 1
    rc, r, _ = load("-n", "10", "-c", "1", "--expect-length", "3", "--allow-errors", url + "index.html")
    assert rc == 0 and r["errors"]["length_mismatch"] == 10 and r["requests"]["completed"] == 0


def test_status_classes_are_counted(testserver, load):
    url = testserver("status", "--status", "503")
    rc, r, err = load("-n", "100", "-c", "2", "--allow-errors", url)
    assert rc == 0, err
    assert r["status"]["5xx"] == 100 and r["requests"]["completed"] == 100


@pytest.mark.parametrize(
    "budget",
    [
        ("-n", "100000000", "--connect-timeout", "0.5s", "--timeout", "0.5s"),
        # Shorter than the default timeouts' silence (16 s): such a run used to end on time, exit 0,
        # with a requests/s averaged over the seconds nothing listened any more.
        ("-d", "6s"),
    ],
)
def test_server_gone_mid_run_ends_the_run_with_partial_results(nginx, load, budget):
    url, _ = nginx({"index.html": SEVEN})
    # Stop nginx one second into a run that would take longer.
    result = {}
    run = threading.Thread(target=lambda: result.update(r=load("-c", "4", *budget, url + "index.html", timeout=30)))
    run.start()
    time.sleep(1)
    stop(nginx.procs[-1])
    run.join(30)
    rc, r, err = result["r"]
    assert rc == 1, err
    assert r["aborted"] and "stopped answering" in r["aborted"]
    assert r["requests"]["completed"] > 0 and r["duration_s"] < 6
    accounted(r)


def test_per_second_series_and_client_self_knowledge(nginx, load):
    url, _ = nginx({"index.html": SEVEN}, access_log=False)
    rc, r, err = load("-c", "20", "-d", "3s", url + "index.html")
    assert rc == 0, err
    series = r["timeseries"]
    assert [p["second"] for p in series] == [0, 1, 2]
    assert sum(p["requests"] for p in series) == r["requests"]["completed"]
    assert all(p["p50_us"] > 0 and p["p99_us"] >= p["p50_us"] for p in series)
    client = r["client"]
    assert client["user_s"] + client["sys_s"] > 0 and 0 < client["busy_share"] <= 1.05
    assert client["cpu_us_per_request"] > 0


@pytest.mark.parametrize(
    "args,says",
    [
        (["not-a-url"], "no scheme"),
        (["ftp://127.0.0.1/"], "use http:// or https://"),
        (["http://127.0.0.1:99999/"], "port"),
        (["-c", "0", "http://127.0.0.1:1/"], "at least 1"),
        (["-c", "-5", "http://127.0.0.1:1/"], ""),
        (["-n", "5", "-c", "10", "-d", "1s", "http://127.0.0.1:1/"], "cannot be used with"),
        (["-n", "5", "-c", "10", "http://127.0.0.1:1/"], "smaller than -c"),
        (["-d", "-1s", "http://127.0.0.1:1/"], ""),
        (["-R", "0", "http://127.0.0.1:1/"], "rate"),
        (["-c", "30000", "http://127.0.0.1:1/"], "open files"),
        (["http://127.0.0.1:1/"], "cannot connect"),
        (["http://no-such-host.invalid/"], "cannot resolve"),
        ([], "no URL"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(load, args, says):
    rc, r, err = load(*args)
    assert rc == 2 and r is None
    assert len(err.strip().splitlines()) == 1, err
    assert "panicked" not in err and says in err


def test_python_api_runs_the_engine(nginx):
    from httpbench.load import engine

    url, log = nginx({"index.html": SEVEN})
    r = engine.run({"urls": [url + "index.html"], "connections": 3, "stop": {"requests": 999}})
    assert r["schema"] == "httpbench-load/1" and r["requests"]["completed"] == 999
    assert len(log_lines(log)) == 1000
    # The spec's `validate` is the CLI's --no-validate.
    r = engine.run({"urls": [url + "index.html"], "connections": 3, "stop": {"requests": 999}, "validate": False})
    assert not r["validation"]["sent"] and len(log_lines(log, 1999)) == 1999
    with pytest.raises(engine.EngineError, match="connections") as refused:
        engine.run({"urls": [url], "connections": 0})
    assert refused.value.kind == "invalid_spec" and refused.value.fields["field"] == "connections"
    with pytest.raises(engine.EngineError, match="unknown field"):
        engine.run({"urls": [url], "conections": 3})


def test_source_port_exhaustion_is_named_and_bind_spreads_it(load):
    # A private network namespace with only 10 local ports: the host's sysctls stay untouched.
    import json
    import os
    import subprocess

    from conftest import binary

    ns = f"hb-ports-{os.getpid()}"
    subprocess.run(["ip", "netns", "add", ns], check=True)
    try:

        def inside(*cmd, **kw):
            return subprocess.run(["ip", "netns", "exec", ns, *cmd], **kw)

        inside("ip", "link", "set", "lo", "up", check=True)
        inside("sysctl", "-q", "-w", "net.ipv4.ip_local_port_range=40000 40009", check=True)
        server = subprocess.Popen(
            [
                "ip",
                "netns",
                "exec",
                ns,
                str(binary("httpbench-testserver")),
                "--listen",
                "127.0.0.1:8080",
                "--mode",
                "ok",
                "--max-seconds",
                "30",
            ],
            stdout=subprocess.PIPE,
            text=True,
        )
        try:
            assert server.stdout.readline().startswith("listening")

            def run(*args):
                done = inside(
                    str(load.path),
                    "--json",
                    "--max-errors",
                    "100%",  # ports run out: how the errors are named is the test
                    "-c",
                    "20",
                    "-d",
                    "1s",
                    *args,
                    "http://127.0.0.1:8080/",
                    capture_output=True,
                    text=True,
                    timeout=30,
                )
                assert done.returncode == 0, done.stderr
                return json.loads(done.stdout)

            crowded = run()
            assert crowded["errors"]["source_ports_exhausted"] > 0
            assert crowded["errors_total"] == crowded["errors"]["source_ports_exhausted"]
            spread = run("--bind", "127.0.0.2,127.0.0.3")
            assert spread["errors_total"] == 0 and spread["connections"]["opened"] == 20
        finally:
            stop(server)
    finally:
        subprocess.run(["ip", "netns", "del", ns], check=False)


def test_ctrl_c_stops_a_python_run_promptly(testserver):
    import subprocess
    import sys

    url = testserver("ok")
    code = (
        "from httpbench.load import engine\n"
        "try:\n"
        f"    engine.run({{'urls': ['{url}'], 'connections': 2, 'stop': {{'duration': 60}}}})\n"
        "except KeyboardInterrupt:\n"
        "    print('interrupted')\n"
    )
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    time.sleep(1.5)
    proc.send_signal(2)
    out, _ = proc.communicate(timeout=10)
    assert out.strip() == "interrupted"


def test_ctrl_c_stops_the_cli_with_what_it_measured(testserver, load):
    import json
    import subprocess

    url = testserver("ok")
    proc = subprocess.Popen([str(load.path), "--json", "-c", "2", "-d", "60s", url], stdout=subprocess.PIPE, text=True)
    time.sleep(1.5)
    proc.send_signal(2)
    out, _ = proc.communicate(timeout=10)
    assert proc.returncode == 130
    r = json.loads(out)
    assert r["aborted"] and r["requests"]["completed"] > 0 and r["duration_s"] < 5


@pytest.mark.parametrize("io", ["io_uring", "epoll"])
def test_runs_leave_no_descriptor_behind(testserver, io):
    # The sweep runs hundreds of rounds in one process: a leaked socket per connection per round
    # would exhaust the open-file limit halfway through a plan.
    import gc
    import os

    from httpbench.load import engine

    url = testserver("ok")
    # Earlier tests' objects (pipes of processes they started) may be collected during the runs
    # and close descriptors: collected first, and a leak is more descriptors, never fewer (CI saw
    # 22 after 25).
    gc.collect()
    before = len(os.listdir("/proc/self/fd"))
    for keep_alive in (True, False):
        engine.run({"urls": [url], "connections": 200, "stop": {"duration": 0.3}, "keep_alive": keep_alive, "io": io})
    assert len(os.listdir("/proc/self/fd")) <= before
