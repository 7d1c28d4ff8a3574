"""`${NAME}` in the configuration file: how a Kubernetes Secret's values reach the file a ConfigMap holds."""

from __future__ import annotations

import pytest

from flytelite.config import Config


def test_references_are_replaced_by_the_environment_in_every_section(tmp_path, monkeypatch):
    monkeypatch.setenv("DB_PASSWORD", "s3cr3t")
    monkeypatch.setenv("S3_KEY", "AKIA1")
    monkeypatch.setenv("S3_SECRET", "shh")
    path = tmp_path / "flytelite.yaml"
    path.write_text("database_url: postgresql+psycopg://flytelite:${DB_PASSWORD}@db:5432/flytelite\n"
                    "s3: {access_key_id: '${S3_KEY}', secret_access_key: '${S3_SECRET}'}\n"
                    "kubernetes: {host_mounts: ['/data/${S3_KEY}'], env: {PRICE: '$5'}}\n")
    cfg = Config.load(path)
    assert cfg.database_url == "postgresql+psycopg://flytelite:s3cr3t@db:5432/flytelite"
    assert (cfg.s3.access_key_id, cfg.s3.secret_access_key) == ("AKIA1", "shh")
    assert cfg.kubernetes.host_mounts == ["/data/AKIA1"]
    assert cfg.kubernetes.env == {"PRICE": "$5"}  # a dollar that is no reference stays


def test_an_unset_variable_is_an_error_naming_it_and_the_file(tmp_path, monkeypatch):
    monkeypatch.delenv("FLYTELITE_NOT_SET", raising=False)
    path = tmp_path / "flytelite.yaml"
    path.write_text("database_url: ${FLYTELITE_NOT_SET}\n")
    with pytest.raises(ValueError, match=r"flytelite.yaml refers to \$\{FLYTELITE_NOT_SET\}, which is not set"):
        Config.load(path)
