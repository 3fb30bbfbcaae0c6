"""An access log's URL mix: both formats (Apache's and nginx's defaults, and the lines they really
write), what is left out by reason with an example, paths that climb out of the document root,
query strings, the three orders, and every refusal as one line, also through `httpbench run`."""

import os
import subprocess
import urllib.request
from pathlib import Path

import pytest
from conftest import free_port, refused_run, start_nginx, wait_for_port
from httpbench.plan import builtin as plan
from httpbench.plan.model import PlanError
from httpbench.site import SiteError
from httpbench.site.access_log import read

COMBINED = '{client} - {user} [{time} +0000] "{request}" {status} {size} "{referer}" "{agent}"\n'
COMMON = '{client} - {user} [{time} +0000] "{request}" {status} {size}\n'


def line(request="GET / HTTP/1.1", status=200, client="10.1.2.3", time="28/Nov/2026:10:00:00", fmt=COMBINED, **kw):
    fields = dict(user="-", size=512, referer="-", agent="Mozilla/5.0")
    fields.update(kw)
    return fmt.format(client=client, time=time, request=request, status=status, **fields)


@pytest.fixture
def site(tmp_path):
    root = tmp_path / "www"
    (root / "css").mkdir(parents=True)
    (root / "docs").mkdir()
    for name in ("index.html", "css/main.css", "docs/index.html", "a b.txt", "outside-twin.txt"):
        (root / name).write_bytes(b"x" * 10)
    (tmp_path / "secret.txt").write_bytes(b"no")
    return root


def log_of(tmp_path: Path, *lines: str) -> Path:
    path = tmp_path / "access.log"
    path.write_text("".join(lines))
    return path


def test_combined_lines_are_weighted_by_their_counts(tmp_path, site):
    log = log_of(tmp_path, *[line("GET /css/main.css HTTP/1.1")] * 3, line(), line("GET /docs/ HTTP/2.0", 304))
    mixed = read(log, site)
    assert mixed.format == "Combined" and mixed.lines == 5 and mixed.left_out == {}
    assert dict(zip(mixed.mix.paths, mixed.mix.weights)) == {"/css/main.css": 3.0, "/": 1.0, "/docs/": 1.0}
    assert mixed.mix.order == "weighted" and mixed.mix.sequence is None and mixed.summary() == "5 of 5 lines kept"


def test_common_lines_with_odd_fields_are_read(tmp_path, site):
    log = log_of(
        tmp_path,
        line(client="2001:db8::1", fmt=COMMON, size="-"),  # IPv6 client, no body size
        line("GET /a%20b.txt HTTP/1.0", fmt=COMMON, user="alice"),
        line("GET /css/main.css HTTP/1.1", fmt=COMMON, user='"bob smith"'),
        line("GET /index.html", fmt=COMMON),  # HTTP/0.9: no protocol
    )
    mixed = read(log, site)
    assert mixed.format == "Common" and mixed.left_out == {}
    assert mixed.mix.paths == ("/", "/a%20b.txt", "/css/main.css", "/index.html")


def test_quoted_quotes_of_apache_and_nginx_do_not_end_a_field(tmp_path, site):
    log = log_of(
        tmp_path,
        line('GET /?q=\\"x\\" HTTP/1.1', agent='say \\"hi\\"'),  # Apache escapes a quote as \"
        line("GET /?q=\\x22x\\x22 HTTP/1.1", agent="say \\x22hi\\x22"),  # nginx as \x22
        line(referer="", agent=""),  # empty Combined fields
    )
    mixed = read(log, site)
    assert mixed.left_out == {} and mixed.mix.paths == ("/",) and mixed.mix.weights == (3.0,)


def test_query_strings_are_dropped_and_their_paths_merged(tmp_path, site):
    log = log_of(tmp_path, line("GET /css/main.css?v=1 HTTP/1.1"), line("GET /css/main.css?v=2&email=a@b HTTP/1.1"))
    mixed = read(log, site)
    assert mixed.mix.paths == ("/css/main.css",) and mixed.mix.weights == (2.0,)


def test_what_is_left_out_is_counted_by_reason_with_an_example_and_no_client(tmp_path, site):
    log = log_of(
        tmp_path,
        line(),
        "2001:db8::7 and nothing else\n",
        "this is not a log line\n",
        line("POST /index.html HTTP/1.1", client="192.0.2.7", user="carol"),
        line("HEAD / HTTP/1.1"),
        line("GET /missing.html HTTP/1.1", 200, client="192.0.2.8"),
        line("GET /index.html HTTP/1.1", 404, client="192.0.2.9"),
        line("GET /index.html HTTP/1.1", 500),
        line("GET /../secret.txt HTTP/1.1"),
        line("-", 400),
    )
    mixed = read(log, site)
    counts = {reason: out.count for reason, out in mixed.left_out.items()}
    assert counts == {"unparsable": 2, "method": 3, "status": 2, "climbing": 1, "missing": 1}
    examples = {reason: out.example for reason, out in mixed.left_out.items()}
    assert examples["unparsable"] == "<client> and nothing else"  # an address masked even here
    assert examples["method"].startswith('<client> - <user> [28/Nov/2026:10:00:00 +0000] "POST /index.html')
    assert "GET /missing.html" in examples["missing"] and " 404 " in examples["status"]
    summary = mixed.summary()
    assert summary.startswith("1 of 10 lines kept; left out: 2 unparsable lines (e.g. <client> and nothing")
    assert "192.0.2" not in summary and "carol" not in summary


def test_an_example_line_shows_no_user_quoted_with_a_space_nor_an_ident_name(tmp_path, site):
    post = line("POST / HTTP/1.1", user='"carol smith"').replace("10.1.2.3 - ", "10.1.2.3 alice ")
    example = read(log_of(tmp_path, line(), post), site).left_out["method"].example
    assert example.startswith('<client> <ident> <user> [28/Nov/2026:10:00:00 +0000] "POST / HTTP/1.1"')
    assert "smith" not in example and "alice" not in example


@pytest.mark.parametrize(
    "target",
    [
        "/../secret.txt",
        "/css/../../secret.txt",
        "/%2e%2e/secret.txt",
        "/css/%2E%2E/%2e%2e/secret.txt",
        "/..%2fsecret.txt",
    ],
)
def test_a_path_climbing_out_of_the_docroot_is_refused_also_percent_encoded(tmp_path, site, target):
    mixed = read(log_of(tmp_path, line(f"GET {target} HTTP/1.1"), line()), site)
    assert mixed.mix.paths == ("/",) and mixed.left_out["climbing"].count == 1


def test_replay_keeps_the_log_s_order_as_an_array_of_indices(tmp_path, site):
    order = ["/", "/css/main.css", "/", "/missing", "/docs/", "/css/main.css"]
    log = log_of(tmp_path, *[line(f"GET {p} HTTP/1.1") for p in order])
    mix = read(log, site, "replay").mix
    assert mix.paths == ("/", "/css/main.css", "/docs/") and mix.sequence.typecode == "I"
    assert [mix.paths[i] for i in mix.sequence] == ["/", "/css/main.css", "/", "/docs/", "/css/main.css"]
    assert mix.times is None


def test_timed_keeps_each_request_s_second_from_the_first_across_time_zones(tmp_path, site):
    log = log_of(
        tmp_path,
        line(time="28/Nov/2026:10:00:01"),
        line(time="28/Nov/2026:10:00:00"),  # logged as it ended: after one that began later
        line(time="28/Nov/2026:10:00:07"),
        line(time="28/Nov/2026:11:00:09 +0100").replace(" +0100 +0000]", " +0100]"),
    )
    mix = read(log, site, "timed", speed=4.0).mix
    assert list(mix.times) == [1.0, 0.0, 7.0, 9.0] and list(mix.sequence) == [0, 0, 0, 0] and mix.speed == 4.0


def test_timed_counts_a_line_with_an_unreadable_time_as_unparsable_rather_than_refusing_the_log(tmp_path, site):
    log = log_of(tmp_path, line(), line("GET /css/main.css HTTP/1.1", time="28/Nox/2026:10:00:00"), line())
    mixed = read(log, site, "timed")
    assert mixed.mix.paths == ("/",) and list(mixed.mix.times) == [0.0, 0.0]
    assert mixed.left_out["unparsable"].count == 1 and "Nox" in mixed.left_out["unparsable"].example


def test_a_log_in_no_known_format_says_which_were_tried_and_its_first_line(tmp_path, site):
    log = log_of(tmp_path, '{"time": "2026-11-28", "path": "/"}\n', "second\n")
    masked = log_of(tmp_path, "192.0.2.1 GET /\n")
    with pytest.raises(SiteError, match="its first line: '<client> GET /'"):
        read(masked, site)
    log = log_of(tmp_path, '{"time": "2026-11-28", "path": "/"}\n', "second\n")
    with pytest.raises(
        SiteError, match=r"matches no known format \(tried Combined and Common Log Format.*first line: '\{\"time"
    ):
        read(log, site)
    with pytest.raises(SiteError, match="is empty"):
        read(log_of(tmp_path), site)


def test_a_log_with_nothing_left_says_how_many_were_dropped_by_reason(tmp_path, site):
    log = log_of(tmp_path, line("POST / HTTP/1.1"), line(status=404), line(status=404), "junk\n")
    with pytest.raises(SiteError) as caught:
        read(log, site)
    said = str(caught.value)
    assert "leaves no request to make: all 4 lines were left out" in said and "\n" not in said
    assert "1 unparsable lines" in said and "1 methods other than GET" in said and "2 statuses other than" in said


def test_an_unreadable_log_or_docroot_is_one_line(tmp_path, site):
    with pytest.raises(SiteError, match="cannot read the access log .*: Is a directory"):
        read(tmp_path, site)
    with pytest.raises(SiteError, match="cannot read the document root .*nowhere"):
        read(log_of(tmp_path, line()), tmp_path / "nowhere")


def test_a_real_nginx_combined_log_is_read(tmp_path, site):
    """nginx's own default `combined` format, as it writes it (escapes and all)."""
    port = free_port()
    nginx_log = tmp_path / "nginx-access.log"
    proc = start_nginx(
        tmp_path, f"access_log {nginx_log} combined;\nserver {{ listen 127.0.0.1:{port}; root {site}; }}"
    )
    try:
        wait_for_port(port, proc)
        for path, agent in [("/", 'a "quoted" agent'), ("/css/main.css?v=3", "plain"), ("/nope", "x")]:
            request = urllib.request.Request(f"http://127.0.0.1:{port}{path}", headers={"User-Agent": agent})
            try:
                urllib.request.urlopen(request, timeout=5).read()
            except urllib.error.HTTPError:
                pass
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    mixed = read(nginx_log, site)
    assert mixed.format == "Combined" and mixed.mix.paths == ("/", "/css/main.css")
    assert {r: o.count for r, o in mixed.left_out.items()} == {"status": 1}


PLAN = """
servers = ["nginx"]
profiles = ["default"]
[[workload]]
kind = "docroot"
path = "www"
access_log = "access.log"
{more}
[levels]
list = [1]
[budget]
requests = 100
"""


def test_a_docroot_plan_takes_its_mix_from_the_log(tmp_path, site):
    log_of(tmp_path, line(), line("GET /css/main.css HTTP/1.1"))
    (tmp_path / "plan.toml").write_text(PLAN.format(more=""))
    (work,) = plan.load(str(tmp_path / "plan.toml")).workloads
    assert work.paths == ("/", "/css/main.css") and work.root == site and work.weights == (1.0, 1.0)


@pytest.mark.parametrize(
    "more, said",
    [
        ('order = "random"', "workload.order must be one of 'weighted', 'replay', 'timed'"),
        ("speed = 2", 'workload.speed applies to order = "timed" only'),
        ('order = "timed"\nspeed = 0', "workload.speed must be a finite number more than 0"),
        ('order = "timed"\nspeed = inf', "workload.speed must be a finite number more than 0"),
        ('urls = ["/"]', "workload.access_log: give either urls or access_log, not both"),
    ],
)
def test_a_bad_docroot_key_is_one_line_naming_it(tmp_path, site, more, said):
    log_of(tmp_path, line())
    (tmp_path / "plan.toml").write_text(PLAN.format(more=more))
    with pytest.raises(PlanError, match=r"plan.toml line \d+: " + said):
        plan.load(str(tmp_path / "plan.toml"))


@pytest.mark.parametrize(
    "log, said",
    [
        ("nonsense\n", "matches no known format (tried Combined and Common Log Format"),
        (line(status=404), "leaves no request to make: all 1 lines were left out (1 statuses other than 200"),
        (None, "workload.access_log: no such file or directory"),
        ("unreadable-root", "workload.path: cannot read the document root"),
    ],
)
def test_httpbench_run_refuses_a_bad_docroot_or_log_in_one_line_starting_nothing(tmp_path, site, log, said):
    if log == "unreadable-root":
        log_of(tmp_path, line())
        os.chmod(site, 0)
        if os.access(site, os.R_OK | os.X_OK):  # root reads anything: a file in its place then
            os.chmod(site, 0o755)
            subprocess.run(["rm", "-r", str(site)], check=True)
            site.write_text("not a directory")
    elif log is not None:
        log_of(tmp_path, log)
    (tmp_path / "plan.toml").write_text(PLAN.format(more=""))
    try:
        err = refused_run(tmp_path / "plan.toml", tmp_path / "r.db")
    finally:
        if site.is_dir():
            os.chmod(site, 0o755)
    assert said in err, err
