"""Dynamic pages: the PHP workloads, each a script in the document root and the exact bytes its
URL answers, computed here so verification compares the server's answer byte for byte.

- `php-hello`: a fixed short page: the cost of the gateway and of starting a request in PHP.
- `php-page`: a realistic page, in the spirit of TechEmpower's fortunes without a database: rows
  held in the script, sorted by message, rendered as a table of about 10 KB with every message
  escaped by htmlspecialchars (some need it: markup, quotes, ampersands, non-ASCII text).
- `php-wait`: waits 10 ms (as if for a database) and prints a short page: the worker pools
  (PHP-FPM's pm.max_children, prefork's MaxRequestWorkers) reach their limits as concurrency
  rises, so throughput tops out at pool size / 10 ms and latency queues beyond it.

The script holds the rows as PHP literals written from the same Python values the expected page
is rendered from, so the two cannot drift apart; a test runs the real PHP and compares.
"""

from __future__ import annotations

from typing import Dict, List, Tuple

from httpbench.plan.workload import Workload, WorkloadError

PHP_KINDS = ("php-hello", "php-page", "php-wait")
# What php-wait waits for, in microseconds (usleep's unit).
WAIT_US = 10_000

HELLO_PAGE = b"<!DOCTYPE html>\n<html><body><p>hello from PHP</p></body></html>\n"
WAIT_PAGE = b"<!DOCTYPE html>\n<html><body><p>waited 10 ms</p></body></html>\n"

# Messages with every character htmlspecialchars rewrites, and UTF-8 it must leave alone.
_MESSAGES = (
    "A computer scientist is someone who fixes things that aren't broken.",
    '<script>alert("This should not be displayed in a browser alert box.");</script>',
    "Any program that runs right is obsolete & any program that does not is late.",
    "フレームワークのベンチマーク",
    'The "fastest" server is the one that answers the question you asked.',
    "Emacs is a nice operating system, but I prefer UNIX. — Tom Christaensen",
    "Computers make very fast, very accurate mistakes; caches < CPUs > disks.",
    "Feature: a bug with seniority. Ça marche, déjà vu, naïve façade.",
    "After enough decimal places, nobody gives a damn & the answer is 42.",
    "A bad random number generator: 1, 1, 1, 1, 1, 4.33e+67, 1, 1, 1",
)
_ROWS = 100


def rows() -> List[Tuple[int, str]]:
    """php-page's rows, (id, message), in the order the script holds them."""
    return [(i, f"{_MESSAGES[i % len(_MESSAGES)]} (row {i})") for i in range(1, _ROWS + 1)]


def html_escape(text: str) -> str:
    """PHP 8's htmlspecialchars with its default flags (ENT_QUOTES | ENT_SUBSTITUTE | ENT_HTML401)."""
    return (
        text.replace("&", "&amp;")
        .replace("<", "&lt;")
        .replace(">", "&gt;")
        .replace('"', "&quot;")
        .replace("'", "&#039;")
    )


_PAGE_HEAD = "<!DOCTYPE html>\n<html><head><title>Fortunes</title></head><body><table>\n"
_PAGE_HEADER_ROW = "<tr><th>id</th><th>message</th></tr>\n"
_PAGE_TAIL = "</table></body></html>\n"


def page() -> bytes:
    """php-page's answer: the rows sorted by message (strcmp: UTF-8 bytes, which sort as the
    code points Python compares), each escaped."""
    body = "".join(
        f"<tr><td>{i}</td><td>{html_escape(message)}</td></tr>\n"
        for i, message in sorted(rows(), key=lambda row: row[1])
    )
    return (_PAGE_HEAD + _PAGE_HEADER_ROW + body + _PAGE_TAIL).encode()


def _php_string(text: str) -> str:
    """A PHP single-quoted literal: only the backslash and the quote are escaped in one."""
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _php_double(text: str) -> str:
    """A PHP double-quoted literal of plain text ending in newlines (written as \\n)."""
    assert not any(c in text for c in '\\"$'), text
    return '"' + text.replace("\n", "\\n") + '"'


def _page_script() -> str:
    literal = "".join(f"    [{i}, {_php_string(message)}],\n" for i, message in rows())
    return f"""<?php
// httpbench php-page: a template rendered from rows, every message escaped.
$rows = [
{literal}];
usort($rows, fn($a, $b) => strcmp($a[1], $b[1]));
echo {_php_double(_PAGE_HEAD + _PAGE_HEADER_ROW)};
foreach ($rows as [$id, $message]) {{
    echo '<tr><td>', $id, '</td><td>', htmlspecialchars($message), "</td></tr>\\n";
}}
echo {_php_double(_PAGE_TAIL)};
"""


def scripts() -> Dict[str, Tuple[str, str, bytes]]:
    """kind -> (script name, script text, the bytes its URL answers)."""
    return {
        "php-hello": (
            "hello.php",
            f"<?php\n// httpbench php-hello: a fixed short page.\necho {_php_double(HELLO_PAGE.decode())};\n",
            HELLO_PAGE,
        ),
        "php-page": ("page.php", _page_script(), page()),
        "php-wait": (
            "wait.php",
            "<?php\n// httpbench php-wait: 10 ms as if waiting for a database, then a short page.\n"
            f"usleep({WAIT_US});\necho {_php_double(WAIT_PAGE.decode())};\n",
            WAIT_PAGE,
        ),
    }


def php_workload(kind: str) -> Workload:
    """The PHP workload `kind` (one of PHP_KINDS), labelled with its kind."""
    made = scripts()
    if kind not in made:
        raise WorkloadError(f"unknown PHP workload {kind!r}; use one of {', '.join(PHP_KINDS)}")
    name, text, answer = made[kind]
    return Workload(kind, ((name, text.encode()),), ("/" + name,), php=kind, answers=((name, answer),))
