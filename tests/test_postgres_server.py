"""The embedded Postgres: unprivileged, loopback-only, password-protected, data kept."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import psutil
import psycopg
import pytest

from grove.infra.postgres_server import EmbeddedPostgres
from tests.support.ports import free_port

pytestmark = pytest.mark.e2e  # starts real Postgres clusters


@pytest.fixture
def cluster() -> EmbeddedPostgres:
    root = Path(tempfile.mkdtemp(prefix="grove-pg-test-"))
    root.chmod(0o755)
    server = EmbeddedPostgres(root=root / "pg", port=free_port())
    yield server
    server.stop()


def _postmaster(server: EmbeddedPostgres) -> psutil.Process:
    pid = int((server.data_dir / "postmaster.pid").read_text().splitlines()[0])
    return psutil.Process(pid)


def test_restart_keeps_data(cluster: EmbeddedPostgres) -> None:
    url = cluster.start()
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("create table kept (v text)")
        conn.execute("insert into kept values ('ещё здесь')")
    cluster.stop()
    assert not cluster.is_running()
    url = cluster.start()
    with psycopg.connect(url) as conn:
        assert conn.execute("select v from kept").fetchone()[0] == "ещё здесь"
        # pgvector and pg_trgm ship in the wheel
        conn.execute("create extension if not exists vector")
        conn.execute("create extension if not exists pg_trgm")
        assert conn.execute("select lower('ПРИВЕТ')").fetchone()[0] == "привет"


def test_listens_on_loopback_with_a_password(cluster: EmbeddedPostgres) -> None:
    url = cluster.start()
    connections = [c for c in _postmaster(cluster).net_connections(kind="inet") if c.status == "LISTEN"]
    assert connections and all(c.laddr.ip == "127.0.0.1" for c in connections)
    with pytest.raises(psycopg.OperationalError, match="password"):
        psycopg.connect(url.replace(cluster.password_file.read_text().strip(), "wrong"))


@pytest.mark.skipif(os.geteuid() != 0, reason="only meaningful when started as root")
def test_runs_as_an_unprivileged_user_when_root(cluster: EmbeddedPostgres) -> None:
    cluster.start()
    assert _postmaster(cluster).username() == cluster.system_user
