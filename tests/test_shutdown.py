"""Stopping mid-turn: the turn ends at once, tells the user nothing, and runs again next start."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import psycopg
import pytest

from grove.app.dispatch import run_update
from grove.core import shutdown
from grove.core.messages import IncomingUpdate
from grove.store import inbox
from nodes.store.user_state import set_user_mode
from nodes.telegram.reply import CONSOLE
from tests.support.scripted_llm import ScriptedLLM, slow, text
from tests.support.telegram_standin import TelegramStandin

pytestmark = [pytest.mark.timeout(300)]


@pytest.fixture
def stoppable() -> Iterator[None]:
    shutdown.reset()
    yield
    shutdown.reset()  # this test process goes on after its simulated stop


def test_a_turn_waiting_on_the_model_is_cut_rolled_back_and_handed_back(
        standin: TelegramStandin, store: str, user_id: int, env, stoppable: None) -> None:  # type: ignore[no-untyped-def]
    with ScriptedLLM([slow(60, text("слишком поздно"))]) as llm:
        env(GROVE_LLM_API_KEY="k", GROVE_LLM_BASE_URL=llm.base_url, GROVE_PLANNER="off", GROVE_LLM_RETRIES="2",
            GROVE_LLM_RETRY_DELAYS="[30, 30]")
        set_user_mode.fn(user_id, user_id, "chat")
        update_id = user_id * 10
        inbox.store(update_id, user_id, user_id, {"update_id": update_id})
        update = IncomingUpdate(update_id=update_id, user_id=user_id, chat_id=user_id, text="Чем подкормить малину?")
        finished = threading.Event()
        worker = threading.Thread(target=lambda: (run_update(update, threading.Event(), CONSOLE), finished.set()))
        worker.start()
        deadline = time.monotonic() + 60
        while not llm.requests and time.monotonic() < deadline:  # the model is answering
            time.sleep(0.05)
        assert llm.requests
        began = time.monotonic()
        shutdown.request()
        assert finished.wait(10)  # not the 60 s the model would take, nor its 30 s retries
        stopped_in = time.monotonic() - began
    assert stopped_in < 10
    assert standin.bot_messages(user_id) == []  # no apology, no «база недоступна»
    with psycopg.connect(store) as conn:
        row = conn.execute("select status, attempts from inbox where update_id = %s", (update_id,)).fetchone()
        history = conn.execute("select count(*) from chat_messages where user_id = %s", (user_id,)).fetchone()
    assert row == ("pending", 0)  # handed back; the cut attempt does not count towards giving up
    assert history == (0,)  # the turn's writes rolled back
