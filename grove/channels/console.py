"""The local console: talk to the flows as a Telegram user would, without Telegram.

Type a message and press Enter; to press a button shown under the last reply,
type its label (e.g. `Чат`). Commands work as in Telegram (`/start`).
Ctrl-D or Ctrl-C leaves.
"""

from __future__ import annotations

from collections.abc import Callable

from grove.core.messages import IncomingUpdate, Reply, parse_command
from grove.core.settings import Settings

Turn = Callable[[IncomingUpdate], list[Reply]]  # one update as one turn, returning its replies


def _press(label: str, replies: list[Reply]) -> str | None:
    """Callback data of the button called `label` under the most recent keyboard."""
    for reply in reversed(replies):
        if reply.buttons:
            for row in reply.buttons:
                for button in row:
                    if button.label.casefold() == label.strip().casefold():
                        return button.data
            return None
    return None


def to_update(line: str, user_id: int, last_replies: list[Reply]) -> IncomingUpdate:
    data = _press(line, last_replies)
    if data is not None:
        return IncomingUpdate(origin="console", user_id=user_id, chat_id=user_id, callback_data=data)
    command, args = parse_command(line)
    if command:
        return IncomingUpdate(origin="console", user_id=user_id, chat_id=user_id,
                              command=command, command_args=args, text=args or None)
    return IncomingUpdate(origin="console", user_id=user_id, chat_id=user_id, text=line)


def run_console(settings: Settings, process: Turn) -> None:
    """Read lines until Ctrl-D; each becomes an update run as a turn by `process` (handed in by
    the app: a channel feeds turns, it does not import the dispatcher)."""
    user_id = settings.console_user_id
    print(f"Console as user {user_id}. Type /start; press a button by typing its label; "
          "Ctrl-D to quit.")
    replies: list[Reply] = []
    while True:
        try:
            line = input("\nвы> ").strip()
        except EOFError:
            print()
            return
        if not line:
            continue
        try:
            replies = process(to_update(line, user_id, replies)) or replies
        except Exception as exc:  # noqa: BLE001 - the run shows the traceback; keep the console alive
            print(f"(the flow failed: {exc}; see its run in the Prefect UI)")
