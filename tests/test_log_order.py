"""An access log sent in its own order: `httpbench load --access-log` replayed against nginx, whose
own access log shows the order; a timed log at 10 times its speed; each answer's length from its
file under --docroot; the plan's orders; and every bad input as one line, exit 2.

Every load targets 127.0.0.1, bounded by -n or -d and a subprocess timeout.
"""

import collections
import json
import subprocess
import sys

import pytest
from conftest import log_lines
from httpbench.plan import builtin as plan
from httpbench.plan.model import PlanError
from httpbench.site.access_log import read

COMBINED = '10.0.0.{n} - - [28/Nov/2026:10:00:{s:02d} +0000] "GET {path} HTTP/1.1" 200 512 "-" "Mozilla/5.0"\n'
COMMON = '10.0.0.{n} - - [28/Nov/2026:10:00:{s:02d} +0000] "GET {path} HTTP/1.1" 200 512\n'
FILES = {"a.html": 100, "b.css": 3_000, "c.js": 30_000}
ORDER = ["/c.js", "/a.html", "/a.html", "/b.css", "/c.js", "/missing.png", "/b.css", "/a.html"]


def httpbench_load(*args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    argv = [sys.executable, "-m", "httpbench", "load", "--json", *args]
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout)


def write_log(tmp_path, fmt: str, paths, seconds=None) -> str:
    seconds = seconds or [0] * len(paths)
    log = tmp_path / "site.log"
    log.write_text("".join(fmt.format(n=i % 250, s=s, path=p) for i, (p, s) in enumerate(zip(paths, seconds))))
    return str(log)


def served(nginx) -> tuple:
    url, log = nginx({name: bytes([65 + i]) * size for i, (name, size) in enumerate(FILES.items())})
    return url, log, log.parent / "www"


@pytest.mark.parametrize("fmt", [COMMON, COMBINED], ids=["common", "combined"])
def test_a_log_is_replayed_in_its_order(nginx, tmp_path, fmt):
    url, log, root = served(nginx)
    access = write_log(tmp_path, fmt, ORDER)
    done = httpbench_load("--access-log", access, "--docroot", str(root), "--order", "replay",
                          "-n", "21", "-c", "1", "--no-validate", url)  # fmt: skip
    assert done.returncode == 0, done.stderr
    # The missing file is dropped, and said so; the other 7 go in the log's order, looping.
    assert "7 of 8 lines kept" in done.stderr and "/missing.png" in done.stderr
    kept = [p for p in ORDER if p != "/missing.png"]
    assert [line.split()[2] for line in log_lines(log, 21)] == [kept[i % 7] for i in range(21)]


def test_a_timed_log_goes_at_its_times_sped_up(nginx, tmp_path):
    url, log, root = served(nginx)
    # 6 requests a second apart: at speed 10, one every 100 ms, looping every 600 ms (the log's
    # 5 s and one mean gap); 1.2 s sends 12, give or take the edges.
    access = write_log(tmp_path, COMMON, ["/a.html", "/b.css", "/c.js"] * 2, seconds=[0, 1, 2, 3, 4, 5])
    done = httpbench_load("--access-log", access, "--docroot", str(root), "--order", "timed", "--speed", "10",
                          "-d", "1.2s", "-c", "2", "--no-validate", url)  # fmt: skip
    assert done.returncode == 0, done.stderr
    lines = [line.split()[2] for line in log_lines(log, 10)]
    assert 10 <= len(lines) <= 14, lines
    assert lines == [["/a.html", "/b.css", "/c.js"][i % 3] for i in range(len(lines))]


def test_lengths_come_from_the_docroot_not_the_log(nginx, tmp_path):
    url, log, _ = served(nginx)
    # Another docroot whose b.css is a byte longer than nginx's: each answer to it is a mismatch.
    other = tmp_path / "other"
    other.mkdir()
    for name, size in FILES.items():
        (other / name).write_bytes(b"x" * (size + (name == "b.css")))
    access = write_log(tmp_path, COMBINED, ["/a.html", "/b.css", "/c.js"])
    done = httpbench_load("--access-log", access, "--docroot", str(other), "-n", "300", "-c", "2",
                          "--no-validate", "--max-errors", "100%", url)  # fmt: skip
    r = json.loads(done.stdout)
    counts = collections.Counter(line.split()[2] for line in log_lines(log, 300))
    assert r["errors"]["length_mismatch"] == counts["/b.css"] > 0
    # Without --docroot the log's byte counts (512) are no length: each URL's first answer's is.
    done = httpbench_load("--access-log", access, "-n", "30", "-c", "1", "--no-validate", url)
    r = json.loads(done.stdout)
    assert done.returncode == 0 and r["errors_total"] == 0 and r["spec"]["learn_lengths"], done.stderr


@pytest.mark.parametrize(
    "args, said",
    [
        (["--access-log", "/nonexistent.log"], "cannot read the access log /nonexistent.log"),
        (["--access-log", "{garbage}"], "matches no known format (tried Combined and Common Log Format"),
        (
            ["--access-log", "{log}", "--docroot", "{empty}"],
            "leaves no request to make: all 2 lines were left out (2 paths naming no file",
        ),
        (["--order", "replay"], "without --access-log FILE there is no log for --order"),
        (["--access-log", "{log}", "--speed", "2"], "--speed paces --order timed only"),
        (["--access-log", "{log}", "--order", "timed", "-R", "100"], "--order timed sends at the log's own times"),
        (["--access-log", "{log}", "--order", "sideways"], "--order must be one of weighted, replay, timed"),
        # inf passed `> 0` and reached the engine as JSON's non-standard Infinity, refused naming a temporary file
        (["--access-log", "{log}", "--order", "timed", "--speed", "inf"], "speed must be a finite number more than 0"),
        (["--access-log", "{log}"], "--access-log gives paths: give a URL"),
    ],
)
def test_bad_load_input_is_one_line(tmp_path, args, said):
    (tmp_path / "garbage").write_text("hello\nworld\n")
    (tmp_path / "empty").mkdir()
    log = write_log(tmp_path, COMMON, ["/a.html", "/b.css"])
    names = {"{garbage}": str(tmp_path / "garbage"), "{empty}": str(tmp_path / "empty"), "{log}": log}
    argv = [names.get(a, a) for a in args]
    url = [] if said.startswith("--access-log gives") else ["http://127.0.0.1:1/"]
    done = httpbench_load(*argv, *url)
    err = [line for line in done.stderr.splitlines() if "lines kept" not in line]
    assert done.returncode == 2 and len(err) == 1 and said in err[0] and "Traceback" not in done.stderr, done.stderr


PLAN = """
servers = ["nginx"]
profiles = ["default"]
{top}
[[workload]]
kind = "docroot"
path = "www"
access_log = "access.log"
{more}
{levels}
"""
LEVELS = "[levels]\nlist = [1]\n[budget]\nrequests = 100"


def test_a_plan_sends_the_logs_order(tmp_path):
    root = tmp_path / "www"
    root.mkdir()
    for name in FILES:
        (root / name).write_bytes(b"x")
    (tmp_path / "access.log").write_text(
        "".join(COMMON.format(n=1, s=s, path=p) for p, s in zip(ORDER[:5], [0, 1, 1, 2, 4]))
    )
    (tmp_path / "plan.toml").write_text(PLAN.format(top="", more='order = "timed"\nspeed = 2', levels=LEVELS))
    (work,) = plan.load(str(tmp_path / "plan.toml")).workloads
    spec = work.site.mix.spec()
    assert spec == {"order": "timed", "sequence": [0, 1, 1, 2, 0], "offsets": [0.0, 1.0, 1.0, 2.0, 4.0], "speed": 2.0}
    assert work.paths == ("/c.js", "/a.html", "/b.css")
    mixed = read(tmp_path / "access.log", root, "replay")
    assert mixed.mix.spec() == {"order": "replay", "sequence": [0, 1, 1, 2, 0]}


@pytest.mark.parametrize(
    "top, levels, said",
    [
        ('model = "open"', LEVELS, 'model = "open" sets rates, but workload.order = "timed"'),
        ("", '[capacity]\nobjective = "p99 < 10ms"', 'a capacity search offers rates, but workload.order = "timed"'),
    ],
)
def test_a_timed_log_takes_no_rate(tmp_path, top, levels, said):
    root = tmp_path / "www"
    root.mkdir()
    (root / "a.html").write_bytes(b"x")
    (tmp_path / "access.log").write_text(COMMON.format(n=1, s=0, path="/a.html"))
    (tmp_path / "plan.toml").write_text(PLAN.format(top=top, more='order = "timed"', levels=levels))
    with pytest.raises(PlanError, match=said):
        plan.load(str(tmp_path / "plan.toml"))


def test_what_a_log_left_out_is_stored_with_the_run_and_reported(tmp_path):
    from conftest import quick_sweep
    from httpbench import results
    from httpbench.report.site_summary import sites

    root = tmp_path / "www"
    root.mkdir()
    for name, size in FILES.items():
        (root / name).write_bytes(b"x" * size)
    # /missing.png has no file: left out, with its line as the example.
    (tmp_path / "access.log").write_text("".join(COMMON.format(n=1, s=0, path=p) for p in ORDER))
    (tmp_path / "plan.toml").write_text(PLAN.format(top="", more="", levels=LEVELS))
    notes: list = []
    sweep = quick_sweep(tmp_path / "plan.toml", tmp_path / "r.db", notes)
    run_id = sweep.start()
    run = sweep.run(run_id)
    said = [line for line in sites([run]) if "lines kept" in line]
    assert said == [next(n for n in notes if "lines kept" in n)], (said, notes)
    assert "7 of 8 lines kept" in said[0] and "missing.png" in said[0], said
    assert results.load(sweep.store, run_id).host["site_notes"]
