"""The cluster's security rule: mutual TLS with the CA's certificates anywhere, plain TCP on
loopback only, since workers run whatever the scheduler sends them."""

from __future__ import annotations

import ipaddress
from pathlib import Path
from typing import Optional
from urllib.parse import urlsplit

from httpbench.cluster.certs import CERT_NAMES
from httpbench.cluster.errors import ClusterError


def security(certs: Optional[Path], part: str):
    """Dask's Security for one part of the cluster: mutual TLS with the CA, or None (plain TCP)."""
    from distributed import Security

    if certs is None:
        return Security()
    missing = [n for n in ("ca.pem", f"{part}.pem", f"{part}-key.pem") if not (certs / n).exists()]
    if missing:
        raise ClusterError(f"{certs} lacks {', '.join(missing)}; make them with: httpbench cluster certs {certs}")
    files = {"tls_ca_file": str(certs / "ca.pem")}
    # Each part presents its own certificate in every role it may take: a worker's tasks open
    # client connections too (the barrier's Queue and Events).
    for role in CERT_NAMES:
        files[f"tls_{role}_cert"] = str(certs / f"{part}.pem")
        files[f"tls_{role}_key"] = str(certs / f"{part}-key.pem")
    return Security(require_encryption=True, **files)


def _is_loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return host == "localhost"


def check_address(address: str, certs: Optional[Path], what: str = "scheduler address", with_port: bool = True) -> str:
    """The security rule: tls:// with certificates anywhere, tcp:// on loopback only and without
    certificates. Returns the address with its scheme (HOST:PORT alone is tcp://)."""
    full = address if "://" in address else f"tcp://{address}"
    parts = urlsplit(full)
    try:
        port = parts.port
    except ValueError:
        port = None
    shape = "tls://HOST:PORT or tcp://HOST:PORT" if with_port else "tls://HOST or tcp://HOST"
    if parts.scheme not in ("tls", "tcp") or not parts.hostname or (with_port and not port):
        raise ClusterError(f"the {what} {address!r} is not {shape}")
    if parts.scheme == "tls" and certs is None:
        raise ClusterError(f"the {what} {address} is TLS: give --certs DIR (made by 'httpbench cluster certs DIR')")
    if parts.scheme == "tcp" and not _is_loopback(parts.hostname):
        raise ClusterError(
            f"refusing plain TCP for the {what} {address}: workers run what the scheduler sends, so "
            "beyond loopback the cluster must use mutual TLS (tls://, with --certs)"
        )
    if parts.scheme == "tcp" and certs is not None:
        raise ClusterError(
            f"the {what} {address} is plain TCP but --certs is given: use tls://{parts.netloc} "
            "for mutual TLS, or drop --certs (plain TCP on loopback only)"
        )
    return full
