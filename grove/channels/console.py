"""The local console: talk to the flows as a Telegram user would, without Telegram.

Type a message and press Enter; to press a button shown under the last reply,
type its label (e.g. `Чат`). Commands work as in Telegram (`/start`).
Ctrl-D or Ctrl-C leaves.
"""

from __future__ import annotations

import os
import select
import signal
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
    lines = LineReader()
    while True:
        try:
            line = lines.read("\nвы> ").strip()
        except EOFError:
            print()
            return
        if not line:
            continue
        try:
            replies = process(to_update(line, user_id, replies)) or replies
        except Exception as exc:  # noqa: BLE001 - the run shows the traceback; keep the console alive
            print(f"(the flow failed: {exc}; see its run in the Prefect UI)")


class LineReader:
    """`input()` that Ctrl-C always ends.

    A process-wide SIGINT is taken by whichever thread the kernel picks; when that is not the
    main thread, Python runs its handler (KeyboardInterrupt) only once the main thread runs
    bytecode again, and a main thread blocked reading stdin never does: `grove up` would sit
    there until killed. Here the wait is a `select` on stdin and on the signal wakeup pipe, so
    any signal with a Python handler wakes the main thread and the handler runs.
    """

    def __init__(self, fd: int | None = None) -> None:
        self.fd = fd if fd is not None else 0  # stdin
        self._pending = b""
        self._wakeup_read, wakeup_write = os.pipe()
        os.set_blocking(self._wakeup_read, False)
        os.set_blocking(wakeup_write, False)
        signal.set_wakeup_fd(wakeup_write)  # main thread only, like every signal handler

    def read(self, prompt: str) -> str:
        """The next line without its newline; EOFError at the end of input (Ctrl-D)."""
        print(prompt, end="", flush=True)
        while b"\n" not in self._pending:
            ready, _, _ = select.select([self.fd, self._wakeup_read], [], [])
            if self._wakeup_read in ready:
                try:
                    os.read(self._wakeup_read, 512)  # the signal's own handler has run by now
                except BlockingIOError:
                    pass
            if self.fd in ready:
                chunk = os.read(self.fd, 4096)
                if not chunk:
                    if self._pending:
                        break
                    raise EOFError
                self._pending += chunk
        line, _, self._pending = self._pending.partition(b"\n")
        return line.decode("utf-8", errors="replace")
