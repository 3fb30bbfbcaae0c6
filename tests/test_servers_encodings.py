"""Tuned profiles serve br and gzip as their documentation recommends (docs/encodings.md): a
started server answers a generated site's text file in the coding asked, from the copies the
suite writes beside it (or, lighttpd, compressed on the fly), decoding to the original bytes;
identity asked, identity answered; media without copies, identity whatever is asked. One server
per adapter serves every coding."""

import gzip
import http.client
from pathlib import Path

import brotli
import pytest
from conftest import SERVER_CPU
from httpbench import servers
from httpbench.plan import workload
from httpbench.servers import EncodingUnsupported, ServerProfile, Site, start
from httpbench.servers.host import ServerHost
from httpbench.site import Mix
from httpbench.site import Site as Model

TUNED = ServerProfile("tuned")
# Text worth compressing (copies written), media that is not (no copies), and a text too small
# for a copy to save anything.
MODEL = Model(
    "encodings",
    (("index.html", 24576), ("css/main.css", 8192), ("img/hero.webp", 6144), ("tiny.txt", 7)),
    Mix(("/index.html", "/css/main.css", "/img/hero.webp", "/tiny.txt"), (1.0,) * 4),
)
TEXT = ("index.html", "css/main.css")
DECODE = {"br": brotli.decompress, "gzip": gzip.decompress, None: bytes}


def _get(site: Site, name: str, coding: str):
    connection = http.client.HTTPConnection(site.host, site.port, timeout=10)
    try:
        connection.request("GET", "/" + name, headers={"Accept-Encoding": coding})
        answer = connection.getresponse()
        headers = (
            answer.getheader("Content-Encoding"),
            answer.getheader("Content-Type"),
            answer.getheader("Vary") or "",
        )
        return answer.status, *headers, answer.read()
    finally:
        connection.close()


@pytest.fixture(scope="module")
def docroot(tmp_path_factory) -> Path:
    """The model written once with its copies: every server of the module serves it."""
    root = tmp_path_factory.mktemp("encodings") / "www"
    root.mkdir()
    MODEL.write(root, precompressed=True)
    return root


def test_copies_only_where_they_save(docroot):
    assert (docroot / "index.html.br").is_file() and (docroot / "css/main.css.gz").is_file()
    assert not list(docroot.glob("img/hero.webp.*")) and not list(docroot.glob("tiny.txt.*"))
    data = (docroot / "index.html").read_bytes()
    assert gzip.decompress((docroot / "index.html.gz").read_bytes()) == data
    assert brotli.decompress((docroot / "index.html.br").read_bytes()) == data
    again = docroot.parent / "again"
    again.mkdir()
    MODEL.write(again, precompressed=True)
    assert (again / "index.html.gz").read_bytes() == (docroot / "index.html.gz").read_bytes()


@pytest.mark.parametrize("name", ["nginx", "apache2-event", "lighttpd", "caddy", "h2o", "varnish", "trafficserver"])
def test_tuned_serves_each_coding_decoding_to_the_original(docroot, tmp_path, name):
    server = servers.get(name)
    if not server.installed():
        pytest.skip(f"{name} is not installed")
    site = Site(
        docroot=docroot,
        run_dir=tmp_path / "run",
        port=servers.free_port(),
        cpus=(SERVER_CPU,),
        encoding="br",
        precompressed=True,
    )
    with start(server, site, TUNED):
        for file_name, size in dict.fromkeys(MODEL.files):
            original = (docroot / file_name).read_bytes()
            plain_type = _get(site, file_name, "identity")[2]
            for coding in ("br", "gzip", "identity"):
                status, sent, content_type, vary, body = _get(site, file_name, coding)
                assert status == 200, (file_name, coding)
                # the original's type, never the copy's (application/gzip)
                assert content_type == plain_type, (file_name, coding, content_type)
                assert DECODE[sent](body) == original, (file_name, coding, sent)
                worth = file_name in TEXT and coding != "identity"
                assert sent == (coding if worth else None), (file_name, coding)
                if worth:
                    assert "accept-encoding" in vary.lower(), (file_name, coding, vary)


def test_tuned_refuses_in_one_line_what_it_cannot_serve(tmp_path):
    site = Site(docroot=tmp_path, run_dir=tmp_path / "run", port=1, encoding="br")
    refusal = servers.get("jetty9").encoding_refusal(site, TUNED)
    assert refusal == "jetty9/tuned cannot serve br in httpbench; ask identity, or measure its default profile"
    # Copies only: a docroot served in place has none.
    assert "only from precompressed copies (name.br)" in servers.get("nginx").encoding_refusal(site, TUNED)
    assert servers.get("nginx").encoding_refusal(site, ServerProfile("default")) is None
    with pytest.raises(EncodingUnsupported, match="jetty9/tuned cannot serve br"):
        start(servers.get("jetty9"), site, TUNED)


def test_a_cell_asking_a_coding_gets_copies_and_an_identity_cell_none():
    host = ServerHost((SERVER_CPU,))
    try:
        for coding, copies in (("br", True), ("identity", False), (None, False)):
            host.start(servers.get("nginx"), TUNED, workload.site(MODEL), 1, encoding=coding)
            site = host.running.site
            assert (site.encoding, site.precompressed) == (coding, copies)
            assert (site.docroot / "index.html.br").is_file() == copies
            assert _get(site, "index.html", "br")[1] == ("br" if copies else None)
    finally:
        host.stop()
