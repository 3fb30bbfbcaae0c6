"""What an idle connection costs httpbench-load in memory, over https and over http: its RSS with
many keep-alive connections open to nginx and almost no requests (an open loop at RATE req/s),
minus its RSS with FEW, per extra connection. Issue 14's target is over https: at most 16 KiB.
Each process has its own open-file limit (20,000 here), so 10,000 connections fit both the client
and nginx (whose bench config holds 16,384)."""

from __future__ import annotations

import json
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import List, Optional, Sequence

from httpbench.servers import ServerFailed, VerificationFailed

from vs_peers import servers

FEW = 100
RATE = 100  # req/s over all connections: each of 10,000 connections sends one request in 100 s
DURATION_S = 8
# RSS is sampled from the time the connections are open (10,000 handshakes against one nginx
# core take about two seconds) until just before the run ends.
SAMPLE_FROM_S, SAMPLE_TO_S = 3.0, 7.0
TARGET_KIB = 16


@dataclass
class Idle:
    scheme: str
    connections: int
    rss_few_kib: Optional[int] = None
    rss_many_kib: Optional[int] = None
    problem: Optional[str] = None

    @property
    def kib_per_connection(self) -> Optional[float]:
        if self.rss_few_kib is None or self.rss_many_kib is None:
            return None
        return (self.rss_many_kib - self.rss_few_kib) / (self.connections - FEW)


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError(f"no VmRSS in /proc/{pid}/status")


def peak_rss(argv: Sequence[str], connections: int) -> int:
    """httpbench-load's largest RSS while its connections are open; raises RuntimeError when it
    did not open them all or met errors."""
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, text=True)
    started = time.monotonic()
    try:
        time.sleep(SAMPLE_FROM_S)
        peak = 0
        while time.monotonic() < started + SAMPLE_TO_S and proc.poll() is None:
            peak = max(peak, rss_kib(proc.pid))
            time.sleep(0.1)
        out, _ = proc.communicate(timeout=DURATION_S + 30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    report = json.loads(out)
    opened, errors = report["connections"]["opened"], report["errors_total"]
    if opened < connections or errors:
        raise RuntimeError(f"{connections} connections: {opened} opened, {errors} errors {report['errors']}")
    return peak


def measure(httpbench: str, connections: int, server_cpus, client_cpus, workdir: str) -> List[Idle]:
    """One Idle per scheme, https first, each against an nginx of its own; a failure is kept as
    the row's problem. The engine's TLS settings are its defaults (resumption by tickets, whose
    pool grows with the connections) but for --insecure and TLS 1.3, as in the scenarios."""
    out = []
    for https in (True, False):
        idle = Idle("https" if https else "http", connections)
        out.append(idle)
        try:
            host, url = servers.start("nginx", server_cpus, https, workdir)
        except (ServerFailed, VerificationFailed) as e:
            idle.problem = str(e)[:200]
            continue
        tls = ["--insecure", "--tls-version", "1.3"] if https else []
        pin = ["taskset", "-c", ",".join(map(str, client_cpus))]
        load = ["-t", "1", "-R", str(RATE), "-d", f"{DURATION_S}s", "--json", *tls, url]
        try:
            idle.rss_few_kib = peak_rss([*pin, httpbench, "-c", str(FEW), *load], FEW)
            idle.rss_many_kib = peak_rss([*pin, httpbench, "-c", str(connections), *load], connections)
        except (RuntimeError, ValueError, OSError, subprocess.TimeoutExpired) as e:
            idle.problem = str(e)[:200]
        finally:
            host.stop()
    return out
