"""Mode-switch flow (seed 001 §4.1): the menu, and the press that picks a branch."""

from __future__ import annotations

from grove.core.observe import flow

from flows import texts
from grove.core.messages import IncomingUpdate, Reply
from nodes.telegram.reply import Sender
from nodes.store.user_state import MODES, set_user_mode


def menu(chat_id: int, text: str = texts.MODE_MENU) -> Reply:
    return Reply(chat_id=chat_id, text=text, buttons=texts.MODE_BUTTONS)


@flow(name="mode-switch", flow_run_name="mode-switch-user{update.user_id}")
def mode_switch(update: IncomingUpdate, sender: Sender) -> list[Reply]:
    """/start shows the menu; a press on «Чат» / «База» stores the mode and confirms it.

    Returns the replies; the turn sends them (`nodes.telegram.reply.send_reply`)."""
    if update.callback_data is None:
        return [menu(update.chat_id)]

    choice = update.callback_data
    if choice not in MODES:
        sender.answer_callback(update.origin, update.callback_id, texts.UNKNOWN_BUTTON_TOAST)
        return [menu(update.chat_id, texts.UNKNOWN_BUTTON)]

    set_user_mode(update.user_id, update.chat_id, choice)
    sender.answer_callback(update.origin, update.callback_id, texts.MODE_TOAST[choice])
    return [Reply(chat_id=update.chat_id, text=texts.MODE_CONFIRMED[choice])]
