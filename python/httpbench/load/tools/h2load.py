"""h2load (nghttp2) speaking HTTP/1.1 (--h1): keep-alive only; -m is the pipeline depth.

What it gives: requests/s, requests started (sent) and done (completed), failures, status
classes 2xx-5xx (so the succeeded requests, any 2xx, which the engine reads from them), bytes
(total, headers, bodies), and min/max/mean/sd of request and connect
times. Its "time to 1st byte" is per connection (from its connect), not per request, so it is
not the engine's `first_byte` and is left out.
"""

from __future__ import annotations

import re
from typing import List, Optional

from httpbench.load.report import Report, summary, tool_report
from httpbench.load.tools.process import TIME, ClientError, Level, execute, finish, to_us, version

REQUESTS = (
    r"^requests: (\d+) total, (\d+) started, (\d+) done, (\d+) succeeded, "
    r"(\d+) failed, (\d+) errored, (\d+) timeout"
)


def argv(level: Level) -> List[str]:
    connections, budget_requests = level.connections, level.budget_requests
    if not level.keep_alive:
        raise ClientError("h2load cannot turn keep-alive off: use ab or the engine")
    args = ["h2load", "--h1", "-t", str(level.threads), "-c", str(connections), "-m", str(level.pipeline)]
    if budget_requests is not None:
        if budget_requests < connections:
            raise ClientError(f"h2load: -n {budget_requests} must be at least -c {connections}")
        args += ["-n", str(budget_requests)]
    else:
        args += ["-D", f"{max(1, round(level.budget_seconds * 1000))}ms"]  # -D takes units; "1.5" it refuses
    return args + [level.url]


def parse(stdout: str) -> Report:
    report = tool_report("h2load")
    m = re.search(r"^finished in " + TIME + r", ([\d.]+) req/s", stdout, re.M)
    if m:
        report["duration_s"] = to_us(m.group(1), m.group(2)) / 1e6
        report["requests"]["per_second"] = float(m.group(3))
    m = re.search(REQUESTS, stdout, re.M)
    if not m:
        return report
    total, started, done, succeeded, failed, errored, timeout = map(int, m.groups())
    report["requests"].update(sent=started, completed=done, failed=errored)
    # "failed" includes responses with a failing status; "errored" is the transport failures
    # (what the engine calls errors), timeouts among them.
    report["errors"] = {"failed": failed, "errored": errored, "timeout": timeout}
    report["errors_total"] = errored
    m = re.search(r"^status codes: (\d+) 2xx, (\d+) 3xx, (\d+) 4xx, (\d+) 5xx", stdout, re.M)
    if m:
        report["status"].update(zip(("2xx", "3xx", "4xx", "5xx"), map(int, m.groups())))
    m = re.search(r"^traffic: .*?\((\d+)\) total, .*?\((\d+)\) headers .*?, .*?\((\d+)\) data", stdout, re.M)
    if m:
        read, head, body = map(int, m.groups())
        report["bytes"].update(read=read, head=head, body=body)
    if done:  # with nothing done h2load prints zeros, which are not times
        report["latency"]["total"] = _times("time for request", stdout, count=done)
        report["latency"]["connect"] = _times("time for connect", stdout)
    return report


def _times(label: str, stdout: str, count: Optional[int] = None) -> dict:
    m = re.search(rf"^{label}:\s+" + r"\s+".join([TIME] * 4), stdout, re.M)
    if not m:
        return summary()
    g = m.groups()
    low, high, mean, sd = (to_us(g[i], g[i + 1]) for i in range(0, 8, 2))
    return summary(count=count, min_us=low, max_us=high, mean_us=mean, stdev_us=sd)


def tool_version() -> Optional[str]:
    return version(("h2load", "--version"), r"^h2load (\S+)")


def run(level: Level) -> Report:
    done = execute(argv(level), level.cpus, level.timeout)
    return finish(parse(done.stdout), done, tool_version(), level.threads, level.timeout)
