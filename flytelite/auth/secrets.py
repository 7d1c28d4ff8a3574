"""Client secrets and user passwords, stored only as salted PBKDF2-SHA256 hashes (hashlib, constant-time compare).

The format is `pbkdf2_sha256$<iterations>$<salt>$<hash>` (base64 without padding), what
`flytelite auth hash-secret` prints for the configuration. FlyteAdmin keeps bcrypt hashes of its static
clients' secrets; PBKDF2 from the standard library serves the same purpose without a native dependency.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
import secrets as _secrets

SCHEME = "pbkdf2_sha256"
ITERATIONS = 200_000


def _b64(raw: bytes) -> str:
    return base64.b64encode(raw).decode().rstrip("=")


def _unb64(text: str) -> bytes:
    return base64.b64decode(text + "=" * (-len(text) % 4))


def hash_secret(secret: str, iterations: int = ITERATIONS) -> str:
    salt = os.urandom(16)
    digest = hashlib.pbkdf2_hmac("sha256", secret.encode(), salt, iterations)
    return f"{SCHEME}${iterations}${_b64(salt)}${_b64(digest)}"


def check_hash_format(stored: str) -> None:
    """Raise ValueError unless `stored` is a hash this module wrote (catches a plain secret in the config)."""
    parts = stored.split("$")
    if len(parts) != 4 or parts[0] != SCHEME or not parts[1].isdigit():
        raise ValueError(f"not a {SCHEME} hash (make one with `flytelite auth hash-secret`)")


def verify_secret(secret: str, stored: str) -> bool:
    try:
        check_hash_format(stored)
        _, iterations, salt, digest = stored.split("$")
        expected = _unb64(digest)
        actual = hashlib.pbkdf2_hmac("sha256", secret.encode(), _unb64(salt), int(iterations))
    except (ValueError, TypeError):
        return False
    return hmac.compare_digest(actual, expected)


def new_secret() -> str:
    """A random client secret, URL-safe."""
    return _secrets.token_urlsafe(32)
