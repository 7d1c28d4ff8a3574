"""flytelite.testing_pg: the throwaway PostgreSQL cluster of tests and benchmarks."""

from __future__ import annotations

import os
import tempfile

import psycopg
import pytest

from flytelite.testing_pg import PostgresCluster, find_pg_bin


def test_run_as_root_the_cluster_starts_when_the_temp_folder_is_private(tmp_path, monkeypatch):
    """As root the cluster runs as user postgres, which cannot enter a private temp folder (mkdtemp's, as
    `make bench` gives every process): the cluster's folder is then made where that user can reach it."""
    if os.geteuid() != 0:
        pytest.skip("only root runs the cluster as another user")
    try:
        find_pg_bin()
    except RuntimeError as e:
        pytest.skip(str(e))
    private = tmp_path / "private"
    private.mkdir(mode=0o700)
    monkeypatch.setattr(tempfile, "tempdir", str(private))
    cluster = PostgresCluster()
    try:
        cluster.start()
        with psycopg.connect(dbname="postgres", user="postgres", host=str(cluster.socket_dir),
                             port=cluster.port) as conn:
            assert conn.execute("select 1").fetchone() == (1,)
    finally:
        cluster.stop()
    assert not cluster.folder.exists()
