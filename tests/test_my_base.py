"""/base: the user's own searchable documents listed, newest first, nobody else's (flows/handlers/my_base.py)."""

from __future__ import annotations

import numpy as np

from grove.app.dispatch import process
from grove.core.ingest_types import ExtractedDocument
from grove.core.messages import IncomingUpdate
from grove.core.settings import get_settings
from nodes.store.document_store import ChunkRecord, store_document


def stored(owner: int, name: str, title: str | None, chunks: int, *, pending: bool = False) -> None:
    vectors = np.ones((chunks, get_settings().embedding_dim), dtype=np.float32)
    document = ExtractedDocument(source_type="pdf", source_identifier=name, title=title, text=f"{name} " * chunks)
    store_document.fn(owner, document, [ChunkRecord(position=i, text=f"{name} {i}") for i in range(chunks)],
                      vectors, pending=pending)


def base(user_id: int) -> str:
    [reply] = process(IncomingUpdate(origin="console", user_id=user_id, chat_id=user_id, command="base"))
    return reply.text


def test_base_lists_the_users_own_documents_newest_first(store: str, user_id: int, other_user_id: int) -> None:
    assert "база пока пуста" in base(user_id)
    stored(user_id, "малина.pdf", "Уход за малиной", 3)
    stored(user_id, "полив.pdf", None, 1)
    stored(user_id, "черновик.pdf", "Не проиндексирован до конца", 2, pending=True)  # an unfinished job's
    stored(other_user_id, "чужое.pdf", "Чужой документ", 5)
    text = base(user_id)
    assert text.splitlines() == ["В вашей базе 2 документа:",
                                 "• полив.pdf — pdf, фрагментов: 1",
                                 "• Уход за малиной — pdf, фрагментов: 3"]
    assert "Чужой" not in text and "Чужой документ" in base(other_user_id)
