"""The main flow's routes: which handler answers which update, read from the table alone
(no store, no Telegram) — the order of `ROUTES` is the routing."""

from __future__ import annotations

import pytest

from flows.handle_update import MODE_BRANCHES, ROUTES, route
from grove.core.messages import IncomingUpdate
from nodes.store.user_state import MODES


def _update(**fields: object) -> IncomingUpdate:
    return IncomingUpdate(user_id=7, chat_id=7, **fields)  # type: ignore[arg-type]


@pytest.mark.parametrize(("fields", "expected"), [
    ({"text": "Проверь в базе: полив", "chat_type": "supergroup"}, "group"),
    ({"command": "clean_base", "chat_type": "group"}, "group"),  # a group's first: no personal base there
    ({"text": "исправленный текст", "edited": True, "message_id": 5}, "edited"),
    ({"command": "clean_base"}, "clean-base"),
    ({"callback_data": "clean_base:yes:token"}, "clean-base"),
    ({"command": "moderation"}, "moderation"),
    ({"callback_data": "mod:approve:3"}, "moderation"),
    ({"command": "clean_chat"}, "clean-chat"),
    ({"callback_data": "clean_chat"}, "clean-chat"),
    ({"command": "help"}, "help"),
    ({"callback_data": "culture:Клубника"}, "culture"),
    ({"callback_data": "index_offer:yes:token"}, "index-offer"),
    ({"command": "start"}, "mode-switch"),
    ({"command": "menu"}, "mode-switch"),
    ({"callback_data": "chat"}, "mode-switch"),
    ({"callback_data": "documents"}, "mode-switch"),
    ({"callback_data": "stale-button-from-an-old-version"}, "mode-switch"),  # answered «кнопка устарела»
    ({"text": "Как поливать берёзу?"}, "message"),
    ({"command": "unknown_command"}, "message"),
])
def test_each_update_goes_to_its_route(fields: dict[str, object], expected: str) -> None:
    assert route(_update(**fields)).name == expected


def test_every_update_has_a_route_and_every_mode_a_branch() -> None:
    assert ROUTES[-1].matches(_update())  # the last route takes whatever is left
    assert len({r.name for r in ROUTES}) == len(ROUTES)
    assert set(MODE_BRANCHES) == set(MODES)
