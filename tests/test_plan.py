"""Plans: the built-in ones validate and say what they chose; levels expand like ab.c; every bad
input is one line naming the file, the line and the key."""

import subprocess
import sys

import pytest
from httpbench import servers
from httpbench.plan import builtin as plan
from httpbench.plan import values as plan_values
from httpbench.plan import workload
from httpbench.plan.model import Budget, PlanError, Rounds

GOOD = """\
name = "mine"
description = "a test plan"
notes = \"\"\"
a note with a line that looks like a key:
step = 5
\"\"\"
servers = ["nginx", "reference"]
profiles = ["tuned"]
keep_alive = [true]
server_cpus = [1]
rounds = 2
client = "engine"
model = "closed"
pipeline = 1
warmup = "1s"

[[workload]]
kind = "generated"
size = 7
name = "index.html"

[levels]
from = 0
to = 100
step = 10

[budget]
duration = "2s"
"""


def line_of(text: str, fragment: str, nth: int = 1) -> int:
    """1-based number of the nth line containing `fragment`."""
    hits = [i for i, line in enumerate(text.splitlines(), start=1) if fragment in line]
    return hits[nth - 1]


def error(text: str) -> str:
    with pytest.raises(PlanError) as caught:
        plan.parse(text, "myplan.toml")
    message = str(caught.value)
    assert "\n" not in message and message.startswith("myplan.toml line ")
    return message


def test_a_good_plan_parses_with_its_defaults():
    p = plan.parse(GOOD, "myplan.toml")
    assert p.name == "mine" and p.servers == ("nginx", "reference") and p.rounds == Rounds(2, 10)
    assert p.levels == (1,) + tuple(range(10, 101, 10))
    assert p.budget == Budget(duration=2.0) and p.budgets == (p.budget,)
    assert p.warmup == 1.0 and p.text == GOOD and p.source == "myplan.toml"
    bare = plan.parse("[[workload]]\nsize = 7\n[levels]\nlist = [1]\n[budget]\nrequests = 10\n", "bare.toml")
    assert bare.name == "bare" and bare.servers is None and bare.profiles == ("tuned",)
    assert bare.keep_alive == (True,) and bare.server_cpus == (1,) and bare.client == "engine"
    assert bare.model == "closed" and bare.pipeline == 1 and bare.rounds == Rounds(1, 10)


@pytest.mark.parametrize(
    "levels, expected",
    [
        ("from = 0\nto = 1000\nstep = 10", (1,) + tuple(range(10, 1001, 10))),  # ab.c's 0 means 1
        ("from = 5\nto = 20\nstep = 10", (5, 15)),
        ("from = 0\nto = 3\nstep = 1", (1, 2, 3)),  # 0 and 1 are one level
        ("to = 20\nstep = 10", (1, 10, 20)),
        ("list = [1, 10, 50, 100, 250, 500, 1000]", (1, 10, 50, 100, 250, 500, 1000)),
        ("list = [0, 5]", (1, 5)),
    ],
)
def test_levels_expand_like_ab_c(levels, expected):
    text = GOOD.replace("from = 0\nto = 100\nstep = 10", levels)
    assert plan.parse(text, "x.toml").levels == expected


def test_durations():
    assert [plan_values.parse_duration(v) for v in ("2s", "500ms", "1m", "1.5", 3, 0.25, "1h")] == [
        2.0,
        0.5,
        60.0,
        1.5,
        3.0,
        0.25,
        3600.0,
    ]
    assert plan_values.parse_duration("2 sec") is None and plan_values.parse_duration(True) is None


def sub(*pairs):
    """A change to GOOD: each (old, new) replaced once; every old must be there."""

    def change(text):
        for old, new in pairs:
            assert old in text, old
            text = text.replace(old, new, 1)
        return text

    return change


OPEN = ('model = "closed"', 'model = "open"')
RATES = ("from = 0", "from = 10")  # open loop: levels are rates, none may be 0
FIFTY = ('duration = "2s"', "requests = 50")

# (what is wrong, the change to GOOD, a fragment of the line to point at, what the message must say)
BAD = [
    ("typo in a key", sub(("rounds = 2", "rouns = 2")), "rouns = 2", ["unknown key 'rouns'", "did you mean 'rounds'?"]),
    (
        "typo in a table key",
        sub(('duration = "2s"', 'duraton = "2s"')),
        "duraton",
        ["'budget.duraton'", "did you mean 'budget.duration'?"],
    ),
    ("typo in a table", sub(("[levels]", "[levles]")), "[levles]", ["'levles'", "did you mean 'levels'?"]),
    ("negative step", sub(("step = 10", "step = -10")), "step = -10", ["levels.step must be more than 0, got -10"]),
    (
        "unknown server",
        sub(('"nginx", "reference"', '"ngnix", "reference"')),
        "servers =",
        ["unknown server 'ngnix'", "did you mean 'nginx'?", "known servers:", "reference"],
    ),
    (
        "bad duration",
        sub(('duration = "2s"', 'duration = "2 sec"')),
        "duration =",
        ['budget.duration must be a duration like "2s"', '"2 sec"'],
    ),
    (
        "zero duration",
        sub(('duration = "2s"', 'duration = "0s"')),
        "duration =",
        ["budget.duration must be more than 0"],
    ),
    (
        "ab with pipeline",
        sub(('client = "engine"', 'client = "ab"'), ("pipeline = 1", "pipeline = 16")),
        "pipeline = 16",
        ['pipeline = 16 cannot be used with client = "ab"'],
    ),
    (
        "ab in open loop",
        sub(('client = "engine"', 'client = "ab"'), OPEN, RATES),
        'model = "open"',
        ['model = "open" needs client = "engine"'],
    ),
    (
        "wrk without keep-alive",
        sub(("keep_alive = [true]", "keep_alive = [false]"), ('client = "engine"', 'client = "wrk"')),
        "keep_alive =",
        ['keep_alive = false cannot be used with client = "wrk"'],
    ),
    (
        "open loop, requests below the rate",
        sub(OPEN, RATES, FIFTY),
        "requests = 50",
        ["budget.requests = 50 is less than the rate of 100 req/s"],
    ),
    ("open loop with a rate of 0", sub(OPEN), "from = 0", ["levels.from includes 0", "0 is not a rate"]),
    (
        "closed loop, requests below the connections",
        sub(FIFTY),
        "requests = 50",
        ["budget.requests = 50 is less than the level of 100 connections"],
    ),
    ("rounds of zero", sub(("rounds = 2", "rounds = 0")), "rounds = 0", ["rounds must be more than 0, got 0"]),
    (
        "rounds not a number",
        sub(("rounds = 2", 'rounds = "sometimes"')),
        "rounds =",
        ['rounds must be a whole number or "auto"'],
    ),
    (
        "auto rounds capped at one",
        sub(("rounds = 2", 'rounds = "auto"\nmax_rounds = 1')),
        "max_rounds",
        ["max_rounds must be at least 2"],
    ),
    ("a profile typo", sub(('profiles = ["tuned"]', 'profiles = ["tunde"]')), "profiles =", ["did you mean 'tuned'?"]),
    (
        "server_cpus of 0",
        sub(("server_cpus = [1]", "server_cpus = [0]")),
        "server_cpus",
        ["server_cpus must be more than 0"],
    ),
    (
        "keep_alive not a bool",
        sub(("keep_alive = [true]", 'keep_alive = ["yes"]')),
        "keep_alive",
        ['keep_alive must be true or false, got "yes"'],
    ),
    (
        "both kinds of levels",
        sub(("step = 10", "step = 10\nlist = [1]")),
        "from = 0",
        ["either levels.list or from/to/step"],
    ),
    (
        "both kinds of budget",
        sub(('duration = "2s"', 'duration = "2s"\nrequests = 5')),
        "requests = 5",
        ["exactly one of"],
    ),
    (
        "a workload key of another kind",
        sub(("size = 7", 'size = 7\nurls = ["/"]')),
        "urls =",
        ["workload.urls does not apply to kind = 'generated'"],
    ),
    (
        "a name outside the docroot",
        sub(('name = "index.html"', 'name = "../x.html"')),
        "../x.html",
        ["workload.name: name must be a relative file name"],
    ),
    ("not TOML", sub(("rounds = 2", "rounds = = 2")), "rounds = = 2", ["not valid TOML"]),
    (
        "a directive for an unknown server",
        sub(('duration = "2s"', 'duration = "2s"\n[server.ngnix]\ndirectives = []')),
        "[server.ngnix]",
        ["server.ngnix: unknown server 'ngnix'"],
    ),
    (
        "a baseline the plan does not run",
        sub(('client = "engine"', 'client = "engine"\nbaseline = "lighttpd"')),
        "baseline =",
        ["baseline 'lighttpd' is not one of the plan's servers"],
    ),
]


HTTPS = ("keep_alive = [true]", 'keep_alive = [true, false]\nprotocols = ["http", "https"]')
TLS = ('duration = "2s"\n', 'duration = "2s"\n\n[tls]\nversion = "1.3"\nresumption = ["none", "tickets"]\n')
BAD += [
    ("unknown protocol", sub(("keep_alive = [true]", 'protocols = ["htps"]')), "protocols", ["'htps'", "'https'"]),
    ("tls without a TLS protocol", sub(TLS), "[tls]", ['add "https" or "h2" to protocols']),
    (
        "unknown tls key",
        sub(HTTPS, TLS, ('version = "1.3"', 'vers = "1.3"')),
        'vers = "1.3"',
        ["'tls.vers'", "'tls.version'"],
    ),
    ("unknown tls version", sub(HTTPS, TLS, ('version = "1.3"', 'version = "1.1"')), "version =", ["'1.2', '1.3'"]),
    ("unknown key type", sub(HTTPS, TLS, ('version = "1.3"', 'key = "dsa"')), "key =", ["'ecdsa-p256'", "'dsa'"]),
    (
        "session ids over TLS 1.3",
        sub(HTTPS, TLS, ('"none", "tickets"', '"ids"')),
        "resumption =",
        ['tls.resumption = "ids" needs tls.version = "1.2"'],
    ),
    (
        "https with another client",
        sub(HTTPS, ('client = "engine"', 'client = "ab"')),
        "protocols =",
        ['needs client = "engine"'],
    ),
]


H2 = ("keep_alive = [true]", 'keep_alive = [true]\nprotocols = ["https", "h2", "h2c"]\nstreams = [1, 10, 100]')
BAD += [
    (
        "streams without HTTP/2",
        sub(("keep_alive = [true]", 'keep_alive = [true]\nprotocols = ["http", "https"]\nstreams = [1, 10]')),
        "streams =",
        ['streams = 10 needs an HTTP/2 protocol: add "h2" or "h2c" to protocols'],
    ),
    ("zero streams", sub(H2, ("[1, 10, 100]", "[0, 10]")), "streams =", ["streams must be more than 0, got 0"]),
    (
        "h2 with pipelining",
        sub(H2, ("pipeline = 1", "pipeline = 4")),
        "pipeline =",
        ['pipeline = 4 cannot be used with protocols = "h2"', "give streams instead"],
    ),
    (
        "h2 without keep-alive",
        sub(H2, ("keep_alive = [true]", "keep_alive = [true, false]")),
        "keep_alive =",
        ['keep_alive = false cannot be used with protocols = "h2"'],
    ),
    (
        "h2c with another client",
        sub(H2, ('"https", "h2", "h2c"', '"h2c"'), ('client = "engine"', 'client = "wrk"')),
        "protocols =",
        ['protocols = "h2c" needs client = "engine"'],
    ),
]


GOODPUT = ('client = "engine"', 'client = "engine"\nexpect_status = [200, 304]\nmax_errors = "0.5%"')
BAD += [
    (
        "a status that is none",
        sub(GOODPUT, ("expect_status = [200, 304]", "expect_status = [200, 99]")),
        "expect_status =",
        ["expect_status must be at least 100, got 99"],
    ),
    (
        "a status over 599",
        sub(GOODPUT, ("expect_status = [200, 304]", "expect_status = 600")),
        "expect_status =",
        ["from 100 to 599, got 600"],
    ),
    (
        "a status that is a word",
        sub(GOODPUT, ("expect_status = [200, 304]", 'expect_status = ["ok"]')),
        "expect_status =",
        ["whole number"],
    ),
    (
        "expected statuses with a client tool",
        sub(GOODPUT, ('client = "engine"', 'client = "ab"')),
        "expect_status =",
        ['expect_status cannot be used with client = "ab": it counts statuses by class only'],
    ),
    (
        "a share over 100%",
        sub(GOODPUT, ('max_errors = "0.5%"', 'max_errors = "150%"')),
        "max_errors =",
        ['from "0%" to "100%"', "150%"],
    ),
    (
        "a share without %",
        sub(GOODPUT, ('max_errors = "0.5%"', "max_errors = 0.01")),
        "max_errors =",
        ['like "1%", got 0.01'],
    ),
]


def test_expected_statuses_and_max_errors_reach_the_plan_and_the_load_spec():
    p = plan.parse(sub(GOODPUT)(GOOD), "myplan.toml")
    assert (p.expect_status, p.max_errors) == ((200, 304), 0.005)
    # Unsaid: any 2xx, and 1%.
    p = plan.parse(GOOD, "myplan.toml")
    assert (p.expect_status, p.max_errors) == ((), 0.01)


def test_http2_cells_multiply_by_streams_and_http1_cells_do_not():
    p = plan.parse(sub(H2)(GOOD), "myplan.toml")
    assert p.protocols == ("https", "h2", "h2c") and p.streams == (1, 10, 100)
    cells = [c for c in p.cells(["nginx"]) if c.server == "nginx"]
    assert [c.key for c in cells] == [
        "nginx/tuned/7B/ka/1cpu/https",
        *[f"nginx/tuned/7B/ka/1cpu/{protocol}/{n}streams" for protocol in ("h2", "h2c") for n in (1, 10, 100)],
    ]
    assert {c.streams for c in cells if c.protocol == "https"} == {1}
    # One client ceiling per kind: https, and each protocol and streams count of HTTP/2.
    assert len(set(p.connections())) == 7
    assert plan.parse(sub(("keep_alive = [true]", 'protocols = ["h2c"]\nstreams = 8'))(GOOD), "p.toml").streams == (8,)


def test_protocols_make_cells_and_keys_name_them():
    p = plan.parse(sub(HTTPS, TLS)(GOOD), "myplan.toml")
    assert p.protocols == ("http", "https") and p.tls.version == "1.3" and p.tls.key == "ecdsa-p256"
    keys = [c.key for c in p.cells(["nginx"])]
    # A TLS cell without keep-alive once per resumption; plain HTTP keeps its old key, so runs
    # stored before protocols existed resume.
    assert keys == [
        "nginx/tuned/7B/ka/1cpu",
        "nginx/tuned/7B/close/1cpu",
        "nginx/tuned/7B/ka/1cpu/https",
        "nginx/tuned/7B/close/1cpu/https/none",
        "nginx/tuned/7B/close/1cpu/https/tickets",
    ]
    assert p.estimate_seconds(2) > plan.parse(GOOD, "myplan.toml").estimate_seconds(2) * 4


@pytest.mark.parametrize("change, key_line, says", [case[1:] for case in BAD], ids=[case[0] for case in BAD])
def test_each_bad_input_is_one_line_naming_key_and_line(change, key_line, says):
    text = change(GOOD)
    message = error(text)
    assert message.startswith(f"myplan.toml line {line_of(text, key_line)}: "), message
    for part in says:
        assert part in message, message


def test_missing_sections_are_one_line_each():
    for section, header, says in [
        ("workload", '[[workload]]\nkind = "generated"\nsize = 7\nname = "index.html"\n', "workload is missing"),
        ("levels", "[levels]\nfrom = 0\nto = 100\nstep = 10\n", "levels is missing"),
        ("budget", '[budget]\nduration = "2s"\n', "budget is missing"),
    ]:
        assert header in GOOD, section
        assert says in error(GOOD.replace(header, ""))


def test_lines_are_found_in_the_right_table_and_array_entry():
    text = GOOD.replace('name = "index.html"\n', 'name = "index.html"\n\n[[workload]]\nsize = -3\nname = "b.html"\n')
    message = error(text)
    assert message.startswith(f"myplan.toml line {line_of(text, 'size = -3')}: workload.size must be at least 0")
    # a key-like line inside the multi-line notes is not taken for levels.step
    message = error(GOOD.replace("step = 10", "step = 0"))
    assert message.startswith(f"myplan.toml line {line_of(GOOD, 'step = 10')}: levels.step")


def test_repeated_workloads_and_levels_are_refused():
    text = GOOD.replace('name = "index.html"\n', 'name = "index.html"\n[[workload]]\nsize = 7\nname = "index.html"\n')
    assert "appears twice" in error(text)
    assert "has 10 twice" in error(GOOD.replace("from = 0\nto = 100\nstep = 10", "list = [10, 10]"))


def test_file_and_docroot_workloads_resolve_beside_the_plan(tmp_path):
    (tmp_path / "site" / "img").mkdir(parents=True)
    (tmp_path / "site" / "index.html").write_bytes(b"<p>home</p>\n")
    (tmp_path / "site" / "img" / "a.jpg").write_bytes(b"\xff\xd8 jpg \xff\xd9")
    (tmp_path / "photo.jpg").write_bytes(b"x" * 2048)
    body = GOOD.replace(
        'kind = "generated"\nsize = 7\nname = "index.html"\n',
        'kind = "docroot"\npath = "site"\nurls = ["/", "/img/a.jpg"]\n'
        '[[workload]]\nkind = "file"\npath = "photo.jpg"\n',
    )
    (tmp_path / "p.toml").write_text(body)
    p = plan.load(str(tmp_path / "p.toml"))
    site, photo = p.workloads
    assert site.label == "docroot:site" and site.paths == ("/", "/img/a.jpg")
    assert site.file_map() == {"": b"<p>home</p>\n", "img/a.jpg": b"\xff\xd8 jpg \xff\xd9"}
    assert photo.label == "photo.jpg 2KB" and photo.file_map() == {"photo.jpg": b"x" * 2048}
    (tmp_path / "bad.toml").write_text(body.replace('"/img/a.jpg"', '"/img/b.jpg"'))
    with pytest.raises(PlanError, match=r"bad.toml line \d+: workload.urls: /img/b.jpg names no file"):
        plan.load(str(tmp_path / "bad.toml"))
    with pytest.raises(PlanError, match="neither a built-in plan"):
        plan.load(str(tmp_path / "missing.toml"))


def test_generated_content_is_deterministic_and_sized(tmp_path):
    page, image = workload.generated(7, "index.html"), workload.generated(25600, "test.jpg")
    assert page.label == "7B" and image.label == "25KB jpg" and page.paths == ("/index.html",)
    assert page.file_map() == {"index.html": b"httpbe\n"}
    data = image.file_map()["test.jpg"]
    assert len(data) == 25600 and data[:2] == b"\xff\xd8" and data[-2:] == b"\xff\xd9"
    assert data == workload.generated(25600, "test.jpg").file_map()["test.jpg"]
    image.write(tmp_path)
    assert (tmp_path / "test.jpg").read_bytes() == data


def test_command_servers_are_declared_by_their_table():
    text = (
        GOOD.replace('"nginx", "reference"', '"nginx", "gwan"')
        + '[server.gwan]\ncommand = "/opt/gwan/gwan -p {port}"\n'
    )
    p = plan.parse(text, "myplan.toml")
    assert p.commands == {"gwan": "/opt/gwan/gwan -p {port}"}
    assert [c.server for c in p.cells(["nginx"])] == ["nginx", "gwan"]
    assert p.adapter("gwan").name == "gwan"
    with pytest.raises(
        PlanError,
        match=rf"myplan.toml line {line_of(text, 'servers =')}: servers names gwan, "
        "which is not installed here; its command's program '/opt/gwan/gwan'",
    ):
        p.check_installed(["nginx"])


def test_cells_follow_installed_and_check_installed_is_one_line():
    p = plan.parse(GOOD, "myplan.toml")
    assert [c.key for c in p.cells(["nginx", "reference"])] == ["nginx/tuned/7B/ka/1cpu", "reference/tuned/7B/ka/1cpu"]
    assert [c.server for c in p.cells(["reference"])] == ["reference"]  # narrowed, as --servers does
    with pytest.raises(PlanError) as caught:
        p.check_installed(["reference"])
    assert str(caught.value).startswith(
        f"myplan.toml line {line_of(GOOD, 'servers =')}: servers names nginx, "
        "which is not installed here; install it with 'httpbench servers install nginx'"
    )
    everything = plan.parse(GOOD.replace('servers = ["nginx", "reference"]\n', ""), "x.toml")
    assert [c.server for c in everything.cells(["nginx", "lighttpd"])] == ["nginx", "lighttpd", "reference"]


EXPECTED = {
    "quick",
    "operations",
    "seed-2016",
    "seed-2011",
    "seed-2010-rounds",
    "seed-2007-image",
    "tfb-plaintext",
    "ssl-impact",
    "h2",
    "baseline-h2",
    "dynamic",
    "capacity",
    "site",
    "slow-clients",
}


def test_every_builtin_plan_validates_and_explains_itself():
    plans = plan.builtin()
    assert set(plans) == EXPECTED and next(iter(plans)) == "quick"
    for name, p in plans.items():
        assert p.name == name and p.description and len(p.notes) > 100, name
        assert plan.parse(p.text, f"{name}.toml") == p  # the stored text reproduces the plan
        assert plan.load(name) is plans[name]


def test_builtin_cell_keys_are_unique():
    installed = servers.names()
    for name, p in plan.builtin().items():
        keys = [c.key for c in p.cells(installed)]
        assert keys and len(keys) == len(set(keys)), name


def test_builtin_plans_reproduce_the_write_ups():
    b = plan.builtin()
    quick = b["quick"]
    site = b["site"]
    assert [w.label for w in site.workloads] == ["specweb99 1dirs", "assets"] and site.requests_per_connection == 5
    assert site.capacity.objective == "p99 <= 20ms"
    assert {c.encoding for c in site.cells(["nginx"])} == {"br", "identity"}
    # Five requests a connection is not keep-alive throughout: its keys say so, so that compare
    # and resume never take one for the other.
    assert {c.key for c in site.cells(["nginx"]) if c.encoding == "br" and c.server == "nginx"} == {
        "nginx/tuned/specweb99 1dirs/ka5/1cpu/br",
        "nginx/tuned/assets/ka5/1cpu/br",
    }
    assert quick.servers is None and quick.profiles == ("tuned",) and quick.keep_alive == (True,)
    assert quick.levels == (1, 10, 50, 100, 250, 500, 1000) and quick.rounds.fixed == 1 and quick.server_cpus == (1,)
    assert quick.workloads[0].file_map() == {"index.html": b"httpbe\n"}
    s2016 = b["seed-2016"]
    assert s2016.server_cpus == (1, 2, 4, 8) and s2016.rounds.fixed == 3 and s2016.budget.requests == 100000
    assert len(s2016.levels) == 101 and s2016.levels[:3] == (1, 10, 20)
    assert len(s2016.levels) * 3 * 100000 == 30_300_000  # the 2016 write-up's "about 30,000,000" per test
    assert b["seed-2011"].client == "ab" and b["seed-2011"].profiles == ("default",)
    s2010 = b["seed-2010-rounds"]
    assert s2010.baseline == "apache2-prefork" and s2010.keep_alive == (False, True)
    assert s2010.levels == (200,) and s2010.rounds.fixed == 4 and s2010.budget.requests == 200000
    image = b["seed-2007-image"]
    combinations = {(b.requests, c) for b in image.budgets for c in image.levels}
    assert combinations == {(n, c) for n in (100, 1000, 10000) for c in (5, 50, 100)}
    keys = [c.key for c in image.cells(["apache2-prefork", "lighttpd"])]
    assert keys[:3] == [
        "apache2-prefork/default/25KB jpg/close/1cpu/n100",
        "apache2-prefork/default/25KB jpg/close/1cpu/n1000",
        "apache2-prefork/default/25KB jpg/close/1cpu/n10000",
    ]
    tfb = b["tfb-plaintext"]
    assert tfb.pipeline == 16 and tfb.levels[:3] == (256, 1024, 4096)
    # client and server each hold one descriptor per connection under a 20,000 limit
    assert max(tfb.levels) <= 10000


def test_quick_finishes_in_under_three_minutes_with_twelve_servers():
    quick = plan.builtin()["quick"]
    seconds = quick.estimate_seconds(12 + 1)  # 12 installed + reference
    assert seconds < 180, seconds
    assert f"{seconds:.0f} s" in quick.notes or "about 158 s" in quick.notes


def test_ssl_impact_finishes_in_under_eight_minutes_with_every_tls_server():
    ssl = plan.builtin()["ssl-impact"]
    tls_servers = [
        name
        for name in servers.names()
        if servers.get(name).tls_refusal() is None and servers.get(name).protocol_refusal("https") is None
    ]
    # reference among them; mighttpd2 has no TLS, nghttpd speaks only HTTP/2 (the sweep leaves it out)
    assert len(tls_servers) == 12, tls_servers
    seconds = ssl.estimate_seconds(len(tls_servers))
    assert seconds < 8 * 60, seconds
    # Five cells a server: http and https with keep-alive, http without, https without twice.
    assert len([c for c in ssl.cells(["nginx"]) if c.server == "nginx"]) == 5


def test_the_capacity_plan_finishes_in_under_twelve_minutes_with_twelve_servers():
    capacity = plan.builtin()["capacity"]
    seconds = capacity.estimate_seconds(12 + 1)  # 12 installed + reference
    assert seconds < 12 * 60, seconds
    assert f"{seconds:.0f} s" in capacity.notes
    assert capacity.model == "open" and capacity.capacity.objective == "p99 <= 10ms"


def test_the_slow_clients_plan_attacks_every_server_default_and_tuned():
    slow = plan.builtin()["slow-clients"]
    assert slow.profiles == ("default", "tuned") and slow.keep_alive == (True,)
    assert slow.attacks == [(0, None), (0, "headers"), (0, "body"), (0, "read"), (5000, None)]
    assert len(slow.cells(["nginx"])) == 2 * 2 * 5  # with reference: 10 cells a server
    seconds = slow.estimate_seconds(13)
    assert f"{seconds:.0f} s" in slow.notes and seconds < 12 * 60


def test_h2_plans_finish_in_under_eight_minutes_with_every_h2_server():
    h2_servers = [name for name in servers.names() if servers.get(name).protocol_refusal("h2") is None]
    assert "nginx" in h2_servers and "reference" not in h2_servers
    h2 = plan.builtin()["h2"]
    assert h2.estimate_seconds(len(h2_servers)) < 8 * 60
    # https against h2 at the same connections, h2 at 1, 10 and 100 streams, one server CPU.
    assert [(c.protocol, c.streams) for c in h2.cells(["nginx"]) if c.server == "nginx"] == [
        ("https", 1),
        ("h2", 1),
        ("h2", 10),
        ("h2", 100),
    ]
    assert h2.server_cpus == (1,)
    baseline = plan.builtin()["baseline-h2"]
    assert baseline.protocols == ("h2",) and baseline.streams == (100,) and baseline.levels == (256,)
    assert baseline.workloads[0].file_map() == {"index.html": b"httpbe\n"}


def test_plans_command_lists_one_line_per_plan():
    done = subprocess.run([sys.executable, "-m", "httpbench", "plans"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.strip().splitlines()
    assert len(lines) == len(EXPECTED) and lines[0].startswith("quick ")
    assert {line.split()[0] for line in lines} == EXPECTED
