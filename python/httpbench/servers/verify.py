"""Verification before measuring, as TechEmpower does it: no server wins by doing less.

Every file of the workload must come back with status 200, exactly its bytes, a Content-Length
that says so, and no compression unless the plan asks for it (readers of the 2016 write-up found
its Varnish compressing what the other servers sent plain). The request carries the headers the
load will send, so what is verified is what will be measured.

Over HTTPS each answer also comes over a connection verified against the suite's authority,
presenting exactly the site's certificate, in the TLS version the site pins (any version
otherwise): a server that fell back to a certificate of its own, or ignored the pin, would be
measured doing something else than the plan says.
"""

from __future__ import annotations

import http.client
import ssl
from typing import Dict, Optional

from httpbench.errors import Error
from httpbench.servers.base import Site, SiteTLS

_TLS_NAMES = {"1.2": "TLSv1.2", "1.3": "TLSv1.3"}


class VerificationFailed(Error):
    """The server answered a workload file wrongly; the message says how, and what it sent."""


def verify(
    site: Site,
    files: Dict[str, bytes],
    server_name: str,
    compression: bool = False,
    headers: Optional[Dict[str, str]] = None,
) -> None:
    for name, expected in files.items():
        path = "/" + name
        conn = connection(site, timeout=10)
        try:
            conn.request("GET", path, headers=headers or {})
            if site.tls is not None:
                _check_tls(conn.sock, site.tls, server_name)
            response = conn.getresponse()
            body = response.read()
        except ssl.SSLCertVerificationError as e:
            raise VerificationFailed(
                f"{server_name}'s certificate fails verification against the suite's authority ({e.verify_message})"
            ) from None
        except (OSError, http.client.HTTPException) as e:
            raise VerificationFailed(f"{server_name} did not answer GET {path}: {e}") from None
        finally:
            conn.close()
        head = f"{response.status} {response.reason}; " + ", ".join(f"{k}: {v}" for k, v in response.getheaders())

        def fail(what: str) -> VerificationFailed:
            return VerificationFailed(f"{server_name} failed verification of GET {path}: {what}; it sent {head[:300]}")

        if response.status != 200:
            raise fail(f"status {response.status}, not 200")
        encoding = response.getheader("Content-Encoding")
        if encoding and encoding.lower() != "identity" and not compression:
            raise fail(f"it compressed the body ({encoding}) though the plan does not ask for compression")
        length = response.getheader("Content-Length")
        if length is None:
            raise fail("no Content-Length")
        if not length.isdigit():
            raise fail(f"Content-Length {length!r} is not a number")
        if not compression and int(length) != len(expected):
            raise fail(f"Content-Length {length}, not {len(expected)}")
        if not compression and body != expected:
            raise fail(f"a body of {len(body)} bytes that differs from the {len(expected)}-byte file")


def connection(site: Site, timeout: float, check_tls: bool = True) -> http.client.HTTPConnection:
    """A connection to the site: HTTPS verified against the suite's authority when the site has
    TLS and `check_tls`, unverified HTTPS when not `check_tls` (a readiness probe), else HTTP."""
    if site.tls is None:
        return http.client.HTTPConnection(site.host, site.port, timeout=timeout)
    if check_tls:
        context = ssl.create_default_context(cafile=str(site.tls.ca))
    else:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    return http.client.HTTPSConnection(site.host, site.port, timeout=timeout, context=context)


def _check_tls(sock: ssl.SSLSocket, tls: SiteTLS, server_name: str) -> None:
    """The certificate presented is the site's own, and the version negotiated the pinned one."""
    presented = sock.getpeercert(binary_form=True)
    if presented != ssl.PEM_cert_to_DER_cert(tls.cert.read_text()):
        raise VerificationFailed(
            f"{server_name} presented a certificate other than the site's {tls.cert} "
            "(signed by the suite's authority, but not the one it was given)"
        )
    if tls.version is not None and sock.version() != _TLS_NAMES[tls.version]:
        raise VerificationFailed(
            f"{server_name} negotiated {sock.version()} though the site pins TLS {tls.version}; "
            "its configuration does not restrict the version"
        )
