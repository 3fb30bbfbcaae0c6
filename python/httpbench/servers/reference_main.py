"""The suite's reference server, run from the Python package (no extra binary to install):

    python -m httpbench.servers.reference_main --root DIR --host 127.0.0.1 --port 8080 --threads N
        [--tls-cert CERT.pem --tls-key KEY.pem [--tls-version 1.2|1.3]]

It is `httpbench-reference` (crates/reference) inside the `_engine` extension: files read into
memory at start, one pinned epoll loop per thread, HTTPS (rustls) with a certificate and its key,
in one TLS version when one is pinned.
It runs until SIGTERM (how the suite stops its servers) or SIGINT, closing its sockets before it
exits. What it cannot serve (no such root, a port taken, a key that is not the certificate's) is
one line on stderr and exit code 2.
"""

from __future__ import annotations

import argparse
import signal
import sys
from typing import List, Optional

from httpbench import _engine
from httpbench.errors import EngineError


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m httpbench.servers.reference_main",
        description="Serve a directory with httpbench's reference server.",
    )
    parser.add_argument("--root", required=True, help="document root, read into memory at start")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8080)
    parser.add_argument(
        "--threads",
        type=int,
        default=0,
        help="event loops, each pinned to one CPU of the affinity mask (0: one per CPU)",
    )
    parser.add_argument(
        "--tls-cert",
        metavar="FILE",
        help="serve HTTPS with this PEM certificate chain (TLS 1.3 and 1.2, ALPN http/1.1); needs --tls-key",
    )
    parser.add_argument("--tls-key", metavar="FILE", help="the PEM private key of --tls-cert (ECDSA or RSA)")
    parser.add_argument(
        "--tls-version", choices=("1.2", "1.3"), help="speak only this TLS version (default: 1.3 and 1.2)"
    )
    args = parser.parse_args(argv)
    if (args.tls_cert is None) != (args.tls_key is None):
        parser.error("--tls-cert and --tls-key go together: give both, or neither for HTTP")
    if args.tls_version and args.tls_cert is None:
        parser.error("--tls-version pins HTTPS's version: give it with --tls-cert and --tls-key")
    # Python would die at SIGTERM without unwinding; as an exception, it reaches serve_reference's
    # signal check, which stops the loops and closes the sockets first.
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(0))
    try:
        tls = (args.tls_cert, args.tls_key, args.tls_version) if args.tls_cert else None
        _engine.serve_reference(args.root, args.host, args.port, args.threads, tls)
    except KeyboardInterrupt:
        pass
    except EngineError as e:
        print(f"httpbench-reference: error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
