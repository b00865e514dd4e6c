"""The user's «Стоп»: an answer in flight ends at once, only for who asked, in any process."""

from __future__ import annotations

import threading
import time

import pytest
from telegram import Update

from grove.channels.bot import stop_request
from grove.core import shutdown
from grove.core.messages import stop_data, stop_token


def test_a_stop_ends_the_call_in_flight_at_once_and_hangs_it_up() -> None:
    release = threading.Event()
    hung_up = threading.Event()
    outcome: list[BaseException] = []

    def model_call() -> str:
        switch = shutdown.current_switch()
        assert switch is not None  # the call's thread sees the answer's switch
        with switch.closing(hung_up.set):
            release.wait(60)  # a model still reading the prompt: nothing comes for a while
        return "never used"

    def turn() -> None:
        with shutdown.answering(7, 1234, 42):
            try:
                shutdown.call(model_call)
            except shutdown.Stopped as exc:
                outcome.append(exc)

    thread = threading.Thread(target=turn)
    thread.start()
    while not shutdown.stop_answer(7, 1234, 42):  # until the answer is registered
        time.sleep(0.01)
    thread.join(30)
    release.set()
    assert not thread.is_alive() and isinstance(outcome[0], shutdown.Stopped)
    assert hung_up.is_set()  # the model call's connection was shut, not left writing


def test_a_stop_by_someone_else_or_for_an_answer_already_over_does_nothing() -> None:
    with shutdown.answering(-100, 55, 42) as switch:
        assert shutdown.stop_answer(-100, 55, 43) is False  # another member of the group
        assert shutdown.stop_answer(-100, 56, 42) is False  # another answer
        assert not switch.thrown
        shutdown.check()  # no Stopped: the answer goes on
    assert shutdown.stop_answer(-100, 55, 42) is False  # over
    shutdown.check()  # outside the answer nothing is stopped


def test_calls_after_the_stop_do_not_start() -> None:
    started: list[int] = []
    with shutdown.answering(8, 1, 8) as switch:
        switch.throw()
        with pytest.raises(shutdown.Stopped):
            shutdown.call(lambda: started.append(1))
    assert started == []


def test_the_stop_button_and_telegrams_own_stop_are_read_from_updates() -> None:
    assert stop_token(stop_data(99)) == 99 and stop_token("chat") is None and stop_token("stop:x") is None
    own = Update.de_json({"update_id": 1, "stopped_message_generation": {
        "chat": {"id": 42, "type": "private", "first_name": "A"}, "draft_id": 77}}, None)
    assert stop_request(own) == (42, 77, 42)
    pressed = Update.de_json({"update_id": 2, "callback_query": {
        "id": "9", "chat_instance": "1", "data": stop_data(5), "from": {"id": 43, "is_bot": False, "first_name": "B"},
        "message": {"message_id": 3, "date": 0, "chat": {"id": -100, "type": "group", "title": "G"},
                    "text": "…"}}}, None)
    assert stop_request(pressed) == (-100, 5, 43)
    other = Update.de_json({"update_id": 3, "callback_query": {
        "id": "9", "chat_instance": "1", "data": "mode:chat", "from": {"id": 43, "is_bot": False, "first_name": "B"},
        "message": {"message_id": 3, "date": 0, "chat": {"id": 43, "type": "private", "first_name": "B"},
                    "text": "…"}}}, None)
    assert stop_request(other) is None


def test_a_stop_reaches_the_worker_process_streaming_the_answer(store: str) -> None:
    """Turns on task workers: the bot announces the stop over Postgres, every worker listens."""
    from grove.store import stops

    heard: list[tuple[int, int, int | None]] = []
    got = threading.Event()
    ready = threading.Event()
    stopping = threading.Event()

    def on_stop(chat: int, token: int, user: int | None) -> None:
        heard.append((chat, token, user))
        got.set()

    thread = threading.Thread(target=stops.listen, args=(on_stop, stopping, ready), daemon=True)
    thread.start()
    try:
        assert ready.wait(30)
        stops.announce(-5, 321, 9)
        assert got.wait(30)
    finally:
        stopping.set()
        thread.join(10)
    assert heard == [(-5, 321, 9)]
