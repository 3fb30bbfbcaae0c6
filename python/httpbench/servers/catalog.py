"""`httpbench servers`: which servers the suite knows, which are installed, and installing them
from Debian's packages."""

from __future__ import annotations

import os
import subprocess
import sys
from typing import List

from httpbench import servers


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
                adapter.summary,
            )
        )
    width = [max(len(r[i]) for r in rows) for i in range(3)]
    for row in rows:
        print(f"{row[0]:<{width[0]}}  {row[1]:<{width[1]}}  {row[2]:<{width[2]}}  {row[3]}")
    return 0


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
