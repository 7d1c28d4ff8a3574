"""Signed URL tokens: round trip, expiry, tampering, method binding, secret file, paths inside the store."""

from __future__ import annotations

import os
import stat

import pytest

from flytelite.errors import InvalidArgument
from flytelite.storage import BlobStore
from flytelite.storage.signing import (
    Grant,
    SignatureRejected,
    SignedBlobs,
    UrlSigner,
    load_or_create_secret,
    safe_relative_path,
)

NOW = 1_700_000_000


@pytest.fixture
def signer(tmp_path) -> UrlSigner:
    return UrlSigner(load_or_create_secret(tmp_path))


def test_round_trip(signer):
    grant = Grant("PUT", "uploads/p/d/ABC===/fast1.tar.gz", NOW + 60, "1B2M2Y8AsgTpgAmY7PhCfg==")
    assert signer.verify(signer.sign(grant), "PUT", NOW) == grant


def test_expired_token_is_rejected(signer):
    token = signer.sign(Grant("PUT", "a/b", NOW + 60))
    assert signer.verify(token, "PUT", NOW + 60).path == "a/b"
    with pytest.raises(SignatureRejected, match="expired 1s ago"):
        signer.verify(token, "PUT", NOW + 61)


def test_token_for_another_method_is_rejected(signer):
    token = signer.sign(Grant("GET", "a/b", NOW + 60))
    with pytest.raises(SignatureRejected, match="signed for GET, not PUT"):
        signer.verify(token, "PUT", NOW)


@pytest.mark.parametrize("tamper", [
    lambda payload, mac: (payload[:-2] + ("AA" if payload[-2:] != "AA" else "BB"), mac),
    lambda payload, mac: (payload, mac[:-2] + ("AA" if mac[-2:] != "AA" else "BB")),
    lambda payload, mac: (payload, ""),
    lambda payload, mac: ("", mac),
])
def test_tampered_token_is_rejected(signer, tamper):
    payload, mac = signer.sign(Grant("PUT", "a/b", NOW + 60)).split(".")
    bad_payload, bad_mac = tamper(payload, mac)
    with pytest.raises(SignatureRejected, match="signature is invalid"):
        signer.verify(f"{bad_payload}.{bad_mac}", "PUT", NOW)


def test_payload_swapped_from_another_token_is_rejected(signer):
    a = signer.sign(Grant("PUT", "a/b", NOW + 60))
    b = signer.sign(Grant("PUT", "a/c", NOW + 60))
    with pytest.raises(SignatureRejected):
        signer.verify(b.split(".")[0] + "." + a.split(".")[1], "PUT", NOW)


def test_token_of_another_secret_is_rejected(signer, tmp_path):
    (tmp_path / "other-home").mkdir()
    other = UrlSigner(load_or_create_secret(tmp_path / "other-home"))
    with pytest.raises(SignatureRejected):
        signer.verify(other.sign(Grant("PUT", "a/b", NOW + 60)), "PUT", NOW)


def test_secret_file_is_private_and_stable(tmp_path):
    first = load_or_create_secret(tmp_path)
    assert len(first) == 32
    assert stat.S_IMODE(os.stat(tmp_path / "url-signing.key").st_mode) == 0o600
    assert load_or_create_secret(tmp_path) == first


@pytest.mark.parametrize("path", ["", "/etc/passwd", "a/../b", "../a", "a/./b", "a//b", "a/", "a\\b", "a\x00b"])
def test_unsafe_relative_paths_are_refused(path):
    with pytest.raises(InvalidArgument):
        safe_relative_path(path)


def test_signed_blobs_only_name_paths_inside_the_store(tmp_path, signer):
    blobs = BlobStore(str(tmp_path / "blobs"))
    signed = SignedBlobs(blobs, signer)
    inside = f"{blobs.root}/uploads/p/d/x/file.txt"
    assert signed.relative(inside) == "uploads/p/d/x/file.txt"
    for outside in [f"{blobs.root}2/file.txt", f"{blobs.root}/../file.txt", "/etc/passwd", f"{blobs.root}/a/../../x"]:
        with pytest.raises(InvalidArgument):
            signed.relative(outside)
    grant, path = signed.resolve(signed.token("GET", inside, NOW + 5), "GET", NOW)
    assert path == inside and grant.path == "uploads/p/d/x/file.txt"


def test_resolve_refuses_a_signed_path_that_escapes_through_a_symlink(tmp_path, signer):
    blobs = BlobStore(str(tmp_path / "blobs"))
    signed = SignedBlobs(blobs, signer)
    outside = tmp_path / "outside"
    outside.mkdir()
    os.symlink(outside, f"{blobs.folder}/link")
    token = signer.sign(Grant("PUT", "link/file.txt", NOW + 5))
    with pytest.raises(SignatureRejected, match="leaves the blob store"):
        signed.resolve(token, "PUT", NOW)
