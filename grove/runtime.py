"""`grove up`: start what is missing (Postgres, Prefect), serve the flows, run the bot.

Everything this process starts it also stops, in reverse order, on Ctrl-C or
SIGTERM: bot → served flows → Prefect server → Postgres. Services given from
outside (DATABASE_URL, PREFECT_API_URL) are used and left alone.
"""

from __future__ import annotations

import logging
import os
import signal
import sys
import time
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from grove.db import prepare_database, redact
from grove.postgres_server import EmbeddedPostgres
from grove.child_process import ChildProcess
from grove.prefect_server import PrefectServer
from grove.settings import Settings, get_settings, reset_settings

log = logging.getLogger("grove")


def say(message: str) -> None:
    print(f"grove: {message}", flush=True)


@dataclass
class Stack:
    """What `up` started, for an orderly stop."""

    exit: ExitStack = field(default_factory=ExitStack)
    timings: dict[str, float] = field(default_factory=dict)


def start_store(settings: Settings, stack: Stack, *, quiet: bool = False) -> str:
    """Embedded Postgres unless DATABASE_URL is set; then migrations and the width check.

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
        if not already:
            stack.exit.callback(_stop_postgres, server, quiet)
        if not quiet:
            say(f"embedded Postgres on 127.0.0.1:{settings.pg_port}, data in {server.data_dir}")
    os.environ["DATABASE_URL"] = url
    reset_settings()
    applied = prepare_database(get_settings())
    if not quiet:
        say(f"migrations: {len(applied)} applied" if applied else "migrations: up to date")
    stack.timings["postgres"] = time.monotonic() - started
    return url


def _stop_postgres(server: EmbeddedPostgres, quiet: bool = False) -> None:
    from grove.db import close_pool

    close_pool()
    server.stop()
    if not quiet:
        say("Postgres stopped")


def start_prefect(settings: Settings, stack: Stack, *, reuse: bool = False, quiet: bool = False) -> str:
    """PREFECT_API_URL if set; else (reuse) a local server already up; else start one."""
    started = time.monotonic()
    local = PrefectServer(home=settings.prefect_home, port=settings.prefect_port)
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
    os.environ.setdefault("PREFECT_HOME", str(settings.prefect_home))
    os.environ["PREFECT_API_URL"] = api
    reset_settings()
    stack.timings["prefect"] = time.monotonic() - started
    return api


def _stop_prefect(server: PrefectServer, quiet: bool = False) -> None:
    # Send the last run logs and events while the server still answers; left for interpreter
    # exit, they would be retried against a stopped server and delay the exit.
    from prefect.events.worker import EventsWorker
    from prefect.logging.handlers import APILogWorker

    APILogWorker.drain_all(timeout=10)
    EventsWorker.drain_all(timeout=10)
    server.stop()
    if not quiet:
        say("Prefect server stopped")


def start_llm(settings: Settings, stack: Stack, *, quiet: bool = False) -> None:
    """No API key: serve the local model (llama-cpp-python) and say so."""
    if not settings.uses_local_llm:
        if not quiet:
            say(f"LLM: {settings.llm_model} at {settings.llm_base_url}")
        return
    if settings.local_llm_url:
        if not quiet:
            say(f"LLM: local server at {settings.local_llm_url}")
        return
    from grove.llm_server import LocalLLMServer

    server = LocalLLMServer(
        model_path=Path(settings.model_path(settings.local_llm_model)),
        port=settings.local_llm_port,
        log_file=settings.data_dir / "llm" / "server.log",
        context=settings.local_llm_context,
        threads=settings.cpu_threads,
    )
    if server.healthy():
        url = server.base_url
    else:
        if not quiet:
            say(f"no LLM API key: starting the local model {settings.local_llm_model} "
                     "(llama-cpp-python) …")
        url = server.start()
        stack.exit.callback(_stop_child_server, server, "local LLM", quiet)
    os.environ["GROVE_LOCAL_LLM_URL"] = url
    reset_settings()
    if not quiet:
        say(f"LLM: local {settings.local_llm_model} at {url} (offline default)")


def _stop_child_server(server, name: str, quiet: bool = False) -> None:  # type: ignore[no-untyped-def]
    server.stop()
    if not quiet:
        say(f"{name} stopped")


def start_flow_server(stack: Stack) -> None:
    """`grove serve` as a child: the flows as deployments, runnable from the UI."""
    child = ChildProcess("served flows", [sys.executable, "-m", "grove.cli", "serve"],
                         env=dict(os.environ))
    child.start()
    stack.exit.callback(_stop_child_server, child, "served flows")


def _sigterm_as_interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def up(*, console: bool | None = None) -> int:
    """Run the whole service in the foreground until Ctrl-C."""
    settings = get_settings()
    signal.signal(signal.SIGTERM, _sigterm_as_interrupt)
    # Prefect's client state (profiles, results) lives with the rest of the project data.
    os.environ.setdefault("PREFECT_HOME", str(settings.prefect_home))
    stack = Stack()
    began = time.monotonic()
    with stack.exit:
        try:
            start_store(settings, stack)
            start_prefect(get_settings(), stack)
            start_llm(get_settings(), stack)
            start_flow_server(stack)
            settings = get_settings()
            say(f"ready in {time.monotonic() - began:.1f} s")
            if settings.bot_token and not console:
                run_bot(settings)
            else:
                if not settings.bot_token:
                    say("TELEGRAM_BOT_TOKEN is not set, so the Telegram bot is off. "
                        "The local console below drives the same flows.")
                # The console shows replies; flow-run logs stay in the Prefect UI.
                os.environ["PREFECT_LOGGING_HANDLERS_CONSOLE_LEVEL"] = "WARNING"
                from grove.console import run_console

                run_console(settings)
        except KeyboardInterrupt:
            pass
        say("stopping …")
    return 0


def run_bot(settings: Settings) -> None:
    """Long polling by default; a webhook when GROVE_TELEGRAM_WEBHOOK_URL is set."""
    from telegram import Update

    from grove.bot import build_application, inline_dispatch, webhook_options
    from grove.dispatch import deployment_dispatch, flow_runner

    dispatch = (
        deployment_dispatch() if settings.dispatch == "deployment" else inline_dispatch(flow_runner())
    )
    application = build_application(settings, dispatch)
    stop_signals = (signal.SIGINT, signal.SIGTERM)
    if settings.telegram_webhook_url:
        say(f"Telegram bot on webhook {settings.telegram_webhook_url}")
        application.run_webhook(**webhook_options(settings), allowed_updates=Update.ALL_TYPES,
                                stop_signals=stop_signals)
    else:
        say("Telegram bot polling for updates")
        application.run_polling(
            allowed_updates=Update.ALL_TYPES,
            timeout=settings.telegram_poll_timeout,
            stop_signals=stop_signals,
        )
