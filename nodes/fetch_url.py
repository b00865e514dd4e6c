"""Fetch a web page and pull out its main text (the "База" link branch).

Safety first: links come from strangers, so every request — the first one and
every redirect hop — goes through `vet_url`, an SSRF guard that allows only
http(s) and refuses hosts that resolve to private, loopback, link-local
(cloud metadata at 169.254.169.254), multicast, reserved or unspecified
addresses, including IPv4 addresses hidden inside IPv6 forms. The request then
connects to exactly the address the guard vetted (the URL's host is replaced by
that IP; the original name travels in the Host header and as the TLS SNI /
certificate name), so a DNS answer that changes between the check and the
connection (DNS rebinding) cannot steer us elsewhere. Redirects are followed by
hand (at most `MAX_REDIRECTS`), the body is streamed and cut off past
`max_download_bytes`, and the text is extracted by `nodes.html_text` (trafilatura
finds the main content, our own pass renders it with every inline element, list
and heading).

Failures are of two kinds: `IngestError` (the link is no good: 4xx, refused
address, not a page, nothing to extract) and `TransientFetchError` (timeouts,
connection errors, 5xx, 429) which the Prefect task retries. After the last
retry the caller turns whatever was raised into a Russian message with
`user_message_for(exc)` (or an `IngestError` with `as_ingest_error(exc)`).
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import io
import ipaddress
import re
import socket
import time
from dataclasses import dataclass
from typing import Any

import httpx

from grove.observe import task
from grove.settings import Settings, get_settings
from nodes import html_text
from nodes.formats.base import clean_text
from nodes.formats.text import decode_declared
from nodes.html_text import decode_body
from nodes.ingest_types import ExtractedDocument, IngestError

MAX_REDIRECTS = 5
REDIRECT_STATUSES = {301, 302, 303, 307, 308}
HTML_TYPES = {"text/html", "application/xhtml+xml"}
TEXT_TYPES = {"text/plain"}
PDF_TYPES = {"application/pdf", "application/x-pdf"}
SNIFF_TYPES = {"", "application/octet-stream", "binary/octet-stream"}
LOCALHOST_NAMES = {"localhost", "localhost.localdomain", "ip6-localhost", "ip6-loopback"}
# 64:ff9b::/96 is the well-known NAT64 prefix: the last 32 bits are an IPv4 address.
NAT64_PREFIX = ipaddress.ip_network("64:ff9b::/96")

USER_AGENT = "Mozilla/5.0 (compatible; GroveBot/0.1; +https://github.com/grove)"
ACCEPT = "text/html,application/xhtml+xml,text/plain;q=0.9,application/pdf;q=0.8,*/*;q=0.1"

MSG_BLOCKED = (
    "Эта ссылка ведёт на локальный или внутренний адрес — такие ссылки я не открываю."
)
MSG_SCHEME = "Поддерживаются только ссылки http:// и https://."
MSG_BAD_URL = "Не получилось разобрать ссылку — проверьте, что она скопирована целиком."
MSG_TOO_MANY_REDIRECTS = "Ссылка перенаправляет слишком много раз — не удалось дойти до страницы."
MSG_TIMEOUT = "Сайт не ответил вовремя. Попробуйте позже."
MSG_CONNECTION = "Не удалось подключиться к сайту. Попробуйте позже."
MSG_SERVER = "Сайт вернул ошибку {status}. Попробуйте позже."
MSG_RATE_LIMIT = "Сайт просит подождать (ошибка 429). Попробуйте позже."
MSG_GENERIC = "Не удалось загрузить страницу по ссылке."


class TransientFetchError(Exception):
    """A failure worth retrying (timeout, connection error, 5xx, 429).

    Carries a Russian `user_message` for when the retries run out."""

    def __init__(self, user_message: str, reason: str, status: int | None = None) -> None:
        super().__init__(reason)
        self.user_message = user_message
        self.reason = reason
        self.status = status


# --- SSRF guard ----------------------------------------------------------------


@dataclass(frozen=True)
class VettedTarget:
    """A URL the guard accepted, and the one address we will connect to."""

    url: httpx.URL
    host: str  # ASCII (IDNA) host name or IP literal, without brackets
    port: int
    ip: str

    @property
    def host_header(self) -> str:
        return self.url.netloc.decode("ascii")  # host[:port], brackets for IPv6, no userinfo

    @property
    def pinned_url(self) -> httpx.URL:
        """The same URL with the host replaced by the vetted IP."""
        return self.url.copy_with(host=self.ip)


def _embedded_ipv4(ip: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    if ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    if ip.sixtofour is not None:
        return ip.sixtofour
    if ip.teredo is not None:
        return ip.teredo[1]  # the client address
    if ip in NAT64_PREFIX:
        return ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
    return None


def address_problem(ip: ipaddress.IPv4Address | ipaddress.IPv6Address, allow_loopback: bool) -> str | None:
    """Why we must not connect to `ip` (None when it is a public address)."""
    if isinstance(ip, ipaddress.IPv6Address):
        inner = _embedded_ipv4(ip)
        if inner is not None:
            problem = address_problem(inner, allow_loopback)
            return f"{problem} (embedded in {ip})" if problem else None
    if ip.is_loopback:
        return None if allow_loopback else "loopback"
    for label, flag in (
        ("unspecified", ip.is_unspecified),
        ("link-local", ip.is_link_local),
        ("multicast", ip.is_multicast),
        ("private", ip.is_private),
        ("reserved", ip.is_reserved),
        ("not globally routable", not ip.is_global),
    ):
        if flag:
            return label
    return None


def _resolve(host: str, port: int, timeout: float) -> list[str]:
    """All addresses `host` resolves to (getaddrinfo in a thread, so it can time out)."""
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=1)
    try:
        future = pool.submit(socket.getaddrinfo, host, port, 0, socket.SOCK_STREAM)
        try:
            infos = future.result(timeout=timeout)
        except concurrent.futures.TimeoutError as exc:
            raise TransientFetchError(MSG_TIMEOUT, f"DNS lookup of {host} timed out") from exc
    finally:
        pool.shutdown(wait=False)
    addresses: list[str] = []
    for _family, _type, _proto, _canon, sockaddr in infos:
        address = str(sockaddr[0]).split("%", 1)[0]  # drop an IPv6 zone id
        if address not in addresses:
            addresses.append(address)
    return addresses


def vet_url(url: str | httpx.URL, settings: Settings | None = None) -> VettedTarget:
    """Check a URL against the SSRF rules and pick the address to connect to.

    Raises IngestError for anything we refuse; never opens a connection.
    """
    settings = settings or get_settings()
    allow_loopback = settings.allow_loopback_urls
    try:
        parsed = url if isinstance(url, httpx.URL) else httpx.URL(str(url).strip())
    except (httpx.InvalidURL, ValueError, TypeError) as exc:
        raise IngestError(MSG_BAD_URL, f"invalid URL {url!r}: {exc}") from exc
    if parsed.scheme not in ("http", "https"):
        raise IngestError(MSG_SCHEME, f"scheme {parsed.scheme!r} refused in {url!r}")
    try:
        host = parsed.raw_host.decode("ascii").lower().rstrip(".")
    except UnicodeDecodeError as exc:
        raise IngestError(MSG_BAD_URL, f"non-ASCII host in {url!r}") from exc
    if not host:
        raise IngestError(MSG_BAD_URL, f"no host in {url!r}")
    port = parsed.port or (443 if parsed.scheme == "https" else 80)

    if not allow_loopback and (host in LOCALHOST_NAMES or host.endswith(".localhost")):
        raise IngestError(MSG_BLOCKED, f"localhost-like host name {host!r} refused")

    try:
        literal: ipaddress.IPv4Address | ipaddress.IPv6Address | None = ipaddress.ip_address(host)
    except ValueError:
        literal = None
    if literal is not None:
        addresses = [str(literal)]
    else:
        try:
            addresses = _resolve(host, port, settings.fetch_timeout)
        except socket.gaierror as exc:
            if exc.errno == socket.EAI_AGAIN:
                raise TransientFetchError(
                    MSG_CONNECTION, f"temporary DNS failure for {host}: {exc}"
                ) from exc
            raise IngestError(
                f"Не удалось найти сайт {host} — проверьте ссылку.",
                f"DNS lookup of {host} failed: {exc}",
            ) from exc
        except (UnicodeError, OSError) as exc:
            raise IngestError(MSG_BAD_URL, f"cannot resolve {host!r}: {exc}") from exc
    if not addresses:
        raise IngestError(f"Не удалось найти сайт {host} — проверьте ссылку.", f"no addresses for {host}")

    # Every address the name resolves to must be acceptable, not just the first one.
    for address in addresses:
        problem = address_problem(ipaddress.ip_address(address), allow_loopback)
        if problem:
            raise IngestError(MSG_BLOCKED, f"{host} resolves to {address}: {problem}; refused")
    return VettedTarget(url=parsed, host=host, port=port, ip=addresses[0])


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


def download(url: str, settings: Settings | None = None) -> Download:
    """GET `url` with the SSRF guard applied to every hop; returns the capped body."""
    settings = settings or get_settings()
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
    """Main text, metadata and sections of an HTML page (`nodes.html_text`)."""
    try:
        return html_text.extract(html, url)
    except Exception as exc:  # trafilatura/lxml on hostile markup
        raise _no_text(url, f"HTML extraction failed on {url}: {exc!r}") from exc


def fetch_page(url: str) -> ExtractedDocument:
    """Download `url` (SSRF-guarded, capped) and extract its text.

    HTML goes through `nodes.html_text`, text/plain is taken as is, PDF is handed to
    the PDF parser. Raises IngestError or TransientFetchError.
    """
    settings = get_settings()
    got = download(url, settings)
    meta: dict[str, str | int | float | bool | None] = {
        "content_type": got.content_type,
        "redirects": got.redirects,
        "bytes": len(got.body),
    }
    if got.content_type in PDF_TYPES:
        from nodes.formats.pdf import parse_pdf_source

        doc = parse_pdf_source(io.BytesIO(got.body), got.final_url)
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
def fetch_url(url: str) -> ExtractedDocument:
    """Prefect task around `fetch_page`; transient failures are retried."""
    return fetch_page(url)
