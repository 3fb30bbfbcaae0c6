"""Precompressed copies of a generated document root's files: `name.gz` and `name.br` written
beside `name`, as a site's build step writes them for the servers that serve such copies as
they are (nginx gzip_static and brotli_static, caddy's `precompressed`, h2o's
`file.send-compressed`, Apache's precompressed-file recipe).

Which files get copies: those whose coded copy is smaller than 80% of the original, the
threshold of webpack's compression-webpack-plugin (`minRatio: 0.8`) that such build steps use.
Type alone would not do: a 7-byte text file grows under gzip, and nginx's gzip_static and caddy's
`precompressed` serve a `.gz` that exists whatever its type or size, so a copy that saves nothing
would only add header bytes; already compressed media (woff2, webp, jpg) never passes the test.

Levels: gzip 9 and brotli quality 11, the largest, as a build step compresses once and the
server serves the copy on every request (nginx's gzip_static and brotli docs assume copies made
offline; brotli's own CLI defaults to 11). Brotli 11 costs 1.1-1.4 s per MB of text here, so
copies are written only for cells that ask a coding (Workload.write's `precompressed`).
Bytes are deterministic: gzip's header carries mtime 0 and no file name.
"""

from __future__ import annotations

import gzip
from pathlib import Path
from typing import Callable, Dict

import brotli

# The suffix a copy's name adds, and how its bytes are made from the original's.
CODINGS: Dict[str, Callable[[bytes], bytes]] = {
    "gzip": lambda data: gzip.compress(data, compresslevel=9, mtime=0),
    "br": lambda data: brotli.compress(data, quality=11),
}
SUFFIXES = {"gzip": ".gz", "br": ".br"}
# A copy is written when it is smaller than this share of the original (compression-webpack-plugin's
# default minRatio).
WORTH = 0.8


def copy_name(name: str, coding: str) -> str:
    """The name of file `name`'s copy in `coding` ("gzip" or "br"): "css/main.css.br"."""
    return name + SUFFIXES[coding]


def write_copies(target: Path, data: bytes) -> None:
    """Write `target`'s copies beside it, each only where it is worth serving."""
    for coding, compress in CODINGS.items():
        coded = compress(data)
        if len(coded) < WORTH * len(data):
            target.with_name(copy_name(target.name, coding)).write_bytes(coded)
