"""`httpbench servers`: which servers the suite knows, which are installed, and installing them
from Debian's packages."""

from __future__ import annotations

import os
import subprocess
import sys
from typing import List

from httpbench import servers
from httpbench.servers import php_install
from httpbench.servers.base import Server


def show() -> int:
    rows = []
    for name in servers.names():
        adapter = servers.get(name)
        installed = adapter.installed()
        rows.append(
            (
                name,
                "installed" if installed else "missing",
                adapter.version() or "" if installed else f"install: httpbench servers install {name}",
                _php(adapter),
                adapter.summary,
            )
        )
    width = [max(len(r[i]) for r in rows) for i in range(4)]
    for row in rows:
        print("  ".join(f"{cell:<{width[i]}}" for i, cell in enumerate(row[:4])) + f"  {row[4]}")
    return 0


def _php(adapter: Server) -> str:
    """What the server runs PHP with and whether that is installed, with the command if not."""
    if adapter.runs_php is None:
        return "no PHP"
    runs_with, install = php_install.RUNS_WITH[adapter.runs_php]
    if php_install.missing(adapter.runs_php) is not None:
        return f"{runs_with} missing, install: {install}"
    return f"{runs_with} installed"


def install(names: List[str]) -> int:
    adapters = [servers.get(name) for name in names]  # an unknown name fails before anything runs
    packages = sorted({p for a in adapters for p in a.packages})
    if not packages:
        print("nothing to install: these servers ship with httpbench")
        return 0
    command = ["apt-get", "install", "-y", "--no-install-recommends", *packages]
    if os.geteuid() != 0:
        print("httpbench: installing packages needs root; run: sudo " + " ".join(command), file=sys.stderr)
        return 2
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    if (
        subprocess.run(["apt-get", "update", "-qq"], env=env).returncode != 0
        or subprocess.run(command, env=env).returncode != 0
    ):
        print(f"httpbench: apt-get could not install {' '.join(packages)}; see its output above", file=sys.stderr)
        return 2
    return 0
