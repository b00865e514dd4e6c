"""The SSRF guard (`nodes.ingestion.web.guard`): why an address is refused, how a URL is vetted
without a connection, and the vetted target the download connects to."""

from __future__ import annotations

import ipaddress
import socket

import httpx
import pytest

from grove.core.ingest_types import IngestError
from grove.core.settings import Settings, get_settings
from nodes.ingestion.web.guard import (
    MSG_BAD_URL,
    MSG_BLOCKED,
    MSG_CONNECTION,
    MSG_SCHEME,
    TransientFetchError,
    address_problem,
    vet_url,
)


def _settings(*, loopback: bool) -> Settings:
    return get_settings().model_copy(update={"allow_loopback_urls": loopback, "fetch_timeout": 5.0})


@pytest.mark.parametrize("address, problem", [
    ("93.184.216.34", None),
    ("2606:4700::6810:85e5", None),
    ("127.0.0.1", "loopback"),
    ("::1", "loopback"),
    ("0.0.0.0", "unspecified"),
    ("169.254.169.254", "link-local"),
    ("fe80::1", "link-local"),
    ("239.255.255.250", "multicast"),
    ("10.1.2.3", "private"),
    ("fd12:3456::1", "private"),
    ("240.0.0.1", "private"),               # 240/4 is listed among the private-use ranges too
    ("100.64.0.1", "not globally routable"),  # carrier-grade NAT
    ("::ffff:192.168.0.1", "private (embedded in ::ffff:c0a8:1)"),
    ("2001:0:4136:e378:8000:63bf:f5ff:fffe", "private (embedded in 2001:0:4136:e378:8000:63bf:f5ff:fffe)"),  # Teredo
    ("2002:5db8:d822::1", None),  # 6to4 of a public address
])
def test_address_problem_names_why_an_address_is_refused(address: str, problem: str | None) -> None:
    assert address_problem(ipaddress.ip_address(address), allow_loopback=False) == problem


def test_loopback_is_allowed_only_when_asked_even_inside_ipv6() -> None:
    assert address_problem(ipaddress.ip_address("127.0.0.2"), allow_loopback=True) is None
    assert address_problem(ipaddress.ip_address("::ffff:127.0.0.1"), allow_loopback=True) is None
    assert address_problem(ipaddress.ip_address("::ffff:127.0.0.1"), allow_loopback=False) == (
        "loopback (embedded in ::ffff:7f00:1)")
    assert address_problem(ipaddress.ip_address("10.0.0.1"), allow_loopback=True) == "private"


def test_a_vetted_url_keeps_its_name_for_the_host_header_and_pins_the_ip() -> None:
    target = vet_url("  HTTP://user:pw@93.184.216.34/a/b?c=1  ", _settings(loopback=False))
    assert (target.host, target.port, target.ip) == ("93.184.216.34", 80, "93.184.216.34")
    assert target.host_header == "93.184.216.34"  # no userinfo
    assert str(target.pinned_url) == "http://user:pw@93.184.216.34/a/b?c=1"
    assert vet_url("https://93.184.216.34/", _settings(loopback=False)).port == 443


def test_a_name_is_resolved_once_and_its_first_address_pinned(monkeypatch: pytest.MonkeyPatch) -> None:
    asked: list[tuple[str, int]] = []

    def resolve(host: str, port: int, *args: object) -> list[tuple[object, ...]]:
        asked.append((host, port))
        return [(socket.AF_INET6, socket.SOCK_STREAM, 6, "", ("2606:4700::1%eth0", port, 0, 0)),
                (socket.AF_INET, socket.SOCK_STREAM, 6, "", ("93.184.216.34", port))]

    monkeypatch.setattr(socket, "getaddrinfo", resolve)
    target = vet_url("https://Garden.Example./page", _settings(loopback=False))
    assert asked == [("garden.example", 443)]  # lower-cased, root dot dropped
    assert target.ip == "2606:4700::1"  # the zone id is dropped
    assert target.host_header == "garden.example."  # the Host header: the URL's own name (httpx lower-cases it)
    assert str(target.pinned_url) == "https://[2606:4700::1]/page"


def test_an_unknown_name_is_permanent_and_a_temporary_dns_failure_is_transient(
        monkeypatch: pytest.MonkeyPatch) -> None:
    errno = {"nowhere.example": socket.EAI_NONAME, "flaky.example": socket.EAI_AGAIN}

    def resolve(host: str, *args: object) -> list[tuple[object, ...]]:
        raise socket.gaierror(errno[host], "lookup failed")

    monkeypatch.setattr(socket, "getaddrinfo", resolve)
    with pytest.raises(IngestError) as caught:
        vet_url("http://nowhere.example/", _settings(loopback=False))
    assert caught.value.user_message == "Не удалось найти сайт nowhere.example — проверьте ссылку."
    with pytest.raises(TransientFetchError) as transient:
        vet_url("http://flaky.example/", _settings(loopback=False))
    assert transient.value.user_message == MSG_CONNECTION and transient.value.status is None


@pytest.mark.parametrize("url, message", [
    ("ftp://93.184.216.34/", MSG_SCHEME),
    ("http:///path-only", MSG_BAD_URL),
    ("http://[not-an-ip]/", MSG_BAD_URL),
    ("http://localhost.localdomain/", MSG_BLOCKED),
    ("http://ip6-localhost:8080/", MSG_BLOCKED),
    ("http://app.localhost./", MSG_BLOCKED),
])
def test_refused_urls_say_why_in_russian(url: str, message: str) -> None:
    with pytest.raises(IngestError) as caught:
        vet_url(url, _settings(loopback=False))
    assert caught.value.user_message == message


def test_localhost_names_pass_the_name_check_when_loopback_is_allowed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(socket, "getaddrinfo", lambda host, port, *a: [
        (socket.AF_INET, socket.SOCK_STREAM, 6, "", ("127.0.0.1", port))])
    target = vet_url("http://app.localhost:8080/", _settings(loopback=True))
    assert (target.ip, target.port) == ("127.0.0.1", 8080)


def test_vet_url_accepts_an_httpx_url_as_a_redirect_hands_it() -> None:
    target = vet_url(httpx.URL("http://93.184.216.34:8080/x"), _settings(loopback=False))
    assert target.host_header == "93.184.216.34:8080"
