"""A message the user changed after sending it."""

from __future__ import annotations

from flows.handlers.message import queue_indexing
from grove.core.messages import IncomingUpdate, Reply
from nodes.telegram.reply import Sender
from nodes.ingestion.classify_input import classify_input
from nodes.store.user_state import read_user_state


def edited_message(update: IncomingUpdate, sender: Sender) -> list[Reply]:
    """A message the user changed. In База its new version replaces what the old one indexed
    (both staying searchable would answer from a text the user corrected); in Чат the question
    was answered already, and a second answer to the same message would read as a duplicate;
    an edited command is not run again."""
    state = read_user_state(update.user_id)
    if state is None or state.current_mode != "documents" or update.message_id is None or update.command:
        return []
    items = classify_input(update.text, update.attachments)
    if not items:
        return []
    return queue_indexing(update, items, replaces=update.message_id)
