"""What the shared adapter test cannot see for varnish, trafficserver, h2o and caddy: the caches
really answer from cache, nobody compresses even when asked, and profile directives land."""

import socket
import threading
import time

import pytest
from conftest import CLIENT_CPU, FILES
from httpbench import servers
from httpbench.load import engine
from httpbench.servers import ServerProfile, Site, start, verify

OURS = ("varnish", "trafficserver", "h2o", "caddy")


def _lines(path):
    return len(path.read_text().splitlines())


@pytest.mark.parametrize("name", ["varnish", "trafficserver"])
def test_cache_answers_without_asking_the_backend(site, name):
    # The default profile's nginx backend keeps an access log: one line per request it served.
    with start(servers.get(name), site, ServerProfile("default")) as running:
        verify(site, FILES, name)  # warm-up: every file fetched once
        log = running.backend.site.run_dir / "access.log"
        before = _lines(log)
        report = engine.run(
            {
                "urls": [site.url + "index.html"],
                "connections": 4,
                "stop": {"duration": 0.5},
                "cpus": [CLIENT_CPU],
                "expect_length": len(FILES["index.html"]),
            }
        )
        assert report["requests"]["completed"] > 100
        assert _lines(log) == before, "the backend served requests the cache should have"


@pytest.mark.parametrize("profile", ["default", "tuned"])
@pytest.mark.parametrize("name", OURS)
def test_plain_with_length_on_miss_and_hit(site, name, profile):
    # Tuned servers send plain files even to a client that accepts gzip. Default ones may then
    # compress (Debian's nginx does, and a cache passes its answer on), but not for the load,
    # which sends no Accept-Encoding: a varnish storing gzip used to send such a miss chunked.
    headers = {"Accept-Encoding": "gzip"} if profile == "tuned" else {}
    with start(servers.get(name), site, ServerProfile(profile)):
        for _ in range(2):  # a cache's miss, then its hit
            verify(site, FILES, name, headers=headers)


@pytest.mark.parametrize("name, directive", [("h2o", 'header.add: "X-Bench: yes"'), ("caddy", "header X-Bench yes")])
def test_directives_reach_the_server(site, name, directive):
    import http.client

    with start(servers.get(name), site, ServerProfile("tuned", directives=(directive,))):
        conn = http.client.HTTPConnection(site.host, site.port, timeout=5)
        conn.request("GET", "/index.html")
        assert conn.getresponse().getheader("X-Bench") == "yes"
        conn.close()


@pytest.mark.parametrize(
    "name, directive",
    [("varnish", "-p default_ttl=3600"), ("trafficserver", "CONFIG proxy.config.http.cache.http INT 1")],
)
def test_directives_of_caches_are_rendered(site, name, directive):
    # Rendered only: started, the directive would also reach the nginx backend (same profile).
    config = _rendered_in_front(site, name, ServerProfile("tuned", directives=(directive,)))
    assert config.files[config.main].rstrip().endswith(directive)


def _rendered_in_front(site, name, profile):
    return servers.get(name).render(
        Site(docroot=site.docroot, run_dir=site.run_dir, port=site.port, upstream="127.0.0.1:1"), profile
    )


@pytest.mark.parametrize("profile", ["default", "tuned"])
def test_trafficserver_is_told_to_open_its_port_only_once_its_cache_is_ready(site, profile):
    # What guards against the crash the next test looks for; that one sees it only when the
    # timing is unlucky.
    records = _rendered_in_front(site, "trafficserver", ServerProfile(profile)).files["records.config"]
    assert "CONFIG proxy.config.http.wait_for_cache INT 2" in records.splitlines(), records


@pytest.mark.parametrize("profile", ["default", "tuned"])
def test_trafficserver_opens_its_port_only_once_its_cache_is_ready(site, profile):
    # ATS 9.2 listens before its cache is ready unless told to wait, and a request in the few
    # milliseconds between "traffic server running" and "cache enabled" crashed it (SIGSEGV in
    # Cache::key_to_vol, seen once in CI). A connect attempt every 0.2 ms reads the diagnostics
    # log at the first connection accepted: it shows the wait where the knocker is quick enough
    # (the 2 ms window was hit every time here), and the render test above guards the setting.
    at_first_connection = []
    # Set once the server has started and stopped again, or failed to: the knocker then stops.
    start_ended = threading.Event()

    def knock():
        deadline = time.monotonic() + 20
        while not start_ended.is_set() and time.monotonic() < deadline:
            try:
                socket.create_connection((site.host, site.port), timeout=1).close()
            except OSError:
                time.sleep(0.0002)
                continue
            diags = site.run_dir / "diags.log"
            at_first_connection.append(diags.read_text() if diags.exists() else "")
            return

    knocker = threading.Thread(target=knock)
    knocker.start()
    try:
        with start(servers.get("trafficserver"), site, ServerProfile(profile)):
            pass
    finally:
        start_ended.set()
        knocker.join()
    assert at_first_connection, "trafficserver answered HTTP, yet the knocker never connected"
    assert "NOTE: cache enabled" in at_first_connection[0], (
        f"accepted before its cache was ready:\n{at_first_connection[0]}"
    )
