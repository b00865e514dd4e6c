"""How an update reaches its flow: one turn per update, per-user lanes, recovery after a crash.

A **turn** (`process`) is one update handled start to end: a run Prefect records, one transaction for all
it writes (the inbox mark included), and its replies delivered from the outbox after commit. The
**dispatcher** runs turns in per-user lanes — a user's updates one at a time and in order, users in
parallel — and on start delivers the replies a crash left unsent, then resumes the updates it left
unfinished. A store outage is retried in the lane until the store is back; any other error ends in a short
apology and a Failed run, not retried; an update that kept killing its process is given up after
`inbox.MAX_ATTEMPTS`.
"""

from __future__ import annotations

import functools
import logging
import threading
import uuid
from collections.abc import Callable
from typing import Any

from flows import texts
from flows.handle_update import handle_update, run_name
from grove.store import inbox, outbox
from grove.core import runs, shutdown
from grove.core.shutdown import Interrupted
from grove.store.db import StoreUnavailable
from grove.core.messages import IncomingUpdate, Reply
from nodes.telegram.reply import CONSOLE, Sender, send_replies, send_reply

log = logging.getLogger(__name__)

STORE_RETRY_DELAYS = [2.0, 5.0, 10.0, 20.0, 30.0, 60.0]


def process(update: IncomingUpdate, sender: Sender = CONSOLE, *,
            parent_task_run_id: uuid.UUID | None = None) -> list[Reply]:
    """One update as one turn (see the module docstring); returns the replies it made.

    `sender`: the process's one sender (the console's when the process has no bot);
    `parent_task_run_id`: the Prefect task run (a lane, scale-out) this turn runs in."""
    durable = update.origin == "telegram" and update.update_id is not None
    source = outbox.Source(update_id=update.update_id) if durable else None
    parameters = {"update": update}
    replies: list[Reply] = []
    with runs.run("handle-update", run_name(parameters), parameters, tags=[f"user:{update.user_id}"],
                  parent_task_run_id=parent_task_run_id) as run:
        try:
            with outbox.committed(source, sender.deliver_row):
                replies = handle_update.fn(update, sender)
                run.summary_markdown, run.summary_title = turn_summary(update, replies), "the turn"
                if durable:
                    send_replies(update.origin, replies, sender, source)  # into the outbox, sent after commit
                    inbox.finish(update.update_id, "failed" if run.failure else "done",  # type: ignore[arg-type]
                                 error=run.failure, trace=run.summary())
            if not durable:  # no outbox (the console, an update outside the inbox): said once committed
                send_replies(update.origin, replies, sender)
        except StoreUnavailable:
            raise
        except Exception as exc:
            log.exception("update %s of user %s failed", update.update_id, update.user_id)
            _finish_failed(update, source, sender, texts.INTERNAL_ERROR, f"{type(exc).__name__}: {exc}", run)
            raise
    return replies


def _finish_failed(update: IncomingUpdate, source: outbox.Source | None, sender: Sender, text: str, reason: str,
                   run: runs.Run | None = None) -> None:
    """Tell the user and close the update as failed, in one transaction (nothing else of the turn stays)."""
    reply = Reply(chat_id=update.chat_id, text=text)
    if run is not None:
        run.summary_markdown, run.summary_title = turn_summary(update, [reply]), "the turn"
    if source is None:  # the console, or an update not in the inbox: said at once
        send_reply(update.origin, reply, sender)
        return
    with outbox.committed(source, sender.deliver_row):
        send_reply(update.origin, reply, sender, source)
        inbox.finish(source.update_id, "failed", error=reason,  # type: ignore[arg-type]
                     trace=run.summary() if run else None)


def turn_summary(update: IncomingUpdate, replies: list[Reply]) -> str:
    """What ops read first about a turn: what the user sent and what they got back, sources included."""
    said = (f"/{update.command} {update.command_args}".strip() if update.command else
            update.text or (f"button «{update.callback_data}»" if update.callback_data else None) or
            ", ".join(f"{a.kind} {a.file_name or ''}".strip() for a in update.attachments) or "—")
    lines = [f"**{update.kind}** · user {update.user_id} · chat {update.chat_id}"
             + (f" · update {update.update_id}" if update.update_id is not None else ""),
             "", "**Пользователь:**", _quoted(said)]
    for reply in replies:
        lines += ["", "**Ответ:**" if not reply.edits_reply else "**Ответ (правка сообщения):**", _quoted(reply.text)]
    if not replies:
        lines += ["", "_ответа нет_"]
    return "\n".join(lines)


def _quoted(text: str) -> str:
    return "\n".join(f"> {line}" if line.strip() else ">" for line in text.splitlines() or [""])


def deliver(ids: list[int], sender: Sender) -> int:
    """Send outbox rows now through the one sender; a failure leaves them for the sweep."""
    return outbox.deliver_or_keep(ids, sender.deliver_row)


def tell_store_down(update: IncomingUpdate, sender: Sender) -> None:
    """Best effort, without the store: the user should not wonder why nothing happens."""
    try:
        if update.origin == "console":
            print(f"\n🤖 {texts.STORE_DOWN}")
        else:
            sender.send_now(Reply(chat_id=update.chat_id, text=texts.STORE_DOWN))
    except Exception as exc:  # noqa: BLE001
        log.warning("could not tell user %s that the store is down: %s", update.user_id, exc)


def run_update(update: IncomingUpdate, stop: threading.Event, sender: Sender,
               run_turn: Callable[[IncomingUpdate], Any] | None = None) -> None:
    """One update to its end: claimed in the inbox, earlier replies first, then its turn; a lost
    store is waited out (the user told once) and the same turn runs again. Used by the
    in-process lanes and by the lanes Prefect runs on task workers (`grove.app.engine`); the turn is
    `run_turn`, by default `process` with `sender`."""
    turn = run_turn or functools.partial(process, sender=sender)
    told = False
    for attempt in range(10_000):
        if stop.is_set():
            return
        try:
            if update.update_id is not None and update.origin == "telegram":
                row = inbox.claim(update.update_id)
                if row is None:
                    return  # finished already (a redelivery, or recovery raced the receiver)
                if row.attempts > inbox.MAX_ATTEMPTS:
                    _finish_failed(update, outbox.Source(update_id=update.update_id), sender, texts.GAVE_UP,
                                   f"gave up after {row.attempts - 1} interrupted attempts")
                    return
                deliver(outbox.unsent(chat_id=update.chat_id), sender)  # earlier replies go first
            turn(update)
            return
        except Interrupted:  # the service is stopping: rolled back, runs again at the next start
            if update.update_id is not None and update.origin == "telegram":
                try:
                    inbox.release(update.update_id)
                except StoreUnavailable:
                    pass  # still 'running': the next start resumes it all the same
            return
        except StoreUnavailable as exc:
            if shutdown.requested():
                return  # the store is being stopped with the rest: nothing to tell the user
            if not told:
                tell_store_down(update, sender)
                told = True
            wait = STORE_RETRY_DELAYS[min(attempt, len(STORE_RETRY_DELAYS) - 1)]
            log.warning("store unavailable for update %s (%s); retrying in %.0f s",
                        update.update_id, exc, wait)
            if stop.wait(wait):
                return
        except Exception:  # noqa: BLE001 - the turn already told the user and recorded the failure
            return


class Dispatcher:
    """Turns in per-user lanes, fed by the receiver (bot) and by recovery after a crash."""

    def __init__(self, sender: Sender, *, workers: int = 16,
                 run_turn: Callable[[IncomingUpdate], Any] | None = None,
                 parse: Callable[[dict[str, Any]], IncomingUpdate | None] | None = None) -> None:
        """`workers`: turns at once (`GROVE_WORKERS`, handed in by the entry point)."""
        from grove.app.lanes import Lanes

        self.sender = sender
        self._run_turn = run_turn  # None: `process` with the sender (`run_update`)
        self._parse = parse
        self._stop = threading.Event()
        self.lanes: Lanes[IncomingUpdate] = Lanes(self._work, workers, name="turn")
        self._sweeper = threading.Thread(target=self._sweep, name="outbox-sweep", daemon=True)

    def submit(self, update: IncomingUpdate) -> bool:
        return self.lanes.submit(update.user_id, update.update_id or id(update), update)

    @property
    def stopping(self) -> threading.Event:
        return self._stop

    def recover(self) -> tuple[int, int]:
        """Deliver what a crash left unsent, then resume unfinished updates; returns (replies, updates)."""
        delivered = deliver(outbox.unsent(), self.sender)
        resumed = 0
        for row in inbox.unfinished():
            update = self._parse(row.payload) if self._parse else None
            if update is None:
                inbox.finish(row.update_id, "skipped", error="not an update grove handles")
                continue
            resumed += self.submit(update)
        if delivered or resumed:
            log.warning("recovered after a stop: %d replies delivered, %d updates resumed", delivered, resumed)
        return delivered, resumed

    def start(self) -> Dispatcher:
        self._sweeper.start()
        return self

    def stop(self, timeout: float = 10.0) -> None:
        """Finish the turns in flight (up to `timeout`); queued ones stay in the inbox for next time."""
        self._stop.set()
        self.lanes.close(wait=False)
        self.lanes.wait_idle(timeout)
        if self._sweeper.is_alive():
            self._sweeper.join(timeout)

    def _work(self, update: IncomingUpdate) -> None:
        run_update(update, self._stop, self.sender, self._run_turn)

    def _sweep(self, every: float = 10.0) -> None:
        """Replies whose delivery failed (Telegram was down) are tried again in the background."""
        while not self._stop.wait(every):
            try:
                deliver(outbox.unsent(), self.sender)
            except Exception as exc:  # noqa: BLE001
                log.info("outbox sweep skipped: %s", exc)
