"""Content codings counted by the engine against a real nginx compressing on the fly (`gzip on`:
chunked answers), and checked per URL against the coding and coded length a spec expects.

Every load targets 127.0.0.1, bounded by a request count.
"""

import gzip
import urllib.request

import pytest
from conftest import free_port, start_nginx, stop, wait_for_port
from httpbench.load import engine

# Text compresses, and nginx gzips text/html and text/css when asked; .webp it never gzips.
FILES = {"a.html": b"<p>hello, compressible world</p>\n" * 300, "b.css": b"p { color: red }\n" * 200}
RAW = {"c.webp": bytes(range(256)) * 40}


@pytest.fixture(scope="module")
def gzip_nginx(tmp_path_factory):
    """nginx gzipping text on the fly (chunked, as it does), serving FILES and RAW."""
    prefix = tmp_path_factory.mktemp("gzip-nginx")
    root = prefix / "www"
    root.mkdir()
    for name, body in {**FILES, **RAW}.items():
        (root / name).write_bytes(body)
    port = free_port()
    proc = start_nginx(
        prefix,
        f"access_log off; types {{ text/html html; text/css css; image/webp webp; }}\n"
        f"    gzip on; gzip_min_length 1; gzip_types text/css;\n"
        f"    server {{ listen 127.0.0.1:{port}; root {root}; }}",
    )
    wait_for_port(port, proc)
    yield f"http://127.0.0.1:{port}/"
    stop(proc)


def gzipped_length(url: str, original: bytes) -> int:
    """The coded length nginx sends for `url` (its gzip level is its own: measured, not computed)."""
    with urllib.request.urlopen(urllib.request.Request(url, headers={"Accept-Encoding": "gzip"})) as answer:
        assert answer.headers["Content-Encoding"] == "gzip"
        body = answer.read()
    assert gzip.decompress(body) == original
    return len(body)


def test_the_engine_counts_each_coding_and_checks_coded_lengths(gzip_nginx):
    names = ["a.html", "b.css", "c.webp"]
    urls = [gzip_nginx + n for n in names]
    coded = [gzipped_length(urls[0], FILES["a.html"]), gzipped_length(urls[1], FILES["b.css"]), len(RAW["c.webp"])]
    assert coded[0] < len(FILES["a.html"]) // 10
    spec = {
        "urls": urls,
        "headers": ["Accept-Encoding: gzip"],
        "expect_lengths": coded,
        "expect_encodings": ["gzip", "gzip", "identity"],
        "stop": {"requests": 3000},
        "connections": 4,
    }
    r = engine.run(spec)
    assert r["validation"]["ok"] and r["errors_total"] == 0, r["errors"]
    enc = r["encodings"]
    assert set(enc) == {"gzip", "identity"}
    assert enc["gzip"]["answers"] + enc["identity"]["answers"] == r["requests"]["completed"] == 3000
    assert enc["identity"]["bytes"] == enc["identity"]["answers"] * len(RAW["c.webp"])
    assert sum(e["bytes"] for e in enc.values()) == r["bytes"]["body"]
    # Without the header nginx sends identity: the gzip lengths and codings are then wrong.
    r = engine.run({**spec, "headers": [], "validate": False})
    assert r["encodings"]["identity"]["answers"] == 3000
    assert r["errors"]["length_mismatch"] == 3000 - r["requests"]["completed"] > 1000
    # A wrong coding alone fails an answer too (the lengths stay right).
    r = engine.run(
        {**spec, "expect_encodings": ["br", "gzip", "identity"], "validate": False, "stop": {"requests": 600}}
    )
    assert 0 < r["errors"]["length_mismatch"] < 600 and r["encodings"]["gzip"]["answers"] > 0


def test_load_counts_codings_whatever_asked_them(gzip_nginx, load):
    rc, r, err = load("-n", "500", "-c", "2", "-H", "Accept-Encoding: br, gzip", gzip_nginx + "a.html")
    assert rc == 0, err
    assert r["encodings"] == {"gzip": {"answers": 500, "bytes": r["bytes"]["body"]}}
    rc, r, err = load("-n", "200", "-c", "2", gzip_nginx + "a.html")
    assert rc == 0 and set(r["encodings"]) == {"identity"}, err
