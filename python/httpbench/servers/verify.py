"""Verification before measuring, as TechEmpower does it: no server wins by doing less.

Every file of the workload must come back with status 200, exactly its bytes, a Content-Length
that says so, and no compression unless the plan asks for it (readers of the 2016 write-up found
its Varnish compressing what the other servers sent plain). The request carries the headers the
load will send, so what is verified is what will be measured.

A cell that asks a content coding (the site's `encoding`) sends it as Accept-Encoding; each
answer is decoded (gzip, deflate, br) and compared byte for byte with the file, and what it came
in, with its length on the wire (chunked answers de-chunked), is learned for the load to check
every answer against. A server that answers identity when br was asked is not failed here: that
is what it does, and the report says so.

Over HTTPS each answer also comes over a connection verified against the suite's authority,
presenting exactly the site's certificate, in the TLS version the site pins (any version
otherwise): a server that fell back to a certificate of its own, or ignored the pin, would be
measured doing something else than the plan says.

A PHP page may come without a Content-Length (PHP does not know its length before it has printed
it: HTTP/1.1 chunked, or the end of an HTTP/2 stream): accepted for a site that runs PHP, its bytes
still compared exactly. A failing script's message ends with PHP's own last error line from the
site's PHP error log, which is where PHP says why (display_errors is off, as in production).

A site that offers HTTP/2 must speak it, not fall back to HTTP/1.1: over TLS the server selects
"h2" by ALPN, in cleartext (h2c, prior knowledge) it answers the client's preface with SETTINGS,
as RFC 9113 requires of an h2 server. Its files are then fetched over h2 by curl (built with
nghttp2 in Debian), one connection each: curl 7.88 fails to reuse a prior-knowledge connection.
"""

from __future__ import annotations

import gzip
import http.client
import json
import shutil
import socket
import ssl
import subprocess
import tempfile
import zlib
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Dict, Iterator, List, Mapping, Optional, Tuple

from httpbench.errors import Error
from httpbench.servers.base import Site, SiteTLS
from httpbench.servers.own_words import log_size, written_since

_TLS_NAMES = {"1.2": "TLSv1.2", "1.3": "TLSv1.3"}


class VerificationFailed(Error):
    """The server answered a workload file wrongly; the message says how, and what it sent."""


# What verification learned of one URL's answer: the coding it came in and its body's length
# as sent (the engine spec's expect_encodings and expect_lengths).
Learned = Tuple[str, int]


def verify(
    site: Site, files: Mapping[str, bytes], server_name: str, headers: Optional[Dict[str, str]] = None
) -> Dict[str, Learned]:
    """Each file of `files` (URL path without its "/" -> its bytes) fetched once as the load will
    ask it (with `headers`, and the site's coding asked) and judged; returns what each came in,
    by the same names."""
    if site.http2:
        _check_h2(site, server_name)
    fetch = _fetch_h2 if site.http2 else _fetch
    headers = {**(headers or {}), **({} if site.encoding is None else {"Accept-Encoding": site.encoding})}
    logged = log_size(site.php_log) if site.php else 0
    learned: Dict[str, Learned] = {}
    for name, expected in files.items():
        path = "/" + name
        try:
            status, reason, answer, body = fetch(site, path, headers, server_name)
            coding = _judge(server_name, path, expected, site.encoding, status, reason, answer, body, bool(site.php))
        except VerificationFailed as e:
            said = _php_said(site.php_log, logged) if site.php else None
            if said is None:
                raise
            raise VerificationFailed(f"{e}; PHP logged: {said}") from None
        learned[name] = (coding, len(body))
    return learned


def _php_said(log: Path, since: int) -> Optional[str]:
    """PHP's last error in its log since offset `since`: the first line of its last entry
    ("PHP Fatal error:  ..."), its timestamp left out; None when PHP logged nothing."""
    text = written_since(log, since)
    entries = [line for line in text.splitlines() if line.startswith("[")]
    if not entries:
        return None
    return entries[-1].split("] ", 1)[-1].strip()


# An answer: status, reason phrase (none in HTTP/2), headers in the order sent, body.
Answer = Tuple[int, str, List[Tuple[str, str]], bytes]


def _fetch(site: Site, path: str, headers: Dict[str, str], server_name: str) -> Answer:
    conn = connection(site, timeout=10)
    try:
        conn.request("GET", path, headers=headers)
        if site.tls is not None:
            _check_tls(conn.sock, site.tls, server_name)
        response = conn.getresponse()
        body = response.read()
    except ssl.SSLCertVerificationError as e:
        raise _untrusted(server_name, e) from None
    except (OSError, http.client.HTTPException) as e:
        raise VerificationFailed(f"{server_name} did not answer GET {path}: {e}") from None
    finally:
        conn.close()
    return response.status, response.reason, response.getheaders(), body


def _judge(
    server_name: str,
    path: str,
    expected: bytes,
    asked: Optional[str],
    status: int,
    reason: str,
    answer: List[Tuple[str, str]],
    body: bytes,
    php: bool = False,
) -> str:
    """The coding the answer came in, once its decoded body is the file's bytes exactly."""
    head = f"{status} {reason}".rstrip() + "; " + ", ".join(f"{k}: {v}" for k, v in answer)
    fields = {k.lower(): v for k, v in answer}

    def fail(what: str) -> VerificationFailed:
        return VerificationFailed(f"{server_name} failed verification of GET {path}: {what}; it sent {head[:300]}")

    if status != 200:
        raise fail(f"status {status}, not 200")
    if php and body.lstrip().startswith(b"<?php"):
        raise fail("the script's own source, not its output: the server does not pass .php files to PHP")
    sent = fields.get("content-encoding", "")
    coding = coding_of(sent)
    if coding != "identity" and asked in (None, "identity"):
        raise fail(f"it compressed the body ({sent}) though the plan does not ask for compression")
    length = fields.get("content-length")
    # Compressing on the fly, a server does not know the length before it is done: chunked.
    if length is None and not php and coding == "identity":
        raise fail("no Content-Length")
    if length is not None and not length.isdigit():
        raise fail(f"Content-Length {length!r} is not a number")
    if length is not None and coding == "identity" and int(length) != len(expected):
        raise fail(f"Content-Length {length}, not {len(expected)}")
    decoded = decode(coding, body, fail)
    if decoded != expected:
        what = f"a body of {len(body)} bytes"
        if coding != "identity":
            what = f"a {coding} body decoding to {len(decoded)} bytes"
        raise fail(f"{what} that differs from the {len(expected)}-byte file")
    return coding


def coding_of(content_encoding: str) -> str:
    """The coding a Content-Encoding value names, as the engine's report names it: "identity"
    for none, x-gzip as gzip, "other" for anything else or several."""
    codings = [c.strip().lower() for c in content_encoding.split(",") if c.strip().lower() not in ("", "identity")]
    if not codings:
        return "identity"
    if len(codings) > 1:
        return "other"
    return {"x-gzip": "gzip", "x-compress": "compress"}.get(codings[0], codings[0])


def decode(coding: str, body: bytes, fail: Callable[[str], VerificationFailed]) -> bytes:
    if coding == "identity":
        return body
    decoder = _DECODERS.get(coding)
    if decoder is None:
        raise fail(f"a body in {coding}, which verification cannot decode (it decodes gzip, deflate and br)")
    try:
        return decoder(body)
    except VerificationFailed:
        raise
    except Exception as e:  # each decoder's own: OSError and EOFError (gzip), zlib.error, brotli.error
        raise fail(f"a {coding} body that does not decode ({e})") from None


def _inflate(body: bytes) -> bytes:
    # RFC 9110's deflate is zlib-wrapped; some servers send it raw (RFC 1951) all the same.
    try:
        return zlib.decompress(body)
    except zlib.error:
        return zlib.decompress(body, -zlib.MAX_WBITS)


def _unbrotli(body: bytes) -> bytes:
    try:
        import brotli
    except ImportError:
        raise VerificationFailed("verifying br answers needs the brotli package: pip install brotli") from None
    return brotli.decompress(body)


_DECODERS: Dict[str, Callable[[bytes], bytes]] = {"gzip": gzip.decompress, "deflate": _inflate, "br": _unbrotli}


def _untrusted(server_name: str, e: ssl.SSLCertVerificationError) -> VerificationFailed:
    return VerificationFailed(
        f"{server_name}'s certificate fails verification against the suite's authority ({e.verify_message})"
    )


def connection(site: Site, timeout: float, check_tls: bool = True) -> http.client.HTTPConnection:
    """A connection to the site: HTTPS verified against the suite's authority when the site has
    TLS and `check_tls`, unverified HTTPS when not `check_tls` (a readiness probe), else HTTP."""
    if site.tls is None:
        return http.client.HTTPConnection(site.host, site.port, timeout=timeout)
    return http.client.HTTPSConnection(site.host, site.port, timeout=timeout, context=_context(site, check_tls))


def _context(site: Site, check_tls: bool) -> ssl.SSLContext:
    if check_tls:
        return ssl.create_default_context(cafile=str(site.tls.ca))
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    return context


# RFC 9113 3.4: the client's connection preface, then its SETTINGS frame (empty: the defaults).
H2_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + bytes([0, 0, 0, 4, 0, 0, 0, 0, 0])
_SETTINGS = 4
# What h2_probe says of a server that closed the connection without a word.
CLOSED = "nothing (it closed the connection)"


@contextmanager
def h2_probe(site: Site, timeout: float, check_tls: bool = True) -> Iterator[Tuple[str, socket.socket]]:
    """A connection on which the client offered HTTP/2 (ALPN "h2" beside "http/1.1" over TLS,
    the preface by prior knowledge in cleartext), and what the server spoke back: "h2" when it
    chose h2 and its first frame is SETTINGS, else a few words naming what it did instead."""
    sock = socket.create_connection((site.host, site.port), timeout=timeout)
    try:
        if site.tls is not None:
            context = _context(site, check_tls)
            context.set_alpn_protocols(["h2", "http/1.1"])
            sock = context.wrap_socket(sock, server_hostname=site.host)
            chosen = sock.selected_alpn_protocol()
            if chosen != "h2":
                yield (f"{chosen} by ALPN" if chosen else "HTTP/1.1 (it selected no protocol by ALPN)"), sock
                return
        sock.sendall(H2_PREFACE)
        yield _first_answer(sock), sock
    finally:
        sock.close()


def _first_answer(sock: socket.socket) -> str:
    head = b""
    while len(head) < 9:
        chunk = sock.recv(9 - len(head))
        if not chunk:
            break
        head += chunk
    if len(head) == 9 and head[3] == _SETTINGS and int.from_bytes(head[5:9], "big") & 0x7FFFFFFF == 0:
        return "h2"
    if head.startswith(b"HTTP/"):
        status_line = (head + sock.recv(200)).split(b"\r\n", 1)[0].decode("latin-1")
        return f"HTTP/1.x ({status_line})"
    if not head:
        return CLOSED
    return f"bytes that are not HTTP/2 frames ({head!r})"


def _check_h2(site: Site, server_name: str) -> None:
    """The server speaks h2 when offered it, on the site's own certificate and pinned version."""
    try:
        with h2_probe(site, timeout=10) as (spoken, sock):
            if site.tls is not None:
                _check_tls(sock, site.tls, server_name)
    except ssl.SSLCertVerificationError as e:
        raise _untrusted(server_name, e) from None
    except OSError as e:
        raise VerificationFailed(f"{server_name} did not answer an HTTP/2 connection on {site.url}: {e}") from None
    if spoken != "h2":
        raise VerificationFailed(
            f"{server_name} was offered {site.protocol} but spoke {spoken}: its configuration does not enable HTTP/2"
        )


def _fetch_h2(site: Site, path: str, headers: Dict[str, str], server_name: str) -> Answer:
    curl = shutil.which("curl")
    if curl is None:
        raise VerificationFailed("verifying a server over HTTP/2 needs curl; install it with: apt-get install -y curl")
    with tempfile.TemporaryDirectory(prefix="httpbench-verify-") as tmp:
        out = Path(tmp) / "body"
        command = [curl, "--silent", "--show-error", "--max-time", "10", "--output", str(out)]
        command += ["--http2", "--cacert", str(site.tls.ca)] if site.tls else ["--http2-prior-knowledge"]
        command += [arg for name, value in headers.items() for arg in ("--header", f"{name}: {value}")]
        command += ["--write-out", "%{http_version} %{response_code} %{header_json}", site.url.rstrip("/") + path]
        done = subprocess.run(command, capture_output=True, text=True, timeout=30)
        if done.returncode != 0:
            said = done.stderr.strip().splitlines()[-1] if done.stderr.strip() else f"curl exit code {done.returncode}"
            raise VerificationFailed(f"{server_name} did not answer GET {path} over {site.protocol}: {said}")
        version, status, fields = done.stdout.split(" ", 2)
        if version != "2":
            raise VerificationFailed(f"{server_name} answered GET {path} in HTTP/{version}, not over {site.protocol}")
        answer = [(name, value) for name, values in json.loads(fields).items() for value in values]
        return int(status), "", answer, out.read_bytes() if out.exists() else b""


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
