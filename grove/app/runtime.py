"""`grove up`: start what is missing (Postgres, Prefect), serve the flows, run the bot.

Everything this process starts it also stops, in reverse order, on Ctrl-C or
SIGTERM: bot → served flows → worker → local LLM → Prefect server → Postgres.
Services given from outside (DATABASE_URL, PREFECT_API_URL) are used and left alone.

After a crash (`kill -9`) the next `grove up` finds what the dead one started from the
pid files in `<data>/run/`: healthy servers (Prefect, the local LLM, Postgres) are taken
over and stopped at its own exit; the served flows and the worker are restarted. A
process is only touched when its pid, start time and command line match its pid file.
"""

from __future__ import annotations

import faulthandler
import logging
import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path

import httpx

import json
from urllib.parse import quote

import psutil

from grove.infra.child_process import ChildProcess, process_from_pid_file, stop_group
from grove.store.db import prepare_database, redact
from grove.infra.postgres_server import EmbeddedPostgres
from grove.infra.prefect_server import PrefectServer
from grove.app import warm
from grove.core import shutdown
from grove.core.settings import Settings, child_environment, configure

if TYPE_CHECKING:
    from nodes.telegram.reply import Sender

log = logging.getLogger("grove")


def say(message: str) -> None:
    print(f"grove: {message}", flush=True)


@dataclass
class Stack:
    """What `up` started, for an orderly stop."""

    exit: ExitStack = field(default_factory=ExitStack)
    timings: dict[str, float] = field(default_factory=dict)
    after_crash: bool = False  # the previous `grove up` died: its servers are ours to take over


def run_dir(settings: Settings) -> Path:
    return settings.data_dir / "run"


def claim_up(settings: Settings, stack: Stack) -> None:
    """One `grove up` per data folder; notes whether the previous one died without cleaning up."""
    marker = run_dir(settings) / "up.json"
    if marker.exists():
        previous = process_from_pid_file(marker)
        if previous is not None and previous.pid != os.getpid():
            raise SystemExit(f"grove: `grove up` is already running for {settings.data_dir} "
                             f"(pid {previous.pid}); stop it first")
        stack.after_crash = True
    marker.parent.mkdir(parents=True, exist_ok=True)
    me = psutil.Process()
    marker.write_text(json.dumps({"pid": me.pid, "started": me.create_time(), "command": me.cmdline()}))
    stack.exit.callback(marker.unlink, missing_ok=True)


def take_over(pid_file: Path, name: str, healthy: bool, stack: Stack, quiet: bool) -> bool:
    """A leftover server of a crashed `grove up`: kept (and stopped at exit) when healthy, else stopped.

    Returns True when it was kept.
    """
    process = process_from_pid_file(pid_file)
    if process is None:
        pid_file.unlink(missing_ok=True)
        return False
    if healthy:
        if not quiet:
            say(f"taking over the {name} left running by the previous run (pid {process.pid})")
        stack.exit.callback(_stop_leftover, process, pid_file, name, quiet)
        return True
    if not quiet:
        say(f"stopping the {name} left over by the previous run (pid {process.pid})")
    stop_group(process)
    pid_file.unlink(missing_ok=True)
    return False


def _stop_leftover(process: psutil.Process, pid_file: Path, name: str, quiet: bool) -> None:
    stop_group(process)
    pid_file.unlink(missing_ok=True)
    if not quiet:
        say(f"{name} stopped")


def start_store(settings: Settings, stack: Stack, *, quiet: bool = False) -> Settings:
    """Embedded Postgres unless DATABASE_URL is set; then migrations and the width check. Returns the
    settings with the store's URL (also the process's, `configure`).

    A server that is already running (another `grove up`) is used and left running.
    """
    started = time.monotonic()
    if settings.database_url:
        url = settings.database_url
        if not quiet:
            say(f"using Postgres from DATABASE_URL ({redact(url)})")
    else:
        server = EmbeddedPostgres(
            root=settings.pg_data_dir, port=settings.pg_port, system_user=settings.pg_system_user
        )
        already = server.is_running()
        url = server.start()
        if not already or stack.after_crash:  # a crashed run's server is ours to stop now
            stack.exit.callback(_stop_postgres, server, quiet)
            keep_running("Postgres", server, stack)
        if not quiet:
            say(f"embedded Postgres on 127.0.0.1:{settings.pg_port}, data in {server.data_dir}")
    settings = configure(database_url=url)
    applied = prepare_database(settings)
    if not quiet:
        say(f"migrations: {len(applied)} applied" if applied else "migrations: up to date")
    stack.timings["postgres"] = time.monotonic() - started
    return settings


RESTART_DELAYS = [1.0, 2.0, 5.0, 10.0, 30.0]


class Restartable(Protocol):
    """A part `grove up` keeps running: asked whether it runs, started again when it died."""

    def is_running(self) -> bool: ...
    def start(self) -> object: ...
    def describe_exit(self) -> str: ...


def watch(name: str, part: Restartable, stop: threading.Event, every: float = 2.0) -> None:
    """Start `part` again when it dies (with back-off, said on the console), so one crash does not
    leave the service half up: a dead Postgres takes the messages written meanwhile once it is back
    (Telegram keeps them, the inbox refuses nothing it acknowledged); a dead worker or flow server
    would otherwise leave indexing or the UI's runs waiting unseen until the next `grove up`."""
    attempt = 0
    while not stop.wait(every):
        if shutdown.requested() or part.is_running():
            attempt = 0
            continue
        say(f"{name} stopped unexpectedly; restarting it (attempt {attempt + 1}{part.describe_exit()})")
        try:
            part.start()
        except Exception as exc:  # noqa: BLE001 - said, then tried again after the back-off
            delay = RESTART_DELAYS[min(attempt, len(RESTART_DELAYS) - 1)]
            attempt += 1
            say(f"{name} did not restart ({str(exc).splitlines()[0]}); trying again in {delay:.0f} s")
            stop.wait(delay)
        else:
            say(f"{name} is back")
            attempt = 0


def keep_running(name: str, part: Restartable, stack: Stack) -> None:
    """Watch `part` until `grove up` stops; the watch ends before the part is stopped."""
    watching = threading.Event()
    threading.Thread(target=watch, args=(name, part, watching), name=f"{name}-watchdog", daemon=True).start()
    stack.exit.callback(watching.set)  # callbacks run last-in first-out: the watch ends first


def _stop_postgres(server: EmbeddedPostgres, quiet: bool = False) -> None:
    from grove.store.db import close_pool

    close_pool()
    server.stop()
    if not quiet:
        say("Postgres stopped")


def start_prefect(settings: Settings, stack: Stack, *, reuse: bool = False, quiet: bool = False) -> Settings:
    """PREFECT_API_URL if set; else (reuse) a local server already up; else start one. Returns the
    settings with its API URL (also the process's)."""
    started = time.monotonic()
    local = PrefectServer(home=settings.prefect_home, port=settings.prefect_port,
                          pid_file=run_dir(settings) / "prefect.pid", nice=settings.background_nice,
                          database_url=prefect_database(settings, quiet))
    if stack.after_crash and not settings.prefect_api_url:
        reuse = take_over(local.pid_file, "Prefect server", local.healthy(), stack, quiet) or reuse  # type: ignore[arg-type]
    if settings.prefect_api_url:
        api = settings.prefect_api_url
        try:
            httpx.get(f"{api.rstrip('/')}/health", timeout=5).raise_for_status()
        except httpx.HTTPError as exc:
            raise SystemExit(f"grove: PREFECT_API_URL={api} does not answer: {exc}") from exc
        if not quiet:
            say(f"using Prefect at {api}")
    elif reuse and local.healthy():
        api = local.api_url
    else:
        if not quiet:
            say("starting the Prefect server …")
        api = local.start(timeout=settings.prefect_start_timeout)
        stack.exit.callback(_stop_prefect, local, quiet)
        if not quiet:
            say(f"Prefect UI at {local.ui_url}")
    settings = configure(prefect_api_url=api)
    prefect_library_environment(api, settings)
    stack.timings["prefect"] = time.monotonic() - started
    return settings


def prefect_library_environment(api: str, settings: Settings) -> None:
    """Prefect's own library (deployments, `grove serve`) reads its server and home from the
    environment alone, so the entry point that found or started the server says so there, once."""
    os.environ.setdefault("PREFECT_HOME", str(settings.prefect_home))
    os.environ["PREFECT_API_URL"] = api


def prefect_database(settings: Settings, quiet: bool = False) -> str | None:
    """A `prefect` database beside grove's own (created once), as Prefect's async URL; None: SQLite."""
    if settings.prefect_database != "postgres" or not settings.database_url or settings.prefect_api_url:
        return None
    import psycopg
    from psycopg import sql

    try:
        with psycopg.connect(settings.database_url, autocommit=True, connect_timeout=10) as conn:
            if conn.execute("select 1 from pg_database where datname = 'prefect'").fetchone() is None:
                conn.execute(sql.SQL("create database prefect"))
        info = psycopg.conninfo.conninfo_to_dict(settings.database_url)
        info["dbname"] = "prefect"
        with psycopg.connect(psycopg.conninfo.make_conninfo("", **info), autocommit=True) as conn:
            conn.execute("create extension if not exists pg_trgm")  # Prefect's server needs it
    except psycopg.Error as exc:
        if not quiet:
            say(f"Prefect keeps its runs in SQLite (no `prefect` database in Postgres: {exc})")
        return None
    # Parsed from a connection string, every value is a str (psycopg types them str | int | None).
    user, password = str(info.get("user", "")), str(info.get("password", ""))
    auth = f"{quote(user)}:{quote(password)}@" if password else (f"{quote(user)}@" if user else "")
    return f"postgresql+asyncpg://{auth}{info.get('host', '127.0.0.1')}:{info.get('port', 5432)}/prefect"


def _stop_prefect(server: PrefectServer, quiet: bool = False) -> None:
    # Record the last runs while the server still answers (bounded: an exit is not held up).
    from grove.core import runs

    reporter = runs.default_reporter()
    if reporter is not None and hasattr(reporter, "flush"):
        reporter.flush(3.0)
    server.stop()
    if not quiet:
        say("Prefect server stopped")


def start_llm(settings: Settings, stack: Stack, *, quiet: bool = False) -> Settings:
    """No API key: serve the local model (llama-cpp-python) and say so. Returns the settings with the
    local model's URL (also the process's)."""
    if not settings.uses_local_llm:
        if not quiet:
            say(f"LLM: {settings.llm_model} at {settings.llm_base_url}")
        return settings
    if settings.local_llm_url:
        if not quiet:
            say(f"LLM: local server at {settings.local_llm_url}")
        return settings
    from grove.infra.llm_server import LocalLLMServer

    server = LocalLLMServer(
        model_path=Path(settings.model_path(settings.local_llm_model)),
        port=settings.local_llm_port,
        log_file=settings.data_dir / "llm" / "server.log",
        context=settings.local_llm_context,
        threads=settings.cpu_threads,
        gpu_layers=settings.local_llm_gpu_layers,
        draft=settings.local_llm_draft,
        draft_tokens=settings.local_llm_draft_tokens,
        chat_format=settings.local_llm_chat_format,
        pid_file=run_dir(settings) / "llm.pid",
    )
    if stack.after_crash:
        take_over(server.pid_file, "local LLM", server.healthy(), stack, quiet)  # type: ignore[arg-type]
    if server.healthy():
        url = server.base_url
    else:
        if not quiet:
            say(f"no LLM API key: starting the local model {settings.local_llm_model} "
                     "(llama-cpp-python) …")
        url = server.start()
        stack.exit.callback(_stop_child_server, server, "local LLM", quiet)
    settings = configure(local_llm_url=url)
    if not quiet:
        say(f"LLM: local {settings.local_llm_model} at {url} (offline default; {server.device})")
    return settings


def check_plugin_settings(settings: Settings) -> None:
    """A typo in a setting that names a plug-in (GROVE_RERANKER, GROVE_QUOTE_SELECTOR) stops the
    start with the choices, not the first question."""
    from nodes.answering.quote import choice_of
    from nodes.retrieval.rerankers import check_reranker

    checks: dict[str, Callable[[], object]] = {
        "GROVE_RERANKER": lambda: check_reranker(settings.reranker),
        "GROVE_QUOTE_SELECTOR": lambda: choice_of(settings.quote_selector),
    }
    for name, check in checks.items():
        try:
            check()
        except ValueError as exc:
            say(f"{name}: {exc}")
            raise SystemExit(2) from exc


def announce_embeddings(settings: Settings) -> None:
    """Say which embedding runtime and device serve this run (the model itself loads on first use)."""
    from nodes.embedding.embedding_runtime import describe_runtime, resolve_device

    try:
        device = resolve_device(settings.embedding_device, settings.embedding_runtime)
    except RuntimeError as exc:
        say(f"embeddings: {exc}")
        raise SystemExit(2) from exc
    say(f"embeddings: {settings.embedding_model} via {describe_runtime(settings)} on {device}")


def _stop_child_server(server, name: str, quiet: bool = False) -> None:  # type: ignore[no-untyped-def]
    server.stop()
    if not quiet:
        say(f"{name} stopped")


def start_flow_server(settings: Settings, stack: Stack) -> None:
    """`grove serve` as a child: the flows as deployments, runnable from the UI."""
    pid_file = run_dir(settings) / "serve.pid"
    take_over(pid_file, "served flows", False, stack, quiet=False)
    child = ChildProcess("served flows", [sys.executable, "-m", "grove.app.cli", "serve"],
                         env=child_environment(settings), pid_file=pid_file,
                         log_file=settings.data_dir / "logs" / "serve.log")
    child.start()
    stack.exit.callback(_stop_child_server, child, "served flows")
    keep_running("served flows", child, stack)


def start_worker(settings: Settings, stack: Stack) -> None:
    """`grove work` as a child at a lower CPU priority: indexing never slows the answers."""
    pid_file = run_dir(settings) / "worker.pid"
    take_over(pid_file, "worker", False, stack, quiet=False)
    child = ChildProcess("worker", [sys.executable, "-m", "grove.app.cli", "work"],
                         env=child_environment(settings),
                         pid_file=pid_file, nice=settings.background_nice,
                         log_file=settings.data_dir / "logs" / "worker.log")
    child.start()
    stack.exit.callback(_stop_child_server, child, "worker")
    keep_running("worker", child, stack)


def _sigterm_as_interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def up(settings: Settings, *, console: bool | None = None) -> int:
    """Run the whole service in the foreground until Ctrl-C; `settings` as the command line read them,
    each server it starts or finds adding its URL."""
    signal.signal(signal.SIGTERM, _sigterm_as_interrupt)
    # Ctrl-C stops the service even when it was started with SIGINT ignored — which a shell does
    # to every background job (`grove up &`, a CI step run in the background): Python then
    # installs no KeyboardInterrupt handler of its own, and SIGINT would do nothing at all.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    # `kill -USR1` prints every thread's stack: a stop that hangs can be read, not guessed at.
    faulthandler.register(signal.SIGUSR1, all_threads=True)
    # Prefect's client state (profiles, results) lives with the rest of the project data.
    os.environ.setdefault("PREFECT_HOME", str(settings.prefect_home))
    stack = Stack()
    began = time.monotonic()
    warming: threading.Thread | None = None
    with stack.exit:
        try:
            claim_up(settings, stack)
            settings = start_store(settings, stack)
            settings = start_prefect(settings, stack)
            settings = start_llm(settings, stack)
            announce_embeddings(settings)
            start_worker(settings, stack)
            start_flow_server(settings, stack)
            say(f"ready in {time.monotonic() - began:.1f} s")
            warming = warm.start()  # grove/app/warm.py
            if settings.bot_token and not console:
                run_bot(settings)
            else:
                if not settings.bot_token:
                    say("TELEGRAM_BOT_TOKEN is not set, so the Telegram bot is off. "
                        "The local console below drives the same flows.")
                # The console shows replies; flow-run logs stay in the Prefect UI.
                os.environ["PREFECT_LOGGING_HANDLERS_CONSOLE_LEVEL"] = "WARNING"
                from grove.channels.console import run_console
                from grove.app.dispatch import process

                run_console(settings, process)
        except KeyboardInterrupt:
            pass
        shutdown.request()  # turns in flight end now and run again at the next start
        say("stopping …")
    if warming is not None:
        warm.settle(warming)
    leave_within(EXIT_GRACE_SECONDS)
    return 0


EXIT_GRACE_SECONDS = 20.0


def leave_within(seconds: float) -> None:
    """Once everything is stopped, the interpreter still joins every non-daemon thread; one stuck on
    a dead socket would keep `grove up` from ever exiting, and the user would need `kill -9`. After
    `seconds` the process leaves anyway, naming the threads and printing their stacks (stderr), so
    the cause can be read. Nothing is lost by it: turns not finished are in the inbox and resume."""

    def force() -> None:
        time.sleep(seconds)
        stuck = [t.name for t in threading.enumerate()
                 if not t.daemon and t is not threading.main_thread() and t.is_alive()]
        say(f"still stopping after {seconds:.0f} s (threads: {', '.join(stuck) or 'none'}); leaving now")
        faulthandler.dump_traceback(all_threads=True)
        sys.stdout.flush()
        os._exit(0)

    threading.Thread(target=force, name="exit-deadline", daemon=True).start()


def run_bot(settings: Settings) -> None:
    """Long polling by default; a webhook when GROVE_TELEGRAM_WEBHOOK_URL is set.

    Before taking new updates, replies and updates a crash left behind are finished. The one sender
    (a Bot on its own event loop, `nodes.telegram.api.LoopBot`) is made here and handed to the turns.
    """
    from nodes.telegram.reply import opened

    with opened(settings) as sender:
        _run_bot(settings, sender)


def _run_bot(settings: Settings, sender: Sender) -> None:

    from grove.channels.bot import ALLOWED_UPDATES, build_application, parse_stored, webhook_options
    from grove.core.messages import IncomingUpdate
    from grove.app.dispatch import Dispatcher
    from grove.store import inbox

    dispatcher = Dispatcher(sender, workers=settings.workers, parse=parse_stored)
    inbox.forget_older_than(settings.inbox_keep_days)
    if settings.dispatch == "prefect":  # turns run on Prefect's task workers (grove/app/engine.py)
        from grove.app import engine

        from grove.app.dispatch import deliver
        from grove.store import outbox

        delivered, resumed = deliver(outbox.unsent(), sender), engine.sweep(unclaimed_seconds=0)
        threading.Thread(target=engine.sweep_forever, args=(dispatcher.stopping,), name="lane-sweeper",
                         daemon=True).start()
        submit: Callable[[IncomingUpdate], object] = engine.Receiver()
        say("turns and indexing run on Prefect task workers (`grove work`, GROVE_DISPATCH=prefect)")
    else:
        delivered, resumed = dispatcher.recover()
        submit = dispatcher.submit
    if delivered or resumed:
        say(f"after the last stop: {delivered} replies delivered, {resumed} updates resumed")
    dispatcher.start()
    from grove.store import stops

    # A «Стоп» for an answer streaming on a task worker goes to the workers (grove/store/stops.py).
    from flows.handle_update import MENU

    application = build_application(settings, submit, stops.announce if settings.dispatch == "prefect" else None,
                                    commands=MENU)
    allowed_updates = ALLOWED_UPDATES
    stop_signals = (signal.SIGINT, signal.SIGTERM)
    try:
        if settings.telegram_webhook_url:
            say(f"Telegram bot on webhook {settings.telegram_webhook_url}")
            application.run_webhook(**webhook_options(settings), allowed_updates=allowed_updates,
                                    stop_signals=stop_signals)
        else:
            say("Telegram bot polling for updates")
            application.run_polling(
                allowed_updates=allowed_updates,
                timeout=settings.telegram_poll_timeout,
                stop_signals=stop_signals,
            )
    finally:
        shutdown.request()  # a turn waiting on the model ends now, rolled back: it runs again next start
        dispatcher.stop(timeout=5)  # unfinished turns stay in the inbox and resume next start
