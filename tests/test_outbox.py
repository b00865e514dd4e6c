"""grove/store/outbox.py against the real Postgres: replies queued with their source, delivered once, in order.

The sender is a stand-in that records what it was asked to send and hands out message ids;
rows belong to chats and sources only the test uses (the outbox is shared).
"""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import psycopg
import pytest
from psycopg.rows import dict_row

from grove.store import outbox
from grove.store.db import unit_of_work
from grove.store.outbox import OutboxRow, Source, Undeliverable


class Sender:
    """Sends each row as `pieces` messages (its payload's "pieces", default 1); fails as told."""

    def __init__(self) -> None:
        self.sent: list[tuple[int, int, dict[str, Any], int | None, int]] = []  # row, chat, payload, edit, piece
        self.fail: dict[int, Exception] = {}  # outbox id -> raised before its next piece
        self.fail_after_pieces: dict[int, int] = {}
        self._ids = itertools.count(1000)

    def __call__(self, row: OutboxRow, sent: Callable[[int], None]) -> None:
        for piece in range(row.pieces_sent, row.payload.get("pieces", 1)):
            if row.id in self.fail and self.fail_after_pieces.get(row.id, 0) <= piece:
                raise self.fail.pop(row.id)
            self.sent.append((row.id, row.chat_id, row.payload, row.edit_message_id, piece))
            sent(next(self._ids))


@pytest.fixture(autouse=True)
def _forget_these_replies(pg_url: str, user_id: int) -> Iterator[None]:
    """Left unsent, these replies would be delivered by the next bot's sweep."""
    yield
    with psycopg.connect(pg_url) as conn:
        conn.execute("delete from outbox where chat_id = %s", (user_id,))


def _row(pg_url: str, outbox_id: int) -> dict[str, Any]:
    with psycopg.connect(pg_url, row_factory=dict_row) as conn:
        row = conn.execute("select update_id, job_id, chat_id, payload, edit_of, pieces_sent, message_ids,"
                           " sent_at is not null as sent, error from outbox where id = %s", (outbox_id,)).fetchone()
    assert row is not None
    return row


def test_a_reply_belongs_to_the_source_it_is_added_with(pg_url: str, user_id: int) -> None:
    first = outbox.add(user_id, {"text": "один"}, Source(update_id=user_id))
    from_job = outbox.add(user_id, {"text": "из задачи"}, Source(job_id=user_id))
    second = outbox.add(user_id, {"text": "два"}, Source(update_id=user_id))
    outside = outbox.add(user_id, {"text": "без источника"}, Source())

    assert {k: _row(pg_url, first)[k] for k in ("update_id", "job_id", "chat_id", "payload", "sent")} == \
        {"update_id": user_id, "job_id": None, "chat_id": user_id, "payload": {"text": "один"}, "sent": False}
    assert (_row(pg_url, from_job)["update_id"], _row(pg_url, from_job)["job_id"]) == (None, user_id)
    assert (_row(pg_url, outside)["update_id"], _row(pg_url, outside)["job_id"]) == (None, None)
    assert outbox.unsent(Source(update_id=user_id)) == [first, second]
    assert outbox.unsent(Source(job_id=user_id)) == [from_job]
    assert outbox.unsent(chat_id=user_id) == [first, from_job, second, outside]
    assert outbox.unsent(Source(update_id=user_id), chat_id=user_id + 1) == []
    assert {first, second, from_job, outside} <= set(outbox.unsent())


def test_a_reply_commits_with_its_turn(pg_url: str, user_id: int) -> None:
    with pytest.raises(RuntimeError), unit_of_work():
        outbox.add(user_id, {"text": "не дойдёт"}, Source(update_id=user_id))
        raise RuntimeError("the turn failed")
    assert outbox.unsent(Source(update_id=user_id)) == []
    with unit_of_work():
        kept = outbox.add(user_id, {"text": "дойдёт"}, Source(update_id=user_id))
    assert outbox.unsent(Source(update_id=user_id)) == [kept]


def test_deliver_sends_in_order_and_only_once(pg_url: str, user_id: int) -> None:
    chat = user_id
    ids = [outbox.add(chat, {"text": f"ответ {n}"}, source=Source(update_id=user_id)) for n in range(3)]
    sender = Sender()
    assert outbox.deliver(outbox.unsent(chat_id=chat), sender) == 3
    assert [(row, payload["text"]) for row, _, payload, _, _ in sender.sent] == \
        [(ids[0], "ответ 0"), (ids[1], "ответ 1"), (ids[2], "ответ 2")]
    assert outbox.unsent(chat_id=chat) == []
    assert [_row(pg_url, i)["message_ids"] for i in ids] == [[1000], [1001], [1002]]
    assert all(_row(pg_url, i)["sent"] and _row(pg_url, i)["pieces_sent"] == 1 for i in ids)

    assert outbox.deliver(ids, sender) == 0  # a second sweep over the same rows sends nothing
    assert len(sender.sent) == 3


def test_two_processes_sweeping_at_once_send_each_reply_once(pg_url: str, user_id: int) -> None:
    ids = [outbox.add(user_id, {"text": f"ответ {n}"}, Source()) for n in range(12)]
    sender = Sender()

    def slow(row: OutboxRow, sent: Callable[[int], None]) -> None:
        time.sleep(0.02)  # widen the window in which the other sweep could take the same row
        sender(row, sent)

    barrier = threading.Barrier(2)
    counts: list[int] = []

    def sweep() -> None:
        barrier.wait(timeout=30)
        counts.append(outbox.deliver(ids, slow))

    threads = [threading.Thread(target=sweep) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sum(counts) == 12
    assert sorted(r for r, *_ in sender.sent) == ids
    assert outbox.unsent(chat_id=user_id) == []


def test_a_long_reply_records_each_piece(pg_url: str, user_id: int) -> None:
    reply = outbox.add(user_id, {"text": "длинный", "pieces": 3}, Source())
    sender = Sender()
    assert outbox.deliver([reply], sender) == 1
    assert [piece for *_, piece in sender.sent] == [0, 1, 2]
    row = _row(pg_url, reply)
    assert (row["pieces_sent"], row["message_ids"], row["sent"]) == (3, [1000, 1001, 1002], True)
    assert outbox.message_id_of(reply) == 1000


def test_undeliverable_is_marked_done_with_the_error(pg_url: str, user_id: int) -> None:
    blocked, fine = outbox.add(user_id, {"text": "a"}, Source()), outbox.add(user_id, {"text": "b"}, Source())
    sender = Sender()
    sender.fail[blocked] = Undeliverable("Forbidden: bot was blocked by the user")
    assert outbox.deliver([blocked, fine], sender) == 1
    row = _row(pg_url, blocked)
    assert (row["sent"], row["error"], row["message_ids"]) == (True, "Forbidden: bot was blocked by the user", [])
    assert [r for r, *_ in sender.sent] == [fine]
    assert outbox.unsent(chat_id=user_id) == []
    assert outbox.message_id_of(blocked) is None
    assert outbox.deliver([blocked], sender) == 0  # not retried


def test_a_transient_failure_leaves_the_reply_for_a_later_sweep(pg_url: str, user_id: int) -> None:
    first, second = outbox.add(user_id, {"text": "первый", "pieces": 2}, Source()), outbox.add(user_id, {"text": "второй"}, Source())
    sender = Sender()
    sender.fail[first] = ConnectionError("Telegram timed out")
    sender.fail_after_pieces[first] = 1  # the first piece went out, the second did not
    with pytest.raises(ConnectionError):
        outbox.deliver([first, second], sender)
    row = _row(pg_url, first)
    assert (row["sent"], row["pieces_sent"], row["message_ids"], row["error"]) == \
        (False, 1, [1000], "Telegram timed out")
    assert sender.sent == [(first, user_id, {"text": "первый", "pieces": 2}, None, 0)]
    assert outbox.unsent(chat_id=user_id) == [first, second]  # the later reply waits behind it

    assert outbox.deliver(outbox.unsent(chat_id=user_id), sender) == 2
    assert [(r, piece) for r, *_, piece in sender.sent] == [(first, 0), (first, 1), (second, 0)]  # no piece twice
    row = _row(pg_url, first)
    assert (row["sent"], row["pieces_sent"], row["message_ids"], row["error"]) == (True, 2, [1000, 1001], None)


def test_an_edit_points_at_the_earlier_replys_message(pg_url: str, user_id: int) -> None:
    progress = outbox.add(user_id, {"text": "Индексирую…", "pieces": 2}, Source())
    sender = Sender()
    outbox.deliver([progress], sender)
    assert outbox.message_id_of(progress) == 1000
    done = outbox.add(user_id, {"text": "Готово"}, Source(), edit_of=progress)
    assert _row(pg_url, done)["edit_of"] == progress
    outbox.deliver([done], sender)
    assert sender.sent[-1] == (done, user_id, {"text": "Готово"}, 1000, 0)


def test_an_edit_of_an_undelivered_reply_sends_that_reply_first_then_edits_it(pg_url: str, user_id: int) -> None:
    progress = outbox.add(user_id, {"text": "Индексирую…"}, Source())
    assert outbox.message_id_of(progress) is None
    done = outbox.add(user_id, {"text": "Готово"}, Source(), edit_of=progress)
    sender = Sender()
    assert outbox.deliver([done], sender) == 1
    assert sender.sent == [(progress, user_id, {"text": "Индексирую…"}, None, 0),
                           (done, user_id, {"text": "Готово"}, 1000, 0)]
    assert outbox.unsent(chat_id=user_id) == []


def test_an_edit_waits_for_the_reply_another_process_is_sending(pg_url: str, user_id: int) -> None:
    """A quick job's result must not overtake its acknowledgement still on its way: it would become
    a message of its own, and the acknowledgement would stay «Принял…» (seen in the suite)."""
    ack = outbox.add(user_id, {"text": "Принял, индексирую…"}, Source())
    result = outbox.add(user_id, {"text": "✅ Проиндексировано"}, Source(), edit_of=ack)
    sender = Sender()
    sending, release = threading.Event(), threading.Event()

    def slow(row: OutboxRow, sent: Callable[[int], None]) -> None:
        if row.id == ack:
            sending.set()
            assert release.wait(30)
        sender(row, sent)

    turn = threading.Thread(target=outbox.deliver, args=([ack], slow))
    turn.start()
    assert sending.wait(30)  # the turn is sending the acknowledgement, holding its row
    job = threading.Thread(target=outbox.deliver, args=([result], sender))
    job.start()
    job.join(0.3)
    assert job.is_alive() and sender.sent == []  # the result waits, sending nothing
    release.set()
    turn.join(30)
    job.join(30)
    assert sender.sent == [(ack, user_id, {"text": "Принял, индексирую…"}, None, 0),
                           (result, user_id, {"text": "✅ Проиндексировано"}, 1000, 0)]  # an edit of the ack
