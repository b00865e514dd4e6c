"""Chunker: paragraph + overlap packing, exact spans, overlap, pages."""

from __future__ import annotations

import random

import pytest

from chunking import (
    PAGE_SEPARATOR,
    Chunk,
    chunk_pages,
    chunk_regions,
    chunk_text,
    join_pages,
    plan_regions,
    split_paragraphs,
    split_sentences,
)
from tests.chunking.texts import DOCUMENT, LONG_PARAGRAPHS, generate_text


def non_ws(text: str) -> str:
    return "".join(text.split())


def check_chunks(
    text: str,
    chunks: list[Chunk],
    *,
    target_chars: int = 1000,
    overlap_chars: int = 200,
    max_chars: int | None = None,
) -> None:
    """Every invariant promised by chunk_text, for one text."""
    max_chars = 2 * target_chars if max_chars is None else max_chars
    sentences = split_sentences(text)
    sentence_starts = {s.start for s in sentences}
    sentence_ends = {s.end for s in sentences}
    long_sentences = [s for s in sentences if len(s.text) > max_chars]

    assert [c.position for c in chunks] == list(range(len(chunks)))
    new_parts = []
    for i, chunk in enumerate(chunks):
        # exact, tight, bounded
        assert text[chunk.start : chunk.end] == chunk.text
        assert chunk.text and chunk.text == chunk.text.strip()
        assert chunk.start <= chunk.overlap_start < chunk.end
        assert not text[chunk.overlap_start].isspace()
        assert len(chunk.text) <= max_chars

        # ends on a sentence boundary, unless it cuts a sentence > max_chars:
        # then at whitespace, or inside a run with no whitespace for a whole
        # target_chars (a URL), where no better cut exists
        if any(s.start < chunk.end < s.end for s in long_sentences):
            assert text[chunk.end].isspace() or not any(
                ch.isspace() for ch in text[chunk.end - target_chars : chunk.end]
            )
        else:
            assert chunk.end in sentence_ends
        if len(chunk.text) > target_chars:  # only one over-target sentence does this
            assert (chunk.overlap_start, chunk.end) in {(s.start, s.end) for s in sentences}

        if i == 0:
            assert chunk.overlap_start == chunk.start
        else:
            previous = chunks[i - 1]
            assert previous.end <= chunk.overlap_start
            assert text[previous.end : chunk.overlap_start].strip() == ""
            if chunk.start < chunk.overlap_start:
                # overlap = trailing whole sentences of the previous chunk
                assert previous.start <= chunk.start < previous.end
                assert chunk.start in sentence_starts
                assert previous.end in sentence_ends
                assert previous.end - chunk.start <= overlap_chars
                assert text[chunk.start : chunk.overlap_start].rstrip() == text[
                    chunk.start : previous.end
                ]
        new_parts.append(text[chunk.overlap_start : chunk.end])

    # new content tiles the non-whitespace text exactly once, in order
    assert "".join(non_ws(p) for p in new_parts) == non_ws(text)
    if chunks:
        assert text[: chunks[0].start].strip() == ""
        assert text[chunks[-1].end :].strip() == ""


def test_small_document_is_one_chunk() -> None:
    chunks = chunk_text(DOCUMENT)
    assert len(chunks) == 1
    chunk = chunks[0]
    assert chunk.text == DOCUMENT.strip()
    assert (chunk.start, chunk.overlap_start, chunk.position, chunk.page) == (0, 0, 0, None)


@pytest.mark.parametrize("text", ["", " ", "\n\n \t\r\n\u00a0"])
def test_empty_and_whitespace(text: str) -> None:
    assert chunk_text(text) == []
    assert chunk_pages([text, text]) == []
    assert chunk_pages([]) == []


@pytest.mark.parametrize("overlap", [0, 100])
def test_whole_paragraphs_are_packed(overlap: int) -> None:
    chunks = chunk_text(DOCUMENT, target_chars=300, overlap_chars=overlap)
    paragraphs = split_paragraphs(DOCUMENT)
    assert max(len(p.text) for p in paragraphs) <= 300
    paragraph_starts = {p.start for p in paragraphs}
    paragraph_ends = {p.end for p in paragraphs}
    assert len(chunks) > 1
    for chunk in chunks:
        # every paragraph fits 300 chars, so none is split, and the overlap
        # gives way rather than push a chunk past the target
        assert chunk.overlap_start in paragraph_starts and chunk.end in paragraph_ends
        assert len(chunk.text) <= 300
    # packing: the next paragraph did not fit into the chunk before it
    for a, b in zip(chunks, chunks[1:]):
        next_paragraph = next(p for p in paragraphs if p.start == b.overlap_start)
        assert next_paragraph.end - a.start > 300
    check_chunks(DOCUMENT, chunks, target_chars=300, overlap_chars=overlap)


def test_long_paragraph_is_split_at_sentences_with_sentence_overlap() -> None:
    text = LONG_PARAGRAPHS[0]
    chunks = chunk_text(text, target_chars=300, overlap_chars=150)
    check_chunks(text, chunks, target_chars=300, overlap_chars=150)
    assert len(chunks) >= 3
    sentences = [s.text for s in split_sentences(text)]
    for chunk in chunks:
        # chunk text is a run of whole sentences
        assert chunk.text.startswith(tuple(sentences)) and chunk.text.endswith(tuple(sentences))
    # at least one chunk carries overlap, and it is the previous chunk's last sentence
    overlapping = [c for c in chunks if c.start < c.overlap_start]
    assert overlapping
    for chunk in overlapping:
        previous = chunks[chunk.position - 1]
        overlap = text[chunk.start : chunk.overlap_start].strip()
        assert previous.text.endswith(overlap)
        assert len(overlap) <= 150
        inside = [
            s for s in split_sentences(text) if chunk.start <= s.start and s.end <= previous.end
        ]
        # the overlap is exactly a run of whole sentences
        assert inside and inside[0].start == chunk.start and inside[-1].end == previous.end


def test_overlap_is_the_longest_sentence_tail_within_budget() -> None:
    sentence = "Пункт {n} утверждён приказом от 01.02.2024 г. № {n}."
    text = " ".join(sentence.format(n=n) for n in range(1, 41))
    assert len(split_sentences(text)) == 40
    length = len(sentence.format(n=10)) + 1  # every sentence + space is 52 chars
    chunks = chunk_text(text, target_chars=10 * length, overlap_chars=2 * length + 5)
    check_chunks(text, chunks, target_chars=10 * length, overlap_chars=2 * length + 5)
    for previous, chunk in zip(chunks, chunks[1:]):
        overlap_sentences = [
            s for s in split_sentences(text) if chunk.start <= s.start and s.end <= previous.end
        ]
        assert len(overlap_sentences) == 2


def test_overlap_never_exceeds_budget_and_zero_disables_it() -> None:
    text = "\n\n".join(LONG_PARAGRAPHS * 3)
    for overlap in (0, 40, 120):
        chunks = chunk_text(text, target_chars=250, overlap_chars=overlap)
        check_chunks(text, chunks, target_chars=250, overlap_chars=overlap)
        if overlap == 0:
            assert all(c.start == c.overlap_start for c in chunks)


def test_huge_sentence_is_split_at_whitespace() -> None:
    words = ["слово", "документ", "т. е.", "3.5", "«цитата»", "им. Горького"]
    rng = random.Random(7)
    sentence = " ".join(rng.choice(words) for _ in range(600)) + "."
    text = f"Вступление. {sentence} Заключение."
    chunks = chunk_text(text, target_chars=200, overlap_chars=50)
    check_chunks(text, chunks, target_chars=200, overlap_chars=50)
    for chunk in chunks:
        assert len(chunk.text) <= 400
        assert chunk.start == 0 or text[chunk.start - 1].isspace()
        assert chunk.end == len(text) or text[chunk.end].isspace()
    # pieces of a cut sentence are never repeated as overlap
    inside = [c for c in chunks if c.overlap_start > 12 and c.end < len(text) - 12]
    assert all(c.start == c.overlap_start for c in inside)


def test_pieces_of_a_cut_sentence_are_not_overlap() -> None:
    # the cut sentence ends in a ~140-char piece that would fit the 150-char
    # overlap budget (and the next 200..400-char sentence leaves room for it
    # under max_chars), but only whole sentences may be repeated
    cut = " ".join(["согласование"] * 32) + "."
    whole = "Следующее " + "предложение " * 18 + "закончено."
    text = f"{cut} {whole}"
    assert len(cut) > 400 and 200 < len(whole) <= 400
    chunks = chunk_text(text, target_chars=200, overlap_chars=150)
    check_chunks(text, chunks, target_chars=200, overlap_chars=150)
    assert [c.text for c in chunks][-1] == whole
    assert all(c.start == c.overlap_start for c in chunks)


def test_sentence_between_target_and_max_stays_whole() -> None:
    sentence = "Очень длинное предложение " + "с подробностями " * 20 + "без точки до самого конца."
    text = f"Начало. {sentence} Конец."
    assert 200 < len(sentence) <= 400
    chunks = chunk_text(text, target_chars=200, overlap_chars=20)
    check_chunks(text, chunks, target_chars=200, overlap_chars=20)
    assert any(sentence in c.text for c in chunks)


def test_unbreakable_token_is_cut_but_bounded() -> None:
    text = "См. ссылку: https://example.org/" + "x" * 1000 + " — и всё."
    chunks = chunk_text(text, target_chars=100, overlap_chars=20)
    assert max(len(c.text) for c in chunks) == 100
    check_chunks(text, chunks, target_chars=100, overlap_chars=20)


def test_default_max_is_twice_the_target_and_arguments_are_validated() -> None:
    text = "слово " * 3000
    assert all(len(c.text) <= 200 for c in chunk_text(text, target_chars=100, overlap_chars=10))
    with pytest.raises(ValueError):
        chunk_text(text, target_chars=0)
    with pytest.raises(ValueError):
        chunk_text(text, target_chars=100, overlap_chars=100)
    with pytest.raises(ValueError):
        chunk_text(text, target_chars=100, overlap_chars=-1)
    with pytest.raises(ValueError):
        chunk_text(text, target_chars=100, max_chars=99)


def test_chunk_is_frozen() -> None:
    chunk = chunk_text("Текст.")[0]
    with pytest.raises(AttributeError):
        chunk.start = 1  # type: ignore[misc]


PARAMS = [
    (1000, 200, None),
    (300, 100, None),
    (120, 60, 150),
    (80, 0, 80),
    (500, 499, 600),
    (60, 30, None),
]


@pytest.mark.parametrize("seed", range(60))
def test_generated_texts_keep_all_invariants(seed: int) -> None:
    text = generate_text(seed)
    target, overlap, max_chars = PARAMS[seed % len(PARAMS)]
    chunks = chunk_text(text, target_chars=target, overlap_chars=overlap, max_chars=max_chars)
    check_chunks(text, chunks, target_chars=target, overlap_chars=overlap, max_chars=max_chars)


# --- pages -----------------------------------------------------------------

PAGES = [
    DOCUMENT,
    "",
    LONG_PARAGRAPHS[0],
    "   \n",
    "\n" + LONG_PARAGRAPHS[1] + "\n\nПоследний абзац страницы. Т. е. конец.",
    "Короткая страница.",
]


def page_ranges(pages: list[str]) -> list[tuple[int, int]]:
    ranges, offset = [], 0
    for page in pages:
        ranges.append((offset, offset + len(page)))
        offset += len(page) + len(PAGE_SEPARATOR)
    return ranges


@pytest.mark.parametrize(("target", "overlap"), [(1000, 200), (250, 100), (100, 40)])
def test_pages_are_never_crossed(target: int, overlap: int) -> None:
    document = join_pages(PAGES)
    assert document == "\n\n".join(PAGES)
    chunks = chunk_pages(PAGES, target_chars=target, overlap_chars=overlap)
    ranges = page_ranges(PAGES)

    assert [c.position for c in chunks] == list(range(len(chunks)))
    assert {c.page for c in chunks} == {1, 3, 5, 6}  # blank pages give no chunks
    for chunk in chunks:
        assert chunk.page is not None
        page_start, page_end = ranges[chunk.page - 1]
        assert page_start <= chunk.start < chunk.end <= page_end
        assert document[chunk.start : chunk.end] == chunk.text
    pages_seen = [c.page for c in chunks]
    assert pages_seen == sorted(pages_seen)

    for page_number, page in enumerate(PAGES, start=1):
        own = [c for c in chunks if c.page == page_number]
        page_start = ranges[page_number - 1][0]
        # each page is chunked exactly as a standalone text, shifted by its offset
        alone = chunk_text(page, target_chars=target, overlap_chars=overlap)
        assert [(c.start - page_start, c.end - page_start, c.overlap_start - page_start, c.text)
                for c in own] == [(c.start, c.end, c.overlap_start, c.text) for c in alone]
        if own:
            assert own[0].overlap_start == own[0].start  # no overlap from the previous page
        check_chunks(page, alone, target_chars=target, overlap_chars=overlap)

    # new content of all chunks covers the whole document once
    covered = "".join(non_ws(document[c.overlap_start : c.end]) for c in chunks)
    assert covered == non_ws(document)


def test_chunk_text_has_no_page() -> None:
    text = "\n\n".join(LONG_PARAGRAPHS)
    assert all(c.page is None for c in chunk_text(text, target_chars=200, overlap_chars=50))


# --------------------------------------------------------------------------- sections


def _sectioned(parts: list[tuple[tuple[str, ...], str]]) -> tuple[str, list[tuple[int, int, tuple[str, ...]]]]:
    """Join (path, section text) parts with blank lines; the section spans over the result."""
    text, sections = "", []
    for path, body in parts:
        if text:
            text += "\n\n"
        sections.append((len(text), len(text) + len(body), path))
        text += body
    return text, sections


def _section_of(sections: list[tuple[int, int, tuple[str, ...]]], chunk: Chunk) -> list[tuple[str, ...]]:
    return [path for start, end, path in sections if start < chunk.end and chunk.start < end]


@pytest.mark.parametrize("merge_chars", [0, 500])
def test_chunks_never_span_two_large_sections(merge_chars: int) -> None:
    first = "Установка\n\n" + "\n\n".join(LONG_PARAGRAPHS)
    second = "Настройка\n\n" + "\n\n".join(reversed(LONG_PARAGRAPHS))
    text, sections = _sectioned([(("Установка",), first), (("Настройка",), second)])
    assert len(first) > 1000 and len(second) > 1000
    regions = plan_regions(text, sections=sections, merge_chars=merge_chars, target_chars=1000)
    chunks = chunk_regions(text, regions, target_chars=1000, overlap_chars=200)
    assert len(chunks) >= 4
    for chunk in chunks:
        assert _section_of(sections, chunk) == [chunk.section]  # inside exactly its own section
    assert {c.section for c in chunks} == {("Установка",), ("Настройка",)}
    # the first chunk of a section repeats nothing of the section before it
    second_start = sections[1][0]
    opening = next(c for c in chunks if c.section == ("Настройка",))
    assert opening.start == opening.overlap_start == second_start
    for path, (start, end, _) in zip(("Установка", "Настройка"), sections):
        own = [c for c in chunks if c.section == (path,)]
        check_chunks(text[start:end], [Chunk(c.start - start, c.end - start, c.text, i,
                                             c.overlap_start - start) for i, c in enumerate(own)],
                     target_chars=1000, overlap_chars=200)


def test_a_heading_never_stands_alone() -> None:
    body = LONG_PARAGRAPHS[0]  # fits a 700-character chunk alone, but not after its headings
    assert len(body) <= 700 < len(body) + len("Глава 1\n\n1.1 Начало\n")
    text, sections = _sectioned([
        (("Глава 1",), "Глава 1"),  # a chapter heading with nothing under it
        (("Глава 1", "1.1 Начало"), "1.1 Начало\n" + body),
    ])
    regions = plan_regions(text, sections=sections, target_chars=700)
    assert [r.section for r in regions] == [("Глава 1", "1.1 Начало")]  # the bare heading joined
    chunks = chunk_regions(text, regions, target_chars=700, overlap_chars=0)
    assert chunks[0].text.startswith("Глава 1\n\n1.1 Начало\n" + body[:20])  # headings go with the text
    assert all(len(c.text) > 100 for c in chunks)


def test_short_neighbour_sections_share_a_chunk_only_when_both_are_short() -> None:
    short = ["Полив\n\nМалину поливают раз в неделю.", "Подкормка\n\nВесной дают азот.",
             "Обрезка\n\n" + LONG_PARAGRAPHS[0]]
    text, sections = _sectioned([(("Малина", "Полив"), short[0]), (("Малина", "Подкормка"), short[1]),
                                 (("Малина", "Обрезка"), short[2])])
    merged = chunk_regions(text, plan_regions(text, sections=sections, merge_chars=500), overlap_chars=0)
    assert [c.section for c in merged] == [("Малина",), ("Малина", "Обрезка")]
    assert merged[0].text == short[0] + "\n\n" + short[1]
    kept_apart = chunk_regions(text, plan_regions(text, sections=sections, merge_chars=0), overlap_chars=0)
    assert [c.section for c in kept_apart] == [s[2] for s in sections]


def test_sections_and_pages_cut_together() -> None:
    pages = ["Введение\n\n" + LONG_PARAGRAPHS[0], LONG_PARAGRAPHS[1] + "\n\nИтоги\n\n" + LONG_PARAGRAPHS[0]]
    text = join_pages(pages)
    second_page = len(pages[0]) + len(PAGE_SEPARATOR)
    results = text.index("Итоги")
    sections = [(0, results, ("Введение",)), (results, len(text), ("Итоги",))]
    page_spans = [(0, len(pages[0])), (second_page, len(text))]
    chunks = chunk_regions(text, plan_regions(text, pages=page_spans, sections=sections), target_chars=2000,
                           overlap_chars=0)
    assert [(c.page, c.section) for c in chunks] == [(1, ("Введение",)), (2, ("Введение",)), (2, ("Итоги",))]
    for chunk in chunks:
        assert text[chunk.start : chunk.end] == chunk.text
