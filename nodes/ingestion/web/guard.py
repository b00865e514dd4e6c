"""The SSRF guard every request of the link branch passes — the first one and every redirect hop.

Links come from strangers, so `vet_url` allows only http(s) and refuses hosts that resolve to
private, loopback, link-local (cloud metadata at 169.254.169.254), multicast, reserved or
unspecified addresses, including IPv4 addresses hidden inside IPv6 forms. It returns the exact
address it vetted, which the download then connects to (the original name travels in the Host
header and as the TLS SNI / certificate name), so a DNS answer that changes between the check and
the connection (DNS rebinding) cannot steer a request elsewhere.
"""

from __future__ import annotations

import concurrent.futures
import ipaddress
import socket
from dataclasses import dataclass

import httpx

from grove.core.settings import Settings
from grove.core.ingest_types import IngestError


LOCALHOST_NAMES = {"localhost", "localhost.localdomain", "ip6-localhost", "ip6-loopback"}
# 64:ff9b::/96 is the well-known NAT64 prefix: the last 32 bits are an IPv4 address.
NAT64_PREFIX = ipaddress.ip_network("64:ff9b::/96")

MSG_BLOCKED = (
    "Эта ссылка ведёт на локальный или внутренний адрес — такие ссылки я не открываю."
)
MSG_SCHEME = "Поддерживаются только ссылки http:// и https://."
MSG_BAD_URL = "Не получилось разобрать ссылку — проверьте, что она скопирована целиком."
MSG_TIMEOUT = "Сайт не ответил вовремя. Попробуйте позже."
MSG_CONNECTION = "Не удалось подключиться к сайту. Попробуйте позже."


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


def vet_url(url: str | httpx.URL, settings: Settings) -> VettedTarget:
    """Check a URL against the SSRF rules and pick the address to connect to.

    Raises IngestError for anything we refuse; never opens a connection.
    """
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
