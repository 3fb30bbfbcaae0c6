"""The reference server over TLS as the suite runs it (`python -m httpbench.servers.reference_main
--tls-cert --tls-key`), seen by Python's ssl (OpenSSL): another TLS stack than the rustls client of
crates/reference's own tests."""

import socket
import ssl
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import free_port, stop, wait_for_port
from httpbench.certificates import make_site_certificate

BODY = b"hello over tls\n"


def reference(root: Path, *options: str, port: int = 0) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "httpbench.servers.reference_main", "--root", str(root), "--port", str(port)]
        + ["--threads", "1", *options],
        stderr=subprocess.PIPE,
        text=True,
    )


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """One reference server over TLS for the module: (port, certificate path)."""
    directory = tmp_path_factory.mktemp("reference-tls")
    (directory / "www").mkdir()
    (directory / "www" / "index.html").write_bytes(BODY)
    site = make_site_certificate(directory)
    port = free_port()
    proc = reference(directory / "www", "--tls-cert", str(site.cert), "--tls-key", str(site.key), port=port)
    try:
        try:
            wait_for_port(port, proc)
        except RuntimeError as e:
            raise RuntimeError(f"{e}: {proc.stderr.read()}") from None
        yield port, site
    finally:
        stop(proc)


def client(ca: Path, version: ssl.TLSVersion) -> ssl.SSLContext:
    context = ssl.create_default_context(cafile=str(ca))
    context.minimum_version = context.maximum_version = version
    context.set_alpn_protocols(["http/1.1"])
    return context


def get(conn: ssl.SSLSocket, times: int = 1) -> None:
    """`times` keep-alive GETs of /index.html, each answer checked."""
    reader = conn.makefile("rb")
    for _ in range(times):
        conn.sendall(b"GET /index.html HTTP/1.1\r\nHost: localhost\r\n\r\n")
        assert reader.readline() == b"HTTP/1.1 200 OK\r\n"
        length = None
        while (line := reader.readline()) != b"\r\n":
            name, _, value = line.decode().partition(":")
            if name.lower() == "content-length":
                length = int(value)
        assert reader.read(length) == BODY


@pytest.mark.parametrize("version", [ssl.TLSVersion.TLSv1_2, ssl.TLSVersion.TLSv1_3])
def test_openssl_clients_are_served_and_resume(server, version):
    port, site = server
    context = client(site.ca, version)
    session = None
    for attempt in range(2):
        with socket.create_connection(("127.0.0.1", port), timeout=10) as raw:
            with context.wrap_socket(raw, server_hostname="localhost", session=session) as conn:
                get(conn, times=3)
                assert conn.version() == version.name.replace("_", ".")
                assert conn.selected_alpn_protocol() == "http/1.1"
                # The second connection offers the first one's session (a TLS 1.3 ticket read in
                # with the answers, or a TLS 1.2 ticket) and must have it accepted.
                assert conn.session_reused == (attempt == 1)
                session = conn.session


def test_a_key_that_is_not_the_certificates_is_one_line_and_exit_2(server, tmp_path):
    _, site = server
    other = make_site_certificate(tmp_path)
    proc = reference(tmp_path, "--tls-cert", str(site.cert), "--tls-key", str(other.key))
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 2
    assert err.count("\n") == 1 and "cannot serve the certificate" in err, err
