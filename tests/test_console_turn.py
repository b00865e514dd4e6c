"""A console turn says its replies once its writes are committed, as the outbox does for Telegram
(`grove.app.dispatch.process`): printed mid-turn, «Режим «Чат» включён» could be read and the console
closed before the mode was stored."""

from __future__ import annotations

import psycopg
import pytest

import flows.handle_update
import nodes.telegram.reply
from flows import texts
from flows.routing import Route
from grove.app.dispatch import process
from grove.core.messages import IncomingUpdate, Reply
from nodes.store.user_state import set_user_mode
from nodes.telegram.reply import Sender


def console(user_id: int, **fields: object) -> IncomingUpdate:
    return IncomingUpdate(origin="console", user_id=user_id, chat_id=user_id, **fields)  # type: ignore[arg-type]


def stored_mode(url: str, user_id: int) -> str | None:
    """The mode as another connection sees it: only what was committed."""
    with psycopg.connect(url) as conn:
        row = conn.execute("select current_mode from user_state where user_id = %s", (user_id,)).fetchone()
    return row[0] if row else None


def test_a_console_reply_is_printed_after_the_turn_committed(store: str, user_id: int,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    printed: list[tuple[str, str | None]] = []
    monkeypatch.setattr(nodes.telegram.reply, "_print_reply",
                        lambda reply: printed.append((reply.text, stored_mode(store, user_id))))
    process(console(user_id, command="start"))
    process(console(user_id, callback_data="chat"))
    said, mode_then = printed[-1]
    assert said.startswith("Режим «Чат» включён") and mode_then == "chat"


def test_a_failed_console_turn_prints_only_its_apology_and_keeps_nothing(
        store: str, user_id: int, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    def stores_then_fails(update: IncomingUpdate, sender: Sender) -> list[Reply]:
        set_user_mode.fn(update.user_id, update.chat_id, "documents")
        raise RuntimeError("the handler broke after writing")

    monkeypatch.setattr(flows.handle_update, "route", lambda update: Route("broken", lambda u: True, stores_then_fails))
    with pytest.raises(RuntimeError):
        process(console(user_id, text="привет"))
    assert capsys.readouterr().out == f"\n🤖 {texts.INTERNAL_ERROR}\n"
    assert stored_mode(store, user_id) is None  # the write went with the turn
