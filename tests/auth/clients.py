"""Helpers of the authentication tests: a self-signed certificate, an auth-on server, and the processes
flytekit's flows drive (a headless "browser" for the PKCE flow, a token command for ExternalCommand)."""

from __future__ import annotations

import datetime
import ipaddress
import re
import sys
from html import unescape
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from flytelite.auth.secrets import hash_secret
from flytelite.testing import RunningServer, free_port, make_server

HERE = Path(__file__).parent
CLIENT_ID, CLIENT_SECRET = "ci-robot", "s3cret/with+odd chars"
USER, PASSWORD = "alice", "correct horse"


def sign_in_fields(page: str) -> dict[str, str]:
    """The hidden fields of flytelite's sign-in form (the authorize request it continues)."""
    return {unescape(k): unescape(v) for k, v in re.findall(r"<input type='hidden' name='([^']*)' value='([^']*)'>",
                                                            page)}


def self_signed_cert(folder: Path) -> tuple[Path, Path]:
    """A certificate for localhost and 127.0.0.1 and its key, as PEM files."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName([x509.DNSName("localhost"),
                                                         x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
                           critical=False)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(key, hashes.SHA256()))
    folder.mkdir(parents=True, exist_ok=True)
    cert_path, key_path = folder / "tls.crt", folder / "tls.key"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    return cert_path, key_path


def ca_signed_cert(folder: Path) -> tuple[Path, Path, Path]:
    """A certificate authority, and a certificate it signed for localhost and 127.0.0.1 with its key, as PEM
    files (ca, cert, key). Clients that refuse a CA's certificate as a server's (rustls: the flyte SDK's) need
    the two apart."""
    ca_key, key = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "flytelite test CA")])
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")])
    now = datetime.datetime.now(datetime.timezone.utc)
    valid = (now - datetime.timedelta(minutes=5), now + datetime.timedelta(days=1))
    ca = (x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name).public_key(ca_key.public_key())
          .serial_number(x509.random_serial_number()).not_valid_before(valid[0]).not_valid_after(valid[1])
          .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
          .add_extension(x509.KeyUsage(digital_signature=True, content_commitment=False, key_encipherment=False,
                                       data_encipherment=False, key_agreement=False, key_cert_sign=True,
                                       crl_sign=True, encipher_only=False, decipher_only=False), critical=True)
          .sign(ca_key, hashes.SHA256()))
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(ca_name).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(valid[0]).not_valid_after(valid[1])
            .add_extension(x509.SubjectAlternativeName([x509.DNSName("localhost"),
                                                         x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
                           critical=False)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
            .sign(ca_key, hashes.SHA256()))
    folder.mkdir(parents=True, exist_ok=True)
    paths = folder / "ca.crt", folder / "tls.crt", folder / "tls.key"
    paths[0].write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    paths[1].write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    paths[2].write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    return paths


def auth_config(access_token_seconds: int = 3, redirect_port: int | None = None) -> str:
    """The `auth:` section of a server with authentication on: one confidential client, one user."""
    return f"""auth:
  access_token_seconds: {access_token_seconds}
  clients:
    {CLIENT_ID}:
      secret_hash: "{hash_secret(CLIENT_SECRET)}"
  users:
    {USER}: "{hash_secret(PASSWORD)}"
  public_client:
    redirect_uri: http://localhost:{redirect_port or free_port()}/callback
"""


def auth_server(tmp_path: Path, access_token_seconds: int = 3, tls: tuple[Path, Path] | None = None,
                redirect_port: int | None = None) -> RunningServer:
    """A server with authentication on: one confidential client, one user, short-lived access tokens."""
    return make_server(tmp_path, auth_config(access_token_seconds, redirect_port), tls=tls)


def client_secret_config(server: RunningServer, path: Path) -> Path:
    """A flytekit config that signs in as the confidential client (flytekit's ClientSecret flow)."""
    secret_file = path.parent / "client-secret"
    secret_file.write_text(CLIENT_SECRET)
    path.write_text(server.admin_config(f"  authType: ClientSecret\n  clientId: {CLIENT_ID}\n"
                                        f"  clientSecretLocation: {secret_file}\n"))
    return path


def pkce_config(server: RunningServer, path: Path) -> Path:
    path.write_text(server.admin_config("  authType: Pkce\n"))
    return path


def external_command_config(server: RunningServer, path: Path) -> Path:
    command = [sys.executable, str(HERE / "token_command.py"), f"{server.url}/oauth2/token", CLIENT_ID, CLIENT_SECRET]
    lines = "".join(f"    - {c!r}\n" for c in command)
    path.write_text(server.admin_config(f"  authType: ExternalCommand\n  command:\n{lines}"))
    return path
