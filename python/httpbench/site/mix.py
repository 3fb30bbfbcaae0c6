"""A site: its files and its URL mix, which paths the load requests and how it picks them.

What the engine needs from a mix is here and nothing else: the paths, a weight each (drawn by
weight, seeded, in the engine), and for a log replayed in its own order the sequence of path
indices and, timed, each request's second from the earliest. Sequences are arrays of machine
integers and floats: a million-line log's replay is 4 MB of indices, not a million strings.
"""

from __future__ import annotations

from array import array
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, Optional, Tuple

from httpbench.errors import Error
from httpbench.site.precompressed import write_copies
from httpbench.site.text import file_bytes

ORDERS = ("weighted", "replay", "timed")
# The size classes a site's answers are reported in (the engine's `size_classes`: the largest
# body of each, in bytes): SPECweb99's four classes of files under 1, 10, 100 and 1,000 KB, and
# above. Its class 1 starts at exactly 1 KB, so each bound is a byte under the next power.
SIZE_CLASSES = (1023, 10239, 102399, 1048575)


class SiteError(Error):
    """A site model, docroot or access log the user named cannot be served; one line."""


@dataclass(frozen=True)
class Mix:
    paths: Tuple[str, ...]  # URL paths, each starting with "/"
    # Relative weights, parallel to paths: a request's chance of asking for that path.
    weights: Tuple[float, ...]
    order: str = "weighted"
    # replay and timed: index into `paths` of each request in the log's order, looped by the load
    sequence: Optional[array] = field(default=None, compare=False, repr=False)
    # timed: each request's seconds after the log's earliest kept one, parallel to `sequence`
    times: Optional[array] = field(default=None, compare=False, repr=False)
    # timed: how many times faster than the log the requests are sent
    speed: float = 1.0

    def __post_init__(self) -> None:
        if self.order not in ORDERS:
            raise SiteError(f"order must be one of {', '.join(ORDERS)}, got {self.order!r}")
        if len(self.weights) != len(self.paths):
            raise ValueError("a mix needs one weight per path")
        if self.order != "weighted" and self.sequence is None:
            raise ValueError(f"order {self.order!r} needs the log's sequence")

    def spec(self) -> Dict[str, Any]:
        """The engine spec's keys for this mix, beside `urls` made of `paths`: weights, or the
        log's sequence (and its offsets and speed when timed)."""
        if self.order == "weighted":
            return {"weights": list(self.weights)}
        fields: Dict[str, Any] = {"order": self.order, "sequence": self.sequence.tolist()}
        if self.order == "timed":
            fields.update(offsets=self.times.tolist(), speed=self.speed)
        return fields

    def shares(self) -> Tuple[float, ...]:
        """Each path's share of the requests drawn by weight, summing to 1."""
        total = float(sum(self.weights))
        return tuple(w / total for w in self.weights)


@dataclass(frozen=True)
class Site:
    """A site model's files (generated when asked for) or a document root served in place (its
    files read when asked for): a site never holds its files' bytes."""

    label: str  # names the site in a cell's key: "specweb99 10dirs", "assets", "docroot:www"
    # (file name relative to the document root, its size in bytes), parallel to mix.paths: the
    # file each path answers, and so the length each answer must have
    files: Tuple[Tuple[str, int], ...] = field(repr=False)
    mix: Mix = field(repr=False)
    # None: a generated site, written into each server's document root; else the user's
    # directory, served where it is
    root: Optional[Path] = None
    note: str = ""  # what the user should know of how the mix was made (an access log's summary)

    def content(self, name: str, size: int) -> bytes:
        """The bytes of file `name` of `size` bytes (its entry in `files`)."""
        if self.root is not None:
            return (self.root / name).read_bytes()
        return file_bytes(name, size)

    def write(self, docroot: Path, precompressed: bool = False) -> None:
        """Write a generated site's files into `docroot`, one at a time, with their
        precompressed copies when `precompressed` (httpbench.site.precompressed); a site served
        in place is already there, and gets no copies: it is the user's, read only."""
        if self.root is not None:
            return
        for name, size in dict.fromkeys(self.files):
            target = docroot / name
            target.parent.mkdir(parents=True, exist_ok=True)
            data = file_bytes(name, size)
            target.write_bytes(data)
            if precompressed:
                write_copies(target, data)

    def lengths(self) -> Tuple[int, ...]:
        """The length of each path's answer, parallel to mix.paths."""
        return tuple(size for _, size in self.files)
