"""The `grove` command line."""

from __future__ import annotations

import argparse
import logging
import os
import sys
from typing import TYPE_CHECKING

from grove.core.settings import Settings, get_settings

if TYPE_CHECKING:
    from grove.infra.postgres_server import EmbeddedPostgres


def _cmd_up(args: argparse.Namespace, settings: Settings) -> int:
    from grove.app.runtime import up

    return up(settings, console=args.console)


def _cmd_serve(args: argparse.Namespace, settings: Settings) -> int:
    from grove.app.serve import serve_flows

    serve_flows()
    return 0


def _cmd_work(args: argparse.Namespace, settings: Settings) -> int:
    """The worker against DATABASE_URL: the indexing jobs; with GROVE_DISPATCH=prefect a Prefect
    task worker running the turns and the indexing of any user (grove/app/engine.py)."""
    from grove.store.db import prepare_database

    prepare_database()
    if settings.dispatch == "prefect":
        from grove.app.engine import serve_lanes

        serve_lanes()
    else:
        from grove.app.worker import work_forever

        work_forever()
    return 0


def _cmd_console(args: argparse.Namespace, settings: Settings) -> int:
    """Console against an already running store/Prefect (DATABASE_URL, PREFECT_API_URL)."""
    from grove.channels.console import run_console
    from grove.store.db import prepare_database
    from grove.app.dispatch import process

    prepare_database()
    run_console(settings, process)
    return 0


def _cmd_ingest(args: argparse.Namespace, settings: Settings) -> int:
    from grove.app.ingest_cli import run_ingest

    return run_ingest(settings, args.sources, args.user, args.culture)


def _cmd_ask(args: argparse.Namespace, settings: Settings) -> int:
    from grove.app.ask_cli import run_ask

    return run_ask(settings, args.question, args.user, args.verbose_fragments)


def _embedded(settings: Settings) -> EmbeddedPostgres:
    from grove.infra.postgres_server import EmbeddedPostgres

    return EmbeddedPostgres(
        root=settings.pg_data_dir, port=settings.pg_port, system_user=settings.pg_system_user
    )


def _cmd_db(args: argparse.Namespace, settings: Settings) -> int:
    from grove.store.db import apply_migrations, check_embedding_dim, redact

    if args.action == "start":
        url = _embedded(settings).start()
        print(url if args.show_url else redact(url))
    elif args.action == "stop":
        _embedded(settings).stop()
    elif args.action == "status":
        print("running" if _embedded(settings).is_running() else "stopped")
    elif args.action == "url":
        print(settings.database_url or _embedded(settings).url)
    elif args.action == "migrate":
        url = settings.database_url or _embedded(settings).start()
        applied = apply_migrations(url)
        check_embedding_dim(url, settings.embedding_dim)
        print(f"applied: {', '.join(applied) or 'nothing (up to date)'}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="grove", description="Telegram knowledge-base assistant")
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("up", help="start Postgres, Prefect, the served flows and the bot")
    p.add_argument("--console", action="store_true", help="local console even if a bot token is set")
    p.set_defaults(func=_cmd_up)

    p = sub.add_parser("serve", help="serve the flows as deployments (needs PREFECT_API_URL)")
    p.set_defaults(func=_cmd_serve)

    p = sub.add_parser("work", help="run background jobs (indexing) — with GROVE_DISPATCH=prefect, turns too; `grove up` starts one")
    p.set_defaults(func=_cmd_work)

    p = sub.add_parser("console", help="talk to the flows from the terminal")
    p.set_defaults(func=_cmd_console, person_facing=True)

    p = sub.add_parser("ingest", help="index files and links into a user's base")
    p.add_argument("sources", nargs="+", metavar="PATH_OR_URL")
    p.add_argument("--user", type=int, default=None, help="owner (default: the console user)")
    p.add_argument("--culture", default=None, help="subcategory for consultation tier 2")
    p.set_defaults(func=_cmd_ingest, person_facing=True)

    p = sub.add_parser("ask", help="ask a question as in «Чат» mode")
    p.add_argument("question")
    p.add_argument("--user", type=int, default=None, help="whose base and history (default: console user)")
    p.add_argument("--verbose", dest="verbose_fragments", action="store_true",
                   help="also print the retrieved fragments with their scores")
    p.set_defaults(func=_cmd_ask, person_facing=True)

    p = sub.add_parser("db", help="the embedded Postgres and migrations")
    p.add_argument("action", choices=["start", "stop", "status", "url", "migrate"])
    p.add_argument("--show-url", action="store_true", help="print the URL with its password")
    p.set_defaults(func=_cmd_db)
    return parser


def _log_handler(args: argparse.Namespace, settings: Settings) -> logging.Handler:
    """Where log lines go. A person at the local console (`grove up` without a bot token,
    `grove console`, `ask`, `ingest`) reads grove's own sentences, never log lines: those go to
    `<data>/logs/grove.log`. A service (`grove up` with the bot, `serve`, `work`) logs to stderr,
    where its operator or service manager collects it; `--verbose` always does."""
    console = getattr(args, "person_facing", False) or (
        args.func is _cmd_up and (args.console or not settings.bot_token))
    if args.verbose or not console:
        return logging.StreamHandler()
    folder = settings.data_dir / "logs"
    folder.mkdir(parents=True, exist_ok=True)
    return logging.FileHandler(folder / "grove.log", encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    # grove's own start-up lines are not flow-run logs: Prefect must not warn about them to the user.
    os.environ.setdefault("PREFECT_LOGGING_TO_API_WHEN_MISSING_FLOW", "ignore")
    args = build_parser().parse_args(argv)
    settings = get_settings()  # read once here, handed to the command
    level = logging.DEBUG if args.verbose else logging.WARNING
    logging.basicConfig(level=level, format="%(asctime)s %(levelname)s %(name)s: %(message)s",
                        handlers=[_log_handler(args, settings)])
    # Prefect prints run logs with its own handler; the root handler must not repeat them.
    for handler in logging.getLogger().handlers:
        handler.setLevel(level)
    if args.func is not _cmd_db:  # every command that runs the flows: a misspelt plug-in stops it at once
        from grove.app.runtime import check_plugin_settings

        check_plugin_settings(settings)
    return int(args.func(args, settings) or 0)


if __name__ == "__main__":
    sys.exit(main())
