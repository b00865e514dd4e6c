"""A structured PDF end to end: parsed, chunked inside its sections, embedded, stored, and a
question about one section finds that section's chunk first, named by page label and section."""

from __future__ import annotations

from pathlib import Path

import psycopg
import pytest
from psycopg.rows import dict_row

from flows.ingest import ingest
from nodes.embedding.embedder import get_embedder
from grove.core.ingest_types import IngestItem
from nodes.retrieval.retrieve import search
from nodes.retrieval.sources import source_block
from tests.support.documents import make_manual_pdf

pytestmark = [pytest.mark.models, pytest.mark.timeout(600)]


@pytest.mark.parametrize("chunking", ["late", "naive"])
def test_a_question_about_a_section_finds_it_first(store: str, user_id: int, tmp_path: Path, env,  # type: ignore[no-untyped-def]
                                                   chunking: str) -> None:
    env(GROVE_CHUNKING=chunking)
    pdf = make_manual_pdf(tmp_path / "manual.pdf")
    item = IngestItem(kind="file", source_identifier="manual.pdf", path=str(pdf), file_name="manual.pdf")
    [outcome] = ingest([item], user_id)
    assert outcome.status == "indexed", outcome.reason

    with psycopg.connect(store, row_factory=dict_row) as conn:
        rows = conn.execute("select page, page_label, section, chunk_text from document_chunks"
                            " where owner_id = %s order by position", (user_id,)).fetchall()
    assert {(r["page_label"], r["section"]) for r in rows} >= {
        ("ii", "Предисловие"), ("1", "1 Установка → 1.1 Windows"), ("2", "1 Установка → 1.2 Linux"),
        ("3", "2 Настройка → 2.1 Прокси"), ("4", "2 Настройка → 2.2 Резервные копии")}
    assert not any("Команда Grove. Все права защищены" in r["chunk_text"] for r in rows)

    question = "Какой командой посмотреть журналы службы grove в Linux?"
    found = search(user_id, get_embedder().embed_query(question), 10)
    assert found[0].section == "1 Установка → 1.2 Linux" and "journalctl" in found[0].text
    assert found[0].page_label == "2" and found[0].page == 5
    block = source_block(found, [1])
    assert "pdf: manual.pdf («Руководство по установке Grove»), с. 2, раздел «1 Установка → 1.2 Linux»" in block

    question = "Где хранятся логин и пароль прокси?"
    found = search(user_id, get_embedder().embed_query(question), 10)
    assert found[0].section == "2 Настройка → 2.1 Прокси"
