"""A user's «Стоп» carried to the process streaming that answer, over Postgres NOTIFY.

With turns on Prefect task workers (`GROVE_DISPATCH=prefect`) the answer streams in another
process, maybe on another machine, than the bot that takes the press. The bot says which answer
to stop on the `grove_stop` channel; every worker listens and stops it if it is its own. A stop
is only meaningful while its answer streams, so nothing is stored: a worker that is down has
no answer to stop.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable

import psycopg

from grove.store.db import database_url, transaction

log = logging.getLogger(__name__)

CHANNEL = "grove_stop"


def announce(chat_id: int, token: int, user_id: int | None) -> None:
    """Tell every listening worker to stop the answer streaming under `token` in `chat_id`."""
    with transaction() as conn:
        conn.execute("SELECT pg_notify(%s, %s)", (CHANNEL, json.dumps([chat_id, token, user_id])))


def listen(on_stop: Callable[[int, int, int | None], object], stopping: threading.Event,
           ready: threading.Event | None = None) -> None:
    """Call `on_stop(chat, token, user)` for every stop announced, until `stopping` is set
    (a lost connection is opened again)."""
    while not stopping.is_set():
        try:
            with psycopg.connect(database_url(), autocommit=True) as conn:
                conn.execute(f"LISTEN {CHANNEL}")
                if ready is not None:
                    ready.set()
                while not stopping.is_set():
                    for note in conn.notifies(timeout=0.5):
                        chat_id, token, user_id = json.loads(note.payload)
                        on_stop(int(chat_id), int(token), user_id)
        except (psycopg.Error, ValueError) as exc:
            log.info("stop listener: %s; listening again", exc)
            stopping.wait(1.0)


def start_listening(on_stop: Callable[[int, int, int | None], object]) -> threading.Event:
    """`listen` on a daemon thread; returns the event that stops it."""
    stopping = threading.Event()
    threading.Thread(target=listen, args=(on_stop, stopping), name="stop-listener", daemon=True).start()
    return stopping
