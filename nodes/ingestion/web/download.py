"""Downloading a vetted link: redirects followed by hand (each hop vetted, at most
`MAX_REDIRECTS`), the body streamed and cut off past `max_download_bytes`, the content type
decided (sniffed when the server does not say). Failures a retry may fix raise
`TransientFetchError`; the rest `IngestError`, with a Russian message for the user.
"""

from __future__ import annotations

import contextlib
import io
import time
from dataclasses import dataclass
from typing import Any

import httpx

from grove.core.settings import Settings
from grove.core.ingest_types import IngestError
from nodes.ingestion.web.guard import MSG_BAD_URL, MSG_CONNECTION, MSG_TIMEOUT, TransientFetchError, vet_url


MAX_REDIRECTS = 5
REDIRECT_STATUSES = {301, 302, 303, 307, 308}
HTML_TYPES = {"text/html", "application/xhtml+xml"}
TEXT_TYPES = {"text/plain"}
PDF_TYPES = {"application/pdf", "application/x-pdf"}
SNIFF_TYPES = {"", "application/octet-stream", "binary/octet-stream"}

USER_AGENT = "Mozilla/5.0 (compatible; GroveBot/0.1; +https://github.com/grove)"
ACCEPT = "text/html,application/xhtml+xml,text/plain;q=0.9,application/pdf;q=0.8,*/*;q=0.1"

MSG_TOO_MANY_REDIRECTS = "Ссылка перенаправляет слишком много раз — не удалось дойти до страницы."
MSG_SERVER = "Сайт вернул ошибку {status}. Попробуйте позже."
MSG_RATE_LIMIT = "Сайт просит подождать (ошибка 429). Попробуйте позже."
MSG_GENERIC = "Не удалось загрузить страницу по ссылке."



# --- download ------------------------------------------------------------------


@dataclass
class Download:
    final_url: str
    status: int
    content_type: str
    charset: str | None
    body: bytes
    redirects: int


def _content_type(header: str | None) -> tuple[str, str | None]:
    if not header:
        return "", None
    mime, _, params = header.partition(";")
    charset = None
    for param in params.split(";"):
        key, _, value = param.strip().partition("=")
        if key.strip().lower() == "charset" and value.strip():
            charset = value.strip().strip("\"'").lower()
    return mime.strip().lower(), charset


def _sniff(body: bytes) -> str:
    head = body[:1024].lstrip().lower()
    if head.startswith(b"%pdf-"):
        return "application/pdf"
    if head.startswith((b"<!doctype html", b"<html", b"<head", b"<body", b"<?xml")) or b"<html" in head:
        return "text/html"
    return ""


def _mb(value: int) -> str:
    return f"{value / (1024 * 1024):.0f} МБ" if value >= 1024 * 1024 else f"{max(1, value // 1024)} КБ"


def _too_big(limit: int, reason: str) -> IngestError:
    return IngestError(f"Страница слишком большая (больше {_mb(limit)}) — не загружаю её.", reason)


def _unsupported_type(mime: str, url: str) -> IngestError:
    shown = mime or "неизвестный"
    return IngestError(
        f"По ссылке не веб-страница, а файл другого типа ({shown}). "
        "Поддерживаются HTML-страницы, простой текст и PDF; другие файлы пришлите в чат напрямую.",
        f"unsupported content type {mime!r} at {url}",
    )


def _read_body(response: httpx.Response, limit: int, deadline: float, url: str) -> bytes:
    declared = response.headers.get("content-length")
    if declared and declared.isdigit() and int(declared) > limit:
        raise _too_big(limit, f"Content-Length {declared} > {limit} at {url}")
    buffer = io.BytesIO()
    for chunk in response.iter_bytes():  # decoded bytes, so gzip bombs are capped too
        buffer.write(chunk)
        if buffer.tell() > limit:
            raise _too_big(limit, f"body exceeded {limit} bytes at {url}")
        if time.monotonic() > deadline:
            raise TransientFetchError(MSG_TIMEOUT, f"download of {url} exceeded the total deadline")
    return buffer.getvalue()


def download(url: str, settings: Settings) -> Download:
    """GET `url` with the SSRF guard applied to every hop; returns the capped body."""
    timeout = httpx.Timeout(settings.fetch_timeout)
    deadline = time.monotonic() + 3 * settings.fetch_timeout  # whole fetch, all hops
    current: str | httpx.URL = url
    for hop in range(MAX_REDIRECTS + 1):
        try:
            target = vet_url(current, settings)
        except IngestError as exc:
            if hop:
                exc.reason = f"redirect hop {hop} from {url}: {exc.reason}"
                exc.args = (exc.reason,)
            raise
        shown = str(target.url)
        extensions: dict[str, Any] = {}
        if target.url.scheme == "https":
            extensions["sni_hostname"] = target.host  # SNI + certificate check use the real name
        headers = {
            "Host": target.host_header,
            "User-Agent": USER_AGENT,
            "Accept": ACCEPT,
            "Accept-Language": "ru,en;q=0.8",
        }
        # trust_env=False: no proxies from the environment (they would bypass the pin).
        with httpx.Client(timeout=timeout, follow_redirects=False, trust_env=False) as client:
            request = client.build_request(
                "GET", target.pinned_url, headers=headers, extensions=extensions
            )
            try:
                response = client.send(request, stream=True)
                with contextlib.closing(response):
                    status = response.status_code
                    if status in REDIRECT_STATUSES:
                        location = response.headers.get("location")
                        if not location:
                            raise IngestError(MSG_GENERIC, f"redirect {status} without Location at {shown}")
                        try:
                            current = target.url.join(location.strip())
                        except (httpx.InvalidURL, ValueError) as exc:
                            raise IngestError(MSG_BAD_URL, f"bad Location {location!r} at {shown}") from exc
                        continue
                    if status == 429:
                        raise TransientFetchError(MSG_RATE_LIMIT, f"HTTP 429 at {shown}", status)
                    if status >= 500:
                        raise TransientFetchError(
                            MSG_SERVER.format(status=status), f"HTTP {status} at {shown}", status
                        )
                    if status >= 400:
                        raise IngestError(_client_error_message(status), f"HTTP {status} at {shown}")
                    if status != 200:
                        raise IngestError(MSG_GENERIC, f"unexpected HTTP {status} at {shown}")
                    mime, charset = _content_type(response.headers.get("content-type"))
                    if mime not in HTML_TYPES | TEXT_TYPES | PDF_TYPES | SNIFF_TYPES:
                        raise _unsupported_type(mime, shown)
                    body = _read_body(response, settings.max_download_bytes, deadline, shown)
            except httpx.TimeoutException as exc:
                raise TransientFetchError(MSG_TIMEOUT, f"timeout fetching {shown}: {exc!r}") from exc
            except (httpx.TransportError, OSError) as exc:
                if "CERTIFICATE_VERIFY_FAILED" in str(exc):
                    raise IngestError(
                        "У сайта недействительный HTTPS-сертификат — не открываю его.",
                        f"TLS certificate verification failed for {shown}: {exc!r}",
                    ) from exc
                raise TransientFetchError(
                    MSG_CONNECTION, f"connection error fetching {shown}: {exc!r}"
                ) from exc
        if mime in SNIFF_TYPES:
            mime = _sniff(body)
            if not mime:
                raise _unsupported_type(response.headers.get("content-type", ""), shown)
        return Download(final_url=shown, status=status, content_type=mime,
                        charset=charset, body=body, redirects=hop)
    raise IngestError(MSG_TOO_MANY_REDIRECTS, f"more than {MAX_REDIRECTS} redirects starting at {url}")


def _client_error_message(status: int) -> str:
    if status == 404 or status == 410:
        return f"Страница не найдена (ошибка {status}). Проверьте ссылку."
    if status in (401, 403):
        return f"Доступ к странице закрыт (ошибка {status}) — возможно, нужна авторизация."
    return f"Сайт отказался отдать страницу (ошибка {status})."
