"""Verification before measuring, as TechEmpower does it: no server wins by doing less.

Every file of the workload must come back with status 200, exactly its bytes, a Content-Length
that says so, and no compression unless the plan asks for it (readers of the 2016 write-up found
its Varnish compressing what the other servers sent plain). The request carries the headers the
load will send, so what is verified is what will be measured.
"""

from __future__ import annotations

import http.client
from typing import Dict, Optional

from httpbench.errors import Error
from httpbench.servers.base import Site


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
        conn = http.client.HTTPConnection(site.host, site.port, timeout=10)
        try:
            conn.request("GET", path, headers=headers or {})
            response = conn.getresponse()
            body = response.read()
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
