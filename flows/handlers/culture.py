"""A crop chosen with a button under «не могу определить культуру» (consultation)."""

from __future__ import annotations

from flows import texts
from flows.handlers.message import chat_branch
from flows.mode_switch import menu
from grove.core.domain_profile import active_profile
from grove.core.messages import IncomingUpdate, Reply
from nodes.store.user_state import read_user_state
from nodes.telegram.reply import Sender


def culture_button(update: IncomingUpdate, sender: Sender) -> list[Reply]:
    """A crop chosen with a button under «не могу определить культуру»: answered as if typed."""
    sender.answer_callback(update.origin, update.callback_id)
    state = read_user_state(update.user_id)
    if state is None or state.current_mode != "chat" or active_profile() is None:
        return [menu(update.chat_id, texts.NO_MODE_YET)]
    crop = (update.callback_data or "").split(":", 1)[1]
    return chat_branch(update.model_copy(update={"text": crop, "callback_data": None}), state, sender)
