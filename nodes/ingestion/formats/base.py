"""What every file format shares: the upload as the formats see it, the `Format` record a
format module registers, and the refusals and text helpers they all use.

A format never decides alone whether a file is its own: `nodes.ingestion.formats.detect` asks the
file's first bytes first (`Upload.signature`), then its extension, then — for a file with no
extension — its markup (HTML, FB2), then the MIME type Telegram reports, then whether it is
text at all; so a PNG named «report.pdf» is read as a picture and a text file named «notes»
is still read as text.
"""

from __future__ import annotations

import re
import zipfile
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from urllib.parse import unquote, urlsplit

from grove.core.ingest_types import ExtractedDocument, IngestError, Section
from grove.core.progress import Step, quiet
from nodes.ingestion.ocr import Ocr

# Binary signatures recognised only to name them in a refusal.
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

# zip-bomb limits, checked on the central directory before anything is decompressed
ZIP_MAX_UNCOMPRESSED = 200 * 1024 * 1024
ZIP_MAX_RATIO = 100
ZIP_RATIO_MIN_ENTRY = 64 * 1024  # tiny XML parts may compress very well; ignore them
ZIP_MAX_ENTRIES = 10_000


def sniff(head: bytes) -> tuple[str | None, str]:
    """(signature, Russian name) of a file's first bytes. Signatures: 'pdf', 'zip', 'rtf', 'ole',
    'image' — the kinds some format reads — or 'binary' for a known type no format reads;
    (None, "") when nothing is recognised (maybe text)."""
    if head.lstrip(b"\x00\t\n\r\x0c ").startswith(b"%PDF-"):
        return "pdf", "PDF"
    if head.startswith(_ZIP_MAGICS):
        return "zip", "ZIP-архив"
    if head.startswith(b"{\\rtf"):
        return "rtf", "RTF"
    if head.startswith(_OLE_MAGIC):
        return "ole", "документ Office старого формата"
    if head[4:8] == b"ftyp":
        return "binary", "аудио/видео MP4"
    if head.startswith(b"RIFF") and head[8:12] in (b"WEBP", b"WAVE", b"AVI "):
        if head[8:12] == b"WEBP":
            return "image", "изображение WEBP"
        return "binary", {b"WAVE": "аудио WAV", b"AVI ": "видео AVI"}[head[8:12]]
    for magic, label in _MAGIC_NAMES:
        if head.startswith(magic):
            # "BM"/"MZ" are also plausible starts of text; only trust them with binary bytes after
            if len(magic) == 2 and not any(b < 9 for b in head[2:64]):
                continue
            return ("image" if label.startswith("изображение") else "binary"), label
    return None, ""


@dataclass
class Upload:
    """A file waiting to be read: where it is, what the user called it, what Telegram says it
    is, and what its bytes say. Zip contents are looked at lazily and only through the
    central directory, which is checked against zip bombs first."""

    path: Path
    name: str
    mime: str = ""
    head: bytes = b""
    signature: str | None = None
    signature_label: str = ""
    progress: Step = quiet  # told how a long read goes (OCR page by page)
    ocr: Ocr = field(default_factory=Ocr)  # how scans and photos are read (the settings', handed by parse_file)

    @classmethod
    def open(cls, path: str | Path, name: str, mime_type: str | None, progress: Step = quiet,
             ocr: Ocr | None = None) -> Upload:
        with open(path, "rb") as handle:
            head = handle.read(2048)
        signature, label = sniff(head)
        return cls(Path(path), name, (mime_type or "").split(";")[0].strip().lower(), head, signature, label,
                   progress, ocr or Ocr())

    @property
    def ext(self) -> str:
        return Path(self.name).suffix.lower()

    @cached_property
    def zip_names(self) -> frozenset[str]:
        """The names of a zip's parts (the central directory only; bomb-checked). Raises
        `zipfile.BadZipFile` (or OSError) for a zip that cannot be opened."""
        with zipfile.ZipFile(self.path) as archive:
            check_zip_bomb(archive, self.name)
            return frozenset(archive.namelist())

    @cached_property
    def zip_mimetype(self) -> str:
        """The `mimetype` part of an OpenDocument or EPUB zip ("" when there is none)."""
        if "mimetype" not in self.zip_names:
            return ""
        with zipfile.ZipFile(self.path) as archive:
            return archive.read("mimetype").decode("ascii", "replace").strip()


Parse = Callable[[Upload], ExtractedDocument]


@dataclass(frozen=True)
class Format:
    """One kind of file grove reads. A format module registers itself by defining `FORMAT`.

    `signatures` are the sniffed kinds (`sniff`) it reads; `accepts` takes a closer look when
    several formats share one (the zip formats, by their parts). `extensions` and
    `mime_types` claim files whose bytes carry no signature — for a format that has
    signatures, such a file is a broken one, refused with `broken`, unless the format is also
    `plain`. `looks_like` tests the first bytes of a file with no extension before its MIME
    type; `looks_like_last` is weaker evidence (plain text), asked only when the MIME type
    names no format. `hint` names the format in the list of what is supported (None: not
    listed), in `order`."""

    name: str
    label: str
    parse: Parse
    signatures: frozenset[str] = frozenset()
    plain: bool = False  # with signatures: also reads files whose bytes have none (FB2: XML or a zip)
    extensions: frozenset[str] = frozenset()
    mime_types: frozenset[str] = frozenset()
    accepts: Callable[[Upload], bool] | None = None
    looks_like: Callable[[bytes], bool] | None = None
    looks_like_last: Callable[[bytes], bool] | None = None
    hint: str | None = None
    order: float = 100.0
    broken_message: str | None = None

    @property
    def broken(self) -> str:
        return self.broken_message or f"Не удалось открыть {self.label}: файл повреждён."

    def claims(self, upload: Upload) -> bool:
        return self.accepts is None or self.accepts(upload)


# --- refusals --------------------------------------------------------------------------


def unsupported(kind: str, reason: str, hint: str | None = None) -> IngestError:
    from nodes.ingestion.formats import supported_hint

    return IngestError(f"Этот тип файла не поддерживается: {kind}. {hint or supported_hint()}", reason)


def empty(name: str, reason: str) -> IngestError:
    return IngestError(f"В файле «{name}» нет текста — индексировать нечего.", reason)


def suspicious(reason: str) -> IngestError:
    """The zip-bomb refusal, with its reason in the exception's own text (the Prefect run shows that)."""
    return IngestError("Файл выглядит подозрительно (после распаковки он огромный) — не открываю его.", reason)


def check_zip_bomb(archive: zipfile.ZipFile, name: str) -> None:
    """Refuse archives that would decompress to too much, judged by the central directory."""
    entries = archive.infolist()
    if len(entries) > ZIP_MAX_ENTRIES:
        raise suspicious(f"zip bomb guard: {name} has {len(entries)} entries")
    total = 0
    for entry in entries:
        total += entry.file_size
        if total > ZIP_MAX_UNCOMPRESSED:
            raise suspicious(f"zip bomb guard: {name} uncompresses to more than {ZIP_MAX_UNCOMPRESSED} bytes")
        if entry.file_size >= ZIP_RATIO_MIN_ENTRY:
            ratio = entry.file_size / max(entry.compress_size, 1)
            if ratio > ZIP_MAX_RATIO:
                raise suspicious(f"zip bomb guard: {name}:{entry.filename} ratio {ratio:.0f}x "
                                 f"({entry.compress_size} -> {entry.file_size} bytes)")


# --- titles ------------------------------------------------------------------------------

_FILE_NAME = re.compile(
    r"\.(?:pdf|docx?|odt|rtf|txt|tex|dvi|ps|eps|indd|qxd|pptx?|xlsx?|html?|md|pages|wpd)\s*$", re.I
)
_PLACEHOLDER = re.compile(r"^(?:untitled|без\s*названия|безымянный|document|документ|title|заголовок)"
                          r"[\s\d_-]*$", re.I)


def is_junk_title(title: str | None) -> bool:
    """Metadata titles that name nothing: empty, «untitled», a file name («Microsoft Word - x.doc»),
    no letters at all."""
    if not title or not title.strip():
        return True
    title = title.strip()
    if not any(ch.isalpha() for ch in title):
        return True
    return bool(_FILE_NAME.search(title) or _PLACEHOLDER.match(title))



# --- text helpers ------------------------------------------------------------------------


def clean_text(text: str) -> str:
    """Line ends unified, NULs and trailing spaces dropped, runs of blank lines cut to one."""
    text = text.replace("\r\n", "\n").replace("\r", "\n").replace("\x00", "")
    text = re.sub(r"[ \t\u00a0]+\n", "\n", text)
    return re.sub(r"\n{3,}", "\n\n", text).strip()


def file_stem(identifier: str) -> str:
    """`manual` for «manual.pdf» or «https://host/docs/manual.pdf?x=1»: the title of last resort."""
    path = urlsplit(identifier).path if "://" in identifier else identifier
    name = unquote(path.rstrip("/").rsplit("/", 1)[-1]) or identifier
    return Path(name).stem or name


Blocks = list[tuple[str, int]]  # (text, heading level; 0 for body text) in reading order


def sections_from_blocks(blocks: Blocks, separator: str = "\n\n") -> tuple[str, list[Section]]:
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
