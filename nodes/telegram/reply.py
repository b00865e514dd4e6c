"""Telegram reply node: the one way grove talks back to a user.

Flows and handlers *return* their replies; the turn that ran them (`grove.app.dispatch.process`),
a background job's end, and a failed turn's apology hand them to `send_reply` — the one
sender. On the `telegram` origin a reply made inside a turn goes to the outbox (it is sent
after the turn commits, see `grove.store.outbox`); outside a turn it is sent at once. On
the `console` origin it prints, so the local console drives the same flows.
The Bot API is handed in: each process's entry point builds one `Sender` around a `BotApi`
(`nodes.telegram.api`) and hands it to what it runs, down to the handlers that show a toast,
«печатает…» or a streamed draft.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import partial
from typing import TypeVar

from telegram import InlineKeyboardButton, InlineKeyboardMarkup
from telegram.error import BadRequest, Forbidden, NetworkError, RetryAfter, TimedOut

from grove.store import jobs, outbox
from grove.core.messages import Origin, Reply
from grove.core.observe import task
from grove.core.settings import Settings
from nodes.telegram.api import TELEGRAM_TEXT_LIMIT, BotApi, LoopBot, retry_after_seconds, split_text
from nodes.telegram.html import markdown_html, plain
from nodes.telegram.stream import BotDrafts

log = logging.getLogger(__name__)

T = TypeVar("T")

__all__ = ["CONSOLE", "TELEGRAM_TEXT_LIMIT", "Sender", "opened", "send_replies", "send_reply", "sender_for", "split_text"]


def _markup(reply: Reply) -> InlineKeyboardMarkup | None:
    if not reply.buttons:
        return None
    return InlineKeyboardMarkup(
        [[InlineKeyboardButton(b.label, callback_data=b.data) for b in row] for row in reply.buttons]
    )


def _print_reply(reply: Reply) -> None:
    print(f"\n🤖 {plain(reply.text) if reply.markdown else reply.text}")
    for row in reply.buttons:
        print("   " + "  ".join(f"[{b.label}]" for b in row))


@task(name="send-reply")
def send_reply(origin: Origin, reply: Reply, sender: Sender | None = None,
               source: outbox.Source | None = None) -> list[int]:
    """Send one reply (split at Telegram's 4096-char limit); returns the sent message ids.

    In a turn with an outbox (an update from the inbox, a job: `source`) the reply is queued there
    and delivered once the turn commits (`outbox.committed`); the ids are then known only to the
    outbox. Without one it is sent at once by `sender`.
    """
    if origin == "console":  # a turn says its replies once it has committed (`grove.app.dispatch.process`)
        _print_reply(reply)
        return []
    if source is not None:
        row = outbox.add(reply.chat_id, reply.model_dump(mode="json"), source, edit_of=reply.edits_reply)
        if reply.acknowledges_job is not None:  # the job's progress and result edit this message
            jobs.set_ack(reply.acknowledges_job, row)
        return []
    return (sender or CONSOLE).send_now(reply)


def send_replies(origin: Origin, replies: list[Reply], sender: Sender | None = None,
                 source: outbox.Source | None = None) -> None:
    """Send a turn's replies, in order, through `send_reply`."""
    for reply in replies:
        send_reply(origin, reply, sender, source)


class Sender:
    """What a process says to Telegram with, built once by its entry point around a `BotApi`.

    It delivers outbox rows (`deliver_row`, the outbox's `Sender`), sends at once when the store is
    down (`send_now`), and gives a turn its views of the chat: a button's toast, «печатает…», the
    draft an answer is streamed into, a progress edit, a file's bytes. With no `api` (the console,
    a process without a bot token) the views do nothing and sending raises.
    """

    def __init__(self, api: BotApi | None = None) -> None:
        self.api = api

    def __repr__(self) -> str:
        return f"Sender({self.api!r})"

    @property
    def bot(self) -> BotApi:
        if self.api is None:
            raise RuntimeError("TELEGRAM_BOT_TOKEN is not set: cannot reply over Telegram")
        return self.api

    def deliver_row(self, row: outbox.OutboxRow, sent: Callable[[int], None]) -> None:
        """Send an outbox row: the pieces not sent yet, or an edit.

        Telegram's flood control (`retry_after`) is waited out; network errors are retried a
        few times; a refusal for good (chat not found, bot blocked) raises `Undeliverable`.
        """
        reply = Reply.model_validate(row.payload)
        pieces = split_text(reply.text)
        start = row.pieces_sent
        target = row.edit_message_id or reply.replaces_message_id
        if target is not None and start == 0 and self._edited(reply, target, pieces):
            sent(target)
            start = 1  # a streamed draft became the first piece; the rest follow as new messages
        for index in range(start, len(pieces)):
            markup = _markup(reply) if index == len(pieces) - 1 else None
            text, mode = _formatted(reply, pieces[index])
            try:
                message = self._with_retries(partial(self.bot.send_message, reply.chat_id, text, parse_mode=mode,
                                                             reply_markup=markup))
            except outbox.Undeliverable as exc:
                if not (reply.markdown and "entities" in str(exc).lower()):
                    raise
                log.warning("Telegram refused the converted HTML (%s): sending the piece as plain text", exc)
                text, mode = plain(pieces[index]), None
                message = self._with_retries(partial(self.bot.send_message, reply.chat_id, text, parse_mode=mode,
                                                             reply_markup=markup))
            sent(message.message_id)

    def _edited(self, reply: Reply, message_id: int, pieces: list[str]) -> bool:
        """The first piece edited into ``message_id`` (an earlier message or a streamed draft); False:
        it could not be, and the reply goes as new messages."""
        markup = _markup(reply) if len(pieces) == 1 else None
        text, mode = _formatted(reply, pieces[0])
        for attempt, parse_mode in ((text, mode), (plain(pieces[0]), None)) if reply.markdown else ((text, mode),):
            try:
                self._with_retries(partial(self.bot.edit_message_text, attempt, chat_id=reply.chat_id,
                                           message_id=message_id, parse_mode=parse_mode, reply_markup=markup))
                return True
            except outbox.Undeliverable as exc:
                if "not modified" in str(exc):
                    return True
                if "entities" not in str(exc).lower():
                    log.info("cannot edit message %s (%s): sending the reply as a new message", message_id, exc)
                    return False
                log.warning("Telegram refused the converted HTML (%s): editing in plain text", exc)
        return False

    @staticmethod
    def _with_retries(action: Callable[[], T], attempts: int = 4) -> T:
        """One Bot API call: flood control waited out, network errors retried, refusals final."""
        delay = 1.0
        for attempt in range(attempts):
            try:
                return action()
            except RetryAfter as exc:
                wait = retry_after_seconds(exc)
                log.warning("Telegram flood control: waiting %.1f s", wait)
                time.sleep(wait + 0.1)
            except (BadRequest, Forbidden) as exc:
                raise outbox.Undeliverable(str(exc)) from exc
            except (TimedOut, NetworkError, TimeoutError) as exc:
                if attempt == attempts - 1:
                    raise
                log.warning("Telegram call failed (%s), retrying in %.0f s", exc, delay)
                time.sleep(delay)
                delay *= 3
        return action()

    def send_now(self, reply: Reply) -> list[int]:
        """Send at once, bypassing the outbox: outside a turn, or when the store itself is down."""
        ids: list[int] = []
        self.deliver_row(outbox.OutboxRow(id=0, chat_id=reply.chat_id, payload=reply.model_dump(mode="json"),
                                          edit_message_id=None, pieces_sent=0), ids.append)
        return ids

    def edit_text(self, chat_id: int, message_id: int, text: str) -> bool:
        """Best-effort edit of a message already sent (progress); False when Telegram refused."""
        try:
            self._with_retries(lambda: self.bot.edit_message_text(split_text(text)[0], chat_id=chat_id,
                                                                  message_id=message_id), attempts=2)
            return True
        except Exception as exc:  # noqa: BLE001 - progress must never break the work
            log.info("progress edit of message %s failed: %s", message_id, exc)
            return False

    def answer_callback(self, origin: Origin, callback_id: str | None, text: str | None = None) -> None:
        """Stop the button's loading spinner in the client; best effort (an old query cannot be answered)."""
        if origin != "telegram" or not callback_id or self.api is None:
            return
        try:
            self.api.answer_callback_query(callback_id, text=text)
        except Exception as exc:  # noqa: BLE001 - the press is handled whether or not the spinner stops
            log.info("could not answer callback query %s: %s", callback_id, exc)

    @contextmanager
    def typing(self, origin: Origin, chat_id: int, every: float = 4.0, after: float = 1.0) -> Iterator[None]:
        """Keep "typing…" visible for the whole of a long step (Telegram shows it ~5 s per call).

        Nothing is sent for a step that ends within `after` seconds: the answer itself is the
        sign of life then, and a burst of quick turns does not cost a Bot API call each.
        """
        api = self.api
        if origin != "telegram" or api is None:
            yield
            return
        stop = threading.Event()

        def keep_typing() -> None:
            if stop.wait(after):
                return
            while not stop.is_set():
                try:
                    api.send_chat_action(chat_id, "typing")
                except Exception:  # noqa: BLE001 - an indicator must not break the work
                    pass
                stop.wait(every)

        thread = threading.Thread(target=keep_typing, name="typing", daemon=True)
        thread.start()
        try:
            yield
        finally:
            stop.set()
            thread.join(2)

    def drafts(self) -> BotDrafts | None:
        """The calls a streamed draft makes (`nodes.telegram.stream`); None: nothing can be streamed."""
        return BotDrafts(self.api) if self.api is not None else None


CONSOLE = Sender()
"""The sender of a process that talks to no Telegram: the console, and tests of the store alone."""


def sender_for(settings: Settings) -> Sender:
    """An entry point's sender: its own `LoopBot` when a bot token is set, else `CONSOLE`."""
    return Sender(LoopBot.open(settings)) if settings.bot_token else CONSOLE


@contextmanager
def opened(settings: Settings) -> Iterator[Sender]:
    """`sender_for` for a block: its Bot is closed when the block ends."""
    sender = sender_for(settings)
    try:
        yield sender
    finally:
        if isinstance(sender.api, LoopBot):
            sender.api.close()


def _formatted(reply: Reply, piece: str) -> tuple[str, str | None]:
    """A piece as sent: a model's Markdown becomes Telegram HTML (split first, so no tag is cut)."""
    if reply.markdown:
        return markdown_html(piece), "HTML"
    return piece, reply.parse_mode
