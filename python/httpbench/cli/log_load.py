"""`httpbench load --access-log FILE [--docroot DIR] [--order HOW] [--speed X]`: the log read here
(httpbench.site.access_log, the plans' reader), its mix handed to the Rust load as a file of the
spec's URL and order fields. The flags and their --help are declared in crates/load with the
others; only their reading is here, so that a log is read one way for plans and loads alike.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Dict, List, Optional, Tuple

from httpbench.errors import Error
from httpbench.site import ORDERS, SiteError, access_log
from httpbench.site.access_log import file_of

FLAGS = ("--access-log", "--docroot", "--order", "--speed")


class LoadFlagError(Error):
    pass


def _taken(argv: List[str]) -> Tuple[Dict[str, str], List[str]]:
    """The values of FLAGS (as `--flag V` or `--flag=V`), and the arguments left for the load."""
    values: Dict[str, str] = {}
    rest: List[str] = []
    i = 0
    while i < len(argv):
        name, eq, value = argv[i].partition("=")
        if name in FLAGS:
            if not eq:
                if i + 1 >= len(argv):
                    raise LoadFlagError(f"{name} needs a value; see httpbench load --help")
                value = argv[i + 1]
                i += 1
            values[name] = value
        else:
            rest.append(argv[i])
        i += 1
    return values, rest


def with_log_mix(argv: List[str]) -> Tuple[List[str], Optional[Path]]:
    """`argv` of `httpbench load` with --access-log and its flags replaced by the mix's file (for
    the caller to remove after the load); unchanged without them."""
    if argv[:1] in (["-h"], ["--help"]) or "--help" in argv:
        return argv, None
    values, rest = _taken(argv)
    if not values:
        return argv, None
    if "--access-log" not in values:
        if set(values) == {"--docroot"}:
            # A URL file's lengths: httpbench-load reads that file, and its files' sizes.
            return [*rest, "--docroot", values["--docroot"]], None
        raise LoadFlagError(f"without --access-log FILE there is no log for {', '.join(values)}: give one or drop them")
    order = values.get("--order", "weighted")
    if order not in ORDERS:
        raise LoadFlagError(f"--order must be one of {', '.join(ORDERS)}, got {order!r}")
    speed = 1.0
    if "--speed" in values:
        if order != "timed":
            raise LoadFlagError("--speed paces --order timed only: add --order timed, or drop --speed")
        try:
            speed = float(values["--speed"])
        except ValueError:
            raise LoadFlagError(f"--speed must be a finite number more than 0, got {values['--speed']!r}") from None
    if order == "timed" and any(a.split("=")[0] in ("-R", "--rate", "--capacity") for a in rest):
        raise LoadFlagError("--order timed sends at the log's own times (sped up by --speed): drop -R and --capacity")
    root = Path(values["--docroot"]).resolve() if "--docroot" in values else None
    try:
        read = access_log.read(Path(values["--access-log"]), root, order, speed)
    except SiteError as e:
        raise LoadFlagError(str(e)) from None
    fields = {"urls": list(read.mix.paths), **read.mix.spec()}
    if root is not None:
        fields["expect_lengths"] = [(root / file_of(url)).stat().st_size for url in read.mix.paths]
    else:
        # Nothing but the log is known, and its byte counts are no answer's length (a 304 logs
        # 0, a compressed answer less): each URL's first answer sets it.
        fields["learn_lengths"] = True
    print(f"httpbench load: {values['--access-log']} ({read.format}): {read.summary()}", file=sys.stderr)
    handle, name = tempfile.mkstemp(prefix="httpbench-log-mix-", suffix=".json")
    with os.fdopen(handle, "w") as out:
        json.dump(fields, out)
    return [*rest, "--log-mix", name], Path(name)
