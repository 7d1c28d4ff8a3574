"""The key that signs tokens: read from a PEM file, or generated once into the server's home (FlyteAdmin's
self-auth server keeps its RSA token-signing key in a secret and publishes the public half at /oauth2/jwks)."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from jwt.algorithms import ECAlgorithm, RSAAlgorithm


@dataclass(frozen=True)
class SigningKey:
    private_pem: bytes
    public_pem: bytes
    algorithm: str  # RS256 or ES256
    kid: str
    jwk: dict


def write_private(path: Path, data: bytes) -> None:
    """Write a file only its owner reads (created that way, never world-readable in between)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(data)


def load_or_create(path: Path, generate: bool) -> SigningKey:
    """The key in `path`; if it is missing and `generate`, a new RSA key written there first."""
    if not path.exists():
        if not generate:
            raise ValueError(f"auth.signing_key_file {path} does not exist")
        key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption())
        try:
            write_private(path, pem)
        except FileExistsError:
            pass  # another process sharing the home wrote it first; use theirs
    private = serialization.load_pem_private_key(path.read_bytes(), password=None)
    if isinstance(private, rsa.RSAPrivateKey):
        algorithm, jwk = "RS256", json.loads(RSAAlgorithm.to_jwk(private.public_key()))
    elif isinstance(private, ec.EllipticCurvePrivateKey) and private.curve.name == "secp256r1":
        algorithm, jwk = "ES256", json.loads(ECAlgorithm.to_jwk(private.public_key()))
    else:
        raise ValueError(f"{path} must hold an RSA or P-256 EC private key")
    public_pem = private.public_key().public_bytes(serialization.Encoding.PEM,
                                                   serialization.PublicFormat.SubjectPublicKeyInfo)
    kid = _thumbprint(jwk)
    jwk.update({"kid": kid, "alg": algorithm, "use": "sig"})
    return SigningKey(private_pem=path.read_bytes(), public_pem=public_pem, algorithm=algorithm, kid=kid, jwk=jwk)


def _thumbprint(jwk: dict) -> str:
    """RFC 7638 thumbprint of the public key: a stable key id."""
    import base64
    import hashlib

    members = {k: jwk[k] for k in sorted(jwk) if k in ("crv", "e", "kty", "n", "x", "y")}
    digest = hashlib.sha256(json.dumps(members, separators=(",", ":"), sort_keys=True).encode()).digest()
    return base64.urlsafe_b64encode(digest).decode().rstrip("=")
