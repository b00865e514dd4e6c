"""Dialogue run (seed 003 §7): scripted conversations through the real chat and consultation flows.

Run: .venv/bin/python -m bench.dialogue_run

A temporary embedded Postgres and Prefect server; the model is a scripted
OpenAI-compatible server that behaves like a small model would — it classifies
cultures by keywords, asks «О какой культуре речь?» when told the culture is
unclear, and answers from a table, with one "stuck" persona that keeps giving the
same answer. The run prints, over all turns: template overrides (turns not built
from `answer.md`; target 0 %), how often each guard fired, signal rates, and for
consultations how many reached an answer and in how many turns.
"""

from __future__ import annotations

import shutil
import statistics
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from bench.support import temporary_store

CONVERSATIONS: list[tuple[str, str, list[str]]] = [
    # (flow, persona, user messages)
    ("chat", "helpful", ["Привет", "Когда обрезать малину?", "А смородину?", "Спасибо"]),
    ("chat", "helpful", ["Когда обрезать малину?", "когда обрезать малину", "Это неправильно, вы не поняли"]),
    ("chat", "stuck", ["Как поливать голубику?", "А клубнику?", "А крыжовник?"]),
    ("chat", "helpful", ["Что в моём файле отчёт.pdf?", "Откуда это? Назовите источник"]),
    ("consultation", "helpful", ["Как правильно подкармливать?", "Про малину", "Ремонтантная"]),
    ("consultation", "helpful", ["Когда обрезать клубнику?", "Летняя", "А в какое время лучше?"]),
    ("consultation", "helpful", ["Как ухаживать за голубикой?", "А поливать как часто?"]),
    ("consultation", "helpful", ["Чем подкормить?", "не знаю", "любую", "всё равно"]),
    ("consultation", "stuck", ["Как укрыть ежевику?", "А жимолость?"]),
]

ANSWERS = {
    "привет": "Здравствуйте! Чем помочь?",
    "спасибо": "Пожалуйста! Обращайтесь.",
}


class Persona:
    """The scripted model: deterministic, but shaped like a model's behaviour."""

    def __init__(self) -> None:
        from grove.core.domain_profile import load_profile

        self.profile = load_profile("berries")
        self.stuck = False
        self.counter = 0

    def __call__(self, body: dict[str, Any]):  # -> tests.support.scripted_llm.Response
        from tests.support.scripted_llm import text

        system, user = body["messages"][0]["content"], body["messages"][-1]["content"]
        if system.startswith("Определи культуру"):
            return text(self.profile.keyword_culture(user))(body)
        if "Культура пока не ясна" in system:
            return text("О какой культуре речь? Клубника, малина, смородина?")(body)
        if self.stuck:
            return text("Поливайте умеренно и мульчируйте почву.")(body)
        self.counter += 1
        reply = ANSWERS.get(user.strip(" !?.").lower(), f"Ответ {self.counter}: по вопросу «{user[:40]}» — "
                                                          f"делайте это в сухую погоду, вариант {self.counter}.")
        return text(reply)(body)


def main() -> None:
    import os

    from grove.infra.prefect_server import PrefectServer
    from grove.core.settings import reset_settings
    from tests.support.ports import free_port
    from tests.support.scripted_llm import ScriptedLLM

    persona = Persona()
    work = Path(tempfile.mkdtemp(prefix="grove-bench-prefect-"))
    prefect = PrefectServer(home=work / "prefect", port=free_port())
    prefect.start(timeout=120)
    os.environ["PREFECT_API_URL"] = prefect.api_url
    try:
        with temporary_store() as url, ScriptedLLM(default=persona) as llm:
            os.environ.update(GROVE_LLM_API_KEY="bench", GROVE_LLM_BASE_URL=llm.base_url,
                              GROVE_LLM_MODEL="scripted", GROVE_LLM_RETRIES="0", GROVE_ADMIN_IDS="[]")
            reset_settings()
            report(run_all(persona), url)
    finally:
        from prefect.logging.handlers import APILogWorker

        APILogWorker.drain_all(timeout=10)
        prefect.stop()
        shutil.rmtree(work, ignore_errors=True)


def run_all(persona: Persona) -> list[float]:
    import os

    from flows.chat import chat
    from flows.consultation import consultation
    from grove.core.settings import reset_settings
    from nodes.store.user_state import session_of

    seconds: list[float] = []
    for user, (flow, style, messages) in enumerate(CONVERSATIONS, start=1):
        os.environ["GROVE_DOMAIN_PROFILE"] = "berries" if flow == "consultation" else ""
        reset_settings()
        persona.stuck = style == "stuck"
        session = session_of.fn(user, user)
        for message in messages:
            started = time.perf_counter()
            (consultation if flow == "consultation" else chat)(message, user, session)
            seconds.append(time.perf_counter() - started)
    return seconds


def report(seconds: list[float], url: str) -> None:
    import psycopg

    with psycopg.connect(url) as conn:
        rows = conn.execute("select flow, template, signals, guards, meta from dialogue_turns order by id").fetchall()
        consultations = conn.execute(
            "select user_id, count(*) filter (where meta->>'kind' = 'answer'), count(*)"
            " from dialogue_turns where flow = 'consultation' group by user_id").fetchall()
    answer_turns = [r for r in rows if r[0] in ("chat", "consultation")]
    overrides = sum(1 for r in answer_turns if r[1] != "answer.md")
    guards = Counter(g for r in answer_turns for g in r[3])
    signals = Counter(s for r in answer_turns for s in r[2] if ":" not in s)
    n = len(answer_turns)
    print(f"conversations: {len(CONVERSATIONS)}, turns: {n} "
          f"(chat {sum(r[0] == 'chat' for r in answer_turns)}, consultation {sum(r[0] == 'consultation' for r in answer_turns)})")
    print(f"template override: {overrides}/{n} = {100 * overrides / n:.1f} %  (target 0 %)")
    for name in ("conversation", "anti_repetition", "stall"):
        print(f"guard {name:16s} fired in {guards[name]:3d} turns = {100 * guards[name] / n:5.1f} %")
    for name, count in sorted(signals.items()):
        print(f"signal {name:15s} {count:3d} turns = {100 * count / n:5.1f} %")
    reached = sum(1 for _, answers, _ in consultations if answers)
    print(f"consultations reaching an answer: {reached}/{len(consultations)}")
    print(f"seconds per turn (scripted model, flows + Postgres + Prefect): median {statistics.median(seconds):.2f}, "
          f"max {max(seconds):.2f}")


if __name__ == "__main__":
    main()
