"""PDF (pypdf): one string per physical page, cleaned of running headers/footers, dot leaders
and line-end hyphenation, with the page labels the PDF prints, and sections from its outline
or its font sizes (`pdf_layout`, `pdf_structure`). Encrypted and corrupt PDFs get their own refusals; a PDF
without a text layer (a scan) is read by OCR, page by page, up to `ocr_max_pages`.

`parse_pdf_source` also reads PDFs fetched from links (`nodes.ingestion.fetch_url`).
"""

from __future__ import annotations

from pathlib import Path
from typing import IO, Any

from grove.core.settings import get_settings
from nodes.ingestion.formats import pdf_layout, pdf_structure
from nodes.ingestion.formats.base import Format, Upload, clean_text, file_stem, is_junk_title
from grove.core.ingest_types import ExtractedDocument, IngestError

CORRUPT = "Не удалось открыть PDF: файл повреждён."


def _page_labels(reader: Any, count: int) -> list[str]:
    """The page numbers the PDF prints (its /PageLabels), physical numbers where it defines none."""
    try:
        labels = [str(label) for label in reader.page_labels]
    except Exception:  # a malformed /PageLabels tree: physical numbers are still right
        labels = []
    if len(labels) != count or not all(label.strip() for label in labels):
        return [str(i + 1) for i in range(count)]
    return labels


def _read_pages(reader: Any) -> tuple[list[str], list[list[pdf_structure.Run]]]:
    """Each page's text and the font size of every piece of it (one pypdf pass)."""
    texts: list[str] = []
    runs: list[list[pdf_structure.Run]] = []
    for page in reader.pages:
        page_runs: list[pdf_structure.Run] = []

        def visit(text: str, cm: Any, tm: Any, _font: Any, size: float,
                  into: list[pdf_structure.Run] = page_runs) -> None:
            if text:
                into.append(pdf_structure.Run(text, pdf_structure.run_size(cm, tm, size or 0.0)))

        texts.append(clean_text(page.extract_text(visitor_text=visit) or ""))
        runs.append(page_runs)
    return texts, runs


def clean_pages(raw_pages: list[str], labels: list[str]) -> tuple[list[str], dict[str, int]]:
    """Running lines and dot leaders removed, hyphenation joined (within and across pages);
    counts of each."""
    running = pdf_layout.strip_running_lines(raw_pages, labels)
    pages = [pdf_layout.strip_leaders(page) for page in running.pages]
    words = pdf_layout.vocabulary(pages)
    across = pdf_layout.join_across_pages(pages, words)
    joined = kept = 0
    for index, page in enumerate(pages):
        result = pdf_layout.join_hyphenation(page, words)
        pages[index] = result.text
        joined += sum(1 for *_, join in result.decisions if join)
        kept += sum(1 for *_, join in result.decisions if not join)
    return pages, {"running_lines_removed": len(running.removed), "hyphens_joined": joined + across,
                   "hyphens_kept": kept}


def parse_pdf_source(source: str | Path | IO[bytes], identifier: str) -> ExtractedDocument:
    """Clean text of a PDF (a path or a binary stream): one string per physical page,
    page labels, title and sections (`pdf_layout`, `pdf_structure`)."""
    from pypdf import PasswordType, PdfReader
    from pypdf.errors import DependencyError, FileNotDecryptedError, PdfReadError, PyPdfError

    encrypted = IngestError("PDF защищён паролем — снимите защиту и пришлите файл снова.",
                            f"encrypted PDF {identifier}")
    try:
        reader = PdfReader(source, strict=False)
        if reader.is_encrypted and reader.decrypt("") == PasswordType.NOT_DECRYPTED:
            raise encrypted
        raw_pages, runs = _read_pages(reader)
        labels = _page_labels(reader, len(raw_pages))
        headings = pdf_structure.outline_headings(reader)
        info = reader.metadata
        title = (info.title or "").strip() if info else ""
        author = (info.author or "").strip() if info else ""
    except IngestError:
        raise
    except FileNotDecryptedError as exc:
        raise encrypted from exc
    except DependencyError as exc:
        raise IngestError("PDF зашифрован способом, который я не умею открывать.", f"{identifier}: {exc}") from exc
    except (PdfReadError, PyPdfError, ValueError, KeyError, TypeError, AttributeError,
            IndexError, AssertionError, RecursionError, OSError, UnicodeError) as exc:
        raise IngestError(CORRUPT, f"corrupt PDF {identifier}: {exc!r}") from exc
    if not raw_pages:
        raise IngestError(CORRUPT, f"PDF {identifier} has no pages")
    ocr_pages = 0
    if not any(raw_pages):
        raw_pages = scanned_pages(reader, identifier)
        runs = [[] for _ in raw_pages]  # no fonts in a scan: no font-size headings
        ocr_pages = len([p for p in raw_pages if p])
    pages, counts = clean_pages(raw_pages, labels)
    body = pdf_structure.body_size(runs)
    if not headings:
        headings = pdf_structure.font_headings(runs, body)
    if is_junk_title(title):
        title = pdf_structure.title_from_fonts(runs[0], body) or file_stem(identifier)
    return ExtractedDocument(
        source_type="pdf",
        source_identifier=identifier,
        title=title or None,
        author=author or None,
        text=pdf_layout.PAGE_SEPARATOR.join(pages),
        pages=pages,
        page_labels=labels,
        sections=pdf_structure.locate_sections(pages, headings),
        meta={"page_count": len(pages), "empty_pages": sum(1 for p in pages if not p), **counts,
              "headings": len(headings), "ocr_pages": ocr_pages},
    )


def scanned_pages(reader: Any, identifier: str) -> list[str]:
    """A PDF without a text layer, read by OCR from each page's images (at most `ocr_max_pages`)."""
    from nodes.ingestion import ocr
    from grove.core import progress

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


def parse(upload: Upload) -> ExtractedDocument:
    return parse_pdf_source(upload.path, upload.name)


FORMAT = Format(
    name="pdf", label="PDF", parse=parse, hint="PDF", order=10,
    signatures=frozenset({"pdf"}), extensions=frozenset({".pdf"}), mime_types=frozenset({"application/pdf"}),
    broken_message=CORRUPT,
)
