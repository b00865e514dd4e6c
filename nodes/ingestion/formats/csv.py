"""CSV: a table as text — the header row, then each row as «column: value; …», so a row
found alone still says what its values are."""

from __future__ import annotations

import csv

from nodes.ingestion.formats.base import Format, Upload, empty, file_stem
from nodes.ingestion.formats.text import decode_text
from grove.core.ingest_types import ExtractedDocument


def parse(upload: Upload) -> ExtractedDocument:
    name = upload.name
    text, encoding = decode_text(upload.path.read_bytes(), name)
    try:
        dialect: type[csv.Dialect] | csv.Dialect = csv.Sniffer().sniff(text[:4096], delimiters=",;\t|")
    except csv.Error:
        dialect = csv.excel
    rows = [[c.strip() for c in row] for row in csv.reader(text.splitlines(), dialect) if any(c.strip() for c in row)]
    if not rows:
        raise empty(name, f"CSV {name} has no rows")
    header, body = rows[0], rows[1:]
    lines = [" | ".join(header)]
    for row in body:
        pairs = [f"{h}: {v}" if h else v for h, v in zip(header, row, strict=False) if v]
        lines.append("; ".join(pairs + row[len(header):]))
    return ExtractedDocument(source_type="csv", source_identifier=name, title=file_stem(name),
                             text="\n".join(lines), meta={"encoding": encoding, "rows": len(body)})


FORMAT = Format(name="csv", label="CSV", parse=parse, hint="CSV", order=65,
                extensions=frozenset({".csv"}), mime_types=frozenset({"text/csv"}))
