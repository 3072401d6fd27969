"""Throw-away PKI for tests: a CA plus server and client certificates, as PEM files.

EC P-256 keys keep generation in the milliseconds. Every certificate is valid from
an hour ago (clock skew between the test and the TLS stack must not matter) for a day.
"""

from __future__ import annotations

import datetime
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID


@dataclass(frozen=True)
class Authority:
    name: str
    cert_file: Path
    cert: x509.Certificate
    key: ec.EllipticCurvePrivateKey


@dataclass(frozen=True)
class Leaf:
    cert_file: Path
    key_file: Path


@dataclass(frozen=True)
class Pki:
    """One CA with a server certificate (localhost, 127.0.0.1) and a client certificate."""

    ca: Authority
    server: Leaf
    client: Leaf


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def _validity() -> tuple[datetime.datetime, datetime.datetime]:
    now = datetime.datetime.now(datetime.UTC)
    return now - datetime.timedelta(hours=1), now + datetime.timedelta(days=1)


def _write_key(key: ec.EllipticCurvePrivateKey, path: Path) -> None:
    path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )


def make_ca(directory: Path, name: str) -> Authority:
    directory.mkdir(parents=True, exist_ok=True)
    key = ec.generate_private_key(ec.SECP256R1())
    not_before, not_after = _validity()
    cert = (
        x509.CertificateBuilder()
        .subject_name(_name(name))
        .issuer_name(_name(name))
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(not_before)
        .not_valid_after(not_after)
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
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .sign(key, hashes.SHA256())
    )
    cert_file = directory / f"{name}.crt"
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    return Authority(name, cert_file, cert, key)


def issue(
    ca: Authority,
    directory: Path,
    name: str,
    *,
    server: bool,
    dns_names: tuple[str, ...] = ("localhost",),
    ip_addresses: tuple[str, ...] = ("127.0.0.1",),
) -> Leaf:
    """A leaf certificate signed by `ca`, for server or client authentication."""
    directory.mkdir(parents=True, exist_ok=True)
    key = ec.generate_private_key(ec.SECP256R1())
    not_before, not_after = _validity()
    usage = ExtendedKeyUsageOID.SERVER_AUTH if server else ExtendedKeyUsageOID.CLIENT_AUTH
    san: list[x509.GeneralName] = [x509.DNSName(d) for d in dns_names]
    san += [x509.IPAddress(ipaddress.ip_address(ip)) for ip in ip_addresses]
    builder = (
        x509.CertificateBuilder()
        .subject_name(_name(name))
        .issuer_name(ca.cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(not_before)
        .not_valid_after(not_after)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca.key.public_key()),
            critical=False,
        )
    )
    if san:
        builder = builder.add_extension(x509.SubjectAlternativeName(san), critical=False)
    cert = builder.sign(ca.key, hashes.SHA256())
    cert_file = directory / f"{name}.crt"
    key_file = directory / f"{name}.key"
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    _write_key(key, key_file)
    return Leaf(cert_file, key_file)


def make_pki(directory: Path, name: str = "test-ca") -> Pki:
    ca = make_ca(directory, name)
    return Pki(
        ca=ca,
        server=issue(ca, directory, f"{name}-server", server=True),
        client=issue(ca, directory, f"{name}-client", server=False, ip_addresses=()),
    )
