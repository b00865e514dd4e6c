"""Running grove's real bot (python-telegram-bot) against the Bot API stand-in."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from telegram.ext import Application

from grove.bot import build_application, inline_dispatch
from grove.dispatch import flow_runner
from grove.settings import get_settings


def new_bot() -> Application:
    """A fresh Application, as a new bot process would build it."""
    settings = get_settings().model_copy(update={"telegram_poll_timeout": 1})
    return build_application(settings, inline_dispatch(flow_runner()))


@asynccontextmanager
async def running(app: Application) -> AsyncIterator[Application]:
    async with app:
        await app.start()
        await app.updater.start_polling(poll_interval=0.0, timeout=1)
        try:
            yield app
        finally:
            await app.updater.stop()
            await app.stop()
