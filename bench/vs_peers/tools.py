"""One tool's run against a server, through the package: the peers' command lines, process
handling and parsers from httpbench.load.tools, httpbench-load's own JSON report, and the server's
and the other processes' CPU from the ServerHost's monitor window around the run."""

from __future__ import annotations

import dataclasses
import json
import os
from typing import List, Optional

from httpbench.load.report import filled
from httpbench.load.tools import ab, h2load, wrk
from httpbench.load.tools import process as clients
from httpbench.load.tools.process import ClientError
from httpbench.servers.host import ServerHost

from vs_peers import oha
from vs_peers.matrix import PIPELINE, Run, Scenario

APT_HINT = "apt-get install -y wrk apache2-utils nghttp2-client"
PEERS = {"wrk": wrk, "h2load": h2load, "ab": ab, "oha": oha}
# Status groups that are failures, under each parser's own names (ab's non_2xx counts 3xx too).
FAILING_STATUS = ("4xx", "5xx", "non_2xx", "non_2xx_3xx")


def command(tool: str, url: str, scenario: Scenario, duration: int, httpbench: str, workdir: str) -> List[str]:
    """The tool's command line for `scenario`: one thread (no CPUs of its own), `duration` seconds."""
    keep_alive = scenario.mode != "close"
    pipeline = PIPELINE if scenario.mode == "pipe" else 1
    level = clients.Level(
        url, scenario.conns, None, duration, keep_alive, (), pipeline, clients.time_limit(scenario.conns, duration)
    )
    if tool == "wrk":
        script = wrk.pipeline_script(workdir, pipeline) if pipeline > 1 else None
        argv = wrk.argv(dataclasses.replace(level, keep_alive=True), script)
        if not keep_alive:
            # wrk cannot turn keep-alive off; asking the server to close is the nearest it comes
            # (it still speaks HTTP/1.1 and reconnects), as the scenario's title says.
            argv[-1:-1] = ["-H", "Connection: close"]
        return argv
    if tool == "h2load":
        if not scenario.http2:
            return h2load.argv(level)
        # The package's h2load speaks HTTP/1.1 (--h1, -m its pipeline); without --h1 it speaks
        # h2 (ALPN over https, prior knowledge over http) and -m is streams per connection.
        argv = h2load.argv(dataclasses.replace(level, pipeline=scenario.streams))
        argv.remove("--h1")
        return argv
    if tool == "ab":
        return ab.argv(level, _ab_csv(workdir))
    if tool == "oha":
        return oha.argv(level, scenario.streams if scenario.http2 else None)
    mode = {"pipe": ["--pipeline", str(PIPELINE)], "close": ["--no-keepalive"]}.get(scenario.mode, [])
    if scenario.https:
        # --insecure: the peers verify no certificate either (each side still checks the
        # handshake's signature), so every client does the same work per handshake.
        mode += ["--insecure", "--tls-version", "1.3", "--tls-resumption", scenario.resumption]
    if scenario.http2:
        mode += ["--http2", "--streams", str(scenario.streams)]
    if scenario.rate:
        mode += ["-R", str(scenario.rate), "--warmup", "1s", "--warmup-connections"]
    return [httpbench, "-c", str(scenario.conns), "-t", "1", "-d", f"{duration}s", "--json", *mode, url]


def install_hint(tool: str) -> str:
    return oha.INSTALL_HINT if tool == "oha" else APT_HINT


def _ab_csv(workdir: str) -> str:
    return os.path.join(workdir, "ab-percentiles.csv")


def failures(report: dict) -> int:
    """Requests that failed: transport errors plus responses with a failing status. The parsers
    keep the two apart (`errors_total`, `status`), so each is counted once; for h2load the sum is
    its own "failed", which its manual says includes "HTTP level failures"."""
    status = report["status"]
    return (report["errors_total"] or 0) + sum(status.get(group) or 0 for group in FAILING_STATUS)


def measure(tool: str, url: str, scenario: Scenario, host: ServerHost, options, workdir: str) -> Run:
    """Run `tool` once, pinned to the client CPUs, inside one monitor window of the server."""
    duration = options.duration
    argv = command(tool, url, scenario, duration, options.httpbench, workdir)
    if tool == "ab" and os.path.exists(_ab_csv(workdir)):
        os.remove(_ab_csv(workdir))  # a run that writes none must not read the last one's
    host.start_window()
    try:
        done = clients.execute(argv, options.client_cpus, clients.time_limit(scenario.conns, duration))
    except ClientError as e:
        return Run(tool, problem=str(e))
    finally:
        window = host.end_window()
    return judge(tool, scenario, done, parse(tool, done, workdir), window)


def parse(tool: str, done: clients.Finished, workdir: str) -> Optional[dict]:
    """The run's report in the engine's shape, or None when httpbench-load printed no JSON."""
    if tool == "ab":
        csv = _ab_csv(workdir)
        return ab.parse(done.stdout, open(csv).read() if os.path.exists(csv) else None)
    if tool in PEERS:
        return PEERS[tool].parse(done.stdout)
    try:
        return filled(json.loads(done.stdout))
    except ValueError:
        return None


def judge(tool: str, scenario: Scenario, done: clients.Finished, report: Optional[dict], window: dict) -> Run:
    """The run's figures, and what was wrong with it if anything."""
    others = window["others_cpu_cores"]
    run = Run(
        tool,
        server_pct=100 * (window["cpu_user_cores"] + window["cpu_sys_cores"]),
        others_pct=None if others is None else 100 * others,
    )
    if report is None or not (report["requests"]["per_second"] or 0) > 0:
        tail = (done.stderr.strip() or done.stdout.strip())[-400:]
        run.problem = f"exit {done.returncode}, no req/s parsed: " + tail.replace("\n", " | ")
        return run
    requests = report["requests"]
    run.rps, run.errors = requests["per_second"], failures(report)
    # The process's rusage for every tool alike (httpbench-load's own client figure counts its
    # threads during the load only).
    run.us_per_req = done.cpu_us_per_request(requests["completed"])
    # Below 100 with one thread, the client waited: for the server, or for a CPU others held.
    run.client_pct = 100 * (done.user_s + done.sys_s) / done.wall_s if done.wall_s > 0 else None
    if done.interrupted:
        run.problem = "stopped at its time limit"
    elif done.returncode != 0:
        run.problem = f"exit {done.returncode}"
    if tool == "httpbench":
        run.engine_io = report["engine"]["io"]
        if report["tls"]:
            run.handshakes_full = report["tls"]["handshakes_full"]
            run.handshakes_resumed = report["tls"]["handshakes_resumed"]
    if scenario.https and scenario.mode == "close":
        # A peer without keep-alive connects, and so shakes hands, once per request.
        handshakes = requests["completed"]
        if run.handshakes_full is not None:
            handshakes = run.handshakes_full + run.handshakes_resumed
        run.us_per_handshake = done.cpu_us_per_request(handshakes)
    return run
