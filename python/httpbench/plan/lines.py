"""Where a key is in a plan's TOML text: tomllib gives no positions, so `KeyLines` finds them by
scanning the text for table headers and `key =` lines."""

from __future__ import annotations

import re
from typing import Dict, List, Optional, Tuple


class KeyLines:
    """Line numbers of a TOML text's tables and keys, found by scanning it: `[levels]` is
    ("levels",), the second `[[workload]]` is ("workload", 1), `step = 10` in [levels] is
    ("levels", "step"). Multi-line strings and arrays are skipped, so a line of `notes` that
    looks like `key = value` is not taken for a key."""

    _HEADER = re.compile(r"^\s*(\[\[?)\s*(.+?)\s*\]\]?\s*(?:#.*)?$")
    _KEY = re.compile(
        r"^\s*((?:[A-Za-z0-9_-]+|\"[^\"]*\"|'[^']*')(?:\s*\.\s*(?:[A-Za-z0-9_-]+|\"[^\"]*\"|'[^']*'))*)\s*="
    )

    def __init__(self, text: str) -> None:
        self.where: Dict[Tuple, int] = {}
        table: Tuple = ()
        arrays: Dict[Tuple, int] = {}
        self.open_string: Optional[str] = None
        self.depth = 0
        for number, line in enumerate(text.splitlines(), start=1):
            rest = line
            if self.open_string:
                end = line.find(self.open_string)
                if end < 0:
                    continue
                rest, self.open_string = line[end + 3 :], None
            elif self.depth == 0:
                header = self._HEADER.match(line)
                key = self._KEY.match(line)
                if header and not key:
                    parts = tuple(_split_key(header.group(2)))
                    if header.group(1) == "[[":
                        arrays[parts] = arrays.get(parts, -1) + 1
                        table = parts + (arrays[parts],)
                    else:
                        table = parts
                    self.where.setdefault(table, number)
                    continue
                if key:
                    self.where.setdefault(table + tuple(_split_key(key.group(1))), number)
                    rest = line[key.end() :]
            self._scan(rest)

    def _scan(self, fragment: str) -> None:
        """Follow strings, comments and brackets through the rest of a line."""
        i = 0
        while i < len(fragment):
            c = fragment[i]
            if c == "#":
                return
            if fragment.startswith(('"""', "'''"), i):
                delimiter = fragment[i : i + 3]
                end = fragment.find(delimiter, i + 3)
                if end < 0:
                    self.open_string = delimiter
                    return
                i = end + 3
                continue
            if c in "\"'":
                i += 1
                while i < len(fragment) and fragment[i] != c:
                    i += 2 if c == '"' and fragment[i] == "\\" else 1
            elif c in "[{":
                self.depth += 1
            elif c in "]}":
                self.depth = max(0, self.depth - 1)
            i += 1

    def find(self, path: Tuple) -> int:
        """The line of `path`, or of the nearest enclosing table or key that is written down
        (an inline table, or a missing key's table); line 1 for what is not there at all."""
        path = tuple(path)
        while path:
            if path in self.where:
                return self.where[path]
            path = path[:-1]
        return 1


def _split_key(text: str) -> List[str]:
    """`server."my server".directives` -> ["server", "my server", "directives"]."""
    return [part.strip().strip("\"'") for part in re.findall(r"\"[^\"]*\"|'[^']*'|[^.]+", text)]


def line_of(text: str, path: Tuple) -> int:
    """The line of `text` that sets the key at `path`."""
    return KeyLines(text).find(path)
