"""A group or supergroup: nothing personal is read or written there."""

from __future__ import annotations

from flows import texts
from grove.core.messages import IncomingUpdate, Reply
from nodes.telegram.reply import Sender


def group_message(update: IncomingUpdate, sender: Sender) -> list[Reply]:
    """A group or supergroup: personal bases and histories are private, so nothing here reads
    or writes them. Addressed (a mention, a reply to the bot, a command for it), the bot says
    how to continue in private; anything else in the group is not for it and gets no reply."""
    if update.callback_data is not None:
        sender.answer_callback(update.origin, update.callback_id)
        return []
    if not update.addressed or update.edited:  # an edit was answered (or ignored) as first written
        return []
    return [Reply(chat_id=update.chat_id, text=texts.GROUP_GO_PRIVATE)]
