"""bench/engine_vs_peers and bench/wake_cost, so that they cannot rot: the bench's error count on
captured h2load output, the command lines it gives each tool, its oha parser, its verdicts, and
two tiny runs end to end (nginx, 10 connections, every tool for one second, over http; and over
https with keep-alive and with resumed handshakes); a short wake_cost. The numbers are not
judged: these are benchmarks, not tests."""

import subprocess
import sys

from conftest import CLIENT_CPU, ROOT, SERVER_CPU, binary
from httpbench.load.tools import h2load
from test_clients import H2LOAD_503, H2LOAD_REFUSED

BENCH = ROOT / "bench" / "engine_vs_peers"
sys.path.insert(0, str(BENCH.parent))

from vs_peers import oha  # noqa: E402
from vs_peers.matrix import BASE_CONNS, HTTP_TOOLS, PIPELINE, TLS_CLOSE_CONNS, TOOLS, Run, Scenario, build  # noqa: E402
from vs_peers.targets import h2_targets  # noqa: E402
from vs_peers.tools import command, failures  # noqa: E402


def test_h2load_failures_are_counted_once():
    # h2load's "failed" already holds the 503s; adding its 5xx again would double them.
    assert failures(h2load.parse(H2LOAD_503)) == 20
    assert failures(h2load.parse(H2LOAD_REFUSED)) == 100


def _scenario(key):
    scenarios = ["ka", "pipeline", "close", "tls-ka", "tls-close", "tls-resume"]
    return next(s for s in build([10], 0, scenarios, TOOLS) if s.key == key)


def test_command_lines_say_what_the_readme_says(tmp_path):
    url = "http://127.0.0.1:1/index.html"

    def argv(tool, key):
        return command(tool, url, _scenario(key), 5, "httpbench-load", str(tmp_path))

    pipe, close = f"nginx-pipe-{BASE_CONNS}", f"nginx-close-{BASE_CONNS}"
    assert argv("wrk", "nginx-ka-10")[:6] == ["wrk", "-t", "1", "-c", "10", "-d"]
    script = argv("wrk", pipe)[argv("wrk", pipe).index("-s") + 1]
    assert f"for i = 1, {PIPELINE} do" in open(script).read()
    assert argv("wrk", close)[-3:] == ["-H", "Connection: close", url]
    assert argv("h2load", pipe)[argv("h2load", pipe).index("-m") + 1] == str(PIPELINE)
    assert "-k" in argv("ab", "nginx-ka-10") and "-k" not in argv("ab", close)
    assert argv("httpbench", pipe)[-3:] == ["--pipeline", str(PIPELINE), url]
    assert argv("httpbench", close)[-2:] == ["--no-keepalive", url]


def test_tls_command_lines(tmp_path):
    url = "https://127.0.0.1:1/index.html"
    close, resume = f"nginx-tls-close-{TLS_CLOSE_CONNS}", f"nginx-tls-resume-{TLS_CLOSE_CONNS}"

    def argv(tool, key):
        return command(tool, url, _scenario(key), 5, "httpbench-load", str(tmp_path))

    # The peers verify nothing, so neither does the engine; full handshakes unless resuming.
    tls = ["--insecure", "--tls-version", "1.3", "--tls-resumption", "none", url]
    assert argv("httpbench", close)[-7:] == ["--no-keepalive", *tls]
    assert argv("httpbench", resume)[-3:] == ["--tls-resumption", "tickets", url]
    assert "--no-keepalive" not in argv("httpbench", "nginx-tls-ka-10")
    assert argv("oha", close)[-2:] == ["--disable-keepalive", url] and "--insecure" in argv("oha", close)
    assert "--disable-keepalive" not in argv("oha", "nginx-tls-ka-10")
    assert argv("wrk", close)[-3:] == ["-H", "Connection: close", url]
    assert [s.tools for s in build([10], 0, ["tls-resume"], TOOLS)] == [["httpbench"]]


def test_h2_command_lines(tmp_path):
    # h2 over TLS and h2c: h2load without --h1 (its -m then counts streams), oha's --http2 -p.
    scenarios = {s.key: s for s in build([10], 0, ["h2", "h2c"], TOOLS)}
    assert sorted(scenarios) == sorted(
        f"{server}-{protocol}-{shape}"
        for server in ("nginx", "h2o")
        for protocol in ("h2", "h2c")
        for shape in ("10x10", "100x10", "100x100")
    )
    h2, h2c = scenarios["nginx-h2-100x10"], scenarios["h2o-h2c-10x10"]
    assert h2.tools == ["h2load", "oha", "httpbench"] and h2.https and not h2c.https

    def argv(tool, scenario, url):
        return command(tool, url, scenario, 5, "httpbench-load", str(tmp_path))

    load = argv("h2load", h2, "https://127.0.0.1:1/")
    assert "--h1" not in load and load[load.index("-c") + 1 :][:3] == ["100", "-m", "10"]
    oha_argv = argv("oha", h2, "https://127.0.0.1:1/")
    assert "--http2" in oha_argv and oha_argv[oha_argv.index("-p") + 1] == "10"
    assert argv("httpbench", h2, "https://127.0.0.1:1/")[-4:] == ["--http2", "--streams", "10", "https://127.0.0.1:1/"]
    assert "--insecure" not in argv("httpbench", h2c, "http://127.0.0.1:1/")


# `oha --no-tui --output-format json -z 1s -c 2 --disable-keepalive --insecure` against nginx over
# TLS (oha 1.x), trimmed: the deadline's unfinished requests are no errors.
OHA_JSON = """{"summary":{"successRate":0.99,"total":1.0012,"slowest":0.0121,"fastest":0.0009,
"average":0.0021,"requestsPerSec":955.8,"totalData":6664,"sizePerRequest":7,"sizePerSec":6655.9},
"statusCodeDistribution":{"200":950,"503":2},"errorDistribution":{"aborted due to deadline":2,
"connection closed before message completed":1}}"""


def test_h2_req_s_target_follows_the_core_at_its_limit():
    def verdict(h2load_pct, engine_pct, rps):
        s = Scenario("h2o-h2-100x10", "h2o", "ka", 100, ["h2load", "httpbench"], "", http2=True)
        s.runs["h2load"] = [
            Run("h2load", rps=100.0, us_per_req=2.0, server_pct=h2load_pct[0], client_pct=h2load_pct[1])
        ]
        s.runs["httpbench"] = [Run("httpbench", rps=rps, us_per_req=1.0, server_pct=engine_pct)]
        label, result, _ = h2_targets([s])[0]
        return label.split(": ", 1)[1], result

    assert verdict((98, 80), 99, 110.0) == ("req/s httpbench/h2load >= 1.00 (the server at its core)", "PASS")
    assert verdict((80, 97), 70, 140.0) == ("req/s httpbench/h2load >= 1.50 (h2load at its core)", "FAIL")
    # The engine took the server to its core: 1.5 times is beyond this host, beating h2load is not.
    pushed = "req/s httpbench/h2load >= 1.00 (h2load at its core; the server at its core under httpbench)"
    assert verdict((80, 97), 99, 115.0) == (pushed, "PASS")
    assert verdict((80, 97), 99, 80.0) == (pushed, "FAIL")
    assert verdict((60, 70), 70, 80.0)[1] == "n/a"


def test_oha_parser():
    report = oha.parse(OHA_JSON)
    assert report["requests"]["completed"] == 952 and report["errors_total"] == 1
    assert report["status"]["non_2xx"] == 2 and failures(report) == 3
    assert abs(report["requests"]["per_second"] - 952 / 1.0012) < 1e-6
    assert oha.parse("not json")["requests"]["per_second"] is None


def _rows(markdown):
    """Each Markdown table row by its first cell (a later table's row wins)."""
    lines = [line.strip("|").split("|") for line in markdown.splitlines() if line.startswith("| ")]
    return {cells[0].strip(): [c.strip() for c in cells] for cells in lines}


def _bench(*args, timeout=120):
    return subprocess.run([sys.executable, str(BENCH), *args], capture_output=True, text=True, timeout=timeout)


def test_a_bad_option_is_one_line_and_exit_2():
    done = _bench("--scenarios", "ka,nope")
    assert done.returncode == 2 and "unknown nope" in done.stderr and "Traceback" not in done.stderr


def _tiny(scenarios):
    """The bench for one second per tool and level, at 10 connections, as Markdown."""
    args = ["--runs", "1", "--duration", "1", "--levels", "10", "--big", "0", "--noisy", "0", "--markdown"]
    cpus = ["--server-cpu", str(SERVER_CPU), "--client-cpu", str(CLIENT_CPU)]
    return _bench("--httpbench", str(binary("httpbench-load")), "--scenarios", scenarios, *args, *cpus)


def test_one_tiny_scenario():
    done = _tiny("ka")
    assert done.returncode == 0, done.stderr
    rows = _rows(done.stdout)
    for tool in HTTP_TOOLS:
        req_s, errors, note = rows[tool][1], rows[tool][4], rows[tool][-1]
        assert req_s not in ("n/a", "-") and errors == "0" and note == "", (tool, rows[tool], done.stderr)
    assert rows["nginx-ka-10: req/s httpbench/wrk >= 1.00"][2] in ("PASS", "FAIL")
    assert "httpbench: httpbench-load" in done.stdout and "(io: " in done.stdout


def test_one_tiny_tls_scenario():
    """nginx over TLS 1.3: every tool with keep-alive, then httpbench-load resuming without it."""
    done = _tiny("tls-ka,tls-resume")
    assert done.returncode == 0, done.stderr
    ka, resumed = done.stdout.split("### nginx over TLS 1.3, keep-alive off")
    rows = _rows(ka)
    for tool in TOOLS:
        if tool == "oha" and rows[tool][1] == "n/a":
            assert "cargo install --locked oha" in rows[tool][-1]  # skipped, and says how to get it
            continue
        req_s, errors, note = rows[tool][1], rows[tool][4], rows[tool][-1]
        assert req_s not in ("n/a", "-") and errors == "0" and note == "", (tool, rows[tool], done.stderr)
    full, resumed_count = (int(n.replace(",", "")) for n in rows["httpbench"][5].split("/"))
    assert full == 10 and resumed_count == 0, rows["httpbench"]  # keep-alive: one handshake per connection
    rows = _rows(resumed)
    full, resumed_count = (int(n.replace(",", "")) for n in rows["httpbench"][5].split("/"))
    assert resumed_count > full, rows["httpbench"]
    assert rows[f"nginx-tls-resume-{TLS_CLOSE_CONNS}: share of handshakes resumed >= 0.99"][2] in ("PASS", "FAIL")
    assert rows["nginx-tls-ka-10: req/s httpbench/best peer >= 1.00"][2] in ("PASS", "FAIL")


def test_wake_cost_says_what_a_wake_costs_and_refuses_one_cpu_for_both():
    wake_cost = [sys.executable, str(ROOT / "bench" / "wake_cost")]
    cpus = ["--client-cpu", str(CLIENT_CPU), "--server-cpu", str(SERVER_CPU)]
    # A byte every 2 ms: the reader sleeps before each one even on a busy CI host.
    one = ["--wakes", "50", "--gap", "2000", "--repeats", "1"]
    done = subprocess.run([*wake_cost, *one, *cpus], capture_output=True, text=True)
    assert done.returncode == 0 and done.stdout.startswith("a wake costs the woken thread "), done
    assert "(median of 1, " in done.stdout and "50 reads each" in done.stdout
    for bad in (["--gap", "0"], ["--repeats", "0"], ["--wakes", "2000000"]):
        refused = subprocess.run([*wake_cost, *bad, *cpus], capture_output=True, text=True)
        assert refused.returncode == 2 and "Traceback" not in refused.stderr, (bad, refused.stderr)
    same = subprocess.run(
        [*wake_cost, "--client-cpu", str(CLIENT_CPU), "--server-cpu", str(CLIENT_CPU)], capture_output=True, text=True
    )
    assert same.returncode == 2 and "two different CPUs" in same.stderr and "Traceback" not in same.stderr
