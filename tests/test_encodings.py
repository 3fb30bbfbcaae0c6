"""Content codings counted by the engine against a real nginx compressing on the fly (`gzip on`:
chunked answers), and checked per URL against the coding and coded length a spec expects.

Every load targets 127.0.0.1, bounded by a request count.
"""

import gzip
import importlib
import re
import subprocess
import urllib.request
import zlib
from pathlib import Path
from types import SimpleNamespace

import pytest
from conftest import binary, free_port, httpbench, quick_sweep, refused_run, start_nginx, stop, wait_for_port
from httpbench import results
from httpbench.judge import honesty
from httpbench.load import engine
from httpbench.plan import builtin as plans
from httpbench.plan.model import PlanError
from httpbench.report import codings, tables
from httpbench.results.compare import compare
from httpbench.results.comparison import groups
from httpbench.results.model import CellResult
from httpbench.servers import EncodingUnsupported, VerificationFailed
from httpbench.sweep import servable
from test_report import draw_offline

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
        "decoded_lengths": [len(FILES["a.html"]), len(FILES["b.css"]), len(RAW["c.webp"])],
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
    # Decoded, the gzip answers hold more than came on the wire; identity ones just as much.
    assert enc["gzip"]["decoded_bytes"] > 10 * enc["gzip"]["bytes"]
    assert enc["identity"]["decoded_bytes"] == enc["identity"]["bytes"]
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
    # No decoded lengths given: a coded answer's decoded bytes are not known.
    assert r["encodings"] == {"gzip": {"answers": 500, "bytes": r["bytes"]["body"], "decoded_bytes": None}}
    rc, r, err = load("-n", "200", "-c", "2", gzip_nginx + "a.html")
    assert rc == 0 and set(r["encodings"]) == {"identity"}, err
    # Its summary says which codings came, once a server coded one.
    said = subprocess.run(
        [str(binary("httpbench-load")), "-n", "100", "-H", "Accept-Encoding: gzip", gzip_nginx + "a.html"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert re.search(r"Encodings +gzip 100 \(", said.stdout), said.stdout


ENCODING_PLAN = """
servers = ["nginx"]
profiles = ["default"]
warmup = "0s"
server_cpus = [1]
{extra}
[[workload]]
kind = "site"
model = "assets"
[levels]
list = [2]
[budget]
requests = 300
"""


def plan_file(folder: Path, extra: str) -> Path:
    path = folder / "plan.toml"
    path.write_text(ENCODING_PLAN.format(extra=extra))
    return path


@pytest.fixture(scope="module")
def encoded_run(tmp_path_factory):
    """nginx's default profile (gzip on, for text/html only; no br) over the assets site, asked
    identity, gzip and br: one short sweep, shared by the tests that read it."""
    folder = tmp_path_factory.mktemp("encodings")
    notes: list = []
    sweep = quick_sweep(plan_file(folder, 'accept_encoding = ["identity", "gzip", "br"]'), folder / "r.db", notes)
    run_id = sweep.start()
    sweep.run(run_id)
    return sweep.store, run_id, notes


def test_a_cell_per_coding_verified_decoded_and_counted(encoded_run):
    store, run_id, notes = encoded_run
    cells = {cell["encoding"]: cell for cell in store.run(run_id)["cells"]}
    assert set(cells) == {"identity", "gzip", "br"}, notes
    assert cells["gzip"]["key"].endswith("/gzip")
    for asked, cell in cells.items():
        assert cell["status"] == "done", cell["error"]
        (measured,) = [r["measurement"] for r in cell["rounds"]]
        spec, enc = measured["spec"], measured["encodings"]
        assert spec["headers"] == [f"Accept-Encoding: {asked}"]
        assert measured["errors_total"] == 0 and measured["requests"]["completed"] == 300
        # Each URL checked against the coding and length verification learned.
        assert len(spec["expect_encodings"]) == len(spec["urls"]) == len(spec["expect_lengths"])
        assert sum(e["answers"] for e in enc.values()) == 300
        if asked != "gzip":  # nginx has no br: asked it, it sends identity, which verification passes
            assert set(enc) == {"identity"} and set(spec["expect_encodings"]) == {"identity"}
    # nginx gzips the site's HTML out of the box, not its CSS or JS: both codings were sent.
    gzip_spec = [r["measurement"] for r in cells["gzip"]["rounds"]][0]["spec"]
    htmls = [c for url, c in zip(gzip_spec["urls"], gzip_spec["expect_encodings"]) if url.endswith(".html")]
    assert htmls and set(htmls) == {"gzip"} and "identity" in gzip_spec["expect_encodings"]


def test_the_axis_makes_a_cell_per_coding_and_refuses_an_unknown_one(tmp_path):
    plan = plans.load(str(plan_file(tmp_path, 'accept_encoding = ["identity", "gzip", "br"]')))
    cells = plan.cells(["nginx"])
    assert [c.encoding for c in cells] == ["identity", "gzip", "br"]
    assert [c.key.rsplit("/", 1)[1] for c in cells] == ["identity", "gzip", "br"]
    # Without the key: no Accept-Encoding, and the keys cells always had.
    (plain,) = plans.load(str(plan_file(tmp_path, ""))).cells(["nginx"])
    assert plain.encoding is None and plain.key == "nginx/default/assets/ka/1cpu"
    err = refused_run(plan_file(tmp_path, 'accept_encoding = ["br", "brotli"]'), tmp_path / "r.db")
    assert "accept_encoding" in err and "'identity', 'gzip', 'br'" in err, err
    for extra, said in (
        ('accept_encoding = ["gzip", "gzip"]', "twice"),
        ('accept_encoding = ["gzip"]\nclient = "wrk"', 'client = "wrk"'),
    ):
        with pytest.raises(PlanError, match=said):
            plans.load(str(plan_file(tmp_path, extra)))


def test_a_cell_not_sent_its_coding_is_flagged_shown_and_not_ranked_with_others(encoded_run):
    store, run_id, _ = encoded_run
    run = results.load(store, run_id)
    cells = {c.encoding: c for c in run.cells}
    flags = {asked: cell.levels[0].flags for asked, cell in cells.items()}
    assert flags["identity"].keys().isdisjoint({"encoding", "not_encoded"})
    assert flags["br"]["not_encoded"] == "asked br, sent identity for 100% of answers"
    # Out of the box nginx gzips HTML only: the gzip cell's other answers came as they are, as
    # verification found file by file, so no flag (the level tables say what was sent).
    assert flags["gzip"].keys().isdisjoint({"encoding", "not_encoded"})
    gzip_round = cells["gzip"].levels[0].report
    shares = {name: e["answers"] for name, e in gzip_round["encodings"].items() if e["answers"]}
    assert set(shares) == {"gzip", "identity"}, shares

    # Cells that asked different codings are never in one group; one sent none of its coding is
    # not ranked in its own.
    by_group = {g.cells[0].encoding: g for g in groups(run.measured)}
    assert len(by_group) == 3 and all(len(g.cells) == 1 for g in by_group.values())
    assert by_group["br"].ranked() == [] and by_group["gzip"].ranked() == [cells["gzip"]]
    assert by_group["br"].incomplete(cells["br"]).endswith("so it is not ranked as serving br")
    # The level tables (show, the HTML report) and the exports say what was sent and its bytes.
    shown = dict(zip([c.key for c in tables.levels(cells["gzip"]).columns], tables.levels(cells["gzip"]).rows[0]))
    assert re.fullmatch(r"identity \d+%; gzip \d+%|gzip \d+%; identity \d+%", shown["codings_sent"])
    assert 0 < shown["body_wire_bytes"] < shown["body_decoded_bytes"] and 0 < shown["wire_share"] < 1
    (identity,) = [r for r in tables.all_levels([run]).records() if r["encoding"] == "identity"]
    assert identity["codings_sent"] == "identity 100%" and identity["wire_share"] == 1.0
    assert "coding asked" in {c.title for c in tables.cells([run]).columns}


def test_compare_does_not_pair_a_level_that_sent_other_codings(encoded_run):
    store, run_id, _ = encoded_run
    before, after = results.load(store, run_id), results.load(store, run_id)
    assert compare(before, after).missing == []
    (gzip_cell,) = [c for c in after.cells if c.encoding == "gzip"]
    gzip_cell.levels[0].report["encodings"] = {"identity": {"answers": 300, "bytes": 1, "decoded_bytes": 1}}
    (gap,) = compare(before, after).missing
    assert gap.cell == gzip_cell.key
    assert gap.why == f"level 2 sent gzip, identity in run {run_id} and identity in run {run_id}, so it is not compared"


def test_verification_decodes_br_and_deflate_and_refuses_what_does_not_decode():
    """The judging of one answer, by hand-made bodies: br needs the brotli package (a dependency)."""
    brotli = pytest.importorskip("brotli")
    page = FILES["a.html"]
    # The module, not the function httpbench.servers exports under its name.
    verify_module = importlib.import_module("httpbench.servers.verify")

    def judge(coding: str, body: bytes, asked: str = "br") -> str:
        return verify_module._judge("s", "/a.html", page, asked, 200, "OK", [("Content-Encoding", coding)], body)

    assert judge("br", brotli.compress(page)) == "br"
    assert judge("deflate", zlib.compress(page), "gzip") == "deflate"
    raw = zlib.compressobj(wbits=-zlib.MAX_WBITS)
    assert judge("deflate", raw.compress(page) + raw.flush()) == "deflate"
    with pytest.raises(VerificationFailed, match="a br body that does not decode"):
        judge("br", brotli.compress(page)[:-5])
    with pytest.raises(VerificationFailed, match="a br body decoding to 9 bytes that differs"):
        judge("br", brotli.compress(b"not page!"))
    with pytest.raises(VerificationFailed, match="zstd, which verification cannot decode"):
        judge("zstd", b"x")
    with pytest.raises(VerificationFailed, match="compressed the body .br. though the plan does not ask"):
        judge("br", brotli.compress(page), "identity")


def test_a_server_that_cannot_serve_a_coding_in_tuned_is_refused_when_named_and_loses_its_cells_otherwise(tmp_path):
    path = plan_file(tmp_path, 'accept_encoding = ["identity", "br"]')
    text = path.read_text().replace('profiles = ["default"]', 'profiles = ["tuned"]')
    path.write_text(text.replace('servers = ["nginx"]', 'servers = ["nginx", "jetty9"]'))
    plan = plans.load(str(path))
    cells = plan.cells(["nginx", "jetty9"])
    kept, left_out = servable.cells(plan, cells, named=False, php={})
    assert [(c.server, c.encoding) for c in kept] == [("nginx", "identity"), ("nginx", "br"), ("jetty9", "identity")]
    assert left_out == [
        "jetty9: no br cells: jetty9/tuned cannot serve br in httpbench; ask identity, or measure its default profile"
    ]
    with pytest.raises(EncodingUnsupported, match="jetty9/tuned cannot serve br"):
        servable.cells(plan, cells, named=True, php={})


def test_a_partly_coded_cell_is_flagged_only_when_verification_did_not_learn_each_files_coding():
    sent = {"encodings": {"br": {"answers": 60}, "identity": {"answers": 40}}}
    unverified = honesty.encoding(sent, "br")
    assert unverified.kind == "encoding" and unverified.reason == "asked br, sent identity for 40% of answers"
    learned = dict(sent, spec={"expect_encodings": ["br", "identity"]})
    assert honesty.encoding(learned, "br") is None
    none_sent = {"encodings": {"identity": {"answers": 100}}, "spec": {"expect_encodings": ["identity"]}}
    assert honesty.encoding(none_sent, "br").kind == "not_encoded"


def test_a_sentence_comparing_coded_cells_says_what_each_sent():
    def cell(server, sent):
        levels = [SimpleNamespace(encodings={name: {"answers": n} for name, n in sent.items()})]
        return CellResult(1, f"{server}/tuned/assets/ka/1cpu/br", server, "tuned", "assets", True, 1, "", None,
                          "done", None, 1.0, "", "", levels, encoding="br")  # fmt: skip

    both = codings.clause(cell("a", {"br": 69, "identity": 31}), cell("b", {"br": 690, "identity": 310}), "a", "b")
    assert both == "; both sent br for 69% of answers"
    assert codings.clause(cell("a", {"br": 5}), cell("b", {"br": 7}), "a", "b") == "; both sent br for every answer"
    apart = codings.clause(cell("a", {"br": 69, "identity": 31}), cell("b", {"identity": 100}), "a", "b")
    assert apart == "; a sent br for 69% of answers, b for 0%"


def test_the_report_draws_the_codings_sent_in_chromium(encoded_run, tmp_path):
    store, run_id, _ = encoded_run
    page = tmp_path / "report.html"
    made = httpbench("report", str(run_id), "--db", store.shown, "-o", str(page))
    assert made.returncode == 0, made.stderr
    problems, drawn, failed = draw_offline(page, tmp_path / "report.png")
    assert problems == [] and failed == 0
    assert dict(drawn).get("chart-encodings", 0) > 0, drawn


def test_both_sent_every_answer_only_when_both_did():
    # 999 of 1,000 rounds to 100% as 1,000 of 1,000 does: "every answer" would claim an answer
    # the second cell did not send in br.
    def cell(server, sent):
        levels = [SimpleNamespace(encodings={name: {"answers": n} for name, n in sent.items()})]
        return CellResult(1, f"{server}/tuned/assets/ka/1cpu/br", server, "tuned", "assets", True, 1, "", None,
                          "done", None, 1.0, "", "", levels, encoding="br")  # fmt: skip

    nearly = codings.clause(cell("a", {"br": 1000}), cell("b", {"br": 999, "identity": 1}), "a", "b")
    assert nearly == "; both sent br for over 99% of answers"
