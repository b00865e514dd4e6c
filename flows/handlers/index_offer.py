"""The button under a file sent in Чат: «Добавить в базу» queues its indexing as База would."""

from __future__ import annotations

from flows import texts
from flows.handlers.message import queue_indexing
from grove.core.ingest_types import IngestItem
from grove.core.messages import IncomingUpdate, Reply
from nodes.store import confirmations
from nodes.telegram.reply import Sender


def index_offer(update: IncomingUpdate, sender: Sender) -> list[Reply]:
    """The offer's button: «Добавить в базу» queues the indexing job as База would; the mode stays Чат."""
    _, answer, token = ((update.callback_data or "").split(":", 2) + ["", ""])[:3]
    verdict, payload = confirmations.spend(token, "index_offer", update.user_id, update.chat_id) if token \
        else ("unknown", None)
    sender.answer_callback(update.origin, update.callback_id)
    if verdict != "ok" or payload is None:
        return [Reply(chat_id=update.chat_id, text=texts.INDEX_OFFER_STALE)]
    if answer != "yes":
        return [Reply(chat_id=update.chat_id, text=texts.INDEX_OFFER_DECLINED)]
    items = [IngestItem.model_validate(item) for item in payload["items"]]
    return queue_indexing(update, items)
