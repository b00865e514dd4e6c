"""Fetch a web page and pull out its main text (the "База" link branch).

Links come from strangers, so every request — the first and every redirect hop — passes the SSRF guard
(`nodes.ingestion.web.guard`), and the download (`nodes.ingestion.web.download`) connects to exactly the
address it vetted, follows redirects by hand and caps the body; `nodes.ingestion.html_text` extracts the
text. Failures are `IngestError` (the link is no good) or `TransientFetchError` (timeouts, connection
errors, 5xx, 429), which the Prefect task retries; after the last retry the caller turns what was raised
into a Russian message (`user_message_for`, or an `IngestError` with `as_ingest_error`).
"""

from __future__ import annotations

import io
import re

import httpx

from grove.core.observe import task
from grove.core.settings import Settings
from nodes.ingestion import html_text
from nodes.ingestion.formats.base import clean_text
from nodes.ingestion.ocr import Ocr
from nodes.ingestion.formats.text import decode_body, decode_declared
from grove.core.ingest_types import ExtractedDocument, IngestError
from nodes.ingestion.web.download import HTML_TYPES, MSG_GENERIC, PDF_TYPES, TEXT_TYPES, download
from nodes.ingestion.web.guard import MSG_CONNECTION, MSG_TIMEOUT, TransientFetchError
from grove.core.progress import Step, quiet


# --- decoding and extraction ---------------------------------------------------


MSG_SCRIPT_ONLY = ("Страница подгружается скриптами — текста в ней нет. Пришлите ссылку на версию "
                   "без скриптов (например, для печати) или сохраните страницу файлом.")
SCRIPT_ONLY_MAX_CHARS = 300
_SCRIPT_NOTICE = re.compile(r"javascript|джаваскрипт|скрипт|браузер", re.IGNORECASE)


def script_only(html: str, text: str) -> bool:
    """A page whose content a script would draw: scripts, and no text or only a short «включите
    JavaScript» notice (indexing it would store the notice as the page)."""
    if "<script" not in html.lower():
        return False
    text = text.strip()
    return not text or (len(text) <= SCRIPT_ONLY_MAX_CHARS and bool(_SCRIPT_NOTICE.search(text)))


def _no_text(url: str, reason: str) -> IngestError:
    return IngestError(
        f"Не удалось извлечь текст со страницы {url} — на ней не нашлось основного текста "
        "(возможно, он подгружается скриптами или закрыт авторизацией).",
        reason,
    )


def extract_html(html: str, url: str) -> html_text.HtmlExtraction:
    """Main text, metadata and sections of an HTML page (`nodes.ingestion.html_text`)."""
    try:
        return html_text.extract(html, url)
    except Exception as exc:  # trafilatura/lxml on hostile markup
        raise _no_text(url, f"HTML extraction failed on {url}: {exc!r}") from exc


def fetch_page(url: str, settings: Settings, progress: Step = quiet) -> ExtractedDocument:
    """Download `url` (SSRF-guarded, capped) and extract its text.

    HTML goes through `nodes.ingestion.html_text`, text/plain is taken as is, PDF is handed to
    the PDF parser (`progress` told how its OCR goes). Raises IngestError or TransientFetchError.
    """
    got = download(url, settings)
    meta: dict[str, str | int | float | bool | None] = {
        "content_type": got.content_type,
        "redirects": got.redirects,
        "bytes": len(got.body),
    }
    if got.content_type in PDF_TYPES:
        from nodes.ingestion.formats.pdf import parse_pdf_source

        doc = parse_pdf_source(io.BytesIO(got.body), got.final_url, Ocr.of(settings), progress)
        return doc.model_copy(update={
            "source_type": "url",
            "source_identifier": got.final_url,
            "meta": {**doc.meta, **meta},
        })

    if got.content_type in TEXT_TYPES:  # read as a text file is: one decoder, one cleaning
        text, meta["encoding"] = decode_declared(got.body, got.final_url, got.charset)
        body = clean_text(text)
        if not body:
            raise _no_text(got.final_url, f"empty text/plain body at {got.final_url}")
        return ExtractedDocument(
            source_type="url", source_identifier=got.final_url, text=body, meta=meta
        )

    text, meta["encoding"] = decode_body(got.body, got.charset, html=got.content_type in HTML_TYPES)

    extraction = extract_html(text, got.final_url)
    if script_only(text, extraction.text):
        raise IngestError(MSG_SCRIPT_ONLY, f"script-only page at {got.final_url}: {extraction.text[:80]!r}")
    if not extraction.text.strip():
        raise _no_text(got.final_url, f"no main text at {got.final_url}")
    return html_text.to_document(extraction, source_type="url", identifier=got.final_url, meta=meta)


# --- errors for the caller -----------------------------------------------------


def is_transient(exc: BaseException | None) -> bool:
    """True for failures a retry may fix: timeouts, connection errors, 5xx, 429."""
    return isinstance(exc, (TransientFetchError, httpx.TimeoutException, httpx.TransportError))


def user_message_for(exc: BaseException) -> str:
    """A short Russian message for any exception raised by this node."""
    if isinstance(exc, (IngestError, TransientFetchError)):
        return exc.user_message
    if isinstance(exc, httpx.TimeoutException):
        return MSG_TIMEOUT
    if isinstance(exc, (httpx.TransportError, OSError)):
        return MSG_CONNECTION
    return MSG_GENERIC


def as_ingest_error(exc: BaseException) -> IngestError:
    """Turn a final failure (after retries) into an IngestError for the user."""
    if isinstance(exc, IngestError):
        return exc
    return IngestError(user_message_for(exc), getattr(exc, "reason", None) or repr(exc))


@task(name="fetch-url", retries=2, retry_delay_seconds=[2, 8], retry_condition_fn=is_transient)
def fetch_url(url: str, settings: Settings, progress: Step = quiet) -> ExtractedDocument:
    """Prefect task around `fetch_page`; transient failures are retried."""
    return fetch_page(url, settings, progress)
