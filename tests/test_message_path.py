"""The message path: each user's updates in order, nothing acknowledged lost, crashes survived.

Real Postgres, the Bot API stand-in over HTTP, python-telegram-bot, and a scripted LLM. The
crash tests run the bot in a child process and `kill -9` it with work in flight.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import psycopg
import pytest

from nodes.store.user_state import set_user_mode
from tests.support.bot import dispatcher_of, new_bot, running
from tests.support.scripted_llm import Response, ScriptedLLM, _completion, slow
from tests.support.telegram_standin import TelegramStandin

pytestmark = [pytest.mark.timeout(600)]
ROOT = Path(__file__).resolve().parent.parent


def echo(request: dict) -> Response:
    """Answers with the question it was asked, so order can be read off the answers."""
    question = next(m["content"] for m in reversed(request["messages"]) if m["role"] == "user")
    return Response(body=_completion({"role": "assistant", "content": f"Ответ: {question}"}, "stop"))


@pytest.fixture
def echo_llm(env):  # type: ignore[no-untyped-def]
    with ScriptedLLM(default=echo) as server:
        env(GROVE_LLM_API_KEY="test-key", GROVE_LLM_BASE_URL=server.base_url, GROVE_LLM_MODEL="scripted",
            GROVE_PLANNER="off", GROVE_LLM_RETRIES="0")
        yield server


def questions_in_history(url: str, user_id: int) -> list[str]:
    with psycopg.connect(url) as conn:
        rows = conn.execute("select content from chat_messages where user_id = %s and role = 'user' order by id",
                            (user_id,)).fetchall()
    return [r[0] for r in rows]


def answers(standin: TelegramStandin, user_id: int) -> list[str]:
    return [m["text"] for m in standin.bot_messages(user_id)]


async def until(check, timeout: float = 60.0):  # type: ignore[no-untyped-def]
    """Wait (without blocking the bot's event loop) for `check()` to be true; the deadline only bounds a hang."""
    deadline = time.monotonic() + timeout
    while not (result := check()):
        if time.monotonic() > deadline:
            raise AssertionError("condition not met in time")
        await asyncio.sleep(0.05)
    return result


@pytest.mark.asyncio
async def test_one_users_burst_is_answered_and_stored_in_order(
        standin: TelegramStandin, echo_llm: ScriptedLLM, store: str, user_id: int) -> None:
    set_user_mode.fn(user_id, user_id, "chat")
    sent = [f"вопрос {i} про малину" for i in range(10)]
    app = new_bot()
    async with running(app):
        for question in sent:
            standin.send_text(user_id, question)
            await asyncio.sleep(0.02)
        await standin.wait_for_bot_messages_async(user_id, 10, timeout=120)
    assert answers(standin, user_id) == [f"Ответ: {q}" for q in sent]
    assert questions_in_history(store, user_id) == sent
    assert dispatcher_of(app).lanes.max_running_per_key == 1


@pytest.mark.asyncio
async def test_fifty_users_by_ten_lose_nothing_and_keep_each_users_order(
        standin: TelegramStandin, echo_llm: ScriptedLLM, store: str, user_id: int) -> None:
    users = [user_id * 100 + n for n in range(50)]
    for uid in users:
        set_user_mode.fn(uid, uid, "chat")
    app = new_bot()
    async with running(app):
        for i in range(10):  # interleaved, as a burst of many users arrives
            for uid in users:
                standin.send_text(uid, f"вопрос {i} от {uid}")
        for uid in users:
            await standin.wait_for_bot_messages_async(uid, 10, timeout=300)
    for uid in users:
        expected = [f"вопрос {i} от {uid}" for i in range(10)]
        assert answers(standin, uid) == [f"Ответ: {q}" for q in expected], uid
        assert questions_in_history(store, uid) == expected, uid
    assert dispatcher_of(app).lanes.max_running_per_key == 1
    with psycopg.connect(store) as conn:
        statuses = conn.execute("select status, count(*) from inbox where user_id = any(%s) group by status",
                                (users,)).fetchall()
    assert dict(statuses) == {"done": 500}


@pytest.mark.asyncio
async def test_an_update_the_store_cannot_take_is_not_acknowledged(
        standin: TelegramStandin, store: str, user_id: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """While the inbox cannot store, polling does not confirm the batch; it is taken once it can."""
    import grove.channels.bot
    from grove.store.db import StoreUnavailable

    real = grove.channels.bot.inbox.store
    refusing = {"on": True}
    refused: list[int] = []  # update ids, one per refused put (appended from the receiver's thread)

    def store_or_fail(*args, **kwargs):  # type: ignore[no-untyped-def]
        if refusing["on"]:
            refused.append(args[0])
            raise StoreUnavailable("Postgres is unavailable: connection refused (test)")
        return real(*args, **kwargs)

    monkeypatch.setattr(grove.channels.bot.inbox, "store", store_or_fail)
    async with running(new_bot()):
        update = standin.send_text(user_id, "/start")
        # Refused three times: polling fetched the batch again after each refusal, so the getUpdates
        # calls in between (their offset is what acknowledges) left it unconfirmed. An update
        # acknowledged instead ends the wait too, and fails below.
        await until(lambda: len(refused) >= 3 or not standin.pending_updates())
        assert set(refused) == {update["update_id"]}
        assert len(standin.pending_updates()) == 1  # still Telegram's: not acknowledged
        assert standin.bot_messages(user_id) == []
        refusing["on"] = False
        [menu] = await standin.wait_for_bot_messages_async(user_id, 1, timeout=60)
    assert menu["text"] == "Выберите режим работы"
    assert not standin.pending_updates()


# ----------------------------------------------------------------------------- crashes

BOT_PROCESS = """
import logging, signal, sys
logging.basicConfig(level=logging.WARNING)
from grove.channels.bot import build_application, parse_stored
from grove.app.dispatch import Dispatcher
from grove.core.settings import get_settings
from grove.app.worker import JobWorker
from nodes.telegram.api import LoopBot
from nodes.telegram.reply import Sender

settings = get_settings().model_copy(update={"telegram_poll_timeout": 1})
sender = Sender(LoopBot.open(settings))
dispatcher = Dispatcher(sender, parse=parse_stored)
dispatcher.recover()
dispatcher.start()
JobWorker(sender, poll=0.2).start()
app = build_application(settings, dispatcher.submit)
print("ready", flush=True)
app.run_polling(timeout=1, poll_interval=0, stop_signals=(signal.SIGTERM,))
"""


class BotProcess:
    """The bot (receiver, lanes, outbox, a job worker) in a process of its own, to be killed."""

    def __init__(self) -> None:
        env = {**os.environ, "GROVE_JOB_LEASE_SECONDS": "4", "PYTHONUNBUFFERED": "1"}
        self.process = subprocess.Popen([sys.executable, "-c", BOT_PROCESS], cwd=ROOT, env=env,
                                        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        assert self.process.stdout is not None
        self.output: list[str] = []
        for line in self.process.stdout:  # log lines may come first
            self.output.append(line)
            if line.strip() == "ready":
                break
        else:
            raise AssertionError("the bot process did not start:\n" + "".join(self.output))
        threading.Thread(target=self._drain, daemon=True).start()  # a full pipe would block the bot

    def _drain(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.output.append(line)

    def kill(self) -> None:
        os.kill(self.process.pid, signal.SIGKILL)
        self.process.wait(10)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(60)
            except subprocess.TimeoutExpired:
                self.kill()


def wait_until(check, timeout: float = 120.0, every: float = 0.2):  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        result = check()
        if result:
            return result
        time.sleep(every)
    raise AssertionError("condition not met in time")


def one_row(url: str, sql: str, *params: object) -> tuple:
    with psycopg.connect(url) as conn:
        return conn.execute(sql, params).fetchone()


def nothing_left_to_send(url: str, user_id: int) -> bool:
    """The user's background jobs are done, none of their updates is unfinished and no reply to them is
    unsent: nothing is left that could still send them a message (their chat id is their user id)."""
    return one_row(
        url, "select exists (select 1 from jobs where user_id = %s)"
             "   and not exists (select 1 from jobs where user_id = %s and status <> 'done')"
             "   and not exists (select 1 from inbox where user_id = %s and status in ('pending', 'running'))"
             "   and not exists (select 1 from outbox where chat_id = %s and sent_at is null)",
        user_id, user_id, user_id, user_id) == (True,)


def test_a_chat_answer_in_flight_survives_kill_9_and_is_answered_once(
        standin: TelegramStandin, store: str, user_id: int, env) -> None:  # type: ignore[no-untyped-def]
    with ScriptedLLM(default=slow(4, echo)) as llm:
        env(GROVE_LLM_API_KEY="k", GROVE_LLM_BASE_URL=llm.base_url, GROVE_PLANNER="off", GROVE_LLM_RETRIES="0")
        set_user_mode.fn(user_id, user_id, "chat")
        bot = BotProcess()
        try:
            update = standin.send_text(user_id, "Когда подкармливать малину?")
            wait_until(lambda: llm.requests)  # the model is answering: the turn is in flight
            wait_until(lambda: not standin.pending_updates())  # and Telegram considers it delivered
            bot.kill()
            assert standin.bot_messages(user_id) == []
            assert one_row(store, "select status from inbox where update_id = %s", update["update_id"]) == ("running",)
            bot = BotProcess()
            standin.wait_for_bot_messages(user_id, 1, timeout=120)
            # A later question of the same user runs after the resumed one in the user's lane, and
            # replies left unsent go out before it: a second answer to the first would come first.
            later = standin.send_text(user_id, "А летом?")
            standin.wait_for_bot_messages(user_id, 2, timeout=120)
        finally:
            bot.stop()
    assert answers(standin, user_id) == ["Ответ: Когда подкармливать малину?", "Ответ: А летом?"]
    assert questions_in_history(store, user_id) == ["Когда подкармливать малину?", "А летом?"]
    assert one_row(store, "select status, attempts from inbox where update_id = %s",
                   update["update_id"]) == ("done", 2)
    assert one_row(store, "select status, attempts from inbox where update_id = %s",
                   later["update_id"]) == ("done", 1)


@pytest.mark.models
def test_an_ingestion_in_flight_survives_kill_9_and_is_confirmed_once(
        standin: TelegramStandin, store: str, user_id: int, tmp_path: Path) -> None:
    from tests.support.documents import make_pdf

    set_user_mode.fn(user_id, user_id, "documents")
    pages = [(f"Страница {n}. Малину обрезают весной до первой почки, а ремонтантную — под корень осенью. " * 12)
             for n in range(1, 9)]
    pdf = tmp_path / "обрезка.pdf"
    make_pdf(pages, pdf)
    bot = BotProcess()
    try:
        standin.send_document(user_id, pdf.read_bytes(), "обрезка.pdf", "application/pdf")
        [ack] = standin.wait_for_bot_messages(user_id, 1, timeout=60)
        assert (standin.sent_text(user_id, ack["message_id"]) or "").startswith("Принял «обрезка.pdf», индексирую")  # as sent, before any edit
        wait_until(lambda: one_row(store, "select count(*) from jobs where user_id = %s and status = 'running'",
                                   user_id) == (1,))
        # The one window the outbox leaves (Telegram accepted a message, its mark not yet written)
        # is not what this test is about: kill once the acknowledgement is recorded as sent.
        wait_until(lambda: one_row(store, "select sent_at is not null from outbox where chat_id = %s"
                                          " order by id limit 1", user_id) == (True,))
        bot.kill()
        bot = BotProcess()
        # The job done and its confirmation delivered (the outbox marks a reply sent once Telegram took it)
        wait_until(lambda: nothing_left_to_send(store, user_id), timeout=400)
    finally:
        bot.stop()
    [message] = standin.bot_messages(user_id)  # the acknowledgement, edited into the confirmation
    assert message["message_id"] == ack["message_id"]
    assert message["text"].startswith("✅ Проиндексировано: ")
    assert one_row(store, "select count(*) from documents where owner_id = %s", user_id) == (1,)
    assert one_row(store, "select attempts from jobs where user_id = %s", user_id)[0] >= 2


# ----------------------------------------------------------------------------- background indexing

def eight_pages() -> list[str]:
    return [(f"Страница {n}. Малину обрезают весной до первой почки, ремонтантную — под корень осенью; "
             "подкармливают азотом весной и калием летом. ") * 10 for n in range(1, 9)]


@pytest.mark.models
@pytest.mark.asyncio
async def test_indexing_runs_in_the_background_with_progress_and_the_user_is_answered_meanwhile(
        standin: TelegramStandin, store: str, user_id: int, tmp_path: Path, env) -> None:  # type: ignore[no-untyped-def]
    from tests.support.documents import make_pdf

    env(GROVE_PROGRESS_EVERY="0.3")
    set_user_mode.fn(user_id, user_id, "documents")
    pdf = make_pdf(eight_pages(), tmp_path / "малина.pdf")
    async with running(new_bot(), worker=True):
        standin.send_document(user_id, pdf.read_bytes(), "малина.pdf", "application/pdf")
        [ack] = await standin.wait_for_bot_messages_async(user_id, 1, timeout=60)
        assert (standin.sent_text(user_id, ack["message_id"]) or "").startswith("Принял «малина.pdf», индексирую")  # as sent, before any edit
        standin.send_text(user_id, "/start")  # while the PDF is being indexed
        messages = await standin.wait_for_bot_messages_async(user_id, 2, timeout=60)
        assert messages[1]["text"] == "Выберите режим работы"
        # answered while the PDF waits or is being indexed: the worker may not have taken it yet
        assert one_row(store, "select status from jobs where user_id = %s", user_id) in {("queued",), ("running",)}
        # the job done and its confirmation delivered (the outbox marks a reply sent once Telegram took it)
        await asyncio.to_thread(wait_until, lambda: nothing_left_to_send(store, user_id), 400)
    edits = [c["params"] for c in standin.calls("editMessageText")
             if c["params"].get("message_id") == ack["message_id"]]
    assert any(e["text"].startswith("Индексирую") for e in edits)  # progress shown on the way
    final = next(m for m in standin.bot_messages(user_id) if m["message_id"] == ack["message_id"])
    assert final["text"].startswith("✅ Проиндексировано: ")


@pytest.mark.models
def test_postgres_lost_mid_indexing_stops_says_so_and_resumes_when_back(
        standin: TelegramStandin, user_id: int, tmp_path: Path, env,  # type: ignore[no-untyped-def]
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A store of its own, stopped while the worker embeds: the user hears it at once, nothing is
    half-written, and the job finishes once Postgres is back. The first embedding waits until the
    store is down, so the loss lands mid-indexing however fast the CPU embeds."""
    import flows.ingest
    from grove.store.db import close_pool, prepare_database
    from grove.infra.postgres_server import EmbeddedPostgres
    from grove.app.worker import STORE_LOST, JobWorker
    from tests.support.ports import free_port
    from tests.support.documents import make_pdf

    import tempfile

    root = Path(tempfile.mkdtemp(prefix="grove-pg-lost-"))
    root.chmod(0o755)  # the unprivileged Postgres user must reach it
    server = EmbeddedPostgres(root=root / "pg", port=free_port())
    url = server.start()
    env(DATABASE_URL=url, GROVE_JOB_LEASE_SECONDS="3")
    close_pool()
    prepare_database()
    set_user_mode.fn(user_id, user_id, "documents")
    pdf = make_pdf(eight_pages() * 2, tmp_path / "малина.pdf")
    embedding, store_down = threading.Event(), threading.Event()
    real_embed = flows.ingest.embed_chunks

    def embed_once_the_store_is_down(*args, **kwargs):  # type: ignore[no-untyped-def]
        if not embedding.is_set():
            embedding.set()
            assert store_down.wait(120)
        return real_embed(*args, **kwargs)

    monkeypatch.setattr(flows.ingest, "embed_chunks", embed_once_the_store_is_down)

    async def scenario() -> None:
        async with running(new_bot()) as app:
            standin.send_document(user_id, pdf.read_bytes(), "малина.pdf", "application/pdf")
            [ack] = await standin.wait_for_bot_messages_async(user_id, 1, timeout=60)
            worker = JobWorker(dispatcher_of(app).sender, poll=0.2).start()
            try:
                assert await asyncio.to_thread(embedding.wait, 120)
                await asyncio.to_thread(server.stop)
                store_down.set()
                messages = await standin.wait_for_bot_messages_async(user_id, 2, timeout=60)
                assert messages[1]["text"] == STORE_LOST
                await asyncio.to_thread(server.start)
                await asyncio.to_thread(wait_until, lambda: one_row(
                    url, "select status from jobs where user_id = %s", user_id) == ("done",), 400)
            finally:
                await asyncio.to_thread(worker.stop, 30)
            final = next(m for m in standin.bot_messages(user_id) if m["message_id"] == ack["message_id"])
            assert final["text"].startswith("✅ Проиндексировано: ")

    try:
        asyncio.run(scenario())
        assert one_row(url, "select count(*) from documents where owner_id = %s", user_id) == (1,)
        assert one_row(url, "select attempts from jobs where user_id = %s", user_id)[0] == 2
    finally:
        close_pool()
        server.stop()


# ----------------------------------------------------------------------------- deadlines, webhook

@pytest.mark.asyncio
async def test_a_model_that_fails_then_hangs_meets_the_turns_deadline(
        standin: TelegramStandin, store: str, user_id: int, env) -> None:  # type: ignore[no-untyped-def]
    from flows.texts import APOLOGY
    from nodes.store.chat_history import NO_ANSWER_MARK
    from tests.support.scripted_llm import error, text

    with ScriptedLLM([error(503), slow(600, text("слишком поздно"))]) as llm:
        env(GROVE_LLM_API_KEY="k", GROVE_LLM_BASE_URL=llm.base_url, GROVE_PLANNER="off",
            GROVE_LLM_RETRIES="3", GROVE_LLM_RETRY_DELAYS="[1, 1, 1]", GROVE_TURN_DEADLINE="5")
        set_user_mode.fn(user_id, user_id, "chat")
        async with running(new_bot()):
            standin.send_text(user_id, "Чем подкормить малину?")
            [reply] = await standin.wait_for_bot_messages_async(user_id, 1, timeout=90)
    assert reply["text"] == APOLOGY
    assert len(llm.requests) == 2  # the failure, then the hanging call that the deadline cut
    with psycopg.connect(store) as conn:
        stored = conn.execute("select role, content from chat_messages where user_id = %s order by id",
                              (user_id,)).fetchall()
        status = conn.execute("select status, error from inbox where user_id = %s", (user_id,)).fetchone()
    assert stored == [("user", "Чем подкормить малину?"), ("assistant", NO_ANSWER_MARK)]  # the question is kept
    assert status[0] == "failed" and "deadline" in status[1]


@pytest.mark.asyncio
async def test_the_webhook_answers_200_only_once_the_update_is_stored(
        standin: TelegramStandin, store: str, user_id: int, env, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    import httpx

    import grove.channels.bot
    from grove.channels.bot import webhook_options
    from grove.store.db import StoreUnavailable
    from grove.core.settings import get_settings
    from tests.support.ports import free_port

    real = grove.channels.bot.inbox.store
    refusing = {"on": True}

    def store_or_fail(*args, **kwargs):  # type: ignore[no-untyped-def]
        if refusing["on"]:
            raise StoreUnavailable("Postgres is unavailable (test)")
        return real(*args, **kwargs)

    monkeypatch.setattr(grove.channels.bot.inbox, "store", store_or_fail)
    port = free_port()
    env(GROVE_TELEGRAM_WEBHOOK_URL=f"http://127.0.0.1:{port}/telegram/hook", GROVE_TELEGRAM_WEBHOOK_PORT=str(port))
    options = webhook_options(get_settings())
    app = new_bot()
    turns = dispatcher_of(app)
    turns.start()
    async with app:
        await app.start()
        await app.updater.start_webhook(**options)
        try:
            update = standin.send_text(user_id, "/start")
            async with httpx.AsyncClient() as client:
                refused = await client.post(options["webhook_url"], json=update)
                refusing["on"] = False
                accepted = await client.post(options["webhook_url"], json=update)  # Telegram retries
            [menu] = await standin.wait_for_bot_messages_async(user_id, 1)
        finally:
            await app.updater.stop()
            await app.stop()
            await asyncio.to_thread(turns.stop, 30)
    assert refused.status_code == 500 and accepted.status_code == 200
    assert menu["text"] == "Выберите режим работы"
