"""What the benches share: a throwaway embedded Postgres, migrated, as the process's store."""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import psutil


@contextmanager
def temporary_store() -> Iterator[str]:
    """Start a fresh embedded Postgres in a temp folder, point the settings at it, stop it after."""
    from grove.store.db import close_pool, prepare_database
    from grove.infra.postgres_server import EmbeddedPostgres
    from grove.core.settings import reset_settings
    from tests.support.ports import free_port

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
        shutil.rmtree(work, ignore_errors=True)  # a cluster per run adds up on the disk


def cpu_of(processes: list[psutil.Process]) -> float:
    total = 0.0
    for process in processes:
        try:
            times = process.cpu_times()
            total += times.user + times.system
        except psutil.Error:
            pass
    return total


def tree(pid: int) -> list[psutil.Process]:
    root = psutil.Process(pid)
    return [root, *root.children(recursive=True)]


def quiet(processes: Callable[[], list[psutil.Process]], still: float = 2.0, limit: float = 600,
          tolerance: float = 0.02) -> float:
    """Wait until the processes use under `tolerance` of a core for `still` seconds; returns seconds waited."""
    began = time.monotonic()
    last = cpu_of(processes())
    while time.monotonic() - began < limit:
        time.sleep(still)
        now = cpu_of(processes())
        if now - last < tolerance * still:
            return time.monotonic() - began - still
        last = now
    return time.monotonic() - began
