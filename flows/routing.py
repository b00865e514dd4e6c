"""Routing as data: a `Route` pairs a pure matcher with the handler that answers what it matches.

Matchers read the update alone — its command, its button data, where it came from — never the
store, so the table (`flows/handle_update.py`) says by itself which handler answers which update
(`tests/test_routes.py` reads it so). A route users call by a command carries its `Command`: the
line in Telegram's menu and in /help, so adding a command is its handler module, its route line
and its test.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from grove.core.messages import Command, IncomingUpdate, Reply
from nodes.telegram.reply import Sender

Matcher = Callable[[IncomingUpdate], bool]
Handler = Callable[[IncomingUpdate, Sender], list[Reply]]
"""Answers an update; `sender` gives it the chat's views (a toast, «печатает…», a streamed draft)."""


def command(*names: str) -> Matcher:
    return lambda update: update.command in names


def button(prefix: str, *, exact: bool = False) -> Matcher:
    """A press on a button whose data is `prefix` (`exact`) or starts with it."""
    def matches(update: IncomingUpdate) -> bool:
        data = update.callback_data
        return data is not None and (data == prefix if exact else data.startswith(prefix))
    return matches


def either(*matchers: Matcher) -> Matcher:
    return lambda update: any(m(update) for m in matchers)


@dataclass(frozen=True)
class Route:
    """An update `matches` → `handle` answers it. The first matching route of a table wins."""

    name: str
    matches: Matcher
    handle: Handler
    menu: Command | None = None  # listed in Telegram's command menu and in /help


def menu(routes: tuple[Route, ...]) -> tuple[Command, ...]:
    """The commands of a table, in the order users see them."""
    return tuple(sorted((r.menu for r in routes if r.menu is not None), key=lambda c: c.position))
