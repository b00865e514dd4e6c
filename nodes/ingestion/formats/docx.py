"""DOCX (python-docx): paragraphs and tables in document order, heading styles and outline
levels as sections, the «Title» paragraph or first heading as the title when the document's
own is junk."""

from __future__ import annotations

import re
import zipfile
from typing import Any

from nodes.ingestion.native import with_libxml
from nodes.ingestion.formats.base import Blocks, Format, Upload, empty, file_stem, is_junk_title, sections_from_blocks
from nodes.ingestion.formats.zipped import has_parts
from grove.core.ingest_types import ExtractedDocument, IngestError

BROKEN = "Не удалось открыть DOCX: файл повреждён или это не документ Word."
_HEADING_STYLE = re.compile(r"^(?:heading|заголовок)\s*(\d)$", re.I)


def _outline_level(paragraph: Any) -> int | None:
    """Heading level 1-9 of a DOCX paragraph, from its outline level (direct or through its
    style and the styles it is based on), else from a «Heading N» / «Заголовок N» style name."""
    from docx.oxml.ns import qn

    def level_of(properties: Any) -> int | None:
        if properties is None:
            return None
        found = properties.find(qn("w:outlineLvl"))
        if found is None:
            return None
        value = int(found.get(qn("w:val"), "9"))
        return value + 1 if value < 9 else 0  # 9 is "body text"

    level = level_of(paragraph._p.pPr)
    style = paragraph.style
    seen = 0
    while level is None and style is not None and seen < 20:
        level = level_of(style.element.pPr)
        if level is None:
            named = _HEADING_STYLE.match((style.name or "").strip())
            level = int(named.group(1)) if named else None
        style, seen = style.base_style, seen + 1
    return level or None


def _blocks(document: Any) -> tuple[Blocks, int, int, str | None]:
    """Paragraph and table texts in document order with their heading level (0: body);
    counts of paragraphs and tables; the text of a «Title»-styled paragraph, if any."""
    from docx.table import Table

    blocks: Blocks = []
    paragraphs = tables = 0
    title: str | None = None
    for item in document.iter_inner_content():
        if isinstance(item, Table):
            rows = []
            for row in item.rows:
                seen: set[int] = set()
                cells = []
                for cell in row.cells:  # merged cells repeat: keep each once
                    if id(cell._tc) in seen:
                        continue
                    seen.add(id(cell._tc))
                    cells.append(" ".join(cell.text.split()))
                if any(cells):
                    rows.append(" | ".join(cells))
            if rows:
                blocks.append(("\n".join(rows), 0))
                tables += 1
        else:
            text = item.text.strip()
            if text:
                style_name = (item.style.name or "") if item.style is not None else ""
                if title is None and style_name.strip().lower() in ("title", "название", "заголовок"):
                    title = " ".join(text.split())
                blocks.append((text, _outline_level(item) or 0))
                paragraphs += 1
    return blocks, paragraphs, tables, title


@with_libxml  # python-docx is lxml
def parse(upload: Upload) -> ExtractedDocument:
    import docx
    from docx.opc.exceptions import PackageNotFoundError

    name = upload.name
    try:
        document = docx.Document(str(upload.path))
        blocks, paragraphs, tables, styled_title = _blocks(document)
        core = document.core_properties
        title = (core.title or "").strip()
        author = (core.author or "").strip()
    except (PackageNotFoundError, zipfile.BadZipFile, KeyError, ValueError, TypeError,
            AttributeError, IndexError, OSError, EOFError, SyntaxError) as exc:
        # lxml's XMLSyntaxError is a SyntaxError subclass
        raise IngestError(BROKEN, f"python-docx failed on {name}: {exc!r}") from exc
    if not blocks:
        raise empty(name, f"DOCX {name} has no text")
    text, sections = sections_from_blocks(blocks)
    if is_junk_title(title):
        first_heading = next((" ".join(t.split()) for t, level in blocks if level), None)
        title = styled_title or first_heading or file_stem(name)
    return ExtractedDocument(source_type="docx", source_identifier=name, title=title or None,
                             author=author or None, text=text, sections=sections,
                             meta={"paragraphs": paragraphs, "tables": tables})


FORMAT = Format(
    name="docx", label="DOCX", parse=parse, hint="DOCX", order=20,
    signatures=frozenset({"zip"}), accepts=has_parts("word/document.xml"),
    extensions=frozenset({".docx"}), broken_message=BROKEN,
)
