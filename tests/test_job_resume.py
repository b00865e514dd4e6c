"""A worker stopped mid-indexing gives its job back at once, and the next one resumes from the
last stored batch of vectors instead of from zero."""

from __future__ import annotations

import asyncio
import json
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
from tests.support.bot import new_bot, running
from tests.support.telegram_standin import TelegramStandin

pytestmark = [pytest.mark.models, pytest.mark.timeout(900)]
ROOT = Path(__file__).resolve().parent.parent


def one(url: str, sql: str, *params: object) -> tuple:
    with psycopg.connect(url) as conn:
        return conn.execute(sql, params).fetchone()


def wait_until(check, timeout: float = 300.0):  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if result := check():
            return result
        time.sleep(0.2)
    raise AssertionError("condition not met in time")


def worker(env: dict[str, str]) -> subprocess.Popen[str]:
    process = subprocess.Popen([sys.executable, "-m", "grove.app.cli", "work"], cwd=ROOT, env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    threading.Thread(target=lambda: process.stdout and process.stdout.read(), daemon=True).start()
    return process


def test_sigterm_gives_the_job_back_at_once_and_the_next_worker_resumes_from_the_last_batch(
        standin: TelegramStandin, store: str, user_id: int, tmp_path: Path) -> None:
    from tests.support.documents import make_pdf

    set_user_mode.fn(user_id, user_id, "documents")
    pages = [(f"Страница {n}. Малину обрезают весной до первой почки, ремонтантную — под корень осенью; "
              f"подкармливают азотом весной и калием летом, раздел {n}. ") * 14 for n in range(1, 25)]
    pdf = make_pdf(pages, tmp_path / "обрезка.pdf")
    env = {**os.environ, "GROVE_EMBEDDING_BATCH_SIZE": "4", "PYTHONUNBUFFERED": "1"}  # lease: the default 60 s

    async def upload() -> None:
        async with running(new_bot()):
            standin.send_document(user_id, pdf.read_bytes(), "обрезка.pdf", "application/pdf")
            await standin.wait_for_bot_messages_async(user_id, 1, timeout=120)

    asyncio.run(upload())
    [job_id] = one(store, "select id from jobs where user_id = %s", user_id)
    first = worker(env)
    try:
        wait_until(lambda: one(store, "select count(*) from embedding_checkpoints where job_id = %s",
                               job_id)[0] >= 8)  # two batches kept
        first.send_signal(signal.SIGTERM)
        began = time.monotonic()
        assert first.wait(60) == 0
        assert one(store, "select status, worker from jobs where id = %s", job_id) == ("queued", None)
        given_back_in = time.monotonic() - began
    finally:
        if first.poll() is None:
            first.kill()
    assert given_back_in < 30  # not the 60 s lease
    [kept] = one(store, "select count(*) from embedding_checkpoints where job_id = %s", job_id)

    second = worker(env)
    try:
        wait_until(lambda: one(store, "select status from jobs where id = %s", job_id) == ("done",), 600)
    finally:
        second.send_signal(signal.SIGTERM)
        second.wait(60)
    [result] = one(store, "select result from jobs where id = %s", job_id)
    [outcome] = (result if isinstance(result, dict) else json.loads(result))["outcomes"]
    assert outcome["status"] == "indexed"
    assert outcome["resumed_chunks"] >= kept  # these vectors were not computed again
    assert outcome["resumed_chunks"] < outcome["chunks"]
    assert one(store, "select count(*) from embedding_checkpoints where job_id = %s", job_id) == (0,)
    assert one(store, "select count(*) from document_chunks c join documents d on d.id = c.document_id"
                      " where d.owner_id = %s", user_id) == (outcome["chunks"],)
    [message] = standin.bot_messages(user_id)  # the acknowledgement, edited into the confirmation
    assert message["text"].startswith("✅ Проиндексировано: ")
