"""Scale-out on Prefect: two `grove work` task workers, one Prefect server, one Postgres.

The receiver (the bot, as `grove up` runs it with GROVE_DISPATCH=prefect) stores each update and
hands its user's lane to Prefect; the workers are real `grove work` processes. Tests check what
users get (every answer once, each user's in order), what ops see (every turn a named run
linked to its lane), and that a worker killed mid-turn or mid-indexing leaves its work to the
other, done once.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import psycopg
import pytest

from nodes.store.user_state import set_user_mode
from tests.support.bot import running
from tests.support.scripted_llm import Response, ScriptedLLM, _completion, slow
from tests.support.telegram_standin import TelegramStandin

pytestmark = [pytest.mark.timeout(900)]
ROOT = Path(__file__).resolve().parent.parent


def echo(request: dict) -> Response:
    """Answers with the question it was asked, so order can be read off the answers."""
    question = next(m["content"] for m in reversed(request["messages"]) if m["role"] == "user")
    return Response(body=_completion({"role": "assistant", "content": f"Ответ: {question}"}, "stop"))


class Worker:
    """`grove work` with GROVE_DISPATCH=prefect, in a process of its own (to be killed)."""

    def __init__(self, name: str) -> None:
        env = {**os.environ, "GROVE_DISPATCH": "prefect", "PYTHONUNBUFFERED": "1"}
        self.name = name
        self.process = subprocess.Popen([sys.executable, "-m", "grove.app.cli", "work"], cwd=ROOT, env=env,
                                        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        self.output: list[str] = []
        threading.Thread(target=self._drain, daemon=True).start()
        wait_until(lambda: self.subscribed() or self.process.poll() is not None, 120)
        assert self.process.poll() is None, "".join(self.output)  # subscribed to its lanes, running

    def _drain(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.output.append(line)

    def subscribed(self) -> bool:
        """Prefect's server knows this process as a task worker (its id ends in the pid)."""
        return any(w["identifier"].endswith(f"-{self.pid}") for w in task_workers())

    @property
    def pid(self) -> int:
        return self.process.pid

    def kill(self) -> None:
        os.kill(self.process.pid, signal.SIGKILL)
        self.process.wait(10)
        self.killed = True

    killed = False

    def stop(self) -> int:
        """SIGTERM, as a service manager stops it: the worker hands its lanes back and exits 0."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(60)
            except subprocess.TimeoutExpired:
                self.kill()
        return self.process.returncode


def task_workers() -> list[dict]:
    """The task workers Prefect's server has subscribed right now."""
    return httpx.post(f"{os.environ['PREFECT_API_URL']}/task_workers/filter", json={}, timeout=10).json()


@pytest.fixture
def llm(env) -> Iterator[ScriptedLLM]:  # type: ignore[no-untyped-def]
    """The model the workers talk to: it answers with the question (order can be read off)."""
    with ScriptedLLM(default=echo) as server:
        env(GROVE_LLM_API_KEY="k", GROVE_LLM_BASE_URL=server.base_url, GROVE_PLANNER="off", GROVE_LLM_RETRIES="0")
        yield server


@pytest.fixture
def workers(store: str, prefect_server: str, standin: TelegramStandin, llm: ScriptedLLM,
            env) -> Iterator[list[Worker]]:  # type: ignore[no-untyped-def]
    env(GROVE_DISPATCH="prefect", GROVE_LANE_LEASE_SECONDS="4", GROVE_JOB_LEASE_SECONDS="4")
    started = [Worker("a"), Worker("b")]
    yield started
    stopped = {worker.name: worker.stop() for worker in started if not worker.killed}
    for worker in started:
        print(f"--- worker {worker.name} (pid {worker.pid}):\n" + "".join(worker.output[-60:]))  # shown on failure
    assert set(stopped.values()) <= {0}, stopped  # SIGTERM ends a worker cleanly, no traceback


def receiver():  # type: ignore[no-untyped-def]
    """The bot as `grove up` runs it in scale-out mode: it stores updates and submits lanes."""
    from grove.app import engine
    from grove.channels.bot import build_application
    from grove.core.settings import get_settings

    settings = get_settings().model_copy(update={"telegram_poll_timeout": 1})
    return build_application(settings, engine.Receiver())


def wait_until(check, timeout: float = 120.0, every: float = 0.2):  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        result = check()
        if result:
            return result
        time.sleep(every)
    raise AssertionError("condition not met in time")


def rows(url: str, sql: str, *params: object) -> list[tuple]:
    with psycopg.connect(url) as conn:
        return conn.execute(sql, params).fetchall()


def answers(standin: TelegramStandin, user_id: int) -> list[str]:
    return [m["text"] for m in standin.bot_messages(user_id)]


def turn_runs(api: str, prefix: str) -> list[dict]:
    body = {"flow_runs": {"name": {"like_": prefix}, "state": {"type": {"any_": ["COMPLETED", "FAILED"]}}},
            "limit": 200}
    return httpx.post(f"{api}/flow_runs/filter", json=body, timeout=10).json()


@pytest.mark.asyncio
async def test_two_workers_answer_a_burst_once_each_users_in_order(
        standin: TelegramStandin, store: str, prefect_server: str, workers: list[Worker], user_id: int) -> None:
    users = [user_id * 100 + n for n in range(20)]
    for uid in users:
        set_user_mode.fn(uid, uid, "chat")
    async with running(receiver()):
        for i in range(5):  # interleaved, as a burst of many users arrives
            for uid in users:
                standin.send_text(uid, f"вопрос {i} от {uid}")
        for uid in users:
            await standin.wait_for_bot_messages_async(uid, 5, timeout=600)
        await asyncio.to_thread(wait_until, lambda: not rows(store, "select 1 from lanes where user_id = any(%s)",
                                                             users), 60)
    for uid in users:
        expected = [f"вопрос {i} от {uid}" for i in range(5)]
        assert answers(standin, uid) == [f"Ответ: {q}" for q in expected], uid
        history = rows(store, "select content from chat_messages where user_id = %s and role = 'user' order by id", uid)
        assert [h[0] for h in history] == expected, uid
    assert dict(rows(store, "select status, count(*) from inbox where user_id = any(%s) group by status",
                     users)) == {"done": 100}
    # What ops see: every turn a named run, recorded by the worker that ran it, inside its lane.
    runs = wait_until(lambda: (found := turn_runs(prefect_server, f"text-user{user_id}")) and len(found) >= 100
                      and found, 120)
    assert len(runs) == 100
    ran_on = {tag.rsplit(":", 2)[-2] for run in runs for tag in run["tags"] if tag.startswith("grove-proc:")}
    assert ran_on == {str(w.pid) for w in workers}  # both workers took lanes
    assert all(run["parent_task_run_id"] for run in runs)


def test_a_worker_killed_mid_turn_leaves_the_turn_to_the_other_answered_once(
        standin: TelegramStandin, store: str, workers: list[Worker], llm: ScriptedLLM, user_id: int) -> None:
    llm.script(slow(4, echo))  # the first answer takes a while: the worker is killed meanwhile
    set_user_mode.fn(user_id, user_id, "chat")

    async def scenario() -> None:
        async with running(receiver()):
            update = standin.send_text(user_id, "Когда подкармливать малину?")
            await asyncio.to_thread(wait_until, lambda: llm.requests)  # the model is answering
            [(holder,)] = rows(store, "select worker from lanes where user_id = %s and kind = 'turns'", user_id)
            victim = next(w for w in workers if holder.endswith(f":{w.pid}"))
            victim.kill()
            assert standin.bot_messages(user_id) == []
            await standin.wait_for_bot_messages_async(user_id, 1, timeout=120)
            await asyncio.to_thread(wait_until, lambda: not rows(
                store, "select 1 from lanes where user_id = %s", user_id), 60)
            assert rows(store, "select status, attempts from inbox where update_id = %s",
                        update["update_id"]) == [("done", 2)]

    asyncio.run(scenario())
    assert answers(standin, user_id) == ["Ответ: Когда подкармливать малину?"]
    history = rows(store, "select content from chat_messages where user_id = %s and role = 'user'", user_id)
    assert history == [("Когда подкармливать малину?",)]


@pytest.mark.models
def test_a_worker_killed_mid_indexing_leaves_the_job_to_the_other_confirmed_once(
        standin: TelegramStandin, store: str, workers: list[Worker], user_id: int, tmp_path: Path) -> None:
    from tests.support.documents import make_pdf

    set_user_mode.fn(user_id, user_id, "documents")
    pages = [(f"Страница {n}. Малину обрезают весной до первой почки, а ремонтантную — под корень осенью. " * 12)
             for n in range(1, 81)]  # long enough to be killed mid-way on a fast machine too
    pdf = make_pdf(pages, tmp_path / "обрезка.pdf")

    async def scenario() -> dict:
        async with running(receiver()):
            standin.send_document(user_id, pdf.read_bytes(), "обрезка.pdf", "application/pdf")
            [ack] = await standin.wait_for_bot_messages_async(user_id, 1, timeout=120)
            assert (standin.sent_text(user_id, ack["message_id"]) or "").startswith("Принял «обрезка.pdf», индексирую")  # as sent, before any edit
            [(holder,)] = await asyncio.to_thread(wait_until, lambda: rows(
                store, "select worker from jobs where user_id = %s and status = 'running'", user_id), 120, 0.05)
            victim = next(w for w in workers if holder.endswith(f":{w.pid}"))
            victim.kill()
            await asyncio.to_thread(wait_until, lambda: rows(
                store, "select status from jobs where user_id = %s", user_id) == [("done",)], 600)
            await asyncio.to_thread(wait_until, lambda: not rows(store, "select 1 from lanes where user_id = %s",
                                                                 user_id), 60)
            return ack

    ack = asyncio.run(scenario())
    [message] = standin.bot_messages(user_id)  # the acknowledgement, edited into the confirmation
    assert message["message_id"] == ack["message_id"]
    assert message["text"].startswith("✅ Проиндексировано: ")
    assert rows(store, "select count(*) from documents where owner_id = %s", user_id) == [(1,)]
    assert rows(store, "select attempts from jobs where user_id = %s", user_id)[0][0] >= 2


def readme_recipe() -> str:
    """The commands README's "Scale-out" section gives."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text.split("## Scale-out", 1)[1]
    return section.split("```bash", 1)[1].split("```", 1)[0]


def test_the_readme_recipe_runs_end_to_end(standin: TelegramStandin, store: str, prefect_server: str,
                                           llm: ScriptedLLM, user_id: int, tmp_path: Path) -> None:
    """README, "Scale-out": external Prefect and Postgres, `grove up` on the bot's machine and
    `grove work` on another, both with GROVE_DISPATCH=prefect — users are answered."""
    recipe = readme_recipe()
    for word in ("GROVE_DISPATCH=prefect", "PREFECT_API_URL=", "DATABASE_URL=", "TELEGRAM_BOT_TOKEN=",
                 "grove up", "grove work"):
        assert word in recipe, word
    env = {**os.environ, "GROVE_DISPATCH": "prefect", "GROVE_DATA_DIR": str(tmp_path / "bot-machine"),
           "PYTHONUNBUFFERED": "1"}
    up = subprocess.Popen([sys.executable, "-m", "grove.app.cli", "up"], cwd=ROOT, env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    said: list[str] = []
    threading.Thread(target=lambda: said.extend(up.stdout or []), daemon=True).start()
    other = None
    try:
        wait_until(lambda: any("Telegram bot polling" in line for line in said) or up.poll() is not None, 300)
        assert up.poll() is None, "".join(said)
        other = Worker("other machine")
        users = [user_id * 10 + n for n in range(3)]
        for uid in users:
            standin.send_text(uid, "/start")
            standin.wait_for_bot_messages(uid, 1, timeout=120)
            standin.press_button(uid, "chat")
            standin.wait_for_bot_messages(uid, 2, timeout=120)
            standin.send_text(uid, f"вопрос 1 от {uid}")
        for uid in users:
            messages = standin.wait_for_bot_messages(uid, 3, timeout=120)
            assert messages[2]["text"] == f"Ответ: вопрос 1 от {uid}", "".join(said[-80:] + other.output[-80:])
    finally:
        if other is not None:
            assert other.stop() == 0, "".join(other.output[-80:])
        up.send_signal(signal.SIGINT)
        up.wait(120)
    assert any("run on Prefect task workers" in line for line in said), "".join(said)
    assert rows(store, "select count(*) from inbox where user_id = any(%s) and status = 'done'",
                [user_id * 10 + n for n in range(3)]) == [(9,)]
