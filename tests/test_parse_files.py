"""The file branch: real PDFs, DOCX files and text files, generated here."""

from __future__ import annotations

from grove.core.settings import get_settings
import os
import random
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from nodes.ingestion import parse_files as node
from nodes.ingestion.formats import base as format_base
from grove.core.ingest_types import IngestError
from nodes.ingestion.parse_files import parse_file
from tests.support.prerequisites import ocr_missing, require
from tests.support.documents import (
    MANUAL_CONTINUED,
    MANUAL_FOOTER,
    MANUAL_HEADER,
    MANUAL_HTML_TITLE,
    MANUAL_TITLE_LINE,
    MARKDOWN_NOTES,
    grove_settings,
    make_docx,
    make_encrypted_pdf,
    make_epub,
    make_headed_docx,
    make_image_only_pdf,
    make_manual_pdf,
    make_odt,
    make_pdf,
    make_png,
    make_pptx,
    make_rtf,
    make_scanned_pdf,
    page_image,
    make_text_file,
    make_xlsx,
    make_zip,
    make_zip_bomb_docx,
)

SUPPORTED = ("Поддерживаются PDF, DOCX, ODT, EPUB, FB2, PPTX, XLSX, CSV, RTF, HTML, TXT, MD, сканы и фото страниц, "
             "а также аудио и видео")
PAGES = [
    "Глава первая. Берёзовая роща начинается с правильно выбранного участка.",
    "Глава вторая. Саженцы высаживают ранней весной, пока почва влажная.",
    "Глава третья. Через пять лет на месте пустыря шумит настоящая роща.",
]
TEXT = (
    "Съешь же ещё этих мягких французских булок, да выпей чаю.\n"
    "Широкая электрификация южных губерний даст мощный толчок подъёму сельского хозяйства."
)


@pytest.fixture(autouse=True)
def default_settings() -> Iterator[None]:
    with grove_settings(max_file_bytes=20 * 1024 * 1024):
        yield


def _error(path: Path, name: str | None = None, mime: str | None = None) -> IngestError:
    with pytest.raises(IngestError) as caught:
        parse_file(str(path), name or path.name, mime, get_settings())
    return caught.value


# --- PDF -----------------------------------------------------------------------


def test_pdf_pages_in_order(tmp_path: Path) -> None:
    path = make_pdf(PAGES, tmp_path / "roscha.pdf", title="Роща своими руками", author="Мария Лесная")
    doc = parse_file(str(path), "roscha.pdf", "application/pdf", get_settings())
    assert doc.source_type == "pdf"
    assert doc.source_identifier == "roscha.pdf"
    assert doc.pages == PAGES  # one string per page, 1-based order kept, Cyrillic intact
    assert doc.text == "\n\n".join(PAGES)
    assert doc.title == "Роща своими руками"
    assert doc.author == "Мария Лесная"
    assert doc.meta["page_count"] == 3


def test_pdf_sniffed_by_content_not_name(tmp_path: Path) -> None:
    path = make_pdf(PAGES[:1], tmp_path / "notes.txt")
    doc = parse_file(str(path), "notes.txt", "text/plain", get_settings())
    assert doc.source_type == "pdf" and doc.pages == PAGES[:1]


def test_long_pdf_keeps_every_page_in_order(tmp_path: Path) -> None:
    sentence = "Съешь же ещё этих мягких французских булок, да выпей чаю. "
    pages = [f"Страница {n}. " + sentence * 30 for n in range(1, 101)]
    path = make_pdf(pages, tmp_path / "long.pdf")
    doc = parse_file(str(path), "long.pdf", None, get_settings())
    assert doc.pages is not None and len(doc.pages) == 100
    assert doc.pages[41].startswith("Страница 42.")


def test_manual_pdf_is_clean_text_with_true_pages_and_sections(tmp_path: Path) -> None:
    doc = parse_file(str(make_manual_pdf(tmp_path / "manual.pdf")), "manual.pdf", None, get_settings())
    assert doc.pages is not None and len(doc.pages) == 7
    assert doc.text == "\n\n".join(doc.pages)
    # running header, footer, page numbers and "continued" markers: found across pages, removed
    for debris in (MANUAL_HEADER, MANUAL_FOOTER, MANUAL_CONTINUED, "— 2 —", "— ii —"):
        assert debris not in doc.text
    assert doc.meta["running_lines_removed"] == 6 * 3 + 3  # 6 pages with text, 3 markers
    # hyphenation joined; real compounds keep their hyphen, broken or not
    assert "запускают от имени администратора" in doc.text and "запус-" not in doc.text
    assert "устанавливают через apt install grove" in doc.text
    assert "Debian-пакет grove" in doc.text and "Что-то ещё?" in doc.text
    assert "прокси-сервер" in doc.text
    # the blank page stays a (empty) page, so physical numbers keep their place
    assert doc.pages[2] == "" and doc.meta["empty_pages"] == 1
    assert doc.page_labels == ["i", "ii", "iii", "1", "2", "3", "4"]
    # sections from the outline, each starting at its printed heading
    paths = [(s.path, doc.text[s.start : s.end].split("\n", 1)[0]) for s in doc.sections]
    assert (["1 Установка", "1.2 Linux"], "1.2 Linux") in paths
    assert (["2 Настройка", "2.1 Прокси"], "2.1 Прокси") in paths
    linux = next(s for s in doc.sections if s.path[-1:] == ["1.2 Linux"])
    assert "journalctl -u grove" in doc.text[linux.start : linux.end]
    assert "Windows" not in doc.text[linux.start : linux.end]
    # «untitled» is no title: the largest line of the first page is
    assert doc.title == MANUAL_TITLE_LINE


@pytest.mark.parametrize("junk", ["untitled", "Microsoft Word - отчёт.doc", "", "  ---  "])
def test_junk_pdf_title_falls_back_to_the_file_name(tmp_path: Path, junk: str) -> None:
    path = make_pdf(PAGES, tmp_path / "roscha.pdf", title=junk or None)
    assert parse_file(str(path), "Роща 2024.pdf", None, get_settings()).title == "Роща 2024"


def test_pdf_without_outline_takes_headings_from_font_sizes(tmp_path: Path) -> None:
    from reportlab.lib.pagesizes import A4
    from reportlab.pdfgen import canvas

    from tests.support.documents import _register_font

    font = _register_font()
    path = tmp_path / "plain.pdf"
    pdf = canvas.Canvas(str(path), pagesize=A4)
    y = 780
    for size, text in [(16, "Посадка"), (11, "Саженцы сажают весной в подготовленные ямы."),
                       (13, "Уход за саженцами"), (11, "Первый год саженцы поливают еженедельно."),
                       (16, "Сбор урожая"), (11, "Ягоды собирают утром, пока не жарко.")]:
        pdf.setFont(font, size)
        pdf.drawString(50, y, text)
        y -= size + 8
    pdf.showPage()
    pdf.save()
    doc = parse_file(str(path), "plain.pdf", None, get_settings())
    assert [s.path for s in doc.sections] == [["Посадка"], ["Посадка", "Уход за саженцами"], ["Сбор урожая"]]
    assert doc.text[doc.sections[1].start :].startswith("Уход за саженцами")


def test_encrypted_pdf_refused(tmp_path: Path) -> None:
    error = _error(make_encrypted_pdf(tmp_path / "secret.pdf", user_password="пароль"))
    assert error.user_message == "PDF защищён паролем — снимите защиту и пришлите файл снова."


def test_pdf_with_empty_user_password_opens(tmp_path: Path) -> None:
    path = make_encrypted_pdf(tmp_path / "owner-only.pdf", user_password="", text="Открытый отчёт.")
    assert parse_file(str(path), "owner-only.pdf", None, get_settings()).pages == ["Открытый отчёт."]


SCAN = [["Ремонтантную малину весной", "подкармливают азотом."], ["Осенью все побеги", "срезают под корень."]]


def test_a_scanned_pdf_is_read_by_ocr_page_by_page(tmp_path: Path) -> None:
    require(ocr_missing())
    doc = parse_file(str(make_scanned_pdf(tmp_path / "скан.pdf", SCAN)), "скан.pdf", "application/pdf", get_settings())
    assert doc.meta["ocr_pages"] == 2 and len(doc.pages) == 2
    assert "малину" in doc.pages[0] and "азотом" in doc.pages[0]
    assert "побеги" in doc.pages[1] and "корень" in doc.pages[1]


def test_a_photo_of_a_page_is_read_by_ocr(tmp_path: Path) -> None:
    require(ocr_missing())
    path = tmp_path / "photo.png"
    path.write_bytes(page_image(SCAN[0] + SCAN[1]))
    doc = parse_file(str(path), "photo.png", "image/png", get_settings())
    assert doc.source_type == "image" and "подкармливают азотом" in doc.text and "под корень" in doc.text
    error = _error(make_png(tmp_path / "red.png"), mime="image/png")  # a picture with no text
    assert "не удалось распознать текст" in error.user_message


def test_without_an_ocr_engine_scans_and_photos_are_refused_saying_why(tmp_path: Path) -> None:
    with grove_settings(ocr_command="no-such-tesseract"):
        scan = _error(make_image_only_pdf(tmp_path / "scan.pdf"))
        photo = _error(make_png(tmp_path / "photo.png"), mime="image/png")
    assert "похоже, это скан" in scan.user_message and "tesseract-ocr" in scan.user_message
    assert "изображение PNG (распознавание текста на этом сервере не установлено)" in photo.user_message


def test_a_scan_with_nothing_to_read_and_a_long_scan_are_refused(tmp_path: Path) -> None:
    require(ocr_missing())
    assert "распознать текст на страницах не удалось" in _error(make_image_only_pdf(tmp_path / "s.pdf")).user_message
    with grove_settings(ocr_max_pages=1):
        error = _error(make_scanned_pdf(tmp_path / "long.pdf", SCAN))
    assert "не больше 1" in error.user_message


@pytest.mark.parametrize("damage", ["garbage", "truncated"])
def test_corrupt_pdf(tmp_path: Path, damage: str) -> None:
    path = tmp_path / "broken.pdf"
    if damage == "garbage":
        path.write_bytes(b"%PDF-1.7\n1 0 obj << /Type /Catalog /Pages 9 0 R >>\nendobj\n%%EO")
    else:
        whole = make_pdf(PAGES, tmp_path / "whole.pdf").read_bytes()
        path.write_bytes(whole[: len(whole) // 2])
    assert _error(path).user_message == "Не удалось открыть PDF: файл повреждён."


def test_pdf_name_without_pdf_content(tmp_path: Path) -> None:
    path = tmp_path / "fake.pdf"
    path.write_text("это не PDF, а просто текст", encoding="utf-8")
    assert _error(path).user_message == "Не удалось открыть PDF: файл повреждён."


# --- DOCX ----------------------------------------------------------------------


def test_docx_paragraphs_and_tables_in_order(tmp_path: Path) -> None:
    path = make_docx(
        ["Берёзы любят свет.", "Дубы растут медленно."],
        [["Дерево", "Высота", "Возраст"], ["Берёза", "25 м", "80 лет"], ["Дуб", "30 м", "300 лет"]],
        tmp_path / "trees.docx",
        heading="Деревья нашей рощи",
        after_table=["Итог: сажайте и то, и другое."],
        title="Справочник рощи",
        author="Пётр Дубов",
    )
    doc = parse_file(str(path), "trees.docx", None, get_settings())
    assert doc.source_type == "docx"
    assert doc.text.split("\n\n") == [
        "Деревья нашей рощи",
        "Берёзы любят свет.",
        "Дубы растут медленно.",
        "Дерево | Высота | Возраст\nБерёза | 25 м | 80 лет\nДуб | 30 м | 300 лет",
        "Итог: сажайте и то, и другое.",
    ]
    assert doc.title == "Справочник рощи"
    assert doc.author == "Пётр Дубов"
    assert doc.meta == {"paragraphs": 4, "tables": 1}


def test_long_docx_keeps_paragraph_order(tmp_path: Path) -> None:
    count = 3000
    path = make_docx([f"Абзац {n}: съешь же ещё этих мягких французских булок." for n in range(count)],
                     None, tmp_path / "long.docx")
    doc = parse_file(str(path), "long.docx", None, get_settings())
    assert doc.meta["paragraphs"] == count
    assert doc.text.split("\n\n")[1234] == "Абзац 1234: съешь же ещё этих мягких французских булок."


def test_docx_zip_bomb_refused_before_decompressing(tmp_path: Path) -> None:
    path = make_zip_bomb_docx(tmp_path / "bomb.docx")
    opened: list[str] = []
    real_open = zipfile.ZipFile.open

    def spy(self, name, *args, **kwargs):  # type: ignore[no-untyped-def]
        opened.append(str(getattr(name, "filename", name)))
        return real_open(self, name, *args, **kwargs)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(zipfile.ZipFile, "open", spy)
        error = _error(path)
    assert opened == []  # refused from the central directory, nothing decompressed
    assert "выглядит подозрительно" in error.user_message
    assert "ratio" in error.reason and str(error) == error.reason  # the run says why, not «IngestError: »


def test_docx_total_size_and_entry_caps(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = make_docx(["Обычный документ."], None, tmp_path / "plain.docx")
    assert parse_file(str(path), "plain.docx", None, get_settings()).text == "Обычный документ."
    monkeypatch.setattr(format_base, "ZIP_MAX_UNCOMPRESSED", 1000)
    assert "uncompresses to more than 1000" in _error(path).reason
    monkeypatch.setattr(format_base, "ZIP_MAX_UNCOMPRESSED", 200 * 1024 * 1024)
    monkeypatch.setattr(format_base, "ZIP_MAX_ENTRIES", 3)
    assert "entries" in _error(path).reason


def test_docx_that_is_not_a_zip(tmp_path: Path) -> None:
    path = tmp_path / "report.docx"
    path.write_bytes(b"Just some bytes pretending to be a Word file")
    assert _error(path).user_message == "Не удалось открыть DOCX: файл повреждён или это не документ Word."
    broken = make_docx(["Текст"], None, tmp_path / "cut.docx").read_bytes()
    (tmp_path / "cut.docx").write_bytes(broken[:200])
    assert "файл повреждён" in _error(tmp_path / "cut.docx").user_message


def test_a_zip_archive_is_refused_and_a_broken_workbook_is_called_broken(tmp_path: Path) -> None:
    archive = make_zip(tmp_path / "photos.zip", {"a.txt": b"hello"})
    error = _error(archive)
    assert error.user_message == f"Этот тип файла не поддерживается: ZIP-архив. {SUPPORTED}."
    sheet = make_zip(tmp_path / "table.xlsx", {"[Content_Types].xml": b"<x/>", "xl/workbook.xml": b"<x/>"})
    error = _error(sheet)
    assert error.user_message == "Не удалось открыть XLSX: файл повреждён." and "table.xlsx" in error.reason


# --- zipped office formats and CSV ----------------------------------------------------


def test_odt_headings_become_sections_and_the_table_its_rows(tmp_path: Path) -> None:
    path = make_odt(tmp_path / "сад.odt", "Календарь сада",
                    [("Весна", 1), ("Малину подкармливают азотом.", 0), ("Обрезка", 2),
                     ("Старые побеги вырезают у земли.", 0)], [["Сорт", "Срок"], ["Геракл", "август"]])
    doc = parse_file(str(path), "сад.odt", "application/vnd.oasis.opendocument.text", get_settings())
    assert doc.source_type == "odt" and doc.title == "Календарь сада"
    assert doc.text.index("Весна") < doc.text.index("азотом") < doc.text.index("Обрезка")
    assert "Геракл | август" in doc.text
    section = next(s for s in doc.sections if "вырезают" in doc.text[s.start:s.end])
    assert section.path == ["Весна", "Обрезка"]


def test_epub_chapters_are_read_in_spine_order_with_their_headings(tmp_path: Path) -> None:
    path = make_epub(tmp_path / "книга.epub", "Ягодник", [
        "<h1>Глава 1. Малина</h1><p>Малину сажают осенью.</p><ul><li>Полив — раз в неделю.</li></ul>",
        "<h1>Глава 2. Смородина</h1><p>Смородину обрезают ранней весной.</p>"])
    doc = parse_file(str(path), "книга.epub", "application/epub+zip", get_settings())
    assert doc.source_type == "epub" and doc.title == "Ягодник"
    assert doc.text.index("Малину сажают") < doc.text.index("Смородину обрезают")  # spine, not manifest
    assert "Полив — раз в неделю." in doc.text
    assert [s.path for s in doc.sections if "обрезают" in doc.text[s.start:s.end]] == [["Глава 2. Смородина"]]


def test_pptx_slides_are_sections_titled_by_their_first_line(tmp_path: Path) -> None:
    path = make_pptx(tmp_path / "доклад.pptx", [["Обрезка малины", "Осенью побеги срезают под корень."],
                                                 ["Подкормка", "Весной — азот, летом — калий."]])
    doc = parse_file(str(path), "доклад.pptx", None, get_settings())
    assert doc.source_type == "pptx" and doc.title == "доклад"  # no title in the file: its name
    assert "Слайд 2: Подкормка" in doc.text and "летом — калий" in doc.text
    assert [s.path for s in doc.sections if "калий" in doc.text[s.start:s.end]] == [["Слайд 2: Подкормка"]]


def test_xlsx_sheets_are_sections_and_rows_lines(tmp_path: Path) -> None:
    path = make_xlsx(tmp_path / "урожай.xlsx", {"2025": [["Сорт", "Урожай, кг"], ["Геракл", 12]],
                                                 "2026": [["Сорт", "Урожай, кг"], ["Полка", 9]]})
    doc = parse_file(str(path), "урожай.xlsx", None, get_settings())
    assert doc.source_type == "xlsx" and "Геракл | 12" in doc.text and "Полка | 9" in doc.text
    assert [s.path for s in doc.sections if "Полка" in doc.text[s.start:s.end]] == [["2026"]]


def test_csv_rows_say_what_their_values_are(tmp_path: Path) -> None:
    path = make_text_file(tmp_path / "сорта.csv", "Сорт;Срок;Урожай\nГеракл;август;12\nПолка;июль;9\n", "cp1251")
    doc = parse_file(str(path), "сорта.csv", "text/csv", get_settings())
    assert doc.source_type == "csv"
    assert doc.text.splitlines() == ["Сорт | Срок | Урожай", "Сорт: Геракл; Срок: август; Урожай: 12",
                                     "Сорт: Полка; Срок: июль; Урожай: 9"]


def test_empty_docx(tmp_path: Path) -> None:
    path = make_docx([], None, tmp_path / "blank.docx")
    assert _error(path).user_message == "В файле «blank.docx» нет текста — индексировать нечего."


def test_docx_heading_styles_become_sections(tmp_path: Path) -> None:
    for russian in (False, True):
        path = make_headed_docx(tmp_path / f"garden-{russian}.docx", russian_styles=russian)
        doc = parse_file(str(path), path.name, None, get_settings())
        assert [s.path for s in doc.sections] == [[], ["Весна"], ["Весна", "Полив"], ["Осень"]]
        assert doc.text[doc.sections[2].start : doc.sections[2].end].strip() == (
            "Полив\n\nМолодые деревья поливают раз в неделю, ведро под каждое дерево.")
        assert doc.title == "Обслуживание сада"  # the «Title» paragraph, no core title set


# --- TXT / MD ------------------------------------------------------------------


@pytest.mark.parametrize("encoding, bom", [
    ("utf-8", False),
    ("utf-8", True),
    ("cp1251", False),
    ("koi8-r", False),
    ("utf-16-le", True),
    ("utf-16-be", True),
    ("utf-16-le", False),
    ("utf-16-be", False),
])
def test_text_encodings(tmp_path: Path, encoding: str, bom: bool) -> None:
    path = make_text_file(tmp_path / "note.txt", TEXT, encoding, bom=bom)
    doc = parse_file(str(path), "note.txt", "text/plain", get_settings())
    assert doc.text == TEXT
    assert doc.source_type == "txt"
    assert doc.meta["encoding"]


def test_cp1251_detected(tmp_path: Path) -> None:
    path = make_text_file(tmp_path / "old.txt", TEXT, "cp1251")
    assert parse_file(str(path), "old.txt", None, get_settings()).meta["encoding"] == "cp1251"


def test_markdown(tmp_path: Path) -> None:
    source = "# Заметки о роще\n\nБерёзы сажаем весной, **обязательно** с мульчей.\n\n- полив\n- свет\n"
    path = make_text_file(tmp_path / "notes.md", source, "utf-8")
    doc = parse_file(str(path), "notes.md", "text/markdown", get_settings())
    assert doc.source_type == "md"
    assert doc.title == "Заметки о роще"
    assert doc.text == "Заметки о роще\n\nБерёзы сажаем весной, обязательно с мульчей.\n- полив\n- свет"


def test_markdown_headings_become_sections(tmp_path: Path) -> None:
    path = make_text_file(tmp_path / "notes.md", MARKDOWN_NOTES, "utf-8")
    doc = parse_file(str(path), "notes.md", None, get_settings())
    assert [s.path for s in doc.sections] == [
        ["Заметки садовода"],
        ["Заметки садовода", "Малина"],
        ["Заметки садовода", "Малина", "Сорта"],
        ["Заметки садовода", "Смородина"],
    ]
    raspberry = doc.sections[1]
    assert "# это комментарий в коде" in doc.text[raspberry.start : raspberry.end]  # code is no heading
    assert doc.text[doc.sections[3].start :].startswith("Смородина\n\nСмородину")  # no underline left


# --- HTML ----------------------------------------------------------------------


def test_local_html_file_keeps_inline_text_lists_and_sections(tmp_path: Path) -> None:
    from tests.support.documents import manual_html

    path = tmp_path / "rect-select.html"
    path.write_text(manual_html(), encoding="utf-8")
    doc = parse_file(str(path), "rect-select.html", None, get_settings())
    assert doc.source_type == "html" and doc.title == MANUAL_HTML_TITLE
    # a menu path made of inline elements keeps its names
    assert "из меню изображения Инструменты → Выделение → Прямоугольное выделение;" in doc.text
    # the list stays, right after its lead-in line
    assert ("несколькими способами:\n- из меню изображения" in doc.text
            and "- клавишей быстрого доступа R." in doc.text)
    # nested inline code keeps its words, in place
    assert ("вызовите gimp-image-select-rectangle с параметрами image, operation, x, y и размерами"
            in doc.text)
    # navigation around the content is not text
    for navigation in ("Пред.", "Наверх", "Эллиптическое выделение", "Report a bug"):
        assert navigation not in doc.text
    assert [s.path for s in doc.sections] == [
        [MANUAL_HTML_TITLE],
        [MANUAL_HTML_TITLE, "Активация инструмента"],
        [MANUAL_HTML_TITLE, "Сценарий выделения"],
        [MANUAL_HTML_TITLE, "Сценарий выделения", "Ширина и высота"],
    ]


def test_html_without_extension_is_sniffed(tmp_path: Path) -> None:
    from tests.support.documents import manual_html

    path = tmp_path / "page"
    path.write_text(manual_html(), encoding="utf-8")
    assert parse_file(str(path), "page", None, get_settings()).source_type == "html"


def test_crlf_normalised(tmp_path: Path) -> None:
    path = make_text_file(tmp_path / "win.txt", TEXT.replace("\n", "\r\n"), "cp1251")
    assert parse_file(str(path), "win.txt", None, get_settings()).text == TEXT


@pytest.mark.parametrize("junk", ["random", "controls"])
def test_binary_junk_in_txt(tmp_path: Path, junk: str) -> None:
    path = tmp_path / "data.txt"
    if junk == "random":
        path.write_bytes(random.Random(3).randbytes(4000))
    else:
        path.write_bytes(("Текст " + "\x01\x02\x03\x1b" * 50).encode("utf-8"))
    assert _error(path).user_message == "Файл не похож на текст — внутри двоичные данные."


@pytest.mark.parametrize("content", [b"", b"   \n\n\t  \r\n"])
def test_empty_text_file(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "empty.txt"
    path.write_bytes(content)
    assert _error(path).user_message == "В файле «empty.txt» нет текста — индексировать нечего."


# --- unsupported, size ---------------------------------------------------------


def test_image_disguised_as_text_is_taken_for_an_image(tmp_path: Path) -> None:
    path = make_png(tmp_path / "photo.png")
    with grove_settings(ocr_command="no-such-tesseract"):
        error = _error(path, name="readme.txt", mime="text/plain")
    assert "изображение PNG" in error.user_message


def test_executable_and_unknown_unsupported(tmp_path: Path) -> None:
    exe = tmp_path / "setup.exe"
    exe.write_bytes(b"MZ\x90\x00\x03\x00\x00\x00\x04\x00\x00\x00\xff\xff" + bytes(200))
    assert "исполняемый файл" in _error(exe).user_message
    unknown = tmp_path / "data.xyz"
    unknown.write_text("какой-то текст в неизвестном формате", encoding="utf-8")
    error = _error(unknown, mime="application/x-whatever")
    assert error.user_message == f"Этот тип файла не поддерживается: XYZ. {SUPPORTED}."


def test_legacy_doc_unsupported(tmp_path: Path) -> None:
    doc = tmp_path / "old.doc"
    doc.write_bytes(b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + bytes(512))
    assert "сохраните файл как DOCX" in _error(doc, mime="application/msword").user_message


def test_file_over_20_mb(tmp_path: Path) -> None:
    path = tmp_path / "huge.txt"
    with path.open("wb") as handle:  # sparse: no 21 MB actually written
        handle.truncate(21 * 1024 * 1024)
    error = _error(path)
    assert "Максимум — 20 МБ" in error.user_message
    assert "Telegram" in error.user_message
    assert str(21 * 1024 * 1024) in error.reason


def test_missing_file(tmp_path: Path) -> None:
    assert _error(tmp_path / "nowhere.pdf").user_message == "Не удалось прочитать файл."


def test_prefect_task_wraps_parse_file(tmp_path: Path) -> None:
    path = make_text_file(tmp_path / "t.txt", TEXT, "utf-8")
    assert node.parse_file_task.name == "parse-file"
    assert node.parse_file_task.fn(str(path), "t.txt", None, get_settings()).text == TEXT
    assert os.path.exists(path)


def test_hyphenation_is_decided_by_the_document_itself() -> None:
    from nodes.ingestion.formats.pdf_layout import join_hyphenation, strip_leaders, vocabulary

    page = ("Программа METAFONT рисует шрифты; из-за ошибки файл texmf-dist пуст.\n"
            "Запустите META-\nFONT и дистри-\nбутив из-\nза ошибки, каталог texmf-\ndist,\n"
            "платформа i386-\ncygwin, годы 2010-\n2017, Debian-\nпакет, что-\nто, мес-\nто.")
    joined = join_hyphenation(page, vocabulary([page])).text
    assert joined.endswith("Запустите METAFONT и дистрибутив из-за ошибки, каталог texmf-dist,\n"
                           "платформа i386-cygwin, годы 2010-2017, Debian-пакет, что-то, место.")
    assert strip_leaders("1.2 Установка . . . . . . . . 12\nИтак... конец.") == "1.2 Установка 12\nИтак... конец."


def test_rtf_is_read_in_its_own_code_page(tmp_path: Path) -> None:
    path = make_rtf(tmp_path / "заметки.rtf", ["Малину обрезают осенью.", "Смородину — ранней весной."])
    doc = parse_file(str(path), "заметки.rtf", "application/rtf", get_settings())
    assert doc.source_type == "rtf" and doc.title == "заметки"
    assert "Малину обрезают осенью." in doc.text and "Смородину — ранней весной." in doc.text
    assert "Times New Roman" not in doc.text  # the font table is not text
