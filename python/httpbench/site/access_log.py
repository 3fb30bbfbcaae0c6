"""A site's URL mix from its access log, in the Common or Combined Log Format (Apache's `common`
and `combined`, nginx's default `combined`), as httperf and Tsung replay logs.

Kept: GET requests answered 200 or 304 whose file exists under the document root, each path
weighted by its count. A 304 is kept because the file was there and a browser wanted it; the
load asks for it unconditionally. Everything else is counted by reason, with the first line of
each as an example, so the user sees what the mix is not: other methods, other statuses, paths
climbing out of the document root (`..`, also percent-encoded), missing files, unparsable lines.

Only paths and counts are kept, never client addresses: an example line has its client and user
fields masked. Query strings are dropped: a static server answers the same file whatever the
query says, a cache-busting `?v=123` per deploy would turn one file into hundreds of URLs, and a
query is where logs hold tokens and e-mail addresses.

Reading is a loop of one compiled regular expression per line and dictionary look-ups per
distinct path (a log has far fewer paths than lines): a million lines in about a second and a
half here (bench/access_log).
"""

from __future__ import annotations

import calendar
import math
import os
import re
from array import array
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional
from urllib.parse import unquote

from httpbench.site.mix import ORDERS, Mix, SiteError

FORMATS = ("Combined", "Common")
# Why a line is left out, in the order a line is judged.
REASONS = {
    "unparsable": "unparsable lines",
    "method": "methods other than GET",
    "status": "statuses other than 200 and 304",
    "climbing": "paths climbing out of the document root",
    "missing": "paths naming no file under the document root",
}

# host ident authuser [date] "request" status bytes, then Combined's "referer" "user-agent".
# A quoted request holds anything but an unescaped quote: Apache writes a quote in it as \" and
# nginx as \x22 (the loop unrolled, as a regular expression runs fastest). The client field is
# matched, never captured, and Combined's fields are only recognised by their opening quote: the
# mix needs nothing from them, and scanning a user agent costs a third of the time.
_LINE = re.compile(
    rb'\S+ \S+ (?:\S+|"[^"]*") \[([^\]]+)\] "([^"\\]*(?:\\.[^"\\]*)*)" (\d{3}) (?:\d+|-)(?P<combined> ")?'
)
_MONTHS = {m.encode(): i for i, m in enumerate(calendar.month_abbr) if m}


@dataclass(frozen=True)
class LeftOut:
    count: int
    example: str  # the first line left out for this reason, client and user masked


@dataclass(frozen=True)
class LogMix:
    mix: Mix
    format: str  # "Combined" or "Common": the format of the first line that parsed
    lines: int
    left_out: Dict[str, LeftOut] = field(compare=False)

    def summary(self) -> str:
        """One line: what the mix kept and what it left out, by reason."""
        kept = self.lines - sum(o.count for o in self.left_out.values())
        said = f"{kept:,} of {self.lines:,} lines kept"
        return said + (f"; left out: {_told(self.left_out)}" if self.left_out else "")


def _told(left_out: Dict[str, LeftOut]) -> str:
    """What was left out, by reason: "2 unparsable lines (e.g. ...); 1 ..."."""
    return "; ".join(f"{o.count:,} {REASONS[r]} (e.g. {o.example})" for r, o in left_out.items())


def read(log: Path, docroot: Optional[Path], order: str = "weighted", speed: float = 1.0) -> LogMix:
    """The mix of access log `log` over the files of `docroot` (None: every path, as `httpbench
    load` without --docroot takes them); SiteError when the log cannot be read, is in no known
    format, or leaves nothing to request."""
    if order not in ORDERS:
        raise SiteError(f"order must be one of {', '.join(ORDERS)}, got {order!r}")
    if not 0 < speed < math.inf:  # an infinite speed has no JSON for the engine, nor a meaning
        raise SiteError(f"speed must be a finite number more than 0, got {speed!r}")
    root = None if docroot is None else Path(docroot)
    if root is not None and (not root.is_dir() or not os.access(root, os.R_OK | os.X_OK)):
        raise SiteError(f"cannot read the document root {root}: name a readable directory")
    try:
        with open(log, "rb") as lines:
            return _read(lines, Path(log), root, order, speed)
    except OSError as e:
        raise SiteError(f"cannot read the access log {log}: {e.strerror or e}") from None


def _read(lines, log: Path, root: Optional[Path], order: str, speed: float) -> LogMix:
    match = _LINE.match
    index: Dict[bytes, int] = {}  # request target -> index into paths, or -1 left out (why in `refused`)
    refused: Dict[bytes, str] = {}
    slots: Dict[str, int] = {}  # URL path -> its index: targets differing in their query share it
    paths: List[str] = []
    counts: List[int] = []
    left: Dict[str, List] = {}  # reason -> [count, example]
    sequence = array("I") if order != "weighted" else None
    times = array("d") if order == "timed" else None
    seconds: Dict[bytes, Optional[float]] = {}
    first_line: Optional[bytes] = None
    formats: List[str] = []
    n = 0
    for n, line in enumerate(lines, 1):
        if first_line is None:
            first_line = line
        m = match(line)
        reason = None
        if m is None:
            reason = "unparsable"
        else:
            if not formats:
                formats.append("Combined" if m.group("combined") else "Common")
            request, status = m.group(2), m.group(3)
            if not request.startswith(b"GET "):
                reason = "method"
            elif status != b"200" and status != b"304":
                reason = "status"
            else:
                target = request[4:].rsplit(b" ", 1)[0] if request.count(b" ") >= 2 else request[4:]
                t = None
                if times is not None:
                    stamp = m.group(1)
                    if stamp not in seconds:
                        seconds[stamp] = _epoch(stamp)
                    t = seconds[stamp]
                    if t is None:
                        reason = "unparsable"  # its time is what a timed replay needs of it
                if reason is None:
                    i = index.get(target)
                    if i is None:
                        i = index[target] = _place(target, root, refused, slots, paths, counts)
                    if i < 0:
                        reason = refused[target]
                    else:
                        counts[i] += 1
                        if sequence is not None:
                            sequence.append(i)
                        if times is not None:
                            times.append(t)
        if reason is not None:
            seen = left.get(reason)
            if seen is None:
                left[reason] = [1, _masked(line, m)]
            else:
                seen[0] += 1
    left_out = {r: LeftOut(*left[r]) for r in REASONS if r in left}
    if not formats:
        shown = _masked(first_line or b"", None)
        raise SiteError(
            f"the access log {log} matches no known format (tried {' and '.join(FORMATS)} Log Format, "
            f"nginx's and Apache's defaults); its first line: {shown!r}"
            if n
            else f"the access log {log} is empty: give a log in the Common or Combined Log Format"
        )
    if not paths:
        raise SiteError(
            f"the access log {log} leaves no request to make: all {n:,} lines were left out ({_told(left_out)}); "
            "it needs GET requests answered 200 or 304" + (f" for files under {root}" if root else "")
        )
    if times is not None:
        # From the earliest: a server logs a request as it ends, so a slow one comes out of order.
        start = min(times)
        times = array("d", (t - start for t in times))
    mix = Mix(tuple(paths), tuple(map(float, counts)), order, sequence, times, speed)
    return LogMix(mix, formats[0], n, left_out)


def _place(
    target: bytes, root: Optional[Path], refused: Dict, slots: Dict[str, int], paths: List[str], counts: List[int]
) -> int:
    """Judge a request target seen for the first time: its index in `paths`, or -1 with why in
    `refused`."""
    path = target.split(b"?", 1)[0].split(b"#", 1)[0]
    reason = None
    url = path.decode("utf-8", "surrogateescape")
    if not url.startswith("/"):
        reason = "unparsable"  # absolute-form or "*": no browser asks a server for that
    else:
        name = unquote(url, errors="surrogateescape")
        if ".." in name.split("/") or "\\" in name or "\0" in name:
            reason = "climbing"
        elif root is not None and not os.path.isfile(os.path.join(root, file_of(url))):
            reason = "missing"
    if reason is not None:
        refused[target] = reason
        return -1
    slot = slots.get(url)
    if slot is None:
        slot = slots[url] = len(paths)
        paths.append(url)
        counts.append(0)
    return slot


def file_of(url: str) -> str:
    """The file, relative to the document root, that URL path `url` answers."""
    name = unquote(url, errors="surrogateescape").lstrip("/")
    return name + "index.html" if name == "" or name.endswith("/") else name


def _epoch(stamp: bytes) -> Optional[float]:
    """[10/Oct/2000:13:55:36 -0700] -> seconds since the epoch (the log's resolution: whole
    seconds); None for a time it cannot read, so that one line is left out, not the log refused."""
    try:
        day, month, rest = stamp.split(b"/", 2)
        year, hh, mm, rest = rest.split(b":", 3)
        ss, zone = rest.split(b" ")
        offset = (int(zone[1:3]) * 3600 + int(zone[3:5]) * 60) * (-1 if zone[:1] == b"-" else 1)
        when = calendar.timegm((int(year), _MONTHS[month], int(day), int(hh), int(mm), int(ss)))
        return float(when - offset)
    except (ValueError, KeyError):
        return None


def _masked(line: bytes, m: Optional[re.Match]) -> str:
    """An example line without its client address, identd name and user: in a line read, the
    fields before its time (a quoted user may hold spaces); in an unparsable one, its first field
    when that looks like an address."""
    if m is not None:
        client_ident_user = line[: m.start(1) - 2].split(b" ", 2)
        masks = (b"<client>", b"<ident>", b"<user>")
        line = b" ".join(f if f == b"-" else mask for f, mask in zip(client_ident_user, masks)) + line[m.start(1) - 2 :]
    text = line.decode(errors="replace").rstrip("\r\n")
    if m is None:
        fields = text.split(" ", 1)
        if _ADDRESS.fullmatch(fields[0]):
            text = " ".join(["<client>", *fields[1:]])
    return text if len(text) <= 160 else text[:157] + "..."


_ADDRESS = re.compile(r"[0-9A-Fa-f:.]*[.:][0-9A-Fa-f:.]*")
