"""The suite's certificates: a server certificate for the loopback names, of each key type, that
a client verifying against the suite's CA accepts, and bad input refused in one line."""

import socket
import ssl
import stat
import threading

import pytest
from httpbench.certificates import KEY_TYPES, CertificateError, make_site_certificate


def handshake(site, server_name, connect_to="127.0.0.1"):
    """Serve one TLS handshake with `site`'s certificate and make it as a client verifying
    against `site.ca` for `server_name`; the negotiated version."""
    server_ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_ctx.load_cert_chain(site.cert, site.key)
    family = socket.AF_INET6 if ":" in connect_to else socket.AF_INET
    with socket.socket(family) as listener:
        listener.bind((connect_to, 0))
        listener.listen(1)
        listener.settimeout(10)

        def serve():
            try:
                conn, _ = listener.accept()
                with server_ctx.wrap_socket(conn, server_side=True) as tls:
                    tls.recv(1)
            except (OSError, ssl.SSLError):
                pass  # the client refused the certificate: the test sees it on its side

        server = threading.Thread(target=serve, daemon=True)
        server.start()
        client_ctx = ssl.create_default_context(cafile=str(site.ca))
        try:
            with socket.create_connection(listener.getsockname()[:2], timeout=10) as raw:
                with client_ctx.wrap_socket(raw, server_hostname=server_name) as tls:
                    return tls.version()
        finally:
            server.join(10)


@pytest.mark.parametrize("key_type", KEY_TYPES)
def test_every_key_type_verifies_for_the_loopback_names(tmp_path, key_type):
    site = make_site_certificate(tmp_path / key_type, key_type)
    assert site.key_type == key_type
    assert stat.S_IMODE(site.key.stat().st_mode) == 0o600
    for name in ("localhost", "127.0.0.1"):
        assert handshake(site, name) in ("TLSv1.2", "TLSv1.3")
    if socket.has_ipv6:
        try:
            assert handshake(site, "::1", connect_to="::1")
        except OSError as e:  # a host without IPv6 loopback
            pytest.skip(f"no ::1 here: {e}")


def test_another_name_is_refused(tmp_path):
    site = make_site_certificate(tmp_path, hosts=("localhost",))
    with pytest.raises(ssl.SSLCertVerificationError, match="mismatch|doesn't match"):
        handshake(site, "127.0.0.2", connect_to="127.0.0.1")


def test_an_unknown_key_type_is_one_line(tmp_path):
    with pytest.raises(CertificateError, match=r"^tls.key = 'dsa-1024' is not a key type; use one of ecdsa-p256"):
        make_site_certificate(tmp_path, "dsa-1024")
