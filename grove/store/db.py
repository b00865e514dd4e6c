"""Postgres access: one connection pool per process, migrations, start-up checks.

The store is plain Postgres + pgvector spoken to with psycopg 3. (The `supabase`
Python client talks to PostgREST, which a Supabase project has but a bare
Postgres does not; SQL works against both.)
"""

from __future__ import annotations

import logging
import threading
import time
import weakref
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path

import psycopg
from pgvector.psycopg import register_vector
from psycopg.rows import DictRow, dict_row
from psycopg_pool import ConnectionPool

from grove.core.observe import NotRetryable
from grove.core.settings import PROJECT_ROOT, Settings, get_settings

log = logging.getLogger(__name__)

MIGRATIONS_DIR = PROJECT_ROOT / "supabase" / "migrations"
# Tables whose `embedding` column must match settings.embedding_dim.
EMBEDDING_TABLES = ("document_chunks", "knowledge_base")


class StoreUnavailable(NotRetryable, RuntimeError):
    """Postgres cannot be reached; callers turn this into a clear user-facing message.

    Not retried by tasks: inside a turn's transaction a lost connection cannot be retried,
    and the turn stops at once instead of waiting out retries.
    """

Connection = psycopg.Connection[DictRow]  # every pooled connection returns rows as dicts


class SchemaMismatch(RuntimeError):
    """The database was built for another embedding width than the settings name."""


def _configure(conn: Connection) -> None:
    # Vector columns come back as numpy arrays; the type exists once migrations ran.
    try:
        register_vector(conn)
    except psycopg.ProgrammingError:
        pass  # extension not created yet (first connection before migrations)
    conn.commit()


_pool: ConnectionPool[Connection] | None = None
_pool_url: str | None = None
_pool_lock = threading.Lock()


def database_url(settings: Settings | None = None) -> str:
    settings = settings or get_settings()
    if not settings.database_url:
        raise StoreUnavailable(
            "DATABASE_URL is not set and no embedded Postgres is running: start one with `grove up` "
            "or `grove db start`."
        )
    return settings.database_url


CHECK_AFTER_IDLE = 1.0
"""A connection back in the pool for less than this is handed out again unchecked."""
_returned: weakref.WeakKeyDictionary[Connection, float] = weakref.WeakKeyDictionary()
_returned_lock = threading.Lock()


def _note_returned(conn: Connection) -> None:
    with _returned_lock:
        _returned[conn] = time.monotonic()


def _check(conn: Connection) -> None:
    """Ask a connection that sat idle whether Postgres still holds it (an empty query), so one
    dropped by a restart or an idle timeout is never handed out. One used a moment ago is not
    asked: the check is a round trip per transaction, ≈ 6 % of the bot's CPU in a burst of
    updates (py-spy, bench/message_path.py), and a connection lost meanwhile fails its
    transaction as Postgres dying under it would."""
    with _returned_lock:
        returned = _returned.get(conn)
    if returned is None or time.monotonic() - returned >= CHECK_AFTER_IDLE:
        try:
            ConnectionPool.check_connection(conn)
        except Exception:
            _check_the_rest()
            raise


def _check_the_rest() -> None:
    """One dropped connection means Postgres restarted or cut idle ones: check every idle one now.

    Without this the pool finds them one by one, backing off 1, 2, 4, 8 s between failed checks,
    and a full pool of dropped connections outlasts its 10 s timeout. Now the next attempt (≈ 1 s
    later) gets a fresh connection."""
    pool = _pool
    if pool is not None:
        pool.check()


def get_pool(settings: Settings | None = None) -> ConnectionPool[Connection]:
    """The process-wide pool for the configured database (re-created if the URL changed)."""
    global _pool, _pool_url
    url = database_url(settings)
    settings = settings or get_settings()
    with _pool_lock:
        if _pool is None or _pool_url != url:
            if _pool is not None:
                _pool.close()
            _pool = ConnectionPool(
                url,
                connection_class=Connection,
                min_size=settings.db_pool_min,
                max_size=settings.db_pool_max,
                kwargs={"row_factory": dict_row, "autocommit": False},
                configure=_configure,
                check=_check,  # a connection Postgres dropped is not handed out
                reset=_note_returned,
                open=True,
                timeout=10,
            )
            _pool_url = url
        return _pool


def close_pool() -> None:
    global _pool, _pool_url
    with _pool_lock:
        if _pool is not None:
            _pool.close()
        _pool, _pool_url = None, None


def _unavailable(exc: BaseException) -> bool:
    return isinstance(exc, (psycopg.OperationalError, psycopg.errors.ConnectionTimeout)) or \
        type(exc).__name__ == "PoolTimeout"


@contextmanager
def transaction(settings: Settings | None = None) -> Iterator[Connection]:
    """A pooled connection inside one transaction: committed on success, rolled back on error.

    Inside a :func:`unit_of_work` (on its own thread) this is a savepoint of the unit's one
    transaction instead: a turn's writes commit together, or not at all.
    """
    unit = _unit.get()
    try:
        if unit is not None and unit.owns_thread():
            conn = unit.connection(settings)
            with conn.transaction():
                yield conn
            return
        pool = get_pool(settings)
        with pool.connection() as conn:
            yield conn
    except StoreUnavailable:
        raise
    except Exception as exc:
        if _unavailable(exc):
            if unit is not None:
                unit.broken = True
            raise StoreUnavailable(f"Postgres is unavailable: {exc}") from exc
        raise


@dataclass
class UnitOfWork:
    """One transaction spanning a whole turn: every `transaction()` of the turn is a savepoint in it.

    Why: a turn writes in several places (history, consultation state, moderation queue, the
    outbox with its replies, the inbox mark). Committed together, a crash at any point leaves
    either nothing (the update is simply processed again) or everything (only the replies
    remain to be delivered) — never half a turn. Only the thread that opened the unit uses it;
    parallel branches on other threads get their own pooled transactions (reads, mostly).
    """

    thread: int = field(default_factory=threading.get_ident)
    broken: bool = False
    _conn: Connection | None = None
    _tx: AbstractContextManager[psycopg.Transaction] | None = None
    _pool: ConnectionPool[Connection] | None = None

    def owns_thread(self) -> bool:
        return self.thread == threading.get_ident()

    def connection(self, settings: Settings | None = None) -> Connection:
        if self._conn is None:
            self._pool = get_pool(settings)
            self._conn = self._pool.getconn()
            self._tx = tx = self._conn.transaction()
            tx.__enter__()
        return self._conn

    @property
    def started(self) -> bool:
        return self._conn is not None

    def close(self, exc: BaseException | None) -> None:
        """Commit (no exception) or roll back, and give the connection back."""
        if self._conn is None:
            return
        conn, tx, pool = self._conn, self._tx, self._pool
        self._conn = self._tx = None
        assert tx is not None
        try:
            if exc is None:
                tx.__exit__(None, None, None)
            else:
                tx.__exit__(type(exc), exc, exc.__traceback__)
        except Exception as failure:
            self.broken = True
            if exc is None:
                if _unavailable(failure):
                    raise StoreUnavailable(f"Postgres is unavailable: {failure}") from failure
                raise
        finally:
            assert pool is not None
            pool.putconn(conn)


_unit: ContextVar[UnitOfWork | None] = ContextVar("grove_unit_of_work", default=None)


@contextmanager
def unit_of_work() -> Iterator[UnitOfWork]:
    """Run a block as one transaction (see :class:`UnitOfWork`); nested calls join the outer one."""
    outer = _unit.get()
    if outer is not None and outer.owns_thread():
        yield outer
        return
    unit = UnitOfWork()
    token = _unit.set(unit)
    try:
        yield unit
    except BaseException as exc:
        _unit.reset(token)
        unit.close(exc)
        raise
    else:
        _unit.reset(token)
        unit.close(None)


@dataclass(frozen=True)
class Migration:
    version: str
    name: str
    path: Path

    @property
    def sql(self) -> str:
        return self.path.read_text(encoding="utf-8")


def list_migrations(directory: Path = MIGRATIONS_DIR) -> list[Migration]:
    """Migrations in the Supabase CLI layout: `<version>_<name>.sql`, applied in version order."""
    found = []
    for path in sorted(directory.glob("*.sql")):
        version, _, name = path.stem.partition("_")
        if not version.isdigit():
            raise ValueError(f"migration file {path.name} does not start with a numeric version")
        found.append(Migration(version=version, name=name, path=path))
    return found


# Same bookkeeping table the Supabase CLI uses, so `supabase db push` and grove agree.
_BOOKKEEPING = """
create schema if not exists supabase_migrations;
create table if not exists supabase_migrations.schema_migrations (
    version    text primary key,
    statements text[],
    name       text
);
"""


def apply_migrations(url: str, directory: Path = MIGRATIONS_DIR) -> list[str]:
    """Apply pending migrations, each in its own transaction; returns the versions applied.

    An advisory lock makes concurrent starters (several workers) wait instead of racing.
    """
    applied: list[str] = []
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("select pg_advisory_lock(hashtextextended('grove.migrations', 0))")
        try:
            conn.execute(_BOOKKEEPING)
            done = {
                row[0]
                for row in conn.execute("select version from supabase_migrations.schema_migrations")
            }
            for migration in list_migrations(directory):
                if migration.version in done:
                    continue
                with conn.transaction():
                    conn.execute(migration.sql)
                    conn.execute(
                        "insert into supabase_migrations.schema_migrations (version, statements, name)"
                        " values (%s, %s, %s)",
                        (migration.version, [migration.sql], migration.name),
                    )
                log.info("applied migration %s_%s", migration.version, migration.name)
                applied.append(migration.version)
        finally:
            conn.execute("select pg_advisory_unlock(hashtextextended('grove.migrations', 0))")
    return applied


def check_embedding_dim(url: str, expected: int) -> None:
    """Fail clearly when the database's vector columns differ from settings.embedding_dim."""
    with psycopg.connect(url) as conn:
        rows = conn.execute(
            """
            select c.relname, a.atttypmod
              from pg_attribute a join pg_class c on c.oid = a.attrelid
             where c.relname = any(%s) and a.attname = 'embedding' and not a.attisdropped
               and c.relnamespace = 'public'::regnamespace
            """,
            (list(EMBEDDING_TABLES),),
        ).fetchall()
    found = {name: dim for name, dim in rows}
    missing = [t for t in EMBEDDING_TABLES if t not in found]
    if missing:
        raise SchemaMismatch(f"tables {missing} have no embedding column: were migrations applied?")
    wrong = {t: d for t, d in found.items() if d != expected}
    if wrong:
        detail = ", ".join(f"{t}.embedding is vector({d})" for t, d in sorted(wrong.items()))
        raise SchemaMismatch(
            f"embedding width mismatch: settings say {expected} (GROVE_EMBEDDING_DIM) but {detail}. "
            "Use an embedding model of that width, or add a migration that changes the columns "
            "(and re-embeds the stored rows)."
        )


def prepare_database(settings: Settings | None = None) -> list[str]:
    """Migrate and check the configured database; the one call every entry point makes."""
    settings = settings or get_settings()
    url = database_url(settings)
    try:
        applied = apply_migrations(url)
        check_embedding_dim(url, settings.embedding_dim)
    except psycopg.OperationalError as exc:
        raise StoreUnavailable(f"cannot reach Postgres at {redact(url)}: {exc}") from exc
    return applied


def redact(url: str) -> str:
    """A URL fit for logs: the password replaced by ***."""
    try:
        info = psycopg.conninfo.conninfo_to_dict(url)
    except psycopg.ProgrammingError:
        return "<unparseable url>"
    if info.get("password"):
        info["password"] = "***"
    return psycopg.conninfo.make_conninfo("", **info)
