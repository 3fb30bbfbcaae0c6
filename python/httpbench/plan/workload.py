"""What the servers serve and the load requests: a generated file of N bytes, a given file, a
document root with a list of URLs, a PHP script (httpbench.plan.dynamic), or a site
(httpbench.site): a built-in model, or the user's document root and access log.

A workload of one file or a few holds their bytes, so the same bytes are written into every
server's document root and checked by verification; generated content depends only on (size,
name), so every run of a plan serves the same bytes. A site holds its files' names and sizes
only: its bytes are made, or read from the user's directory, one file at a time when a document
root is written or verified.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field, replace
from pathlib import Path, PurePosixPath
from typing import Iterator, List, Mapping, Optional, Sequence, Tuple, Union
from urllib.parse import unquote

from httpbench.errors import Error
from httpbench.site import Mix, Site
from httpbench.site.precompressed import write_copies

# Extensions served as text; anything else is generated as incompressible bytes, like a real
# image, so a server that compresses by type gains nothing it would not gain in production.
TEXT_EXTENSIONS = {"", ".html", ".htm", ".txt", ".css", ".js", ".json", ".xml", ".csv", ".svg"}


class WorkloadError(Error):
    pass


@dataclass(frozen=True)
class Workload:
    label: str  # "7B", "25KB jpg", "docroot:site"
    # (name relative to the docroot, bytes); repr=False: a 25 KB body in a traceback helps nobody
    files: Tuple[Tuple[str, bytes], ...] = field(repr=False)
    paths: Tuple[str, ...]  # URL paths the load requests, in turn (a site: by its weights, see `weights`)
    # The PHP workload's kind ("php-wait", say) when its URLs are PHP scripts: the site must run
    # `.php` files through PHP (servers.base.Site.php).
    php: Optional[str] = None
    # (URL path without its "/", the exact bytes it answers) where that is not the file's bytes:
    # a script's output, computed in Python (httpbench.plan.dynamic).
    answers: Tuple[Tuple[str, bytes], ...] = field(default=(), repr=False)
    # A site's files and URL mix (then `files` is empty and `paths` are the mix's paths).
    site: Optional[Site] = field(default=None, repr=False)
    # Files served beside the workload's own that its load never requests nor verification reads:
    # the slow readers' large answer (plan.hostile), written without compressed copies.
    beside: Tuple[Tuple[str, bytes], ...] = field(default=(), repr=False)

    def serving(self, name: str, data: bytes) -> "Workload":
        """This workload with `name` served beside it."""
        return replace(self, beside=self.beside + ((name, data),))

    @property
    def root(self) -> Optional[Path]:
        """The user's directory when the site is served where it is: every server's document
        root, which `write` leaves alone."""
        return self.site.root if self.site is not None else None

    def precompressed(self, encoding: Optional[str]) -> bool:
        """Whether a cell asking `encoding` gets `.gz` and `.br` copies beside the files: only a
        workload the suite writes (a user's docroot is read only), and only for a coding, since
        brotli's copies cost 1.1-1.4 s of CPU per MB of text to write (the assets site's 0.9 MB
        of text: 1.0 s)."""
        return self.root is None and encoding not in (None, "identity")

    @property
    def weights(self) -> Tuple[float, ...]:
        """Each path's relative weight, parallel to `paths`; () when they are requested in turn."""
        return self.site.mix.weights if self.site is not None else ()

    def lengths(self) -> Tuple[int, ...]:
        """Each path's answer length, parallel to `paths` (before any encoding)."""
        if self.site is not None:
            return self.site.lengths()
        return tuple(len(answer) for answer in self.file_map().values())

    def write(self, docroot: Path, precompressed: bool = False) -> None:
        """Write the files into `docroot`; with `precompressed`, each one's `.gz` and `.br`
        copies beside it where they are worth serving (httpbench.site.precompressed), as a cell
        asking a coding of a tuned server needs. A site served in place is left alone."""
        for name, data in self.beside:
            (Path(docroot) / name).write_bytes(data)
        if self.site is not None:
            self.site.write(Path(docroot), precompressed)
            return
        for name, data in self.files:
            target = Path(docroot) / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
            if precompressed:
                write_copies(target, data)

    def file_map(self) -> Mapping[str, bytes]:
        """URL path (without its leading "/", as verification wants it) -> the bytes it must
        answer: exactly what the load will request. A site's bytes are made or read when looked
        up, one file at a time."""
        if self.site is not None:
            return _SiteAnswers(self.site)
        if self.answers:
            return dict(self.answers)
        files = dict(self.files)
        return {path[1:]: files[_file_for(path)] for path in self.paths}

    def as_files(self) -> "Workload":
        """The same URLs answering the same bytes as plain files: what a server that runs no PHP
        (the client ceiling's reference server) serves in a PHP workload's place."""
        if self.php is None:
            return self
        return Workload(self.label, self.answers, self.paths)


class _SiteAnswers(Mapping):
    """A site's file_map: each requested path's bytes, made or read when looked up, so
    verification holds one file at a time, not the site."""

    def __init__(self, site: Site) -> None:
        self.site = site
        self.files = {path[1:]: file for path, file in zip(site.mix.paths, site.files)}

    def __getitem__(self, path: str) -> bytes:
        return self.site.content(*self.files[path])

    def __iter__(self) -> Iterator[str]:
        return iter(self.files)

    def __len__(self) -> int:
        return len(self.files)


def site(model: Site) -> Workload:
    return Workload(model.label, (), model.mix.paths, site=model)


def size_label(size: int) -> str:
    """7 -> "7B", 25600 -> "25KB", 1048576 -> "1MB"; a size that is no whole KB stays in bytes."""
    for unit, factor in (("MB", 1 << 20), ("KB", 1 << 10)):
        if size >= factor and size % factor == 0:
            return f"{size // factor}{unit}"
    return f"{size}B"


def generated(size: int, name: str = "index.html") -> Workload:
    if isinstance(size, bool) or not isinstance(size, int) or size < 0:
        raise WorkloadError(f"size must be a whole number of bytes >= 0, got {size!r}")
    _check_name(name)
    suffix = PurePosixPath(name).suffix.lower()
    label = size_label(size) if suffix in (".html", ".htm") else f"{size_label(size)} {suffix.lstrip('.') or name}"
    return Workload(label, ((name, content(size, name)),), ("/" + name,))


def content(size: int, name: str) -> bytes:
    """Deterministic bytes for a generated file: readable text ending in a newline for text
    types; for others, hash-stream bytes framed like the type where that is cheap (JPEG's
    start and end markers), incompressible as real media is."""
    suffix = PurePosixPath(name).suffix.lower()
    if suffix in TEXT_EXTENSIONS:
        if size == 0:
            return b""
        pattern = b"httpbench "
        return (pattern * (size // len(pattern) + 1))[: size - 1] + b"\n"
    data = bytearray(hashlib.shake_256(f"httpbench {name} {size}".encode()).digest(size))
    if suffix in (".jpg", ".jpeg") and size >= 4:
        data[:2], data[-2:] = b"\xff\xd8", b"\xff\xd9"
    return bytes(data)


def file(path: Union[str, Path]) -> Workload:
    """One given file, served under its own name."""
    source = Path(path)
    if not source.is_file():
        raise WorkloadError(f"no such file: {source}")
    data = source.read_bytes()
    return Workload(f"{source.name} {size_label(len(data))}", ((source.name, data),), ("/" + source.name,))


def docroot(path: Union[str, Path], urls: Sequence[str]) -> Workload:
    """A user's document root, served where it is; the load requests `urls` in turn. Every URL
    must name a file in it (a URL ending in "/" names its index.html), so a typo fails here, not
    mid-run; only those files are ever read, by verification."""
    root = Path(path).resolve()
    if not root.is_dir():
        raise WorkloadError(f"no such directory: {root}")
    if not urls:
        raise WorkloadError("a docroot workload needs at least one URL")
    files: List[Tuple[str, int]] = []
    for url in urls:
        if not isinstance(url, str) or not url.startswith("/"):
            raise WorkloadError(f"a URL path must start with '/', got {url!r}")
        name = unquote(_file_for(url))
        # "%2F" unquotes to a "/" that would make the name absolute, outside the root.
        if ".." in PurePosixPath(name).parts or PurePosixPath(name).is_absolute():
            raise WorkloadError(f"{url} climbs out of {root}: name a file inside it")
        if not (root / name).is_file():
            raise WorkloadError(f"{url} names no file in {root}")
        files.append((name, (root / name).stat().st_size))
    mix = Mix(tuple(urls), (1.0,) * len(urls))
    return site(Site(f"docroot:{root.name}", tuple(files), mix, root=root))


def _file_for(url: str) -> str:
    path = url.split("?", 1)[0].lstrip("/")
    return path + "index.html" if path == "" or path.endswith("/") else path


def _check_name(name: str) -> None:
    parts = PurePosixPath(name).parts if isinstance(name, str) else ()
    if not parts or name.startswith("/") or ".." in parts or "\\" in name:
        raise WorkloadError(f"name must be a relative file name inside the document root, got {name!r}")
