"""What every format shares (`nodes.ingestion.formats.base`): sniffing the first bytes, the upload
as the formats see it, the zip-bomb check, junk titles, text helpers and sections from blocks."""

from __future__ import annotations

from grove.core.settings import get_settings
import zipfile
from pathlib import Path

import pytest

from grove.core.ingest_types import ExtractedDocument, IngestError
from nodes.ingestion.formats import base
from nodes.ingestion.formats.base import (
    Format,
    Upload,
    check_zip_bomb,
    clean_text,
    empty,
    file_stem,
    is_junk_title,
    sections_from_blocks,
    sniff,
    unsupported,
)
from nodes.ingestion.parse_files import parse_file


@pytest.mark.parametrize("head, expected", [
    (b"%PDF-1.7\n%\xe2\xe3", ("pdf", "PDF")),
    (b"\r\n  %PDF-1.4", ("pdf", "PDF")),  # whitespace before the header is tolerated
    (b"PK\x03\x04\x14\x00", ("zip", "ZIP-архив")),
    (b"PK\x05\x06" + bytes(18), ("zip", "ZIP-архив")),  # an empty zip
    (b"{\\rtf1\\ansi", ("rtf", "RTF")),
    (b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + bytes(8), ("ole", "документ Office старого формата")),
    (b"\x00\x00\x00\x18ftypmp42", ("binary", "аудио/видео MP4")),
    (b"RIFF\x10\x00\x00\x00WEBPVP8 ", ("image", "изображение WEBP")),
    (b"RIFF\x10\x00\x00\x00WAVEfmt ", ("binary", "аудио WAV")),
    (b"RIFF\x10\x00\x00\x00AVI LIST", ("binary", "видео AVI")),
    (b"\x89PNG\r\n\x1a\n\x00\x00", ("image", "изображение PNG")),
    (b"\xff\xd8\xff\xe0", ("image", "изображение JPEG")),
    (b"GIF89a\x01\x00", ("image", "изображение GIF")),
    (b"II*\x00\x08", ("image", "изображение TIFF")),
    (b"\x7fELF\x02\x01", ("binary", "исполняемый файл")),
    (b"\x1f\x8b\x08\x00", ("binary", "архив GZIP")),
    (b"OggS\x00\x02", ("binary", "аудио/видео OGG")),
    (b"Hello, world", (None, "")),
])
def test_sniff_names_the_kind_of_a_files_first_bytes(head: bytes, expected: tuple[str | None, str]) -> None:
    assert sniff(head) == expected


def test_two_letter_signatures_are_trusted_only_with_binary_bytes_after_them() -> None:
    assert sniff(b"BMW and MZ are just words in this text file") == (None, "")
    assert sniff(b"MZ stands for something here") == (None, "")
    assert sniff(b"BM\x36\x00\x0c\x00\x00\x00\x00\x00") == ("image", "изображение BMP")
    assert sniff(b"MZ\x90\x00\x03\x00") == ("binary", "исполняемый файл")


def test_an_upload_is_opened_with_its_head_signature_and_a_plain_mime_type(tmp_path: Path) -> None:
    path = tmp_path / "scan"
    path.write_bytes(b"%PDF-1.4\n" + b"x" * 5000)
    upload = Upload.open(path, "Отчёт.PDF", "Application/PDF; name=report")
    assert upload.mime == "application/pdf"
    assert upload.ext == ".pdf"  # lower-cased
    assert upload.signature == "pdf" and upload.signature_label == "PDF"
    assert len(upload.head) == 2048 and upload.head.startswith(b"%PDF-1.4")
    assert Upload.open(path, "x", None).mime == ""


def test_an_upload_lists_a_zips_parts_and_its_mimetype_part(tmp_path: Path) -> None:
    path = tmp_path / "book.epub"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("mimetype", "application/epub+zip\n")
        archive.writestr("META-INF/container.xml", "<container/>")
    upload = Upload.open(path, "book.epub", None)
    assert upload.signature == "zip"
    assert upload.zip_names == frozenset({"mimetype", "META-INF/container.xml"})
    assert upload.zip_mimetype == "application/epub+zip"  # stripped
    plain = tmp_path / "plain.zip"
    with zipfile.ZipFile(plain, "w") as archive:
        archive.writestr("a.txt", "a")
    assert Upload.open(plain, "plain.zip", None).zip_mimetype == ""


def test_a_zip_that_cannot_be_opened_raises_when_its_parts_are_asked_for(tmp_path: Path) -> None:
    path = tmp_path / "cut.zip"
    path.write_bytes(b"PK\x03\x04" + bytes(40))
    with pytest.raises(zipfile.BadZipFile):
        _ = Upload.open(path, "cut.zip", None).zip_names


def test_tiny_parts_may_compress_well_but_large_ones_may_not(tmp_path: Path) -> None:
    small = tmp_path / "small.zip"
    with zipfile.ZipFile(small, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("styles.xml", b"\x00" * (base.ZIP_RATIO_MIN_ENTRY - 1))  # ratio far above 100
    with zipfile.ZipFile(small) as archive:
        check_zip_bomb(archive, "small.zip")  # no error: a tiny XML part is exempt
    large = tmp_path / "large.zip"
    with zipfile.ZipFile(large, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("padding.bin", b"\x00" * base.ZIP_RATIO_MIN_ENTRY)
    with zipfile.ZipFile(large) as archive, pytest.raises(IngestError) as caught:
        check_zip_bomb(archive, "large.zip")
    assert caught.value.user_message.startswith("Файл выглядит подозрительно")
    assert "large.zip:padding.bin ratio" in caught.value.reason
    assert str(caught.value) == caught.value.reason


def test_ordinary_compression_passes_the_bomb_check(tmp_path: Path) -> None:
    path = tmp_path / "text.zip"
    words = " ".join(f"слово{n}" for n in range(30_000)).encode()  # > 64 KB, compresses ~5x
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("content.xml", words)
    with zipfile.ZipFile(path) as archive:
        check_zip_bomb(archive, "text.zip")


def _parse(upload: Upload) -> ExtractedDocument:
    return ExtractedDocument(source_type="txt", source_identifier=upload.name, text="x")


def test_a_format_is_called_broken_by_its_label_unless_it_has_its_own_words() -> None:
    plain = Format(name="demo", label="DEMO", parse=_parse)
    assert plain.broken == "Не удалось открыть DEMO: файл повреждён."
    own = Format(name="demo", label="DEMO", parse=_parse, broken_message="Сломан.")
    assert own.broken == "Сломан."


def test_a_format_claims_every_upload_of_its_signature_unless_it_looks_closer(tmp_path: Path) -> None:
    path = tmp_path / "a.bin"
    path.write_bytes(b"data")
    upload = Upload.open(path, "a.bin", None)
    assert Format(name="any", label="ANY", parse=_parse).claims(upload)
    picky = Format(name="picky", label="P", parse=_parse, accepts=lambda u: u.ext == ".p")
    assert not picky.claims(upload)


def test_refusals_say_what_is_wrong_in_russian() -> None:
    refused = unsupported("ZIP-архив", "why", hint="Пришлите PDF.")
    assert refused.user_message == "Этот тип файла не поддерживается: ZIP-архив. Пришлите PDF."
    assert refused.reason == "why"
    listed = unsupported("XYZ", "why")
    assert listed.user_message.startswith("Этот тип файла не поддерживается: XYZ. Поддерживаются PDF, DOCX")
    assert empty("пусто.txt", "r").user_message == "В файле «пусто.txt» нет текста — индексировать нечего."


@pytest.mark.parametrize("title, junk", [
    (None, True),
    ("   ", True),
    ("untitled", True),
    ("Без названия", True),
    ("Документ 3", True),
    ("document_12", True),
    ("Microsoft Word - отчёт.docx", True),
    ("scan0001.pdf", True),
    ("2024-01-15", True),  # no letters at all
    ("Отчёт о продажах за 2024 год", False),
    ("Документация по установке", False),  # starts like a placeholder but is a real title
    ("The PDF book", False),
])
def test_junk_titles_are_those_that_name_nothing(title: str | None, junk: bool) -> None:
    assert is_junk_title(title) is junk


def test_clean_text_unifies_line_ends_and_blank_runs() -> None:
    raw = "Первая строка  \r\nвторая\t\r\rтретья\x00\n\n\n\n\nчетвёртая\u00a0\n  "
    assert clean_text(raw) == "Первая строка\nвторая\n\nтретья\n\nчетвёртая"


@pytest.mark.parametrize("identifier, stem", [
    ("manual.pdf", "manual"),
    ("отчёт.за.год.docx", "отчёт.за.год"),
    ("https://host/docs/manual.pdf?x=1#p2", "manual"),
    ("https://host/docs/%D0%B3%D0%B0%D0%B9%D0%B4.html", "гайд"),
    ("https://host/docs/", "docs"),
    ("README", "README"),
])
def test_file_stem_is_the_title_of_last_resort(identifier: str, stem: str) -> None:
    assert file_stem(identifier) == stem


def test_sections_from_blocks_nest_headings_and_keep_the_lead_in() -> None:
    text, sections = sections_from_blocks([
        ("Вступление.", 0),
        ("Глава  1", 1), ("Текст главы.", 0),
        ("Раздел 1.1", 2), ("Текст раздела.", 0),
        ("Глава 2", 1), ("Конец.", 0),
    ])
    assert text == "Вступление.\n\nГлава  1\n\nТекст главы.\n\nРаздел 1.1\n\nТекст раздела.\n\nГлава 2\n\nКонец."
    assert [s.path for s in sections] == [[], ["Глава 1"], ["Глава 1", "Раздел 1.1"], ["Глава 2"]]
    assert [text[s.start:s.end] for s in sections] == [
        "Вступление.\n\n", "Глава  1\n\nТекст главы.\n\n", "Раздел 1.1\n\nТекст раздела.\n\n", "Глава 2\n\nКонец."]


def test_sections_from_blocks_without_headings_or_with_one_first() -> None:
    assert sections_from_blocks([("a", 0), ("b", 0)], separator="\n") == ("a\nb", [])
    text, sections = sections_from_blocks([("Заголовок", 3), ("тело", 0)])
    assert [(s.start, s.end, s.path) for s in sections] == [(0, len(text), ["Заголовок"])]


def test_a_png_named_like_a_pdf_is_read_as_a_picture(tmp_path: Path) -> None:
    from nodes.ingestion.formats import detect
    from tests.support.documents import make_png

    path = make_png(tmp_path / "report.pdf")
    assert detect(Upload.open(path, "report.pdf", "application/pdf")).name == "image"


def test_a_text_file_without_an_extension_or_mime_type_is_read_as_text(tmp_path: Path) -> None:
    path = tmp_path / "notes"
    path.write_text("Берёзы сажают весной и поливают всё лето.\n", encoding="utf-8")
    assert parse_file(str(path), "notes", None, get_settings()).source_type == "txt"
