"""/base: what the user's base holds — the newest documents with their kind and size, and how many
there are in all — so a user can check what was indexed before asking about it."""

from __future__ import annotations

from grove.core.messages import IncomingUpdate, Reply
from nodes.telegram.reply import Sender
from nodes.store.document_store import user_documents

LISTED = 20
EMPTY = "Ваша база пока пуста. Выберите режим «База» (/start) и пришлите ссылки, файлы или голосовые."


def show_base(update: IncomingUpdate, sender: Sender) -> list[Reply]:
    documents, total = user_documents(update.user_id, LISTED)
    if not documents:
        return [Reply(chat_id=update.chat_id, text=EMPTY)]
    lines = [f"В вашей базе {total} {_documents(total)}" + (f"; последние {len(documents)}:" if total > len(documents)
                                                              else ":")]
    lines += [f"• {d.title or d.source_identifier} — {d.source_type}, фрагментов: {d.chunk_count}" for d in documents]
    return [Reply(chat_id=update.chat_id, text="\n".join(lines))]


def _documents(n: int) -> str:
    """«документ», «документа» or «документов» after the number `n`."""
    if n % 10 == 1 and n % 100 != 11:
        return "документ"
    if 2 <= n % 10 <= 4 and not 12 <= n % 100 <= 14:
        return "документа"
    return "документов"
