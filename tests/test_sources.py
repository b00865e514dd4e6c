"""The source block's labels: one way of naming a source for chat fragments and consultation snippets."""

from __future__ import annotations

from nodes.retrieval.retrieve import Fragment
from nodes.retrieval.sources import document_label, source_block, strip_model_sources
from nodes.retrieval.unified_retrieve import Snippet


def test_a_label_names_kind_file_title_page_or_time_and_section() -> None:
    assert document_label("pdf", "manual.pdf", title="Руководство", page=11, page_label="7",
                          section="Установка → Windows") == \
        "pdf: manual.pdf («Руководство»), с. 7, раздел «Установка → Windows»"
    assert document_label("url", "https://example.org/guide", title="guide") == "ссылка: https://example.org/guide"
    assert document_label("voice", "voice-12.ogg", ts_start=125.7) == "голосовое: voice-12.ogg, 2:05"


def test_a_fragment_and_a_snippet_of_one_page_are_named_alike() -> None:
    fragment = Fragment(chunk_id=1, document_id=2, text="…", source_type="pdf", source_identifier="уход.pdf",
                        title="Уход за малиной", page=3, page_label="iii", section="Подкормка", distance=0.2)
    snippet = Snippet(source_type="document", priority_level=2, content="…", distance=0.2, id=1,
                      source_identifier="уход.pdf", title="Уход за малиной", page=3, page_label="iii",
                      section="Подкормка")
    assert fragment.source_label().removeprefix("pdf: ") == snippet.source_label().removeprefix("документ: ")


def test_the_block_lists_each_used_source_once_and_drops_the_models_own_list() -> None:
    first = Fragment(chunk_id=1, document_id=2, text="a", source_type="txt", source_identifier="a.txt", distance=0.1)
    second = Fragment(chunk_id=2, document_id=2, text="b", source_type="txt", source_identifier="a.txt", distance=0.2)
    assert source_block([first, second], [1, 2]) == "Информация взята из:\n• txt: a.txt"
    assert source_block([first], []) == ""
    assert strip_model_sources("Ответ.\n\nИсточники: a.txt") == "Ответ."
