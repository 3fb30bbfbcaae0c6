"""A user's own site, served where it is: its document root, read only, and its URL mix from
its access log (httpbench.site.access_log).

Nothing is copied: each server's configuration points at the user's directory, and what the
plan holds is the requested paths with their files' names and sizes, so verification reads only
the files the mix requests, one at a time.
"""

from __future__ import annotations

from pathlib import Path
from typing import Union

from httpbench.site import access_log
from httpbench.site.access_log import file_of
from httpbench.site.mix import Site


def served_in_place(path: Union[str, Path], log: Union[str, Path], order: str = "weighted", speed: float = 1.0) -> Site:
    """The site in directory `path` with the mix of access log `log`; SiteError when either
    cannot be read or the log leaves nothing to request."""
    root = Path(path).resolve()
    read = access_log.read(Path(log), root, order, speed)
    files = []
    for url in read.mix.paths:
        name = file_of(url)
        files.append((name, (root / name).stat().st_size))
    label = f"docroot:{root.name}" + ("" if order == "weighted" else f" {order}")
    label += f" x{speed:g}" if order == "timed" and speed != 1 else ""
    return Site(label, tuple(files), read.mix, root=root, note=f"{Path(log).name}: {read.summary()}")
