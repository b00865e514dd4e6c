"""Turn an uploaded file into plain text (the "База" file branch).

`parse_file` looks at the file's first bytes (magic numbers) before trusting its
name or the MIME type Telegram reports, then hands it to one parser:

* PDF  (pypdf)       — one string per page in `pages`, cleaned of running
                       headers/footers and line-end hyphenation, with page labels
                       and outline sections (`nodes.pdf_text`); encrypted, corrupt
                       and scanned (image-only) PDFs are read by OCR (`nodes.ocr`).
* Images (photos of pages: PNG, JPEG, TIFF, …) — OCR, Russian and English.
* DOCX (python-docx) — paragraphs and tables in document order, heading styles
                       as sections; the zip's central directory is checked first
                       so a zip bomb is refused before anything is decompressed.
* ODT, EPUB, PPTX, XLSX (`nodes.office_files`) — the zip's XML parts: headings,
                       paragraphs, chapters in reading order, slides, sheets as sections.
* CSV                — rows as «column: value» lines under the header.
* RTF (striprtf)     — the text in the file's own code page.
* HTML (.html/.htm/.xhtml) — the same extraction as links (`nodes.html_text`):
                       main content, inline elements, lists, h1–h6 sections.
* TXT / MD           — BOM, strict UTF-8, UTF-16 without BOM, then
                       charset-normalizer among the Cyrillic code pages;
                       Markdown `#` / underlined headings become sections.

Everything else (images, archives, programs, unknown) is refused. Messages for
the user are Russian; `IngestError.reason` is English for the logs.
"""

from __future__ import annotations

import codecs
import os
import re
import unicodedata
import zipfile
from pathlib import Path
from typing import IO, Any

from grove.observe import task

from grove.settings import get_settings
from nodes import office_files, pdf_text
from nodes.ingest_types import ExtractedDocument, IngestError, Section

SUPPORTED_HINT = ("Поддерживаются PDF (и сканы), DOCX, ODT, EPUB, PPTX, XLSX, CSV, RTF, HTML, TXT, MD, фото страниц, "
                  "а также аудио и видео.")

TEXT_EXTENSIONS = {".txt": "txt", ".text": "txt", ".md": "md", ".markdown": "md", ".csv": "csv"}
TEXT_MIME_TYPES = {"text/plain": "txt", "text/markdown": "md", "text/x-markdown": "md", "text/csv": "csv"}
HTML_EXTENSIONS = {".html", ".htm", ".xhtml"}
HTML_MIME_TYPES = {"text/html", "application/xhtml+xml"}
_HTML_START = re.compile(rb"^\s*(?:<\?xml[^>]*>\s*)?(?:<!--.*?-->\s*)*<(?:!doctype\s+html|html|head|body)\b",
                         re.I | re.S)

# zip-bomb limits for DOCX (checked on the central directory, before decompressing)
DOCX_MAX_UNCOMPRESSED = 200 * 1024 * 1024
DOCX_MAX_RATIO = 100
DOCX_RATIO_MIN_ENTRY = 64 * 1024  # tiny XML parts may compress very well; ignore them
DOCX_MAX_ENTRIES = 10_000

# binary signatures we recognise only to name them in the refusal
_MAGIC_NAMES: tuple[tuple[bytes, str], ...] = (
    (b"\x89PNG\r\n\x1a\n", "изображение PNG"),
    (b"\xff\xd8\xff", "изображение JPEG"),
    (b"GIF87a", "изображение GIF"),
    (b"GIF89a", "изображение GIF"),
    (b"BM", "изображение BMP"),
    (b"II*\x00", "изображение TIFF"),
    (b"MM\x00*", "изображение TIFF"),
    (b"\x7fELF", "исполняемый файл"),
    (b"MZ", "исполняемый файл"),
    (b"\x1f\x8b", "архив GZIP"),
    (b"7z\xbc\xaf\x27\x1c", "архив 7-Zip"),
    (b"Rar!", "архив RAR"),
    (b"BZh", "архив BZIP2"),
    (b"\xfd7zXZ\x00", "архив XZ"),
    (b"ID3", "аудио"),
    (b"OggS", "аудио/видео OGG"),
    (b"fLaC", "аудио FLAC"),
    (b"\x1aE\xdf\xa3", "видео MKV/WebM"),
)
_OLE_MAGIC = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"
_ZIP_MAGICS = (b"PK\x03\x04", b"PK\x05\x06")


def _unsupported(kind: str, reason: str) -> IngestError:
    return IngestError(f"Этот тип файла не поддерживается: {kind}. {SUPPORTED_HINT}", reason)


def _empty(name: str, reason: str) -> IngestError:
    return IngestError(f"В файле «{name}» нет текста — индексировать нечего.", reason)


def _clean(text: str) -> str:
    text = text.replace("\r\n", "\n").replace("\r", "\n").replace("\x00", "")
    text = re.sub(r"[ \t\u00a0]+\n", "\n", text)
    return re.sub(r"\n{3,}", "\n\n", text).strip()


def _mb(size: int) -> str:
    return f"{size / (1024 * 1024):.1f}".rstrip("0").rstrip(".")


# --- PDF -------------------------------------------------------------------------


def _page_labels(reader: Any, count: int) -> list[str]:
    """The page numbers the PDF prints (its /PageLabels), physical numbers where it defines none."""
    try:
        labels = [str(label) for label in reader.page_labels]
    except Exception:  # a malformed /PageLabels tree: physical numbers are still right
        labels = []
    if len(labels) != count or not all(label.strip() for label in labels):
        return [str(i + 1) for i in range(count)]
    return labels


def _read_pdf_pages(reader: Any) -> tuple[list[str], list[list[pdf_text.Run]]]:
    """Each page's text and the font size of every piece of it (one pypdf pass)."""
    texts: list[str] = []
    runs: list[list[pdf_text.Run]] = []
    for page in reader.pages:
        page_runs: list[pdf_text.Run] = []

        def visit(text: str, cm: Any, tm: Any, _font: Any, size: float,
                  into: list[pdf_text.Run] = page_runs) -> None:
            if text:
                into.append(pdf_text.Run(text, pdf_text.run_size(cm, tm, size or 0.0)))

        texts.append(_clean(page.extract_text(visitor_text=visit) or ""))
        runs.append(page_runs)
    return texts, runs


def _file_stem(identifier: str) -> str:
    """`manual` for «manual.pdf» or «https://host/docs/manual.pdf?x=1»."""
    from urllib.parse import unquote, urlsplit

    path = urlsplit(identifier).path if "://" in identifier else identifier
    name = unquote(path.rstrip("/").rsplit("/", 1)[-1]) or identifier
    return Path(name).stem or name


def clean_pdf_pages(raw_pages: list[str], labels: list[str]) -> tuple[list[str], dict[str, int]]:
    """Running lines and dot leaders removed, hyphenation joined (within and across pages);
    counts of each."""
    running = pdf_text.strip_running_lines(raw_pages, labels)
    pages = [pdf_text.strip_leaders(page) for page in running.pages]
    words = pdf_text.vocabulary(pages)
    across = pdf_text.join_across_pages(pages, words)
    joined = kept = 0
    for index, page in enumerate(pages):
        result = pdf_text.join_hyphenation(page, words)
        pages[index] = result.text
        joined += sum(1 for *_, join in result.decisions if join)
        kept += sum(1 for *_, join in result.decisions if not join)
    return pages, {"running_lines_removed": len(running.removed), "hyphens_joined": joined + across,
                   "hyphens_kept": kept}


def parse_pdf_source(source: str | Path | IO[bytes], identifier: str) -> ExtractedDocument:
    """Clean text of a PDF (a path or a binary stream): one string per physical page,
    page labels, title and sections (see `nodes.pdf_text`)."""
    from pypdf import PasswordType, PdfReader
    from pypdf.errors import DependencyError, FileNotDecryptedError, PdfReadError, PyPdfError

    encrypted = IngestError(
        "PDF защищён паролем — снимите защиту и пришлите файл снова.",
        f"encrypted PDF {identifier}",
    )
    corrupt_message = "Не удалось открыть PDF: файл повреждён."
    try:
        reader = PdfReader(source, strict=False)
        if reader.is_encrypted and reader.decrypt("") == PasswordType.NOT_DECRYPTED:
            raise encrypted
        raw_pages, runs = _read_pdf_pages(reader)
        labels = _page_labels(reader, len(raw_pages))
        headings = pdf_text.outline_headings(reader)
        info = reader.metadata
        title = (info.title or "").strip() if info else ""
        author = (info.author or "").strip() if info else ""
    except IngestError:
        raise
    except FileNotDecryptedError as exc:
        raise encrypted from exc
    except DependencyError as exc:
        raise IngestError(
            "PDF зашифрован способом, который я не умею открывать.", f"{identifier}: {exc}"
        ) from exc
    except (PdfReadError, PyPdfError, ValueError, KeyError, TypeError, AttributeError,
            IndexError, AssertionError, RecursionError, OSError, UnicodeError) as exc:
        raise IngestError(corrupt_message, f"corrupt PDF {identifier}: {exc!r}") from exc
    if not raw_pages:
        raise IngestError(corrupt_message, f"PDF {identifier} has no pages")
    if not any(raw_pages):
        raw_pages = scanned_pages(reader, identifier)
        runs = [[] for _ in raw_pages]  # no fonts in a scan: no font-size headings
        ocr_pages = len([p for p in raw_pages if p])
    else:
        ocr_pages = 0
    pages, counts = clean_pdf_pages(raw_pages, labels)
    body = pdf_text.body_size(runs)
    if not headings:
        headings = pdf_text.font_headings(runs, body)
    if pdf_text.is_junk_title(title):
        title = pdf_text.title_from_fonts(runs[0], body) or _file_stem(identifier)
    return ExtractedDocument(
        source_type="pdf",
        source_identifier=identifier,
        title=title or None,
        author=author or None,
        text=pdf_text.PAGE_SEPARATOR.join(pages),
        pages=pages,
        page_labels=labels,
        sections=pdf_text.locate_sections(pages, headings),
        meta={"page_count": len(pages), "empty_pages": sum(1 for p in pages if not p), **counts,
              "headings": len(headings), "ocr_pages": ocr_pages},
    )


def scanned_pages(reader: Any, identifier: str) -> list[str]:
    """A PDF without a text layer, read by OCR from each page's images (at most `ocr_max_pages`)."""
    from nodes import ocr, progress

    count = len(reader.pages)
    if not ocr.available():
        raise IngestError("В этом PDF нет текстового слоя — похоже, это скан. Распознавание сканов на этом "
                          "сервере не установлено (нужен tesseract-ocr).",
                          f"image-only PDF {identifier}: {count} pages and no OCR engine")
    limit = get_settings().ocr_max_pages
    if count > limit:
        raise IngestError(f"Это скан на {count} страниц — распознаю не больше {limit}. Пришлите часть документа.",
                          f"image-only PDF {identifier}: {count} pages > ocr_max_pages {limit}")
    pages = []
    for index, page in enumerate(reader.pages):
        progress.step("ocr", index, count)
        try:
            images = [image.data for image in page.images]
        except Exception as exc:  # pypdf on an image it cannot decode
            raise IngestError("Не удалось прочитать изображения в скане PDF.", f"{identifier}: {exc!r}") from exc
        pages.append("\n".join(filter(None, (ocr.image_text(data) for data in images))))
    progress.step("ocr", count, count)
    if not any(p.strip() for p in pages):
        raise IngestError("В этом PDF нет текстового слоя, и распознать текст на страницах не удалось.",
                          f"image-only PDF {identifier}: OCR read nothing on {count} pages")
    return pages


def parse_image(path: str | Path, name: str, kind: str) -> ExtractedDocument:
    """A photo or picture of a page (PNG, JPEG, TIFF, BMP, GIF, WEBP): its text by OCR."""
    from nodes import ocr

    if not ocr.available():
        raise _unsupported(f"{kind} (распознавание текста на этом сервере не установлено)",
                           f"{name}: {kind} and no OCR engine")
    text = _clean(ocr.image_text(Path(path).read_bytes()))
    if len(text.split()) < 3:
        raise IngestError(f"На изображении «{name}» не удалось распознать текст.",
                          f"{name}: OCR read {len(text)} characters")
    return ExtractedDocument(source_type="image", source_identifier=name, title=_file_stem(name), text=text,
                             meta={"ocr": True})


# --- DOCX ------------------------------------------------------------------------


def check_zip_bomb(archive: zipfile.ZipFile, name: str) -> None:
    """Refuse archives that would decompress to too much, judged by the central directory."""
    entries = archive.infolist()
    if len(entries) > DOCX_MAX_ENTRIES:
        raise _suspicious(f"zip bomb guard: {name} has {len(entries)} entries")
    total = 0
    for entry in entries:
        total += entry.file_size
        if total > DOCX_MAX_UNCOMPRESSED:
            raise _suspicious(f"zip bomb guard: {name} uncompresses to more than {DOCX_MAX_UNCOMPRESSED} bytes")
        if entry.file_size >= DOCX_RATIO_MIN_ENTRY:
            ratio = entry.file_size / max(entry.compress_size, 1)
            if ratio > DOCX_MAX_RATIO:
                raise _suspicious(f"zip bomb guard: {name}:{entry.filename} ratio {ratio:.0f}x "
                                  f"({entry.compress_size} -> {entry.file_size} bytes)")


def _suspicious(reason: str) -> IngestError:
    """The refusal, with its reason in the exception's own text (the Prefect run shows that)."""
    return IngestError("Файл DOCX выглядит подозрительно (после распаковки он огромный) — не открываю его.",
                       reason)


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


def _docx_blocks(document: Any) -> tuple[list[tuple[str, int]], int, int, str | None]:
    """Paragraph and table texts in document order with their heading level (0: body);
    counts of paragraphs and tables; the text of a «Title»-styled paragraph, if any."""
    from docx.table import Table

    blocks: list[tuple[str, int]] = []
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


def sections_from_blocks(blocks: list[tuple[str, int]], separator: str = "\n\n") -> tuple[str, list[Section]]:
    """Join (text, heading level) blocks; every heading opens a section under its enclosing ones."""
    parts: list[str] = []
    starts: list[tuple[int, list[str]]] = []
    stack: list[tuple[int, str]] = []
    length = 0
    for text, level in blocks:
        if parts:
            parts.append(separator)
            length += len(separator)
        if level:
            while stack and stack[-1][0] >= level:
                stack.pop()
            stack.append((level, " ".join(text.split())))
            starts.append((length, [t for _, t in stack]))
        parts.append(text)
        length += len(text)
    sections: list[Section] = []
    if starts and starts[0][0] > 0:
        sections.append(Section(start=0, end=starts[0][0], path=[]))
    for i, (start, path) in enumerate(starts):
        end = starts[i + 1][0] if i + 1 < len(starts) else length
        sections.append(Section(start=start, end=end, path=path))
    return "".join(parts), sections


def parse_docx(path: str | Path, name: str) -> ExtractedDocument:
    import docx
    from docx.opc.exceptions import PackageNotFoundError

    broken = "Не удалось открыть DOCX: файл повреждён или это не документ Word."
    try:
        with zipfile.ZipFile(path) as archive:
            check_zip_bomb(archive, name)
            kind = office_files.zip_kind(archive)
    except IngestError:
        raise
    except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, ValueError, EOFError) as exc:
        raise IngestError(broken, f"not a valid zip {name}: {exc!r}") from exc
    if kind != "docx":
        raise _unsupported(kind, f"{name} is a zip of kind {kind!r}, not a DOCX")
    try:
        document = docx.Document(str(path))
        blocks, paragraphs, tables, styled_title = _docx_blocks(document)
        core = document.core_properties
        title = (core.title or "").strip()
        author = (core.author or "").strip()
    except (PackageNotFoundError, zipfile.BadZipFile, KeyError, ValueError, TypeError,
            AttributeError, IndexError, OSError, EOFError, SyntaxError) as exc:
        # lxml's XMLSyntaxError is a SyntaxError subclass
        raise IngestError(broken, f"python-docx failed on {name}: {exc!r}") from exc
    if not blocks:
        raise _empty(name, f"DOCX {name} has no text")
    text, sections = sections_from_blocks(blocks)
    if pdf_text.is_junk_title(title):
        first_heading = next((" ".join(t.split()) for t, level in blocks if level), None)
        title = styled_title or first_heading or _file_stem(name)
    return ExtractedDocument(
        source_type="docx",
        source_identifier=name,
        title=title or None,
        author=author or None,
        text=text,
        sections=sections,
        meta={"paragraphs": paragraphs, "tables": tables},
    )


def parse_zip(path: str | Path, name: str) -> ExtractedDocument:
    """A zip: DOCX, or one of `office_files.ZIP_PARSERS` (ODT, EPUB, PPTX, XLSX); anything else is refused."""
    kind = ""
    try:
        with zipfile.ZipFile(path) as archive:
            check_zip_bomb(archive, name)
            kind = office_files.zip_kind(archive)
            if kind == "docx":
                parsed = None
            elif (parser := office_files.ZIP_PARSERS.get(kind)) is None:
                raise _unsupported(kind, f"{name} is a zip of kind {kind!r}")
            else:
                parsed = parser(archive)
    except IngestError:
        raise
    except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, ValueError, EOFError, KeyError,
            AttributeError, SyntaxError) as exc:  # lxml's XMLSyntaxError is a SyntaxError
        label = office_files.FORMAT_NAMES.get(kind, "архив")
        raise IngestError(f"Не удалось открыть {label}: файл повреждён.", f"{name}: {exc!r}") from exc
    if parsed is None:
        return parse_docx(path, name)
    if not parsed.blocks:
        raise _empty(name, f"{kind.upper()} {name} has no text")
    text, sections = sections_from_blocks(parsed.blocks)
    title = parsed.title
    if pdf_text.is_junk_title(title):
        title = next((t for t, level in parsed.blocks if level), None) if kind in ("odt", "epub") else None
        title = title or _file_stem(name)
    return ExtractedDocument(source_type=parsed.source_type, source_identifier=name, title=title,
                             author=parsed.author, text=text, sections=sections, meta=dict(parsed.meta))


# --- RTF --------------------------------------------------------------------------


def parse_rtf(path: str | Path, name: str) -> ExtractedDocument:
    """Rich Text (striprtf): the file's own code page (\\ansicpg) and \\u escapes decoded,
    groups that are not text (fonts, styles, pictures, headers) skipped."""
    from striprtf.striprtf import rtf_to_text

    raw = Path(path).read_bytes().decode("latin-1")  # RTF is 7-bit: the rest are escapes
    try:
        text = rtf_to_text(raw, encoding="cp1251", errors="replace")
    except (ValueError, LookupError, IndexError, KeyError) as exc:
        raise IngestError("Не удалось открыть RTF: файл повреждён.", f"striprtf failed on {name}: {exc!r}") from exc
    text = _clean(text)
    if not text:
        raise _empty(name, f"RTF {name} has no text")
    return ExtractedDocument(source_type="rtf", source_identifier=name, title=_file_stem(name), text=text)


# --- CSV --------------------------------------------------------------------------


def parse_csv(path: str | Path, name: str) -> ExtractedDocument:
    """A table as text: the header row, then each row as «column: value; …» so a row found alone
    still says what its values are."""
    import csv

    text, encoding = decode_text(Path(path).read_bytes(), name)
    try:
        dialect = csv.Sniffer().sniff(text[:4096], delimiters=",;\t|")
    except csv.Error:
        dialect = csv.excel
    rows = [[c.strip() for c in row] for row in csv.reader(text.splitlines(), dialect) if any(c.strip() for c in row)]
    if not rows:
        raise _empty(name, f"CSV {name} has no rows")
    header, body = rows[0], rows[1:]
    lines = [" | ".join(header)]
    for row in body:
        pairs = [f"{h}: {v}" if h else v for h, v in zip(header, row, strict=False) if v]
        lines.append("; ".join(pairs + row[len(header):]))
    return ExtractedDocument(source_type="csv", source_identifier=name, title=_file_stem(name),
                             text="\n".join(lines), meta={"encoding": encoding, "rows": len(body)})


# --- TXT / MD --------------------------------------------------------------------

_FALLBACK_CODEPAGES = ["cp1251", "koi8_r", "cp866"]


def _utf16_without_bom(data: bytes) -> str | None:
    """'utf-16-le'/'utf-16-be' for BOM-less UTF-16, else None.

    Latin and Cyrillic text in UTF-16 has a high byte of 0x00 or 0x04 in (almost)
    every code unit, at odd offsets for LE and even offsets for BE; single-byte
    encodings never look like that (0x00 and 0x04 are control characters there).
    """
    if len(data) < 2 or len(data) % 2:
        return None
    sample = data[: 64 * 1024]
    units = len(sample) // 2
    for codec, high in (("utf-16-le", sample[1::2]), ("utf-16-be", sample[0::2])):
        typical = high.count(0) + high.count(4)
        if typical >= 0.95 * units:
            return codec
    return None


def _control_share(text: str) -> float:
    if not text:
        return 0.0
    sample = text[:200_000]
    bad = sum(
        1 for ch in sample
        if (unicodedata.category(ch) == "Cc" and ch not in "\t\n\r\f\v") or ch == "\ufffd"
    )
    return bad / len(sample)


def decode_text(data: bytes, name: str) -> tuple[str, str]:
    """Decode a text file; returns (text, encoding). Raises IngestError on binary junk."""
    junk = IngestError(
        "Файл не похож на текст — внутри двоичные данные.", f"binary content in {name}"
    )
    for bom, codec in (
        (codecs.BOM_UTF32_LE, "utf-32"),
        (codecs.BOM_UTF32_BE, "utf-32"),
        (codecs.BOM_UTF8, "utf-8-sig"),
        (codecs.BOM_UTF16_LE, "utf-16"),
        (codecs.BOM_UTF16_BE, "utf-16"),
    ):
        if data.startswith(bom):
            try:
                text = data.decode(codec)
            except UnicodeDecodeError as exc:
                raise IngestError(
                    "Не удалось прочитать текст: файл повреждён (неверная кодировка).",
                    f"{name}: BOM says {codec} but decoding failed: {exc}",
                ) from exc
            encoding = codec
            break
    else:
        codec = _utf16_without_bom(data)
        if codec is not None:
            try:
                text = data.decode(codec)
            except UnicodeDecodeError as exc:
                raise junk from exc
            encoding = codec
        elif b"\x00" in data:
            raise junk  # NUL bytes without the UTF-16 pattern: binary
        else:
            try:
                text, encoding = data.decode("utf-8"), "utf-8"
            except UnicodeDecodeError:
                from charset_normalizer import from_bytes

                best = from_bytes(data, cp_isolation=_FALLBACK_CODEPAGES).best()
                if best is None:
                    raise junk from None
                encoding = best.encoding
                text = str(best)
    if _control_share(text) > 0.01:
        raise junk
    return text, encoding


def parse_text(path: str | Path, name: str, source_type: str) -> ExtractedDocument:
    data = Path(path).read_bytes()
    text, encoding = decode_text(data, name)
    text = _clean(text.lstrip("\ufeff"))
    if not text:
        raise _empty(name, f"text file {name} is empty")
    title = None
    sections: list[Section] = []
    if source_type == "md":
        heading = re.search(r"^#\s+(.+?)\s*#*\s*$", text, re.M)
        title = heading.group(1) if heading else None
        sections = markdown_sections(text)
    return ExtractedDocument(
        source_type=source_type,  # type: ignore[arg-type]
        source_identifier=name,
        title=title,
        text=text,
        sections=sections,
        meta={"encoding": encoding},
    )


_MD_ATX = re.compile(r"^ {0,3}(#{1,6})[ \t]+(.+?)(?:[ \t]+#+)?[ \t]*$")
_MD_SETEXT = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")
_MD_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")


def markdown_sections(text: str) -> list[Section]:
    """Sections of a Markdown text: ATX (`## Title`) and setext (underlined) headings,
    ignoring lines inside fenced code blocks."""
    starts: list[tuple[int, int, str]] = []  # (offset, level, heading)
    fence: str | None = None
    offset = 0
    previous: tuple[int, str] | None = None  # the last non-blank paragraph line
    for line in text.splitlines(keepends=True):
        stripped = line.rstrip("\r\n")
        opened = _MD_FENCE.match(stripped)
        if fence is not None:
            if opened and opened.group(1)[0] == fence[0] and len(opened.group(1)) >= len(fence):
                fence = None
        elif opened:
            fence, previous = opened.group(1), None
        elif (atx := _MD_ATX.match(stripped)) is not None:
            starts.append((offset, len(atx.group(1)), atx.group(2).strip()))
            previous = None
        elif (setext := _MD_SETEXT.match(stripped)) is not None and previous is not None:
            starts.append((previous[0], 1 if setext.group(1)[0] == "=" else 2, previous[1]))
            previous = None
        else:
            previous = (offset, stripped.strip()) if stripped.strip() else None
        offset += len(line)
    blocks_at: list[tuple[int, list[str]]] = []
    stack: list[tuple[int, str]] = []
    for start, level, heading in starts:
        while stack and stack[-1][0] >= level:
            stack.pop()
        stack.append((level, heading))
        blocks_at.append((start, [h for _, h in stack]))
    sections: list[Section] = []
    if blocks_at and blocks_at[0][0] > 0:
        sections.append(Section(start=0, end=blocks_at[0][0], path=[]))
    for i, (start, path) in enumerate(blocks_at):
        end = blocks_at[i + 1][0] if i + 1 < len(blocks_at) else len(text)
        if end > start:
            sections.append(Section(start=start, end=end, path=path))
    return sections


# --- HTML ----------------------------------------------------------------------


def parse_html(path: str | Path, name: str) -> ExtractedDocument:
    """A local HTML file, extracted exactly as a fetched page is (`nodes.html_text`)."""
    from nodes import html_text

    data = Path(path).read_bytes()
    markup, encoding = html_text.decode_body(data, None, html=True)
    try:
        extraction = html_text.extract(markup)
    except Exception as exc:  # lxml/trafilatura on hostile markup
        raise IngestError("Не удалось разобрать HTML-файл.", f"HTML extraction failed on {name}: {exc!r}") from exc
    if not extraction.text.strip():
        raise _empty(name, f"HTML file {name} has no main text")
    document = html_text.to_document(extraction, source_type="html", identifier=name,
                                     meta={"encoding": encoding})
    if pdf_text.is_junk_title(document.title):
        document.title = _file_stem(name)
    return document


# --- dispatch --------------------------------------------------------------------


def _kind_by_name(file_name: str, mime_type: str | None) -> str:
    mime = (mime_type or "").split(";")[0].strip().lower()
    ext = Path(file_name).suffix.lower()
    if ext:
        return ext.lstrip(".").upper()
    if mime:
        return mime
    return "неизвестный"


def sniff(head: bytes) -> str | None:
    """'pdf', 'zip', 'ole' or a Russian name of a known binary type; None: maybe text."""
    if head.lstrip(b"\x00\t\n\r\x0c ").startswith(b"%PDF-"):
        return "pdf"
    if head.startswith(_ZIP_MAGICS):
        return "zip"
    if head.startswith(b"{\\rtf"):
        return "rtf"
    if head.startswith(_OLE_MAGIC):
        return "ole"
    if head[4:8] == b"ftyp":
        return "аудио/видео MP4"
    if head.startswith(b"RIFF") and head[8:12] in (b"WEBP", b"WAVE", b"AVI "):
        return {b"WEBP": "изображение WEBP", b"WAVE": "аудио WAV", b"AVI ": "видео AVI"}[head[8:12]]
    for magic, label in _MAGIC_NAMES:
        if head.startswith(magic):
            # "BM"/"MZ" are also plausible starts of text; only trust them with binary bytes after
            if len(magic) == 2 and not any(b < 9 for b in head[2:64]):
                continue
            return label
    return None


def parse_file(path: str, file_name: str, mime_type: str | None) -> ExtractedDocument:
    """Parse a local file (PDF, DOCX, HTML, TXT, MD) into an ExtractedDocument.

    Raises IngestError (Russian `user_message`) for anything we cannot index.
    """
    name = file_name or Path(path).name
    limit = get_settings().max_file_bytes
    try:
        size = os.path.getsize(path)
        with open(path, "rb") as handle:
            head = handle.read(2048)
    except OSError as exc:
        raise IngestError("Не удалось прочитать файл.", f"cannot read {path}: {exc!r}") from exc
    if size > limit:
        raise IngestError(
            f"Файл слишком большой ({_mb(size)} МБ). Максимум — {_mb(limit)} МБ: "
            "больше Telegram не даёт боту скачать.",
            f"{name} is {size} bytes > max_file_bytes {limit}",
        )
    if size == 0:
        raise _empty(name, f"{name} is an empty file")

    ext = Path(name).suffix.lower()
    mime = (mime_type or "").split(";")[0].strip().lower()
    kind = sniff(head)
    if kind == "pdf":
        return parse_pdf_source(path, name)
    if kind == "zip":
        return parse_zip(path, name)
    if kind == "rtf":
        return parse_rtf(path, name)
    if kind == "ole":
        if ext in (".docx", ".doc") or "word" in mime:
            if ext == ".docx":
                raise IngestError(
                    "DOCX защищён паролем — снимите защиту и пришлите файл снова.",
                    f"{name}: OLE container with a .docx name (encrypted Office file)",
                )
            raise _unsupported(
                "DOC (старый формат Word; сохраните файл как DOCX)", f"{name}: legacy .doc"
            )
        raise _unsupported(_kind_by_name(name, mime_type), f"{name}: OLE compound file")
    if kind is not None and kind.startswith("изображение"):
        return parse_image(path, name, kind)
    if kind is not None:
        raise _unsupported(kind, f"{name}: sniffed as {kind}")

    # no known signature: the name or MIME type has to vouch for it
    if ext == ".pdf" or mime == "application/pdf":
        raise IngestError("Не удалось открыть PDF: файл повреждён.", f"{name}: no %PDF- header")
    if ext == ".docx":
        raise IngestError(
            "Не удалось открыть DOCX: файл повреждён или это не документ Word.",
            f"{name}: .docx without a zip header",
        )
    if ext in HTML_EXTENSIONS or (mime in HTML_MIME_TYPES and ext not in TEXT_EXTENSIONS) \
            or (not ext and _HTML_START.match(head)):
        return parse_html(path, name)
    source_type = TEXT_EXTENSIONS.get(ext) or TEXT_MIME_TYPES.get(mime)
    if source_type is None:
        raise _unsupported(_kind_by_name(name, mime_type), f"{name}: unsupported ext {ext!r} / mime {mime!r}")
    if source_type == "csv":
        return parse_csv(path, name)
    return parse_text(path, name, source_type)


@task(name="parse-file")
def parse_file_task(path: str, file_name: str, mime_type: str | None) -> ExtractedDocument:
    """Prefect task around `parse_file`."""
    return parse_file(path, file_name, mime_type)
