"""ApacheBench (ab), the write-ups' usual client: one thread, one request per connection at a time.

What it gives: requests/s and completed requests (ab's own, less the requests it counts as
complete although receiving their response failed), failures by ab's kinds, Non-2xx responses
(so the succeeded requests, any 2xx: the only expected status ab can tell),
bytes received, and latency percentiles. The percentiles come from the `-e` CSV (microsecond
resolution), not from the printed table, which is in whole milliseconds ("0" for anything
under 1 ms); ab prints its mean latency only in whole milliseconds too, so `mean_us` stays None.
"""

from __future__ import annotations

import math
import os
import re
import tempfile
from typing import List, Optional
from urllib.parse import urlsplit

from httpbench.load.report import Report, summary, tool_report
from httpbench.load.tools.process import ClientError, Level, execute, finish, number, version, whole_seconds

# With a duration, -n is ab's request cap (it stops at whichever comes first) and it allocates
# its per-request table for all of them up front: enough for a single-threaded client at
# 500,000 requests/s, several times what ab reaches.
CAP_PER_SECOND = 500_000


def argv(level: Level, csv_path: str) -> List[str]:
    url, connections, budget_requests = level.url, level.connections, level.budget_requests
    if level.pipeline > 1:
        raise ClientError("ab cannot pipeline requests: use wrk, h2load or the engine")
    if not urlsplit(url).path:
        url += "/"  # ab refuses a URL without a path
    # -r: go on after a receive error (counted as a failure) instead of abandoning the level;
    # -q: no progress lines. Without -k, ab closes the connection after every request.
    args = ["ab", "-q", "-r"] + (["-k"] if level.keep_alive else [])
    if budget_requests is not None:
        if connections > budget_requests:
            raise ClientError(f"ab: -c {connections} cannot exceed -n {budget_requests}")
        args += ["-c", str(connections), "-n", str(budget_requests)]
    else:
        # -t sets the cap to 50,000 requests, so -n must come after it.
        seconds = whole_seconds(level.budget_seconds)
        cap = max(connections, math.ceil(seconds * CAP_PER_SECOND))
        args += ["-c", str(connections), "-t", str(seconds), "-n", str(cap)]
    return args + ["-e", csv_path, url]


def parse(stdout: str, csv_text: Optional[str] = None) -> Report:
    report = tool_report("ab")
    done = number(r"^Complete requests:\s+(\d+)", stdout, int)
    rps = number(r"^Requests per second:\s+([\d.]+)", stdout)
    report["duration_s"] = number(r"^Time taken for tests:\s+([\d.]+) seconds", stdout)
    if done is None or rps is None:
        return report
    # ab prints the breakdown and the write errors only when there are any.
    errors = {"connect": 0, "receive": 0, "length": 0, "exceptions": 0}
    m = re.search(r"^\s+\(Connect: (\d+), Receive: (\d+), Length: (\d+), Exceptions: (\d+)\)", stdout, re.M)
    if m:
        errors = dict(zip(errors, map(int, m.groups())))
    errors["write"] = number(r"^Write errors:\s+(\d+)", stdout, int) or 0
    report["errors"] = errors
    failed = number(r"^Failed requests:\s+(\d+)", stdout, int) or 0
    report["errors_total"] = failed + errors["write"]
    # With -r, ab counts a request that failed to receive as complete, in its requests/s too:
    # against a refused port it reports thousands of requests/s. Those are taken out here (a
    # length failure is a complete response of another length, so it stays in).
    completed = max(0, done - errors["receive"])
    report["requests"].update(completed=completed, failed=failed, per_second=rps * completed / done if done else 0.0)
    report["status"]["non_2xx"] = number(r"^Non-2xx responses:\s+(\d+)", stdout, int) or 0
    # Any 2xx is what it served (a plan gives ab no other expected status).
    report["requests"]["succeeded"] = max(0, completed - report["status"]["non_2xx"])
    read = number(r"^Total transferred:\s+(\d+) bytes", stdout, int)
    body = number(r"^HTML transferred:\s+(\d+) bytes", stdout, int)
    report["bytes"].update(read=read, body=body, head=read - body if read is not None and body is not None else None)
    report["latency"]["total"] = _latency(csv_text, completed)
    return report


def _latency(csv_text: Optional[str], completed: int) -> dict:
    """Percentiles from the CSV (0% is the fastest request, 100% the slowest), in microseconds.
    ab's timings include failed requests; there is no way to take them out."""
    at = {}
    for line in (csv_text or "").splitlines()[1:]:  # after "Percentage served,Time in ms"
        percent, ms = line.split(",")
        at[int(percent)] = float(ms) * 1000
    if not at or not completed:
        return summary()
    return summary(
        count=completed,
        min_us=at.get(0),
        p50_us=at.get(50),
        p75_us=at.get(75),
        p90_us=at.get(90),
        p99_us=at.get(99),
        max_us=at.get(100),
    )


def tool_version() -> Optional[str]:
    return version(("ab", "-V"), r"Version ([\w.]+)")


def run(level: Level) -> Report:
    with tempfile.TemporaryDirectory(prefix="httpbench-ab-") as tmp:
        csv_path = os.path.join(tmp, "percentiles.csv")
        done = execute(argv(level, csv_path), level.cpus, level.timeout)
        csv_text = open(csv_path).read() if os.path.exists(csv_path) else None
    return finish(parse(done.stdout, csv_text), done, tool_version(), 1, level.timeout)
