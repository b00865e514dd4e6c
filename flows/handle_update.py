"""The main workflow: every Telegram (or console) update becomes one run of this flow.

It reads the update and picks its handler from `ROUTES`, like the seed's n8n main workflow:
commands and button presses → their handlers (the mode switch among them); messages → the
user's mode, Чат or База (`flows/handlers/message.py`). Every handler *returns* its replies and
sends nothing: the turn around it (`grove.app.dispatch.process`) hands them to the one sender
(`nodes.telegram.reply.send_reply`), into the outbox of the turn's one transaction, delivered
after commit.
"""

from __future__ import annotations

from typing import Any

from flows.handlers import clean_base, clean_chat, culture, edited, group, help_page, index_offer, message, my_base
from flows.mode_switch import mode_switch
from flows.moderation import moderation
from flows.routing import Route, button, command, either, menu
from grove.core.messages import Command, IncomingUpdate, Reply
from grove.core.observe import flow
from nodes.telegram.reply import Sender

MENU_COMMANDS = {"start", "menu", "reset", "mode"}
MODE_BRANCHES = message.MODE_BRANCHES


RUN_NAME_CHARS = 40
"""Characters of what the user said that a run's name carries, so ops tell turns apart in a list."""


def run_name(parameters: dict[str, Any]) -> str:
    """Name runs after what happened, who did it and a short cut of what they said, e.g.
    `cmd-start-user42` or `text-user42 · как обрезать малину осенью…`."""
    update = parameters.get("update")
    if isinstance(update, dict):
        update = IncomingUpdate.model_validate(update)
    if not isinstance(update, IncomingUpdate):
        return "update"
    name = f"{update.kind}-user{update.user_id}"
    said = update.text or update.callback_data or next(
        (a.file_name for a in update.attachments if a.file_name), None)
    if said and not update.command:
        said = " ".join(said.split())
        if len(said) > RUN_NAME_CHARS:  # cut at a word when one ends in the second half
            cut = said[:RUN_NAME_CHARS]
            said = (cut.rsplit(" ", 1)[0] if cut.rfind(" ") > RUN_NAME_CHARS // 2 else cut) + "…"
        name += " · " + said
    return name


# In order: a group's first (never a personal base there), an edit before what it edits,
# then commands and buttons, and last the user's mode. A button nothing else claims goes
# to the mode switch, which says it is stale and shows the menu.
ROUTES: tuple[Route, ...] = (
    Route("group", lambda update: update.in_group, group.group_message),
    Route("edited", lambda update: update.edited, edited.edited_message),
    Route("clean-base", either(command("clean_base"), button("clean_base")), clean_base.clean_base,
          Command(name="clean_base", menu="Удалить мою базу документов", help="удалить базу", position=4)),
    Route("moderation", either(command("moderation"), button("mod:")), moderation,
          Command(name="moderation", menu="Очередь ответов на модерацию", help="очередь модерации", position=9,
                  admin=True)),
    Route("clean-chat", either(command("clean_chat"), button("clean_chat", exact=True)), clean_chat.clean_chat_history,
          Command(name="clean_chat", menu="Очистить историю чата", help="очистить историю", position=3)),
    Route("my-base", command("base"), my_base.show_base,
          Command(name="base", menu="Что в моей базе", help="что в базе", position=5)),
    Route("help", command("help"), help_page.show_help(lambda: MENU),
          Command(name="help", menu="Что я умею и какие есть ограничения", help="эта справка", position=2)),
    Route("culture", button("culture:"), culture.culture_button),
    Route("index-offer", button("index_offer:"), index_offer.index_offer),
    Route("mode-switch", either(command(*MENU_COMMANDS), lambda update: update.callback_data is not None),
          mode_switch, Command(name="start", menu="Выбрать режим: Чат или База", help="режим", position=1)),
    Route("message", lambda update: True, message.by_mode),
)
MENU: tuple[Command, ...] = menu(ROUTES)
"""The commands users see in Telegram's menu and in /help (admins' chats also list the admin ones)."""


def route(update: IncomingUpdate) -> Route:
    return next(r for r in ROUTES if r.matches(update))


@flow(name="handle-update", flow_run_name=run_name)
def handle_update(update: IncomingUpdate, sender: Sender) -> list[Reply]:
    """Route one update (`ROUTES`); returns the replies, which the turn sends. `sender`: the process's
    one sender, for the views a handler shows while it works (it sends no reply)."""
    return route(update).handle(update, sender)
