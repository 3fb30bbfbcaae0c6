"""HTTPS on the real servers: every adapter that speaks TLS, started over TLS 1.2 and over TLS
1.3 in both profiles, verified (the suite's certificate, the pinned version, exact bytes), loaded
by `ab` over HTTPS with and without keep-alive, and stopped leaving nothing behind; then what
cannot be done, each a one-line error."""

import os
import re
import socket
import ssl
import subprocess
import sys
from dataclasses import replace

import pytest
from conftest import FILES, SERVER_CPU, make_site
from httpbench import servers
from httpbench.certificates import KEY_TYPES, make_site_certificate
from httpbench.errors import Error
from httpbench.servers import ServerProfile, SiteTLS, TLSUnsupported, VerificationFailed, start, verify
from httpbench.servers.process import session_pids

# Loaded by ab here, so HTTPS over HTTP/1.1: nghttpd, HTTP/2 only, is test_servers_h2.py's.
TLS_SERVERS = [name for name in servers.names() if servers.get(name).speaks_tls and servers.get(name).speaks_http1]


# The key type each pinned start uses: every server meets all three key types without starting
# more often (RSA with TLS 1.2, the classic pair; ECDSA, the default, with 1.3).
KEY_TYPE_OF = {("default", "1.2"): "rsa-2048", ("tuned", "1.2"): "rsa-4096"}


@pytest.fixture(scope="module")
def certificates(tmp_path_factory):
    return {key_type: make_site_certificate(tmp_path_factory.mktemp(key_type), key_type) for key_type in KEY_TYPES}


@pytest.fixture(scope="module")
def certificate(certificates):
    return certificates["ecdsa-p256"]


@pytest.fixture
def https_site(tmp_path, certificate):
    return replace(make_site(tmp_path), tls=SiteTLS.of(certificate))


def _ab(url: str, requests: int, keep_alive: bool) -> str:
    """`ab` over HTTPS, bounded in count and time; its report."""
    done = subprocess.run(
        ["ab", "-q", "-s", "10", "-n", str(requests), "-c", "4", *(["-k"] if keep_alive else []), url],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_tls_speakers_are_known():
    assert {"nginx", "apache2-event", "lighttpd", "h2o", "caddy"} <= set(TLS_SERVERS)


@pytest.mark.parametrize("version", ["1.2", "1.3"])
@pytest.mark.parametrize("profile", ["default", "tuned"])
@pytest.mark.parametrize("name", TLS_SERVERS)
def test_server_serves_https_in_the_pinned_version_and_stops_clean(https_site, certificates, name, profile, version):
    certificate = certificates[KEY_TYPE_OF.get((profile, version), "ecdsa-p256")]
    # tuned promises resumption (session caches, tickets): a resumed handshake is checked too.
    _serves_https(name, replace(https_site, tls=SiteTLS.of(certificate, version)), profile, resumes=profile == "tuned")


def _serves_https(name, site, profile, resumes=False):
    adapter = servers.get(name)
    if not adapter.installed():
        pytest.fail(f"{name} is not installed: {adapter.install_command()}")
    refusal = adapter.tls_refusal(site.tls)
    assert refusal is None, refusal
    assert site.url.startswith("https://")
    with start(adapter, site, ServerProfile(profile)) as running:
        verify(site, FILES, name)
        url = site.url + "index.html"
        for report, requests in ((_ab(url, 300, keep_alive=True), 300), (_ab(url, 50, keep_alive=False), 50)):
            assert re.search(rf"Complete requests:\s+{requests}\b", report), report
            assert re.search(r"Failed requests:\s+0\b", report), report
            assert re.search(rf"SSL/TLS Protocol:\s+TLSv{site.tls.version or '1.3'}\b", report), report
        if resumes:
            assert _resumed_handshakes(site, 3) == 3, f"{name} {profile} did not resume TLS sessions"
        sessions = [running.pid] + ([running.backend.pid] if running.backend else [])
    for sid in sessions:
        assert session_pids(sid) == [], f"{name} left processes behind"


def _resumed_handshakes(site, reconnects: int) -> int:
    """How many of `reconnects` new connections resumed the first one's session (by ticket, or
    by session id where the server gives no ticket). Each request asks the server to close, so it
    ends the TLS session cleanly: a session whose connection was cut is dropped by OpenSSL."""
    context = ssl.create_default_context(cafile=str(site.tls.ca))
    session, resumed = None, 0
    for _ in range(reconnects + 1):
        with socket.create_connection((site.host, site.port), timeout=10) as raw:
            with context.wrap_socket(raw, server_hostname=site.host, session=session) as tls:
                tls.sendall(b"GET /index.html HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
                while tls.recv(4096):
                    pass
                resumed += tls.session_reused
                session = tls.session
    return resumed


@pytest.mark.parametrize("profile", ["default", "tuned"])
def test_reference_serves_https_unpinned(https_site, profile):
    _serves_https("reference", https_site, profile)


@pytest.mark.parametrize("name", ["varnish", "trafficserver"])
def test_a_cache_serves_https_on_ipv6_loopback(tmp_path, certificate, name):
    # The front (and hitch) on ::1, the origin too: each names the other in brackets.
    site = replace(make_site(tmp_path), host="::1", port=servers.free_port("::1"), tls=SiteTLS.of(certificate, "1.3"))
    with start(servers.get(name), site, ServerProfile("tuned")):
        verify(site, FILES, name)


def test_a_server_host_starts_https_with_a_certificate_of_its_own():
    from httpbench.plan.protocol import TlsSettings
    from httpbench.plan.workload import generated
    from httpbench.servers.host import ServerHost

    host = ServerHost([SERVER_CPU])
    try:
        started = host.start(
            servers.get("nginx"), ServerProfile("tuned"), generated(7), 1, TlsSettings(version="1.2", key="rsa-2048")
        )
        assert started.url.startswith("https://127.0.0.1:")
        tls = host.running.site.tls
        assert started.ca == tls.ca.read_text() and tls.key_type == "rsa-2048"
        assert tls.cert.is_relative_to(host.base)  # made in the run's own directory, never /etc
        host.verify()
    finally:
        host.stop()


def test_reference_main_refuses_a_version_without_a_certificate_in_one_line(tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "httpbench.servers.reference_main", "--root", str(tmp_path), "--tls-version", "1.2"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.returncode == 2 and "--tls-version pins HTTPS's version" in done.stderr, done.stderr


@pytest.fixture(scope="module")
def nginx_https(tmp_path_factory, certificate):
    """One nginx over HTTPS, any version, for the verification checks below."""
    site = replace(make_site(tmp_path_factory.mktemp("nginx")), tls=SiteTLS.of(certificate))
    with start(servers.get("nginx"), site, ServerProfile("default")):
        yield site


def test_another_certificate_fails_verification_in_one_line(nginx_https, tmp_path):
    other = SiteTLS.of(make_site_certificate(tmp_path))
    with pytest.raises(VerificationFailed, match=r"fails verification against the suite's authority \(") as failed:
        verify(replace(nginx_https, tls=other), FILES, "nginx")
    assert "\n" not in str(failed.value)


def test_a_certificate_other_than_the_sites_fails_verification(nginx_https, tmp_path):
    # Signed by the same authority, but not the certificate the site gave the server.
    tls = nginx_https.tls
    (tmp_path / "other.pem").write_text(
        (tls.ca).read_text()  # the authority's own certificate: same issuer, another certificate
    )
    with pytest.raises(VerificationFailed, match="certificate other than the site's"):
        verify(replace(nginx_https, tls=replace(tls, cert=tmp_path / "other.pem")), FILES, "nginx")


def test_an_unpinned_server_fails_a_pinned_verification(nginx_https):
    with pytest.raises(VerificationFailed, match=r"negotiated TLSv1.3 though the site pins TLS 1.2"):
        verify(replace(nginx_https, tls=replace(nginx_https.tls, version="1.2")), FILES, "nginx")


@pytest.mark.parametrize(
    "change,says",
    [
        ({"key_type": "ed25519"}, "use one of ecdsa-p256, rsa-2048, rsa-4096"),
        ({"version": "1.1"}, "not one of 1.2, 1.3"),
    ],
)
def test_bad_tls_settings_are_one_line(certificate, change, says):
    with pytest.raises(TLSUnsupported, match=says) as refused:
        replace(SiteTLS.of(certificate), **change)
    assert isinstance(refused.value, Error) and "\n" not in str(refused.value)


def _refused(adapter, site) -> str:
    with pytest.raises(TLSUnsupported) as refused:
        start(adapter, site, ServerProfile())
    message = str(refused.value)
    assert isinstance(refused.value, Error) and "\n" not in message
    assert not site.run_dir.exists(), "nothing may start for a refused site"
    return message


def test_varnish_without_hitch_names_the_install_command(https_site, monkeypatch):
    from httpbench.servers.adapters import varnish

    monkeypatch.setattr(varnish, "HITCH", "/nonexistent/hitch")
    assert "apt-get install -y hitch" in _refused(servers.get("varnish"), https_site)


def test_hitch_runs_pinned_in_the_servers_session(https_site):
    # hitch's TLS work is the server's: its CPU counts as varnish's, on varnish's CPUs.
    with start(servers.get("varnish"), https_site, ServerProfile("tuned")) as running:
        programs = {pid: open(f"/proc/{pid}/comm").read().strip() for pid in running.pids()}
        assert "hitch" in programs.values() and any(
            p.startswith("varnish") or p == "cache-main" for p in programs.values()
        )
        for pid in programs:
            assert os.sched_getaffinity(pid) == {SERVER_CPU}, f"{programs[pid]} (pid {pid}) is not pinned"
    assert session_pids(running.pid) == []


def test_a_command_gets_the_sites_certificate_files(https_site):
    from httpbench.servers.adapters.command import CommandServer

    front = CommandServer("myserver --listen {host}:{port} --cert {cert} --key {key} --ca {ca}", name="mine")
    assert front.tls_refusal(https_site.tls) is None
    tls = https_site.tls
    assert f"--cert {tls.cert} --key {tls.key} --ca {tls.ca}" in front.render(https_site, ServerProfile()).text


def test_a_command_without_certificate_placeholders_cannot_serve_https(https_site):
    from httpbench.servers.adapters.command import CommandServer

    plain = CommandServer("python3 -m http.server --bind {host} {port}", name="plain")
    assert "{cert}" in _refused(plain, https_site)


def test_a_server_without_tls_says_so(https_site):
    speechless = [name for name in servers.names() if not servers.get(name).speaks_tls]
    assert "mighttpd2" in speechless  # Debian's build has no TLS
    for name in speechless:
        reason = servers.get(name).tls_refusal(https_site.tls)
        assert reason and "\n" not in reason
    assert "built without TLS" in servers.get("mighttpd2").tls_refusal()
    assert "built without TLS" in _refused(servers.get("mighttpd2"), https_site)


def test_which_servers_can_serve_https_is_asked_without_a_certificate():
    can = {name for name in servers.names() if servers.get(name).tls_refusal() is None}
    assert {"nginx", "apache2-event", "lighttpd", "h2o", "caddy"} <= can
    assert "mighttpd2" not in can


def test_a_config_file_gets_the_certificate_placeholders(https_site, tmp_path):
    template = tmp_path / "nginx.conf"
    template.write_text("# {cert} {key} {ca}\n")
    profile = ServerProfile("tuned", config_file=template)
    from httpbench.servers.process import render

    tls = https_site.tls
    assert render(servers.get("nginx"), https_site, profile).files["nginx.conf"] == f"# {tls.cert} {tls.key} {tls.ca}\n"
