"""A free TCP port on the loopback, for a server a test or a bench starts (importing it starts nothing)."""

from __future__ import annotations

import socket


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])
