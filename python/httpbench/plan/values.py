"""A plan's values checked one at a time, each mistake a PlanError that names the file, the line
and the key (`ValueChecks`), and the values a plan writes in its own way (durations)."""

from __future__ import annotations

import difflib
import json
import re
from pathlib import Path
from typing import Any, Dict, NoReturn, Optional, Sequence, Tuple

from httpbench.plan.lines import KeyLines
from httpbench.plan.model import PlanError

_DURATION = re.compile(r"^\s*(\d+(?:\.\d*)?|\.\d+)\s*(ms|s|m|h)?\s*$")
_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, None: 1.0}


def parse_duration(value: Any) -> Optional[float]:
    """ "2s", "500ms", "1m", "1h", "1.5" or a number: seconds; None if it is none of those."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    match = _DURATION.match(value) if isinstance(value, str) else None
    return float(match.group(1)) * _UNITS[match.group(2)] if match else None


def show(value: Any) -> str:
    """A value as it would be written in TOML."""
    try:
        return json.dumps(value)
    except (TypeError, ValueError):
        return str(value)


def key_name(path: Tuple) -> str:
    """("workload", 1, "size") -> "workload.size": the line says which workload."""
    return ".".join(str(part) for part in path if not isinstance(part, int))


def is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


class ValueChecks:
    """Checks of a plan's values, each naming the key at `path` (a tuple of table and key names
    and array indexes) and its line."""

    def __init__(self, source: str, text: str, base_dir: Path) -> None:
        self.source = source
        self.text = text
        self.base_dir = base_dir
        self.lines = KeyLines(text)

    def fail(self, path: Tuple, message: str) -> NoReturn:
        raise PlanError(f"{self.source} line {self.lines.find(path)}: {message}")

    # -- small checks, each naming the key --

    def keys(self, table: Any, allowed: Sequence[str], path: Tuple) -> Dict[str, Any]:
        if not isinstance(table, dict):
            self.fail(path, f"{key_name(path)} must be a table, got {show(table)}")
        for key in table:
            if key not in allowed:
                close = difflib.get_close_matches(key, allowed, n=1, cutoff=0.6)
                hint = (
                    f"did you mean {key_name(path + (close[0],))!r}?"
                    if close
                    else f"known keys here: {', '.join(allowed) or 'none'}"
                )
                self.fail(path + (key,), f"unknown key {key_name(path + (key,))!r}; {hint}")
        return table

    def integer(self, value: Any, path: Tuple, minimum: int) -> int:
        if not is_int(value):
            self.fail(path, f"{key_name(path)} must be a whole number, got {show(value)}")
        if value < minimum:
            what = "more than 0" if minimum == 1 else f"at least {minimum}"
            self.fail(path, f"{key_name(path)} must be {what}, got {value}")
        return value

    def string(self, value: Any, path: Tuple, choices: Sequence[str] = ()) -> str:
        if not isinstance(value, str):
            self.fail(path, f"{key_name(path)} must be a string, got {show(value)}")
        if choices and value not in choices:
            close = difflib.get_close_matches(value, choices, n=1, cutoff=0.6)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            self.fail(path, f"{key_name(path)} must be one of {', '.join(map(repr, choices))}, got {value!r}{hint}")
        return value

    def duration(self, value: Any, path: Tuple, zero_ok: bool) -> float:
        seconds = parse_duration(value)
        if seconds is None:
            self.fail(
                path,
                f'{key_name(path)} must be a duration like "2s", "500ms", "1m" or a number of seconds, '
                f"got {show(value)}",
            )
        if seconds < 0 or seconds == 0 and not zero_ok:
            self.fail(path, f"{key_name(path)} must be more than 0 s, got {show(value)}")
        return seconds

    def array(self, value: Any, path: Tuple, item, allow_scalar: bool = False) -> Tuple:
        """A non-empty list without repeats, each item checked by `item(value, path)`."""
        if allow_scalar and not isinstance(value, list):
            value = [value]
        if not isinstance(value, list) or not value:
            self.fail(path, f"{key_name(path)} must be a non-empty list, got {show(value)}")
        items = tuple(item(v, path) for v in value)
        for i, v in enumerate(items):
            if v in items[:i]:
                self.fail(path, f"{key_name(path)} has {show(value[i])} twice")
        return items

    def share(self, value: Any, path: Tuple) -> float:
        """A percentage written as a string, "1%" or "0.1%", as a fraction from 0 to 1."""
        text = value.strip() if isinstance(value, str) else ""
        try:
            percent = float(text[:-1]) if text.endswith("%") else None
        except ValueError:
            percent = None
        if percent is None or not 0 <= percent <= 100:
            self.fail(path, f'{key_name(path)} must be a percentage from "0%" to "100%", like "1%", got {show(value)}')
        return percent / 100

    def boolean(self, value: Any, path: Tuple) -> bool:
        if not isinstance(value, bool):
            self.fail(path, f"{key_name(path)} must be true or false, got {show(value)}")
        return value

    def file_path(self, value: Any, path: Tuple) -> Path:
        full = self.base_dir / self.string(value, path)
        if not full.exists():
            self.fail(path, f"{key_name(path)}: no such file or directory: {full}")
        return full.resolve()
