"""The cluster's certificate authority: a CA and a certificate per part, made once and copied to
every host."""

from __future__ import annotations

from pathlib import Path
from typing import List

from httpbench.certificates import Authority, pem_cert, pem_key, write_private
from httpbench.cluster.errors import ClusterError

CERT_NAMES = ("scheduler", "worker", "client")


def make_certs(directory: Path, days: int = 365, force: bool = False) -> List[Path]:
    """A CA and one certificate per part (scheduler, worker, client) signed by it; every private
    key and certificate written 0600. The directory must be new or empty (a CA every host trusts
    is not replaced by accident) unless `force`; a new or empty one is made 0700."""
    if directory.exists() and not directory.is_dir():
        raise ClusterError(f"{directory} exists and is not a directory; name a new directory for the certificates")
    try:
        empty = not directory.exists() or not any(directory.iterdir())
        if not empty and not force:
            raise ClusterError(
                f"{directory} is not empty; name a new or empty directory (--force overwrites its "
                "certificates, and every host then needs the new CA)"
            )
        directory.mkdir(parents=True, exist_ok=True)
        if empty:
            directory.chmod(0o700)
    except OSError as e:
        raise ClusterError(f"cannot use {directory} for the certificates: {e.strerror}") from None
    authority = Authority.new(days=days)
    written = list(authority.write(directory))
    for part in CERT_NAMES:
        key, cert = authority.issue(f"httpbench {part}", days=days)
        written.append(write_private(directory / f"{part}.pem", pem_cert(cert)))
        written.append(write_private(directory / f"{part}-key.pem", pem_key(key)))
    return written
