"""What the benches share: a throwaway embedded Postgres, migrated, as the process's store."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def temporary_store() -> Iterator[str]:
    """Start a fresh embedded Postgres in a temp folder, point the settings at it, stop it after."""
    from grove.store.db import close_pool, prepare_database
    from grove.infra.postgres_server import EmbeddedPostgres
    from grove.core.settings import reset_settings
    from tests.conftest import free_port

    work = Path(tempfile.mkdtemp(prefix="grove-bench-"))
    work.chmod(0o755)
    server = EmbeddedPostgres(root=work / "pg", port=free_port())
    url = server.start()
    os.environ["DATABASE_URL"] = url
    reset_settings()
    prepare_database()
    try:
        yield url
    finally:
        close_pool()
        server.stop()
