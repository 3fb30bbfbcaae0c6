"""The bytes of a generated site's files: text that compresses as real CSS, JS, HTML, JSON and SVG
do, and media that does not compress at all, as woff2, webp and jpg (already compressed) do not.

A file's bytes depend only on its name and size, hashed with SHA-256 (never Python's `hash`,
which changes with each process, nor `random`'s global state), so every process of every run
of a plan writes, and verification expects, the same bytes.

Text is cut from a "book" per kind, written once per process from a vocabulary drawn by a Zipf
law (few words very common, most rare, as in real code and prose). One repeated word would
compress 100 to 1000 times; real minified JS and CSS compress 3 to 6 times with gzip, and so does
this (tests/test_site_models.py checks the range). A file is a run of slices of the book at
offsets drawn from its name: cheap for a 50 MB site, and different in every file, so a server that
answered one file's URL with another's bytes fails verification.
"""

from __future__ import annotations

import hashlib
import random
from functools import lru_cache
from itertools import accumulate
from typing import Callable, Dict, List

# Media: incompressible bytes behind the type's own magic numbers, so a server that sniffs the
# type sees what the extension says.
_MAGIC: Dict[str, Callable[[int], bytes]] = {
    ".woff2": lambda size: b"wOF2\x00\x01\x00\x00" + size.to_bytes(4, "big"),
    ".webp": lambda size: b"RIFF" + max(0, size - 8).to_bytes(4, "little") + b"WEBPVP8 ",
    ".jpg": lambda size: b"\xff\xd8\xff\xe0",
    ".png": lambda size: b"\x89PNG\r\n\x1a\n",
}

TEXT_KINDS = (".html", ".css", ".js", ".json", ".svg", ".txt")

_BOOK_SIZE = 1 << 20  # larger than gzip's 32 KB window, so slices rarely repeat within it
_SLICE = (512, 4096)  # bytes a slice of the book takes, drawn per slice


def seed_of(*parts: object) -> int:
    """A seed from `parts` that is the same in every process."""
    digest = hashlib.sha256(":".join(map(str, parts)).encode()).digest()
    return int.from_bytes(digest[:8], "big")


def file_bytes(name: str, size: int) -> bytes:
    """The bytes of generated file `name` of `size` bytes: text for a text extension (and for no
    extension, as SPECweb99's files are), incompressible media otherwise."""
    suffix = name[name.rfind(".") :].lower() if "." in name.rsplit("/", 1)[-1] else ""
    if suffix in TEXT_KINDS or suffix == "":
        return _text(suffix or ".html", name, size)
    head = _MAGIC.get(suffix, lambda size: b"")(size)[:size]
    body = hashlib.shake_256(f"httpbench {name} {size}".encode()).digest(size - len(head))
    if suffix == ".jpg" and size >= 6:
        return head + body[:-2] + b"\xff\xd9"
    return head + body


def _text(kind: str, name: str, size: int) -> bytes:
    if size == 0:
        return b""
    book = _book(kind)
    rng = random.Random(seed_of("file", name, size))
    parts: List[bytes] = []
    left = size - 1
    while left > 0:
        length = min(left, rng.randint(*_SLICE))
        start = rng.randrange(0, len(book) - length)
        parts.append(book[start : start + length])
        left -= length
    return b"".join(parts) + b"\n"


@lru_cache(maxsize=None)
def _book(kind: str) -> bytes:
    rng = random.Random(seed_of("book", kind))
    words = _vocabulary(rng, 500)
    # Zipf's law over the vocabulary (rank r drawn in proportion to 1/r), as words are in text.
    cumulative = list(accumulate(1.0 / rank for rank in range(1, len(words) + 1)))
    write = _WRITERS[kind]
    out: List[str] = []
    length = 0
    while length < _BOOK_SIZE:
        picked = rng.choices(words, cum_weights=cumulative, k=64)
        piece = write(rng, picked)
        out.append(piece)
        length += len(piece)
    return "".join(out).encode()[:_BOOK_SIZE]


def _vocabulary(rng: random.Random, count: int) -> List[str]:
    """`count` distinct word-like identifiers made of syllables, as names in code are."""
    syllables = [c + v for c in "bcdfghjklmnprstvwz" for v in "aeiou"] + ["x", "q", "th", "sh", "er", "in"]
    words: Dict[str, None] = {}
    while len(words) < count:
        words["".join(rng.choice(syllables) for _ in range(rng.randint(1, 4)))] = None
    return list(words)


def _number(rng: random.Random) -> str:
    return str(rng.choice((rng.randint(0, 9), rng.randint(0, 100), rng.randint(0, 100000))))


# Real style sheets repeat a few dozen property names and keywords: what makes them compress
# about 5 times with gzip, better than code.
_CSS_PROPERTIES = (
    "color",
    "margin",
    "padding",
    "display",
    "position",
    "width",
    "height",
    "font-size",
    "border",
    "background-color",
    "line-height",
    "text-align",
    "flex",
    "top",
    "left",
    "z-index",
    "opacity",
)
_CSS_VALUES = ("0", "auto", "none", "block", "flex", "inherit", "100%", "1rem", "0 auto", "absolute", "center")


def _css(rng: random.Random, w: List[str]) -> str:
    props = "".join(
        f"{rng.choice(_CSS_PROPERTIES)}:"
        f"{rng.choice(('#%03x' % rng.getrandbits(12), _number(rng) + 'px', *_CSS_VALUES))};"
        for _ in range(rng.randint(2, 7))
    )
    return f".{w[0]}-{w[1]},.{w[2]} .{w[3]}{{{props}}}\n"


def _js(rng: random.Random, w: List[str]) -> str:
    calls = ";".join(f"{a}.{b}({c},{_number(rng)})" for a, b, c in zip(w[4::3], w[5::3], w[6::3]))
    return f"function {w[0]}({w[1]},{w[2]}){{var {w[3]}={_number(rng)};{calls};return {w[1]}}}\n"


def _html(rng: random.Random, w: List[str]) -> str:
    tag = rng.choice(("p", "li", "span", "a", "h2", "td"))
    return f'<div class="{w[0]} {w[1]}"><{tag} id="{w[2]}{_number(rng)}">{" ".join(w[3:40])}</{tag}></div>\n'


def _json(rng: random.Random, w: List[str]) -> str:
    fields = ",".join(f'"{k}":"{v}","{k}_id":{_number(rng)}' for k, v in zip(w[0:16:2], w[1:16:2]))
    return f'{{"id":{rng.getrandbits(32)},{fields},"{w[20]}":{str(rng.random() < 0.5).lower()}}},\n'


def _svg(rng: random.Random, w: List[str]) -> str:
    points = " ".join(f"{rng.choice('MLCQ')}{rng.randint(0, 512)} {rng.randint(0, 512)}" for _ in range(12))
    return f'<path id="{w[0]}" d="{points}Z" fill="#{rng.getrandbits(24):06x}"/>\n'


def _prose(rng: random.Random, w: List[str]) -> str:
    return " ".join(w) + ".\n"


_WRITERS = {".css": _css, ".js": _js, ".html": _html, ".json": _json, ".svg": _svg, ".txt": _prose}
