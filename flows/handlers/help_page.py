"""/help: what the bot does, its limits, and the commands of the menu (handed in, from the routes)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from flows import texts
from flows.routing import Handler
from grove.core.messages import Command, IncomingUpdate, Reply
from nodes.telegram.reply import Sender


def show_help(commands: Callable[[], Sequence[Command]]) -> Handler:
    """The /help handler for the menu `commands()` gives when it is asked."""
    def handle(update: IncomingUpdate, sender: Sender) -> list[Reply]:
        listed = ", ".join(f"/{c.name} — {c.help}" for c in commands() if not c.admin)
        return [Reply(chat_id=update.chat_id, text=f"{texts.HELP}\n\nКоманды: {listed}.")]
    return handle
