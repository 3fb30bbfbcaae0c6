"""Every flag `httpbench-load --help` documents, run at least once through both front ends: the
standalone binary and `httpbench load` (which hands the same flags to the same parser, so it is
run in this process, as `httpbench.cli.main` does it). Each run is a handful of requests against
one shared test server, bounded by -n or a fraction of a second."""

import json
import re
import subprocess

import pytest
from conftest import binary, nghttpd, stop, tls_nginx

BODY = b"x" * 7  # what the test server's `ok` mode answers


@pytest.fixture(scope="module")
def url():
    proc = subprocess.Popen(
        [str(binary("httpbench-testserver")), "--listen", "127.0.0.1:0", "--mode", "ok", "--max-seconds", "300"],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        line = proc.stdout.readline().split()
        assert line and line[0] == "listening", f"testserver said {line!r}"
        yield f"http://{line[1]}/"
    finally:
        stop(proc)


@pytest.fixture(scope="module")
def tls_server(tmp_path_factory):
    """nginx over TLS, for the TLS flags: the test server speaks plain HTTP only."""
    with tls_nginx(tmp_path_factory.mktemp("tls-nginx"), {"index.html": BODY}) as nginx:
        yield nginx


@pytest.fixture(scope="module")
def h2c_url(tmp_path_factory):
    """nghttpd over h2c, granting 4 streams per connection, for the HTTP/2 flags."""
    root = tmp_path_factory.mktemp("h2c")
    (root / "index.html").write_bytes(BODY)
    with nghttpd(root) as port:
        yield f"http://127.0.0.1:{port}/index.html"


@pytest.fixture(params=["httpbench-load", "httpbench load"])
def front(request, capfd):
    """Runs one front end with the given arguments; returns (exit code, stdout, stderr)."""
    if request.param == "httpbench-load":

        def run(*args):
            done = subprocess.run([str(binary("httpbench-load")), *args], capture_output=True, text=True, timeout=60)
            return done.returncode, done.stdout, done.stderr
    else:

        def run(*args):
            from httpbench.cli import main as cli

            capfd.readouterr()
            code = cli.main(["load", *args])
            out, err = capfd.readouterr()
            return code, out, err

    run.name = request.param
    return run


def measured(front, *args):
    """The JSON report of a run that must succeed."""
    code, out, err = front("--json", *args)
    assert code == 0, err
    return json.loads(out)


def n(count, *args):
    return ("-n", str(count), "-c", "2", *args)


# Each documented flag: the arguments that exercise it, and what its report must then show. Where
# the report shows no cheap effect, the check reads the flag back from r["spec"]: it checks the
# parsing only (--header, --body, --body-file, --warmup, --connect-timeout, --timeout,
# --expect-body; --expect-body's effect, refusing a wrong body, is among the refusals below).
FLAGS = {
    "--connections": (
        ("-n", "30", "-c", "3"),
        lambda r: r["spec"]["connections"] == 3 and r["connections"]["opened"] >= 3,
    ),
    "--threads": (n(30, "-t", "2"), lambda r: len(r["client"]["threads"]) == 2),
    "--requests": (
        ("--requests", "25", "-c", "2"),
        lambda r: r["requests"]["sent"] == r["requests"]["completed"] == 25,
    ),
    "--duration": (
        ("-c", "1", "-d", "200ms"),
        lambda r: r["spec"]["stop"] == {"duration": 0.2} and 0.15 < r["duration_s"] < 1,
    ),
    "--rate": (("-c", "2", "-R", "100", "-d", "300ms"), lambda r: r["open_loop"]["target_rate"] == 100),
    "--arrivals": (
        ("-c", "4", "-R", "200", "--arrivals", "poisson", "-d", "300ms"),
        lambda r: r["spec"]["arrivals"] == "poisson" and r["open_loop"]["sent_share"] >= 0.95,
    ),
    "--pipeline": (n(40, "--pipeline", "4"), lambda r: r["spec"]["pipeline"] == 4 and r["requests"]["completed"] == 40),
    "--no-keepalive": (n(20, "--no-keepalive"), lambda r: r["connections"]["opened"] >= 20),
    "--requests-per-connection": (
        ("-n", "20", "-c", "1", "--requests-per-connection", "5"),
        lambda r: r["connections"]["opened"] == 4,
    ),
    "--http1.0": (n(20, "--http1.0"), lambda r: r["spec"]["http10"] and r["requests"]["completed"] == 20),
    "--method": (n(20, "-m", "HEAD"), lambda r: r["spec"]["method"] == "HEAD" and r["bytes"]["body"] == 0),
    "--header": (
        n(20, "-H", "X-Test: 1", "--header", "Accept: */*"),
        lambda r: r["spec"]["headers"] == ["X-Test: 1", "Accept: */*"],
    ),
    "--body": (n(20, "-m", "POST", "--body", "a=1"), lambda r: r["spec"]["body"] == "a=1"),
    "--body-file": (n(20, "-m", "POST", "--body-file", "{body}"), lambda r: r["spec"]["body"] == "b=2"),
    "--urls-from-file": (n(20, "--urls-from-file", "{urls}"), lambda r: len(r["spec"]["urls"]) == 3),
    # A weighted list: each request's URL drawn by weight, the one of weight 0 never.
    "--seed": (
        n(20, "--seed", "5", "--urls-from-file", "{weighted}"),
        lambda r: r["spec"]["seed"] == 5 and r["spec"]["weights"] == [1, 3, 0] and r["requests"]["completed"] == 20,
    ),
    "--size-classes": (
        n(20, "--size-classes", "4,7"),
        lambda r: (
            [(c["bytes_from"], c["bytes_to"], c["requests"], c["bytes"]) for c in r["classes"]]
            == [(0, 4, 0, 0), (5, 7, 20, 140), (8, None, 0, 0)]
            and r["classes"][1]["latency"]["count"] == 20
        ),
    ),
    "--warmup": (("-c", "1", "-d", "100ms", "--warmup", "100ms"), lambda r: r["spec"]["warmup"] == 0.1),
    "--warmup-connections": (
        ("-n", "30", "-c", "3", "--warmup-connections"),
        lambda r: r["spec"]["warmup_connections"] and r["connections"]["opened"] == 0 and r["requests"]["sent"] == 30,
    ),
    "--connect-timeout": (n(20, "--connect-timeout", "2s"), lambda r: r["spec"]["connect_timeout"] == 2),
    # What each does under a server's operations: tests/test_load_operations.py.
    "--retry-idempotent": (
        n(20, "--retry-idempotent"),
        lambda r: r["spec"]["retry_idempotent"] and r["requests"]["retried"] == 0 and r["errors_total"] == 0,
    ),
    "--keep-going": (n(20, "--keep-going"), lambda r: r["spec"]["keep_going"] and r["aborted"] is None),
    "--tick": (
        n(20, "--tick", "50ms"),
        lambda r: r["spec"]["tick_ms"] == 50 and sum(p["requests"] for p in r["ticks"]["points"]) == 20,
    ),
    "--timeout": (n(20, "--timeout", "3s"), lambda r: r["spec"]["request_timeout"] == 3),
    "--cpus": (n(20, "-t", "2", "--cpus", "0-1"), lambda r: [t["cpu"] for t in r["client"]["threads"]] == [0, 1]),
    "--bind": (
        n(20, "--bind", "127.0.0.2,127.0.0.3"),
        lambda r: r["spec"]["bind"] == ["127.0.0.2", "127.0.0.3"] and r["requests"]["completed"] == 20,
    ),
    "--io": (n(20, "--io", "epoll"), lambda r: r["engine"]["io"] == "epoll"),
    "--expect-body": (
        n(20, "--expect-body", "{expected}"),
        lambda r: r["spec"]["expect_body_file"].endswith("expected"),
    ),
    "--expect-length": (n(20, "--expect-length", "7"), lambda r: r["errors_total"] == 0),
    "--allow-errors": (
        n(20, "--expect-length", "8", "--allow-errors", "--max-errors", "100%"),
        lambda r: not r["validation"]["ok"] and r["errors"]["length_mismatch"] == 20,
    ),
    "--expect-status": (
        n(20, "--expect-status", "200,304"),
        lambda r: r["spec"]["expect_status"] == [200, 304] and r["requests"]["succeeded"] == 20,
    ),
    # Every answer too short: all of them errors, which 100% allows (the exit code of a share over
    # it is tested below).
    "--max-errors": (
        n(20, "--no-validate", "--expect-length", "8", "--max-errors", "100%"),
        lambda r: r["requests"]["succeeded"] == 0 and r["errors"]["length_mismatch"] == 20,
    ),
    # The clients beside the load, during a 300 ms run of two connections.
    "--idle": (
        ("-c", "2", "-d", "300ms", "--idle", "5"),
        lambda r: (r["idle_connections"]["opened"], r["idle_connections"]["held"]) == (5, 5),
    ),
    "--idle-ping": (
        ("-c", "2", "-d", "500ms", "--idle", "3", "--idle-ping", "100ms"),
        lambda r: r["spec"]["idle"]["ping"] == 0.1 and r["idle_connections"]["pings"] > 0,
    ),
    "--slow-clients": (
        ("-c", "2", "-d", "300ms", "--slow-clients", "5"),
        lambda r: (r["slow_clients"]["mode"], r["slow_clients"]["held"]) == ("headers", 5),
    ),
    "--slow": (
        ("-c", "2", "-d", "300ms", "--slow-clients", "3", "--slow", "body"),
        lambda r: (r["slow_clients"]["mode"], r["slow_clients"]["held"]) == ("body", 3),
    ),
    "--slow-interval": (
        ("-c", "2", "-d", "300ms", "--slow-clients", "3", "--slow-interval", "100ms"),
        lambda r: r["spec"]["slow"]["interval"] == 0.1 and r["slow_clients"]["held"] == 3,
    ),
    "--slow-chunk": (
        ("-c", "2", "-d", "300ms", "--slow-clients", "3", "--slow-chunk", "8"),
        lambda r: r["spec"]["slow"]["chunk_bytes"] == 8,
    ),
    # The test server's 7-byte answer is read whole at the first chunk: answered, then replaced.
    "--slow-window": (
        (
            "-c",
            "2",
            "-d",
            "300ms",
            "--slow-clients",
            "3",
            "--slow",
            "read",
            "--slow-window",
            "2048",
            "--slow-interval",
            "50ms",
        ),
        lambda r: r["spec"]["slow"]["window_bytes"] == 2048 and r["slow_clients"]["answered"] > 0,
    ),
    # A body of one chunk: sent whole at the first, answered, then replaced.
    "--slow-content-length": (
        ("-c", "2", "-d", "300ms", "--slow-clients", "3", "--slow", "body", "--slow-content-length", "10")
        + ("--slow-chunk", "10", "--slow-interval", "50ms"),
        lambda r: r["spec"]["slow"]["content_length"] == 10 and r["slow_clients"]["answered"] > 0,
    ),
    "--slow-hold": (
        ("-c", "2", "-d", "500ms", "--slow-clients", "3", "--slow-hold", "100ms"),
        lambda r: r["slow_clients"]["expired"] > 0 and r["slow_clients"]["opened"] > 3,
    ),
    "--slow-path": (
        ("-c", "2", "-d", "300ms", "--slow-clients", "3", "--slow-path", "/other"),
        lambda r: r["spec"]["slow"]["path"] == "/other",
    ),
    "--no-validate": (
        n(20, "--no-validate", "--expect-length", "7"),
        lambda r: (
            not r["validation"]["sent"]
            and r["spec"]["validate"] is False
            and r["requests"]["completed"] == 20
            and r["errors_total"] == 0
        ),
    ),
}

# The TLS flags, run against nginx over https ({ca}: the CA of its certificate).
TLS_FLAGS = {
    "--tls-version": (n(20, "--tls-version", "1.2", "--cacert", "{ca}"), lambda r: r["tls"]["version"] == "1.2"),
    "--tls-ciphers": (
        n(20, "--tls-ciphers", "TLS_CHACHA20_POLY1305_SHA256,TLS_AES_128_GCM_SHA256", "--cacert", "{ca}"),
        lambda r: r["tls"]["cipher"] == "TLS_CHACHA20_POLY1305_SHA256",
    ),
    "--tls-groups": (
        n(20, "--tls-groups", "secp256r1", "--cacert", "{ca}"),
        lambda r: r["tls"]["group"] == "secp256r1",
    ),
    "--cacert": (n(20, "--cacert", "{ca}"), lambda r: r["tls"]["verified"] and r["requests"]["completed"] == 20),
    "--insecure": (n(20, "--insecure"), lambda r: not r["tls"]["verified"] and r["requests"]["completed"] == 20),
    "--tls-resumption": (
        ("-n", "10", "-c", "1", "--no-keepalive", "--tls-resumption", "none", "--cacert", "{ca}"),
        lambda r: r["tls"]["handshakes_resumed"] == 0 and r["tls"]["handshakes_full"] == 10,
    ),
}


# The HTTP/2 flags, run against nghttpd over h2c, which grants 4 streams per connection.
H2_FLAGS = {
    "--http2": (
        n(20, "--http2"),
        lambda r: r["protocol"] == "h2" and r["requests"]["completed"] == r["requests"]["succeeded"] == 20,
    ),
    "--streams": (
        n(20, "--http2", "--streams", "8"),
        lambda r: (r["h2"]["streams_requested"], r["h2"]["streams_granted"], r["requests"]["completed"]) == (8, 4, 20),
    ),
}


# The capacity search's flags, in one search against the shared test server, which meets any
# p50 objective at these rates: the search rises from --start to --max-rate and confirms it
# --rounds times, each probe lasting --probe after its --warmup. (--precision and --min-rate
# steer a search that fails somewhere: tests/test_capacity.py has those.)
CAPACITY_FLAGS = ("--capacity", "--start", "--max-rate", "--rounds", "--probe", "--precision", "--min-rate")


def test_the_capacity_flags_do_what_their_help_says(front, url):
    args = ("--capacity", "p50=50ms", "--start", "100", "--max-rate", "150", "--rounds", "2", "--probe", "0.3s")
    r = measured(front, *args, "--precision", "40%", "--min-rate", "50", "--warmup", "0.1s", url)
    c = r["capacity"]
    assert [p["offered"] for p in c["probes"]] == [100.0, 150.0, 150.0, 150.0], c["probes"]
    assert (c["rate"], c["bound"], c["limited_by"]) == (150.0, "max_rate", "server")
    assert c["objective"]["percentiles"] == [{"percentile": 50.0, "latency_us": 50_000}]
    assert r["spec"]["stop"] == {"duration": 0.3} and r["spec"]["warmup"] == 0.1 and r["spec"]["rate"] == 150.0


# An access log's flags: read by `httpbench load` (the plans' reader of logs), refused in one
# line by the standalone binary.
LOG_FLAGS = ("--access-log", "--docroot", "--order", "--speed")


def test_the_access_log_flags_do_what_their_help_says(front, url, tmp_path):
    root = tmp_path / "www"
    root.mkdir()
    for name in ("a.html", "b.html"):
        (root / name).write_bytes(BODY)
    line = '10.0.0.1 - - [28/Nov/2026:10:00:0{s} +0000] "GET /{name} HTTP/1.1" 200 9\n'
    log = tmp_path / "access.log"
    log.write_text("".join(line.format(s=s, name=name) for s, name in enumerate(["b.html", "a.html", "gone.html"])))
    args = ("--access-log", str(log), "--docroot", str(root), "--order", "timed", "--speed", "20")
    if front.name == "httpbench-load":
        code, out, err = front(*args, "-d", "300ms", url)
        assert code == 2 and err.count("\n") == 1 and "read by `httpbench load`" in err, err
        return
    # 2 requests 1 s apart at speed 20: one every 50 ms, looping every 100 ms; gone.html dropped.
    r = measured(front, *args, "-d", "300ms", "-c", "2", "--no-validate", url)
    s = r["spec"]
    assert [u.rsplit("/", 1)[1] for u in s["urls"]] == ["b.html", "a.html"] and s["expect_lengths"] == [7, 7]
    assert (s["order"], s["sequence"], s["offsets"], s["speed"]) == ("timed", [0, 1], [0.0, 1.0], 20.0)
    assert 3 <= r["requests"]["completed"] <= 9 and r["errors_total"] == 0


@pytest.mark.parametrize("flag", sorted(H2_FLAGS))
def test_each_http2_flag_does_what_its_help_says(front, h2c_url, flag):
    args, check = H2_FLAGS[flag]
    r = measured(front, *args, h2c_url)
    assert check(r), (flag, r["spec"], r["h2"])


@pytest.mark.parametrize("flag", sorted(FLAGS))
def test_each_flag_does_what_its_help_says(front, url, flag, tmp_path):
    (tmp_path / "body").write_text("b=2")
    (tmp_path / "urls").write_text(f"# two more\n{url}a\n\n{url}b\n")
    (tmp_path / "weighted").write_text(f"{url}a 3\n0 {url}b\n")
    (tmp_path / "expected").write_bytes(BODY)
    args, check = FLAGS[flag]
    r = measured(
        front,
        *[
            a.format(
                body=tmp_path / "body",
                urls=tmp_path / "urls",
                weighted=tmp_path / "weighted",
                expected=tmp_path / "expected",
            )
            for a in args
        ],
        url,
    )
    assert check(r), (flag, r["spec"])


@pytest.mark.parametrize("flag", sorted(TLS_FLAGS))
def test_each_tls_flag_does_what_its_help_says(front, tls_server, flag):
    args, check = TLS_FLAGS[flag]
    r = measured(front, *[a.format(ca=tls_server.ca) for a in args], tls_server.url() + "index.html")
    assert check(r), (flag, r["spec"], r["tls"])


@pytest.mark.parametrize("io", ["auto", "io-uring", "io_uring"])
def test_every_io_choice_runs(front, url, io):
    r = measured(front, *n(10, "--io", io), url)
    assert r["engine"]["io"] in ("io_uring", "epoll") if io == "auto" else r["engine"]["io"] == "io_uring"


def test_without_json_a_summary_is_printed(front, url):
    code, out, err = front(*n(20), url)
    assert code == 0, err
    assert "20 requests in" in out and "Requests/sec:" in out and not out.lstrip().startswith("{")
    # What the server saw: the load's requests and the one before it, or only the load's.
    assert "sent 20 (+1 validation request before the load)" in out, out
    code, out, err = front(*n(20, "--no-validate"), url)
    assert code == 0 and "sent 20 (validation skipped: nothing was checked before the load)" in out, out


def test_help_and_version(front):
    code, out, _ = front("--help")
    assert code == 0 and "--connections" in out and "Examples:" in out
    code, out, _ = front("--version")
    assert code == 0 and re.search(r"\d+\.\d+", out)


def test_every_flag_in_the_help_is_tested_here():
    # A flag added later without a run here fails this test.
    done = subprocess.run([str(binary("httpbench-load")), "--help"], capture_output=True, text=True, timeout=10)
    documented = set(re.findall(r"--[a-z][a-z0-9.-]*", done.stdout))
    tested = set(FLAGS) | set(TLS_FLAGS) | set(H2_FLAGS) | set(CAPACITY_FLAGS) | set(LOG_FLAGS)
    tested |= {"--json", "--help", "--version"}
    assert documented == tested


@pytest.mark.parametrize(
    "args,says",
    [
        (("--cpus", "0,x"), "CPU list"),
        (("--cpus", "4096"), "CPU 4096"),
        (("--bind", "10.99.99.99"), "10.99.99.99"),
    ],
)
def test_unusable_cpus_and_source_addresses_are_one_line_and_exit_2(front, url, args, says):
    code, out, err = front("--json", *n(10, *args), url)
    assert code == 2 and out == "", out
    assert len(err.strip().splitlines()) == 1 and says in err, err


@pytest.mark.parametrize(
    "args,says",
    [
        (("-c", "0"), "-c: connections must be at least 1"),
        (("-n", "5", "-c", "10"), "-n 5 is smaller than -c 10"),
        (n(10, "-t", "3"), "use -t 2 or fewer"),
        (n(10, "--no-keepalive", "--pipeline", "2"), "drop --pipeline or --no-keepalive"),
        (n(10, "--timeout", "0s"), "--timeout: request_timeout must be more than 0 seconds"),
        (n(10, "--expect-length", "8"), "pass --allow-errors to load it anyway"),
        (n(10, "--expect-body", "/dev/null"), "differs from the expected body (0 bytes)"),
        (n(10, "--no-validate", "--expect-body", "/dev/null"), "--expect-body needs the validation request"),
        (n(10, "--streams", "8"), "--streams 8 needs --http2"),
        (n(10, "--streams", "1"), "--streams 1 needs --http2"),
        (n(10, "--http2", "--streams", "0"), "--streams: streams must be at least 1"),
        (n(10, "--http2", "--pipeline", "2"), "--pipeline with --http2"),
        (n(10, "--http2", "--http1.0"), "--http1.0 with --http2"),
        (n(10, "--max-errors", "150%"), "'150%' for '--max-errors <PCT>'"),
        (n(10, "--max-errors", "abc"), "not a percentage from 0% to 100%"),
        (n(10, "--expect-status", "99"), "'99' for '--expect-status <LIST>'"),
        (n(10, "--expect-status", "200,abc"), '"abc" is no HTTP status'),
        (n(10, "--slow-clients", "3", "--slow", "bogus"), '--slow "bogus" is no slow mode'),
        (n(10, "--slow", "read"), "which --slow-clients N starts"),
        (n(10, "--idle", "3", "--no-keepalive"), "which --no-keepalive turns off"),
        (n(10, "--slow-clients", "1000000"), "fit beside the load"),
    ],
)
def test_engine_refusals_are_worded_in_the_front_ends_flags_and_name(front, url, args, says):
    # The engine names no flag: each front end words the kind of its refusal in its own flags,
    # under its own name (`httpbench load:`, as the command is typed).
    code, out, err = front(*args, url)
    assert code == 2 and out == "", out
    assert len(err.strip().splitlines()) == 1 and says in err, err
    assert err.startswith(f"{front.name}: "), err


@pytest.mark.parametrize("validate", [(), ("--no-validate",)], ids=["validation", "first connection"])
def test_http2_to_a_server_that_does_not_select_h2_is_refused_in_one_line(front, tls_server, validate):
    # This nginx has no `http2 on`: offered h2 alone, it refuses the handshake (RFC 7301). The
    # validation handshake finds out, or else the load's first connections.
    args = n(10, "--http2", "--cacert", str(tls_server.ca), *validate)
    code, out, err = front(*args, tls_server.url() + "index.html")
    assert code == 2 and out == "", out
    assert len(err.strip().splitlines()) == 1, err
    assert "did not agree to HTTP/2 over ALPN" in err and "drop --http2 or enable h2 on the server" in err, err


@pytest.fixture(scope="module")
def unavailable_url():
    """A server that answers every request 503, quickly: the fastest server there is, serving
    nothing."""
    proc = subprocess.Popen(
        [str(binary("httpbench-testserver")), "--mode", "status", "--status", "503", "--max-seconds", "300"],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        yield f"http://{proc.stdout.readline().split()[1]}/"
    finally:
        stop(proc)


def test_a_run_whose_requests_did_not_succeed_exits_3_and_says_so_last(front, unavailable_url):
    # Loaded despite its failed validation (--allow-errors keeps that meaning only): every answer
    # a 503, over the default --max-errors 1%.
    code, out, err = front(*n(20, "--allow-errors"), unavailable_url)
    assert code == 3, err
    last = out.strip().splitlines()[-1]
    assert last == "Errors: 100% of requests did not succeed, over --max-errors 1%: status 503 100%", out
    assert "Requests/sec:" in out and "Succeeded/sec: 0.00" in out
    # Beside JSON, which stays whole, on stderr.
    code, out, err = front("--json", *n(20, "--allow-errors"), unavailable_url)
    r = json.loads(out)
    assert code == 3 and "did not succeed" in err, err
    assert (r["requests"]["completed"], r["requests"]["succeeded"]) == (20, 0)
    assert r["requests"]["unexpected_statuses"] == {"503": 20}
    # Lifted, or the 503 expected (the validation request's check too): exit 0.
    assert front(*n(20, "--allow-errors", "--max-errors", "100%"), unavailable_url)[0] == 0
    r = measured(front, *n(20, "--expect-status", "503"), unavailable_url)
    assert r["requests"]["succeeded"] == 20 and r["validation"]["ok"]
