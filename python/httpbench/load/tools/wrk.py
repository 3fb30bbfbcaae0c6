"""wrk: keep-alive only, duration only, one thread per CPU it is given.

What it gives: requests/s, completed requests and the run's length, socket errors (connect,
read, write, timeout), responses with a status of 400 or more ("Non-2xx or 3xx": so not which
answers succeeded, 2xx and 3xx being one count; `requests.succeeded` stays None, a level is
ranked on its completed requests and its `errors` flag is judged on its 4xx and 5xx), and with
--latency the mean, standard deviation, max and 50/75/90/99th percentiles. With pipelining
(a Lua script sending N requests at once, as in wrk's examples/scripts/pipeline.lua) wrk times
each batch, from its send to its last response, not each request.
"""

from __future__ import annotations

import os
import re
import tempfile
from typing import List, Optional

from httpbench.load.report import Report, summary, tool_report
from httpbench.load.tools.process import (
    TIME,
    ClientError,
    Level,
    execute,
    finish,
    number,
    to_us,
    version,
    whole_seconds,
)

PIPELINE_LUA = """\
-- wrk's examples/scripts/pipeline.lua, with depth {depth} and the URL's own path
init = function(args)
   local r = {{}}
   for i = 1, {depth} do r[i] = wrk.format(nil) end
   req = table.concat(r)
end
request = function()
   return req
end
"""


def argv(level: Level, script: Optional[str]) -> List[str]:
    if not level.keep_alive:
        raise ClientError(
            "wrk cannot turn keep-alive off (a 'Connection: close' header makes the server close, "
            "which is not the same): use ab or the engine"
        )
    if level.budget_requests is not None:
        raise ClientError("wrk has no request budget (-n): give the level a duration")
    args = [
        "wrk",
        "-t",
        str(level.threads),
        "-c",
        str(level.connections),
        "-d",
        f"{whole_seconds(level.budget_seconds)}s",
        "--latency",
    ]
    return args + (["-s", script] if script else []) + [level.url]


def parse(stdout: str) -> Report:
    report = tool_report("wrk")
    requests = report["requests"]
    m = re.search(r"^\s*(\d+) requests in " + TIME, stdout, re.M)
    if m:
        requests["completed"] = int(m.group(1))
        report["duration_s"] = to_us(m.group(2), m.group(3)) / 1e6
    requests["per_second"] = number(r"^Requests/sec:\s+([\d.]+)", stdout)
    if requests["completed"] is None:
        return report
    # wrk prints these two lines only when a count is not zero.
    errors = dict.fromkeys(("connect", "read", "write", "timeout"), 0)
    m = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", stdout)
    if m:
        errors = dict(zip(errors, map(int, m.groups())))
    report["errors"] = errors
    report["errors_total"] = sum(errors.values())
    report["status"]["non_2xx_3xx"] = number(r"^\s*Non-2xx or 3xx responses:\s+(\d+)", stdout, int) or 0
    latency = {}
    m = re.search(r"^\s*Latency\s+" + r"\s+".join([TIME] * 3), stdout, re.M)
    if m:
        g = m.groups()
        latency.update(mean_us=to_us(*g[0:2]), stdev_us=to_us(*g[2:4]), max_us=to_us(*g[4:6]))
    for percent, value, unit in re.findall(r"^\s+(50|75|90|99)%\s+" + TIME, stdout, re.M):
        # wrk prints 0.00us when its percentile walk falls off its table (seen with
        # pipelining); no request takes no time, so that is "unknown".
        us = to_us(value, unit)
        latency[f"p{percent}_us"] = us or None
    report["latency"]["total"] = summary(**latency)
    return report


def pipeline_script(directory: str, depth: int) -> str:
    """Write the Lua script that makes wrk pipeline `depth` requests into `directory`; its path."""
    path = os.path.join(directory, f"pipeline{depth}.lua")
    with open(path, "w") as f:
        f.write(PIPELINE_LUA.format(depth=depth))
    return path


def tool_version() -> Optional[str]:
    return version(("wrk", "-v"), r"^wrk (\S+)")


def run(level: Level) -> Report:
    with tempfile.TemporaryDirectory(prefix="httpbench-wrk-") as tmp:
        script = pipeline_script(tmp, level.pipeline) if level.pipeline > 1 else None
        done = execute(argv(level, script), level.cpus, level.timeout)
    return finish(parse(done.stdout), done, tool_version(), level.threads, level.timeout)
