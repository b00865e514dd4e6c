"""RTF (`nodes.ingestion.formats.rtf`): the file's code page and \\u escapes decoded, groups that
are not text skipped; claimed by its `{\\rtf` signature."""

from __future__ import annotations

from pathlib import Path

import pytest

from grove.core.ingest_types import IngestError
from nodes.ingestion.formats import Upload, detect
from nodes.ingestion.formats.rtf import FORMAT


def _upload(tmp_path: Path, name: str, rtf: str, mime: str | None = None) -> Upload:
    path = tmp_path / name
    path.write_bytes(rtf.encode("utf-8"))
    return Upload.open(path, name, mime)


def _cp1251(text: str) -> str:
    return "".join(f"\\'{byte:02x}" for byte in text.encode("cp1251"))


RTF = ("{\\rtf1\\ansi\\ansicpg1251\\deff0"
       "{\\fonttbl{\\f0\\fswiss Arial;}}"
       "{\\colortbl;\\red255\\green0\\blue0;}"
       "{\\stylesheet{\\s1 heading 1;}}"
       "{\\header \\pard " + _cp1251("Колонтитул") + "\\par}"
       "\\pard\\b \\'cf\\'ee\\'eb\\'e8\\'e2\\b0  \\u8212? \\'f0\\'e0\\'e7 \\'e2 \\'ed\\'e5\\'e4\\'e5\\'eb\\'fe.\\par\n"
       "\\pard \\u1071\\'3f\\u1073\\'3f\\u1083\\'3f\\u1086\\'3f\\u1085\\'3f\\u1103\\'3f\\par\n"
       "}")


def test_code_page_bytes_and_unicode_escapes_decode_and_tables_are_skipped(tmp_path: Path) -> None:
    document = FORMAT.parse(_upload(tmp_path, "уход.rtf", RTF))
    assert document.source_type == "rtf" and document.title == "уход"
    assert document.text.splitlines() == ["Полив — раз в неделю.", "Яблоня"]
    for skipped in ("Arial", "heading", "red255", "Колонтитул"):
        assert skipped not in document.text


def test_an_rtf_without_text_is_refused(tmp_path: Path) -> None:
    with pytest.raises(IngestError) as caught:
        FORMAT.parse(_upload(tmp_path, "blank.rtf", "{\\rtf1\\ansi{\\fonttbl{\\f0 Arial;}}\\par\\par}"))
    assert caught.value.user_message == "В файле «blank.rtf» нет текста — индексировать нечего."


def test_rtf_is_claimed_by_its_signature_whatever_it_is_called(tmp_path: Path) -> None:
    assert detect(_upload(tmp_path, "письмо.doc", RTF, "application/msword")) is FORMAT  # Word saves RTF as .doc
    assert detect(_upload(tmp_path, "письмо", RTF)) is FORMAT


def test_a_file_named_rtf_without_the_signature_is_broken(tmp_path: Path) -> None:
    upload = _upload(tmp_path, "письмо.rtf", "Просто текст, а не RTF.")
    with pytest.raises(IngestError) as caught:
        detect(upload)
    assert caught.value.user_message == "Не удалось открыть RTF: файл повреждён."
