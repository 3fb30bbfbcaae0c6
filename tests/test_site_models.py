"""Built-in site models: the same bytes in every process, SPECweb99's class mix and Zipf law over
directories, text that compresses as real text does and media that does not; a site as a plan's
workload, and a user's document root served where it is by a real nginx."""

import bisect
import gzip
import hashlib
import os
import random
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
from conftest import refused_run
from httpbench.plan import builtin as plan
from httpbench.plan import workload
from httpbench.plan.model import PlanError
from httpbench.report import size_classes
from httpbench.site import SIZE_CLASSES, Mix, SiteError
from httpbench.site.docroot import served_in_place
from httpbench.site.models import SPECWEB99_CLASS_SHARES, assets, model, specweb99
from httpbench.site.text import file_bytes

DIGEST = """
import hashlib
import os
from httpbench.site.models import model
for name in ("specweb99", "assets"):
    site = model(name, 2)
    print(hashlib.sha256(b"".join(site.content(n, s) for n, s in site.files)).hexdigest())
"""


def digest(site) -> str:
    return hashlib.sha256(b"".join(site.content(n, s) for n, s in site.files)).hexdigest()


def test_a_model_is_the_same_bytes_twice_and_in_another_process():
    here = [digest(model("specweb99", 2)), digest(model("assets"))]
    assert here == [digest(model("specweb99", 2)), digest(model("assets"))]
    there = subprocess.run(
        [sys.executable, "-c", DIGEST],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTHONHASHSEED": "7"},
    )
    assert there.stdout.split() == here


def test_specweb99_has_its_four_classes_of_nine_files_in_each_directory():
    site = specweb99(3)
    assert site.label == "specweb99 3dirs" and len(site.files) == 3 * 36
    assert site.mix.paths[0] == "/dir00000/class0_0.html" and site.mix.paths[-1] == "/dir00002/class3_8.html"
    sizes = dict(site.files)
    assert [sizes[f"dir00001/class{c}_0.html"] for c in range(4)] == [102, 1024, 10240, 102400]
    assert [sizes[f"dir00001/class{c}_8.html"] for c in range(4)] == [918, 9216, 92160, 921600]
    assert all(len(site.content(n, s)) == s for n, s in site.files[:40])
    # Every file different: a server answering one path with another's bytes fails verification.
    assert len({site.content(n, s) for n, s in site.files if s == 102}) == 3


def test_each_specweb99_file_is_counted_in_its_own_size_class():
    # The engine counts a body in the first class whose bound it does not exceed: SPECweb99's
    # class 1 starts at exactly 1 KB, which "up to 1,024 bytes" put in class 0.
    sizes = dict(specweb99(1).files)
    for c in range(4):
        for n in range(9):
            length = sizes[f"dir00000/class{c}_{n}.html"]
            assert bisect.bisect_left(SIZE_CLASSES, length) == c, (c, n, length)
    shown = [size_classes.label({"bytes_from": low, "bytes_to": high}) for low, high in
             zip((0, *(b + 1 for b in SIZE_CLASSES)), (*SIZE_CLASSES, None))]  # fmt: skip
    assert shown == ["under 1 KB", "1-10 KB", "10-100 KB", "100 KB-1 MB", "1 MB and over"]


def test_specweb99_draws_its_class_mix_and_directories_by_zipf():
    site = specweb99(10)
    shares = dict(zip(site.mix.paths, site.mix.shares()))
    by_class = Counter()
    by_directory = Counter()
    for path, share in shares.items():
        by_directory[path[1:9]] += share
        by_class[int(path.split("/class")[1][0])] += share
    assert [by_class[c] for c in range(4)] == pytest.approx(list(SPECWEB99_CLASS_SHARES))
    zipf = [by_directory[f"dir{d:05d}"] for d in range(10)]
    assert [zipf[0] / z for z in zipf] == pytest.approx(list(range(1, 11)))  # alpha 1
    # Drawn by weight with a seeded generator, as the engine will: the shares hold within 1 %.
    rng = random.Random(27)
    drawn = Counter(p.split("/class")[1][0] for p in rng.choices(site.mix.paths, site.mix.weights, k=100_000))
    assert [drawn[str(c)] / 100_000 for c in range(4)] == pytest.approx(list(SPECWEB99_CLASS_SHARES), abs=0.01)
    # Within a class the fifth file is the most asked for.
    class1 = [shares[f"/dir00000/class1_{f}.html"] for f in range(9)]
    assert class1.index(max(class1)) == 4


def test_assets_are_twenty_files_of_6_to_300_kb_of_a_page_s_types():
    site = assets()
    sizes = [s for _, s in site.files]
    assert len(site.files) == 20 and min(sizes) >= 6 * 1024 and max(sizes) <= 300 * 1024
    types = {n.rsplit(".", 1)[1] for n, _ in site.files}
    assert types == {"html", "css", "js", "json", "svg", "webp", "woff2"}
    assert len(set(site.mix.weights)) > 3  # popularity differs


@pytest.mark.parametrize("name", ["a.css", "a.js", "a.html", "a.json", "a.svg", "dir00000/class2_4.html"])
def test_text_compresses_with_gzip_as_real_text_does(name):
    data = file_bytes(name, 60_000)
    ratio = len(data) / len(gzip.compress(data, 6))
    # Real minified JS about 3, CSS and HTML 4-6, JSON more; one repeated word would be 100+.
    assert 2.2 <= ratio <= 8, ratio
    assert data.endswith(b"\n") and b"\0" not in data


@pytest.mark.parametrize("name", ["a.woff2", "a.webp", "a.jpg"])
def test_media_does_not_compress(name):
    data = file_bytes(name, 60_000)
    assert len(data) == 60_000 and len(gzip.compress(data, 9)) > len(data)
    assert data[:4] in (b"wOF2", b"RIFF", b"\xff\xd8\xff\xe0")


def test_a_site_workload_writes_its_files_and_verifies_them_one_at_a_time(tmp_path):
    work = workload.site(specweb99(1))
    assert work.paths == work.site.mix.paths and work.root is None
    assert work.lengths() == tuple(s for _, s in work.site.files) and len(work.weights) == 36
    work.write(tmp_path)
    answers = work.file_map()
    assert len(answers) == 36 and not isinstance(answers, dict)  # read when looked up
    for path in work.paths:
        assert (tmp_path / path[1:]).read_bytes() == answers[path[1:]]


def test_a_docroot_served_in_place_is_never_written(tmp_path):
    (tmp_path / "www").mkdir()
    (tmp_path / "www" / "index.html").write_bytes(b"home\n")
    log = tmp_path / "access.log"
    log.write_text('::1 - - [28/Nov/2026:10:00:00 +0000] "GET / HTTP/1.1" 200 5\n')
    work = workload.site(served_in_place(tmp_path / "www", log))
    assert work.root == (tmp_path / "www").resolve() and work.paths == ("/",) and work.lengths() == (5,)
    work.write(tmp_path / "www")  # a no-op: the user's files are theirs
    assert sorted(p.name for p in (tmp_path / "www").iterdir()) == ["index.html"]
    assert dict(work.file_map()) == {"": b"home\n"}


def test_a_docroot_with_urls_is_served_in_place_too_and_refuses_climbing(tmp_path):
    (tmp_path / "www" / "img").mkdir(parents=True)
    (tmp_path / "www" / "index.html").write_bytes(b"home\n")
    (tmp_path / "www" / "img" / "a b.jpg").write_bytes(b"\xff\xd8\xff\xd9")
    work = workload.docroot(tmp_path / "www", ["/", "/img/a%20b.jpg", "/?q=1"])
    assert work.root == (tmp_path / "www").resolve() and work.files == () and work.weights == (1.0, 1.0, 1.0)
    assert dict(work.file_map()) == {"": b"home\n", "img/a%20b.jpg": b"\xff\xd8\xff\xd9", "?q=1": b"home\n"}
    (tmp_path / "secret").write_bytes(b"no")
    for climbing in ("/%2e%2e/secret", f"/%2F{tmp_path}/secret", "/%2F%2Fetc/passwd"):
        with pytest.raises(workload.WorkloadError, match="climbs out of"):
            workload.docroot(tmp_path / "www", [climbing])


def test_nginx_serves_a_user_s_docroot_where_it_is_and_verification_passes(tmp_path):
    from httpbench import servers
    from httpbench.servers import ServerProfile
    from httpbench.servers.host import ServerHost, usable_cpus

    site = tmp_path / "mine"
    (site / "css").mkdir(parents=True)
    (site / "index.html").write_bytes(file_bytes("index.html", 3000))
    (site / "css" / "a b.css").write_bytes(file_bytes("a.css", 9000))
    log = tmp_path / "access.log"
    log.write_text(
        '127.0.0.1 - - [28/Nov/2026:10:00:00 +0000] "GET / HTTP/1.1" 200 3000 "-" "curl"\n'
        '127.0.0.1 - - [28/Nov/2026:10:00:01 +0000] "GET /css/a%20b.css HTTP/1.1" 200 9000 "-" "curl"\n'
    )
    work = workload.site(served_in_place(site, log))
    host = ServerHost(usable_cpus()[:1])
    try:
        host.start(servers.get("nginx"), ServerProfile("default"), work, 1)
        assert host.running.site.docroot == site.resolve() and not (host.base / "www").exists()
        host.verify()
    finally:
        host.stop()
    assert sorted(p.name for p in site.iterdir()) == ["css", "index.html"]  # nothing written there


PLAN = """
servers = ["nginx"]
profiles = ["default"]
{extra}
[[workload]]
{workload}
[levels]
list = [1]
[budget]
requests = 100
"""


def plan_file(folder: Path, workload: str, extra: str = "") -> Path:
    path = folder / "plan.toml"
    path.write_text(PLAN.format(workload=workload, extra=extra))
    return path


def test_plan_keys_for_sites_and_requests_per_connection(tmp_path):
    p = plan.load(
        str(plan_file(tmp_path, 'kind = "site"\nmodel = "specweb99"\ndirectories = 2', "requests_per_connection = 5"))
    )
    (work,) = p.workloads
    assert work.label == "specweb99 2dirs" and len(work.paths) == 72 and p.requests_per_connection == 5
    assert plan.load(str(plan_file(tmp_path, 'kind = "site"\nmodel = "assets"'))).requests_per_connection is None


def test_requests_per_connection_reaches_the_engine_s_spec_of_keep_alive_cells(tmp_path):
    import shutil

    from httpbench.placement import Placement
    from httpbench.store.database import Store
    from httpbench.sweep.sweep import Sweep
    from httpbench.sweep.target import Target

    p = plan.load(str(plan_file(tmp_path, 'kind = "site"\nmodel = "assets"', "requests_per_connection = 5")))
    sweep = Sweep(p, Store(str(tmp_path / "r.db")), Placement.choose("0", "1"))
    shutil.rmtree(sweep.scratch)
    to, work = Target("http://127.0.0.1:8080"), p.workloads[0]
    spec = sweep.spec(to, work, 10, {"requests": 100}, keep_alive=True)
    assert spec["requests_per_connection"] == 5 and spec["urls"][0] == "http://127.0.0.1:8080/index.html"
    assert "requests_per_connection" not in sweep.spec(to, work, 10, {"requests": 100}, keep_alive=False)


@pytest.mark.parametrize(
    "workload, extra, said",
    [
        ('kind = "site"\nmodel = "wordpress"', "", r"workload.model must be one of 'specweb99', 'assets'"),
        ('kind = "site"', "", "workload.model is missing"),
        ('kind = "site"\nmodel = "assets"\ndirectories = 3', "", 'sizes model = "specweb99" only'),
        ('kind = "site"\nmodel = "specweb99"\ndirectories = 0', "", "workload.directories must be"),
        ('kind = "site"\nmodel = "assets"', "requests_per_connection = 0", "requests_per_connection must be"),
        ('kind = "site"\nmodel = "assets"', 'requests_per_connection = 5\nclient = "wrk"', 'client = "wrk"'),
        ('kind = "site"\nmodel = "assets"', "requests_per_connection = 5\nkeep_alive = [false]", "keep_alive is false"),
    ],
)
def test_a_bad_site_key_is_one_line_naming_it(tmp_path, workload, extra, said):
    with pytest.raises(PlanError, match=r"plan.toml line \d+: .*" + said):
        plan.load(str(plan_file(tmp_path, workload, extra)))


def test_an_unknown_model_is_refused_by_httpbench_run_before_anything_starts(tmp_path):
    err = refused_run(plan_file(tmp_path, 'kind = "site"\nmodel = "wordpres"'), tmp_path / "r.db")
    assert "workload.model must be one of 'specweb99', 'assets', got 'wordpres'" in err


def test_a_mix_refuses_an_unknown_order():
    with pytest.raises(SiteError, match="order must be one of weighted, replay, timed"):
        Mix(("/",), (1.0,), "random")
    with pytest.raises(SiteError, match="unknown site model 'x'"):
        model("x")


def test_a_run_serves_a_site_model_and_a_user_s_docroot_five_requests_per_connection(tmp_path):
    from conftest import quick_sweep

    (tmp_path / "www").mkdir()
    (tmp_path / "www" / "index.html").write_bytes(file_bytes("index.html", 2000))
    (tmp_path / "access.log").write_text(
        '::1 - - [28/Nov/2026:10:00:00 +0000] "GET / HTTP/1.1" 200 2000 "-" "curl"\n'
        '::1 - - [28/Nov/2026:10:00:01 +0000] "GET /gone HTTP/1.1" 404 0 "-" "curl"\n'
    )
    body = PLAN.format(
        workload='kind = "site"\nmodel = "assets"\n'
        '[[workload]]\nkind = "docroot"\npath = "www"\naccess_log = "access.log"',
        extra='requests_per_connection = 5\nwarmup = "0s"\nserver_cpus = [1]',
    )
    (tmp_path / "plan.toml").write_text(body)
    notes: list = []
    sweep = quick_sweep(tmp_path / "plan.toml", tmp_path / "r.db", notes)
    run_id = sweep.start()
    sweep.run(run_id)
    assert "docroot:www: access.log: 1 of 2 lines kept; left out: 1 statuses other than 200" in "\n".join(notes)
    for cell in sweep.store.run(run_id)["cells"]:
        assert cell["status"] == "done", cell["error"]
        (measured,) = [r["measurement"] for r in cell["rounds"]]
        assert measured["requests"]["completed"] == 100 and measured["errors_total"] == 0
        # Drawn by the site's weights, each answer's length checked against its own URL's, and
        # counted by size class: every answer in one.
        spec = measured["spec"]
        assert spec["weights"] and len(spec["weights"]) == len(spec["urls"]) == len(spec["expect_lengths"])
        assert sum(c["requests"] for c in measured["classes"]) == 100, measured["classes"]
        # Five requests a connection: a hundred requests open twenty connections (and no more
        # than one more per connection of the level, whose last may be cut short).
        assert 20 <= measured["connections"]["opened"] <= 22, measured["connections"]
    assert sorted(p.name for p in (tmp_path / "www").iterdir()) == ["index.html"]


def test_a_cluster_run_of_a_docroot_served_in_place_is_refused_before_the_cluster_opens(tmp_path):
    from httpbench.plan.workload import WorkloadError
    from httpbench.sweep.session import Session, Setup

    (tmp_path / "www").mkdir()
    (tmp_path / "www" / "index.html").write_bytes(b"home\n")
    body = PLAN.format(workload='kind = "docroot"\npath = "www"\nurls = ["/"]', extra="")
    (tmp_path / "plan.toml").write_text(body)
    # No scheduler listens there: the refusal comes before any connect.
    session = Session(str(tmp_path / "r.db"), str(tmp_path / "plan.toml"), setup=Setup(cluster="tcp://127.0.0.1:1"))
    with pytest.raises(WorkloadError, match="served where it is.*run this plan without --cluster"):
        with session:
            pass
