"""PDF: one string per physical page, cleaned of running headers/footers, dot leaders and
line-end hyphenation, with the page labels the PDF prints, and sections from its outline or its
font sizes (`pdf_layout`, `pdf_structure`). Encrypted and corrupt PDFs get their own refusals; a PDF
without a text layer (a scan) is read by OCR, page by page, up to `ocr_max_pages`.

The text layer, page labels, outline and metadata are read by PDFium in one pass under the
process-wide PDFium lock; pages that fail the text check are read again by pypdf, and scans'
images are taken by pypdf (`pdf_text` says why and what was measured).

`parse_pdf_source` also reads PDFs fetched from links (`nodes.ingestion.fetch_url`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from nodes.ingestion.ocr import Ocr
from nodes.ingestion import native
from nodes.ingestion.formats import pdf_layout, pdf_structure, pdf_text, wrapped_lines
from nodes.ingestion.formats.base import Format, Upload, file_stem, is_junk_title
from grove.core.ingest_types import ExtractedDocument, IngestError
from grove.core.progress import Step, quiet

CORRUPT = "Не удалось открыть PDF: файл повреждён."
ENCRYPTED = "PDF защищён паролем — снимите защиту и пришлите файл снова."
UNSUPPORTED_SECURITY = "PDF зашифрован способом, который я не умею открывать."


def _page_labels(pdf: Any, count: int) -> list[str]:
    """The page numbers the PDF prints (its /PageLabels), physical numbers where it defines none."""
    labels = [pdf.get_page_label(index) for index in range(count)]
    if not all(label.strip() for label in labels):
        return [str(i + 1) for i in range(count)]
    return labels


@dataclass
class _Layer:
    """What PDFium read: page texts, labels, outline, metadata, and font-size runs when the
    structure needs them (no outline, or a junk title)."""

    pages: list[str]
    runs: list[list[pdf_structure.Run]]
    labels: list[str]
    headings: list[pdf_structure.Heading]
    title: str
    author: str


def _read(source: bytes | Path, identifier: str) -> _Layer:
    """Everything PDFium gives, under the PDFium lock; every handle is closed before the lock is
    let go. Characters' sizes cost a call each (about twice what the page's text costs, on the
    STEAD3 and Debian installation manuals), so they are read only when the PDF has no outline or
    its title is junk."""
    import pypdfium2 as pdfium
    import pypdfium2.raw as pdfium_c

    with native.PDFIUM:
        try:
            pdf = pdfium.PdfDocument(source)
        except pdfium.PdfiumError as exc:
            if exc.err_code == pdfium_c.FPDF_ERR_PASSWORD:
                raise IngestError(ENCRYPTED, f"encrypted PDF {identifier}") from exc
            if exc.err_code == pdfium_c.FPDF_ERR_SECURITY:
                raise IngestError(UNSUPPORTED_SECURITY, f"{identifier}: {exc}") from exc
            raise IngestError(CORRUPT, f"corrupt PDF {identifier}: {exc}") from exc
        except OSError as exc:
            raise IngestError(CORRUPT, f"unreadable PDF {identifier}: {exc!r}") from exc
        try:
            count = len(pdf)
            info = pdf.get_metadata_dict()
            layer = _Layer(pages=[pdf_text.read_text(pdf, index) for index in range(count)],
                           runs=[[] for _ in range(count)], labels=_page_labels(pdf, count),
                           headings=pdf_structure.outline_headings(pdf),
                           title=(info.get("Title") or "").strip(), author=(info.get("Author") or "").strip())
            if not layer.headings or is_junk_title(layer.title):  # font sizes are needed
                layer.runs = [pdf_text.read_runs(pdf, index) for index in range(count)]
            return layer
        except pdfium.PdfiumError as exc:  # a page PDFium cannot load
            raise IngestError(CORRUPT, f"corrupt PDF {identifier}: {exc}") from exc
        finally:
            pdf.close()


def clean_pages(raw_pages: list[str], labels: list[str]) -> tuple[list[str], dict[str, int]]:
    """Running lines and dot leaders removed, hyphenation joined (within and across pages), lines
    wrapped inside a sentence joined; counts of each."""
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
    body_line = wrapped_lines.body_line_length(pages)
    lines_joined = 0
    for index, page in enumerate(pages):
        pages[index], count = wrapped_lines.join_wrapped_lines(page, body_line)
        lines_joined += count
    return pages, {"running_lines_removed": len(running.removed), "hyphens_joined": joined + across,
                   "hyphens_kept": kept, "lines_joined": lines_joined}


def parse_pdf_source(source: str | Path | IO[bytes], identifier: str, ocr: Ocr,
                     progress: Step = quiet) -> ExtractedDocument:
    """Clean text of a PDF (a path or a binary stream): one string per physical page,
    page labels, title and sections (`pdf_layout`, `pdf_structure`); a scan read by `ocr`, `progress` told
    page by page."""
    data: bytes | Path = Path(source) if isinstance(source, (str, Path)) else source.read()
    layer = _read(data, identifier)
    raw_pages, runs = layer.pages, layer.runs
    if not raw_pages:
        raise IngestError(CORRUPT, f"PDF {identifier} has no pages")
    rechecked = pdf_text.recheck(raw_pages, data)
    ocr_pages = 0
    if not any(raw_pages):
        raw_pages = scanned_pages(data, identifier, ocr, progress)
        runs = [[] for _ in raw_pages]  # no fonts in a scan: no font-size headings
        ocr_pages = len([p for p in raw_pages if p])
    pages, counts = clean_pages(raw_pages, layer.labels)
    body = pdf_structure.body_size(runs)
    headings = layer.headings or pdf_structure.font_headings(runs, body)
    title = layer.title
    if is_junk_title(title):
        title = pdf_structure.title_from_fonts(runs[0], body) or file_stem(identifier)
    return ExtractedDocument(
        source_type="pdf",
        source_identifier=identifier,
        title=title or None,
        author=layer.author or None,
        text=pdf_layout.PAGE_SEPARATOR.join(pages),
        pages=pages,
        page_labels=layer.labels,
        sections=pdf_structure.locate_sections(pages, headings),
        meta={"page_count": len(pages), "empty_pages": sum(1 for p in pages if not p), **counts,
              "headings": len(headings), "ocr_pages": ocr_pages, "pages_read_by_pypdf": rechecked},
    )


def scanned_pages(source: bytes | Path, identifier: str, ocr: Ocr, progress: Step = quiet) -> list[str]:
    """A PDF without a text layer, read by OCR from each page's images (at most `ocr.max_pages`);
    pypdf takes the images out."""
    import io

    from pypdf import PdfReader

    try:
        reader = PdfReader(io.BytesIO(source) if isinstance(source, bytes) else source, strict=False)
        if reader.is_encrypted:
            reader.decrypt("")
        count = len(reader.pages)
    except Exception as exc:  # pypdf cannot open what PDFium read
        raise IngestError("Не удалось прочитать изображения в скане PDF.", f"{identifier}: {exc!r}") from exc
    if not ocr.available():
        raise IngestError("В этом PDF нет текстового слоя — похоже, это скан. Распознавание сканов на этом "
                          "сервере не установлено (нужен tesseract-ocr).",
                          f"image-only PDF {identifier}: {count} pages and no OCR engine")
    limit = ocr.max_pages
    if count > limit:
        raise IngestError(f"Это скан на {count} страниц — распознаю не больше {limit}. Пришлите часть документа.",
                          f"image-only PDF {identifier}: {count} pages > ocr_max_pages {limit}")
    pages = []
    for index, page in enumerate(reader.pages):
        progress("ocr", index, count)
        try:
            images = [image.data for image in page.images]
        except Exception as exc:  # pypdf on an image it cannot decode
            raise IngestError("Не удалось прочитать изображения в скане PDF.", f"{identifier}: {exc!r}") from exc
        pages.append("\n".join(filter(None, (ocr.image_text(data) for data in images))))
    progress("ocr", count, count)
    if not any(p.strip() for p in pages):
        raise IngestError("В этом PDF нет текстового слоя, и распознать текст на страницах не удалось.",
                          f"image-only PDF {identifier}: OCR read nothing on {count} pages")
    return pages


def parse(upload: Upload) -> ExtractedDocument:
    return parse_pdf_source(upload.path, upload.name, upload.ocr, upload.progress)


FORMAT = Format(
    name="pdf", label="PDF", parse=parse, hint="PDF", order=10,
    signatures=frozenset({"pdf"}), extensions=frozenset({".pdf"}), mime_types=frozenset({"application/pdf"}),
    broken_message=CORRUPT,
)
