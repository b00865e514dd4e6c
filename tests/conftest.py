"""Shared test infrastructure: a real embedded Postgres and a real Prefect server.

Prefect reads PREFECT_API_URL when it is first imported (at collection), so the
address is fixed in `pytest_configure`; the server itself starts lazily, once,
for the tests that run flows or tasks.
"""

from __future__ import annotations

import itertools
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from grove.core.settings import PROJECT_ROOT, reset_settings
from tests.support.ports import free_port

if TYPE_CHECKING:
    from tests.support.telegram_standin import TelegramStandin

_ROOT = Path(tempfile.mkdtemp(prefix="grove-tests-"))
_ROOT.chmod(0o755)  # the unprivileged Postgres user must reach its data dir
# Every temp folder of the run (tests', the app's subprocesses', pytest's own) goes under the run's
# root, removed at its end: a killed app's downloads or a test's cluster are not left on the disk.
_TEMP = _ROOT / "tmp"
_TEMP.mkdir()
_TEMP.chmod(0o1777)


def pytest_configure(config: pytest.Config) -> None:
    port = free_port()
    config.grove_prefect_port = port  # type: ignore[attr-defined]
    os.environ["PREFECT_API_URL"] = f"http://127.0.0.1:{port}/api"
    os.environ["PREFECT_HOME"] = str(_ROOT / "prefect-client")
    os.environ["PREFECT_SERVER_ANALYTICS_ENABLED"] = "false"
    os.environ["PREFECT_LOGGING_TO_API_WHEN_MISSING_FLOW"] = "ignore"
    os.environ["GROVE_DATA_DIR"] = str(_ROOT / "data")
    os.environ["TMPDIR"] = tempfile.tempdir = str(_TEMP)
    # Models are big and read-only: tests use the ones `make models` assembled for the project.
    os.environ.setdefault("GROVE_MODELS_DIR", str(PROJECT_ROOT / ".grove" / "models"))
    for leaked in ("TELEGRAM_BOT_TOKEN", "DATABASE_URL", "OPENROUTER_API_KEY", "GROVE_LLM_API_KEY"):
        os.environ.pop(leaked, None)
    reset_settings()


# Fixtures that start real servers: a test using one (directly or through another) is end to end.
_SERVERS = {"pg_url", "prefect_server", "store", "standin"}


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark `e2e` whatever needs Postgres, the Prefect server, model weights or a subprocess of the
    app, so `pytest -m "not e2e"` is the fast lane (`make test-fast`)."""
    for item in items:
        if _SERVERS & set(getattr(item, "fixturenames", ())) or item.get_closest_marker("models"):
            item.add_marker(pytest.mark.e2e)


def pytest_unconfigure(config: pytest.Config) -> None:
    shutil.rmtree(_ROOT, ignore_errors=True)
    # The token counter keeps the model's vocabulary (a llama_cpp.Llama) for the process. Left to
    # interpreter shutdown, it may be freed after llama_cpp's own globals are gone, and its __del__
    # prints a TypeError traceback (which modules the run imported decides the order): free it now.
    vocabulary = getattr(sys.modules.get("nodes.answering.token_budget"), "_vocabulary", None)
    if vocabulary is not None and hasattr(vocabulary, "cache_clear"):
        vocabulary.cache_clear()


@pytest.fixture(scope="session")
def prefect_server(pytestconfig: pytest.Config) -> Iterator[str]:
    from grove.infra.prefect_server import PrefectServer

    server = PrefectServer(home=_ROOT / "prefect-server", port=pytestconfig.grove_prefect_port)
    server.start(timeout=120)
    yield server.api_url
    from prefect.logging.handlers import APILogWorker

    APILogWorker.drain_all(timeout=10)  # send the last run logs while the server is still there
    server.stop()


@pytest.fixture(scope="session")
def pg_url() -> Iterator[str]:
    """A migrated database: GROVE_TEST_DATABASE_URL if given, else a fresh embedded cluster."""
    from grove.store.db import close_pool, prepare_database
    from grove.infra.postgres_server import EmbeddedPostgres

    server = None
    url = os.environ.get("GROVE_TEST_DATABASE_URL")
    if not url:
        server = EmbeddedPostgres(root=_ROOT / "pg", port=free_port())
        url = server.start()
    os.environ["DATABASE_URL"] = url
    reset_settings()
    prepare_database()
    yield url
    close_pool()
    if server is not None:
        server.stop()


class _Unrecorded:
    """A run reporter that keeps nothing: the runs of tests that do not read Prefect's records."""

    def touch(self, run: object) -> None:
        pass


@pytest.fixture(autouse=True)
def runs_recorded_on_request(request: pytest.FixtureRequest) -> Iterator[None]:
    """A test's runs reach Prefect only when it reads them (`prefect_records`).

    Each recorded turn costs Prefect's server ≈ 40 ms of CPU (bench.prefect_record). Recorded from
    every test, the suite's runs kept the shared server minutes behind, taking that CPU from the
    tests beside it, and a test that read its own run first waited for all of theirs (163 s).
    Processes a test starts (`grove up`, workers) record as they would in production.
    """
    if "prefect_records" in request.fixturenames:
        yield
        return
    from grove.core import runs

    runs.set_reporter(_Unrecorded())
    yield
    runs.set_reporter(None)


@pytest.fixture
def prefect_records(prefect_server: str) -> Iterator[object]:
    """This test's runs recorded in the suite's Prefect server by a reporter of their own (flushed
    and stopped when the test ends), so a test waits for its own records and nobody else's."""
    from grove.core import runs
    from grove.core.prefect_reporter import PrefectReporter

    reporter = PrefectReporter.start(prefect_server)
    runs.set_reporter(reporter)
    yield reporter
    runs.set_reporter(None)
    reporter.stop(30)


@pytest.fixture(autouse=True)
def no_job_left_open(request: pytest.FixtureRequest) -> Iterator[None]:
    """Background jobs a test leaves open are closed when it ends.

    Tests share one database, and a worker takes the oldest free job of any user: a job left
    queued by a test without a worker, or leased by a worker a test killed (free again once its
    lease runs out), would otherwise be run by the next test's worker, ahead of that test's own.
    """
    if "pg_url" not in request.fixturenames:
        yield
        return
    import psycopg

    url = request.getfixturevalue("pg_url")
    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute("select coalesce(max(id), 0) from jobs").fetchone()
    first = row[0] if row else 0
    yield
    try:
        with psycopg.connect(url, autocommit=True, connect_timeout=10) as conn:
            conn.execute("update jobs set status = 'failed', error = 'left open when its test ended',"
                         " finished_at = now(), lease_until = null"
                         " where id > %s and status in ('queued', 'running')", (first,))
    except psycopg.OperationalError:
        pass  # a test that stopped the store for good: nothing reads its jobs again


@pytest.fixture
def store(pg_url: str, prefect_server: str) -> str:
    """Postgres plus Prefect: what any node or flow needs to run."""
    return pg_url


_user_ids = itertools.count(start=os.getpid() * 1000 % 10**9 + 10_000)


@pytest.fixture
def user_id() -> int:
    """A user id no other test uses, so tests share one database without interfering."""
    return next(_user_ids)


@pytest.fixture
def other_user_id() -> int:
    return next(_user_ids)


@pytest.fixture
def third_user_id() -> int:
    return next(_user_ids)


@pytest.fixture
def standin(store: str) -> Iterator[TelegramStandin]:
    """The Bot API stand-in, with the settings pointing the bot and the reply node at it."""
    from tests.support.telegram_standin import TelegramStandin

    with TelegramStandin() as server:
        os.environ["TELEGRAM_BOT_TOKEN"] = "123456:TEST-TOKEN"
        os.environ["GROVE_TELEGRAM_API_URL"] = server.api_url
        reset_settings()
        yield server
        for name in ("TELEGRAM_BOT_TOKEN", "GROVE_TELEGRAM_API_URL"):
            os.environ.pop(name, None)
        reset_settings()


@pytest.fixture(autouse=True)
def _model_speed_guessed_afresh() -> Iterator[None]:
    """Each test starts from the settings' guess of the local model's speed, not from what the
    previous test's scripted model measured (a fast script would shorten the next real call)."""
    from nodes.answering import model_speed

    model_speed.forget()
    yield


@pytest.fixture
def env(monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    """Set GROVE_* / other variables for one test; settings are re-read on entry and exit."""

    def set_env(**values: str) -> None:
        for key, value in values.items():
            monkeypatch.setenv(key, value)
        reset_settings()

    yield set_env
    monkeypatch.undo()
    reset_settings()
