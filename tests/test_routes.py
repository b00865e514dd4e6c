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
    ({"command": "base"}, "my-base"),
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


def test_the_menu_is_the_routes_commands_each_answered_by_its_own_route() -> None:
    from flows.handle_update import MENU

    assert [c.name for c in MENU] == ["start", "help", "clean_chat", "clean_base", "base", "moderation"]
    for listed in MENU:
        assert route(_update(command=listed.name)).menu == listed


def test_matching_reads_no_store(env) -> None:  # type: ignore[no-untyped-def]
    """An admin's plain message is routed to the message handler by the table alone (whether it is a
    corrected answer to a queued one is the handler's question, asked of the store)."""
    env(GROVE_ADMIN_IDS="[7]", DATABASE_URL="postgresql://nobody@127.0.0.1:1/none")
    assert route(_update(text="Исправленный ответ")).name == "message"
