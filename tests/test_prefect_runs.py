"""Prefect observes every update as a named flow run, without being able to lose or block one.

Runs are recorded by a background reporter (grove/core/prefect_reporter.py): these tests read them
back from a real Prefect server, stop a server in the middle of the work, and kill a process
with a run in flight.
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from datetime import datetime, timedelta
from pathlib import Path

import httpx
import psycopg
import pytest

from grove.core import observe, runs
from grove.app.dispatch import process
from grove.core.messages import IncomingUpdate
from grove.core.prefect_reporter import (FIRST_BACKOFF, MAX_BACKOFF, STAGE_MIN_SECONDS, THREADS, PrefectReporter,
                                         _worth_watching)
from grove.infra.prefect_server import PrefectServer
from tests.support.ports import free_port
from tests.support.scripted_llm import ScriptedLLM, error

pytestmark = pytest.mark.timeout(300)


def _poll(check, timeout: float = 60.0, every: float = 0.3):  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while True:
        result = check()
        if result or time.monotonic() > deadline:
            return result
        time.sleep(every)


def flow_runs(api: str, name: str) -> list[dict]:
    """Runs named `name`, or `name · <a short cut of what the user said>`."""
    body = {"flow_runs": {"name": {"like_": name}}}
    found = httpx.post(f"{api}/flow_runs/filter", json=body, timeout=10).json()
    return [r for r in found if r["name"] == name or r["name"].startswith(name + " · ")]


def task_runs(api: str, flow_run_id: str) -> list[dict]:
    body = {"flow_runs": {"id": {"any_": [flow_run_id]}}}
    return httpx.post(f"{api}/task_runs/filter", json=body, timeout=10).json()


FINAL = ("COMPLETED", "FAILED", "CRASHED")


def settled_task_runs(api: str, flow_run_id: str, at_least: int = 1) -> list[dict]:
    """The run's task runs once each shows a final state.

    Prefect's recorder may show a stage Running before its final event, and a task run can even be
    listed before its first state arrives (`"state": null`): both are waited out, not read.
    """
    def settled() -> list[dict]:
        found = task_runs(api, flow_run_id)
        final = len(found) >= at_least and all((t.get("state") or {}).get("type") in FINAL for t in found)
        return found if final else []
    return _poll(settled)


def final_run(api: str, name: str) -> dict | None:
    runs = [r for r in flow_runs(api, name) if (r.get("state") or {}).get("type") in FINAL]
    return runs[0] if len(runs) == 1 else None


def console(user_id: int, **fields: object) -> IncomingUpdate:
    return IncomingUpdate(origin="console", user_id=user_id, chat_id=user_id, **fields)  # type: ignore[arg-type]


def test_a_callback_handed_to_a_flow_is_recorded_by_its_name() -> None:
    """A turn's draft handed to a flow (`show`) is a parameter like any other: recorded by its name,
    not by its object's state (what the user was shown, the Bot API client)."""
    from nodes.telegram.stream import Draft

    draft = Draft(1, object(), shown="what the user was reading")  # type: ignore[arg-type]
    stop = threading.Event()
    recorded = runs._jsonable({"question": "q", "show": draft.show, "stop": stop, "none": None})
    assert recorded == {"question": "q", "show": "<Draft.show>", "stop": repr(stop), "none": None}


def test_settings_and_a_model_handed_to_a_task_are_recorded_by_name_not_dumped() -> None:
    """A node handed the settings (or the model client built from them) shows them in Prefect as a word:
    their fields are the process's, and a remote endpoint's key is among them."""
    from pydantic import SecretStr

    from grove.core.settings import get_settings
    from nodes.answering.llm import ChatModel

    settings = get_settings().model_copy(update={"llm_api_key": SecretStr("sk-secret")})
    recorded = runs._jsonable({"settings": settings, "model": ChatModel(settings)})
    assert recorded["settings"] == "<settings>"
    assert recorded["model"].startswith("ChatModel(") and "sk-secret" not in str(recorded)


def test_a_button_press_is_a_named_flow_run_listing_its_stages(prefect_server: str, store: str, user_id: int,
                                                                 prefect_records: PrefectReporter) -> None:
    process(console(user_id, command="start"))
    process(console(user_id, callback_data="chat"))

    assert prefect_records.flush(120), f"backlog {prefect_records.backlog}, failed calls {prefect_records.failures}"
    run = _poll(lambda: final_run(prefect_server, f"button-user{user_id}"))
    assert run is not None and run["state"]["type"] == "COMPLETED", flow_runs(prefect_server, f"button-user{user_id}")
    assert "grove" in run["tags"] and f"user:{user_id}" in run["tags"]
    assert run["parameters"]["update"]["callback_data"] == "chat"
    message = run["state"]["message"]
    for stage in ("mode-switch", "set-user-mode", "send-reply"):
        assert stage in message  # every stage is listed with its time, short ones included


def test_slow_and_failed_stages_are_task_runs_and_the_run_says_why(prefect_server: str, store: str,
                                                                   prefect_records: PrefectReporter) -> None:
    @observe.task(name="slow-stage")
    def slow() -> None:
        time.sleep(0.4)

    @observe.task(name="quick-stage")
    def quick() -> None:
        pass

    @observe.task(name="broken-stage", retries=1, retry_delay_seconds=0)
    def broken() -> None:
        raise ValueError("the input was unreadable")

    name = f"stages-{time.time_ns()}"
    with pytest.raises(ValueError), runs.run("test-flow", name):
        slow()
        quick()
        broken()

    run = _poll(lambda: final_run(prefect_server, name))
    assert run is not None and run["state"]["type"] == "FAILED"
    assert "ValueError: the input was unreadable" in run["state"]["message"]
    tasks = settled_task_runs(prefect_server, run["id"], at_least=2)
    states = {t["name"]: t["state"]["type"] for t in tasks}
    assert states.pop("slow-stage") == "COMPLETED" and states.pop("broken-stage") == "FAILED"
    # quick-stage: only in the message, unless a busy machine held it up past the threshold or the
    # reporter happened to sync while it ran (then it was shown Running, and must be closed)
    assert states in ({}, {"quick-stage": "COMPLETED"})
    assert "quick-stage" in run["state"]["message"]


def test_only_slow_failed_or_retried_finished_stages_become_task_runs() -> None:
    start = datetime(2026, 1, 1)

    def stage(seconds: float, state: runs.State = "COMPLETED", attempts: int = 1) -> runs.Stage:
        return runs.Stage("s", "s", 0, started=start, ended=start + timedelta(seconds=seconds),
                          state=state, attempts=attempts)

    assert not _worth_watching(stage(STAGE_MIN_SECONDS / 10))
    assert _worth_watching(stage(STAGE_MIN_SECONDS))
    assert _worth_watching(stage(0.001, state="FAILED"))
    assert _worth_watching(stage(0.001, attempts=2))


def test_a_turn_whose_llm_gave_up_is_a_failed_run_with_the_reason(prefect_server: str, store: str, user_id: int,
                                                                   prefect_records: PrefectReporter, env) -> None:  # type: ignore[no-untyped-def]
    with ScriptedLLM(default=error(503, "upstream down")) as llm:
        env(GROVE_LLM_API_KEY="k", GROVE_LLM_BASE_URL=llm.base_url, GROVE_LLM_RETRIES="1",
            GROVE_LLM_RETRY_DELAYS="[0]", GROVE_PLANNER="off")
        process(console(user_id, command="start"))
        process(console(user_id, callback_data="chat"))
        [reply] = process(console(user_id, text="Что такое малина?"))
    assert "не могу ответить" in reply.text  # the user got the apology
    run = _poll(lambda: final_run(prefect_server, f"text-user{user_id}"))
    assert run is not None and run["state"]["type"] == "FAILED"
    assert "LLM gave up" in run["state"]["message"] and "503" in run["state"]["message"]


def test_prefect_stopped_mid_load_loses_and_blocks_nothing(store: str, user_id: int) -> None:
    """Updates keep being answered while the server is down; their runs appear once it is back."""
    home = Path(tempfile.mkdtemp(prefix="grove-prefect-outage-"))
    port = free_port()
    server = PrefectServer(home=home, port=port)
    api = server.start(timeout=120)
    reporter = PrefectReporter.start(api)
    runs.set_reporter(reporter)
    users = [user_id * 10 + i for i in range(6)]
    try:
        for uid in users[:3]:
            assert process(console(uid, command="start"))[0].text == "Выберите режим работы"
        assert reporter.flush(60)
        server.stop()
        started = time.monotonic()
        for uid in users[3:]:  # the API is gone: answered all the same, without waiting for it
            assert process(console(uid, command="start"))[0].text == "Выберите режим работы"
        assert time.monotonic() - started < 20
        assert _poll(lambda: reporter.failures > 0, timeout=30)
        assert reporter.backlog > 0  # the records wait
        server = PrefectServer(home=home, port=port)
        server.start(timeout=120)
        assert reporter.flush(120)
        for uid in users:
            run = _poll(lambda uid=uid: final_run(api, f"cmd-start-user{uid}"))
            assert run is not None and run["state"]["type"] == "COMPLETED", uid
    finally:
        runs.set_reporter(None)
        reporter.stop(1)
        server.stop()


CRASHING_PROCESS = """
import os, signal, sys, time
from grove.core import runs
from grove.core.prefect_reporter import PrefectReporter
reporter = PrefectReporter.start(sys.argv[1])
runs.set_reporter(reporter)
with runs.run("test-flow", sys.argv[2]):
    reporter.flush(60)
    print("running", flush=True)
    time.sleep(600)
"""


def test_runs_of_a_killed_process_are_marked_crashed_on_the_next_start(prefect_server: str) -> None:
    name = f"killed-{time.time_ns()}"
    child = subprocess.Popen([sys.executable, "-c", CRASHING_PROCESS, prefect_server, name],
                             stdout=subprocess.PIPE, text=True, env=dict(os.environ))
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "running"
        [run] = flow_runs(prefect_server, name)
        assert run["state"]["type"] == "RUNNING"
    finally:
        os.kill(child.pid, signal.SIGKILL)
        child.wait(10)

    marked = PrefectReporter(prefect_server).mark_crashed_runs()  # what the next start does first
    assert marked >= 1
    [run] = flow_runs(prefect_server, name)
    assert run["state"]["type"] == "CRASHED"
    assert "stopped" in run["state"]["message"]


def test_runs_of_live_processes_are_left_alone(prefect_server: str) -> None:
    name = f"alive-{time.time_ns()}"
    reporter = PrefectReporter.start(prefect_server)
    runs.set_reporter(reporter)
    try:
        with runs.run("test-flow", name):
            assert reporter.flush(60)
            PrefectReporter(prefect_server).mark_crashed_runs()
            [run] = flow_runs(prefect_server, name)
            assert run["state"]["type"] == "RUNNING"
    finally:
        runs.set_reporter(None)
        reporter.stop(5)


def test_failed_ingest_items_make_a_failed_run_with_reasons(prefect_server: str, store: str, user_id: int,
                                                             tmp_path: Path, prefect_records: PrefectReporter) -> None:
    from flows.ingest import ingest
    from grove.core.ingest_types import IngestItem

    name = f"broken-{user_id}.pdf"
    bad = tmp_path / name
    bad.write_bytes(b"%PDF-1.4 this is not a pdf")
    item = IngestItem(kind="file", source_identifier=name, path=str(bad), file_name=name,
                      mime_type="application/pdf", file_size=bad.stat().st_size)
    [outcome] = ingest([item], user_id)
    assert outcome.status == "failed"
    run = _poll(lambda: final_run(prefect_server, f"ingest-file-{name}"))
    assert run is not None and run["state"]["type"] == "FAILED"
    assert "1 of 1 items failed" in run["state"]["message"] and name in run["state"]["message"]
    with psycopg.connect(store) as conn:
        assert conn.execute("select count(*) from documents where owner_id = %s", (user_id,)).fetchone() == (0,)


def artifacts_of(api: str, flow_run_id: str) -> list[dict]:
    body = {"flow_runs": {"id": {"any_": [flow_run_id]}}}
    return httpx.post(f"{api}/artifacts/filter", json=body, timeout=10).json()


def test_a_question_run_is_named_after_it_and_its_one_artifact_holds_what_the_user_got(
        prefect_server: str, store: str, user_id: int, prefect_records: PrefectReporter,
        env) -> None:  # type: ignore[no-untyped-def]
    """Ops tell turns apart in the runs list, and read the question, the answer and the sources
    sent — on the run itself, not a stage deeper."""
    from nodes.embedding.embedder import get_embedder
    from nodes.store.document_store import ChunkRecord, store_document
    from grove.core.ingest_types import ExtractedDocument
    from tests.support.scripted_llm import text, tool_call

    passage = "Ремонтантную малину подкармливают весной азотом: 15 г мочевины на квадратный метр."
    document = ExtractedDocument(source_type="pdf", source_identifier="малина.pdf", title=None, text=passage)
    store_document.fn(user_id, document, [ChunkRecord(position=0, text=passage, page=3)],
                      get_embedder().embed_documents([passage]))
    with ScriptedLLM() as llm:
        env(GROVE_LLM_API_KEY="k", GROVE_LLM_BASE_URL=llm.base_url, GROVE_PLANNER="off")
        llm.script(tool_call({"query": "подкормка малины"}), text("Весной — азотом, 15 г мочевины на м² [1]."))
        process(console(user_id, command="start"))
        process(console(user_id, callback_data="chat"))
        [reply] = process(console(user_id, text="Чем подкормить ремонтантную малину весной по моим документам?"))
    assert "Информация взята из" in reply.text

    run = _poll(lambda: final_run(prefect_server, f"text-user{user_id}"))
    assert run is not None and run["state"]["type"] == "COMPLETED"
    assert run["name"] == f"text-user{user_id} · Чем подкормить ремонтантную малину…"
    [summary] = _poll(lambda: artifacts_of(prefect_server, run["id"]))
    assert summary["task_run_id"] is None  # on the run, one click from the runs list
    data = summary["data"]
    assert "Чем подкормить ремонтантную малину весной по моим документам?" in data
    assert "15 г мочевины" in data and "Информация взята из" in data and "малина.pdf" in data
    assert "signals:" in data  # the turn's dialogue metrics are lines of the same artifact
    assert f"| chat-user{user_id} |" in data and "| llm-chat |" in data  # and every stage with its time


def test_a_stage_its_run_left_behind_is_closed_never_left_running(prefect_server: str,
                                                                  prefect_records: PrefectReporter) -> None:
    """A finished run never shows a stage Running (a thread it started may outlive it)."""
    release = threading.Event()

    @observe.task(name="outliving-stage")
    def outlive() -> None:
        release.wait(30)

    name = f"left-behind-{time.time_ns()}"
    with runs.run("test-flow", name) as current:
        outlive.submit()
        assert _poll(lambda: current.stages, timeout=10, every=0.01)  # started: the run ends first
    run = _poll(lambda: final_run(prefect_server, name))
    assert run is not None and run["state"]["type"] == "COMPLETED"
    tasks = settled_task_runs(prefect_server, run["id"])
    release.set()
    assert [(t["name"], t["state"]["type"]) for t in tasks] == [("outliving-stage", "CRASHED")]


def test_stage_task_runs_carry_the_stages_own_times(prefect_server: str, prefect_records: PrefectReporter) -> None:
    """A stage recorded later still shows when it ran and for how long, as the run measured it."""
    @observe.task(name="measured-stage")
    def measured() -> None:
        time.sleep(0.3)

    name = f"times-{time.time_ns()}"
    with runs.run("test-flow", name) as current:
        measured()
    [stage] = current.stages
    run = _poll(lambda: final_run(prefect_server, name))
    assert run is not None
    [task] = settled_task_runs(prefect_server, run["id"])
    assert task["state"]["type"] == "COMPLETED"
    assert abs(task["total_run_time"] - (stage.seconds or 0)) < 0.001
    assert task["start_time"].replace("Z", "+00:00")[:23] == stage.started.isoformat()[:23]


def _tries_within(seconds: float) -> int:
    """The most calls the reporter's back-off lets fail in `seconds`: each thread once per window,
    the windows FIRST_BACKOFF, then twice as long each time, up to MAX_BACKOFF apart."""
    windows, at, wait = 0, 0.0, FIRST_BACKOFF
    while at <= seconds:
        windows, at, wait = windows + 1, at + wait, min(wait * 2, MAX_BACKOFF)
    return windows * THREADS


def test_an_outage_is_said_once_not_once_per_run(caplog: pytest.LogCaptureFixture) -> None:
    """Runs keep coming while Prefect is down: one warning for the outage, and no retry storm."""
    began = time.monotonic()
    reporter = PrefectReporter.start(f"http://127.0.0.1:{free_port()}/api")  # nothing listens there
    runs.set_reporter(reporter)
    try:
        def said() -> list[logging.LogRecord]:
            return [r for r in caplog.records if r.name == "grove.core.prefect_reporter"
                    and r.levelno >= logging.WARNING]

        with caplog.at_level("INFO", logger="grove.core.prefect_reporter"):
            for i in range(40):
                with runs.run("test-flow", f"outage-{i}"):
                    time.sleep(0.02)
            # Each new run would be a try if runs woke the reporter: 40 by now, whatever the machine's pace.
            assert reporter.failures <= _tries_within(time.monotonic() - began)
            assert _poll(said, timeout=30)  # once the outage has lasted a few seconds
            failures = reporter.failures
            assert _poll(lambda: reporter.failures >= failures + 2, timeout=60)  # still failing, still trying
        assert len(said()) == 1 and "unavailable" in said()[0].getMessage()
        assert reporter.failures <= _tries_within(time.monotonic() - began)  # still backing off
        assert reporter.backlog == 40
    finally:
        runs.set_reporter(None)
        reporter.stop(0.1)
