"""Downloading a vetted link (`nodes.ingestion.web.download`) from a real HTTP server on 127.0.0.1:
redirects followed by hand and counted, content types decided (sniffed when the server does not
say), bodies capped after decompression, HTTP errors sorted into permanent and transient."""

from __future__ import annotations

import gzip
from collections.abc import Iterator

import pytest

from grove.core.ingest_types import IngestError
from grove.core.settings import Settings, get_settings
from nodes.ingestion.web.download import MAX_REDIRECTS, download
from nodes.ingestion.web.guard import MSG_BLOCKED, TransientFetchError
from tests.support.documents import HtmlSite, Route

PDF = b"%PDF-1.4\n1 0 obj <<>> endobj\n%%EOF"


@pytest.fixture(scope="module")
def site() -> Iterator[HtmlSite]:
    with HtmlSite(huge_bytes=1000) as running:
        running.routes.update({
            "/typed": Route(headers={"Content-Type": 'Text/HTML; Charset="KOI8-R"; q=1'}, body=b"<p>x</p>"),
            "/octet-pdf": Route(headers={"Content-Type": "application/octet-stream"}, body=b"\n  " + PDF),
            "/untyped-html": Route(body=b"<!DOCTYPE html><html><body>x</body></html>"),
            "/octet-xml": Route(headers={"Content-Type": "binary/octet-stream"}, body=b'<?xml version="1.0"?><r/>'),
            "/json": Route(headers={"Content-Type": "application/json"}, body=b'{"a": 1}'),
            "/plain": Route(headers={"Content-Type": "text/plain"}, body="Текст".encode()),
            "/x-pdf": Route(headers={"Content-Type": "application/x-pdf"}, body=PDF),
            "/gzip-bomb": Route(headers={"Content-Type": "text/html", "Content-Encoding": "gzip"},
                                body=gzip.compress(b"<html>" + b" " * 300_000)),
            "/small-gzip": Route(headers={"Content-Type": "text/html", "Content-Encoding": "gzip"},
                                 body=gzip.compress(b"<html>" + b" " * 1000)),
            "/no-location": Route(302),
            "/not-modified": Route(304),
            "/gone": Route(410),
            "/unauthorized": Route(401),
            "/teapot": Route(418),
            "/unavailable": Route(503),
            "/to-loopback-name": Route(302, {"Location": "http://localhost/secret"}),
            "/to-ipv6-mapped": Route(302, {"Location": "http://[::ffff:10.0.0.1]/"}),
        })
        for n in range(1, MAX_REDIRECTS + 2):  # /hops/N redirects N times before the page
            running.routes[f"/hops/{n}"] = Route(302, {"Location": f"/hops/{n - 1}" if n > 1 else "/plain"})
        yield running


def _settings(**values: object) -> Settings:
    return get_settings().model_copy(update={"allow_loopback_urls": True, "fetch_timeout": 5.0, **values})


def test_the_content_type_and_charset_are_read_from_the_header(site: HtmlSite) -> None:
    got = download(site.url("/typed"), _settings())
    assert (got.status, got.content_type, got.charset, got.body, got.redirects) == (
        200, "text/html", "koi8-r", b"<p>x</p>", 0)
    assert download(site.url("/x-pdf"), _settings()).content_type == "application/x-pdf"


@pytest.mark.parametrize("path, sniffed", [
    ("/octet-pdf", "application/pdf"),
    ("/untyped-html", "text/html"),
    ("/octet-xml", "text/html"),
])
def test_an_untyped_body_is_sniffed(site: HtmlSite, path: str, sniffed: str) -> None:
    got = download(site.url(path), _settings())
    assert got.content_type == sniffed and got.charset is None


def test_other_types_are_refused_before_the_body_is_read(site: HtmlSite) -> None:
    with pytest.raises(IngestError) as caught:
        download(site.url("/json"), _settings())
    assert caught.value.user_message.startswith("По ссылке не веб-страница, а файл другого типа (application/json).")


def test_redirects_are_counted_up_to_the_limit(site: HtmlSite) -> None:
    got = download(site.url(f"/hops/{MAX_REDIRECTS}"), _settings())
    assert got.redirects == MAX_REDIRECTS and got.final_url == site.url("/plain")
    assert got.body == "Текст".encode()
    with pytest.raises(IngestError) as caught:
        download(site.url(f"/hops/{MAX_REDIRECTS + 1}"), _settings())
    assert caught.value.user_message == "Ссылка перенаправляет слишком много раз — не удалось дойти до страницы."


def test_every_redirect_hop_is_vetted_again(site: HtmlSite) -> None:
    with pytest.raises(IngestError) as caught:
        download(site.url("/to-loopback-name"), _settings(allow_loopback_urls=False))
    assert caught.value.user_message == MSG_BLOCKED  # the first hop was already refused: 127.0.0.1
    before = site.hits("/to-ipv6-mapped")
    with pytest.raises(IngestError) as caught:
        download(site.url("/to-ipv6-mapped"), _settings())
    assert caught.value.user_message == MSG_BLOCKED
    assert caught.value.reason.startswith("redirect hop 1 from ") and "10.0.0.1" in caught.value.reason
    assert site.hits("/to-ipv6-mapped") == before + 1


def test_a_compressed_body_is_capped_after_decompression(site: HtmlSite) -> None:
    assert len(download(site.url("/small-gzip"), _settings(max_download_bytes=2000)).body) == 1006
    with pytest.raises(IngestError) as caught:
        download(site.url("/gzip-bomb"), _settings(max_download_bytes=100_000))
    assert caught.value.user_message == "Страница слишком большая (больше 97 КБ) — не загружаю её."
    assert "body exceeded 100000 bytes" in caught.value.reason


def test_a_declared_length_over_the_cap_is_refused_in_megabytes(site: HtmlSite) -> None:
    with pytest.raises(IngestError) as caught:
        download(site.url("/huge-declared"), _settings(max_download_bytes=512))
    assert caught.value.user_message == "Страница слишком большая (больше 1 КБ) — не загружаю её."
    assert "Content-Length 1012 > 512" in caught.value.reason


@pytest.mark.parametrize("path, message", [
    ("/gone", "Страница не найдена (ошибка 410). Проверьте ссылку."),
    ("/unauthorized", "Доступ к странице закрыт (ошибка 401) — возможно, нужна авторизация."),
    ("/teapot", "Сайт отказался отдать страницу (ошибка 418)."),
    ("/no-location", "Не удалось загрузить страницу по ссылке."),
    ("/not-modified", "Не удалось загрузить страницу по ссылке."),
])
def test_permanent_failures_are_ingest_errors_in_russian(site: HtmlSite, path: str, message: str) -> None:
    with pytest.raises(IngestError) as caught:
        download(site.url(path), _settings())
    assert caught.value.user_message == message


def test_a_503_is_transient_and_keeps_its_status(site: HtmlSite) -> None:
    with pytest.raises(TransientFetchError) as caught:
        download(site.url("/unavailable"), _settings())
    assert caught.value.status == 503 and caught.value.user_message == "Сайт вернул ошибку 503. Попробуйте позже."
