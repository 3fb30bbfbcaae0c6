"""oha, the rustls-based peer of the HTTPS scenarios: its command line and its `--output-format
json` parsed into the engine report's shape, as the package's parsers do for wrk, h2load and ab.
oha is no client of the package (Debian does not ship it), so it lives here, beside the bench;
`cargo install --locked oha` builds it (about 5 minutes; without --locked a too-new dependency
breaks the build)."""

from __future__ import annotations

import json
from typing import List, Optional

from httpbench.load.report import Report, tool_report
from httpbench.load.tools.process import Level, version, whole_seconds

INSTALL_HINT = "cargo install --locked oha, then put its bin directory on PATH"
# oha counts the requests in flight when -z runs out as errors of this kind; they are not
# failures of the server, so they are left out as ab's and wrk's unfinished requests are.
DEADLINE = "aborted due to deadline"


def tool_version() -> Optional[str]:
    return version(("oha", "--version"), r"^oha (\S+)")


def argv(level: Level, streams: Optional[int] = None) -> List[str]:
    """One level for oha, `level.budget_seconds` long, over HTTP/2 with `streams` per connection
    if given (its -p). --insecure: oha verifies certificates against the system's roots
    otherwise, and wrk, h2load and ab verify nothing."""
    args = ["oha", "--no-tui", "--output-format", "json", "--insecure", "-c", str(level.connections)]
    if streams is not None:
        args += ["--http2", "-p", str(streams)]
    args += ["-z", f"{whole_seconds(level.budget_seconds)}s"]
    return args + ([] if level.keep_alive else ["--disable-keepalive"]) + [level.url]


def parse(stdout: str) -> Report:
    report = tool_report("oha")
    try:
        out = json.loads(stdout)
        summary = out["summary"]
        seconds = float(summary["total"])
        statuses = {code: int(n) for code, n in (out.get("statusCodeDistribution") or {}).items()}
        errors = {kind: int(n) for kind, n in (out.get("errorDistribution") or {}).items() if kind != DEADLINE}
    except (ValueError, KeyError, TypeError):
        return report
    completed = sum(statuses.values())
    report["duration_s"] = seconds
    report["errors"] = errors
    report["errors_total"] = sum(errors.values())
    # oha's own requestsPerSec divides every answer and error, the deadline's among them, by the
    # run's time; the responses alone are what the other tools' figures count.
    report["requests"].update(
        completed=completed,
        failed=report["errors_total"],
        per_second=completed / seconds if seconds > 0 else None,
    )
    report["status"]["non_2xx"] = sum(n for code, n in statuses.items() if not code.startswith("2"))
    return report
