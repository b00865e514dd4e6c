"""/clean_base: the user's whole base deleted, after a one-time confirmation button."""

from __future__ import annotations

from flows import texts
from grove.core.messages import IncomingUpdate, Reply
from nodes.store import confirmations
from nodes.store.document_store import delete_user_documents
from nodes.telegram.reply import Sender


def clean_base(update: IncomingUpdate, sender: Sender) -> list[Reply]:
    """Ask first, with a one-time button: deleting a whole base by a stray or forged tap would be a loss."""
    data = update.callback_data or ""
    if not data:
        token = confirmations.issue("clean_base", update.user_id, update.chat_id)
        return [Reply(chat_id=update.chat_id, text=texts.CLEAN_BASE_CONFIRM,
                      buttons=texts.clean_base_buttons(token))]
    _, answer, token = (data.split(":", 2) + ["", ""])[:3]
    verdict = confirmations.use(token, "clean_base", update.user_id, update.chat_id) if token else "unknown"
    if verdict != "ok":
        sender.answer_callback(update.origin, update.callback_id, texts.CLEAN_BASE_STALE_TOAST)
        return [Reply(chat_id=update.chat_id, text=texts.CLEAN_BASE_STALE)]
    sender.answer_callback(update.origin, update.callback_id)
    if answer == "yes":
        documents, _chunks = delete_user_documents(update.user_id)
        return [Reply(chat_id=update.chat_id, text=texts.BASE_CLEANED.format(n=documents))]
    return [Reply(chat_id=update.chat_id, text=texts.BASE_KEPT)]
