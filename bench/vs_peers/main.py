"""bench/engine_vs_peers: the command line, the facts a report starts with, and the loop over
servers, scenarios, repetitions and tools (round-robin, so drift hits every tool alike)."""

from __future__ import annotations

import argparse
import os
import resource
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence, Tuple

from httpbench.cli import doctor
from httpbench.load import engine
from httpbench.placement import PlacementError, parse_cpus
from httpbench.servers import ServerFailed, VerificationFailed
from httpbench.servers.host import ServerHost

from vs_peers import idle, report, servers, targets
from vs_peers.matrix import H2_SCENARIOS, SCENARIOS, SERVERS, TLS_SCENARIOS, TOOLS, Run, Scenario, build
from vs_peers.tools import PEERS, install_hint, measure

# Seconds between two client runs: lets TIME_WAIT and the server's teardown settle a little.
PAUSE_S = 0.5
# Before repeating a noisy run: give whatever else ran a moment to finish.
NOISY_PAUSE_S = 2.0


class ServerDied(Exception):
    pass


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    ap = argparse.ArgumentParser(
        prog="bench/engine_vs_peers",
        description="Benchmark httpbench-load side by side with wrk, h2load, ab and oha against nginx, h2o "
        "and the reference server on 127.0.0.1, over http and https (see bench/README.md).",
    )
    ap.add_argument(
        "--httpbench",
        default="target/release/httpbench-load",
        metavar="PATH",
        help="httpbench-load binary (default: %(default)s)",
    )
    ap.add_argument("--runs", type=int, default=3, help="runs per tool and scenario (default 3)")
    ap.add_argument("--duration", type=int, default=5, help="seconds per run (default 5)")
    ap.add_argument(
        "--levels",
        default="10,100,1000",
        help="keep-alive connection levels against nginx, all tools (default %(default)s)",
    )
    ap.add_argument(
        "--big",
        type=int,
        default=10000,
        help="large keep-alive level, wrk and httpbench only; 0 to skip (default %(default)s)",
    )
    ap.add_argument("--quick", action="store_true", help="1 run of 2 s each")
    ap.add_argument("--tools", default=",".join(TOOLS), help="subset of %(default)s")
    ap.add_argument("--scenarios", default=",".join(SCENARIOS), help="subset of %(default)s")
    ap.add_argument(
        "--tls",
        action="store_true",
        help=f"the HTTPS scenarios only (issue 14, 9-12 min): --scenarios {','.join(TLS_SCENARIOS)}",
    )
    ap.add_argument(
        "--h2",
        action="store_true",
        help=f"the HTTP/2 scenarios only (issue 15): --scenarios {','.join(H2_SCENARIOS)}",
    )
    ap.add_argument(
        "--idle",
        type=int,
        default=10000,
        metavar="N",
        help="tls-idle: httpbench-load's memory with N idle connections (default %(default)s, issue 14's "
        "count; each process needs N descriptors of its own)",
    )
    ap.add_argument("--server-cpu", default="0", help="CPU list for servers, e.g. 0 or 0-1 (default 0)")
    ap.add_argument("--client-cpu", default="1", help="CPU list for clients (default 1)")
    ap.add_argument(
        "--noisy",
        type=float,
        default=50,
        metavar="PCT",
        help="repeat a run once if other processes used more than PCT%% of a CPU "
        "meanwhile (at most a third of the runs are repeated); 0: never "
        "(default %(default)s)",
    )
    ap.add_argument(
        "--markdown", action="store_true", help="print the report as Markdown (for bench/RESULTS.md) instead of text"
    )
    a = ap.parse_args(argv)
    if a.quick:
        a.runs, a.duration = 1, 2
    try:
        a.levels = [int(x) for x in a.levels.split(",") if x.strip()]
    except ValueError:
        ap.error(f"--levels {a.levels!r} is not a list of connection counts such as 10,100")
    a.tools = [t.strip() for t in a.tools.split(",") if t.strip()]
    if a.tls or a.h2:
        a.scenarios = [*(TLS_SCENARIOS if a.tls else ()), *(H2_SCENARIOS if a.h2 else ())]
    else:
        a.scenarios = [s.strip() for s in a.scenarios.split(",") if s.strip()]
    for flag, given, known in (("--tools", a.tools, TOOLS), ("--scenarios", a.scenarios, SCENARIOS)):
        unknown = [x for x in given if x not in known]
        if unknown:
            ap.error(f"{flag}: unknown {', '.join(unknown)}; choose from {','.join(known)}")
    if a.runs < 1 or a.duration < 1 or min(a.levels, default=1) < 1 or a.big < 0:
        ap.error("--runs, --duration and --levels must be >= 1, --big >= 0")
    if a.idle <= idle.FEW:
        ap.error(f"--idle {a.idle}: give more connections than the {idle.FEW} it is compared with")
    try:
        a.server_cpus = parse_cpus(a.server_cpu, "--server-cpu")
        a.client_cpus = parse_cpus(a.client_cpu, "--client-cpu")
    except PlacementError as e:
        ap.error(str(e))
    return a


# --------------------------------------------------------------------------- facts


def httpbench_status(path: str) -> Tuple[Optional[str], Optional[str]]:
    """(its version line, None), or (None, why it cannot run)."""
    if not (os.path.isfile(path) and os.access(path, os.X_OK)):
        return None, f"not found: {path}"
    try:
        p = subprocess.run([path, "--version"], stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired) as e:
        return None, f"{path}: {e}"
    if p.returncode != 0:
        return None, f"{path} --version: exit {p.returncode} {(p.stdout + p.stderr).strip()[:100]}"
    return (p.stdout.strip().splitlines() or ["?"])[0], None


def versions(httpbench: str) -> List[Tuple[str, str]]:
    out = [(name, servers.version(name)) for name in ("nginx", "h2o")]
    out += [(name, module.tool_version() or "missing") for name, module in PEERS.items()]
    return out + [("reference", servers.version("reference")), ("httpbench", httpbench)]


def raise_file_limit(options: argparse.Namespace) -> None:
    """Clients with 10,000 connections need the descriptors; they inherit our limit."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    need = max(options.levels + [options.big, options.idle]) + 100
    if hard < need:
        log(f"warning: open-file limit {hard} < {need} needed for the largest level")


# --------------------------------------------------------------------------- the loop


@dataclass
class Progress:
    total: int
    retries_left: int  # a third of the runs at most are repeated for noise
    done: int = 0


def skip_unavailable(scenario: Scenario, hb_why: Optional[str]) -> None:
    for tool in scenario.tools:
        if tool == "httpbench" and hb_why:
            scenario.skipped[tool] = f"not available ({hb_why})"
        elif tool in PEERS and shutil.which(tool) is None:
            scenario.skipped[tool] = f"missing ({install_hint(tool)})"


def run_once(
    tool: str, scenario: Scenario, url: str, host: ServerHost, options, workdir: str, progress: Progress
) -> Run:
    """One run of `tool`, repeated once if other processes took more than --noisy meanwhile (a
    shared machine), within the global budget of repeats; flagged if still noisy."""

    def noisy(run: Run) -> bool:
        return bool(options.noisy) and (run.others_pct or 0) > options.noisy

    run = measure(tool, url, scenario, host, options, workdir)
    if noisy(run) and progress.retries_left > 0:
        progress.retries_left -= 1
        log(f"   [{scenario.key}] {tool:<9} noisy (others used {report.fmt(run.others_pct)}% CPU): repeating")
        time.sleep(NOISY_PAUSE_S)
        check_alive(host, scenario.server)
        run = measure(tool, url, scenario, host, options, workdir)
    run.noisy = noisy(run)
    return run


def check_alive(host: ServerHost, name: str) -> None:
    if not host.alive():
        raise ServerDied(f"{name} died:\n{host.running.log_tail()}")


def run_scenario(scenario: Scenario, url: str, host: ServerHost, options, workdir: str, progress: Progress) -> None:
    log(f"-- {scenario.title}")
    for repetition in range(1, options.runs + 1):
        for tool in scenario.tools:
            if tool in scenario.skipped:
                continue
            check_alive(host, scenario.server)
            run = run_once(tool, scenario, url, host, options, workdir, progress)
            scenario.runs[tool].append(run)
            progress.done += 1
            log(
                f"   [{progress.done}/{progress.total} {scenario.key} run {repetition}] {tool:<9} "
                f"{report.fmt(run.rps)} req/s  {report.fmt(run.us_per_req, 2)} us/req  errors "
                f"{report.fmt(run.errors)}" + (f"  ({run.problem})" if run.problem else "")
            )
            time.sleep(PAUSE_S)


def run_server(
    name: str, https: bool, http2: bool, scenarios: List[Scenario], options, workdir: str, progress: Progress
) -> bool:
    """Every scenario against server `name` (over https if `https`, offering HTTP/2 if `http2`),
    started once for all of them; False if it would not start or answered wrongly (its scenarios
    say so and the others still run)."""
    if not servers.installed(name):
        for s in scenarios:
            s.skipped.update({tool: f"{name} missing ({servers.install_hint(name)})" for tool in s.tools})
        return True
    try:
        host, url = servers.start(name, options.server_cpus, https, workdir, http2)
    except (ServerFailed, VerificationFailed) as e:
        log(f"error: {e}")
        for s in scenarios:
            s.skipped.update({tool: f"{name} failed to start" for tool in s.tools})
        return False
    log(f"  {name} ready at {url} (pid {host.running.pid})")
    try:
        for s in scenarios:
            run_scenario(s, url, host, options, workdir, progress)
    finally:
        host.stop()
    return True


def run_idle(options, hb_why: Optional[str], workdir: str) -> List[idle.Idle]:
    if "tls-idle" not in options.scenarios or "httpbench" not in options.tools:
        return []
    if hb_why or not servers.installed("nginx"):
        log("tls-idle: skipped (" + (f"httpbench-load: {hb_why}" if hb_why else "nginx missing") + ")")
        return []
    log(f"-- tls-idle: httpbench-load's RSS with {idle.FEW} and {options.idle} idle connections")
    found = idle.measure(options.httpbench, options.idle, options.server_cpus, options.client_cpus, workdir)
    for row in found:
        log(f"   {row.scheme}: {report.fmt(row.kib_per_connection, 1)} KiB per connection {row.problem or ''}")
    return found


def run_matrix(scenarios: List[Scenario], options, hb_why: Optional[str], idles: List[idle.Idle]) -> int:
    """Run every scenario, server by server, then tls-idle (into `idles`); 0, or 1 if a server
    failed (what ran is kept)."""
    for s in scenarios:
        skip_unavailable(s, hb_why)
    runs = sum(len(s.tools) - len(s.skipped) for s in scenarios) * options.runs
    progress = Progress(runs, runs // 3)
    log(
        f"matrix: {len(scenarios)} scenarios, {runs} client runs of {options.duration} s "
        f"(~{int(runs * (options.duration + 1.5) + 30) // 60 + 1} min with start-up)"
    )
    by_server: Dict[Tuple[str, bool, bool], List[Scenario]] = {
        (name, https, http2): [s for s in scenarios if (s.server, s.https, s.http2) == (name, https, http2)]
        for name in SERVERS
        for http2 in (False, True)
        for https in (False, True)
    }
    workdir = tempfile.mkdtemp(prefix="httpbench-evp-")
    started = True
    try:
        for (name, https, http2), mine in by_server.items():
            if mine:
                started = run_server(name, https, http2, mine, options, workdir, progress) and started
        idles += run_idle(options, hb_why, workdir)
    except ServerDied as e:
        log(f"error: {e}")
        return 1
    except KeyboardInterrupt:
        log("interrupted; reporting what ran")
        return 130
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    return 0 if started else 1


def _on_signal(signum, frame):
    raise SystemExit(128 + signum)  # unwinds, so the servers are stopped


def main(argv: Sequence[str]) -> int:
    options = parse_args(argv)
    signal.signal(signal.SIGTERM, _on_signal)
    signal.signal(signal.SIGHUP, _on_signal)
    raise_file_limit(options)
    hb_version, hb_why = httpbench_status(options.httpbench)
    if hb_why and "httpbench" in options.tools:
        log(f"httpbench-load: not available ({hb_why}); running the peers only")
    if shutil.which("taskset") is None:
        log("taskset is missing: apt-get install -y util-linux")
        return 2
    found = versions(hb_version or f"not available ({hb_why})")
    for name, version in found:
        log(f"{name:<9} {version}")
    host = doctor.host_line(engine.host_facts())
    log("host: " + host)

    scenarios = build(options.levels, options.big, options.scenarios, options.tools)
    started = time.monotonic()
    idles: List[idle.Idle] = []
    code = run_matrix(scenarios, options, hb_why, idles)
    log(f"elapsed {time.monotonic() - started:.0f} s")

    io = next((run.engine_io for s in scenarios for run in s.runs.get("httpbench", []) if run.engine_io), None)
    if io:
        found = [(name, f"{version} (io: {io})" if name == "httpbench" else version) for name, version in found]
    method = (
        f"{options.runs} run(s) x {options.duration} s per tool, medians; server pinned to CPU "
        f"{options.server_cpu}, client to CPU {options.client_cpu}, one client thread"
    )
    facts = (host, shlex.join([sys.argv[0], *argv]), method, found)
    checked = targets.targets(options.levels, options.big, scenarios, idles)
    print((report.markdown if options.markdown else report.text)(facts, scenarios, idles, checked))
    return code
