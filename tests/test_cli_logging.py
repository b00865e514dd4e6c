"""Where `grove`'s log lines go: never into the console a person reads, always where an operator looks."""

from __future__ import annotations

import logging
from pathlib import Path

from grove.app import cli
from grove.core.settings import get_settings


def handler_for(*argv: str) -> logging.Handler:
    return cli._log_handler(cli.build_parser().parse_args(list(argv)), get_settings())


def test_a_person_at_the_console_reads_no_log_lines(env, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    env(GROVE_DATA_DIR=str(tmp_path), TELEGRAM_BOT_TOKEN="")
    for argv in (["up"], ["up", "--console"], ["console"], ["ask", "вопрос"], ["ingest", "файл.pdf"]):
        handler = handler_for(*argv)
        assert isinstance(handler, logging.FileHandler), argv
        assert Path(handler.baseFilename) == tmp_path / "logs" / "grove.log"
        handler.close()


def test_services_log_to_stderr_for_their_operator(env, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    env(GROVE_DATA_DIR=str(tmp_path), TELEGRAM_BOT_TOKEN="123456:TEST-TOKEN")
    for argv in (["up"], ["serve"], ["work"], ["--verbose", "console"]):
        handler = handler_for(*argv)
        assert type(handler) is logging.StreamHandler, argv
    console = handler_for("up", "--console")  # the console, bot token or not
    assert isinstance(console, logging.FileHandler)
    console.close()
