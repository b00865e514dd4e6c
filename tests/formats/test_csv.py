"""CSV (`nodes.ingestion.formats.csv`): the header row, then each row as «column: value; …»."""

from __future__ import annotations

from pathlib import Path

import pytest

from grove.core.ingest_types import IngestError
from nodes.ingestion.formats import Upload, detect
from nodes.ingestion.formats.csv import FORMAT


def _upload(tmp_path: Path, name: str, text: str, encoding: str = "utf-8", mime: str | None = None) -> Upload:
    path = tmp_path / name
    path.write_bytes(text.encode(encoding))
    return Upload.open(path, name, mime)


def test_tab_separated_rows_with_quotes_blanks_and_extra_cells(tmp_path: Path) -> None:
    text = ('Сорт\tСрок\tПримечание\n'
            'Геракл\tавгуст\t"крупная, сладкая"\n'
            '\t\t\n'                          # an empty row is skipped
            'Полка\t\tранняя\tлишняя ячейка\n')  # an empty value is left out, an extra cell kept
    document = FORMAT.parse(_upload(tmp_path, "малина.csv", text))
    assert document.source_type == "csv" and document.title == "малина"
    assert document.text.splitlines() == [
        "Сорт | Срок | Примечание",
        "Сорт: Геракл; Срок: август; Примечание: крупная, сладкая",
        "Сорт: Полка; Примечание: ранняя; лишняя ячейка",
    ]
    assert document.meta == {"encoding": "utf-8", "rows": 2}


def test_a_column_without_a_name_gives_its_bare_value(tmp_path: Path) -> None:
    document = FORMAT.parse(_upload(tmp_path, "t.csv", "Сорт,,Урожай\nГеракл,поздний,12\n"))
    assert document.text.splitlines() == ["Сорт |  | Урожай", "Сорт: Геракл; поздний; Урожай: 12"]


def test_a_single_column_file_falls_back_to_commas(tmp_path: Path) -> None:
    document = FORMAT.parse(_upload(tmp_path, "list.csv", "Сорт\nГеракл\nПолка\n", "cp1251"))
    assert document.text.splitlines() == ["Сорт", "Сорт: Геракл", "Сорт: Полка"]
    assert document.meta["encoding"] == "cp1251"


def test_a_file_of_blank_rows_has_no_text(tmp_path: Path) -> None:
    with pytest.raises(IngestError) as caught:
        FORMAT.parse(_upload(tmp_path, "blank.csv", ";;\n ; ;\n"))
    assert caught.value.user_message == "В файле «blank.csv» нет текста — индексировать нечего."


def test_csv_is_claimed_by_its_extension_or_mime_type(tmp_path: Path) -> None:
    assert detect(_upload(tmp_path, "data.csv", "a,b\n1,2\n")) is FORMAT
    assert detect(_upload(tmp_path, "data", "a,b\n1,2\n", mime="text/csv")) is FORMAT
    assert FORMAT.signatures == frozenset()
