"""PDF (`nodes.ingestion.formats.pdf`), drawn with reportlab: pages, the labels the PDF prints,
headings from font sizes, a title from the largest line when the metadata's is junk, the
cleaning counts, streams as well as paths; claimed by `%PDF-` whatever the name."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from pypdf import PdfReader, PdfWriter

from grove.core.ingest_types import IngestError
from nodes.ingestion.formats import Upload, detect
from nodes.ingestion.formats.pdf import FORMAT, clean_pages, parse_pdf_source
from nodes.ingestion.ocr import Ocr
from tests.support.documents import _register_font, make_pdf

# (text, font size) lines per page
BOOK = [
    [("Сад у дома", 26), ("Берёзу сажают весной на светлом месте с влажной почвой.", 11)],
    [("Посадка", 18), ("Саженец заглубляют на сорок сантиметров и расправляют корни,", 11),
     ("засыпая их рыхлой землёй. Первый год дерево поливают раз в неделю.", 11)],
    [("Уход", 18), ("Мульча сохраняет влагу в жару, а обрезка нужна только сухим ветвям.", 11)],
]


def _drawn(pages: list[list[tuple[str, int]]], *, title: str | None = None) -> bytes:
    from reportlab.lib.pagesizes import A4
    from reportlab.pdfgen import canvas

    out = io.BytesIO()
    pdf = canvas.Canvas(out, pagesize=A4)
    if title is not None:
        pdf.setTitle(title)
    pdf.setAuthor("Анна Садовая")
    font = _register_font()
    for lines in pages:
        y = 780
        for text, size in lines:
            pdf.setFont(font, size)
            pdf.drawString(50, y, text)
            y -= size * 1.6
        pdf.showPage()
    pdf.save()
    return out.getvalue()


def test_a_pdf_stream_reads_into_pages_font_headings_and_a_title_from_the_largest_line() -> None:
    doc = parse_pdf_source(io.BytesIO(_drawn(BOOK, title="untitled")), "https://example.org/sad.pdf", Ocr())
    assert doc.source_type == "pdf" and doc.source_identifier == "https://example.org/sad.pdf"
    assert doc.title == "Сад у дома" and doc.author == "Анна Садовая"
    assert len(doc.pages) == 3 and doc.page_labels == ["1", "2", "3"]
    assert doc.text == "\n\n".join(doc.pages)
    assert doc.pages[1].startswith("Посадка\nСаженец заглубляют")
    # levels by size: the 26 pt title encloses the 18 pt chapters
    assert [s.path for s in doc.sections] == [["Сад у дома"], ["Сад у дома", "Посадка"], ["Сад у дома", "Уход"]]
    assert doc.text[doc.sections[2].start:doc.sections[2].end].startswith("Уход\nМульча")
    assert doc.meta["page_count"] == 3 and doc.meta["headings"] == 3 and doc.meta["ocr_pages"] == 0


def test_a_pdf_whose_largest_line_is_not_large_is_titled_by_its_name(tmp_path: Path) -> None:
    path = tmp_path / "заметки.pdf"
    path.write_bytes(_drawn([[("Просто строка текста.", 11)]]))
    doc = FORMAT.parse(Upload.open(path, "заметки.pdf", None))
    assert doc.title == "заметки" and doc.sections == []


def test_page_labels_are_the_numbers_the_pdf_prints() -> None:
    source = io.BytesIO()
    make_pdf(["Предисловие.", "Оглавление.", "Глава первая.", "Глава вторая."], source)
    writer = PdfWriter(clone_from=PdfReader(io.BytesIO(source.getvalue())))
    writer.set_page_label(0, 1, style="/r")
    writer.set_page_label(2, 3, style="/D", start=1)
    out = io.BytesIO()
    writer.write(out)
    doc = parse_pdf_source(io.BytesIO(out.getvalue()), "labels.pdf", Ocr())
    assert doc.page_labels == ["i", "ii", "1", "2"]
    assert doc.pages == ["Предисловие.", "Оглавление.", "Глава первая.", "Глава вторая."]


def test_clean_pages_counts_what_it_removed_and_joined() -> None:
    raw = [f"Справочник садовода\n{body}\n{n}" for n, body in enumerate(
        ["Саженцы дистри-\nбутируют весной.", "Что-\nто растёт.", "Мульча . . . . . 5", "Конец."], 1)]
    pages, counts = clean_pages(raw, ["1", "2", "3", "4"])
    assert pages == ["Саженцы дистрибутируют весной.", "Что-то растёт.", "Мульча 5", "Конец."]
    assert counts == {"running_lines_removed": 8, "hyphens_joined": 1, "hyphens_kept": 1, "lines_joined": 0}


def test_a_pdf_is_claimed_by_its_header_whatever_its_name_or_mime(tmp_path: Path) -> None:
    path = tmp_path / "scan.jpg"
    path.write_bytes(_drawn([[("Текст.", 11)]]))
    assert detect(Upload.open(path, "scan.jpg", "image/jpeg")) is FORMAT
    assert FORMAT.mime_types == frozenset({"application/pdf"})


def test_a_pdf_without_pages_is_corrupt(tmp_path: Path) -> None:
    out = io.BytesIO()
    PdfWriter().write(out)
    with pytest.raises(IngestError) as caught:
        parse_pdf_source(io.BytesIO(out.getvalue()), "empty.pdf", Ocr())
    assert caught.value.user_message == "Не удалось открыть PDF: файл повреждён."
    assert caught.value.reason.startswith("corrupt PDF empty.pdf")  # PDFium loads no page-less PDF


FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
LIBREOFFICE_PAGE = Path(__file__).resolve().parents[2] / "bench" / "sets" / "docs" / "aptitude-doc-ru" / "ch01s02.pdf"


@pytest.mark.parametrize(("path", "sentence"), [
    (FIXTURES / "latex-page-ru.pdf", "Чтобы игра запускалась на STEAD3, главный файл игры называют main3.lua и кладут "
                                     "его в корень каталога с игрой."),
    (LIBREOFFICE_PAGE, "Если ваш запрос нарушает зависимости так, что эта проблема не может быть легко "
                       "разрешена, aptitude спросит, что делать:"),
])
def test_a_sentence_printed_over_several_lines_reads_as_one_line(path: Path, sentence: str) -> None:
    doc = parse_pdf_source(path, path.name, Ocr())
    assert any(sentence in line for line in doc.text.split("\n"))
    assert doc.meta["lines_joined"] > 0


def test_program_output_of_a_libreoffice_page_keeps_its_lines() -> None:
    lines = parse_pdf_source(LIBREOFFICE_PAGE, LIBREOFFICE_PAGE.name, Ocr()).text.split("\n")
    assert " libsdl1.2debian" in lines and "Следующие пакеты НЕРАБОТОСПОСОБНЫ:" in lines
