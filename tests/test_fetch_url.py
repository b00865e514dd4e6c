"""The link branch: a real HTTP site on 127.0.0.1, the SSRF guard, extraction."""

from __future__ import annotations

from grove.core.settings import get_settings
import io
import socket
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from nodes.ingestion import fetch_url as node
from nodes.ingestion.fetch_url import MSG_SCRIPT_ONLY, as_ingest_error, fetch_page, is_transient, user_message_for
from nodes.ingestion.web import download
from nodes.ingestion.web.guard import MSG_BLOCKED, MSG_SCHEME, MSG_TIMEOUT, TransientFetchError, vet_url
from grove.core.ingest_types import IngestError
from tests.support.documents import (
    ARTICLE_AUTHOR,
    ARTICLE_DATE,
    ARTICLE_SENTENCES,
    ARTICLE_TITLE,
    COMMENT_MARKER,
    FOOTER_MARKER,
    NAV_MARKER,
    HtmlSite,
    Route,
    grove_settings,
    make_pdf,
    make_self_signed_cert,
)


@pytest.fixture(scope="module")
def site() -> Iterator[HtmlSite]:
    with HtmlSite(slow_seconds=1.5, huge_bytes=400_000) as running:
        yield running


@pytest.fixture
def loopback_allowed() -> Iterator[None]:
    with grove_settings(allow_loopback_urls=True, fetch_timeout=5):
        yield


@pytest.fixture
def loopback_refused() -> Iterator[None]:
    with grove_settings(allow_loopback_urls=False, fetch_timeout=5):
        yield


@pytest.fixture
def sent(monkeypatch: pytest.MonkeyPatch) -> list[httpx.URL]:
    """Every request the node actually sends (pinned URL); all must go to 127.0.0.1."""
    seen: list[httpx.URL] = []
    original = httpx.Client.send

    def recording_send(self: httpx.Client, request: httpx.Request, **kwargs: object) -> httpx.Response:
        seen.append(request.url)
        assert request.url.host == "127.0.0.1", f"tried to connect to {request.url}"
        return original(self, request, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(httpx.Client, "send", recording_send)
    return seen


def _error(url: str) -> IngestError:
    with pytest.raises(IngestError) as caught:
        fetch_page(url, get_settings())
    return caught.value


# --- extraction ----------------------------------------------------------------


def test_article_main_text_without_boilerplate(site: HtmlSite, loopback_allowed: None) -> None:
    doc = fetch_page(site.url("/article"), get_settings())
    for sentence in ARTICLE_SENTENCES:
        assert sentence in doc.text
    for boilerplate in (NAV_MARKER, FOOTER_MARKER, COMMENT_MARKER, "Десять лучших сортов огурцов"):
        assert boilerplate not in doc.text
    assert doc.source_type == "url"
    assert doc.source_identifier == site.url("/article")
    assert doc.title == ARTICLE_TITLE
    assert doc.author == ARTICLE_AUTHOR
    assert doc.published_at == ARTICLE_DATE
    assert doc.meta["content_type"] == "text/html"
    assert doc.meta["encoding"] == "utf-8"


def test_help_page_keeps_inline_names_lists_and_sections(site: HtmlSite, loopback_allowed: None) -> None:
    from tests.support.documents import MANUAL_HTML_TITLE, manual_html

    site.routes["/help/rect-select.html"] = Route(
        headers={"Content-Type": "application/xhtml+xml"}, body=manual_html().encode("utf-8"))
    doc = fetch_page(site.url("/help/rect-select.html"), get_settings())
    assert doc.title == MANUAL_HTML_TITLE
    assert "из меню изображения Инструменты → Выделение → Прямоугольное выделение;" in doc.text
    assert "несколькими способами:\n- из меню изображения" in doc.text
    assert "с параметрами image, operation, x, y и размерами" in doc.text
    assert "Report a bug" not in doc.text and "След." not in doc.text
    assert [s.path[-1] for s in doc.sections] == [MANUAL_HTML_TITLE, "Активация инструмента",
                                                 "Сценарий выделения", "Ширина и высота"]


def test_charset_from_meta_tag(site: HtmlSite, loopback_allowed: None) -> None:
    doc = fetch_page(site.url("/article-cp1251"), get_settings())  # header has no charset; <meta> says windows-1251
    assert doc.meta["encoding"] == "cp1251"
    assert ARTICLE_SENTENCES[2] in doc.text
    assert doc.title == ARTICLE_TITLE


def test_undeclared_charset_is_detected(site: HtmlSite, loopback_allowed: None) -> None:
    html = (
        "<html><body><article>"
        + "".join(f"<p>{sentence}</p>" for sentence in ARTICLE_SENTENCES)
        + "</article></body></html>"
    ).encode("cp1251")
    site.routes["/undeclared"] = Route(headers={"Content-Type": "text/html"}, body=html)
    doc = fetch_page(site.url("/undeclared"), get_settings())
    assert doc.meta["encoding"] == "cp1251"
    assert ARTICLE_SENTENCES[0] in doc.text


def test_plain_text_page(site: HtmlSite, loopback_allowed: None) -> None:
    doc = fetch_page(site.url("/plain"), get_settings())  # text/plain; charset=koi8-r
    assert doc.text.splitlines() == ARTICLE_SENTENCES
    assert doc.meta["content_type"] == "text/plain"


def test_a_plain_text_page_is_read_as_a_text_file_is(site: HtmlSite, loopback_allowed: None) -> None:
    """No charset declared: the Cyrillic code pages a text file is tried with; binary served as
    text is refused rather than indexed as mojibake."""
    site.routes["/notes.txt"] = Route(headers={"Content-Type": "text/plain"},
                                      body="\n".join(ARTICLE_SENTENCES).encode("cp1251"))
    doc = fetch_page(site.url("/notes.txt"), get_settings())
    assert doc.text.splitlines() == ARTICLE_SENTENCES and doc.meta["encoding"] == "cp1251"
    site.routes["/blob"] = Route(headers={"Content-Type": "text/plain; charset=utf-8"},
                                 body=bytes(range(256)) * 40)
    assert _error(site.url("/blob")).user_message == "Файл не похож на текст — внутри двоичные данные."


def test_pdf_link_is_parsed_per_page(site: HtmlSite, loopback_allowed: None) -> None:
    buffer = io.BytesIO()
    make_pdf(["Первая страница отчёта о посадках.", "Вторая страница: итоги сезона."], buffer)
    site.routes["/report.pdf"] = Route(headers={"Content-Type": "application/pdf"}, body=buffer.getvalue())
    doc = fetch_page(site.url("/report.pdf"), get_settings())
    assert doc.source_type == "url"
    assert doc.source_identifier == site.url("/report.pdf")
    assert doc.pages is not None and len(doc.pages) == 2
    assert "Первая страница отчёта" in doc.pages[0]
    assert "итоги сезона" in doc.pages[1]


# --- redirects -----------------------------------------------------------------


def test_redirect_chain_is_followed_and_final_url_reported(site: HtmlSite, loopback_allowed: None,
                                                           sent: list[httpx.URL]) -> None:
    doc = fetch_page(site.url("/chain/2"), get_settings())
    assert doc.source_identifier == site.url("/article")
    assert doc.meta["redirects"] == 3
    assert [url.path for url in sent] == ["/chain/2", "/chain/1", "/chain/0", "/article"]
    assert ARTICLE_SENTENCES[0] in doc.text


def test_relative_redirect(site: HtmlSite, loopback_allowed: None) -> None:
    doc = fetch_page(site.url("/redirect-relative"), get_settings())
    assert doc.source_identifier == site.url("/article")


def test_redirect_loop_stops(site: HtmlSite, loopback_allowed: None, sent: list[httpx.URL]) -> None:
    error = _error(site.url("/loop"))
    assert "перенаправляет слишком много раз" in error.user_message
    assert len(sent) == download.MAX_REDIRECTS + 1


@pytest.mark.parametrize("path, address", [
    ("/redirect-metadata", "169.254.169.254"),
    ("/redirect-private", "10.0.0.7"),
])
def test_redirect_to_internal_address_refused_at_the_hop(
    site: HtmlSite, loopback_allowed: None, sent: list[httpx.URL], path: str, address: str
) -> None:
    error = _error(site.url(path))
    assert error.user_message == MSG_BLOCKED
    assert address in error.reason and "redirect hop 1" in error.reason
    assert [url.path for url in sent] == [path]  # the internal address was never contacted


def test_redirect_to_file_scheme_refused(site: HtmlSite, loopback_allowed: None,
                                         sent: list[httpx.URL]) -> None:
    error = _error(site.url("/redirect-file"))
    assert error.user_message == MSG_SCHEME
    assert len(sent) == 1


# --- the SSRF guard ------------------------------------------------------------


def test_loopback_refused_unless_allowed(site: HtmlSite) -> None:
    before = len(site.requests)
    with grove_settings(allow_loopback_urls=False):
        error = _error(site.url("/article"))
        assert error.user_message == MSG_BLOCKED and "loopback" in error.reason
        assert _error(site.url("/article", host="localhost")).user_message == MSG_BLOCKED
    assert len(site.requests) == before  # refused before connecting
    with grove_settings(allow_loopback_urls=True):
        assert ARTICLE_SENTENCES[0] in fetch_page(site.url("/article"), get_settings()).text
        assert ARTICLE_SENTENCES[0] in fetch_page(site.url("/article", host="localhost"), get_settings()).text


@pytest.mark.parametrize("url", [
    "http://169.254.169.254/latest/meta-data/",
    "http://10.0.0.1/",
    "http://10.255.1.2:8080/admin",
    "http://192.168.1.1/",
    "http://172.16.5.4/",
    "http://100.64.0.1/",                     # carrier-grade NAT
    "http://0.0.0.0/",
    "http://224.0.0.1/",                      # multicast
    "http://240.0.0.1/",                      # reserved
    "http://[fe80::1]/",                      # IPv6 link-local
    "http://[fd00::1]/",                      # IPv6 unique local
    "http://[::ffff:169.254.169.254]/",       # IPv4-mapped metadata address
    "http://[::ffff:10.0.0.1]/",
    "http://[64:ff9b::a9fe:a9fe]/",           # NAT64 form of 169.254.169.254
    "http://[2002:a9fe:a9fe::1]/",            # 6to4 form of 169.254.169.254
    "http://2852039166/",                     # 169.254.169.254 as one decimal number
])
@pytest.mark.parametrize("allow_loopback", [False, True])
def test_internal_addresses_refused(url: str, allow_loopback: bool, sent: list[httpx.URL]) -> None:
    with grove_settings(allow_loopback_urls=allow_loopback):
        error = _error(url)
    assert error.user_message == MSG_BLOCKED
    assert sent == []


@pytest.mark.parametrize("url", [
    "http://[::1]:8080/",
    "http://127.0.0.1/",
    "http://127.8.9.10/",
    "http://[::ffff:127.0.0.1]/",
    "http://localhost/",
    "http://admin.localhost/",
])
def test_loopback_forms_refused_by_default(url: str, loopback_refused: None,
                                           sent: list[httpx.URL]) -> None:
    assert _error(url).user_message == MSG_BLOCKED
    assert sent == []


@pytest.mark.parametrize("url", [
    "file:///etc/passwd",
    "ftp://example.com/file.txt",
    "gopher://127.0.0.1:25/",
    "javascript:alert(1)",
])
def test_other_schemes_refused(url: str, loopback_allowed: None, sent: list[httpx.URL]) -> None:
    assert _error(url).user_message == MSG_SCHEME
    assert sent == []


def test_every_resolved_address_must_be_public(monkeypatch: pytest.MonkeyPatch,
                                               loopback_refused: None, sent: list[httpx.URL]) -> None:
    real = socket.getaddrinfo

    def fake(host: str, *args: object, **kwargs: object) -> list:
        if host == "mixed.example":
            return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", ("93.184.216.34", 80)),
                    (socket.AF_INET, socket.SOCK_STREAM, 6, "", ("10.0.0.5", 80))]
        return real(host, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", fake)
    error = _error("http://mixed.example/")
    assert error.user_message == MSG_BLOCKED and "10.0.0.5" in error.reason
    assert sent == []


def test_connection_is_pinned_to_the_vetted_address(site: HtmlSite, monkeypatch: pytest.MonkeyPatch,
                                                    loopback_allowed: None, sent: list[httpx.URL]) -> None:
    """DNS rebinding: the name answers 127.0.0.1 for the check, then an internal
    address; the request must still go to the vetted IP, with the original Host."""
    real = socket.getaddrinfo
    lookups: list[str] = []

    def rebinding(host: str, *args: object, **kwargs: object) -> list:
        if host == "rebind.test":
            lookups.append(host)
            address = "127.0.0.1" if len(lookups) == 1 else "10.0.0.9"
            return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (address, site.port))]
        return real(host, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", rebinding)
    url = f"http://rebind.test:{site.port}/article"
    doc = fetch_page(url, get_settings())
    assert ARTICLE_SENTENCES[0] in doc.text
    assert doc.source_identifier == url
    assert lookups == ["rebind.test"]  # resolved once, by the guard
    assert sent[-1].host == "127.0.0.1"
    assert site.requests[-1] == ("/article", f"rebind.test:{site.port}")


def test_https_is_pinned_with_real_sni_and_certificate_check(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, loopback_allowed: None, sent: list[httpx.URL]
) -> None:
    """Over TLS the connection goes to the vetted IP while SNI and the certificate
    check use the real host name (a certificate for another name is refused)."""
    import functools
    import ssl

    pytest.importorskip("cryptography")
    cert, key = make_self_signed_cert(tmp_path, "pinned.test")
    trust = ssl.create_default_context(cafile=str(cert))
    monkeypatch.setattr(node.httpx, "Client", functools.partial(httpx.Client, verify=trust))
    real = socket.getaddrinfo

    def resolve(host: str, *args: object, **kwargs: object) -> list:
        if host in ("pinned.test", "impostor.test"):
            return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", ("127.0.0.1", 443))]
        return real(host, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", resolve)
    with HtmlSite(tls=(cert, key)) as tls_site:
        doc = fetch_page(f"https://pinned.test:{tls_site.port}/article", get_settings())
        assert ARTICLE_SENTENCES[0] in doc.text
        assert tls_site.sni_names == ["pinned.test"]
        assert tls_site.requests == [("/article", f"pinned.test:{tls_site.port}")]
        error = _error(f"https://impostor.test:{tls_site.port}/article")
        assert "сертификат" in error.user_message
    assert {url.host for url in sent} == {"127.0.0.1"}


def test_vet_url_pins_and_keeps_host_header(loopback_allowed: None) -> None:
    target = vet_url("https://[::1]:8443/a?b=1", get_settings())
    assert target.ip == "::1" and target.port == 8443
    assert target.host_header == "[::1]:8443"
    assert str(target.pinned_url) == "https://[::1]:8443/a?b=1"


# --- HTTP errors, limits, content types ----------------------------------------


def test_404_is_permanent(site: HtmlSite, loopback_allowed: None) -> None:
    error = _error(site.url("/missing"))
    assert error.user_message == "Страница не найдена (ошибка 404). Проверьте ссылку."
    assert not is_transient(error)
    assert "403" in _error(site.url("/forbidden")).user_message


@pytest.mark.parametrize("path, status, words", [
    ("/error", 500, "ошибку 500"),
    ("/busy", 429, "429"),
])
def test_5xx_and_429_are_transient(site: HtmlSite, loopback_allowed: None,
                                   path: str, status: int, words: str) -> None:
    before = site.hits(path)
    with pytest.raises(TransientFetchError) as caught:
        fetch_page(site.url(path), get_settings())
    exc = caught.value
    assert exc.status == status
    assert site.hits(path) == before + 1  # the node itself does not loop; Prefect retries the task
    assert is_transient(exc)
    assert words in user_message_for(exc)
    final = as_ingest_error(exc)
    assert isinstance(final, IngestError) and words in final.user_message


def test_slow_page_times_out(site: HtmlSite) -> None:
    with grove_settings(allow_loopback_urls=True, fetch_timeout=0.3), pytest.raises(TransientFetchError) as caught:
        fetch_page(site.url("/slow"), get_settings())
    assert caught.value.user_message == MSG_TIMEOUT
    assert node.is_transient(caught.value)


def test_connection_refused_is_transient(loopback_allowed: None) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]  # closed again: nothing listens there
    with pytest.raises(TransientFetchError) as caught:
        fetch_page(f"http://127.0.0.1:{port}/", get_settings())
    assert user_message_for(caught.value) == "Не удалось подключиться к сайту. Попробуйте позже."


@pytest.mark.parametrize("path", ["/huge", "/huge-declared"])
def test_oversized_page_is_cut_off(site: HtmlSite, path: str) -> None:
    with grove_settings(allow_loopback_urls=True, max_download_bytes=100_000):
        error = _error(site.url(path))
    assert "Страница слишком большая" in error.user_message
    assert "100000" in error.reason


def test_empty_page(site: HtmlSite, loopback_allowed: None) -> None:
    error = _error(site.url("/empty"))
    assert error.user_message.startswith("Не удалось извлечь текст со страницы")


def test_a_script_only_page_is_refused_by_name_not_indexed_as_its_notice(
        site: HtmlSite, loopback_allowed: None) -> None:
    html = "text/html; charset=utf-8"
    site.routes["/spa"] = Route(headers={"Content-Type": html}, body=(
        "<html><head><title>Справочник</title><script src='/app.js'></script></head><body>"
        "<noscript><p>Для работы сайта включите JavaScript в настройках браузера.</p></noscript>"
        "<div id='root'></div><script>render(document.getElementById('root'))</script></body></html>").encode())
    site.routes["/notice"] = Route(headers={"Content-Type": html}, body=(
        "<html><head><title>Каталог</title></head><body><div class='no-js'><p>Включите JavaScript, чтобы "
        "увидеть каталог.</p></div><script src='/bundle.js'></script></body></html>").encode())
    site.routes["/short"] = Route(headers={"Content-Type": html}, body=(
        "<html><head><title>Жимолость</title></head><body><article><p>Жимолость цветёт первой из ягодных "
        "культур, её ягоды созревают в конце мая.</p></article><script>count('visit')</script></body></html>"
    ).encode())
    for path in ("/spa", "/notice"):  # nothing but scripts; a notice and scripts
        error = _error(site.url(path))
        assert error.user_message == MSG_SCRIPT_ONLY and "script-only" in error.reason
    assert "Жимолость цветёт" in fetch_page(site.url("/short"), get_settings()).text  # a short page with a script is a page


@pytest.mark.parametrize("path, shown", [("/binary", "application/octet-stream"), ("/image", "image/png")])
def test_non_html_content_refused(site: HtmlSite, loopback_allowed: None, path: str, shown: str) -> None:
    error = _error(site.url(path))
    assert f"не веб-страница, а файл другого типа ({shown})" in error.user_message


def test_user_messages_for_any_exception() -> None:
    assert user_message_for(httpx.ConnectTimeout("boom")) == MSG_TIMEOUT
    assert user_message_for(httpx.ConnectError("boom")).startswith("Не удалось подключиться")
    assert user_message_for(RuntimeError("boom")) == "Не удалось загрузить страницу по ссылке."
    assert user_message_for(IngestError("Своё сообщение", "x")) == "Своё сообщение"
    assert not node.is_transient(RuntimeError("bug"))


def test_the_task_retries_only_transient_failures(site: HtmlSite, loopback_allowed: None) -> None:
    assert node.fetch_url.name == "fetch-url"
    assert node.fetch_url.retries == 2
    assert node.fetch_url.retry_delay_seconds == [2, 8]
    assert node.fetch_url.retry_condition_fn is node.is_transient
    assert ARTICLE_SENTENCES[1] in node.fetch_url.fn(site.url("/article"), get_settings()).text
