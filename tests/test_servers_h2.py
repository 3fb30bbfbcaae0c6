"""HTTP/2 on the real servers: each server that offers it started once per protocol (h2 by ALPN
over TLS in the tuned profile, h2c by prior knowledge in the default one), verified (which proves
h2 was spoken, not HTTP/1.1, and fetches every file over h2 with curl), and asked for ten streams
at once on one connection by nghttp, and loaded through the engine (4 connections x 10 streams,
an exact count, which the access log counts too where the profile keeps one); then what cannot be
done, each a one-line error, and a server that falls back to HTTP/1.1 failing verification by
name."""

import re
import subprocess
import uuid
from dataclasses import replace

import pytest
from conftest import FILES, SERVER_CPU, log_lines, make_site
from httpbench import servers
from httpbench.servers import ProtocolUnsupported, ServerProfile, SiteTLS, VerificationFailed, start, verify

# (server, protocol): every server the issue names, over h2 and over h2c.
OFFERS = [
    (name, protocol) for name in ("nginx", "h2o", "caddy", "apache2-event", "nghttpd") for protocol in ("h2", "h2c")
]


def _site(tmp_path_factory, certificate, protocol: str):
    site = make_site(tmp_path_factory.mktemp("h2"))
    tls = SiteTLS.of(certificate) if protocol in ("h2", "https") else None
    return replace(site, tls=tls, http2=protocol in ("h2", "h2c"))


@pytest.fixture(scope="module", params=OFFERS, ids=["-".join(offer) for offer in OFFERS])
def running(request, tmp_path_factory, certificate):
    name, protocol = request.param
    adapter = servers.get(name)
    if not adapter.installed():
        pytest.fail(f"{name} is not installed: {adapter.install_command()}")
    site = _site(tmp_path_factory, certificate, protocol)
    profile = "tuned" if protocol == "h2" else "default"
    with start(adapter, site, ServerProfile(profile)) as server:
        yield server


def test_server_speaks_h2_and_serves_the_files_over_it(running):
    site = running.site
    verify(site, FILES, running.server.name)
    # Ten concurrent streams on one connection (prior knowledge for http://), each answered 200.
    url = site.url + "test.jpg"
    done = subprocess.run(
        ["nghttp", "-v", "-n", "-m", "10", "-t", "10", url],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.returncode == 0, done.stderr or done.stdout[-500:]
    statuses = re.findall(r"recv \(stream_id=(\d+)\) :status: (\d+)", done.stdout)
    assert len({stream for stream, _ in statuses}) == 10 and {status for _, status in statuses} == {"200"}
    assert "recv SETTINGS frame" in done.stdout


# The default profiles (h2c here) of these keep an access log: a line per request.
LOGGED = {("nginx", "h2c"), ("h2o", "h2c"), ("apache2-event", "h2c")}


def test_a_load_over_h2_is_exact_and_counts_its_streams(running, load):
    site, n = running.site, 400
    log = site.run_dir / "access.log"
    logged = (running.server.name, "h2c" if site.tls is None else "h2") in LOGGED
    assert not logged or log.exists(), f"{running.server.name} keeps no access log at {log} any more"
    before = len(log_lines(log)) if logged else 0
    # A query of this run's own picks its lines out of whatever earlier tests still write.
    token = f"load={uuid.uuid4().hex}"
    tls = ["--cacert", str(site.tls.ca)] if site.tls else []
    rc, r, err = load("--http2", "-c", "4", "--streams", "10", "-n", str(n), *tls, f"{site.url}index.html?{token}")
    assert rc == 0, err
    assert r["requests"]["completed"] == n == r["status"]["2xx"] and r["errors_total"] == 0, r["errors"]
    assert r["protocol"] == "h2" and (not site.tls or r["tls"]["alpn"] == "h2"), r["tls"]
    h2 = r["h2"]
    # Every one of these servers grants 100 streams or more by default: ten were multiplexed.
    assert h2["streams_requested"] == 10 and h2["streams_granted"] >= 10 and h2["frame_bytes"] > 0, h2
    if logged:
        # The validation request and the load's, every one over HTTP/2.
        lines = [line for line in log_lines(log, before + 1 + n) if token in line]
        protocols = [re.search(r'"GET /index.html\?\S* (HTTP/[\d.]+)"', line) for line in lines]
        assert len(lines) == 1 + n and all(protocols), lines[:3]
        spoken = "HTTP/2" if running.server.name == "h2o" else "HTTP/2.0"
        assert {p[1] for p in protocols} == {spoken}, lines[:3]


def test_servers_that_cannot_offer_h2_say_so_in_one_line(tmp_path, certificate):
    cases = {
        ("apache2-prefork", "h2"): "mod_http2 does not work with the prefork MPM",
        ("apache2-prefork", "h2c"): "mod_http2 does not work with the prefork MPM",
        ("nghttpd", "https"): "speaks only HTTP/2",
        ("reference", "h2"): "cannot offer HTTP/2",
        ("trafficserver", "h2c"): "no cleartext HTTP/2",
    }
    for (name, protocol), why in cases.items():
        site = _site_in(tmp_path / f"{name}-{protocol}", certificate, protocol)
        with pytest.raises(ProtocolUnsupported, match=why) as refused:
            start(servers.get(name), site, ServerProfile())
        assert "\n" not in str(refused.value)
        assert not site.run_dir.exists(), "refused before anything ran"


def _site_in(base, certificate, protocol):
    base.mkdir()
    site = make_site(base)
    return replace(site, tls=SiteTLS.of(certificate) if protocol in ("h2", "https") else None, http2="h2" in protocol)


@pytest.mark.parametrize("protocol", ["h2", "h2c"])
def test_a_server_answering_http1_fails_verification_naming_what_it_spoke(tmp_path, certificate, protocol):
    # nginx started without http2, then verified as if it offered it: its HTTP/1.1 is caught.
    site = _site_in(tmp_path / protocol, certificate, "https" if protocol == "h2" else "http")
    with start(servers.get("nginx"), site, ServerProfile()):
        with pytest.raises(VerificationFailed) as failed:
            verify(replace(site, http2=True), FILES, "nginx")
    said = str(failed.value)
    assert f"offered {protocol} but spoke" in said and "\n" not in said
    assert ("http/1.1 by ALPN" if protocol == "h2" else "HTTP/1.x (HTTP/1.1 400") in said


def test_nghttpd_refuses_a_pinned_tls_version_in_one_line(certificate):
    # It sets its own range (1.2 to 1.3) over any OpenSSL configuration, so a pin would be ignored.
    refusal = servers.get("nghttpd").tls_refusal(SiteTLS.of(certificate, "1.2"))
    assert "cannot be pinned to TLS 1.2" in refusal and "\n" not in refusal
    assert servers.get("nghttpd").tls_refusal(SiteTLS.of(certificate)) is None


def test_a_server_host_starts_a_server_offering_h2():
    from httpbench.plan.protocol import TlsSettings
    from httpbench.plan.workload import generated
    from httpbench.servers.host import ServerHost

    host = ServerHost([SERVER_CPU])
    try:
        started = host.start(servers.get("h2o"), ServerProfile("tuned"), generated(7), 1, TlsSettings(), http2=True)
        assert started.url.startswith("https://") and host.running.site.protocol == "h2"
        host.verify()
    finally:
        host.stop()
