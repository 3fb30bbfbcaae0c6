"""bench/engine_vs_peers, so that it cannot rot: its error count on captured h2load output, the
command lines it gives each tool, and one tiny scenario end to end (nginx, 10 connections, every
tool for one second). The numbers are not judged: the bench is a benchmark, not a test."""

import subprocess
import sys

from conftest import CLIENT_CPU, ROOT, SERVER_CPU, binary
from httpbench.clients import h2load
from test_clients import H2LOAD_503, H2LOAD_REFUSED

BENCH = ROOT / "bench" / "engine_vs_peers"
sys.path.insert(0, str(BENCH.parent))

from vs_peers.matrix import BASE_CONNS, PIPELINE, TOOLS, build  # noqa: E402
from vs_peers.tools import command, failures  # noqa: E402


def test_h2load_failures_are_counted_once():
    # h2load's "failed" already holds the 503s; adding its 5xx again would double them.
    assert failures(h2load.parse(H2LOAD_503)) == 20
    assert failures(h2load.parse(H2LOAD_REFUSED)) == 100


def _scenario(key):
    return next(s for s in build([10], 0, ["ka", "pipeline", "close"], TOOLS) if s.key == key)


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


def _bench(*args, timeout=120):
    return subprocess.run([sys.executable, str(BENCH), *args], capture_output=True, text=True, timeout=timeout)


def test_a_bad_option_is_one_line_and_exit_2():
    done = _bench("--scenarios", "ka,nope")
    assert done.returncode == 2 and "unknown nope" in done.stderr and "Traceback" not in done.stderr


def test_one_tiny_scenario():
    done = _bench(
        "--httpbench",
        str(binary("httpbench-load")),
        "--runs",
        "1",
        "--duration",
        "1",
        "--levels",
        "10",
        "--big",
        "0",
        "--scenarios",
        "ka",
        "--noisy",
        "0",
        "--server-cpu",
        str(SERVER_CPU),
        "--client-cpu",
        str(CLIENT_CPU),
        "--markdown",
    )
    assert done.returncode == 0, done.stderr
    rows = {
        cells[0]: cells
        for cells in (
            [c.strip() for c in line.strip("|").split("|")]
            for line in done.stdout.splitlines()
            if line.startswith("| ")
        )
    }
    for tool in TOOLS:
        req_s, errors, note = rows[tool][1], rows[tool][4], rows[tool][9]
        assert req_s not in ("n/a", "-") and errors == "0" and note == "", (tool, rows[tool], done.stderr)
    assert rows["nginx-ka-10: req/s httpbench/wrk >= 1.00"][2] in ("PASS", "FAIL")
    assert "httpbench: httpbench-load" in done.stdout and "(io: " in done.stdout
