"""A server's own words on why it failed or refused something: the line of its log (or a control
command's output) that says so, with the line of its rendered configuration that line names; and
what a log gained since an offset (read after a request or an action)."""

from __future__ import annotations

import re
from pathlib import Path


def log_size(path: Path) -> int:
    """Where a log's next line will start: what `written_since` reads from after an action."""
    try:
        return path.stat().st_size
    except OSError:
        return 0


def written_since(log: Path, offset: int) -> str:
    """What a server (or PHP) wrote in `log` after `offset`; "" when it cannot be read."""
    try:
        with open(log, "rb") as f:
            f.seek(offset)
            return f.read().decode(errors="replace")
    except OSError:
        return ""


def chosen(output: str, first: bool = False) -> str:
    """The line of a server's `output` that says what went wrong: its last error line (its first
    with `first`: PHP-FPM logs the cause, then that it failed), else its last line."""
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    said = next(
        (
            said
            for said in (lines if first else reversed(lines))
            if re.search(r"emerg|error|fatal|invalid|unknown|failed|cannot", said, re.I)
        ),
        lines[-1] if lines else "it printed nothing",
    )
    # Some servers (apache2) name the file and line on one line and give the reason on the next.
    at = len(lines) - 1 - lines[::-1].index(said) if said in lines else -1
    if at > 0 and lines[at - 1].endswith(":"):
        said = f"{lines[at - 1]} {said}"
    return said


def last_word(running, first: bool = False) -> str:
    """The server's own last word (as `chosen` picks it from its log), and the rendered config
    line it names, if it names one."""
    said = chosen(running.log_tail(40), first)
    # The first "file:line" (or "line N of file") naming a rendered file: a timestamp's "16:26"
    # names none.
    named = [*re.finditer(r"(?P<file>[\w./-]+):(?P<line>\d+)", said)]
    named += re.finditer(r"line (?P<line>\d+) of (?P<file>[\w./-]+)", said)
    for where in named:
        name = Path(where["file"].rstrip(":")).name
        text = next((text for file, text in running.config.files.items() if Path(file).name == name), None)
        if text is not None:
            number = int(where["line"])
            rendered = text.splitlines()
            if 0 < number <= len(rendered):
                said += f" (line {number} of the rendered {name}: {rendered[number - 1].strip()!r})"
            break
    return said
