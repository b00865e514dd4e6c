"""Running grove's real bot (python-telegram-bot) against the Bot API stand-in.

`new_bot()` builds what `grove up` runs: the Application whose update queue stores each
update in the inbox, and the dispatcher running turns in per-user lanes. `running(app)`
recovers what a previous "process" left, polls, and on exit stops polling and lets the
turns in flight finish. With `worker=True` a background job worker runs in a thread
(production runs it as its own process).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from telegram.ext import Application

from flows.handle_update import MENU
from grove.channels.bot import ALLOWED_UPDATES, build_application, parse_stored
from grove.app.dispatch import Dispatcher
from grove.core.settings import get_settings
from grove.app.worker import JobWorker
from nodes.telegram.api import LoopBot
from nodes.telegram.reply import Sender
from tests.support.telegram_standin import TelegramStandin


def new_bot(**dispatcher: Any) -> Application:
    """A fresh Application and dispatcher with its sender, as a new bot process would build them
    (`running` closes the sender's Bot)."""
    settings = get_settings().model_copy(update={"telegram_poll_timeout": 1})
    sender = Sender(LoopBot.open(settings))
    turns = Dispatcher(sender, parse=parse_stored, **dispatcher)
    app = build_application(settings, turns.submit, commands=MENU)
    app.bot_data["dispatcher"] = turns
    return app


def dispatcher_of(app: Application) -> Dispatcher:
    return app.bot_data["dispatcher"]


@asynccontextmanager
async def running(app: Application, *, worker: bool = False) -> AsyncIterator[Application]:
    turns = app.bot_data.get("dispatcher")  # absent for a plain PTB app (the stand-in's own tests)
    if turns is not None:
        await asyncio.to_thread(turns.recover)
        turns.start()
    jobs = JobWorker(turns.sender, poll=0.2).start() if worker else None  # a worker shares the bot's sender
    try:
        async with app:
            if app.post_init is not None:  # run_polling / run_webhook call it after initialize()
                await app.post_init(app)
            await app.start()
            await app.updater.start_polling(poll_interval=0.0, timeout=1, allowed_updates=ALLOWED_UPDATES)
            try:
                yield app
            finally:
                await app.updater.stop()
                await app.stop()
    finally:
        if turns is not None:
            await asyncio.to_thread(turns.stop, 30)
        if jobs is not None:
            await asyncio.to_thread(jobs.stop, 30)
        if turns is not None and isinstance(turns.sender.api, LoopBot):
            await asyncio.to_thread(turns.sender.api.close)


async def choose_chat(standin: TelegramStandin, user_id: int) -> None:
    """/start, then the «Чат» button: the user's messages are questions from now on."""
    standin.send_text(user_id, "/start")
    await standin.wait_for_bot_messages_async(user_id, 1)
    standin.press_button(user_id, "chat")
    await standin.wait_for_bot_messages_async(user_id, 2)
