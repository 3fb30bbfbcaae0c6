"""Certificates the suite makes for itself: a certificate authority, and certificates it signs.

One authority serves two needs: the cluster's mutual TLS (a certificate per part, copied to
every host) and HTTPS cells (a server certificate for the loopback addresses, made in the run
directory, never /etc). Private keys are written 0600.
"""

from __future__ import annotations

import datetime as dt
import ipaddress
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional, Sequence, Tuple

from httpbench.errors import Error

# The server key types a plan's `tls.key` may name. ECDSA P-256 is the default: it is what
# browsers and servers negotiate first today, and its handshakes cost a fraction of RSA's.
KEY_TYPES = ("ecdsa-p256", "rsa-2048", "rsa-4096")

# The names a server under test answers to: the client connects to an address, never a name
# (load tests stay on loopback), but sends "localhost" as SNI when the URL says so.
LOOPBACK_NAMES = ("localhost", "127.0.0.1", "::1")


class CertificateError(Error):
    """A certificate cannot be made or used as asked."""


def new_key(key_type: str) -> Any:
    from cryptography.hazmat.primitives.asymmetric import ec, rsa

    if key_type == "ecdsa-p256":
        return ec.generate_private_key(ec.SECP256R1())
    if key_type in ("rsa-2048", "rsa-4096"):
        return rsa.generate_private_key(public_exponent=65537, key_size=int(key_type[4:]))
    raise CertificateError(f"unknown key type {key_type!r}; use one of {', '.join(KEY_TYPES)}")


def _name(common: str) -> Any:
    from cryptography import x509
    from cryptography.x509.oid import NameOID

    return x509.Name(
        [
            x509.NameAttribute(NameOID.ORGANIZATION_NAME, "httpbench"),
            x509.NameAttribute(NameOID.COMMON_NAME, common),
        ]
    )


def _alt_names(hosts: Sequence[str]) -> Any:
    from cryptography import x509

    names = []
    for host in hosts:
        try:
            names.append(x509.IPAddress(ipaddress.ip_address(host)))
        except ValueError:
            names.append(x509.DNSName(host))
    return x509.SubjectAlternativeName(names)


def write_private(path: Path, data: bytes) -> Path:
    """Write `data` readable by its owner only, whatever mode an existing file had."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    path.chmod(0o600)  # an existing file keeps its mode through O_CREAT
    return path


def pem_key(key: Any) -> bytes:
    from cryptography.hazmat.primitives import serialization

    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


def pem_cert(cert: Any) -> bytes:
    from cryptography.hazmat.primitives import serialization

    return cert.public_bytes(serialization.Encoding.PEM)


@dataclass(frozen=True)
class Authority:
    """A certificate authority: its key and its self-signed certificate."""

    key: Any
    cert: Any

    @classmethod
    def new(cls, common: str = "httpbench CA", days: int = 365) -> "Authority":
        from cryptography import x509
        from cryptography.hazmat.primitives import hashes

        key = new_key("ecdsa-p256")
        now = dt.datetime.now(dt.timezone.utc)
        cert = (
            x509.CertificateBuilder()
            .subject_name(_name(common))
            .issuer_name(_name(common))
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - dt.timedelta(minutes=5))
            .not_valid_after(now + dt.timedelta(days=days))
            .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
            .add_extension(
                x509.KeyUsage(
                    digital_signature=True,
                    content_commitment=False,
                    key_encipherment=False,
                    data_encipherment=False,
                    key_agreement=False,
                    key_cert_sign=True,
                    crl_sign=True,
                    encipher_only=False,
                    decipher_only=False,
                ),
                critical=True,
            )
            .sign(key, hashes.SHA256())
        )
        return cls(key, cert)

    def issue(
        self,
        common: str,
        key_type: str = "ecdsa-p256",
        hosts: Sequence[str] = (),
        days: int = 365,
        valid_from: dt.datetime | None = None,
    ) -> Tuple[Any, Any]:
        """A key of `key_type` and a certificate for it signed by this authority, valid for
        `days` from `valid_from` (five minutes ago by default), naming `hosts` (DNS names or IP
        addresses) as subject alternative names when given."""
        from cryptography import x509
        from cryptography.hazmat.primitives import hashes

        key = new_key(key_type)
        start = valid_from or dt.datetime.now(dt.timezone.utc) - dt.timedelta(minutes=5)
        builder = (
            x509.CertificateBuilder()
            .subject_name(_name(common))
            .issuer_name(self.cert.subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(start)
            .not_valid_after(start + dt.timedelta(days=days))
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        )
        if hosts:
            builder = builder.add_extension(_alt_names(hosts), critical=False)
        return key, builder.sign(self.key, hashes.SHA256())

    def write(self, directory: Path, stem: str = "ca") -> Tuple[Path, Path]:
        """Write the authority as `<stem>.pem` and `<stem>-key.pem` in `directory`."""
        return (
            write_private(directory / f"{stem}.pem", pem_cert(self.cert)),
            write_private(directory / f"{stem}-key.pem", pem_key(self.key)),
        )


@dataclass(frozen=True)
class SiteCertificate:
    """What a server needs to serve HTTPS (`cert`, `key`) and a client to verify it (`ca`)."""

    ca: Path
    cert: Path
    key: Path
    key_type: str


def make_site_certificate(
    directory: Path,
    key_type: str = "ecdsa-p256",
    hosts: Sequence[str] = LOOPBACK_NAMES,
    authority: Optional[Authority] = None,
) -> SiteCertificate:
    """A server certificate for `hosts` signed by `authority` (a fresh one by default), written in
    `directory` (made if missing): `ca.pem`, `server.pem`, `server-key.pem`. Made again with the
    same authority, it renews the certificate in place, as a renewal before a reload does."""
    if key_type not in KEY_TYPES:
        raise CertificateError(f"tls.key = {key_type!r} is not a key type; use one of {', '.join(KEY_TYPES)}")
    try:
        directory.mkdir(parents=True, exist_ok=True)
        authority = authority or Authority.new()
        key, cert = authority.issue("httpbench server", key_type, hosts)
        ca = write_private(directory / "ca.pem", pem_cert(authority.cert))
        return SiteCertificate(
            ca=ca,
            cert=write_private(directory / "server.pem", pem_cert(cert)),
            key=write_private(directory / "server-key.pem", pem_key(key)),
            key_type=key_type,
        )
    except OSError as e:
        raise CertificateError(f"cannot write the server certificate in {directory}: {e.strerror}") from None
