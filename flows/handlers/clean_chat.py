"""/clean_chat: the history, the consultation state and the topics cleared; a new session begins."""

from __future__ import annotations

from flows import texts
from grove.core.messages import IncomingUpdate, Reply
from nodes.store.chat_history import clean_chat
from nodes.store.consultation_state import clear_state
from nodes.store.topics import close_user_topics
from nodes.store.user_state import start_new_session
from nodes.telegram.reply import Sender


def clean_chat_history(update: IncomingUpdate, sender: Sender) -> list[Reply]:
    sender.answer_callback(update.origin, update.callback_id)
    clean_chat(update.user_id)
    clear_state(update.user_id)
    close_user_topics(update.user_id)
    start_new_session(update.user_id, update.chat_id)
    return [Reply(chat_id=update.chat_id, text=texts.CHAT_CLEANED)]
