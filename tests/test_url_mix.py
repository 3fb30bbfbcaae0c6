"""A weighted URL mix against real servers: nginx's access log confirms each URL's share, every
answer is checked against its own URL's length, and the size classes add up to what completed.

Every load targets 127.0.0.1, bounded by -n and a subprocess timeout.
"""

import collections

import pytest
from conftest import accounted, log_lines, nghttpd, tls_nginx
from httpbench.load import engine

# One file per size class of CLASSES, so that a class's requests are its URL's.
FILES = {"a.html": 100, "b.css": 3_000, "c.js": 30_000, "d.webp": 150_000}
WEIGHTS = {"a.html": 50, "b.css": 30, "c.js": 15, "d.webp": 5}
CLASSES = "1024,10240,102400"


def site(root_files: dict) -> dict:
    return {name: bytes([65 + i % 26]) * size for i, (name, size) in enumerate(root_files.items())}


def mix_file(tmp_path, weights: dict, prefix: str = "/") -> str:
    path = tmp_path / "mix.txt"
    lines = ["# a site's files, by popularity"] + [f"{prefix}{name} {w}" for name, w in weights.items()]
    path.write_text("\n".join(lines) + "\n")
    return str(path)


def shares_follow_weights(counts: dict, weights: dict) -> None:
    total, weight = sum(counts.values()), sum(weights.values())
    for name, w in weights.items():
        share = counts.get(name, 0) / total
        assert abs(share - w / weight) < 0.02, (name, share, counts)


def classes_add_up(r: dict) -> list:
    classes = r["classes"]
    assert [(c["bytes_from"], c["bytes_to"]) for c in classes] == [
        (0, 1024),
        (1025, 10240),
        (10241, 102400),
        (102401, None),
    ]
    assert sum(c["requests"] for c in classes) == r["requests"]["completed"]
    if r["errors_total"] == 0:  # a mismatched answer's bytes are in bytes.body, in no class
        assert sum(c["bytes"] for c in classes) == r["bytes"]["body"]
    for c in classes:
        assert c["latency"]["count"] == c["requests"]
        assert c["requests"] == 0 or 0 < c["latency"]["p50_us"] <= c["latency"]["p99_us"]
    return [c["requests"] for c in classes]


@pytest.mark.parametrize("pipeline", ["1", "4"])
def test_nginx_log_confirms_the_weighted_mix(nginx, load, tmp_path, pipeline):
    url, log = nginx(site(FILES))
    rc, r, err = load(
        "-n", "50000", "-c", "8", "--pipeline", pipeline, "--size-classes", CLASSES,
        "--urls-from-file", mix_file(tmp_path, WEIGHTS), url, timeout=120,
    )  # fmt: skip
    assert rc == 0, err
    assert r["requests"]["completed"] == r["requests"]["succeeded"] == 50000 and r["errors_total"] == 0
    accounted(r)
    # The validation request, then the load's 50,000: the positional URL is only the host.
    lines = log_lines(log, 50001)[1:]
    counts = collections.Counter(line.split()[2].lstrip("/") for line in lines)
    assert sum(counts.values()) == 50000 and set(counts) == set(FILES), counts
    shares_follow_weights(counts, WEIGHTS)
    # One URL per class: each class's requests are its URL's, as nginx saw them.
    assert classes_add_up(r) == [counts[name] for name in FILES]


def test_the_same_seed_draws_the_same_urls(nginx, load, tmp_path):
    url, log = nginx(site(FILES))
    mix = mix_file(tmp_path, WEIGHTS)

    def sequence(seed: str) -> list:
        log.write_text("")
        rc, r, err = load("-n", "300", "-c", "1", "--no-validate", "--seed", seed, "--urls-from-file", mix, url)
        assert rc == 0 and r["requests"]["completed"] == 300, err
        return [line.split()[2] for line in log_lines(log, 300)]

    first = sequence("11")
    assert len(first) == 300 and sequence("11") == first and sequence("12") != first


def test_each_answer_is_checked_against_its_urls_length(nginx, tmp_path):
    url, log = nginx(site(FILES))
    names = list(FILES)
    lengths = [FILES[n] for n in names]
    lengths[1] += 1  # b.css is said to be a byte longer than it is: each of its answers is wrong
    r = engine.run(
        {
            "urls": [url + n for n in names],
            "weights": [WEIGHTS[n] for n in names],
            "expect_lengths": lengths,
            "size_classes": [1024, 10240, 102400],
            "stop": {"requests": 5000},
            "connections": 4,
            "validate": False,
        }
    )
    counts = collections.Counter(line.split()[2].lstrip("/") for line in log_lines(log, 5000))
    assert sum(counts.values()) == 5000
    assert r["errors"]["length_mismatch"] == counts["b.css"] > 0
    assert r["requests"]["completed"] == 5000 - counts["b.css"]
    # Mismatched answers are in no class; the others are each in their own.
    assert classes_add_up(r) == [counts["a.html"], 0, counts["c.js"], counts["d.webp"]]
    assert [c["bytes"] for c in r["classes"]] == [counts[n] * FILES[n] if n != "b.css" else 0 for n in names]


def test_a_weighted_mix_over_http2(tmp_path, load):
    """HTTP/2 draws each stream's URL by weight too (nghttpd, h2c, 4 streams a connection)."""
    root = tmp_path / "h2"
    root.mkdir()
    for name, body in site(FILES).items():
        (root / name).write_bytes(body)
    with nghttpd(root) as port:
        rc, r, err = load(
            "-n", "20000", "-c", "4", "--http2", "--streams", "4", "--size-classes", CLASSES,
            "--urls-from-file", mix_file(tmp_path, WEIGHTS), f"http://127.0.0.1:{port}/", timeout=120,
        )  # fmt: skip
    assert rc == 0, err
    assert r["protocol"] == "h2" and r["requests"]["completed"] == 20000 and r["errors_total"] == 0
    per_class = classes_add_up(r)
    shares_follow_weights(dict(zip(FILES, per_class)), WEIGHTS)


def test_a_pipelined_weighted_mix_over_tls(load, tmp_path):
    """Each pipelined burst of drawn requests goes through TLS in one write, as a window did."""
    with tls_nginx(tmp_path / "tls", site(FILES)) as nginx:
        rc, r, err = load(
            "-n", "4000", "-c", "4", "--pipeline", "8", "--cacert", str(nginx.ca), "--size-classes", CLASSES,
            "--urls-from-file", mix_file(tmp_path, WEIGHTS), nginx.url(), timeout=120,
        )  # fmt: skip
        lines = log_lines(nginx.log, 4001)[1:]
    assert rc == 0, err
    assert r["requests"]["completed"] == 4000 and r["errors_total"] == 0
    counts = collections.Counter(line.split()[2].lstrip("/") for line in lines)
    assert sum(counts.values()) == 4000
    assert classes_add_up(r) == [counts[name] for name in FILES]


@pytest.mark.parametrize(
    "text, says",
    [
        ("/a.html 2\n/b.css x\n", 'mix.txt:2: weight "x" is not a number of 0 or more'),
        ("# fine\n/a.html 1 2\n", "mix.txt:2: \"/a.html 1 2\" is not 'URL-OR-PATH [WEIGHT]'"),
        ("/a.html 0\n", "weights add up to 0"),
    ],
)
def test_a_bad_mix_file_is_refused_in_one_line(load, tmp_path, text, says):
    (tmp_path / "mix.txt").write_text(text)
    rc, r, err = load("-n", "10", "--urls-from-file", str(tmp_path / "mix.txt"), "http://127.0.0.1:1/")
    assert rc == 2 and r is None, err
    assert says in err and len(err.strip().splitlines()) == 1, err


def test_a_url_file_s_lengths_come_from_the_docroot_or_from_first_answers(nginx, load, tmp_path):
    url, _ = nginx(site(FILES))
    root = tmp_path / "www"
    mix = mix_file(tmp_path, WEIGHTS)
    for extra in (["--docroot", str(root)], []):
        rc, r, err = load("-n", "2000", "-c", "4", "--urls-from-file", mix, *extra, url)
        assert rc == 0 and r["errors_total"] == 0, err
        if extra:
            assert r["spec"]["expect_lengths"] == list(FILES.values())
        else:
            assert r["spec"]["learn_lengths"] and r["spec"]["expect_lengths"] is None
    # A docroot whose b.css is not what nginx serves: every answer to it fails its length.
    (tmp_path / "said").mkdir()
    for name, body in site(FILES).items():
        (tmp_path / "said" / name).write_bytes(body[:-1] if name == "b.css" else body)
    said = str(tmp_path / "said")
    rc, r, err = load("-n", "2000", "-c", "4", "--no-validate", "--urls-from-file", mix, "--docroot", said, url)
    assert r["errors"]["length_mismatch"] > 0, err
    rc, r, err = load("-n", "10", "--urls-from-file", mix, "--docroot", str(tmp_path / "nowhere"), url)
    assert rc == 2 and "--docroot: " in err and len(err.strip().splitlines()) == 1, err
