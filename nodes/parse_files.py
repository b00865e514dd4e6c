"""Turn an uploaded file into plain text (the "База" file branch).

`parse_file` looks at the file's first bytes (magic numbers) before trusting its
name or the MIME type Telegram reports, then hands it to one parser:

* PDF  (pypdf)       — one string per page in `pages`; encrypted, corrupt and
                       scanned (image-only) PDFs are refused with a clear message.
* DOCX (python-docx) — paragraphs and tables in document order; the zip's
                       central directory is checked first so a zip bomb is
                       refused before anything is decompressed.
* TXT / MD           — BOM, strict UTF-8, UTF-16 without BOM, then
                       charset-normalizer among the Cyrillic code pages.

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
from nodes.ingest_types import ExtractedDocument, IngestError

SUPPORTED_HINT = "Поддерживаются PDF, DOCX, TXT, MD, а также аудио и видео."

TEXT_EXTENSIONS = {".txt": "txt", ".text": "txt", ".md": "md", ".markdown": "md"}
TEXT_MIME_TYPES = {"text/plain": "txt", "text/markdown": "md", "text/x-markdown": "md"}

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
    (b"{\\rtf", "документ RTF"),
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


def parse_pdf_source(source: str | Path | IO[bytes], identifier: str) -> ExtractedDocument:
    """Text of a PDF (a path or a binary stream), one string per page."""
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
        pages = [_clean(page.extract_text() or "") for page in reader.pages]
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
    if not pages:
        raise IngestError(corrupt_message, f"PDF {identifier} has no pages")
    if not any(pages):
        raise IngestError(
            "В этом PDF нет текстового слоя — похоже, это скан или картинки. "
            "Распознавание сканов (OCR) не поддерживается.",
            f"image-only PDF {identifier}: no extractable text on {len(pages)} pages",
        )
    return ExtractedDocument(
        source_type="pdf",
        source_identifier=identifier,
        title=title or None,
        author=author or None,
        text="\n\n".join(page for page in pages if page),
        pages=pages,
        meta={"page_count": len(pages), "empty_pages": sum(1 for p in pages if not p)},
    )


# --- DOCX ------------------------------------------------------------------------


def check_zip_bomb(archive: zipfile.ZipFile, name: str) -> None:
    """Refuse archives that would decompress to too much, judged by the central directory."""
    entries = archive.infolist()
    suspicious = IngestError(
        "Файл DOCX выглядит подозрительно (после распаковки он огромный) — не открываю его.",
        "",
    )
    if len(entries) > DOCX_MAX_ENTRIES:
        suspicious.reason = f"zip bomb guard: {name} has {len(entries)} entries"
        raise suspicious
    total = 0
    for entry in entries:
        total += entry.file_size
        if total > DOCX_MAX_UNCOMPRESSED:
            suspicious.reason = f"zip bomb guard: {name} uncompresses to more than {DOCX_MAX_UNCOMPRESSED} bytes"
            raise suspicious
        if entry.file_size >= DOCX_RATIO_MIN_ENTRY:
            ratio = entry.file_size / max(entry.compress_size, 1)
            if ratio > DOCX_MAX_RATIO:
                suspicious.reason = (
                    f"zip bomb guard: {name}:{entry.filename} ratio {ratio:.0f}x "
                    f"({entry.compress_size} -> {entry.file_size} bytes)"
                )
                raise suspicious


def _zip_kind(names: set[str]) -> str:
    if "word/document.xml" in names:
        return "docx"
    if "xl/workbook.xml" in names:
        return "таблица Excel (XLSX)"
    if "ppt/presentation.xml" in names:
        return "презентация PowerPoint (PPTX)"
    if "content.xml" in names and "mimetype" in names:
        return "документ OpenDocument"
    if "[Content_Types].xml" in names:
        return "документ Office"
    return "ZIP-архив"


def _docx_blocks(document: Any) -> tuple[list[str], int, int]:
    """Paragraph and table texts in document order; counts of paragraphs and tables."""
    from docx.table import Table

    blocks: list[str] = []
    paragraphs = tables = 0
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
                blocks.append("\n".join(rows))
                tables += 1
        else:
            text = item.text.strip()
            if text:
                blocks.append(text)
                paragraphs += 1
    return blocks, paragraphs, tables


def parse_docx(path: str | Path, name: str) -> ExtractedDocument:
    import docx
    from docx.opc.exceptions import PackageNotFoundError

    broken = "Не удалось открыть DOCX: файл повреждён или это не документ Word."
    try:
        with zipfile.ZipFile(path) as archive:
            check_zip_bomb(archive, name)
            kind = _zip_kind(set(archive.namelist()))
    except IngestError:
        raise
    except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, ValueError, EOFError) as exc:
        raise IngestError(broken, f"not a valid zip {name}: {exc!r}") from exc
    if kind != "docx":
        raise _unsupported(kind, f"{name} is a zip of kind {kind!r}, not a DOCX")
    try:
        document = docx.Document(str(path))
        blocks, paragraphs, tables = _docx_blocks(document)
        core = document.core_properties
        title = (core.title or "").strip()
        author = (core.author or "").strip()
    except (PackageNotFoundError, zipfile.BadZipFile, KeyError, ValueError, TypeError,
            AttributeError, IndexError, OSError, EOFError, SyntaxError) as exc:
        # lxml's XMLSyntaxError is a SyntaxError subclass
        raise IngestError(broken, f"python-docx failed on {name}: {exc!r}") from exc
    if not blocks:
        raise _empty(name, f"DOCX {name} has no text")
    return ExtractedDocument(
        source_type="docx",
        source_identifier=name,
        title=title or None,
        author=author or None,
        text="\n\n".join(blocks),
        meta={"paragraphs": paragraphs, "tables": tables},
    )


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
    if source_type == "md":
        heading = re.search(r"^#\s+(.+?)\s*#*\s*$", text, re.M)
        title = heading.group(1) if heading else None
    return ExtractedDocument(
        source_type=source_type,  # type: ignore[arg-type]
        source_identifier=name,
        title=title,
        text=text,
        meta={"encoding": encoding},
    )


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
    """Parse a local file (PDF, DOCX, TXT, MD) into an ExtractedDocument.

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
        return parse_docx(path, name)
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
    source_type = TEXT_EXTENSIONS.get(ext) or TEXT_MIME_TYPES.get(mime)
    if source_type is None:
        raise _unsupported(_kind_by_name(name, mime_type), f"{name}: unsupported ext {ext!r} / mime {mime!r}")
    return parse_text(path, name, source_type)


@task(name="parse-file")
def parse_file_task(path: str, file_name: str, mime_type: str | None) -> ExtractedDocument:
    """Prefect task around `parse_file`."""
    return parse_file(path, file_name, mime_type)
