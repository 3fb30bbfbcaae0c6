"""The cluster's certificate authority: a CA and a certificate per part, made once and copied to
every host."""

from __future__ import annotations

import datetime as dt
import os
from pathlib import Path
from typing import List

from httpbench.cluster.errors import ClusterError

CERT_NAMES = ("scheduler", "worker", "client")


def make_certs(directory: Path, days: int = 365, force: bool = False) -> List[Path]:
    """A CA and one certificate per part (scheduler, worker, client) signed by it; every private
    key and certificate written 0600. The directory must be new or empty (a CA every host trusts
    is not replaced by accident) unless `force`; a new or empty one is made 0700."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

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
    now = dt.datetime.now(dt.timezone.utc)

    def name(common: str) -> x509.Name:
        return x509.Name(
            [
                x509.NameAttribute(NameOID.ORGANIZATION_NAME, "httpbench"),
                x509.NameAttribute(NameOID.COMMON_NAME, common),
            ]
        )

    def write(path: Path, data: bytes) -> Path:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        path.chmod(0o600)  # an existing file keeps its mode through O_CREAT
        return path

    def pem_key(key) -> bytes:
        return key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )

    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca = (
        x509.CertificateBuilder()
        .subject_name(name("httpbench CA"))
        .issuer_name(name("httpbench CA"))
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(days=days))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .sign(ca_key, hashes.SHA256())
    )
    written = [
        write(directory / "ca.pem", ca.public_bytes(serialization.Encoding.PEM)),
        write(directory / "ca-key.pem", pem_key(ca_key)),
    ]
    for part in CERT_NAMES:
        key = ec.generate_private_key(ec.SECP256R1())
        cert = (
            x509.CertificateBuilder()
            .subject_name(name(f"httpbench {part}"))
            .issuer_name(ca.subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - dt.timedelta(minutes=5))
            .not_valid_after(now + dt.timedelta(days=days))
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .sign(ca_key, hashes.SHA256())
        )
        written.append(write(directory / f"{part}.pem", cert.public_bytes(serialization.Encoding.PEM)))
        written.append(write(directory / f"{part}-key.pem", pem_key(key)))
    return written
